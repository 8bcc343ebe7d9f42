"""One Job's objects at one moment, the one type every view and check of a Job is given whole: its Job, its
Workload, the Workload's ProvisioningRequests, the Job's pods and every node; and assemble(), the choice of those
objects from lists of a cluster's objects (pure).  The live reads (observe.snapshot), the recorder's caches and
MultiKueue's per-cluster samples all assemble one."""

from __future__ import annotations

from dataclasses import dataclass, field

from k8s import provreq as provreqs_
from k8s import workload as workloads
from k8s.keys import JOB_CONTROLLER_UID_LABEL
from k8s.objects import Obj, labels, meta
from k8s.objects import uid as uid_of


@dataclass(frozen=True)
class Snapshot:
    job: Obj | None = None
    workload: Obj | None = None
    provreqs: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    nodes: list[Obj] = field(default_factory=list)


def assemble(name: str, job_uid: str | None, jobs: list[Obj], workloads_: list[Obj], provreqs: list[Obj],
             pods: list[Obj], nodes: list[Obj]) -> Snapshot:
    """One Job's Snapshot from lists of objects: the Job named `name` (with job_uid, only that one: a Job
    recreated under the same name is not the original), its Workload, the Workload's ProvisioningRequests (by
    name, or owned by it: another check's, or a name Kueue cut and hashed), the Job's pods, and every node."""
    job = next((j for j in jobs if meta(j).get("name") == name and (not job_uid or uid_of(j) == job_uid)), None)
    wl = workloads.of_job(workloads_, uid_of(job))            # no Job: no uid, so no Workload either
    mine = provreqs_.of_workload(wl, provreqs) if wl is not None else []
    u = job_uid or uid_of(job)
    own_pods = [p for p in pods if u and labels(p).get(JOB_CONTROLLER_UID_LABEL) == u]
    return Snapshot(job, wl, mine, own_pods, list(nodes))
