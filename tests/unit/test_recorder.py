"""The recorder's cleanup fact (scenarios/recorder.py), over plain samples: a Job's versions and the polls
that found no Job."""

from __future__ import annotations

from datetime import datetime, timezone

from demo.jobs.observe import Snapshot
from demo.k8s.keys import CLEANUP_AFTER_ANNOTATION
from scenarios.recorder import Recorder

DUE = datetime(2026, 11, 29, 12, 0, 10, tzinfo=timezone.utc)


def armed_job() -> dict:
    return {"metadata": {"name": "train", "uid": "u1",
                         "annotations": {CLEANUP_AFTER_ANNOTATION: "2026-11-29T12:00:10.000000Z"}}}


def recorded(*samples: tuple[float, dict | None]) -> Recorder:
    rec = Recorder(None, "train", None)          # not entered: no polling thread
    rec.samples = [(DUE.timestamp() + dt, Snapshot(job, None, [], [], [])) for dt, job in samples]
    rec.job_uid = "u1"
    return rec


def test_polls_from_before_the_job_was_created_are_not_its_deletion():
    rec = recorded((-15.0, None), (-14.0, armed_job()), (0.5, None))
    assert rec.cleaned_up_after_ttl() == (True, "deleted +0.5s after the cleanup time it was armed with")


def test_a_deletion_before_the_cleanup_time_is_reported():
    rec = recorded((-15.0, None), (-14.0, armed_job()), (-3.0, None))
    assert rec.cleaned_up_after_ttl() == (False, "deleted -3.0s after the cleanup time it was armed with")


def test_a_job_never_seen_gone_is_not_cleaned_up():
    rec = recorded((-15.0, None), (-14.0, armed_job()), (1.0, armed_job()))
    assert rec.cleaned_up_after_ttl() == (False, "cleanup armed: True, Job deleted: False")
