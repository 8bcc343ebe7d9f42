"""The checks on an autoscaling.x-k8s.io/v1 ProvisioningRequest, in one place: which Workload's it is, its
attempt number in Kueue's name `<workload>-<check>-<attempt>`, its true conditions.  Pure."""

from __future__ import annotations

import re
from typing import Iterable

from .keys import CHECK_NAME, PROVREQ_CONDITIONS
from .objects import Obj, is_true, meta, name, owned_by


def attempt(pr: Obj | None, check: str | None = CHECK_NAME) -> int | None:
    """The attempt number of a request named `<workload>-<check>-<attempt>`, or None.  check=None: of any
    check (the trailing `-<number>`), for a reader that does not know the check's name (the autoscaler)."""
    prefix = "" if check is None else f"-{re.escape(check)}"
    m = re.search(rf"{prefix}-([0-9]+)$", meta(pr).get("name") or "")
    return int(m.group(1)) if m else None


def belongs_to(pr: Obj | None, workload: Obj | None, check: str) -> bool:
    """Kueue made it for this Workload: the Workload owns it, or its name has the `<workload>-<check>-` prefix."""
    wl_name, wl_uid = meta(workload).get("name"), meta(workload).get("uid")
    return owned_by(pr, wl_uid or "", controller=False) or (
        bool(wl_name) and name(pr).startswith(f"{wl_name}-{check}-"))


def of_workload(workload: Obj | None, provreqs: Iterable[Obj], check: str = CHECK_NAME) -> list[Obj]:
    """The Workload's requests for `check`, oldest attempt first.  Without a Workload, every request given."""
    mine = [pr for pr in provreqs if workload is None or belongs_to(pr, workload, check)]

    def key(pr: Obj) -> tuple[int, str, str]:
        n = attempt(pr, check)
        return (n if n is not None else -1, meta(pr).get("creationTimestamp") or "", meta(pr).get("name") or "")
    return sorted(mine, key=key)


def _owning(pr: Obj | None, ctype: str) -> list[dict]:
    key = 'k:{"type":"%s"}' % ctype
    return [f for f in meta(pr).get("managedFields") or [] if isinstance(f, dict)
            and key in (((f.get("fieldsV1") or {}).get("f:status") or {}).get("f:conditions") or {})]


def condition_writers(pr: Obj | None, ctype: str) -> list[str]:
    """Who wrote the request's `ctype` condition as it reads now: the field managers (managedFields) that own
    status.conditions[type=ctype], sorted.  An update moves a field to the manager that last set it."""
    return sorted({f.get("manager") or "?" for f in _owning(pr, ctype)})


def condition_owners(pr: Obj | None, ctype: str) -> list[str]:
    """condition_writers with the way each wrote it: "cluster-autoscaler/Apply", "fake-ca/Update", sorted."""
    return sorted({f"{f.get('manager') or '?'}/{f.get('operation') or '?'}" for f in _owning(pr, ctype)})


def true_conditions(pr: Obj | None) -> list[str]:
    """The condition types that are True, in display order (Accepted, Provisioned, Failed, ...)."""
    return [t for t in PROVREQ_CONDITIONS if is_true(pr, t)]
