"""The deadline controller deciding on its informer caches, against an in-memory apiserver that
enforces resourceVersion preconditions: a stale cache can delay a decision, never weaken one."""

from __future__ import annotations

import copy
import logging
from datetime import timedelta

import pytest
from test_deadline import ADMITTED, AFTER, RESERVED, job

from demo.deadline import protocol as dl
from demo.deadline.controller import DeadlineController
from demo.k8s.errors import Conflict, NotFound
from demo.k8s.resources import JOB, WORKLOAD

KEY = "demo/train"
WL = "job-train-abcde"


class FakeApiserver:
    """get / list / merge patch / delete over plain objects, with resourceVersion and uid preconditions."""

    def __init__(self, *objs):
        self.objs: dict[tuple[str, str], dict] = {}
        self.rv = 1000
        self.writes: list[tuple] = []
        for res, o in objs:
            self.objs[(res.plural, o["metadata"]["name"])] = copy.deepcopy(o)

    def get_or_none(self, res, name, namespace=None):
        o = self.objs.get((res.plural, name))
        return copy.deepcopy(o) if o else None

    def list(self, res, namespace=None, label_selector=None, field_selector=None):
        return [copy.deepcopy(o) for (p, _), o in self.objs.items() if p == res.plural], str(self.rv)

    def patch(self, res, name, patch, namespace=None, resource_version=None, subresource=None):
        o = self.objs.get((res.plural, name))
        if o is None:
            raise NotFound(404, "NotFound", name)
        if resource_version and o["metadata"]["resourceVersion"] != resource_version:
            self.writes.append(("409", res.kind, name, resource_version))
            raise Conflict(409, "Conflict", "the object has been modified")
        _merge(o, patch)
        self.rv += 1
        o["metadata"]["resourceVersion"] = str(self.rv)
        self.writes.append(("patch", res.kind, name, resource_version))
        return copy.deepcopy(o)

    def delete(self, res, name, namespace=None, propagation="Background", uid=None, resource_version=None):
        o = self.objs.get((res.plural, name))
        if o is None:
            return False
        if (uid and o["metadata"]["uid"] != uid) or (resource_version and o["metadata"]["resourceVersion"]
                                                      != resource_version):
            raise Conflict(409, "Conflict", "precondition failed")
        del self.objs[(res.plural, name)]
        self.writes.append(("delete", res.kind, name, resource_version))
        return True

    def change(self, res, name, new: dict) -> dict:
        """Someone else (Kueue) writes a new version."""
        self.rv += 1
        o = copy.deepcopy(new)
        o["metadata"]["resourceVersion"] = str(self.rv)
        self.objs[(res.plural, name)] = o
        return copy.deepcopy(o)


def _merge(dst: dict, patch: dict) -> None:
    for k, v in patch.items():
        if v is None:
            dst.pop(k, None)
        elif isinstance(v, dict) and isinstance(dst.get(k), dict):
            _merge(dst[k], v)
        else:
            dst[k] = copy.deepcopy(v)


def controller(api: FakeApiserver, now=AFTER) -> DeadlineController:
    c = DeadlineController(api, namespace="demo", cleanup_ttl=30, clock=lambda: now)
    c.jobs.handle("SYNCED", {})
    c.workloads.handle("SYNCED", {})
    for (plural, _), o in api.objs.items():
        (c.jobs if plural == "jobs" else c.workloads).handle("ADDED", copy.deepcopy(o))
    return c


def settle(c: DeadlineController, n: int = 6) -> list:
    return [c.reconcile(KEY) for _ in range(n)]


def test_a_commit_decided_on_a_stale_cache_is_refused_then_admission_wins_on_the_live_read(caplog):
    api = FakeApiserver((JOB, job()), (WORKLOAD, RESERVED))
    c = controller(api)                                    # the cache holds the reserved Workload ...
    api.change(WORKLOAD, WL, ADMITTED)                     # ... Kueue has admitted it since
    with caplog.at_level(logging.INFO, logger="deadline"):
        settle(c)
    assert api.writes == [("409", "Workload", WL, "200")]  # the commit carried the rv it decided on
    assert not dl.committed_timeout(api.objs[("workloads", WL)])
    assert not dl.mirrored(api.objs[("jobs", "train")])
    assert "409 conflict" in caplog.text and "admission won" in caplog.text


def test_commit_then_mirror_then_arm_each_guarded_by_the_version_it_was_decided_on():
    api = FakeApiserver((JOB, job()), (WORKLOAD, RESERVED))
    c = controller(api)
    assert c.reconcile(KEY) == 0.0                         # committed; the owner steps come on the next turn
    assert api.writes == [("patch", "Workload", WL, "200")]
    after = c.reconcile(KEY)
    assert api.writes[1:] == [("patch", "Job", "train", "100"), ("patch", "Job", "train", "1002")]
    assert after == pytest.approx(30)                      # the cleanup TTL
    j = api.objs[("jobs", "train")]
    assert dl.mirrored(j) and dl.cleanup_after(j) is not None
    assert settle(c) == [pytest.approx(30)] * 6            # nothing more to write
    assert len(api.writes) == 3


def test_before_the_deadline_nothing_is_written_and_the_timer_is_urgent():
    api = FakeApiserver((JOB, job()), (WORKLOAD, RESERVED))
    c = controller(api, now=AFTER - timedelta(seconds=10))
    assert c.reconcile(KEY) is None
    assert api.writes == []
    assert c.queue._due[KEY][1] is True                   # the deadline timer fires into the urgent lane


def test_cleanup_deletes_only_when_a_live_read_agrees():
    committed = copy.deepcopy(RESERVED)
    committed["spec"]["active"] = False
    committed["metadata"]["annotations"].update(dl.commit_patch(AFTER)["metadata"]["annotations"])
    marked = job(**dl.mirror_patch(WL, AFTER)["metadata"]["annotations"],
                 **dl.arm_patch(AFTER, 30)["metadata"]["annotations"])
    later = AFTER + timedelta(seconds=31)
    api = FakeApiserver((JOB, marked), (WORKLOAD, committed))
    c = controller(api, now=later)
    api.change(WORKLOAD, WL, ADMITTED)                     # the cache still says "committed"
    c.reconcile(KEY)
    assert ("delete", "Job", "train", "100") not in api.writes
    assert api.writes == [("patch", "Job", "train", "100")]   # the live read found it Admitted: unmark
    assert not dl.mirrored(api.objs[("jobs", "train")])

    api = FakeApiserver((JOB, marked), (WORKLOAD, committed))
    c = controller(api, now=later)
    assert c.reconcile(KEY) is None
    assert api.writes == [("delete", "Job", "train", "100")]  # uid and resourceVersion preconditions


def test_a_job_write_that_conflicts_reads_live_and_does_not_write_twice():
    committed = copy.deepcopy(RESERVED)
    committed["metadata"]["annotations"].update(dl.commit_patch(AFTER)["metadata"]["annotations"])
    api = FakeApiserver((JOB, job()), (WORKLOAD, committed))
    c = controller(api)
    mirrored = job(**dl.mirror_patch(WL, AFTER)["metadata"]["annotations"])
    api.change(JOB, "train", mirrored)                     # an earlier incarnation already mirrored it
    c.reconcile(KEY)
    kinds = [w[0] for w in api.writes]
    assert kinds == ["409", "patch"]                       # refused mirror, then (live) arm only
    assert dl.cleanup_after(api.objs[("jobs", "train")]) is not None
