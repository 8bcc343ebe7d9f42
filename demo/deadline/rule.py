"""When a Job's admission deadline falls, and why (pure: plain objects in, a time and its cause out).

A Job's budget is its admission-deadline annotation (a duration).  Two rules count it:

- "taken-up" (the default): the time a gang's request waits for an autoscaler to take it up is not counted
  against it.  The real Cluster Autoscaler 1.36.1 takes up one best-effort-atomic request per loop (about 1.3 a
  second here): with 100 gangs submitted at once and a 40 s deadline from submission, 41 were deactivated although
  nothing was out of stock.  The deadline is creation + budget, moved later to the take-up + the budget less a
  slack (TAKE_UP_SLACK, at most half the budget) when the take-up came later than that slack: a request taken
  up promptly keeps the deadline the old rule gives it, one taken up late gets at least half its budget from
  its take-up, and a stockout is caught within the budget of the take-up.  The take-up is the earliest
  lastTransitionTime of a request's Accepted, Provisioned or Failed condition (the injector writes Accepted
  when it picks the request; a check-capacity batch writes only Provisioned; a missing pod template only
  Failed).  The autoscaler rewrites those times at every retry, so the caller remembers the earliest it saw
  (`seen`), across the Workload's attempts too: a retry never restarts the budget.  The controller also records
  that earliest take-up on the Workload (TAKEN_UP_ANNOTATION), which counts as seen too, so that a controller
  restarted (or killed) after a retry still counts from the first take-up, not from the rewrite.  While the
  Workload has a request that no autoscaler has taken up, nothing but the outer bound ends the wait: the Job's
  admission-max-wait annotation (at least the budget), else `outer_factor` times the budget, after submission;
  a request no autoscaler ever takes up ends there.  A Workload with no request and no take-up seen (waiting for
  quota, or a MultiKueue manager's, whose requests are on its workers) keeps the old deadline.
- "submitted" (the old rule): from the Job's creation.

The rule is the controller's (`tau-demo deadline --rule`), or the Job's own deadline-rule annotation.  Each
due time carries its cause: which bound it is (Bound) and what the Workload waits for (Waiting), so that a run
can tell a stockout (taken up, waiting for capacity) from a gang behind other requests (waiting for the
autoscaler) or for quota.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Iterable

from k8s.duration import BadDuration, parse_duration
from k8s.keys import (ACCEPTED, DEADLINE_ANNOTATION, DEADLINE_RULE_ANNOTATION, FAILED, MAX_WAIT_ANNOTATION,
                      PROVISIONED, TAKEN_UP_ANNOTATION)
from k8s.objects import annotations, created_at, is_true, meta, parse_time, transition_time
from k8s.provreq import attempt


class Rule(StrEnum):
    TAKEN_UP = "taken-up"          # the wait to be taken up does not count; the outer bound caps it
    SUBMITTED = "submitted"        # the budget counts from the Job's creation (the old rule)


class Bound(StrEnum):
    """Which bound fired: recorded on the Workload with the commit (DECISION_BOUND_ANNOTATION)."""
    SUBMITTED = "submitted"        # creation + budget: the rule submitted, or a Workload with no request
    TAKEN_UP = "taken-up"          # the rule taken-up after a take-up: creation + budget, or later for a late one
    OUTER = "outer-bound"          # the rule taken-up: creation + the outer bound


class Waiting(StrEnum):
    """What the Workload waited for when the bound fired (DECISION_WAITING_ANNOTATION)."""
    QUOTA = "quota"                # no ProvisioningRequest: waiting for quota (or between Kueue's attempts)
    AUTOSCALER = "autoscaler"      # a request no autoscaler has taken up: queued behind others, or none runs
    CAPACITY = "capacity"          # taken up, not provisioned: out of stock, or the scale-up is still failing
    ADMISSION = "admission"        # provisioned, not admitted yet


DEFAULT_RULE = Rule.TAKEN_UP
DEFAULT_OUTER_FACTOR = 4.0         # the outer bound, in budgets after submission, when the Job names none
TAKE_UP_SLACK = 10.0               # seconds: the real autoscaler's scan interval, the wait of a request it was not behind
ANSWERS = (ACCEPTED, PROVISIONED, FAILED)   # conditions only an autoscaler that took the request up writes


class BadDeadline(ValueError):
    """A malformed annotation of the deadline's (`key`, the message says what is wrong)."""

    def __init__(self, key: str, problem: str):
        super().__init__(problem)
        self.key = key


@dataclass(frozen=True)
class Cause:
    bound: Bound
    waiting: Waiting


@dataclass(frozen=True)
class Due:
    """When the deadline falls (`at`), how the controller's log names it (`what`), and its cause."""
    at: datetime
    what: str
    cause: Cause


def _seconds(job: dict, key: str) -> float | None:
    raw = annotations(job).get(key)
    if raw is None:
        return None
    try:
        seconds = parse_duration(raw)
    except BadDuration as e:
        raise BadDeadline(key, str(e)) from None
    if seconds <= 0:
        raise BadDeadline(key, f"{raw!r} must be positive")
    return seconds


