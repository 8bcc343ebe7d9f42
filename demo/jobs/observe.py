"""Read everything the phase view, the event log and preflight need (I/O only, no decisions)."""

from __future__ import annotations

from dataclasses import dataclass

from ..k8s import heartbeat
from ..k8s.client import Kube
from ..k8s.errors import ApiError, NotFound
from ..k8s.keys import CHECK_NAME, FAKE_CA_LEASE, JOB_CONTROLLER_UID_LABEL, JOB_UID_LABEL, POOL_TABLE, REAL_CA_LEASE
from ..k8s.objects import owned_by
from ..k8s.resources import (ADMISSION_CHECK, CLUSTER_QUEUE, CONFIG_MAP, JOB, LOCAL_QUEUE, NAMESPACE, NODE, POD,
                             PROVREQ, PROVREQ_CONFIG, RESOURCE_FLAVOR, WORKLOAD)
from .preflight import PreflightInputs, gpu_flavors


@dataclass
class Snapshot:
    job: dict | None
    workload: dict | None
    provreqs: list[dict]
    pods: list[dict]
    nodes: list[dict]


def workload_for(k: Kube, job: dict) -> dict | None:
    ns, uid = job["metadata"]["namespace"], job["metadata"]["uid"]
    wls, _ = k.list(WORKLOAD, ns, label_selector=f"{JOB_UID_LABEL}={uid}")
    wls.sort(key=lambda w: w["metadata"].get("creationTimestamp", ""))
    return wls[-1] if wls else None


def snapshot(k: Kube, namespace: str, name: str, job_uid: str | None = None) -> Snapshot:
    """The Job, its Workload, the Workload's ProvisioningRequests, the Job's pods and all nodes.
    With job_uid, a Job recreated under the same name is not mistaken for the original."""
    job = k.get_or_none(JOB, name, namespace)
    if job is not None and job_uid and job["metadata"]["uid"] != job_uid:
        job = None
    wl = workload_for(k, job) if job else None
    provreqs: list[dict] = []
    if wl is not None:   # by name, or owned by the Workload (another check's, or a name Kueue cut and hashed)
        prefix = f"{wl['metadata']['name']}-{CHECK_NAME}-"
        items, _ = k.list(PROVREQ, namespace)
        provreqs = [p for p in items if p["metadata"]["name"].startswith(prefix)
                    or owned_by(p, wl["metadata"]["uid"])]
    uid = job_uid or (job or {}).get("metadata", {}).get("uid")
    pods: list[dict] = []
    if uid:
        pods, _ = k.list(POD, namespace, label_selector=f"{JOB_CONTROLLER_UID_LABEL}={uid}")
    nodes, _ = k.list(NODE)
    return Snapshot(job, wl, provreqs, pods, nodes)


def namespace_exists(k: Kube, namespace: str) -> bool | None:
    """None when it cannot be told (e.g. the user may not read namespaces)."""
    try:
        return k.get_or_none(NAMESPACE, namespace) is not None
    except NotFound:
        return False
    except ApiError:
        return None


def job_exists(k: Kube, namespace: str, name: str) -> bool:
    return k.get_or_none(JOB, name, namespace) is not None


def autoscalers_alive(k: Kube) -> dict[str, bool | None]:
    """Is the fake's / the real autoscaler's heartbeat Lease fresh?  None when it cannot be read (forbidden)."""
    out: dict[str, bool | None] = {}
    for lease in (FAKE_CA_LEASE, REAL_CA_LEASE):
        try:
            out[lease] = heartbeat.alive(k, lease)
        except NotFound:
            out[lease] = False
        except ApiError:
            out[lease] = None
    return out


def preflight_inputs(k: Kube, profile: str, namespace: str) -> PreflightInputs:
    if namespace_exists(k, namespace) is False:
        return PreflightInputs(None, None, {}, {}, None, {}, namespace_exists=False)
    lq = k.get_or_none(LOCAL_QUEUE, profile, namespace)
    cq_name = ((lq or {}).get("spec") or {}).get("clusterQueue") or ""
    cq = k.get_or_none(CLUSTER_QUEUE, cq_name) if lq and cq_name else None
    acs = {a["metadata"]["name"]: a for a in k.list(ADMISSION_CHECK)[0]}
    prcs = {p["metadata"]["name"]: p for p in k.list(PROVREQ_CONFIG)[0]}
    cm = k.get_or_none(CONFIG_MAP, POOL_TABLE[1], POOL_TABLE[0])
    flavors = gpu_flavors(cq)
    flavor = k.get_or_none(RESOURCE_FLAVOR, flavors[0]) if flavors else None
    return PreflightInputs(lq, cq, acs, prcs, cm, autoscalers_alive(k), flavor=flavor)
