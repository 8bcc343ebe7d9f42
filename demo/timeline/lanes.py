"""The state of every lane of the timeline at one poll, from plain objects (pure).

snapshot_states(): the summary lanes the SVG draws (Job, Workload, AdmissionCheck, ProvisioningRequest,
Nodes, Pods).  object_lanes(): one lane per ProvisioningRequest attempt, Node and Pod, for the live page.
phase_rows(), deadline_at(), decision(): the rest of what the recorder writes.  lane_for(): which lane
a controller's log line concerns, by the object names it carries.  told() and run_phases(): how the readers
of the event log (the SVG, the live page) tell its lanes and its phases over a run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Collection, Mapping

from k8s import job as jobs
from k8s import node as nodes_
from k8s import provreq as provreqs_
from k8s import workload as workloads
from k8s.keys import (ACCEPTED, BOOTS_AT_ANNOTATION, CHECK_NAME, DECISION_ANNOTATION,
                      EVICTED, FAILED, POD_SCHEDULED, POD_UNSCHEDULABLE, POOL_LABEL, PROVISIONED, PROVREQ_UID_ANNOTATION,
                      TERMINAL_REASON_ANNOTATION)
from k8s.objects import Obj, annotations, condition, created_at, deleting, labels, spec
from k8s.objects import name as name_of
from k8s.objects import uid as uid_of

from ..deadline.protocol import BadDeadline, deadline_of
from ..jobs import phases
from ..jobs.phases import pod_phase
from ..jobs.snapshot import Snapshot

LANES = ("Job", "Workload", "AdmissionCheck", "ProvisioningRequest", "Nodes", "Pods")


def _job_state(job: Obj | None) -> str:
    if job is None:
        return "deleted"
    finished = jobs.outcome(job)
    if finished:
        state = finished
    elif jobs.suspended(job):
        state = "suspended"
    else:
        state = "running"
    reason = annotations(job).get(TERMINAL_REASON_ANNOTATION)
    if reason:
        state += f" · marked {reason}"
    return state


def _workload_state(wl: Obj | None, job: Obj | None) -> str:
    if wl is None:
        # A live, unfinished Job without a Workload is waiting for Kueue to create one;
        # otherwise the Workload went away (garbage-collected with its Job).
        return "none" if job is not None and not jobs.outcome(job) else "deleted"
    if workloads.finished(wl):
        return "finished"
    ev = condition(wl, EVICTED)
    if ev is not None and ev.get("status") == "True":
        return f"evicted: {ev.get('reason') or 'unknown'}"
    if not workloads.active(wl):
        return "inactive"
    if workloads.admitted(wl):
        return "admitted"
    if workloads.quota_reserved(wl):
        return "quota reserved"
    return "pending"


def _provreq_label(pr: Obj, check_name: str) -> str:
    attempt = provreqs_.attempt(pr, check_name)
    return f"#{attempt}" if attempt is not None else pr.get("metadata", {}).get("name", "?")


def _provreq_conditions(pr: Obj) -> str:
    """"Provisioned", "Accepted · CapacityIsNotFound", "Failed", "created": one request's conditions."""
    trues = provreqs_.true_conditions(pr)
    if len(trues) > 1 and ACCEPTED in trues:
        trues.remove(ACCEPTED)   # "Provisioned" says more than "Accepted Provisioned"
    text = "+".join(trues) if trues else "created"
    prov = condition(pr, PROVISIONED)
    if prov is not None and prov.get("status") == "False" and FAILED not in trues:
        text += f" · {prov.get('reason') or 'not provisioned'}"     # e.g. CapacityIsNotFound
    return text


def _provreq_state(workload: Obj | None, provreqs: list[Obj], check_name: str) -> str:
    mine = provreqs_.of_workload(workload, provreqs, check_name)
    if not mine:
        return "none"
    pr = mine[-1]
    return f"{_provreq_label(pr, check_name)} {_provreq_conditions(pr)}"


def _nodes_state(nodes: list[Obj]) -> str:
    live = sum(1 for n in nodes if not deleting(n))
    gone = len(nodes) - live
    return f"{live} ({gone} deleting)" if gone else str(live)


_POD_ORDER = ("terminating", "pending", "running", "succeeded", "failed", "unknown")


def _pods_state(pods: list[Obj]) -> str:
    counts: dict[str, int] = {}
    for p in pods:
        key = "terminating" if deleting(p) else pod_phase(p).lower()
        counts[key] = counts.get(key, 0) + 1
    if not counts:
        return "0"
    order = {k: i for i, k in enumerate(_POD_ORDER)}
    last = len(_POD_ORDER)        # phases this list does not know go after the known ones, by name
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: (order.get(kv[0], last), kv[0])))


