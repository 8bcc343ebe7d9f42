"""The protocol's invariants over an observer's history of one Job (demo.deadline.invariants)."""

from __future__ import annotations

import copy
from datetime import timedelta

from test_deadline import ADMITTED, AFTER, COMMITTED, RESERVED, job

from demo.deadline import protocol as dl
from demo.deadline.invariants import History, violations

WL = "job-train-abcde"


def committed_at(t):
    w = copy.deepcopy(COMMITTED)
    w["metadata"]["annotations"][dl.DECISION_TIME_ANNOTATION] = dl.commit_patch(t)["metadata"]["annotations"][
        dl.DECISION_TIME_ANNOTATION]
    return w


def mirrored_job(t, armed_at=None, ttl=5):
    j = job(**dl.mirror_patch(WL, t)["metadata"]["annotations"])
    if armed_at is not None:
        j["metadata"]["annotations"].update(dl.arm_patch(armed_at, ttl)["metadata"]["annotations"])
    return j


def the_protocol_path():
    """What the committed protocol writes, in order: commit, mirror, arm, delete after the TTL."""
    t = AFTER
    return History("train", jobs=[job(), mirrored_job(t + timedelta(seconds=0.1)),
                                  mirrored_job(t + timedelta(seconds=0.1), armed_at=t + timedelta(seconds=0.2))],
                   workloads=[RESERVED, committed_at(t)], deleted_at=t + timedelta(seconds=5.3))


def test_the_protocol_path_breaks_nothing():
    assert violations(the_protocol_path(), expect_deleted=True) == []


def test_admission_that_wins_breaks_nothing():
    assert violations(History("train", [job()], [RESERVED, ADMITTED]), expect_deleted=True) == []


def test_admitted_and_committed_is_a_violation():
    h = History("train", [job()], [RESERVED, ADMITTED, committed_at(AFTER)])
    assert any("both Admitted and carrying a committed timeout" in v for v in violations(h))


def test_a_committed_timeout_that_never_reaches_the_job():
    h = History("train", [job()], [committed_at(AFTER)])
    assert violations(h) == ["train: committed timeout never mirrored to the Job"]


def test_a_mirror_without_a_commit_or_before_it():
    assert "train: Job mirrored without a committed timeout on its Workload" in violations(
        History("train", [mirrored_job(AFTER)], [RESERVED]))
    early = History("train", [mirrored_job(AFTER - timedelta(seconds=1))], [committed_at(AFTER)])
    assert violations(early) == ["train: mirrored before the decision was committed"]


def test_the_mirror_names_the_committed_workload():
    j = mirrored_job(AFTER)
    j["metadata"]["annotations"][dl.TERMINAL_WORKLOAD_ANNOTATION] = "job-train-other"
    assert violations(History("train", [j], [committed_at(AFTER)])) == [
        "train: the mirror names a Workload that carries no committed timeout"]


def test_cleanup_armed_without_the_mirror():
    j = job(**dl.arm_patch(AFTER, 5)["metadata"]["annotations"])
    assert "train: cleanup armed on a Job without the mirror" in violations(History("train", [j], [RESERVED]))


def test_each_step_written_once():
    h = the_protocol_path()
    h.workloads.append(committed_at(AFTER + timedelta(seconds=1)))
    h.jobs.append(mirrored_job(AFTER + timedelta(seconds=2), armed_at=AFTER + timedelta(seconds=3)))
    out = violations(h)
    assert "train: the decision was written 2 times" in out
    assert "train: the mirror was written 2 times" in out
    assert "train: cleanup was armed 2 times" in out


def test_cleanup_only_of_committed_timeouts_and_only_after_the_ttl():
    h = History("train", [job()], [RESERVED], deleted_at=AFTER)
    assert violations(h) == ["train: cleanup deleted a Job whose Workload carries no committed timeout"]
    h = History("train", [job()], [committed_at(AFTER)], deleted_at=AFTER + timedelta(seconds=1))
    assert "train: cleanup deleted a Job before the mirror and the cleanup time were written" in violations(h)
    h = the_protocol_path()
    h.deleted_at = AFTER + timedelta(seconds=1)
    assert violations(h) == ["train: cleanup deleted the Job 4.20s before its cleanup time"]
    h.deleted_at = dl.cleanup_after(h.jobs[-1])
    assert violations(h) == [], "deleted at its cleanup time exactly: not early"
    mirrored_never_armed = History("train", [job(), mirrored_job(AFTER + timedelta(seconds=0.1))],
                                   [RESERVED, committed_at(AFTER)], deleted_at=AFTER + timedelta(seconds=9))
    assert violations(mirrored_never_armed) == [
        "train: cleanup deleted a Job before the mirror and the cleanup time were written"]


def test_an_admitted_job_marked_terminal():
    h = History("train", [job(), mirrored_job(AFTER)], [RESERVED, ADMITTED], deleted_at=AFTER + timedelta(seconds=9))
    out = violations(h)
    assert "train: an admitted Job was marked terminal" in out
    assert "train: cleanup deleted a Job whose Workload carries no committed timeout" in out


def test_expect_deleted_flags_a_committed_job_that_cleanup_left():
    h = the_protocol_path()
    h.deleted_at = None
    assert violations(h) == []
    assert violations(h, expect_deleted=True) == ["train: committed and mirrored, but cleanup never deleted the Job"]
