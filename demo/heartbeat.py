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

from . import kube

log = logging.getLogger(__name__)

NAMESPACE = "tau-demo-system"
LEASE = kube.Resource("coordination.k8s.io", "v1", "leases", "Lease")


def _micro(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def beat(k: kube.Kube, name: str, identity: str, interval: float) -> None:
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"holderIdentity": identity, "leaseDurationSeconds": max(int(interval * 3), 3),
                     "renewTime": _micro(datetime.now(timezone.utc))}}
    k.apply(LEASE, body, field_manager=name)


def start(k: kube.Kube, name: str, stop: threading.Event, interval: float = 2.0) -> threading.Thread:
    identity = f"{socket.gethostname()}/{os.getpid()}"

    def loop():
        while not stop.is_set():
            try:
                beat(k, name, identity, interval)
            except (kube.ApiError, kube.Unreachable) as e:
                log.debug("heartbeat %s: %s", name, e)
            stop.wait(interval)
        try:   # a clean stop gives the Lease up at once
            k.delete(LEASE, name, NAMESPACE)
        except (kube.ApiError, kube.Unreachable):
            pass
    t = threading.Thread(target=loop, name=f"heartbeat-{name}", daemon=True)
    t.start()
    return t


def alive(k: kube.Kube, name: str) -> bool:
    """True if a controller renewed its Lease within its lease duration."""
    lease = k.get_or_none(LEASE, name, NAMESPACE)
    if not lease:
        return False
    spec = lease.get("spec") or {}
    try:
        renewed = datetime.fromisoformat(spec["renewTime"].replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return False
    return (datetime.now(timezone.utc) - renewed).total_seconds() < spec.get("leaseDurationSeconds", 6)
