"""The success path on the kwok backend: submit -> both pods Running, median of N, broken down
by phase, including the nodes' boot (Provisioned comes first, then the nodes stay NotReady for
the pool's bootSeconds, as under the real autoscaler).  Needs `tau-demo cluster up` and a running
fake-ca (`tau-demo fake-ca`).  `--boot-seconds S` overrides the pool's boot time per request
(the ProvisioningRequest parameter fakeCABootSeconds).

    .venv/bin/python -m bench.success_path [--runs 5] [--boot-seconds 0]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from demo.cluster.state import default_kubeconfig
from k8s import heartbeat
from k8s import job as jobs
from k8s import workload as workloads
from k8s.client import Kube
from k8s.keys import MANAGED_LABEL, PARAM_BOOT_SECONDS, PROVISIONED
from k8s.objects import condition, is_true
from scenarios.kit.harness import Context
from scenarios.kit.recorder import Recorder

from .common import median

RUN_TIMEOUT = 600.0         # seconds a run may take to get both pods Running


def both_nodes_ready(s) -> bool:
    made = [n for n in s.nodes if MANAGED_LABEL in n["metadata"].get("labels", {})]
    return len(made) >= 2 and all((condition(n, "Ready") or {}).get("status") == "True" for n in made)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--boot-seconds", help="override the pool's bootSeconds (default: the pool's own)")
    a = ap.parse_args()
    kc = default_kubeconfig()
    k = Kube(kc)
    if not heartbeat.alive(k, "fake-ca"):
        sys.exit("start `tau-demo fake-ca` first")
    ctx = Context(k, kc, out=open("/dev/null", "w"))
    MARKS = ("quota reserved", "provisioned", "admitted", "unsuspended", "both nodes Ready", "both pods Running")
    provreq = {PARAM_BOOT_SECONDS: a.boot_seconds} if a.boot_seconds is not None else None
    rows = []
    for i in range(a.runs):
        ctx.wait_pool_empty(120)
        name = ctx.new_name("job-bench")
        load = os.getloadavg()[0]                       # the machine is shared: say how busy it was
        done = {                                         # each mark: when the recorder first saw it hold
            "quota reserved": lambda s: workloads.quota_reserved(s.workload),
            "provisioned": lambda s: any(is_true(p, PROVISIONED) for p in s.provreqs),
            "admitted": lambda s: workloads.admitted(s.workload),
            "unsuspended": lambda s: jobs.started(s.job),
            "both nodes Ready": both_nodes_ready,
            "both pods Running": lambda s: sum(1 for p in s.pods if p["status"].get("phase") == "Running") == 2}
        with Recorder(ctx, name, None, interval=0.05) as rec:
            t0 = time.time()
            ctx.submit(name, "2x8", duration="30s", provreq=provreq)
            ctx.wait(lambda: rec.ever(done["both pods Running"]), RUN_TIMEOUT, "both pods to run")
        marks = {m: t - t0 for m, pred in done.items() if (t := rec.first(pred)) is not None}
        rows.append(marks)
        print(f"run {i + 1} (load {load:.1f} at the start): " + ", ".join(f"{p} {marks.get(p, float('nan')):.2f}s" for p in MARKS), flush=True)
        ctx.delete_job(name)
    print("median since submit: " + ", ".join(f"{p} {median([r[p] for r in rows if p in r]):.2f}s" for p in MARKS))


if __name__ == "__main__":
    main()
