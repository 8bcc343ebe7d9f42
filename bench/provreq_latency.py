"""Fake autoscaler throughput on the kwok backend: N ProvisioningRequests created at once
(one 8-GPU pod each, so one node each); time from creation to Provisioned=True (median, p95)
and nodes created per second.  Needs a cluster (`tau-demo cluster up`) and starts its own
fake-ca with bench/pools-bench.yaml; stop any other autoscaler first.  It leaves the cluster as it found
it: its namespace, requests and nodes are deleted, and the pool table its fake-ca published
(kube-system/tau-demo-node-pools, with the 200-node benchpool) is put back as it was, or, when there was
none, replaced by the demo's (manifests/node-pools.yaml), so `tau-demo submit` is not refused afterwards;
the status ConfigMap it wrote (kube-system/cluster-autoscaler-status) is put back or deleted.

    .venv/bin/python bench/provreq_latency.py [--requests 100]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import median, p95  # noqa: E402

from demo.cluster.state import default_kubeconfig  # noqa: E402
from demo.k8s import heartbeat  # noqa: E402
from demo.k8s import resources as R  # noqa: E402
from demo.k8s.client import Kube  # noqa: E402
from demo.k8s.keys import (BEST_EFFORT_ATOMIC, CA_STATUS, FAKE_CA_FIELD_MANAGER, FAKE_CA_LEASE, POOL_TABLE,  # noqa: E402
                           REAL_CA_LEASE)
from demo.paths import POOLS_FILE  # noqa: E402
from fake_ca.pools import load_pools, pools_to_configmap  # noqa: E402


def table_to_restore(before: dict | None) -> dict:
    """The pool table to put back after the run (pure): the one found before it, or the demo's
    (manifests/node-pools.yaml) when there was none.  A table left by the bench's fake-ca would make
    preflight plan against benchpool."""
    table = pools_to_configmap(load_pools(POOLS_FILE))
    if before is not None:
        table["data"] = dict(before.get("data") or {})
    return table


def restore_pool_table(k: Kube, before: dict | None) -> None:
    k.apply(R.CONFIG_MAP, table_to_restore(before), field_manager=FAKE_CA_FIELD_MANAGER)
    print(f"pool table {POOL_TABLE[0]}/{POOL_TABLE[1]} restored "
          f"({'as found' if before is not None else 'from ' + POOLS_FILE.name})")


def restore_status(k: Kube, before: dict | None) -> None:
    """The autoscaler status ConfigMap its fake-ca wrote (benchpool's node group): as found, or gone."""
    if before is None:
        k.delete(R.CONFIG_MAP, CA_STATUS[1], CA_STATUS[0])
        return
    k.apply(R.CONFIG_MAP, {"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": CA_STATUS[1], "namespace": CA_STATUS[0]},
                           "data": dict(before.get("data") or {})}, field_manager=FAKE_CA_FIELD_MANAGER)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=100)
    run(ap.parse_args())


def run(a: argparse.Namespace) -> None:
    kc = default_kubeconfig()
    k = Kube(kc)
    for lease in (FAKE_CA_LEASE, REAL_CA_LEASE):
        if heartbeat.alive(k, lease):
            sys.exit(f"another autoscaler is running (heartbeat Lease {lease}); stop it first")
    NS = "bench"
    table_before = k.get_or_none(R.CONFIG_MAP, POOL_TABLE[1], POOL_TABLE[0])
    status_before = k.get_or_none(R.CONFIG_MAP, CA_STATUS[1], CA_STATUS[0])
    k.apply(R.NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}, "bench")
    log = open("/tmp/bench-fake-ca.log", "w")
    ca = subprocess.Popen([sys.executable, "-m", "demo", "fake-ca", "--kubeconfig", kc, "--pools",
                           str(Path(__file__).with_name("pools-bench.yaml")), "--booking", "10m"], stdout=log,
                          stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        while "ready" not in Path("/tmp/bench-fake-ca.log").read_text():
            if ca.poll() is not None:
                sys.exit("the bench's fake-ca exited: " + Path("/tmp/bench-fake-ca.log").read_text()[-2000:])
            time.sleep(0.2)
        tmpl = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "bench-t", "namespace": NS},
                "template": {"spec": {"nodeSelector": {"agentpool": "benchpool"}, "containers": [
                    {"name": "c", "image": "x", "resources": {"requests": {"nvidia.com/gpu": "8"},
                                                              "limits": {"nvidia.com/gpu": "8"}}}]}}}
        k.create(R.POD_TEMPLATE, tmpl, NS)
        t0 = time.time()
        for i in range(a.requests):
            k.create(R.PROVREQ, {"apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
                                 "metadata": {"name": f"bench-{i:03d}", "namespace": NS},
                                 "spec": {"provisioningClassName": BEST_EFFORT_ATOMIC,
                                          "podSets": [{"podTemplateRef": {"name": "bench-t"}, "count": 1}]}}, NS)
        created_all = time.time() - t0
        lat = {}
        while len(lat) < a.requests and time.time() - t0 < 600:
            for pr in k.list(R.PROVREQ, NS)[0]:
                for c in (pr.get("status") or {}).get("conditions") or []:
                    if c["type"] == "Provisioned" and c["status"] == "True":
                        made = datetime.fromisoformat(pr["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
                        done = datetime.fromisoformat(c["lastTransitionTime"].replace("Z", "+00:00"))
                        lat[pr["metadata"]["name"]] = (done - made).total_seconds()
            time.sleep(0.5)
        elapsed = time.time() - t0
        nodes = [n for n in k.list(R.NODE)[0] if n["metadata"]["name"].startswith("aks-benchpool")]
        print(f"requests: {a.requests} created in {created_all:.1f}s; provisioned: {len(lat)}")
        print(f"creation -> Provisioned=True: median {median(list(lat.values())):.1f}s, "
              f"p95 {p95(list(lat.values())):.1f}s (condition timestamps, 1s resolution)")
        print(f"nodes created: {len(nodes)} in {elapsed:.1f}s = {len(nodes) / elapsed:.1f} nodes/s")
    finally:
        ca.terminate()
        try:
            ca.wait(10)
        except subprocess.TimeoutExpired:
            ca.kill()
            ca.wait()
        restore_pool_table(k, table_before)     # once its fake-ca is gone, before anything else can fail
        restore_status(k, status_before)
        for pr in k.list(R.PROVREQ, NS)[0]:
            k.delete(R.PROVREQ, pr["metadata"]["name"], NS)
        k.delete(R.POD_TEMPLATE, "bench-t", NS)
        for n in k.list(R.NODE)[0]:
            if n["metadata"]["name"].startswith("aks-benchpool"):
                k.delete(R.NODE, n["metadata"]["name"])
        k.delete(R.NAMESPACE, NS)


if __name__ == "__main__":
    main()
