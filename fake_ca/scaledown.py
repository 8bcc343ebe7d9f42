"""Scale-down (pure): which nodes this fake made are unneeded, for how long, and which may go."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable

from k8s.keys import FAILED, MANAGED_LABEL, PROVISIONED, PROVREQ_UID_ANNOTATION, TO_BE_DELETED_TAINT, UNNEEDED_ANNOTATION
from k8s.objects import annotations, is_true, labels, parse_time, seconds_since, spec

from .booking import books
from .nodes import booting
from k8s.pools import Pool, pool_of_node


# The real CA's --max-scale-down-parallelism (10): nodes it deletes at once, those under way included
# (core/scaledown/budgets/budgets.go CropNodes).
SCALE_DOWN_PARALLELISM = 10


def unneeded_for(node: dict, now: datetime) -> float | None:
    """Seconds since the node's scale-down timer started, None when it is not running."""
    return seconds_since(parse_time(annotations(node).get(UNNEEDED_ANNOTATION)), now)


def tainted_for(node: dict, now: datetime) -> float | None:
    """Seconds since the node was tainted ToBeDeletedByClusterAutoscaler (its value: unix seconds, as the real
    autoscaler writes it), None when it is not; one whose value is no time as tainted long enough."""
    for t in spec(node).get("taints") or []:
        if isinstance(t, dict) and t.get("key") == TO_BE_DELETED_TAINT:
            value = t.get("value")
            return max(0.0, now.timestamp() - int(value)) if isinstance(value, str) and value.isdigit() else math.inf
    return None


def taint_value(now: datetime) -> str:
    return str(int(now.timestamp()))


@dataclass
class ScaleDown:
    mark: list[str] = field(default_factory=list)       # start the unneeded timer (annotation)
    clear: list[str] = field(default_factory=list)      # node is needed again
    taint: list[str] = field(default_factory=list)      # deletion starts: taint ToBeDeletedByClusterAutoscaler
    untaint: list[str] = field(default_factory=list)    # a tainted node is needed again
    delete: list[str] = field(default_factory=list)
    why: dict[str, str] = field(default_factory=dict)   # every node of `delete`: why it goes (its log line)


def _busy(node_name: str, pods: list[dict]) -> bool:
    for p in pods:
        if (p.get("spec") or {}).get("nodeName") != node_name:
            continue
        if (p.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        if any(r.get("kind") == "DaemonSet" for r in p["metadata"].get("ownerReferences") or []):
            continue
        return True
    return False


def scale_down(nodes: list[dict], pods: list[dict], provreqs: dict[str, dict], pools: list[Pool],
               now: datetime, unneeded_seconds: float,
               booked: Callable[[], set[str]] = frozenset, delete_delay: float = 0.0,
               cooldown: bool = False, parallelism: int = SCALE_DOWN_PARALLELISM) -> ScaleDown:
    """Nodes this fake created are kept while their request's booking lasts (or while it is
    still being provisioned), and while booked pods of any request occupy them (`booked()`:
    planner.booked_nodes, as the real scale-down planner sees booked pods in its snapshot; asked
    only once a node is otherwise unneeded, since placing every booked pod is the costly part);
    afterwards a node with no running non-daemon pods for longer than `unneeded_seconds` is deleted
    (core/scaledown/unneeded: since + unneeded time Before now), never below the pool's min: like the real
    actuator, with `delete_delay` (--node-delete-delay-after-taint) first tainted ToBeDeletedByClusterAutoscaler
    and deleted once tainted that long.  Nodes still booting are not candidates: --max-node-provision-time
    deals with them.  In `cooldown` (--scale-down-delay-after-add after a scale-up: core/static_autoscaler.go
    isScaleDownInCooldown) no deletion starts: the unneeded timers still run and a deletion already started (its
    node tainted) goes on, as the real actuator's does.  At most `parallelism` deletions are under way at once
    (those started before, their nodes tainted, count): the rest wait for a later loop."""
    out = ScaleDown()
    occupied: set[str] | None = None
    size: dict[str, int] = {}
    managed = [n for n in nodes if labels(n).get(MANAGED_LABEL) == "true"
               and not n["metadata"].get("deletionTimestamp")]
    for n in managed:
        p = pool_of_node(n, pools)
        if p:
            size[p.name] = size.get(p.name, 0) + 1
    budget = parallelism - sum(1 for n in managed if tainted_for(n, now) is not None)
    for n in sorted(managed, key=lambda n: n["metadata"]["name"]):
        name = n["metadata"]["name"]
        ann = annotations(n)
        pr = provreqs.get(ann.get(PROVREQ_UID_ANNOTATION))
        protected = pr is not None and not is_true(pr, FAILED) and (books(pr) or not is_true(pr, PROVISIONED))
        needed = protected or _busy(name, pods) or booting(n)
        if not needed:
            occupied = booked() if occupied is None else occupied
            needed = name in occupied
        since = unneeded_for(n, now)
        tainted = tainted_for(n, now)
        if needed:
            if UNNEEDED_ANNOTATION in ann:
                out.clear.append(name)
            if tainted is not None:
                out.untaint.append(name)
            continue
        if since is None:
            out.mark.append(name)
            continue
        p = pool_of_node(n, pools)
        if since > unneeded_seconds:
            if p and size[p.name] <= p.min_nodes:
                continue
            starts = tainted is None
            if starts and (cooldown or budget <= 0):
                continue
            if p:
                size[p.name] -= 1
            if starts:
                budget -= 1
            if delete_delay > 0 and starts:
                out.taint.append(name)
            elif tainted is None or tainted >= delete_delay:
                out.delete.append(name)
                out.why[name] = f"unneeded for {since:.0f}s (no running pods, booking over)" + (
                    f", tainted {TO_BE_DELETED_TAINT} {tainted:.0f}s ago" if tainted is not None else "")
    return out
