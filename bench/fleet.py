"""The fleet's figures as benchmarks (`tau-demo fleet run`, docs/fleet.md): a fleet run repeated, its regression gate by
Kueue's own rule, and the scaling curve.

    .venv/bin/python -m bench.fleet --gangs 50 --runs 5 [--autoscaler fake|real] [--gate bench/fleet-limits-<autoscaler>.yaml]
    .venv/bin/python -m bench.fleet --curve 50,100,200,500 [--autoscaler fake|real]
    ... [--keep DIR] [-- more `tau-demo fleet run` flags]

- Repeated (`--runs`, at least 5 for a gate): each trial is one `tau-demo fleet run` in a fresh output directory (same
  seed, so the same fleet); a line per trial, then the mean of each figure and its limit by Kueue's rule of its
  performance suite (test/performance/scheduler/configs/*/rangespec.yaml at v0.19.2): limit = mean × 1.2, a time
  rounded up to the next 1,000 ms.  `--write-limits FILE` writes those limits, with the fleet they are for (its size,
  autoscaler and `fleet run` flags); `--gate FILE` fails (exit 1) when a mean is above its limit there, and refuses
  (exit 2, before any trial) a file written for another fleet.  bench/fleet-limits-fake.yaml and -real.yaml hold the
  limits of docs/fleet.md's five trials.
- The curve (`--curve N,N,...`): one run per fleet size, and what each gang costs as N grows: the control plane's CPU
  seconds per gang (kube-apiserver, etcd, Kueue, the autoscaler), the apiserver's requests per gang, the drain rate,
  the time to admission p50/p95.

Needs `tau-demo cluster up` and no autoscaler running (each run starts its own); with --autoscaler real,
`tau-demo toolchain ensure --with-real-ca`.  A trial that fails its checks stops the benchmark (exit 1).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

TAU = [sys.executable, "-m", "cli"]
MIN_TRIALS = 5                          # Kueue's rule: at least 5 trials for a limit
FACTOR = 1.2                            # limit = mean × FACTOR
TIME_FIGURES = ("admitted_p50", "admitted_p95", "provisioned_p95", "span")
FIGURES = TIME_FIGURES + ("apiserver_cpu", "control_plane_cpu", "api_requests")
CONTROL_PLANE = ("kube-apiserver", "etcd", "kueue", "autoscaler")


def figures(m: dict) -> dict[str, float]:
    """The figures of one run's results.json (pure)."""
    phase = {p["name"]: p for p in m["phases"]}
    return {"admitted_p50": phase["Admitted"]["p50"] or 0.0, "admitted_p95": phase["Admitted"]["p95"] or 0.0,
            "provisioned_p95": phase["Provisioned"]["p95"] or 0.0, "span": m["span"],
            "drain": m["drain_rate"] or 0.0,
            "apiserver_cpu": m["cost"].get("kube-apiserver", {}).get("cpu", 0.0),
            "control_plane_cpu": sum(m["cost"].get(c, {}).get("cpu", 0.0) for c in CONTROL_PLANE),
            "api_requests": sum(m["api_requests"].values())}


def limit(name: str, mean: float) -> float:
    """Kueue's rule: mean × 1.2, a time rounded up to the next whole second (1,000 ms) (pure)."""
    raw = mean * FACTOR
    return float(math.ceil(raw)) if name in TIME_FIGURES else raw


def limits(trials: list[dict[str, float]]) -> dict[str, float]:
    """Each figure's limit from the trials' mean (pure)."""
    return {f: limit(f, sum(t[f] for t in trials) / len(trials)) for f in FIGURES}


def over(trials: list[dict[str, float]], gate: dict[str, float]) -> list[str]:
    """The figures whose mean over the trials is above the gate's limit, as lines (pure)."""
    out = []
    for f, most in sorted(gate.items()):
        mean = sum(t[f] for t in trials) / len(trials)
        if mean > most:
            out.append(f"{f}: mean {mean:.2f} above its limit {most:.2f}")
    return out


def per_gang(gangs: int, fig: dict[str, float]) -> dict[str, float]:
    """What one gang costs at this size (pure)."""
    return {"control_plane_cpu": fig["control_plane_cpu"] / gangs, "apiserver_cpu": fig["apiserver_cpu"] / gangs,
            "api_requests": fig["api_requests"] / gangs}


def fleet_run(gangs: int, autoscaler: str, extra: list[str], kubeconfig: str | None, keep: Path | None = None) -> dict:
    """One `tau-demo fleet run`, its results.json; SystemExit when it failed.  `keep`: its output directory, kept (for
    `tau-demo fleet pace` and `fleet report`), else a temporary one."""
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as d:
        out = keep or Path(d) / "run"
        argv = [*TAU, "fleet", "run", "--gangs", str(gangs), "--autoscaler", autoscaler, "--out", str(out), *extra,
                *(["--kubeconfig", kubeconfig] if kubeconfig else [])]
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"fleet run failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
        return json.loads((out / "results.json").read_text())


