"""What is now: the one way a story reads the cluster live (`ctx.live`).

A story reads what happened from a Tape (the Recorder, `toolbox.changes`, a Kueue spec's `SpecEnv`, MultiKueue's
`cluster_tape`) and what is now from here: an object, a list, a Job's snapshot (demo/jobs/observe.py), whether an
object is gone, and waits on them.  A live read is for what must be current before a write that depends on it,
or for the state a story reports at its end; it never stands in for the past.  Writes stay on `ctx.k`.

`caught_up(tape_versions, obj)` joins the two: a story that read (or wrote) a version live and then asks the tape
about it waits until the watch delivered that resourceVersion, never a fixed grace.
tests/unit/test_story_reads.py keeps every story on this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from demo.jobs import observe
from demo.jobs.snapshot import Snapshot
from k8s.client import Kube
from k8s.objects import Obj, meta, revision
from k8s.resources import Resource


def holds_version(versions: Iterable[tuple[float, Obj]], rv: int) -> bool:
    """Has the watch delivered a version of the object at resourceVersion `rv` or later?"""
    return any(revision(o) >= rv for _, o in versions)


@dataclass(frozen=True)
class LiveReads:
    k: Kube

    def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None:
        """The object as it is now, or None when there is none."""
        return self.k.get_or_none(res, name, namespace)

    def must(self, res: Resource, name: str, namespace: str | None = None) -> Obj:
        """The object as it is now; NotFound when there is none (the story cannot go on without it)."""
        return self.k.get(res, name, namespace)

    def list(self, res: Resource, namespace: str | None = None, selector: str | None = None,
             fields: str | None = None) -> list[Obj]:
        """Every object of the kind now (in `namespace`, matching the label `selector` and the field selector
        `fields`)."""
        return self.k.list(res, namespace, label_selector=selector, field_selector=fields)[0]

    def gone(self, res: Resource, name: str, namespace: str | None = None) -> bool:
        return self.get(res, name, namespace) is None

    def snapshot(self, namespace: str, job: str, job_uid: str | None = None) -> Snapshot:
        """One Job's objects read now: it, its Workload, requests, pods and the nodes (observe.snapshot)."""
        return observe.snapshot(self.k, namespace, job, job_uid)

    def workload_of(self, job: Obj) -> Obj | None:
        """The Job's Workload read now (the one it owns: k8s/workload.of_job)."""
        return observe.workload_for(self.k, job)


def caught_up(versions: Callable[[], Iterable[tuple[float, Obj]]], obj: Obj, wait) -> None:
    """Wait (with the story's `wait(pred, timeout, what)`) until the tape's `versions()` of an object hold the
    version `obj` is at: what a live read or a write's answer showed has reached the watch."""
    rv = revision(obj)
    wait(lambda: holds_version(versions(), rv), 30, f"the watch to deliver resourceVersion {rv} of {meta(obj)['name']}")
