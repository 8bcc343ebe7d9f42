"""Controllers announce themselves with a Lease in tau-demo-system, renewed every few seconds.

scenario.sh reads it to know whether a controller already runs (in another terminal, say)
before starting its own, so one terminal is enough and two work too.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from datetime import datetime, timezone

from .client import Kube
from .errors import ApiError, NotFound, Unreachable
from .keys import SYSTEM_NAMESPACE as NAMESPACE
from .objects import format_time, parse_time
from .resources import LEASE

log = logging.getLogger(__name__)

JOIN_TIMEOUT = 5.0      # s a stopping controller waits for its heartbeat to give its Lease up (one delete)


def lease_seconds(interval: float) -> int:
    """How long a Lease renewed every `interval` seconds looks alive after its last renewal."""
    return max(int(interval * 3), 3)


def beat(k: Kube, name: str, identity: str, interval: float) -> None:
    body = LEASE.new(name, NAMESPACE, spec={"holderIdentity": identity, "leaseDurationSeconds": lease_seconds(interval),
                                            "renewTime": format_time(datetime.now(timezone.utc), micro=True)})
    k.apply(LEASE, body, field_manager=name)


def start(k: Kube, name: str, stop: threading.Event, interval: float = 2.0) -> threading.Thread:
    """Renew the Lease every `interval` seconds until `stop`, then give it up.  The first renewal is made before this
    returns: a controller that starts its heartbeat and then says it is ready is seen alive once it says so (the real
    CA's wrapper said ready before its first renewal, and a test that read its Lease at that line failed)."""
    identity = f"{socket.gethostname()}/{os.getpid()}"

    def renew() -> None:
        try:
            beat(k, name, identity, interval)
        except (ApiError, Unreachable) as e:
            log.debug("heartbeat %s: %s", name, e)

    def loop():
        while not stop.wait(interval):
            renew()
        try:   # a clean stop gives the Lease up at once
            k.delete(LEASE, name, NAMESPACE)
        except NotFound:
            pass
        except (ApiError, Unreachable) as e:
            log.warning("heartbeat %s: its Lease was not given up (%s); it looks alive up to %ds more", name, e,
                        lease_seconds(interval))
    renew()
    t = threading.Thread(target=loop, name=f"heartbeat-{name}", daemon=True)
    t.start()
    return t


def give_up(t: threading.Thread) -> None:
    """After `stop` is set: wait (bounded) for the heartbeat thread to delete its Lease, so that a controller that
    stops cleanly is seen as gone at once rather than when its Lease expires."""
    t.join(JOIN_TIMEOUT)


def alive(k: Kube, name: str) -> bool:
    """True if a controller renewed its Lease within its lease duration."""
    lease = k.get_or_none(LEASE, name, NAMESPACE)
    if not lease:
        return False
    spec = lease.get("spec") or {}
    renewed = parse_time(spec.get("renewTime"))
    if renewed is None:
        return False
    return (datetime.now(timezone.utc) - renewed).total_seconds() < spec.get("leaseDurationSeconds", 6)
