"""The harness against the real thing: submit -> both gang pods Running for the 2 × 8-GPU Job, under the
fake autoscaler and under the real Cluster Autoscaler 1.36.1 (at --scan-interval 1s and at its 10s
default), N runs each, in one run of this script, from a client-side watch on the Job's pods (a Tape: the
time each pod's change arrived).

The fake runs with a boot time of 0 (`--boot 0s`): the kwok provider's
nodes are Ready at once, so the harness is compared, not the simulated cloud.  Before each submission the
pool is empty (its nodes deleted by the script: an autoscaler's own scale-down takes minutes) and the script sleeps a random fraction of the scan interval, so that the submission falls
at a random point of the real CA's loop (a new ProvisioningRequest waits for the next loop).

Needs `tau-demo cluster up`, `tau-demo toolchain ensure --with-real-ca`, and no autoscaler running (it
starts and stops each one itself, never two at once).

    .venv/bin/python -m bench.real_vs_fake [--runs 5] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from demo.cluster.state import default_kubeconfig
from demo.realca import exclusion
from k8s import heartbeat, poll
from k8s.client import Kube
from k8s.keys import DEMO_NAMESPACE, FAKE_CA_LEASE, JOB_NAME_LABEL, POOL_LABEL, REAL_CA_LEASE
from k8s.objects import labels, name as name_of
from k8s.resources import NODE, POD
from k8s.tape import Delivered
from k8s.watch import Event
from scenarios.kit.controllers import start_private, stop_started
from scenarios.kit.harness import Context
from scenarios.kit.toolbox import changes

from .common import median

POOLS_EMPTY_TIMEOUT = 60.0      # seconds for the deleted pool nodes to go


def all_running_at(seen: list[Delivered], pods: int) -> float | None:
    """When the last of `pods` pods was first seen Running, from a tape's changes (pure); None before that."""
    running: dict[str, float] = {}
    for t, typ, pod in seen:
        if typ != Event.DELETED and (pod.get("status") or {}).get("phase") == "Running":
            running.setdefault(name_of(pod), t)
    return max(running.values()) if len(running) >= pods else None


def time_to_running(ctx: Context, name: str, pods: int = 2, timeout: float = 180) -> float:
    """Seconds from just before the Job is created to the watch event that shows the last of its pods Running."""
    with changes(ctx, POD, keep=lambda pod: labels(pod).get(JOB_NAME_LABEL) == name, namespace=DEMO_NAMESPACE) as tape:
        t0 = time.time()
        ctx.submit(name, "2x8", duration="120s")
        done = poll.eventually(lambda: all_running_at(list(tape.changes), pods), timeout, 0.05)
    if done is None:
        raise RuntimeError(f"{name}: both pods not Running within {timeout:.0f}s")
    return done - t0


def an_autoscaler_runs(k: Kube) -> str | None:
    """Why the script cannot start its own autoscalers (one already runs on the cluster, or the real one's traces
    are fresh), or None."""
    for lease, what in ((FAKE_CA_LEASE, "the fake autoscaler"), (REAL_CA_LEASE, "the real Cluster Autoscaler")):
        if heartbeat.alive(k, lease):
            return f"{what} is already running (Lease {lease}); this benchmark starts its own: stop it first"
    return exclusion.real_running(k)


def empty_the_pools(ctx: Context) -> None:
    """Delete every node of the autoscaler's pools and wait until they are gone: each submission starts on an
    empty pool."""
    for n in ctx.k.list(NODE, label_selector=POOL_LABEL)[0]:
        ctx.k.delete(NODE, name_of(n))
    ctx.wait(lambda: not ctx.k.list(NODE, label_selector=POOL_LABEL)[0], POOLS_EMPTY_TIMEOUT,
             "the pools' nodes to go", interval=0.1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    kc = default_kubeconfig()
    k = Kube(kc)
    why = an_autoscaler_runs(k)
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
        empty_the_pools(ctx)
        start_private(ctx, lease, args, label, timeout=180)
        try:
            times = []
            for i in range(a.runs):
                empty_the_pools(ctx)
                time.sleep(scan + rng.uniform(0, scan))      # settle, then a random point of the loop
                name = ctx.new_name("job-bench")
                dt = time_to_running(ctx, name)
                times.append(dt)
                print(f"{label:15} run {i + 1}: submit -> both pods Running {dt:.2f}s", flush=True)
                ctx.delete_job(name)
            results[label] = times
        finally:
            stop_started(ctx)
            empty_the_pools(ctx)
    base = median(results[configs[0][0]])
    print(f"\n{'autoscaler':15} {'median':>8} {'min':>7} {'max':>7}  ratio to the fake   (runs: {a.runs})")
    for label, times in results.items():
        m = median(times)
        print(f"{label:15} {m:7.2f}s {min(times):6.2f}s {max(times):6.2f}s  {m / base:6.1f}x   "
              f"{[round(x, 2) for x in times]}")


if __name__ == "__main__":
    main()
