"""Plain-object helpers for Kubernetes objects as dicts: no I/O, shared by every pure module."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def annotations(obj: Obj | None) -> dict[str, str]:
    return ((obj or {}).get("metadata") or {}).get("annotations") or {}


def labels(obj: Obj | None) -> dict[str, str]:
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


def condition(obj: Obj | None, ctype: str) -> Obj | None:
    """The status condition of type `ctype`, or None."""
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def is_true(obj: Obj | None, ctype: str) -> bool:
    c = condition(obj, ctype)
    return c is not None and c.get("status") == "True"


def deleting(obj: Obj | None) -> bool:
    return bool(((obj or {}).get("metadata") or {}).get("deletionTimestamp"))


def name_of(obj: Obj) -> str:
    md = obj.get("metadata", {})
    return f"{md['namespace']}/{md['name']}" if md.get("namespace") else md.get("name", "?")
