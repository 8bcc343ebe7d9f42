"""The admission-deadline protocol, as pure decisions over plain objects (no I/O).

The reviewed design marked the owner Job terminal, then deactivated the Workload, then ran
TTL cleanup on the next reconcile.  Kueue can admit in between: the Workload patch
conflicts, the owner keeps its terminal mark, the next reconcile sees an admitted Workload
and cleans up a running Job.  This protocol fixes the order:

1. Decide and commit on ONE object, the Workload, guarded by its resourceVersion: while it
   is not Admitted and the deadline has passed, one merge patch sets spec.active=false and
   the decision annotation.  A 409 means the Workload changed since the read: read again
   and decide again.  Admitted (or Finished) means admission won, for good.
2. Mirror only a committed timeout to the owner Job (terminal annotations).
3. Arm cleanup (a TTL annotation) only after the mirror is written.
4. Recovery, on every reconcile: a committed Workload whose owner lacks the mirror gets it;
   a mirror whose Workload carries no committed timeout (or is Admitted) is removed with its
   cleanup; cleanup deletes an owner only while its Workload still carries the committed
   timeout and is not Admitted.

Every step is idempotent, so a controller killed at any point converges on restart.

When the deadline falls is rule.py's (counted from the autoscaler's take-up, or from submission); the protocol
is the same under either rule, and the commit records which bound fired and what the Workload waited for.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from k8s.keys import (ADMISSION_TIMEOUT, CLEANUP_AFTER_ANNOTATION, DEADLINE_ANNOTATION, DECISION_ANNOTATION,
                        DECISION_BOUND_ANNOTATION, DECISION_TIME_ANNOTATION, DECISION_WAITING_ANNOTATION, MIRROR_KEYS,
                        TERMINAL_REASON_ANNOTATION, TERMINAL_TIME_ANNOTATION, TERMINAL_WORKLOAD_ANNOTATION, TIMED_OUT)
from k8s.job import cleanup_after, mirrored
from k8s.objects import annotations, created_at, format_time, meta
from k8s.workload import active, admission_won, committed_timeout
from . import rule as R
from .rule import BadDeadline, Cause


# The design's bound: the timeout is committed on the Workload no later than this after the deadline passed
# (the scenarios check it on the cluster; docs/benchmarks.md has what is measured).
COMMIT_TOLERANCE = 2.0


# ---------------------------------------------------------------------------- reading objects

def deadline_of(job: dict) -> datetime | None:
    """The deadline counted from submission (the rule "submitted"): Job creation + its deadline annotation.  None
    without the annotation; BadDeadline when the annotation or the creation time is malformed.  The rule in force
    (rule.py) may put it later, never sooner."""
    seconds = R.budget_of(job)
    if seconds is None:
        return None
    created = created_at(job)
    if created is None:
        raise BadDeadline(DEADLINE_ANNOTATION, "the Job has no creationTimestamp")
    return created + timedelta(seconds=seconds)


def conflict_backoff(retry: int) -> float:
    """Seconds to wait before retry number `retry` (1, 2, ...) after a 409.  The first retry reads live,
    so it needs no wait (the 409 usually means our cached read was stale); later ones back off
    exponentially (50 ms, 100 ms, ... at most 1 s) in case a writer keeps changing the object."""
    return 0.0 if retry <= 1 else min(1.0, 0.05 * 2 ** (retry - 2))


# ---------------------------------------------------------------------------- decisions

class Action(StrEnum):
    NONE = "none"                  # nothing to do now or ever for this reason (explained in `why`)
    WAIT = "wait"                  # check again after `after` seconds
    COMMIT = "commit"              # patch the Workload at `resource_version`: spec.active=false + decision annotation
    MIRROR = "mirror"              # write the terminal annotations on the owner Job
    ARM_CLEANUP = "arm-cleanup"    # write the cleanup-after annotation on the owner Job
    DELETE = "delete"              # delete the owner Job (its cleanup TTL expired)
    UNMARK = "unmark"              # remove a stale mirror and disarm cleanup on the owner Job


@dataclass(frozen=True)
class Decision:
    """What to do next (`action`), why, and for WAIT after how long; COMMIT carries the resourceVersion."""
    action: Action
    why: str
    after: float | None = None
    resource_version: str | None = None
    cause: Cause | None = None          # COMMIT: which bound fired and what the Workload waited for


def _malformed(e: BadDeadline) -> Decision:
    return Decision(Action.NONE, f"malformed {e.key}: {e}; no action")


def _deadline_or_none(job: dict) -> "datetime | Decision":
    """The job's deadline counted from submission, or the no-action Decision that explains why there is none."""
    try:
        deadline = deadline_of(job)
    except BadDeadline as e:
        return _malformed(e)
    if deadline is None:
        return Decision(Action.NONE, "no admission deadline")
    return deadline


@dataclass(frozen=True)
class Counting:
    """How the deadline is counted for one decision: the controller's rule and outer bound (rule.py), and what it
    knows of the Workload's requests: the requests themselves and the earliest take-up it saw before (the take-up
    the Workload records counts too: rule.due reads it from the Workload)."""
    rule: R.Rule
    outer_factor: float
    provreqs: tuple[dict, ...] = ()
    seen: datetime | None = None


