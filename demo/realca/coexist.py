"""Why one autoscaler refuses to start beside the other (pure; the reads are exclusion.py's).

Both act on every best-effort-atomic ProvisioningRequest, and the real CA's kwok provider adopts
the fake's nodes (they carry its node-group annotation and a `kwok:` providerID), counts them in
its node group's target size and deletes them when it stops.  So each refuses to start while the
other one runs, or while the other one's nodes are still there.  Each function here answers None
(go ahead) or the reason to refuse, from what was read.
"""

from __future__ import annotations

from datetime import datetime

from k8s import node as nodes_
from k8s.keys import CA_STATUS, FAKE_CA_FIELD_MANAGER, FAKE_CA_LEASE, MANAGED_LABEL, REAL_CA_LEASE, SYSTEM_NAMESPACE
from k8s.objects import deleting, labels, meta, name, parse_time

STATUS_FRESH_SECONDS = 60.0    # a status ConfigMap updated this recently means a real CA is looping

FAKE_ALIVE = (f"the fake autoscaler is running (its heartbeat Lease {SYSTEM_NAMESPACE}/{FAKE_CA_LEASE} is fresh); "
              "stop it first")
REAL_ALIVE = (f"the real Cluster Autoscaler is running (`tau-demo real-ca`, heartbeat Lease "
              f"{SYSTEM_NAMESPACE}/{REAL_CA_LEASE}); stop it first")


def fake_nodes(nodes: list[dict]) -> list[str]:
    """Nodes the fake autoscaler made (its managed label)."""
    return sorted(name(n) for n in nodes if labels(n).get(MANAGED_LABEL) == "true" and not deleting(n))


def real_nodes(nodes: list[dict]) -> list[str]:
    """Pool nodes the fake did not make: the real CA's (left behind if it was killed with SIGKILL)."""
    return sorted(name(n) for n in nodes if nodes_.pool_of(n) and labels(n).get(MANAGED_LABEL) != "true"
                  and not deleting(n))


def status_age(cm: dict | None, now: datetime) -> float | None:
    """Seconds since the real CA last wrote its status ConfigMap (from managedFields), None if unknown.
    The fake writes the same ConfigMap (as field manager fake-ca): its writes do not count."""
    fields = [f for f in meta(cm).get("managedFields") or [] if isinstance(f, dict)]
    if fields and all(f.get("manager") == FAKE_CA_FIELD_MANAGER for f in fields):
        return None
    times = [parse_time(f.get("time")) for f in fields if f.get("manager") != FAKE_CA_FIELD_MANAGER]
    times = [t for t in times if t is not None] or [parse_time(meta(cm).get("creationTimestamp"))]
    latest = max((t for t in times if t is not None), default=None)
    return (now - latest).total_seconds() if latest else None


def fake_nodes_left(nodes: list[dict]) -> str | None:
    """The real CA's refusal while the fake's nodes are still there (it would adopt them)."""
    left = fake_nodes(nodes)
    if left:
        return (f"nodes of the fake autoscaler are still there ({', '.join(left)}); the real CA would adopt them. "
                f"Wait for the fake's scale-down or delete them: kubectl delete nodes -l {MANAGED_LABEL}=true")
    return None


def status_fresh(cm: dict | None, now: datetime) -> str | None:
    """The fake's refusal while a real CA keeps writing its status ConfigMap (None: no ConfigMap, or stale)."""
    age = status_age(cm, now)
    if age is not None and age < STATUS_FRESH_SECONDS:
        return (f"a real Cluster Autoscaler is running: it updated {CA_STATUS[0]}/{CA_STATUS[1]} "
                f"{age:.0f}s ago; stop it first")
    return None


def real_nodes_left(nodes: list[dict]) -> str | None:
    """The fake's refusal while a real CA's nodes are still there (it was stopped without its clean-up)."""
    left = real_nodes(nodes)
    if left:
        return (f"nodes of a real Cluster Autoscaler are still there ({', '.join(left)}): it was stopped without "
                f"its clean-up (SIGKILL?). Delete them: kubectl delete nodes {' '.join(left)}")
    return None
