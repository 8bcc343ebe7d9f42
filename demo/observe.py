"""Read everything the phase view and the event log need about one Job (I/O only)."""

from __future__ import annotations

from dataclasses import dataclass

from . import kube

JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
CHECK_NAME = "gpu-provisioning"


@dataclass
class Snapshot:
    job: dict | None
    workload: dict | None
    provreqs: list[dict]
    pods: list[dict]
    nodes: list[dict]


def workload_for(k: kube.Kube, job: dict) -> dict | None:
    ns, uid = job["metadata"]["namespace"], job["metadata"]["uid"]
    wls, _ = k.list(kube.WORKLOAD, ns, label_selector=f"{JOB_UID_LABEL}={uid}")
    wls.sort(key=lambda w: w["metadata"].get("creationTimestamp", ""))
    return wls[-1] if wls else None


def snapshot(k: kube.Kube, namespace: str, name: str, job_uid: str | None = None) -> Snapshot:
    """The Job, its Workload, the Workload's ProvisioningRequests, the Job's pods and all nodes.
    With job_uid, a Job recreated under the same name is not mistaken for the original."""
    job = k.get_or_none(kube.JOB, name, namespace)
    if job is not None and job_uid and job["metadata"]["uid"] != job_uid:
        job = None
    wl = workload_for(k, job) if job else None
    provreqs: list[dict] = []
    if wl is not None:
        prefix = f"{wl['metadata']['name']}-{CHECK_NAME}-"
        items, _ = k.list(kube.PROVREQ, namespace)
        provreqs = [p for p in items if p["metadata"]["name"].startswith(prefix)]
    uid = job_uid or (job or {}).get("metadata", {}).get("uid")
    pods: list[dict] = []
    if uid:
        pods, _ = k.list(kube.POD, namespace, label_selector=f"batch.kubernetes.io/controller-uid={uid}")
    nodes, _ = k.list(kube.NODE)
    return Snapshot(job, wl, provreqs, pods, nodes)
