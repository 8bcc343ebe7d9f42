"""Read everything the phase view, the event log and preflight need (I/O; the choice of one Job's objects is
snapshot.assemble, which the recorder's caches use too; what an answer means is observed.py's, pure)."""

from __future__ import annotations

from k8s import heartbeat
from k8s import workload as workloads
from k8s.client import Kube
from k8s.errors import ApiError
from k8s.keys import FAKE_CA_LEASE, JOB_CONTROLLER_UID_LABEL, POOL_TABLE, REAL_CA_LEASE, TAUCLUSTER_LEASE
from k8s.objects import uid as uid_of
from k8s.resources import (ADMISSION_CHECK, CLUSTER_QUEUE, CONFIG_MAP, JOB, LOCAL_QUEUE, NAMESPACE, NODE, POD,
                             PROVREQ, PROVREQ_CONFIG, RESOURCE_FLAVOR, TAUCLUSTER, WORKLOAD)
from . import observed
from .preflight import PreflightInputs
from .snapshot import Snapshot, assemble


def workload_for(k: Kube, job: dict) -> dict | None:
    """The Job's current Workload, read now (workload.of_job over the Workloads labelled with its uid)."""
    uid = job["metadata"]["uid"]
    wls, _ = k.list(WORKLOAD, job["metadata"]["namespace"], label_selector=workloads.job_selector(uid))
    return workloads.of_job(wls, uid)


def snapshot(k: Kube, namespace: str, name: str, job_uid: str | None = None) -> Snapshot:
    """assemble() over objects read now."""
    job = k.get_or_none(JOB, name, namespace)
    if not observed.is_the_job(job, job_uid):
        return assemble(name, job_uid, [], [], [], [], k.list(NODE)[0])
    u = uid_of(job)
    wls, _ = k.list(WORKLOAD, namespace, label_selector=workloads.job_selector(u))
    pods, _ = k.list(POD, namespace, label_selector=f"{JOB_CONTROLLER_UID_LABEL}={u}")
    return assemble(name, job_uid, [job], wls, k.list(PROVREQ, namespace)[0], pods, k.list(NODE)[0])


def namespace_exists(k: Kube, namespace: str) -> bool | None:
    """None when it cannot be told (e.g. the user may not read namespaces)."""
    return observed.yes_no(lambda: k.get_or_none(NAMESPACE, namespace) is not None)


def job_exists(k: Kube, namespace: str, name: str) -> bool:
    return k.get_or_none(JOB, name, namespace) is not None


def lease_alive(k: Kube, lease: str) -> bool | None:
    """Is a controller's heartbeat Lease fresh?  None when it cannot be read (forbidden)."""
    return observed.yes_no(lambda: heartbeat.alive(k, lease))


def autoscalers_alive(k: Kube) -> dict[str, bool | None]:
    """Is the fake's / the real autoscaler's heartbeat Lease fresh?  None when it cannot be read (forbidden)."""
    return {lease: lease_alive(k, lease) for lease in (FAKE_CA_LEASE, REAL_CA_LEASE)}


def tauclusters(k: Kube) -> tuple[list[dict], str]:
    """Every TauCluster, and "" ; or [] and why they cannot be read (the CRD is not installed, or forbidden)."""
    try:
        return k.list(TAUCLUSTER)[0], ""
    except ApiError as e:
        return [], observed.tauclusters_unread(e)


def preflight_inputs(k: Kube, profile: str, namespace: str) -> PreflightInputs:
    if namespace_exists(k, namespace) is False:
        return observed.no_namespace()
    lq = k.get_or_none(LOCAL_QUEUE, profile, namespace)
    cq_name = observed.cluster_queue_of(lq)
    cq = k.get_or_none(CLUSTER_QUEUE, cq_name) if cq_name else None
    acs = observed.keyed_by_name(k.list(ADMISSION_CHECK)[0])
    prcs = observed.keyed_by_name(k.list(PROVREQ_CONFIG)[0])
    cm = k.get_or_none(CONFIG_MAP, POOL_TABLE[1], POOL_TABLE[0])
    flavor_name = observed.gpu_flavor_of(cq)
    flavor = k.get_or_none(RESOURCE_FLAVOR, flavor_name) if flavor_name else None
    tcs, unread = tauclusters(k)
    return PreflightInputs(lq, cq, acs, prcs, cm, autoscalers_alive(k), flavor=flavor, tauclusters=tcs,
                           tauclusters_unread=unread, setup_alive=lease_alive(k, TAUCLUSTER_LEASE) if tcs else False)
