"""Booking, pod-sized, for both classes (pure).

processors/provreq/processor.go bookCapacity: every loop, each ProvisioningRequest of a supported
class that is Provisioned=True and neither Failed nor BookingExpired has its pods placed into the
scheduling snapshot, wherever they fit (existing and upcoming nodes alike), so that no other
request is offered that capacity.  The booking ends with BookingExpired=True: 10 minutes after
Provisioned (CapacityReservationTimeExpired), or, from 1.37 on, once as many pods consuming the
request are scheduled as it asked for (CapacityBookingConsumed) -- this fake does the 1.37 thing,
counting the consume annotation under its current and its deprecated key.
"""

from __future__ import annotations

from typing import Callable

from k8s.keys import (BOOKING_EXPIRED, CAPACITY_REVOKED, CONSUME_PROVREQ_ANNOTATION,
                           CONSUME_PROVREQ_ANNOTATION_OLD, FAILED, PROVISIONED)
from k8s.objects import annotations, deleting, is_true, meta, spec

from .request import PodSet, Request, RequestError, request_from_objects, supported


def books(provreq: dict) -> bool:
    """conditions.ShouldCapacityBeBooked (CapacityRevoked, which only this fake writes, ends it too)."""
    return (supported(provreq)
            and is_true(provreq, PROVISIONED) and not is_true(provreq, FAILED)
            and not is_true(provreq, BOOKING_EXPIRED) and not is_true(provreq, CAPACITY_REVOKED))


def booked_pods(provreqs: list[dict], templates: dict[tuple[str, str], dict],
                parse: Callable[[dict, dict[str, dict]], Request] = request_from_objects) -> list[PodSet]:
    """The pods whose capacity other requests may not use: every booking request's pods, in order.
    A request whose PodTemplates are gone books nothing (the real autoscaler logs and skips it).
    `parse` may memoize request_from_objects (the controller's does, by object versions)."""
    out: list[PodSet] = []
    by_ns: dict[str, dict[str, dict]] = {}
    for (tns, name), t in templates.items():
        by_ns.setdefault(tns, {})[name] = t
    for pr in provreqs:
        if not books(pr):
            continue
        try:
            out += parse(pr, by_ns.get(meta(pr).get("namespace") or "default", {})).expand()
        except RequestError:
            continue
    return out


def consuming_pods_scheduled(provreq: dict, pods: list[dict]) -> int:
    """Scheduled, live pods that consume this request (either annotation key)."""
    md = meta(provreq)
    count = 0
    for p in pods:
        if meta(p).get("namespace") != md.get("namespace") or deleting(p) or not spec(p).get("nodeName"):
            continue
        ann = annotations(p)
        if md.get("name") in (ann.get(CONSUME_PROVREQ_ANNOTATION), ann.get(CONSUME_PROVREQ_ANNOTATION_OLD)):
            count += 1
    return count


def total_pods(provreq: dict) -> int:
    return sum(int((ps or {}).get("count") or 0) for ps in spec(provreq).get("podSets") or [] if isinstance(ps, dict))
