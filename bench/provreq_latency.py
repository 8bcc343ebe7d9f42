"""Fake autoscaler throughput on the kwok backend: N ProvisioningRequests created at once
(one 8-GPU pod each, so one node each); time from creation to Provisioned=True (median, p95)
and nodes created per second.  Needs a cluster (`tau-demo cluster up`) and starts its own
fake-ca with bench/pools-bench.yaml; stop any other fake-ca first.

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

ap = argparse.ArgumentParser()
ap.add_argument("--requests", type=int, default=100)
a = ap.parse_args()
kc = default_kubeconfig()
k = Kube(kc)
if heartbeat.alive(k, "fake-ca"):
    sys.exit("another fake-ca is running; stop it first")
NS = "bench"
k.apply(R.NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}, "bench")
log = open("/tmp/bench-fake-ca.log", "w")
ca = subprocess.Popen([sys.executable, "-m", "demo", "fake-ca", "--kubeconfig", kc, "--pools",
                       str(Path(__file__).with_name("pools-bench.yaml")), "--booking", "10m"], stdout=log,
                      stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONUNBUFFERED="1"))
try:
    while "ready" not in Path("/tmp/bench-fake-ca.log").read_text():
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
                                "spec": {"provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
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
    ca.wait(10)
    for pr in k.list(R.PROVREQ, NS)[0]:
        k.delete(R.PROVREQ, pr["metadata"]["name"], NS)
    k.delete(R.POD_TEMPLATE, "bench-t", NS)
    for n in k.list(R.NODE)[0]:
        if n["metadata"]["name"].startswith("aks-benchpool"):
            k.delete(R.NODE, n["metadata"]["name"])
    k.delete(R.NAMESPACE, NS)