def snapshot_states(snap: Snapshot, check_name: str = CHECK_NAME) -> dict[str, str]:
    """The current state string of every lane, keyed in LANES order."""
    check = workloads.admission_check(snap.workload, check_name)
    return {
        "Job": _job_state(snap.job),
        "Workload": _workload_state(snap.workload, snap.job),
        "AdmissionCheck": (check or {}).get("state") or "-",
        "ProvisioningRequest": _provreq_state(snap.workload, snap.provreqs or [], check_name),
        "Nodes": _nodes_state(snap.nodes or []),
        "Pods": _pods_state(snap.pods or []),
    }


# ---------------------------------------------------------------------------- MultiKueue: lanes per cluster

MANAGER_LANES = ("Job", "Workload", "AdmissionCheck")       # a manager runs no pods and makes no nodes
WORKER_LANES = ("Workload", "AdmissionCheck", "ProvisioningRequest", "Job", "Pods", "Nodes")
SHORT = {"AdmissionCheck": "check", "ProvisioningRequest": "ProvReq"}     # lane names fit the picture's margin
NOT_YET = "none"        # a Job or Workload not (yet) in this cluster: not dispatched there


def dispatch_state(workload: Obj | None, check_name: str) -> str:
    """A MultiKueue manager's check lane: the check's state, and the workers the Workload is dispatched to, or the
    one that admitted it."""
    state = workloads.check_state(workload, check_name) or "-"
    where = workloads.cluster_name(workload)
    if where:
        return f"{state} · on {where}"
    nominated = workloads.nominated_clusters(workload)
    return f"{state} · to {', '.join(nominated)}" if nominated else state


def cluster_lanes(cluster: str, lanes: tuple[str, ...], states: Mapping[str, str], seen: Collection[str]) -> dict[str, str]:
    """The lanes of one cluster of a MultiKueue trio, named "<cluster> <lane>" (shortened by SHORT), from
    snapshot_states() of that cluster's objects of the Job.  A Job or Workload lane whose object was never seen in
    the cluster (`seen`: the lanes whose object was) reads NOT_YET, not "deleted": it was not dispatched there."""
    return {f"{cluster} {SHORT.get(lane, lane)}":
            NOT_YET if lane in ("Job", "Workload") and lane not in seen else states[lane] for lane in lanes}


# ---------------------------------------------------------------------------- one lane per object

GONE = "gone"          # an object lane whose object no longer exists: the lane ends there


@dataclass(frozen=True)
class ObjectLane:
    of: str        # the summary lane it details: ProvisioningRequest, Nodes or Pods
    name: str      # the object's name
    state: str
    detail: str


def _provreq_lane(pr: Obj, check_name: str) -> tuple[str, ObjectLane]:
    name = name_of(pr) or "?"
    state = "deleting" if deleting(pr) else _provreq_conditions(pr)
    return f"ProvisioningRequest {_provreq_label(pr, check_name)}", ObjectLane("ProvisioningRequest", name, state, name)


def _node_lane(node: Obj, attempts: Mapping[str, str]) -> tuple[str, ObjectLane]:
    name = name_of(node) or "?"
    if deleting(node):
        state = "deleting"
    elif nodes_.ready(node):
        state = "Ready"
    else:
        state = "booting"
    parts = [f"pool {labels(node)[POOL_LABEL]}"] if nodes_.pool_of(node) else []
    made_for = attempts.get(annotations(node).get(PROVREQ_UID_ANNOTATION))
    if made_for:
        parts.append(f"made for ProvisioningRequest {made_for}")
    boots_at = annotations(node).get(BOOTS_AT_ANNOTATION)
    if state == "booting" and boots_at:
        parts.append(f"VM up at {boots_at}")
    return f"Node {name}", ObjectLane("Nodes", name, state, ", ".join(parts))


def _pod_lane(pod: Obj) -> tuple[str, ObjectLane]:
    name = name_of(pod) or "?"
    node = spec(pod).get("nodeName")
    phase = pod_phase(pod)
    if deleting(pod):
        state = "terminating"
    elif phase == "Pending":
        state = "scheduled" if node else "pending"
    else:
        state = phase.lower()
    detail = f"on {node}" if node else ""
    unscheduled = condition(pod, POD_SCHEDULED)
    if not node and unscheduled is not None and unscheduled.get("status") == "False":
        message = unscheduled.get("message")
        detail = (unscheduled.get("reason") or POD_UNSCHEDULABLE) + (f": {message}" if message else "")
    return f"Pod {name}", ObjectLane("Pods", name, state, detail)


