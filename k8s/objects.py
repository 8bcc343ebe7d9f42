"""Plain-object helpers for Kubernetes objects as dicts (no I/O): accessors, conditions, timestamps.

Every pure module reads objects through these, so a malformed or partial object (a field
missing, null or of the wrong type) reads as empty instead of raising.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

Obj = dict[str, Any]


def _part(obj: Obj | None, key: str) -> Obj:
    v = obj.get(key) if isinstance(obj, dict) else None
    return v if isinstance(v, dict) else {}


def meta(obj: Obj | None) -> Obj:
    v = obj.get("metadata") if isinstance(obj, dict) else None      # _part written out: the most asked of all
    return v if isinstance(v, dict) else {}


def spec(obj: Obj | None) -> Obj:
    return _part(obj, "spec")


def status(obj: Obj | None) -> Obj:
    return _part(obj, "status")


def annotations(obj: Obj | None) -> dict[str, str]:
    return meta(obj).get("annotations") or {}


def labels(obj: Obj | None) -> dict[str, str]:
    return meta(obj).get("labels") or {}


def name(obj: Obj | None) -> str:
    return meta(obj).get("name") or ""


def uid(obj: Obj | None) -> str:
    return meta(obj).get("uid") or ""


def condition(obj: Obj | None, ctype: str) -> Obj | None:
    """The status condition of type `ctype`, or None.  (status() written out: the autoscaler's loop asks this
    about a thousand times a loop.)"""
    st = obj.get("status") if isinstance(obj, dict) else None
    for c in (st.get("conditions") if isinstance(st, dict) else None) or ():
        if isinstance(c, dict) and c.get("type") == ctype:
            return c
    return None


def is_true(obj: Obj | None, ctype: str) -> bool:
    c = condition(obj, ctype)
    return c is not None and c.get("status") == "True"


def deleting(obj: Obj | None) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def name_of(obj: Obj) -> str:
    """"namespace/name" (or "name" for cluster-scoped objects)."""
    md = meta(obj)
    return f"{md['namespace']}/{md.get('name', '?')}" if md.get("namespace") else md.get("name", "?")


def revision(obj: Obj | None) -> int:
    """The object's resourceVersion as a number: opaque to clients, but etcd's revision, one counter across
    every kind, so it orders writes seen on different watches; unreadable ones sort first (0)."""
    try:
        return int(meta(obj).get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


def owned_by(obj: Obj | None, owner_uid: str, controller: bool = True) -> bool:
    return bool(owner_uid) and any(r.get("uid") == owner_uid and (r.get("controller") or not controller)
                                   for r in meta(obj).get("ownerReferences") or [])


# ---------------------------------------------------------------------------- timestamps

def utcnow() -> datetime:
    """Now, in UTC (the controllers' clock)."""
    return datetime.now(timezone.utc)


def parse_time(text: str | None) -> datetime | None:
    """An RFC 3339 timestamp as written by the apiserver (with or without fraction), or None."""
    if not text or not isinstance(text, str):
        return None
    try:
        t = datetime.fromisoformat(text)          # Python >= 3.11 reads "Z" itself
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def format_time(t: datetime, micro: bool = False) -> str:
    """RFC 3339 in UTC: seconds (metav1.Time, e.g. condition times) or microseconds (metav1.MicroTime)."""
    t = t.astimezone(timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def created_at(obj: Obj | None) -> datetime | None:
    return parse_time(meta(obj).get("creationTimestamp"))


def transition_time(obj: Obj | None, ctype: str) -> datetime | None:
    """lastTransitionTime of the condition of type `ctype`, or None."""
    return parse_time((condition(obj, ctype) or {}).get("lastTransitionTime"))


def seconds_since(t: datetime | None, now: datetime) -> float | None:
    return None if t is None else (now - t).total_seconds()
