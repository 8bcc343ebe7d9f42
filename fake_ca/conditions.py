"""ProvisioningRequest conditions as the real Cluster Autoscaler writes them (pure).

The only home of the autoscaler's condition reasons and messages.  Reason and message strings
are the upstream constants (cluster-autoscaler 1.36.1 provisioningrequest/conditions/conditions.go
and the classes' provisioning_class.go).  The real autoscaler writes every condition with
lastTransitionTime=now, even when the status does not change.  Reasons marked FAKE-ONLY are this
fake's own: the real autoscaler never writes them.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from k8s.objects import format_time

MSG_ACCEPTED = "ProvisioningRequest is accepted by ClusterAutoscaler"
MSG_CAPACITY_FOUND = "Capacity is found in the cluster"
MSG_NOT_FOUND = "Capacity is not found, CA will try to find it later."
MSG_NOT_FOUND_NO_RETRY = "CA could not find requested capacity"                 # check-capacity, noRetry
MSG_RESERVATION_EXPIRED = "Capacity reservation time is expired"
MSG_BOOKING_CONSUMED = "Capacity booking consumed: all pods scheduled"          # CA 1.37
MSG_EXPIRED = "ProvisioningRequest is expired"
MSG_REVOKED = "capacity revoked by fault injection (fake-ca)"                   # FAKE-ONLY
MSG_ATTEMPT_FAILED = "attempt {attempt} failed by fault injection (fake-ca fakeCAFailAttempts={of})"   # FAKE-ONLY

# a failed scale-up in the status ConfigMap's backoffInfo (clusterstate.go updateScaleRequests; executor.go)
ERR_TIMEOUT = "timeout"                                 # metrics.Timeout: nodes did not register in time
ERR_CLOUD_PROVIDER = "cloudProviderError"               # errors.CloudProviderError: IncreaseSize failed
MSG_SCALE_UP_TIMED_OUT = "Scale-up timed out for node group {group} after {after}"
MSG_INCREASE_FAILED = "failed to increase node group size: {error}"


class Reason(StrEnum):
    """The condition reasons this fake writes: the real autoscaler's, and four of its own (FAKE-ONLY)."""
    ACCEPTED = "Accepted"
    CAPACITY_FOUND = "CapacityIsFound"
    CAPACITY_PROVISIONED = "CapacityIsProvisioned"
    NOT_FOUND = "CapacityIsNotFound"
    FAILED_TO_CREATE_PODS = "FailedToCreatePods"
    RESERVATION_EXPIRED = "CapacityReservationTimeExpired"
    BOOKING_CONSUMED = "CapacityBookingConsumed"                                  # CA 1.37
    EXPIRED = "Expired"
    INVALID_REQUEST = "InvalidProvisioningRequest"                                # FAKE-ONLY (malformed spec)
    VALID_UNTIL_EXPIRED = "ValidUntilSecondsExpired"                              # FAKE-ONLY (--honor-valid-until)
    REVOKED = "CapacityRevokedInjected"                                           # FAKE-ONLY (fault injection)
    ATTEMPT_FAILED = "AttemptFailedInjected"                                      # FAKE-ONLY (fault injection)


def set_condition(conditions: list[dict], ctype: str, status: str, reason: Reason | str, message: str,
                  now: datetime, generation: int | None = None) -> list[dict]:
    """Replace-by-type, lastTransitionTime=now (as CA's AddOrUpdateCondition does)."""
    out = [c for c in conditions if c.get("type") != ctype]
    cond = {"type": ctype, "status": status, "reason": str(reason), "message": message,
            "lastTransitionTime": format_time(now)}
    if generation is not None:
        cond["observedGeneration"] = generation
    out.append(cond)
    return out