def _relevant_node(node: Obj, uids: set[str], bound: set[str], since, seen: Mapping[str, ObjectLane]) -> bool:
    """A node of this Job's: made for one of its requests (the fake autoscaler says which), one its pods
    run on, one already shown, or an autoscaler pool's node made since the Job (the real autoscaler's
    nodes do not say which request they are for)."""
    name = name_of(node)
    made_for = annotations(node).get(PROVREQ_UID_ANNOTATION)
    if f"Node {name}" in seen or name in bound or (made_for is not None and made_for in uids):
        return True
    made = created_at(node)
    return made_for is None and POOL_LABEL in labels(node) and since is not None and made is not None \
        and made >= since


def object_lanes(snap: Snapshot, seen: Mapping[str, ObjectLane] | None = None,
                 check_name: str = CHECK_NAME) -> dict[str, ObjectLane]:
    """One lane per object of this Job: each ProvisioningRequest attempt, each Node made for it, each
    Pod, keyed by lane name ("ProvisioningRequest #1", "Node <name>", "Pod <name>").  `seen` is the
    previous result: a lane whose object is gone now is GONE (and nodes once shown stay followed)."""
    seen = seen or {}
    out: dict[str, ObjectLane] = {}
    pods = snap.pods or []
    mine = provreqs_.of_workload(snap.workload, snap.provreqs or [], check_name) if snap.workload is not None else []
    for pr in mine:
        lane, obj = _provreq_lane(pr, check_name)
        out[lane] = obj
    attempts = {uid_of(pr): _provreq_label(pr, check_name) for pr in mine if uid_of(pr)}
    bound = {spec(p).get("nodeName") for p in pods if spec(p).get("nodeName")}
    since = created_at(snap.job)
    for node in snap.nodes or []:
        if _relevant_node(node, set(attempts), bound, since, seen):
            lane, obj = _node_lane(node, attempts)
            out[lane] = obj
    for pod in pods:
        lane, obj = _pod_lane(pod)
        out[lane] = obj
    for lane, obj in seen.items():
        if lane not in out:
            out[lane] = ObjectLane(obj.of, obj.name, GONE, "")
    return out


def phase_rows(snap: Snapshot, check_name: str = CHECK_NAME) -> tuple[list[list[str]], str]:
    """The five phases of `tau-demo watch` as [name, state, detail] rows, and the outcome.  Without a
    clock: a detail does not count seconds, so the rows change only when the phases do."""
    view = phases.derive(snap, check_name)
    return [[p.name, p.state, p.detail] for p in view.phases], view.outcome


def deadline_at(job: Obj | None) -> float | None:
    """When the Job's admission deadline passes (epoch seconds); None without one or with a malformed one
    (the deadline controller reports that)."""
    if job is None:
        return None
    try:
        at = deadline_of(job)
    except BadDeadline:
        return None
    return at.timestamp() if at is not None else None


def decision(workload: Obj | None) -> tuple[str, float | None] | None:
    """The decision committed on the Workload ("timed-out") and when (its annotation's time), or None."""
    if not workloads.committed_timeout(workload):
        return None
    at = workloads.decided_at(workload)
    return annotations(workload)[DECISION_ANNOTATION], (at.timestamp() if at is not None else None)


