"""The fleet's event log: every change a watch delivered of the fleet's Jobs, Workloads, ProvisioningRequests, Pods
and Nodes, as one small record each (pure).  The metrics (measure.py) and the invariants (checks.py) are read from
these records alone, so a run's log (a JSON line per record) can be measured again without a cluster.

A record: {"t": seconds since the run's start (when the watch delivered it), "kind", "type" (ADDED, MODIFIED,
DELETED), "name", "rv" (resourceVersion, etcd's order), "owner" (the Job of a Workload or Pod, the Workload of a
request, the pool of a node), then the few fields of its kind that a measure or a check reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from k8s import job as jobs
from k8s import node as nodes_
from k8s import workload as workloads
from k8s.keys import (DECISION_ANNOTATION, DECISION_BOUND_ANNOTATION, DECISION_TIME_ANNOTATION, JOB_NAME_LABEL,
                      PROVREQ_CONDITIONS, PROVREQ_UID_ANNOTATION)
from k8s.objects import Obj, condition, labels, meta, revision, status

JOB, WORKLOAD, PROVREQ, POD, NODE = "Job", "Workload", "ProvisioningRequest", "Pod", "Node"
KINDS = (JOB, WORKLOAD, PROVREQ, POD, NODE)


def _owner(obj: Obj, kind: str) -> str:
    for ref in meta(obj).get("ownerReferences") or []:
        if ref.get("kind") == kind:
            return str(ref.get("name") or "")
    return ""


def record(t: float, kind: str, typ: str, obj: Obj) -> dict:
    """One change as a record (pure)."""
    out = {"t": round(t, 3), "kind": kind, "type": typ, "name": meta(obj).get("name") or "", "rv": revision(obj),
           "uid": meta(obj).get("uid") or "", "deleting": bool(meta(obj).get("deletionTimestamp"))}
    if kind == JOB:
        out.update(outcome=jobs.outcome(obj), mirrored=jobs.mirrored(obj), suspended=jobs.suspended(obj))
    elif kind == WORKLOAD:
        ann = meta(obj).get("annotations") or {}
        out.update(owner=_owner(obj, "Job"), reserved=workloads.quota_reserved(obj),
                   admitted=workloads.admitted(obj), active=workloads.active(obj),
                   finished=workloads.finished(obj), timed_out=workloads.committed_timeout(obj),
                   decision=ann.get(DECISION_ANNOTATION, ""), decided_at=ann.get(DECISION_TIME_ANNOTATION, ""),
                   bound=ann.get(DECISION_BOUND_ANNOTATION, ""))
    elif kind == PROVREQ:
        conds = {}
        for c in PROVREQ_CONDITIONS:
            got = condition(obj, c)
            if got:
                conds[c] = [got.get("status"), got.get("reason") or ""]
        out.update(owner=_owner(obj, "Workload"), conditions=conds)
    elif kind == POD:
        out.update(owner=labels(obj).get(JOB_NAME_LABEL, ""), phase=status(obj).get("phase") or "",
                   node=(obj.get("spec") or {}).get("nodeName") or "")
    elif kind == NODE:
        out.update(owner=nodes_.pool_of(obj) or "", ready=nodes_.ready(obj),
                   created=meta(obj).get("creationTimestamp") or "",
                   provreq=(meta(obj).get("annotations") or {}).get(PROVREQ_UID_ANNOTATION, ""))
    return out


def provreq_state(rec: dict | None) -> str:
    """Where a request stood, from its record: 'none' (no request), 'waiting' (no autoscaler took it up), 'accepted'
    (taken up, no answer yet), 'provisioned', 'refused' (Provisioned=False with a reason: the autoscaler answered
    no), 'failed'."""
    if rec is None:
        return "none"
    conds = rec.get("conditions") or {}
    if (conds.get("Failed") or [None])[0] == "True":
        return "failed"
    if (conds.get("Provisioned") or [None])[0] == "True":
        return "provisioned"
    if (conds.get("Provisioned") or [None])[0] == "False":
        return "refused"
    if (conds.get("Accepted") or [None])[0] == "True":
        return "accepted"
    return "waiting"


@dataclass
class Gang:
    """What happened to one gang, folded from the records (seconds since the run's start)."""
    name: str
    pods: int = 0                                  # how many pods it has (the plan says)
    submitted: float | None = None                 # its Job first seen
    reserved: float | None = None                  # its Workload first seen QuotaReserved
    requested: float | None = None                 # its first ProvisioningRequest first seen
    provisioned: float | None = None               # a request of it first seen Provisioned=True
    admitted: float | None = None                  # its Workload first seen Admitted
    running: float | None = None                   # all its pods first seen Running
    succeeded: float | None = None                 # its Job first seen Complete
    timed_out: float | None = None                 # its Workload first seen carrying the committed timeout
    cause: str = ""                                # the request's state when it timed out (provreq_state)
    bound: str = ""                                # which bound of the deadline's rule fired (the decision says)
    workload: str = ""
    requests: set = field(default_factory=set)     # the uids of its requests (Kueue may make one again by name)
    pod_running: dict = field(default_factory=dict)   # pod name -> first seen Running


def fold(records: list[dict], pods_of: dict[str, int]) -> dict[str, Gang]:
    """Every gang's history from the records in order of arrival (pure).  `pods_of`: each gang's pod count."""
    gangs = {name: Gang(name, pods) for name, pods in pods_of.items()}
    wl_gang: dict[str, str] = {}
    last_req: dict[str, dict] = {}                 # workload -> its latest request record
    for r in records:
        kind, t = r["kind"], r["t"]
        if kind == JOB and r["name"] in gangs:
            g = gangs[r["name"]]
            g.submitted = _first(g.submitted, t, True)
            g.succeeded = _first(g.succeeded, t, r.get("outcome") == "succeeded")
        elif kind == WORKLOAD and r.get("owner") in gangs:
            g = gangs[r["owner"]]
            wl_gang[r["name"]], g.workload = g.name, r["name"]
            g.reserved = _first(g.reserved, t, r.get("reserved"))
            g.admitted = _first(g.admitted, t, r.get("admitted"))
            if r.get("timed_out") and g.timed_out is None:
                g.timed_out, g.cause = t, provreq_state(last_req.get(r["name"]))
            if r.get("timed_out") and r.get("bound"):
                g.bound = r["bound"]
        elif kind == PROVREQ and r.get("owner") in wl_gang:
            g = gangs[wl_gang[r["owner"]]]
            g.requests.add(r.get("uid") or r["name"])
            if r["type"] != "DELETED":
                last_req[r["owner"]] = r
            g.requested = _first(g.requested, t, True)
            g.provisioned = _first(g.provisioned, t, provreq_state(r) == "provisioned")
        elif kind == POD and r.get("owner") in gangs:
            g = gangs[r["owner"]]
            if r.get("phase") == "Running" and r["type"] != "DELETED":
                g.pod_running.setdefault(r["name"], t)
                if g.running is None and len(g.pod_running) >= g.pods:
                    g.running = t
    return gangs


def _first(was: float | None, t: float, now: object) -> float | None:
    return was if was is not None or not now else t
