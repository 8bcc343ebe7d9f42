"""The checks on a Kueue v0.19.2 Workload, in one place (as Kueue keeps IsAdmitted and FindAdmissionCheck in
pkg/workload): which Workload is a Job's, its admission check entries, and whether it holds quota, is
admitted, finished, evicted or inactive, and whether the admission deadline's timeout is committed on it.
Pure: plain objects in, answers out; a malformed object reads as empty."""

from __future__ import annotations

from datetime import datetime

from .keys import (ADMITTED, DEACTIVATED, DECISION_ANNOTATION, DECISION_TIME_ANNOTATION, EVICTED, FINISHED,
                   JOB_UID_LABEL, QUOTA_RESERVED, TIMED_OUT)
from .objects import Obj, annotations, condition, is_true, meta, owned_by, parse_time, spec, status


def job_selector(job_uid: str) -> str:
    """The label selector that lists a Job's Workloads (Kueue labels each with its Job's uid)."""
    return f"{JOB_UID_LABEL}={job_uid}"


def of_job(workloads: list[Obj], job_uid: str) -> Obj | None:
    """The Job's current Workload among `workloads`: the newest one the Job controls (its owner reference)."""
    owned = [w for w in workloads if owned_by(w, job_uid)]
    owned.sort(key=lambda w: meta(w).get("creationTimestamp") or "")
    return owned[-1] if owned else None


def admission_check(wl: Obj | None, name: str) -> Obj | None:
    """The status.admissionChecks[] entry named `name` (FindAdmissionCheck), or None."""
    for c in status(wl).get("admissionChecks") or []:
        if isinstance(c, dict) and c.get("name") == name:
            return c
    return None


def check_state(wl: Obj | None, name: str) -> str | None:
    """Pending, Ready, Retry or Rejected: the state of the admission check `name`, or None."""
    return (admission_check(wl, name) or {}).get("state")


def quota_reserved(wl: Obj | None) -> bool:
    return is_true(wl, QUOTA_RESERVED)


def has_admission(wl: Obj | None) -> bool:
    """status.admission is set: quota is held (the scheduler writes it with QuotaReserved=True)."""
    return bool(status(wl).get("admission"))


def holds_quota(wl: Obj | None) -> bool:
    """QuotaReserved=True or an admission: the Workload's quota is not released."""
    return quota_reserved(wl) or has_admission(wl)


def admitted(wl: Obj | None) -> bool:
    return is_true(wl, ADMITTED)


def finished(wl: Obj | None) -> bool:
    return is_true(wl, FINISHED)


def admission_won(wl: Obj | None) -> bool:
    """Admission won, for good: Admitted=True, or the Workload already finished."""
    return admitted(wl) or finished(wl)


def active(wl: Obj | None) -> bool:
    """spec.active (the CRD defaults it to true)."""
    return spec(wl).get("active") is not False


def evicted(wl: Obj | None) -> Obj | None:
    """The Evicted condition while it is True, else None."""
    ev = condition(wl, EVICTED)
    return ev if ev is not None and ev.get("status") == "True" else None


def evicted_for(wl: Obj | None, reason: str) -> bool:
    return (evicted(wl) or {}).get("reason") == reason


def deactivated(wl: Obj | None) -> bool:
    """Inactive: spec.active=false, or evicted by a deactivation (Deactivated, DeactivatedDueTo<X>)."""
    reason = (evicted(wl) or {}).get("reason")
    return not active(wl) or (isinstance(reason, str) and reason.startswith(DEACTIVATED))


def cluster_name(wl: Obj | None) -> str:
    """A MultiKueue manager's Workload: the worker that admitted it (status.clusterName, set once), or ""."""
    return str(status(wl).get("clusterName") or "")


def nominated_clusters(wl: Obj | None) -> list[str]:
    """A MultiKueue manager's Workload: the workers it is dispatched to while none has admitted it, sorted."""
    return sorted(str(c) for c in status(wl).get("nominatedClusterNames") or [])


def committed_timeout(wl: Obj | None) -> bool:
    """The admission deadline's decision is committed on it (demo.deadline.protocol step 1)."""
    return annotations(wl).get(DECISION_ANNOTATION) == TIMED_OUT


def decided_at(wl: Obj | None) -> datetime | None:
    """When the committed timeout was decided: its decision-time annotation, the deadline controller's clock as it
    wrote the commit, so at or before the moment the write landed (an observer sees the commit later, by its watch's
    lag).  None when no timeout is committed or the time does not parse."""
    if not committed_timeout(wl):
        return None
    return parse_time(annotations(wl).get(DECISION_TIME_ANNOTATION))


def check_retry_backoff(base_seconds: int, max_seconds: int, retry: int) -> int:
    """Seconds Kueue v0.19.2 waits before retry number `retry` (1, 2, ...) of an admission check in Retry:
    base·2^(retry-1), capped at max, truncated to whole seconds (its jitter is 0.0001: negligible)
    (pkg/workload/admissionchecks.go UpdateAdmissionCheckRequeueState).  The Workload is requeued at the
    check's lastTransitionTime plus that."""
    wait = base_seconds * 2 ** max(retry - 1, 0)
    return int(min(wait, max_seconds) if max_seconds else wait)
