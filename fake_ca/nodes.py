"""The nodes this fake makes, as VMs that boot (pure).

Like the kwok cloud provider, a scale-up creates the Node objects at once; unlike it (and like a
real cloud), each new node stays NotReady with the not-ready taint until its VM has booted: the
pool's bootSeconds (or the request's fakeCABootSeconds) after creation, recorded on the node as
an absolute time so that restarts of the fake or of KWOK change nothing.  KWOK's node-initialize
stage makes it Ready at that time; the kube-controller-manager lifts the taint.

A node that is not Ready within --max-node-provision-time (real: 15m) is removed and its group
backs off (clusterstate: "scale-up timed out"); the request it was made for stays Provisioned=True,
as with the real autoscaler.  For planning, a booting node counts as upcoming capacity: the real
autoscaler puts upcoming nodes into its snapshot as template placeholders.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import datetime, timedelta

from k8s import node as nodes_
from k8s.duration import go_duration
from k8s.keys import MANAGED_LABEL, NEVER_BOOTS, NODE_READY, NOT_READY_TAINT, POOL_LABEL
from k8s.objects import annotations, created_at, deleting, format_time, labels, name

from .conditions import MSG_SCALE_UP_TIMED_OUT
from k8s.duration import FOREVER


def boots_at(now: datetime, boot_seconds: float) -> str | None:
    """The boots-at annotation for a node created now: None (Ready at once), a time, or "never"."""
    if boot_seconds <= 0:
        return None
    if boot_seconds == FOREVER:
        return NEVER_BOOTS
    return format_time(now + timedelta(seconds=boot_seconds))


def managed(node: dict) -> bool:
    return labels(node).get(MANAGED_LABEL) == "true" and not deleting(node)


def booting(node: dict) -> bool:
    """A node this fake made whose VM has not come up yet."""
    return managed(node) and not nodes_.ready(node)


def as_upcoming(node: dict) -> dict:
    """A booting node as the autoscaler's snapshot sees it: the template it will become (Ready, untainted)."""
    n = copy.deepcopy(node)
    taints = [t for t in (n.get("spec") or {}).get("taints") or [] if t.get("key") != NOT_READY_TAINT]
    n.setdefault("spec", {})["taints"] = taints
    status = n.setdefault("status", {})
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != NODE_READY] + [
        {"type": NODE_READY, "status": "True", "reason": "Upcoming"}]
    return n


def snapshot_nodes(nodes: list[dict]) -> list[dict]:
    """The nodes the planner sees: live nodes, booting ones as upcoming placeholders."""
    return [as_upcoming(n) if booting(n) else n for n in nodes if not deleting(n)]


@dataclass(frozen=True)
class TimedOut:
    pool: str
    nodes: tuple[str, ...]
    why: str                 # the log line
    error_message: str       # the status ConfigMap's, as clusterstate.go writes it


def timed_out(nodes: list[dict], now: datetime, max_provision_seconds: float) -> list[TimedOut]:
    """Booting nodes older than --max-node-provision-time, grouped by pool (oldest first).  As in
    clusterstate (ExpectedAddTime Before now), a node exactly that old has not timed out yet."""
    late: dict[str, list[tuple[datetime, str]]] = {}
    for n in nodes:
        if not booting(n):
            continue
        created = created_at(n)
        if created is None or (now - created).total_seconds() <= max_provision_seconds:
            continue
        late.setdefault(labels(n).get(POOL_LABEL, "?"), []).append((created, name(n)))
    out = []
    for pool, items in sorted(late.items()):
        names = tuple(n for _, n in sorted(items))
        after = go_duration((now - min(items)[0]).total_seconds())
        out.append(TimedOut(pool, names, f"{len(names)} node(s) of {pool} did not become Ready within "
                                         f"{max_provision_seconds:.0f}s (--max-node-provision-time): removing them",
                            MSG_SCALE_UP_TIMED_OUT.format(group=pool, after=after)))
    return out