def decide_workload(job: dict | None, wl: dict | None, now: datetime, counting: Counting) -> Decision:
    """Step 1: the admission-versus-timeout decision, committed on the Workload only; the deadline is counted
    as `counting` says (rule.py), and the commit carries its cause."""
    if job is None:
        return Decision(Action.NONE, "owner Job is gone")
    if wl is None:
        return Decision(Action.NONE, "no Workload yet")
    rv = meta(wl).get("resourceVersion")
    if committed_timeout(wl):
        return Decision(Action.NONE, "timeout already committed on the Workload")
    if admission_won(wl):
        return Decision(Action.NONE, f"Workload rv {rv} is Admitted: admission won, no action")
    try:
        due = R.due(job, wl, list(counting.provreqs), counting.seen, counting.rule, counting.outer_factor)
    except BadDeadline as e:
        return _malformed(e)
    if due is None:
        return Decision(Action.NONE, "no admission deadline")
    if not active(wl):
        return Decision(Action.NONE, f"Workload rv {rv} was deactivated by someone else; no action")
    left = (due.at - now).total_seconds()
    if left > 0:
        return Decision(Action.WAIT, f"{due.what} in {left:.1f}s", after=left)
    late = (now - due.at).total_seconds()      # not -left: at the deadline itself that reads "-0.0s ago"
    return Decision(Action.COMMIT, f"{due.what} passed {late:.1f}s ago; Workload rv {rv} not admitted; "
                                   "committing timeout", resource_version=rv, cause=due.cause)


def decide_owner(job: dict | None, wl: dict | None, now: datetime) -> Decision:
    """Steps 2-4: mirror a committed timeout, arm cleanup after the mirror, clean up, recover."""
    if job is None:
        return Decision(Action.NONE, "owner Job is gone")
    wl_name = meta(wl).get("name")
    committed = wl is not None and committed_timeout(wl) and not admission_won(wl)
    if not committed:
        if any(k in annotations(job) for k in MIRROR_KEYS):     # any mark: the mirror, its time, cleanup
            why = ("Workload is Admitted" if admission_won(wl) else
                   "no Workload" if wl is None else "Workload carries no committed timeout")
            return Decision(Action.UNMARK, f"stale terminal mark on the Job ({why}); removing it and disarming cleanup")
        return Decision(Action.NONE, "nothing to mirror")
    if not mirrored(job) or annotations(job).get(TERMINAL_WORKLOAD_ANNOTATION) != wl_name:
        return Decision(Action.MIRROR, f"Workload {wl_name} carries a committed timeout; mirroring it to the Job")
    return _cleanup_timer(job, now, "mirror written; arming cleanup", "cleanup",
                          lambda late: f"cleanup TTL expired {late:.1f}s ago and Workload {wl_name} still carries "
                                       "the committed timeout; deleting the Job")


def _cleanup_timer(job: dict, now: datetime, arm_why: str, wait_what: str, delete_why) -> Decision:
    """The cleanup TTL on a marked Job: arm it, wait for it, or delete (delete_why(seconds late))."""
    due = cleanup_after(job)
    if due is None:
        return Decision(Action.ARM_CLEANUP, arm_why)
    left = (due - now).total_seconds()
    if left > 0:
        return Decision(Action.WAIT, f"{wait_what} in {left:.1f}s", after=left)
    return Decision(Action.DELETE, delete_why((now - due).total_seconds()))


def decide_legacy(job: dict | None, wl: dict | None, now: datetime) -> Decision:
    """The reviewed design's order, kept only to reproduce its bug: mark the owner terminal
    first (and arm its TTL), then deactivate; on a later reconcile an owner with a terminal
    mark gets TTL cleanup whatever the Workload says."""
    if job is None or wl is None:
        return Decision(Action.NONE, "nothing to do")
    if mirrored(job):
        state = "Admitted" if admission_won(wl) else "not admitted"
        return _cleanup_timer(job, now, "LEGACY: owner marked terminal; arming TTL cleanup", "LEGACY: TTL cleanup",
                              lambda late: f"LEGACY: TTL expired; deleting the Job (its Workload is {state})")
    if admission_won(wl):
        return Decision(Action.NONE, "Workload is Admitted")
    deadline = _deadline_or_none(job)
    if isinstance(deadline, Decision):
        return deadline
    left = (deadline - now).total_seconds()
    if left > 0:
        return Decision(Action.WAIT, f"deadline in {left:.1f}s", after=left)
    return Decision(Action.MIRROR, "LEGACY: deadline passed; marking the owner terminal, then deactivating",
                    resource_version=meta(wl).get("resourceVersion"))


# ---------------------------------------------------------------------------- the patches

def commit_patch(now: datetime, cause: Cause | None = None) -> dict:
    """The commit: spec.active=false and the decision, its time and, when known, its cause (the legacy order
    knows none)."""
    ann = {DECISION_ANNOTATION: TIMED_OUT, DECISION_TIME_ANNOTATION: format_time(now, micro=True)}
    if cause is not None:
        ann.update({DECISION_BOUND_ANNOTATION: str(cause.bound), DECISION_WAITING_ANNOTATION: str(cause.waiting)})
    return {"metadata": {"annotations": ann}, "spec": {"active": False}}


def mirror_patch(wl_name: str, now: datetime) -> dict:
    return {"metadata": {"annotations": {TERMINAL_REASON_ANNOTATION: ADMISSION_TIMEOUT,
                                         TERMINAL_TIME_ANNOTATION: format_time(now, micro=True),
                                         TERMINAL_WORKLOAD_ANNOTATION: wl_name}}}


def arm_patch(now: datetime, ttl: float) -> dict:
    return {"metadata": {"annotations": {CLEANUP_AFTER_ANNOTATION: format_time(now + timedelta(seconds=ttl), micro=True)}}}


def unmark_patch() -> dict:
    return {"metadata": {"annotations": {k: None for k in MIRROR_KEYS}}}
