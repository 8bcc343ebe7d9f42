"""What MultiKueue on one machine costs: `tau-demo cluster up --multikueue` (the manager and its two workers), the
three clusters' idle CPU and memory, per cluster and per process, and `cluster down`; with --plain, the same for
one plain demo cluster beside it for comparison.  In a private state dir (removed at the end); every line says the
load average at its start, since the machine is shared.

    .venv/bin/python -m bench.multikueue_cost [--runs 1] [--settle 20] [--window 60] [--plain]

Idle: no Job, no controller of the demo's running (no autoscaler, no deadline controller), only the clusters'
own processes (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok-controller, Kueue): their CPU
time over the window (from /proc, user + system) as a share of one core, and their resident memory (VmRSS) at
its end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from demo.cluster import procs
from k8s.paths import REPO as _REPO

from .common import median

_PROCESSES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kueue")


def component(cmd: str) -> str:
    exe = Path(cmd.split()[0]).name
    if exe == "unshare":                       # a MultiKueue cluster's Kueue, in its own mount namespace
        return "kueue"
    return next((c for c in _PROCESSES if exe.startswith(c)), exe)


def processes_of(d: Path) -> list[tuple[int, str]]:
    """The processes of the cluster whose state is `d` (not those of a cluster whose name merely starts with its
    name: bench-mk's workers are bench-mk-worker-1, -2): its kwokctl control plane and its Kueue."""
    found = {pid: cmd for sub in ("kwok", "kueue") for pid, cmd in procs.running_under(d / sub)}
    return sorted(found.items())


def idle(dirs: dict[str, Path], settle: float, window: float) -> dict[str, dict[str, tuple[float, float]]]:
    """Per cluster, per component: (CPU share of one core over the window, RSS MB at its end)."""
    time.sleep(settle)
    pids = {name: processes_of(d) for name, d in dirs.items()}
    before = {pid: procs.cpu_seconds(pid) for ps in pids.values() for pid, _ in ps}
    t0 = time.monotonic()
    time.sleep(window)
    span = time.monotonic() - t0
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for name, ps in pids.items():
        for pid, cmd in ps:
            try:
                cpu = (procs.cpu_seconds(pid) - before[pid]) / span
                mem = procs.rss_mb(pid)
            except OSError:
                continue
            c = component(cmd)
            old = out.setdefault(name, {}).get(c, (0.0, 0.0))
            out[name][c] = (old[0] + cpu, old[1] + mem)
    return out


def show(table: dict[str, dict[str, tuple[float, float]]]) -> None:
    total_cpu = total_mem = 0.0
    for name, comps in table.items():
        cpu, mem = sum(c for c, _ in comps.values()), sum(m for _, m in comps.values())
        total_cpu, total_mem = total_cpu + cpu, total_mem + mem
        parts = ", ".join(f"{c} {v[0] * 100:.1f}% {v[1]:.0f} MB" for c, v in sorted(comps.items()))
        print(f"  {name:18} CPU {cpu * 100:5.1f}% of a core, RSS {mem:6.0f} MB  ({parts})")
    print(f"  {'all':18} CPU {total_cpu * 100:5.1f}% of a core, RSS {total_mem:6.0f} MB")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--settle", type=float, default=20.0, help="seconds after `up` before measuring")
    ap.add_argument("--window", type=float, default=60.0, help="seconds of idle measured")
    ap.add_argument("--plain", action="store_true", help="also one plain cluster, for comparison")
    a = ap.parse_args()
    state = tempfile.mkdtemp(prefix="tau-bench-mk-")
    env = dict(os.environ, TAU_DEMO_STATE=state)
    tau = [sys.executable, "-m", "cli"]
    clusters = Path(state) / "clusters"
    ups, downs = [], []
    try:
        for i in range(a.runs):
            load = os.getloadavg()[0]
            t0 = time.monotonic()
            subprocess.run(tau + ["cluster", "up", "--multikueue", "--name", "bench-mk"], env=env, check=True,
                           capture_output=True, cwd=_REPO)
            ups.append(time.monotonic() - t0)
            print(f"run {i + 1}: load {load:.1f} at the start, `cluster up --multikueue` {ups[-1]:.1f}s", flush=True)
            names = ["bench-mk", "bench-mk-worker-1", "bench-mk-worker-2"]
            print(f"  idle, {a.window:.0f}s after {a.settle:.0f}s (load {os.getloadavg()[0]:.1f}):", flush=True)
            show(idle({n: clusters / n for n in names}, a.settle, a.window))
            t0 = time.monotonic()
            subprocess.run(tau + ["cluster", "down", "--name", "bench-mk"], env=env, check=True, capture_output=True,
                           cwd=_REPO)
            downs.append(time.monotonic() - t0)
            left = procs.running_under(Path(state))
            print(f"  `cluster down` {downs[-1]:.1f}s; processes left: {len(left)}", flush=True)
        if a.plain:
            load = os.getloadavg()[0]
            t0 = time.monotonic()
            subprocess.run(tau + ["cluster", "up", "--backend", "kwok", "--name", "bench-plain"], env=env, check=True,
                           capture_output=True, cwd=_REPO)
            print(f"plain: load {load:.1f} at the start, `cluster up` {time.monotonic() - t0:.1f}s", flush=True)
            print(f"  idle, {a.window:.0f}s after {a.settle:.0f}s (load {os.getloadavg()[0]:.1f}):", flush=True)
            show(idle({"bench-plain": clusters / "bench-plain"}, a.settle, a.window))
            subprocess.run(tau + ["cluster", "down", "--name", "bench-plain"], env=env, check=True,
                           capture_output=True, cwd=_REPO)
    finally:
        for name in ("bench-mk", "bench-plain"):
            subprocess.run(tau + ["cluster", "down", "--name", name], env=env, capture_output=True, cwd=_REPO)
        shutil.rmtree(state, ignore_errors=True)
    print(f"cluster up --multikueue: median {median(ups):.1f}s of {a.runs} {[round(x, 1) for x in ups]}")
    print(f"cluster down (all three): median {median(downs):.1f}s of {a.runs} {[round(x, 1) for x in downs]}")


if __name__ == "__main__":
    main()
