"""ProvisioningRequest conditions as the real Cluster Autoscaler writes them (pure).

Reason and message strings are the upstream constants (cluster-autoscaler
provisioningrequest/conditions/conditions.go).  CA writes every condition with
lastTransitionTime=now, even when the status does not change.  The reasons marked
INJECTED are this fake's own: the real autoscaler never writes them.
"""

from __future__ import annotations

from datetime import datetime, timezone

from demo.objects import condition, is_true  # noqa: F401  (re-exported)

ACCEPTED, PROVISIONED, FAILED, BOOKING_EXPIRED, CAPACITY_REVOKED = (
    "Accepted", "Provisioned", "Failed", "BookingExpired", "CapacityRevoked")

MSG_ACCEPTED = "ProvisioningRequest is accepted by ClusterAutoscaler"
MSG_CAPACITY_FOUND = "Capacity is found in the cluster"
MSG_NOT_FOUND = "Capacity is not found, CA will try to find it later."
MSG_RESERVATION_EXPIRED = "Capacity reservation time is expired"
MSG_BOOKING_CONSUMED = "Capacity booking consumed: all pods scheduled"          # CA 1.37
MSG_EXPIRED = "ProvisioningRequest is expired"

R_ACCEPTED = "Accepted"
R_CAPACITY_FOUND = "CapacityIsFound"
R_CAPACITY_PROVISIONED = "CapacityIsProvisioned"
R_NOT_FOUND = "CapacityIsNotFound"
R_FAILED_TO_CREATE_PODS = "FailedToCreatePods"
R_RESERVATION_EXPIRED = "CapacityReservationTimeExpired"
R_BOOKING_CONSUMED = "CapacityBookingConsumed"                                  # CA 1.37
R_EXPIRED = "Expired"
R_VALID_UNTIL_EXPIRED = "ValidUntilSecondsExpired"                              # INJECTED (--honor-valid-until)
R_REVOKED = "CapacityRevokedInjected"                                           # INJECTED (fault injection)


def now_str(now: datetime) -> str:
    return now.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


get = condition          # the condition of a type, or None
# is_true(provreq, ctype) comes from demo.objects as well


def set_condition(conditions: list[dict], ctype: str, status: str, reason: str, message: str,
                  now: datetime, generation: int | None = None) -> list[dict]:
    """Replace-by-type, lastTransitionTime=now (as CA's AddOrUpdateCondition does)."""
    out = [c for c in conditions if c.get("type") != ctype]
    cond = {"type": ctype, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": now_str(now)}
    if generation is not None:
        cond["observedGeneration"] = generation
    out.append(cond)
    return out


def ltt(provreq: dict, ctype: str) -> datetime | None:
    c = get(provreq, ctype)
    if not c or not c.get("lastTransitionTime"):
        return None
    return datetime.fromisoformat(c["lastTransitionTime"].replace("Z", "+00:00"))


def booked(provreq: dict) -> bool:
    """conditions.ShouldCapacityBeBooked: Provisioned, and neither Failed nor BookingExpired."""
    return (is_true(provreq, PROVISIONED) and not is_true(provreq, FAILED)
            and not is_true(provreq, BOOKING_EXPIRED) and not is_true(provreq, CAPACITY_REVOKED))
