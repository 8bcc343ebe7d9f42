"""The protocol's invariants, checked over what an observer saw of one Job and its Workload (pure).

An observer (a client-side watch, a poller) records every version of the Job and of its Workload
it saw, in order, and when the Job disappeared.  `violations` names every broken invariant:

- never both: a Workload that was Admitted never carries a committed timeout, and vice versa; an
  admitted Job is never marked terminal;
- committed => mirrored: a committed timeout reaches the owner Job (while the Job exists);
- the mirror only after the commit: the Job's terminal time is not before the Workload's decision
  time, and the mirror names the Workload whose decision it mirrors;
- cleanup armed only after the mirror: no version of the Job carries cleanup-after without the mirror;
- cleanup only of committed timeouts: a Job the controller deleted was mirrored, armed, past its
  cleanup time, and its Workload carried the committed timeout;
- each step written once: one decision time, one terminal time, one cleanup time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from k8s.keys import DECISION_TIME_ANNOTATION, TERMINAL_TIME_ANNOTATION, TERMINAL_WORKLOAD_ANNOTATION
from k8s.objects import annotations, meta, parse_time
from k8s.job import cleanup_after, mirrored
from k8s.workload import admission_won as admitted
from k8s.workload import committed_timeout


@dataclass
class History:
    """What was seen of one Job: its versions and its Workload's, in the order they were seen."""
    job: str
    jobs: list[dict] = field(default_factory=list)
    workloads: list[dict] = field(default_factory=list)
    deleted_at: datetime | None = None       # when the observer saw the Job go, if the controller deleted it


def violations(h: History, expect_deleted: bool = False) -> list[str]:
    """Every invariant `h` breaks, as sentences (empty: none).  With expect_deleted, a committed Job
    that cleanup has not deleted is a violation too (the observer waited past its cleanup time)."""
    out: list[str] = []
    was_admitted = any(admitted(w) for w in h.workloads)
    committed = [w for w in h.workloads if committed_timeout(w)]
    if was_admitted and committed:
        out.append(f"{h.job}: Workload both Admitted and carrying a committed timeout")
    marks = [j for j in h.jobs if mirrored(j)]
    if committed and not was_admitted and not marks:
        out.append(f"{h.job}: committed timeout never mirrored to the Job")
    if marks and not committed:
        out.append(f"{h.job}: Job mirrored without a committed timeout on its Workload")
    if marks and was_admitted:
        out.append(f"{h.job}: an admitted Job was marked terminal")
    decided = _times(committed, DECISION_TIME_ANNOTATION)
    if len(decided) > 1:
        out.append(f"{h.job}: the decision was written {len(decided)} times")
    mirrored_at = _times(marks, TERMINAL_TIME_ANNOTATION)
    if len(mirrored_at) > 1:
        out.append(f"{h.job}: the mirror was written {len(mirrored_at)} times")
    if decided and mirrored_at and min(mirrored_at) < min(decided):
        out.append(f"{h.job}: mirrored before the decision was committed")
    names = {meta(w).get("name") for w in committed}
    if committed and any(annotations(j).get(TERMINAL_WORKLOAD_ANNOTATION) not in names for j in marks):
        out.append(f"{h.job}: the mirror names a Workload that carries no committed timeout")
    armed = [j for j in h.jobs if cleanup_after(j) is not None]
    if any(not mirrored(j) for j in armed):
        out.append(f"{h.job}: cleanup armed on a Job without the mirror")
    due = {cleanup_after(j) for j in armed}
    if len(due) > 1:
        out.append(f"{h.job}: cleanup was armed {len(due)} times")
    if h.deleted_at is not None:
        if not committed or was_admitted:
            out.append(f"{h.job}: cleanup deleted a Job whose Workload carries no committed timeout")
        elif not marks or not armed:
            out.append(f"{h.job}: cleanup deleted a Job before the mirror and the cleanup time were written")
        elif h.deleted_at < min(due):
            out.append(f"{h.job}: cleanup deleted the Job {(min(due) - h.deleted_at).total_seconds():.2f}s "
                       "before its cleanup time")
    elif expect_deleted and committed and not was_admitted:
        out.append(f"{h.job}: committed and mirrored, but cleanup never deleted the Job")
    return out


def _times(objs: list[dict], key: str) -> set[datetime]:
    return {t for t in (parse_time(annotations(o).get(key)) for o in objs) if t is not None}
