"""Scheduling predicates on plain Node and Pod objects (pure): node selectors, required node affinity,
taints and tolerations, resource demand against free capacity, and which existing nodes are usable."""

from __future__ import annotations

from typing import Any

from k8s import node as nodes_
from k8s.objects import deleting as is_deleting
from k8s.objects import labels as labels_of
from k8s.objects import name as obj_name
from k8s.quantity import parse_quantity

from .request import PodSet, add_requests, is_int, pod_requests

PODS = "pods"                    # every pod uses 1 of the node's "pods" allocatable
_ONE_POD = 1000                  # in milli-units

_TERMINAL_PHASES = ("Succeeded", "Failed")
_SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")


def _ready(node: dict) -> bool:
    return nodes_.ready(node)


def _requirement_matches(r: dict, value: str | None) -> bool:
    """One NodeSelectorRequirement against a label (or field) value; None when absent."""
    op, values = r.get("operator"), r.get("values") or []
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt"):
        if value is None or not is_int(value) or len(values) != 1 or not is_int(values[0]):
            return False
        return int(value) > int(values[0]) if op == "Gt" else int(value) < int(values[0])
    return False


def _term_matches(term: dict, labels: dict, name: str) -> bool:
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False             # an empty term matches no node (Kubernetes semantics)
    return (all(_requirement_matches(r, labels.get(r.get("key"))) for r in exprs)
            and all(_requirement_matches(r, name if r.get("key") == "metadata.name" else None) for r in fields))


def tolerates(toleration: dict, taint: dict) -> bool:
    """Kubernetes Toleration.ToleratesTaint."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def _taint_str(t: dict) -> str:
    value = t.get("value") or ""
    return f"{t.get('key')}{'=' + value if value else ''}:{t.get('effect')}"


def selector_mismatch(ps: PodSet, node: dict) -> str | None:
    """Why the pod's nodeSelector, required node affinity or tolerations exclude `node`; None if they don't."""
    labels = labels_of(node)
    for k, v in ps.node_selector.items():
        if labels.get(k) != v:
            have = labels.get(k)
            return f"nodeSelector {k}={v} does not match ({k}={have})" if have is not None \
                else f"nodeSelector {k}={v} does not match (no {k} label)"
    if ps.required_terms and not any(_term_matches(t, labels, obj_name(node)) for t in ps.required_terms):
        return "required node affinity does not match"
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in _SCHEDULING_EFFECTS and not any(tolerates(t, taint) for t in ps.tolerations):
            return f"taint {_taint_str(taint)} is not tolerated"
    return None


def demand_of(ps: PodSet) -> dict[str, int]:
    """What one pod of `ps` takes from a node: its requests and one of the node's pod slots
    (a container cannot request "pods", so the slot is all there is of it)."""
    return {**ps.requests, PODS: _ONE_POD}


def shortfall(demand: dict[str, int], free: dict[str, int]) -> tuple[str, int, int] | None:
    """The first resource (by name) the pod needs more of than `free` has, as (resource, need, have)."""
    for res in sorted(demand):
        if demand[res] > 0 and demand[res] > free.get(res, 0):
            return res, demand[res], free.get(res, 0)
    return None


def parse_resources(values: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for res, qty in (values or {}).items() if isinstance(values, dict) else ():
        try:
            out[res] = parse_quantity(qty)
        except ValueError:
            out[res] = 0          # the API server validated it; an unreadable value offers nothing
    return out


def subtract(free: dict[str, int], demand: dict[str, int]) -> None:
    for res, v in demand.items():
        free[res] = free.get(res, 0) - v


def eligible_nodes(nodes: list[dict]) -> list[dict]:
    """Ready, schedulable, not deleting; sorted by name."""
    out = []
    for n in nodes:
        if not isinstance(n, dict) or not obj_name(n) or is_deleting(n) or not _ready(n):
            continue
        if (n.get("spec") or {}).get("unschedulable"):
            continue
        out.append(n)
    return sorted(out, key=obj_name)


def free_capacity(nodes: list[dict], pods: list[dict]) -> dict[str, dict[str, int]]:
    """Node name -> allocatable minus the requests of the live pods bound to it."""
    free = {obj_name(n): parse_resources((n.get("status") or {}).get("allocatable")) for n in nodes}
    for p in pods:
        if not isinstance(p, dict):
            continue
        node = (p.get("spec") or {}).get("nodeName")
        if node not in free or (p.get("status") or {}).get("phase") in _TERMINAL_PHASES:
            continue
        try:
            req = pod_requests(p.get("spec") or {})
        except ValueError:
            req = {}              # the API server validated it; count it as a pod without requests
        subtract(free[node], add_requests(req, {PODS: _ONE_POD}))
    return free
