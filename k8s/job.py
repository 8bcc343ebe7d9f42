"""The checks on a batch/v1 Job, in one place: finished or not, suspended, how many pods it runs at once, and
the marks the admission deadline leaves on it (mirror, cleanup time).  Pure."""

from __future__ import annotations

from datetime import datetime

from .keys import ADMISSION_TIMEOUT, CLEANUP_AFTER_ANNOTATION, JOB_COMPLETE, JOB_FAILED, TERMINAL_REASON_ANNOTATION
from .objects import Obj, annotations, is_true, parse_time, spec


def outcome(job: Obj | None) -> str | None:
    """"succeeded" / "failed" from the Job's Complete / Failed conditions, else None."""
    if is_true(job, JOB_COMPLETE):
        return "succeeded"
    if is_true(job, JOB_FAILED):
        return "failed"
    return None


def suspended(job: Obj | None) -> bool:
    return spec(job).get("suspend") is True


def started(job: Obj | None) -> bool:
    """Unsuspended (Kueue unsuspends a managed Job only once its Workload is admitted)."""
    return job is not None and spec(job).get("suspend") is False


def parallelism(job: Obj | None) -> int:
    """How many pods the Job runs at once: spec.parallelism (default 1), capped by completions."""
    s = spec(job)
    par = s.get("parallelism")
    par = 1 if par is None else int(par)
    comp = s.get("completions")
    if comp is not None:
        par = min(par, int(comp))
    return max(par, 1)


def mirrored(job: Obj | None) -> bool:
    """The admission deadline's timeout is mirrored on the Job (demo.deadline.protocol step 2)."""
    return annotations(job).get(TERMINAL_REASON_ANNOTATION) == ADMISSION_TIMEOUT


def cleanup_after(job: Obj | None) -> datetime | None:
    """When the armed cleanup may delete the Job (step 3), or None."""
    return parse_time(annotations(job).get(CLEANUP_AFTER_ANNOTATION))
