"""A small fleet on the real cluster, under each autoscaler (CI's fleet): `tau-demo fleet run` as a user runs it,
every invariant over the whole run, every gang ended, its results measured from the objects, nothing left; and the
same command interrupted by Ctrl-C, SIGTERM and SIGHUP at random moments, which removes everything it made and exits
128 + the signal."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fleet.run import left_behind
from k8s.resources import JOB, NODE, PROVREQ, WORKLOAD
from k8s.tape import Tape
from tests.cluster.test_interrupts import SEED, WINDOW, interrupted, ours

REPO = Path(__file__).resolve().parents[2]
TAU = str(REPO / ".venv/bin/tau-demo")
GANGS = 20
SMALL = ["--gangs", str(GANGS), "--queues", "2", "--pools", "2", "--run", "10s", "--boot", "5s"]


def fleet(kubeconfig: str, out: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([TAU, "fleet", "run", *SMALL, *args, "--out", str(out), "--kubeconfig", kubeconfig],
                          cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, PYTHONUNBUFFERED="1"))


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("autoscaler", ["fake", "real"])
def test_a_small_fleet_runs_every_gang_and_keeps_every_invariant(autoscaler, kubeconfig, k, no_autoscaler, tmp_path):
    out = tmp_path / autoscaler
    done = fleet(kubeconfig, out, "--autoscaler", autoscaler)
    print(done.stdout[-6000:], done.stderr[-3000:], file=sys.stderr)
    assert done.returncode == 0, f"exit {done.returncode}:\n{done.stdout[-4000:]}\n{done.stderr[-3000:]}"
    m = json.loads((out / "results.json").read_text())
    phases = {p["name"]: p for p in m["phases"]}
    assert m["gangs"] == GANGS and m["succeeded"] == GANGS and m["unfinished"] == []
    for name in ("QuotaReserved", "request created", "Provisioned", "Admitted", "all pods Running", "Succeeded"):
        assert phases[name]["count"] == GANGS, (name, phases[name])
    # the order the design promises: a gang is admitted only after its capacity was provisioned, and runs after that
    assert phases["Provisioned"]["p50"] <= phases["Admitted"]["p50"] <= phases["all pods Running"]["p50"]
    assert m["firings"]["total"] == 0 and m["drain_rate"] and m["drain_rate"] > 0
    assert m["cost"]["kube-apiserver"]["cpu"] > 0 and m["api_requests"].get("POST", 0) >= GANGS
    lines = (out / "events.jsonl").read_text().splitlines()
    assert len(lines) == m["records"] > GANGS * 6
    assert (out / "report.svg").read_text().startswith("<svg")
    for check in ("a committed timeout never runs", "a running Job is never deleted or reported failed",
                  "a pool never exceeds its maxNodes", "nothing is left at the end"):
        assert f"PASS  {check}" in done.stdout
    assert left_behind(k) == []


@pytest.mark.timeout(900)
def test_an_out_of_stock_pool_times_out_its_gangs_and_nothing_else(kubeconfig, k, no_autoscaler, tmp_path):
    out = tmp_path / "stockout"
    done = fleet(kubeconfig, out, "--autoscaler", "fake", "--stockout", "1", "--deadline", "40s")
    print(done.stdout[-6000:], file=sys.stderr)
    assert done.returncode == 0, f"exit {done.returncode}:\n{done.stdout[-4000:]}\n{done.stderr[-3000:]}"
    m = json.loads((out / "results.json").read_text())
    assert m["spec"]["stockout"] == [1]
    assert m["firings"]["true"] >= 1 and m["firings"]["false"] == 0, m["firings"]
    assert m["succeeded"] + m["firings"]["total"] == GANGS
    assert left_behind(k) == []


INTERRUPTS = ((signal.SIGINT, 1.0, 8.0), (signal.SIGTERM, 8.0, 20.0), (signal.SIGHUP, 20.0, 35.0))


@pytest.mark.timeout(900)
def test_a_fleet_interrupted_at_random_moments_removes_everything_it_made(kubeconfig, k, no_autoscaler, tmp_path):
    """Ctrl-C, SIGTERM and SIGHUP, each at a seeded random moment of its span: setting up (the TauCluster, the
    controllers), submitting, and deep in the run.  Each exits 128 + the signal, says "left behind: nothing", and
    leaves nothing, judged at its exit and over a window after it, and no process of its own."""
    rng = random.Random(f"{SEED}-fleet")
    print(f"\n[interrupts] fleet run: seed {SEED} (TAU_DEMO_INTERRUPT_SEED replays it)", file=sys.stderr)
    assert left_behind(k) == [], "the cluster is clean before the first interrupt"
    before = ours(kubeconfig)
    for i, (sig, earliest, latest) in enumerate(INTERRUPTS):
        moment = rng.uniform(earliest, latest)
        what = f"fleet run, {signal.Signals(sig).name} at {moment:.1f}s"
        argv = [TAU, "fleet", "run", *SMALL, "--autoscaler", "fake", "--out", str(tmp_path / f"run-{i}"),
                "--kubeconfig", kubeconfig]
        code, text = interrupted(argv, {}, what, sig, moment, tmp_path / f"{i}.log")
        print(f"[interrupts] {what}: exit {code}; {text.strip().splitlines()[-1] if text.strip() else ''}",
              file=sys.stderr)
        assert code in (128 + sig, -sig), f"{what}: exit {code}:\n{text[-3000:]}"
        assert code == -sig or "left behind: nothing" in text, f"{what}:\n{text[-3000:]}"
        with Tape(k, (JOB, WORKLOAD, PROVREQ, NODE)) as tape:
            assert left_behind(k) == [], f"{what}: left behind\n{text[-3000:]}"
            time.sleep(WINDOW)
            left = left_behind(k)
        added = [f"{o.get('kind')} {o['metadata']['name']}" for _, typ, o in tape.changes if typ == "ADDED"]
        assert not added and not left, f"{what}: made after its exit: {added}; there at the window's end: {left}"
        running = ours(kubeconfig) - before
        assert not running, f"{what}: processes left running: {sorted(running)}\n{text[-3000:]}"