def lane_for(text: str, names: Mapping[str, str]) -> str | None:
    """The lane of the longest object name (`names`: object name -> lane) that `text` carries as a whole
    name (not inside a longer name of letters and digits), or None.  A Workload's, a request's and a
    pod's names contain the Job's, so the longest wins."""
    best: tuple[int, str] | None = None
    for name, lane in names.items():
        if name and (best is None or len(name) > best[0]) and re.search(
                rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", text):
            best = (len(name), lane)
    return best[1] if best else None


# ---------------------------------------------------------------------------- how the readers tell a log

UNSUSPENDED = "unsuspended · pods pending"     # the Job lane while Kueue has unsuspended it but no pod has started
AS_EXPECTED = " (as expected)"                 # after BookingExpired once the Job was unsuspended: not a failure
AFTER_COMPLETING = "deleted after completing"  # the Job or its Workload deleted after the Job succeeded
_STARTED = ("running", "succeeded", "failed")  # pod phases of a pod that has started


def pod_counts(state: str) -> dict[str, int]:
    """A Pods lane state ("1 pending, 1 running", "0") as pods per phase."""
    out: dict[str, int] = {}
    for part in state.split(", "):
        m = re.fullmatch(r"(\d+) (\S+)", part)
        if m:
            out[m[2]] = int(m[1])
    return out


def job_told(state: str, pods: str | None) -> str:
    """The Job lane's state as the readers tell it, with the Pods lane's state at that moment (None: unknown).
    The recorder writes "running" once the Job is unsuspended; it runs only once its pods have started: until
    then it is UNSUSPENDED, and "unsuspended · 1/2 pods started" while some still wait."""
    if pods is None or not state.startswith("running"):
        return state
    rest = state[len("running"):]                # " · marked AdmissionTimeout", say
    counts = pod_counts(pods)
    if counts and "pending" not in counts:
        return state
    started = sum(counts.get(p, 0) for p in _STARTED)
    if not started:
        return UNSUSPENDED + rest
    return f"unsuspended · {started}/{started + counts['pending']} pods started{rest}"


def _kind(ev: Obj) -> tuple[str, str]:
    """(the cluster's prefix of a MultiKueue lane or "", the kind of lane): "worker-a Job" -> ("worker-a", "Job");
    an object lane is of the summary lane it details."""
    if "of" in ev:
        return "", str(ev["of"])
    prefix, _, kind = str(ev["lane"]).rpartition(" ")
    return prefix, kind


def _told(ev: Obj, state: str, why: str) -> Obj:
    detail = str(ev.get("detail") or "")
    return {**ev, "state": state, "detail": f"{detail}: {why}" if detail else why}


def _job_event(ev: Obj, pods: str | None) -> Obj:
    """A Job lane event as told with the Pods lane's state (job_told)."""
    state = str(ev["state"])
    now = job_told(state, pods)
    return ev if now == state else _told(ev, now, "Kueue unsuspended the Job; its pods have not all started")


def told(events: list[Obj]) -> list[Obj]:
    """The log's events (in write order) with their lane states as the readers (the SVG, the live page) tell
    them, from what the log says up to each event:

    - the Job lane ("running" from the moment Kueue unsuspends the Job) is UNSUSPENDED until the Pods lane
      of the same cluster shows a pod started, and running once none is pending (job_told): a Pods lane
      change that changes it adds a Job lane event at its time;
    - a ProvisioningRequest's BookingExpired once the Job was unsuspended is AS_EXPECTED: the booking ends
      when the pods take the capacity (the fake: CapacityBookingConsumed) and Kueue ignores it after admission;
    - the Job or the Workload deleted after the Job succeeded is AFTER_COMPLETING, not a failure.
    Other events are as written."""
    out: list[Obj] = []
    job: dict[str, Obj] = {}            # per cluster prefix: the Job lane's last event
    shown: dict[str, str] = {}          # the Job lane's state as last told
    pods: dict[str, str] = {}
    unsuspended: set[str] = set()
    succeeded: set[str] = set()
    for ev in events:
        if "lane" not in ev:
            out.append(ev)
            continue
        prefix, kind = _kind(ev)
        state = str(ev["state"])
        if kind == "Job":
            if state == "deleted" and prefix in succeeded:
                ev = _told(ev, AFTER_COMPLETING, "the Job was deleted after it succeeded")
            if state.startswith(("running", "succeeded")):
                unsuspended.add(prefix)
            if state.startswith("succeeded"):
                succeeded.add(prefix)
            job[prefix] = ev
            ev = _job_event(ev, pods.get(prefix))
            shown[prefix] = ev["state"]
        elif kind == "Pods" and "of" not in ev:          # the summary lane (a Pod's own lane is of "Pods")
            pods[prefix] = state
            if prefix in job and job_told(str(job[prefix]["state"]), state) != shown[prefix]:
                out.append(ev)
                ev = _job_event({**job[prefix], "t": ev["t"]}, state)
                shown[prefix] = ev["state"]
        elif kind in ("ProvisioningRequest", SHORT["ProvisioningRequest"]) and "BookingExpired" in state \
                and prefix in unsuspended:
            ev = _told(ev, state.replace("BookingExpired", "BookingExpired" + AS_EXPECTED),
                       "the booking ended after the Job was unsuspended: its pods hold the capacity now "
                       "(Kueue ignores BookingExpired once the Workload is admitted)")
        elif kind == "Workload" and state == "deleted" and prefix in succeeded:
            ev = _told(ev, AFTER_COMPLETING, "the Workload was deleted after the Job succeeded")
        out.append(ev)
    return out


def run_phases(events: list[Obj]) -> tuple[list[list[str]], str]:
    """The five phases over the run a log holds (phases.over_run of its phases events, and the last outcome),
    with what is gone at its end said so: the Workload, or the pods, deleted after the Job completed.
    ([], "") without phases."""
    written = [e for e in events if "phases" in e]
    if not written:
        return [], ""
    rows, outcome = phases.over_run([e["phases"] for e in written], str(written[-1].get("outcome") or ""))
    last: dict[str, str] = {}
    for ev in told(events):
        if "lane" in ev:
            last[ev["lane"]] = str(ev["state"])
    gone = {"Quota reserved": last.get("Workload") == AFTER_COMPLETING and phases.WORKLOAD_DELETED,
            "Pod scheduling": outcome == "succeeded" and last.get("Pods") == "0" and phases.PODS_DELETED}
    for row in rows:
        note = gone.get(row[0])
        if note and row[1] == "done" and note not in row[2]:
            row[2] = f"{row[2]}; {note}" if row[2] else note
    return rows, outcome
