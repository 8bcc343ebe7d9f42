"""The state of every lane of the timeline at one poll, from plain objects (pure)."""

from __future__ import annotations

from ..jobs.phases import check_state, job_finished, pod_phase, provreq_attempt, true_provreq_conditions, workload_provreqs
from ..k8s.keys import (ACCEPTED, ADMITTED, CHECK_NAME, EVICTED, FAILED, FINISHED, PROVISIONED, QUOTA_RESERVED,
                        TERMINAL_REASON_ANNOTATION)
from ..k8s.objects import Obj, annotations, condition, deleting, is_true

LANES = ("Job", "Workload", "AdmissionCheck", "ProvisioningRequest", "Nodes", "Pods")


def _job_state(job: Obj | None) -> str:
    if job is None:
        return "deleted"
    finished = job_finished(job)
    if finished:
        state = finished
    elif (job.get("spec") or {}).get("suspend") is True:
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
        return "none" if job is not None and not job_finished(job) else "deleted"
    if is_true(wl, FINISHED):
        return "finished"
    ev = condition(wl, EVICTED)
    if ev is not None and ev.get("status") == "True":
        return f"evicted: {ev.get('reason') or 'unknown'}"
    if (wl.get("spec") or {}).get("active") is False:
        return "inactive"
    if is_true(wl, ADMITTED):
        return "admitted"
    if is_true(wl, QUOTA_RESERVED):
        return "quota reserved"
    return "pending"


def _provreq_state(workload: Obj | None, provreqs: list[Obj], check_name: str) -> str:
    mine = workload_provreqs(workload, provreqs, check_name)
    if not mine:
        return "none"
    pr = mine[-1]
    attempt = provreq_attempt(pr, check_name)
    trues = true_provreq_conditions(pr)
    if len(trues) > 1 and ACCEPTED in trues:
        trues.remove(ACCEPTED)   # "Provisioned" says more than "Accepted Provisioned"
    label = f"#{attempt}" if attempt is not None else pr.get("metadata", {}).get("name", "?")
    text = f"{label} {'+'.join(trues) if trues else 'created'}"
    prov = condition(pr, PROVISIONED)
    if prov is not None and prov.get("status") == "False" and FAILED not in trues:
        text += f" · {prov.get('reason') or 'not provisioned'}"     # e.g. CapacityIsNotFound
    return text


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


def snapshot_states(job: Obj | None, workload: Obj | None, provreqs: list[Obj], pods: list[Obj],
                    nodes: list[Obj], check_name: str = CHECK_NAME) -> dict[str, str]:
    """The current state string of every lane, keyed in LANES order."""
    check = check_state(workload, check_name)
    return {
        "Job": _job_state(job),
        "Workload": _workload_state(workload, job),
        "AdmissionCheck": (check or {}).get("state") or "-",
        "ProvisioningRequest": _provreq_state(workload, provreqs or [], check_name),
        "Nodes": _nodes_state(nodes or []),
        "Pods": _pods_state(pods or []),
    }
