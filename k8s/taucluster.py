"""The checks on a TauCluster (manifests/taucluster-crd.yaml), in one place: which TauCluster sets a profile up,
what its status says of that profile, and whether that status can be believed now.  Pure: plain objects in,
answers out; a malformed object reads as empty.

The status is written by `tau-demo taucluster` (demo/taucluster/controller.py).  It is current only while that
controller runs (its heartbeat Lease is fresh) and when the profile's condition was written for the TauCluster's
present spec (its observedGeneration is the TauCluster's generation): an old status says what was true of an
older spec, or of a cluster nobody watches any more.
"""

from __future__ import annotations

from dataclasses import dataclass

from .keys import PROVISIONING_READY, TAUCLUSTER_LEASE, SYSTEM_NAMESPACE
from .objects import Obj, meta, name, spec, status


def profile_spec(tc: Obj | None, profile: str) -> Obj | None:
    """The TauCluster's spec.profiles[] entry named `profile`, or None."""
    for p in spec(tc).get("profiles") or []:
        if isinstance(p, dict) and p.get("name") == profile:
            return p
    return None


def serves(tc: Obj | None, profile: str, namespace: str) -> bool:
    """Does the TauCluster set `profile` up in `namespace` (a LocalQueue of that name there)?"""
    p = profile_spec(tc, profile)
    return p is not None and namespace in (p.get("namespaces") or [])


def ready_condition(tc: Obj | None, profile: str) -> Obj | None:
    """The ProvisioningReady condition the TauCluster's status holds for `profile`, or None."""
    for p in status(tc).get("profiles") or []:
        if isinstance(p, dict) and p.get("name") == profile:
            for c in p.get("conditions") or []:
                if isinstance(c, dict) and c.get("type") == PROVISIONING_READY:
                    return c
    return None


def mode(tc: Obj | None) -> str:
    return str(spec(tc).get("mode") or "")


@dataclass(frozen=True)
class Reading:
    """What a TauCluster's status says of one profile, and whether it is current."""
    taucluster: str
    mode: str
    ready: bool
    reason: str
    message: str
    stale: str                  # "" when current, else why it is not (then the objects must be checked)


def claimant(tauclusters: list[Obj], profile: str, namespace: str) -> Obj | None:
    """The TauCluster that sets `profile` up in `namespace`: of those that name it, one whose status says it is
    ready, else the oldest (two cannot both hold a profile: the controller refuses the later claim, reason Conflict)."""
    named = [tc for tc in tauclusters if serves(tc, profile, namespace) and not meta(tc).get("deletionTimestamp")]
    ready = [tc for tc in named if (ready_condition(tc, profile) or {}).get("status") == "True"]
    pool = ready or named
    pool.sort(key=lambda tc: (meta(tc).get("creationTimestamp") or "", name(tc)))
    return pool[0] if pool else None


def reading(tc: Obj, profile: str, controller_alive: bool | None) -> Reading:
    """The status of `profile` on TauCluster `tc`.  `controller_alive`: is the controller's heartbeat Lease fresh
    (None: it could not be read)."""
    c = ready_condition(tc, profile) or {}
    generation, observed = meta(tc).get("generation"), c.get("observedGeneration")
    lease = f"{SYSTEM_NAMESPACE}/{TAUCLUSTER_LEASE}"
    if not c:
        stale = "its status says nothing of this profile yet"
    elif controller_alive is False:
        stale = f"its controller is not running (heartbeat Lease {lease} missing or stale)"
    elif controller_alive is None:
        stale = f"its controller's heartbeat Lease {lease} cannot be read"
    elif generation is not None and observed != generation:
        stale = f"its status was written for generation {observed}, the TauCluster is at generation {generation}"
    else:
        stale = ""
    return Reading(name(tc), mode(tc), c.get("status") == "True", str(c.get("reason") or ""),
                   str(c.get("message") or ""), stale)
