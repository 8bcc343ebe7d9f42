"""A small fleet on the real cluster, under each autoscaler (CI's fleet): `tau-demo fleet run` as a user runs it,
every invariant over the whole run, every gang ended, its results measured from the objects, nothing left; and the
same command interrupted by SIGTERM mid-run, which removes everything it made and exits 143."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fleet.run import left_behind
from fleet.spec import NAMESPACE
from k8s import poll
from k8s.resources import JOB

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


@pytest.mark.timeout(600)
def test_a_fleet_interrupted_mid_run_removes_everything_it_made(kubeconfig, k, no_autoscaler, tmp_path):
    log = tmp_path / "fleet.log"
    argv = [TAU, "fleet", "run", *SMALL, "--autoscaler", "fake", "--out", str(tmp_path / "run"),
            "--kubeconfig", kubeconfig]
    with open(log, "wb") as f:
        proc = subprocess.Popen(argv, cwd=REPO, stdout=f, stderr=subprocess.STDOUT, start_new_session=True,
                                env=dict(os.environ, PYTHONUNBUFFERED="1"))
        try:
            poll.until(lambda: "gangs submitted" in log.read_text() or proc.poll() is not None, 300,
                       "the fleet to submit its gangs", 0.2)
            assert proc.poll() is None, log.read_text()[-3000:]
            made = left_behind(k)
            assert f"namespace {NAMESPACE}" in made and any(m.startswith("controller ") for m in made), made
            assert len(k.list(JOB, NAMESPACE)[0]) == GANGS
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(300)
        finally:
            if proc.poll() is None:
                proc.kill()
    text = log.read_text()
    assert code == 143, text[-3000:]
    assert "left behind: nothing" in text, text[-3000:]
    assert left_behind(k) == []
