"""The two backoffs of the real Cluster Autoscaler, as pure functions over in-memory state.

Request retry (processors/provreq/injector.go, IsAvailableForProvisioning): a request with
Provisioned=False is picked again once lastTransitionTime + its retry time has passed; each time
it is picked the retry time doubles (initial 1m, max 10m).  The state is an in-memory LRU keyed by
the request's UID, so a restart starts again from the initial time.

Node-group backoff (utils/backoff/exponential_backoff.go): a failed scale-up (the cloud refused
IncreaseSize, or the VMs did not register within --max-node-provision-time) backs the group off
for the initial duration (5m); a failure after the backoff ran out doubles it (max 30m); one
inside a running backoff keeps the duration and extends it.  Data older than the reset timeout
(3h) is dropped.  A backed-off group is not a scale-up option: requests for it get
CapacityIsNotFound.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from k8s.keys import FAILED, PROVISIONED
from k8s.objects import condition, is_true, transition_time


@dataclass(frozen=True)
class RetryPolicy:
    initial: float          # seconds (real: 1m, --provisioning-request-initial-backoff-time)
    maximum: float          # seconds (real: 10m, --provisioning-request-max-backoff-time)


@dataclass(frozen=True)
class Availability:
    available: bool
    why: str
    retry: float | None = None          # the retry time to remember for this UID (None: forget it)
    due: datetime | None = None         # when it will be available (for a request waiting in backoff)


def availability(provreq: dict, remembered: float | None, now: datetime, policy: RetryPolicy) -> Availability:
    """Whether the injector may pick this request now, and the retry time to remember for it."""
    if is_true(provreq, FAILED) or is_true(provreq, PROVISIONED):
        return Availability(False, "Failed or Provisioned")
    prov = condition(provreq, PROVISIONED)
    if prov is None:
        return Availability(True, "new", remembered)
    if prov.get("status") != "False":
        return Availability(False, f"Provisioned={prov.get('status')}", remembered)
    retry = remembered if remembered is not None else policy.initial
    since = transition_time(provreq, PROVISIONED) or now
    due = since + timedelta(seconds=retry)
    if due < now:
        return Availability(True, f"retry after {retry:.0f}s", min(2 * retry, policy.maximum))
    return Availability(False, f"in backoff for {(due - now).total_seconds():.1f}s more", retry, due)


@dataclass(frozen=True)
class GroupPolicy:
    initial: float          # seconds (real: 5m, --initial-node-group-backoff-duration)
    maximum: float          # seconds (real: 30m, --max-node-group-backoff-duration)
    reset: float = 3 * 3600  # seconds (real: 3h, --node-group-backoff-reset-timeout)


@dataclass(frozen=True)
class GroupBackoff:
    duration: float
    until: datetime
    last_failure: datetime
    error_code: str          # the status ConfigMap's backoffInfo, as the real autoscaler records the failure
    error_message: str


def register_failure(prev: GroupBackoff | None, now: datetime, policy: GroupPolicy, error_code: str,
                     error_message: str) -> GroupBackoff:
    """The group's backoff after a failed scale-up at `now`."""
    duration = policy.initial
    if prev is not None and prev.last_failure + timedelta(seconds=policy.reset) >= now:
        duration = prev.duration
        if prev.until < now:
            duration = min(2 * prev.duration, policy.maximum)
    return GroupBackoff(duration, now + timedelta(seconds=duration), now, error_code, error_message)


def backed_off(state: GroupBackoff | None, now: datetime) -> bool:
    return state is not None and state.until >= now


def forget_stale(states: dict[str, GroupBackoff], now: datetime, policy: GroupPolicy) -> dict[str, GroupBackoff]:
    """Drop backoff data whose last failure is older than the reset timeout."""
    return {k: v for k, v in states.items() if v.last_failure + timedelta(seconds=policy.reset) >= now}
