"""The ProvisioningRequest parameters the fake autoscaler reads, parsed once per request (pure).

Real Cluster Autoscaler 1.36.1 reads only `noRetry` (check-capacity) and `processorInstance`;
ValidUntilSeconds appears only in doc comments, so an unparsable value is ignored (and logged)
unless --honor-valid-until is on.  The fakeCA* parameters are this fake's own knobs, passed the
way every parameter travels: Job annotation provreq.kueue.x-k8s.io/<Param> -> Kueue ->
spec.parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from k8s.keys import (NEVER_BOOTS, PARAM_BOOKING_SECONDS, PARAM_BOOT_SECONDS, PARAM_FAIL_ATTEMPTS,
                      PARAM_HONOR_VALID_UNTIL, PARAM_NO_RETRY, PARAM_REVOKE_AFTER, PARAM_REVOKE_UNPROVISIONED,
                      PARAM_STOCKOUT, PARAM_TTL_SECONDS, PARAM_VALID_UNTIL)
from k8s.duration import FOREVER
from k8s.objects import spec

MAX_SECONDS = 10 * 365 * 24 * 3600
MAX_ATTEMPTS = 1000


class BadParameter(ValueError):
    """A fakeCA* parameter that cannot be used (the request is failed with this message)."""


@dataclass(frozen=True)
class Params:
    no_retry: bool = False                    # check-capacity: Failed instead of retrying
    valid_until: float | None = None          # seconds after creation (honoured only on request)
    valid_until_note: str = ""                # why an unparsable ValidUntilSeconds was ignored
    honor_valid_until: bool = False           # per-request --honor-valid-until
    boot: float | None = None                 # override of the pool's boot time; FOREVER = never boots
    stockout: float | None = None             # the cloud refuses scale-ups until the request is this old
    revoke_after: float | None = None         # FAKE-ONLY: CapacityRevoked this long after Provisioned
    revoke_unprovisioned: float | None = None  # FAKE-ONLY: CapacityRevoked at this age while never provisioned
    fail_attempts: int = 0                    # FAKE-ONLY: Failed on the Workload's attempts 1..N
    booking: float | None = None              # this request's booking (the real one: 10m for every request)
    ttl: float | None = None                  # deleted this long after Provisioned/Failed last changed


def _seconds(params: dict, key: str, allow_never: bool = False) -> float | None:
    raw = params.get(key)
    if raw is None:
        return None
    if allow_never and str(raw).strip().lower() == NEVER_BOOTS:
        return FOREVER
    try:
        v = float(raw)
    except (TypeError, ValueError):
        extra = ' or "never"' if allow_never else ""
        raise BadParameter(f"parameters.{key}={raw!r} is not a number of seconds{extra}") from None
    if not 0 <= v <= MAX_SECONDS:
        raise BadParameter(f"parameters.{key}={raw!r} is out of range (0..{MAX_SECONDS})")
    return v


def _count(params: dict, key: str) -> int:
    raw = params.get(key)
    if raw is None:
        return 0
    text = str(raw).strip()
    if not text.isdigit() or int(text) > MAX_ATTEMPTS:
        raise BadParameter(f"parameters.{key}={raw!r} is not a number of attempts (0..{MAX_ATTEMPTS})")
    return int(text)


def _flag(params: dict, key: str) -> bool:
    return str(params.get(key)).strip().lower() == "true"


def parse(provreq: dict) -> Params:
    """The request's parameters.  BadParameter for an unusable fakeCA* value."""
    raw = spec(provreq).get("parameters") or {}
    params = raw if isinstance(raw, dict) else {}
    return _parse(tuple(sorted((str(k), str(v)) for k, v in params.items())))      # strings: always hashable


@lru_cache(maxsize=4096)
def _parse(items: tuple[tuple[str, str], ...]) -> Params:
    return _parse_dict(dict(items))


def _parse_dict(params: dict) -> Params:
    stockout_raw = params.get(PARAM_STOCKOUT)
    if stockout_raw is None or str(stockout_raw).strip().lower() == "false":
        stockout = None
    elif _flag(params, PARAM_STOCKOUT):
        stockout = FOREVER
    else:
        stockout = _seconds(params, PARAM_STOCKOUT)
    valid_until, note = None, ""
    try:
        valid_until = _seconds(params, PARAM_VALID_UNTIL)
    except BadParameter as e:
        note = str(e)
    return Params(no_retry=_flag(params, PARAM_NO_RETRY), valid_until=valid_until, valid_until_note=note,
                  honor_valid_until=_flag(params, PARAM_HONOR_VALID_UNTIL),
                  boot=_seconds(params, PARAM_BOOT_SECONDS, allow_never=True),
                  stockout=stockout, revoke_after=_seconds(params, PARAM_REVOKE_AFTER),
                  revoke_unprovisioned=_seconds(params, PARAM_REVOKE_UNPROVISIONED),
                  fail_attempts=_count(params, PARAM_FAIL_ATTEMPTS),
                  booking=_seconds(params, PARAM_BOOKING_SECONDS), ttl=_seconds(params, PARAM_TTL_SECONDS))
