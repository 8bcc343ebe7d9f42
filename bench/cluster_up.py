"""Warm `tau-demo cluster up` (median of N) and `tau-demo cluster down`, in a private state dir.

    .venv/bin/python bench/cluster_up.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

from common import median

ap = argparse.ArgumentParser()
ap.add_argument("--runs", type=int, default=3)
a = ap.parse_args()
env = dict(os.environ, TAU_DEMO_STATE=tempfile.mkdtemp(prefix="tau-bench-"))
tau = [sys.executable, "-m", "demo"]
ups, downs = [], []
for i in range(a.runs):
    t0 = time.monotonic()
    subprocess.run(tau + ["cluster", "up", "--backend", "kwok", "--name", "bench"], env=env, check=True,
                   capture_output=True)
    ups.append(time.monotonic() - t0)
    t0 = time.monotonic()
    subprocess.run(tau + ["cluster", "down", "--name", "bench"], env=env, check=True, capture_output=True)
    downs.append(time.monotonic() - t0)
    print(f"run {i + 1}: up {ups[-1]:.1f}s, down {downs[-1]:.1f}s", flush=True)
print(f"cluster up (warm): median {median(ups):.1f}s of {a.runs} {[round(x, 1) for x in ups]}")
print(f"cluster down:      median {median(downs):.1f}s of {a.runs} {[round(x, 1) for x in downs]}")
