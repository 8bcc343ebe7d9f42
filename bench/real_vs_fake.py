"""The harness against the real thing: submit -> both gang pods Running for the 2 × 8-GPU Job, under the
fake autoscaler and under the real Cluster Autoscaler 1.36.1 (at --scan-interval 1s and at its 10s
default), N runs each, in one run of this script, from a client-side watch on the Job's pods.

The fake runs with a boot time of 0 (`--boot 0s`): the kwok provider's
nodes are Ready at once, so the harness is compared, not the simulated cloud.  Before each submission the
pool is empty and the script sleeps a random fraction of the scan interval, so that the submission falls
at a random point of the real CA's loop (a new ProvisioningRequest waits for the next loop).

Needs `tau-demo cluster up`, `tau-demo toolchain ensure --with-real-ca`, and no autoscaler running (it
starts and stops each one itself, never two at once).

    .venv/bin/python bench/real_vs_fake.py [--runs 5] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import median  # noqa: E402

from demo.cluster.state import default_kubeconfig  # noqa: E402
from k8s.client import Kube  # noqa: E402
from k8s.keys import DEMO_NAMESPACE, FAKE_CA_LEASE, JOB_NAME_LABEL, REAL_CA_LEASE  # noqa: E402
from k8s.objects import name as name_of  # noqa: E402
from k8s.resources import POD  # noqa: E402
from k8s.watch import Watch  # noqa: E402
from scenarios.conformance.probes import reset, running_autoscaler  # noqa: E402
from scenarios.kit.controllers import start_private, stop_started  # noqa: E402
from scenarios.kit.harness import Context  # noqa: E402


def time_to_running(ctx: Context, name: str, pods: int = 2, timeout: float = 180) -> float:
    """Seconds from just before the Job is created to the watch event that shows the last of its pods Running."""
    running: dict[str, float] = {}
    done = threading.Event()

    def seen(typ, pod) -> None:
        if (pod.get("status") or {}).get("phase") == "Running":
            running.setdefault(name_of(pod), time.time())
            if len(running) >= pods:
                done.set()
    with Watch(ctx.k, POD, seen, namespace=DEMO_NAMESPACE, label_selector=f"{JOB_NAME_LABEL}={name}",
               timeout_seconds=5):
        t0 = time.time()
        ctx.submit(name, "2x8", duration="120s")
        ok = done.wait(timeout)
    if not ok:
        raise RuntimeError(f"{name}: both pods not Running within {timeout:.0f}s")
    return max(running.values()) - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    kc = default_kubeconfig()
    k = Kube(kc)
    why = running_autoscaler(k)
    if why:
        sys.exit(why)
    ctx = Context(k, kc, out=open("/dev/null", "w"))
    configs = [("fake (boot 0)", FAKE_CA_LEASE, ["fake-ca", "--boot", "0s"], 1.0),
               ("real, scan 1s", REAL_CA_LEASE, ["real-ca", "--scan-interval", "1s"], 1.0),
               ("real, scan 10s", REAL_CA_LEASE, ["real-ca", "--scan-interval", "10s"], 10.0)]
    for label, _, args, _ in configs:
        print(f"{label:15} tau-demo {' '.join(args)}", flush=True)
    results: dict[str, list[float]] = {}
    for label, lease, args, scan in configs:
        reset(ctx)
        start_private(ctx, lease, args, label, timeout=180)
        try:
            times = []
            for i in range(a.runs):
                reset(ctx)
                time.sleep(scan + rng.uniform(0, scan))      # settle, then a random point of the loop
                name = ctx.new_name("job-bench")
                dt = time_to_running(ctx, name)
                times.append(dt)
                print(f"{label:15} run {i + 1}: submit -> both pods Running {dt:.2f}s", flush=True)
                ctx.delete_job(name)
            results[label] = times
        finally:
            stop_started(ctx)
            reset(ctx)
    base = median(results[configs[0][0]])
    print(f"\n{'autoscaler':15} {'median':>8} {'min':>7} {'max':>7}  ratio to the fake   (runs: {a.runs})")
    for label, times in results.items():
        m = median(times)
        print(f"{label:15} {m:7.2f}s {min(times):6.2f}s {max(times):6.2f}s  {m / base:6.1f}x   "
              f"{[round(x, 2) for x in times]}")


if __name__ == "__main__":
    main()