def budget_of(job: dict) -> float | None:
    """The Job's deadline annotation in seconds; None without it; BadDeadline when malformed."""
    return _seconds(job, DEADLINE_ANNOTATION)


def rule_of(job: dict, default: Rule) -> Rule:
    """The Job's own rule (its deadline-rule annotation), else the controller's; BadDeadline for an unknown one."""
    raw = annotations(job).get(DEADLINE_RULE_ANNOTATION)
    if raw is None:
        return default
    try:
        return Rule(raw)
    except ValueError:
        raise BadDeadline(DEADLINE_RULE_ANNOTATION,
                          f"{raw!r} is not a rule ({', '.join(r.value for r in Rule)})") from None


def outer_of(job: dict, budget: float, factor: float) -> float:
    """The outer bound in seconds after submission: the Job's admission-max-wait annotation, which may not be
    shorter than the budget, else factor × the budget."""
    seconds = _seconds(job, MAX_WAIT_ANNOTATION)
    if seconds is None:
        return factor * budget
    if seconds < budget:
        raise BadDeadline(MAX_WAIT_ANNOTATION, f"{annotations(job)[MAX_WAIT_ANNOTATION]!r} is shorter than the "
                                               f"deadline ({budget:g}s)")
    return seconds


def taken_up_at(provreqs: Iterable[dict], *seen: datetime | None) -> datetime | None:
    """The earliest time an autoscaler took up one of the requests (the earliest lastTransitionTime of their
    Accepted, Provisioned and Failed conditions), or the earliest of `seen`, the take-ups seen before (None: none
    seen), if that is earlier; None while no request was taken up."""
    times = [t for pr in provreqs for t in (transition_time(pr, c) for c in ANSWERS) if t is not None]
    times += [t for t in seen if t is not None]
    return min(times, default=None)


def recorded_take_up(wl: dict | None) -> datetime | None:
    """The earliest take-up the Workload records (its TAKEN_UP_ANNOTATION, which the controller writes so that a
    restart keeps it); None without it; BadDeadline when it is no RFC 3339 time."""
    raw = annotations(wl).get(TAKEN_UP_ANNOTATION)
    if raw is None:
        return None
    t = parse_time(raw)
    if t is None:
        raise BadDeadline(TAKEN_UP_ANNOTATION, f"{raw!r} is not an RFC 3339 time")
    return t


def current_request(provreqs: Iterable[dict]) -> dict | None:
    """The Workload's current request among its requests: the latest attempt (Kueue's `-<attempt>`)."""
    return max(provreqs, key=lambda pr: (attempt(pr, None) or 0, meta(pr).get("creationTimestamp") or ""),
               default=None)


def waiting_for(current: dict | None) -> Waiting:
    """What a Workload whose current request is `current` waits for."""
    if current is None:
        return Waiting.QUOTA
    if taken_up_at([current]) is None:
        return Waiting.AUTOSCALER
    return Waiting.ADMISSION if is_true(current, PROVISIONED) else Waiting.CAPACITY


def slack_of(budget: float) -> float:
    """How long an autoscaler may take to take a request up before the wait counts as one behind other requests:
    TAKE_UP_SLACK, or half the budget if that is less (a gang taken up late still gets half its budget)."""
    return min(TAKE_UP_SLACK, budget / 2)


def due(job: dict, wl: dict | None, provreqs: list[dict], seen: datetime | None, default: Rule,
        factor: float) -> Due | None:
    """When the Job's deadline falls under its rule, given its Workload (the take-up it records), the Workload's
    requests and the earliest take-up seen before; None without a deadline annotation; BadDeadline for a
    malformed deadline or no creation time.  A malformed rule, max-wait or recorded take-up counts from submission
    (and says so)."""
    budget = budget_of(job)
    if budget is None:
        return None
    created = created_at(job)
    if created is None:
        raise BadDeadline(DEADLINE_ANNOTATION, "the Job has no creationTimestamp")
    waiting = waiting_for(current_request(provreqs))
    submitted = created + timedelta(seconds=budget)
    try:
        rule = rule_of(job, default)
        outer = None if rule == Rule.SUBMITTED else created + timedelta(seconds=outer_of(job, budget, factor))
        recorded = None if rule == Rule.SUBMITTED else recorded_take_up(wl)
    except BadDeadline as e:        # counted as the old rule counts, which always ends the wait
        return Due(submitted, f"deadline (from submission: malformed {e.key}: {e})", Cause(Bound.SUBMITTED, waiting))
    taken = taken_up_at(provreqs, seen, recorded)
    if outer is None or (taken is None and not provreqs):
        return Due(submitted, "deadline", Cause(Bound.SUBMITTED, waiting))
    if taken is not None:
        at = max(submitted, taken + timedelta(seconds=budget - slack_of(budget)))
        if at < outer:
            late = (at - submitted).total_seconds()
            return Due(at, f"deadline ({late:g}s later for the wait to be taken up)" if late else "deadline",
                       Cause(Bound.TAKEN_UP, waiting))
    return Due(outer, f"outer bound ({(outer - created).total_seconds():g}s after submission)",
               Cause(Bound.OUTER, waiting))
