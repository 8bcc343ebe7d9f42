"""Real Kueue is in the loop: its webhook, scheduler, provisioning controller and job reconciler."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from demo.cluster.install import install_demo_objects, webhook_answers
from demo.cluster.state import ClusterError
from demo.jobs.observe import workload_for
from k8s import job as jobs
from k8s import resources as R
from k8s.manifests import ManifestError, load_manifest
from k8s.objects import is_true
from k8s.pools import load_pools, node_manifest
from tests.cluster.conftest import BACKEND, REPO, wait_for

NS = "demo"


def gpu_job(name: str, pods: int = 2, gpus: int = 8, suspend: bool = False) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": NS, "labels": {"kueue.x-k8s.io/queue-name": "gpu-a100-8"}},
            "spec": {"suspend": suspend, "parallelism": pods, "completions": pods, "backoffLimit": 0,
                     "template": {"metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": "3s"}},
                                  "spec": {"restartPolicy": "Never", "containers": [{
                                      "name": "train", "image": "example/train",
                                      "resources": {"requests": {"nvidia.com/gpu": str(gpus), "cpu": "8",
                                                                 "memory": "64Gi"},
                                                    "limits": {"nvidia.com/gpu": str(gpus)}}}]}}}}


def test_kueue_gates_a_gpu_job_on_a_provisioning_request(k, unique, no_autoscaler):
    name = f"found-{unique}"
    job = k.create(R.JOB, gpu_job(name), NS)
    # 1. Kueue's mutating webhook suspended a Job created unsuspended
    assert jobs.suspended(job)
    # 2. a Workload with QuotaReserved=True
    wl = wait_for(lambda: (w := workload_for(k, job)) and is_true(w, "QuotaReserved") and w, 60,
                  what="QuotaReserved=True")
    assert wl["status"]["admission"]["clusterQueue"] == "gpu-a100"
    assert not is_true(wl, "Admitted")
    # 3. Kueue created ProvisioningRequest <workload>-<check>-1 and its PodTemplate
    pr_name = f"{wl['metadata']['name']}-gpu-provisioning-1"
    pr = wait_for(lambda: k.get_or_none(R.PROVREQ, pr_name, NS), 30, what=f"ProvisioningRequest {pr_name}")
    assert pr["spec"]["provisioningClassName"] == "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
    assert pr["spec"]["podSets"][0]["count"] == 2
    tmpl_name = pr["spec"]["podSets"][0]["podTemplateRef"]["name"]
    assert tmpl_name == f"ppt-{pr_name}-main"
    tmpl = k.get(R.POD_TEMPLATE, tmpl_name, NS)
    assert tmpl["template"]["spec"]["nodeSelector"] == {"agentpool": "gpupool"}
    assert jobs.suspended(k.get(R.JOB, name, NS))

    # 4. play the autoscaler by hand: two 8-GPU KWOK nodes, then Provisioned=True
    pool = load_pools(REPO / "manifests" / "node-pools.yaml")[0]
    nodes = [f"hand-{unique}-{i}" for i in range(2)]
    for n in nodes:
        k.create(R.NODE, node_manifest(pool, n, None, pr["metadata"]["uid"], f"{NS}/{pr_name}"))
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    conds = [{"type": t, "status": "True", "reason": r, "message": "set by hand", "lastTransitionTime": now}
             for t, r in (("Accepted", "Accepted"), ("Provisioned", "CapacityIsProvisioned"))]
    k.patch_status(R.PROVREQ, pr_name, {"status": {"conditions": conds}}, NS)

    try:
        # 5. Admitted, unsuspended, both pods on the new nodes, Job complete
        wait_for(lambda: is_true(workload_for(k, job), "Admitted"), 60, what="Admitted=True")
        wait_for(lambda: jobs.started(k.get(R.JOB, name, NS)), 30, what="Job unsuspended")
        pods = wait_for(lambda: (p := k.list(R.POD, NS, label_selector=f"job-name={name}")[0])
                        and len(p) == 2 and all(x["spec"].get("nodeName") for x in p) and p, 60,
                        what="2 pods scheduled")
        assert sorted(p["spec"]["nodeName"] for p in pods) == sorted(nodes)
        wait_for(lambda: is_true(k.get(R.JOB, name, NS), "Complete"), 90, what="Job Complete")
    finally:
        k.delete(R.JOB, name, NS)
        for n in nodes:
            k.delete(R.NODE, n)
        # the garbage collector takes the Workload after the Job, then the request after the Workload: waited for
        # here, so that a test after this one that begins by finding the namespace clean (the fixture `clean`) does
        # not find them (on a loaded machine five tests after this one did)
        wait_for(lambda: workload_for(k, job) is None and k.get_or_none(R.PROVREQ, pr_name, NS) is None, 60,
                 what="the Job's Workload and ProvisioningRequest gone after it")


def test_invalid_kueue_object_is_rejected_by_kueues_webhook(kubeconfig, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("""
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: broken-queue}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: a100-scale
      resources:
      - {name: nvidia.com/gpu, nominalQuota: "16"}
""")
    # the same path `cluster up` takes for manifests/, pointed at a directory holding the bad object
    (tmp_path / "kueue-objects.yaml").write_text(bad.read_text())
    with pytest.raises(ClusterError) as e:
        install_demo_objects(kubeconfig, BACKEND, manifests_dir=tmp_path, plain=True)
    msg = str(e.value)
    print(msg)
    assert "kueue-objects.yaml was refused" in msg
    assert 'admission webhook "vclusterqueue.kb.io" denied the request' in msg
    assert "must match the name in coveredResources" in msg


def test_malformed_manifest_is_reported_with_its_file(tmp_path):
    bad = tmp_path / "objects.yaml"
    bad.write_text("kind: ResourceFlavor\nmetadata: {name: [unclosed\n")
    with pytest.raises(ManifestError, match="objects.yaml: not valid YAML"):
        load_manifest(bad)
    bad.write_text("kind: ResourceFlavor\nmetadata: {name: x}\n")
    with pytest.raises(ManifestError, match="needs apiVersion, kind and metadata.name"):
        load_manifest(bad)


def test_status_reports_webhooks_answer(k):
    ok, msg = webhook_answers(k)
    assert ok, msg
