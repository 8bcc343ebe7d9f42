"""The serial ceiling the fake autoscaler is measured against (`python -m bench.provreq_latency --autoscaler ideal`): a loop
that answers each ProvisioningRequest, one at a time, with exactly the fake's three writes for a one-node request
(the status Accepted, applied; the node, created; the status Provisioned, applied) and no planning at all: the node
is the pool's first, named by a counter, and nothing is read but the watch that hands it the requests.  What it
reaches in nodes per second is what this cluster allows a serial autoscaler; the fake's nodes/s divided by it says
how much the fake's own work (planning, caches, checks) costs.

    .venv/bin/python -m bench.ideal_autoscaler --kubeconfig KC --pools bench/pools-bench.yaml

A controller (it writes): like every controller it keeps its own watch, the one Watch of k8s/watch.py.
"""

from __future__ import annotations

import argparse
import queue
import threading

from k8s import resources as R
from k8s.client import Kube
from k8s.keys import ACCEPTED, CA_FIELD_MANAGER, PROVISIONED
from k8s.objects import format_time, utcnow
from k8s.pools import load_pools, node_manifest
from k8s.watch import Event, Watch, start_synced


def true_condition(ctype: str, reason: str) -> dict:
    return {"type": ctype, "status": "True", "reason": reason, "message": reason,
            "lastTransitionTime": format_time(utcnow())}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--pools", required=True)
    a = ap.parse_args()
    k = Kube(a.kubeconfig)
    pool = load_pools(a.pools)[0]
    todo: queue.Queue = queue.Queue()
    stop = threading.Event()

    def arrived(typ: Event, pr: dict) -> None:
        if typ == Event.ADDED and not (pr.get("status") or {}).get("conditions"):
            todo.put(pr)
    w = Watch(k, R.PROVREQ, arrived, timeout_seconds=30)
    start_synced([w])
    print("caches synced; ready", flush=True)
    n = 0
    while not stop.is_set():
        pr = todo.get()
        md = pr["metadata"]
        status = R.PROVREQ.new(md["name"], md["namespace"], uid=md["uid"])
        k.apply(R.PROVREQ, {**status, "status": {"conditions": [true_condition(ACCEPTED, "Accepted")]}}, CA_FIELD_MANAGER,
                subresource="status")
        n += 1
        k.create(R.NODE, node_manifest(pool, f"{pool.name_prefix}{n:06d}", None, md["uid"],
                                       f"{md['namespace']}/{md['name']}", None, batch=1))
        k.apply(R.PROVREQ, {**status, "status": {"conditions": [true_condition(PROVISIONED, "Provisioned")]}},
                CA_FIELD_MANAGER, subresource="status")


if __name__ == "__main__":
    main()
