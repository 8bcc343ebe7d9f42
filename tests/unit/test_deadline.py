"""The deadline protocol's decisions, on plain objects shaped like the real cluster's."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone

import pytest

from demo.deadline import protocol as dl

T0 = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)


def job(deadline="60s", created=T0, **ann):
    a = {} if deadline is None else {dl.DEADLINE_ANNOTATION: deadline}
    a.update(ann)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "train", "namespace": "demo", "uid": "job-uid", "resourceVersion": "100",
                         "creationTimestamp": created.strftime("%Y-%m-%dT%H:%M:%SZ"), "annotations": a},
            "spec": {"suspend": True, "parallelism": 2}}


def workload(*conds, active=None, rv="200", **ann):
    w = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
         "metadata": {"name": "job-train-abcde", "namespace": "demo", "resourceVersion": rv,
                      "annotations": dict(ann),
                      "ownerReferences": [{"kind": "Job", "name": "train", "uid": "job-uid", "controller": True}]},
         "spec": {"queueName": "gpu-a100-8"},
         "status": {"conditions": [{"type": t, "status": s, "reason": r, "message": ""} for t, s, r in conds]}}
    if active is not None:
        w["spec"]["active"] = active
    return w


PENDING = workload(("QuotaReserved", "False", "Pending"))
RESERVED = workload(("QuotaReserved", "True", "QuotaReserved"))
ADMITTED = workload(("QuotaReserved", "True", "QuotaReserved"), ("Admitted", "True", "Admitted"))
FINISHED = workload(("Finished", "True", "Succeeded"))
EVICTED_RETRY = workload(("QuotaReserved", "False", "Pending"), ("Evicted", "True", "AdmissionCheck"))
COMMITTED = workload(("QuotaReserved", "True", "QuotaReserved"), active=False,
                     **{dl.DECISION_ANNOTATION: dl.TIMED_OUT})
AFTER = T0 + timedelta(seconds=63)
BEFORE = T0 + timedelta(seconds=20)


@pytest.mark.parametrize("wl", [PENDING, RESERVED, EVICTED_RETRY], ids=["pending", "quota-reserved", "evicted"])
def test_not_admitted_after_the_deadline_commits_at_the_read_resource_version(wl):
    d = dl.decide_workload(job(), wl, AFTER)
    assert d.action == "commit"
    assert d.resource_version == "200"
    assert "deadline passed 3.0s ago; Workload rv 200 not admitted; committing timeout" == d.why


@pytest.mark.parametrize("wl", [ADMITTED, FINISHED], ids=["admitted", "finished"])
def test_admission_wins_for_good(wl):
    for now in (BEFORE, AFTER, AFTER + timedelta(days=1)):
        assert dl.decide_workload(job(), wl, now).action == "none"
        assert dl.decide_owner(job(), wl, now).action == "none"


def test_before_the_deadline_waits_for_the_remaining_time():
    d = dl.decide_workload(job(), RESERVED, BEFORE)
    assert d.action == "wait" and d.after == pytest.approx(40)


def test_already_decided_is_not_committed_twice():
    assert dl.decide_workload(job(), COMMITTED, AFTER).action == "none"


@pytest.mark.parametrize("value", ["soon", "-5s", "0s", "", "5 minutes"])
def test_malformed_deadline_takes_no_action_and_says_why(value):
    d = dl.decide_workload(job(deadline=value), RESERVED, AFTER)
    assert d.action == "none"
    assert "malformed" in d.why and dl.DEADLINE_ANNOTATION in d.why


def test_missing_deadline_takes_no_action():
    assert dl.decide_workload(job(deadline=None), RESERVED, AFTER).why == "no admission deadline"


def test_workload_deactivated_by_kueue_is_not_ours_to_time_out():
    wl = workload(("Evicted", "True", "DeactivatedDueToAdmissionCheck"), active=False)
    assert dl.decide_workload(job(), wl, AFTER).action == "none"


def test_owner_is_never_written_before_the_commit():
    for wl in (PENDING, RESERVED, EVICTED_RETRY, None):
        assert dl.decide_owner(job(), wl, AFTER).action == "none"


def test_committed_timeout_is_mirrored_then_cleanup_armed_then_deleted():
    j = job()
    assert dl.decide_owner(j, COMMITTED, AFTER).action == "mirror"
    j["metadata"]["annotations"].update(dl.mirror_patch("job-train-abcde", AFTER)["metadata"]["annotations"])
    assert dl.decide_owner(j, COMMITTED, AFTER).action == "arm-cleanup"
    j["metadata"]["annotations"].update(dl.arm_patch(AFTER, 30)["metadata"]["annotations"])
    d = dl.decide_owner(j, COMMITTED, AFTER + timedelta(seconds=10))
    assert d.action == "wait" and d.after == pytest.approx(20)
    assert dl.decide_owner(j, COMMITTED, AFTER + timedelta(seconds=31)).action == "delete"


def test_interrupted_mirror_is_recovered():
    # committed on the Workload, controller died before the mirror: the next reconcile mirrors
    assert dl.decide_owner(job(), COMMITTED, AFTER + timedelta(hours=1)).action == "mirror"


def test_stale_mark_is_removed_when_the_workload_was_admitted():
    j = job(**dl.mirror_patch("job-train-abcde", AFTER)["metadata"]["annotations"],
            **dl.arm_patch(AFTER, 1)["metadata"]["annotations"])
    d = dl.decide_owner(j, ADMITTED, AFTER + timedelta(hours=1))
    assert d.action == "unmark" and "Admitted" in d.why
    assert set(dl.unmark_patch()["metadata"]["annotations"]) == set(dl.MIRROR_KEYS)
    assert all(v is None for v in dl.unmark_patch()["metadata"]["annotations"].values())


def test_cleanup_never_deletes_an_owner_whose_workload_lost_the_decision():
    j = job(**dl.mirror_patch("job-train-abcde", AFTER)["metadata"]["annotations"],
            **dl.arm_patch(AFTER, 1)["metadata"]["annotations"])
    for wl in (RESERVED, ADMITTED, PENDING):
        assert dl.decide_owner(j, wl, AFTER + timedelta(hours=1)).action == "unmark"


def test_committed_but_admitted_counts_as_admitted():
    wl = copy.deepcopy(ADMITTED)
    wl["metadata"]["annotations"][dl.DECISION_ANNOTATION] = dl.TIMED_OUT
    j = job(**dl.mirror_patch("job-train-abcde", AFTER)["metadata"]["annotations"])
    assert dl.decide_owner(j, wl, AFTER).action == "unmark"


def test_legacy_marks_first_and_cleans_up_an_admitted_job():
    j = job()
    assert dl.decide_legacy(j, RESERVED, AFTER).action == "mirror"
    j["metadata"]["annotations"].update(dl.mirror_patch("job-train-abcde", AFTER)["metadata"]["annotations"])
    assert dl.decide_legacy(j, ADMITTED, AFTER).action == "arm-cleanup"      # the bug: the Workload is Admitted
    j["metadata"]["annotations"].update(dl.arm_patch(AFTER, 5)["metadata"]["annotations"])
    d = dl.decide_legacy(j, ADMITTED, AFTER + timedelta(seconds=6))
    assert d.action == "delete" and "Admitted" in d.why


def test_commit_patch_sets_inactive_and_the_decision():
    p = dl.commit_patch(AFTER)
    assert p["spec"] == {"active": False}
    assert p["metadata"]["annotations"][dl.DECISION_ANNOTATION] == "timed-out"


def test_the_jobs_workload_is_the_newest_one_it_controls():
    old = workload(rv="1")
    old["metadata"].update(name="job-train-old", creationTimestamp="2026-11-29T12:00:00Z")
    new = workload(rv="2")
    new["metadata"].update(name="job-train-new", creationTimestamp="2026-11-29T12:05:00Z")
    stranger = workload(rv="3")
    stranger["metadata"].update(name="job-other", creationTimestamp="2026-11-29T12:09:00Z")
    stranger["metadata"]["ownerReferences"][0]["uid"] = "other-uid"
    assert dl.owned_workload([new, stranger, old], "job-uid")["metadata"]["name"] == "job-train-new"
    assert dl.owned_workload([stranger], "job-uid") is None
    assert dl.owned_workload([], "job-uid") is None


def test_after_a_conflict_the_first_live_retry_is_immediate_then_backs_off_to_a_second():
    assert [dl.conflict_backoff(n) for n in range(1, 8)] == [0.0, 0.05, 0.1, 0.2, 0.4, 0.8, 1.0]
