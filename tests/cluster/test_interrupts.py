"""Interrupted runs leave nothing behind (cli/interrupt.py, scenarios/kit/runner.clean): each long-running command is
started on the real cluster and sent SIGINT, SIGTERM or SIGHUP at a random moment of its run, five times per
command (20 interrupts in all); each time it must exit 128 + the signal's number, and leave no object the harness
made (runner.made_by_harness: Jobs, Workloads, requests, nodes, the scenarios' Kueue objects and TauClusters, the
probes' objects), judged at its exit and over a window after it (nothing comes back: no autoscaler of its still
runs), no process of its own (the controllers it started, itself), and no temporary file or directory (its TMPDIR,
the test's own, is empty).  The moments come from a seeded random generator; the seed is printed, and
TAU_DEMO_INTERRUPT_SEED replays a run."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from demo.cluster import procs
from k8s.resources import CLUSTER_QUEUE, JOB, NODE, PROVREQ, WORKLOAD
from k8s.tape import Tape
from scenarios.kit import runner

from tests.cluster.conftest import REPO

SEED = int(os.environ.get("TAU_DEMO_INTERRUPT_SEED", str(int(time.time()) % 100000)))
INTERRUPTS = 5                       # per command: 20 in all
EARLIEST, LATEST = 1.0, 25.0         # seconds into the run: from its start (controllers starting) to deep in its work
EXIT_TIMEOUT = 240.0                 # seconds for an interrupted command to clean up and exit
WINDOW = 5.0                         # seconds after its exit in which nothing it made may come back
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

# Each command as a user runs it, long enough that every moment above falls inside its run.
COMMANDS = {
    "scenario run": ["scenario", "run", "all", "--auto"],
    "kueue-specs": ["kueue-specs", "--autoscaler", "fake"],          # one autoscaler: no results table written
    "conformance": ["conformance", "--autoscaler", "fake"],          # one autoscaler: no report written
    "race soak": ["race", "soak", "--runs", "30"],
}


def ours(kubeconfig: str) -> set[int]:
    """The live processes of the project's command line that talk to this cluster: the controllers (`python -m
    cli ...  --kubeconfig KC`) and the commands (`tau-demo ... --kubeconfig KC`)."""
    out = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = [a.decode(errors="replace") for a in (proc / "cmdline").read_bytes().split(b"\0") if a]
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and kubeconfig in argv and any(a == "cli" or a.endswith("tau-demo") for a in argv):
            out.add(int(proc.name))
    return out


def interrupted(argv: list[str], env: dict, what: str, sig: int, moment: float, log: Path) -> tuple[int, str]:
    """Run argv, send `sig` `moment` seconds in; its exit code and output.  pytest.fail if it ended by itself
    before the moment (then the test would interrupt nothing) or did not exit after the signal."""
    with open(log, "wb") as out:
        # as a user's terminal starts it: CI's cluster sessions run side by side as background jobs of a script,
        # which ignore SIGINT, and a command started ignoring a signal keeps ignoring it (cli/interrupt.handled)
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=REPO,
                                start_new_session=True, env=dict(os.environ, PYTHONUNBUFFERED="1", **env),
                                preexec_fn=procs.as_from_a_terminal)
        try:
            proc.wait(moment)
            pytest.fail(f"{what} ended by itself (exit {proc.returncode}) before {moment:.1f}s:\n"
                        f"{log.read_text(errors='replace')[-3000:]}")
        except subprocess.TimeoutExpired:
            pass
        proc.send_signal(sig)
        try:
            code = proc.wait(EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail(f"{what} did not exit within {EXIT_TIMEOUT:.0f}s of {signal.Signals(sig).name}:\n"
                        f"{log.read_text(errors='replace')[-3000:]}")
    return code, log.read_text(errors="replace")


def interrupt_once(kubeconfig: str, name: str, sig: int, moment: float, log: Path, tmp: Path) -> tuple[int, str]:
    """One of COMMANDS against the test cluster, interrupted (interrupted()); its temporary files (and its
    controllers') go in `tmp`, its TMPDIR."""
    tmp.mkdir()
    return interrupted([str(REPO / ".venv/bin/tau-demo"), *COMMANDS[name], "--kubeconfig", kubeconfig],
                       {"TMPDIR": str(tmp)}, name, sig, moment, log)


@pytest.mark.timeout(1500)
@pytest.mark.parametrize("name", list(COMMANDS))
def test_an_interrupted_command_exits_as_interrupted_and_leaves_nothing(name, kubeconfig, k, no_autoscaler,
                                                                         tmp_path):
    rng = random.Random(f"{SEED}-{name}")
    print(f"\n[interrupts] {name}: seed {SEED} (TAU_DEMO_INTERRUPT_SEED replays it)", file=sys.stderr)
    ctx = runner.make_context(kubeconfig, None, True)
    assert runner.made_by_harness(ctx) == [], "the cluster is clean before the first interrupt"
    before = ours(kubeconfig)
    try:
        interrupt_each(name, kubeconfig, k, ctx, rng, before, tmp_path)
    finally:
        # a command that failed a check (or was killed) may leave controllers and objects: the next test meets none
        for pid in ours(kubeconfig) - before:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        runner.clean(ctx)


def interrupt_each(name: str, kubeconfig: str, k, ctx, rng: random.Random, before: set[int], tmp_path: Path) -> None:
    for i in range(INTERRUPTS):
        sig, moment = SIGNALS[(i + list(COMMANDS).index(name)) % len(SIGNALS)], rng.uniform(EARLIEST, LATEST)
        what = f"{name}, {signal.Signals(sig).name} at {moment:.1f}s (interrupt {i + 1} of {INTERRUPTS})"
        tmp = tmp_path / f"tmp-{i}"
        code, output = interrupt_once(kubeconfig, name, sig, moment, tmp_path / f"{i}.log", tmp)
        print(f"[interrupts] {what}: exit {code}; {output.strip().splitlines()[-1] if output.strip() else ''}",
              file=sys.stderr)
        # -sig: the signal came while Python was still starting the command (its imports take about 2 s on a busy
        # machine), before it could handle it, and ended the process itself, which a shell shows as 128 + sig too
        assert code in (128 + sig, -sig), f"{what}: exit {code}, not {128 + sig}:\n{output[-3000:]}"
        assert code == -sig or "interrupted (" in output, f"{what}: it did not say it was interrupted:\n{output[-3000:]}"
        # at its exit and over the window after it: nothing it made is there, nothing comes back
        with Tape(k, (JOB, WORKLOAD, PROVREQ, NODE)) as tape:
            assert runner.made_by_harness(ctx) == [], f"{what}: left behind\n{output[-3000:]}"
            time.sleep(WINDOW)
            left = runner.made_by_harness(ctx)
        added = [f"{o.get('kind')} {o['metadata']['name']}" for _, typ, o in tape.changes if typ == "ADDED"]
        assert not added and not left, f"{what}: made after its exit: {added}; there at the window's end: {left}"
        running = ours(kubeconfig) - before
        assert not running, f"{what}: processes left running: {sorted(running)}\n{output[-3000:]}"
        files = sorted(str(f.relative_to(tmp)) for f in tmp.rglob("*"))
        assert not files, f"{what}: temporary files left behind: {files}\n{output[-3000:]}"


@pytest.mark.timeout(600)
def test_an_interrupted_cluster_up_removes_the_cluster_it_was_making(tmp_path):
    # a state directory of its own: the cluster it makes is not the session's; the moments span the control
    # plane's start (about 3 s in), Kueue's and the demo's objects (a warm `cluster up` took 10.7 s here, alone)
    rng = random.Random(f"{SEED}-cluster-up")
    for i, sig in enumerate(SIGNALS):
        state = tmp_path / f"state-{i}"
        state.mkdir()
        try:
            interrupt_cluster_up(tmp_path, state, i, sig, rng.uniform(2.0, 8.0))
        finally:            # whatever happened, the test leaves no cluster of its own behind
            subprocess.run([str(REPO / ".venv/bin/tau-demo"), "cluster", "down", "--name", "tau-interrupted"],
                           cwd=REPO, env=dict(os.environ, TAU_DEMO_STATE=str(state)), capture_output=True)


def interrupt_cluster_up(tmp_path: Path, state: Path, i: int, sig: int, moment: float) -> None:
    """`cluster up` of a new cluster in `state`, sent `sig` `moment` seconds in: it exits as interrupted, with no
    process of its state directory left and its cluster's state removed."""
    what = f"cluster up, {signal.Signals(sig).name} at {moment:.1f}s"
    argv = [str(REPO / ".venv/bin/tau-demo"), "cluster", "up", "--backend", "kwok", "--name", "tau-interrupted"]
    code, output = interrupted(argv, {"TAU_DEMO_STATE": str(state)}, what, sig, moment, tmp_path / f"up-{i}.log")
    print(f"[interrupts] {what}: exit {code}; {output.strip().splitlines()[-1] if output.strip() else ''}",
          file=sys.stderr)
    assert code in (128 + sig, -sig), f"{what}: exit {code}:\n{output[-3000:]}"
    running = procs.running_under(state)
    assert not running, f"{what}: processes left running: {running}\n{output[-3000:]}"
    assert not (state / "clusters" / "tau-interrupted").exists(), f"{what}: its state was left:\n{output[-3000:]}"


def test_a_refused_run_names_the_clean_command_which_removes_only_what_the_harness_made(kubeconfig, k, no_autoscaler,
                                                                                        unique):
    # what an interrupted or killed run may leave: a Job of the demo's profile (its Workload follows)
    name = f"left-{unique}"
    tau = [str(REPO / ".venv/bin/tau-demo")]
    made = subprocess.run(tau + ["submit", "--name", name, "--gang", "1x8", "--duration", "5m", "--kubeconfig",
                                 kubeconfig], cwd=REPO, capture_output=True, text=True)
    assert made.returncode == 0, made.stdout + made.stderr
    refused = subprocess.run(tau + ["scenario", "run", "success", "--auto", "--kubeconfig", kubeconfig], cwd=REPO,
                             capture_output=True, text=True, timeout=300)
    assert refused.returncode == 1 and f"Job {name}" in refused.stderr and "`tau-demo clean`" in refused.stderr, \
        refused.stdout + refused.stderr
    ctx = runner.make_context(kubeconfig, None, True)
    left = {(r.kind, n, ns) for r, n, ns in ctx.left_objects()}
    queues = sorted(q["metadata"]["name"] for q in k.list(CLUSTER_QUEUE)[0])
    cleaned = subprocess.run(tau + ["clean", "--kubeconfig", kubeconfig], cwd=REPO, capture_output=True, text=True,
                             timeout=300)
    assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
    assert f"removed Job demo/{name}" in cleaned.stdout and "left behind: nothing" in cleaned.stdout, cleaned.stdout
    assert runner.made_by_harness(ctx) == [], "clean left something the harness made"
    assert sorted(q["metadata"]["name"] for q in k.list(CLUSTER_QUEUE)[0]) == queues, "the demo's own queues stay"
    assert ("Job", name, "demo") in left, left
