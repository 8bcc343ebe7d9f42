"""Warm `tau-demo cluster up` (median of N) and `tau-demo cluster down`, in a private state dir (removed
at the end); each run's line gives the load average at its start, since the machine is shared.

    .venv/bin/python -m bench.cluster_up [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

from .common import median


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    state = tempfile.mkdtemp(prefix="tau-bench-")
    env = dict(os.environ, TAU_DEMO_STATE=state)
    tau = [sys.executable, "-m", "cli"]
    ups, downs = [], []
    for i in range(a.runs):
        load = os.getloadavg()[0]
        t0 = time.monotonic()
        subprocess.run(tau + ["cluster", "up", "--backend", "kwok", "--name", "bench"], env=env, check=True,
                       capture_output=True)
        ups.append(time.monotonic() - t0)
        t0 = time.monotonic()
        subprocess.run(tau + ["cluster", "down", "--name", "bench"], env=env, check=True, capture_output=True)
        downs.append(time.monotonic() - t0)
        print(f"run {i + 1}: load {load:.1f} at the start, up {ups[-1]:.1f}s, down {downs[-1]:.1f}s", flush=True)
    shutil.rmtree(state)                            # every run's cluster is down
    print(f"cluster up (warm): median {median(ups):.1f}s of {a.runs} {[round(x, 1) for x in ups]}")
    print(f"cluster down:      median {median(downs):.1f}s of {a.runs} {[round(x, 1) for x in downs]}")


if __name__ == "__main__":
    main()
