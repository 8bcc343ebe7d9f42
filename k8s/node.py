"""The checks on a Node, in one place: which node pool it belongs to, the pool's live nodes, and whether a
pod can use it (Ready, the not-ready taint gone).  Pure."""

from __future__ import annotations

from .keys import NODE_READY, NOT_READY_TAINT, POOL_LABEL
from .objects import Obj, deleting, is_true, labels, spec


def pool_of(node: Obj | None) -> str | None:
    """The node pool (the kwok provider's node group) a Node belongs to, by its label; None for no pool."""
    return labels(node).get(POOL_LABEL) or None


def live(node: Obj | None) -> bool:
    return isinstance(node, dict) and not deleting(node)


def of_pool(nodes: list[Obj], pool: str) -> list[Obj]:
    """The pool's live nodes (not being deleted)."""
    return [n for n in nodes if live(n) and pool_of(n) == pool]


def ready(node: Obj | None) -> bool:
    return is_true(node, NODE_READY)


def usable(node: Obj | None) -> bool:
    """Ready and without the not-ready taint: the scheduler can place pods on it."""
    return ready(node) and not any(t.get("key") == NOT_READY_TAINT for t in spec(node).get("taints") or [])
