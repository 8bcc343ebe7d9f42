"""What the benchmarks share: medians and percentiles (a process's CPU time and memory: demo/cluster/procs.py)."""

from __future__ import annotations

import statistics


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def p95(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))] if xs else float("nan")