def trial_row(label: str, fig: dict[str, float]) -> str:
    return (f"| {label} | {fig['admitted_p50']:.1f} s | {fig['admitted_p95']:.1f} s | {fig['provisioned_p95']:.1f} s | "
            f"{fig['drain']:.2f} | {fig['span']:.0f} s | {fig['apiserver_cpu']:.0f} | {fig['control_plane_cpu']:.0f} | "
            f"{fig['api_requests']:.0f} |")


HEADER = ["| trial | Admitted p50 | Admitted p95 | Provisioned p95 | drain (req/s) | span | apiserver CPU s | "
          "control plane CPU s | API requests |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]


def kept(a, name: str) -> Path | None:
    """Where a run's output directory is kept (`--keep DIR`: DIR/<autoscaler>-<gangs>[-<trial>]), or None."""
    return Path(a.keep) / name if a.keep else None


def fleet_of(a) -> dict:
    """The fleet a limits file is for: its size, autoscaler and `fleet run` flags (pure)."""
    return {"gangs": a.gangs, "autoscaler": a.autoscaler, "flags": list(a.extra)}


def gate_mismatch(a, written: dict) -> str | None:
    """Why a limits file cannot judge these trials (another fleet), or None (pure)."""
    want = fleet_of(a)
    diff = [f"{k} {written.get(k)!r} there, {v!r} here" for k, v in want.items() if written.get(k) != v]
    return "the limits are for another fleet: " + "; ".join(diff) if diff else None


def repeated(a) -> int:
    written = yaml.safe_load(Path(a.gate).read_text()) if a.gate else None
    if written is not None:
        why = gate_mismatch(a, written)
        if why:
            print(f"--gate {a.gate}: {why}", file=sys.stderr)
            sys.exit(2)
    trials = []
    print("\n".join(HEADER), flush=True)
    for i in range(a.runs):
        trials.append(figures(fleet_run(a.gangs, a.autoscaler, a.extra, a.kubeconfig,
                                        kept(a, f"{a.autoscaler}-{a.gangs}-{i + 1}"))))
        print(trial_row(str(i + 1), trials[-1]), flush=True)
    mean = {f: sum(t[f] for t in trials) / len(trials) for f in trials[0]}
    print(trial_row("mean", mean))
    lim = limits(trials)
    print("limits by Kueue's rule (mean × 1.2, times rounded up to the second): "
          + ", ".join(f"{f} {v:.2f}" for f, v in lim.items()))
    if a.write_limits:
        Path(a.write_limits).write_text(yaml.safe_dump({**fleet_of(a), "trials": len(trials), "limits": lim},
                                                       sort_keys=False))
    if written is not None:
        bad = over(trials, written["limits"])
        print("gate: " + ("; ".join(bad) if bad else f"every mean within {a.gate}'s limits"))
        return 1 if bad else 0
    return 0


def curve(a) -> int:
    print("| gangs | Admitted p50 | Admitted p95 | drain (req/s) | span | control plane CPU s per gang | "
          "apiserver CPU s per gang | API requests per gang |\n| --- | --- | --- | --- | --- | --- | --- | --- |",
          flush=True)
    for n in a.curve:
        fig = figures(fleet_run(n, a.autoscaler, a.extra, a.kubeconfig, kept(a, f"{a.autoscaler}-{n}")))
        g = per_gang(n, fig)
        print(f"| {n} | {fig['admitted_p50']:.1f} s | {fig['admitted_p95']:.1f} s | {fig['drain']:.2f} | "
              f"{fig['span']:.0f} s | {g['control_plane_cpu']:.2f} | {g['apiserver_cpu']:.2f} | "
              f"{g['api_requests']:.0f} |", flush=True)
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gangs", type=int, default=50)
    ap.add_argument("--runs", type=int, default=MIN_TRIALS)
    ap.add_argument("--autoscaler", choices=["fake", "real"], default="fake")
    ap.add_argument("--curve", type=lambda s: [int(x) for x in s.split(",")], default=None,
                    help="fleet sizes, e.g. 50,100,200,500: one run each, the cost per gang")
    ap.add_argument("--gate", help="a limits file (--write-limits): exit 1 when a mean is above its limit")
    ap.add_argument("--write-limits", help="write the limits of these trials by Kueue's rule to this file")
    ap.add_argument("--kubeconfig")
    ap.add_argument("--keep", metavar="DIR", help="keep each run's output directory under DIR (for `tau-demo fleet "
                    "pace` and `fleet report`): DIR/<autoscaler>-<gangs>[-<trial>]")
    ap.add_argument("extra", nargs="*", help="more `tau-demo fleet run` flags, after --")
    a = ap.parse_args()
    if a.curve is None and (a.gate or a.write_limits) and a.runs < MIN_TRIALS:
        ap.error(f"a limit needs at least {MIN_TRIALS} trials (Kueue's rule), got --runs {a.runs}")
    sys.exit(curve(a) if a.curve else repeated(a))


if __name__ == "__main__":
    main()
