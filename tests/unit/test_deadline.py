"""The deadline protocol's decisions, on plain objects shaped like the real cluster's.

Every branch of decide_workload, decide_owner and decide_legacy has a case here that pins the
decision AND its reason (the exact `why` the controller logs), so a test cannot pass because a
different branch happened to return the same action.
"""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone

import pytest

from demo.deadline import protocol as dl
from demo.deadline.rule import DEFAULT_OUTER_FACTOR, DEFAULT_RULE, Bound, Cause, Waiting
from k8s import workload as workloads

T0 = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)
WL_NAME = "job-train-abcde"
DEADLINE_KEY = "tau-demo.io/admission-deadline"


def job(deadline="60s", created=T0, **ann):
    a = {} if deadline is None else {DEADLINE_KEY: deadline}
    a.update(ann)
    md = {"name": "train", "namespace": "demo", "uid": "job-uid", "resourceVersion": "100", "annotations": a}
    if created is not None:
        md["creationTimestamp"] = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": md, "spec": {"suspend": True, "parallelism": 2}}


def workload(*conds, active=None, rv="200", **ann):
    w = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
         "metadata": {"name": WL_NAME, "namespace": "demo", "resourceVersion": rv,
                      "annotations": dict(ann),
                      "ownerReferences": [{"kind": "Job", "name": "train", "uid": "job-uid", "controller": True}]},
         "spec": {"queueName": "gpu-a100-8"},
         "status": {"conditions": [{"type": t, "status": s, "reason": r, "message": ""} for t, s, r in conds]}}
    if active is not None:
        w["spec"]["active"] = active
    return w


def mirrored_job(workload_name=WL_NAME, armed_ttl=None, **kw):
    """A Job carrying the mirror of a committed timeout (and, with armed_ttl, an armed cleanup)."""
    ann = dict(dl.mirror_patch(workload_name, AFTER)["metadata"]["annotations"])
    if armed_ttl is not None:
        ann.update(dl.arm_patch(AFTER, armed_ttl)["metadata"]["annotations"])
    return job(**ann, **kw)


TIMED_OUT = {"tau-demo.io/admission-decision": "timed-out"}
PENDING = workload(("QuotaReserved", "False", "Pending"))
RESERVED = workload(("QuotaReserved", "True", "QuotaReserved"))
ADMITTED = workload(("QuotaReserved", "True", "QuotaReserved"), ("Admitted", "True", "Admitted"))
FINISHED = workload(("Finished", "True", "Succeeded"))
EVICTED_RETRY = workload(("QuotaReserved", "False", "Pending"), ("Evicted", "True", "AdmissionCheck"))
COMMITTED = workload(("QuotaReserved", "True", "QuotaReserved"), active=False, **TIMED_OUT)
DEACTIVATED_BY_KUEUE = workload(("Evicted", "True", "DeactivatedDueToAdmissionCheck"), active=False)
AFTER = T0 + timedelta(seconds=63)
BEFORE = T0 + timedelta(seconds=20)

NOT_A_DURATION = "is not a duration (examples: 90s, 5m, 1h30m)"
COMMIT_WHY = "deadline passed 3.0s ago; Workload rv 200 not admitted; committing timeout"


# the controller's default rule, knowing no ProvisioningRequest of the Workload: the deadline counted from
# submission (demo/deadline/rule.py; tests/unit/test_deadline_rule.py has the rules themselves)
NO_REQUEST = dl.Counting(DEFAULT_RULE, DEFAULT_OUTER_FACTOR)
WAITING_FOR_QUOTA = Cause(Bound.SUBMITTED, Waiting.QUOTA)


def decision(action, why, after=None, resource_version=None):
    """A decision; a commit's carries its cause: counted from submission, no request (waiting for quota)."""
    return dl.Decision(action, why, after, resource_version, WAITING_FOR_QUOTA if action == "commit" else None)


# ---------------------------------------------------------------------------- step 1: decide_workload

@pytest.mark.parametrize("j, wl, now, expected", [
    # the Workload is not admitted: commit at the resource version that was read, or wait
    (job(), PENDING, AFTER, decision("commit", COMMIT_WHY, resource_version="200")),
    (job(), RESERVED, AFTER, decision("commit", COMMIT_WHY, resource_version="200")),
    (job(), EVICTED_RETRY, AFTER, decision("commit", COMMIT_WHY, resource_version="200")),
    (job(), workload(("QuotaReserved", "True", "QuotaReserved"), rv="731"), AFTER,
     decision("commit", "deadline passed 3.0s ago; Workload rv 731 not admitted; committing timeout",
              resource_version="731")),
    (job(), RESERVED, T0 + timedelta(seconds=60),
     decision("commit", "deadline passed 0.0s ago; Workload rv 200 not admitted; committing timeout",
              resource_version="200")),
    (job(), RESERVED, BEFORE, decision("wait", "deadline in 40.0s", after=40.0)),
    (job(), RESERVED, T0 + timedelta(seconds=59.5), decision("wait", "deadline in 0.5s", after=0.5)),
    (job(deadline="1s"), RESERVED, T0 + timedelta(seconds=0.25), decision("wait", "deadline in 0.8s", after=0.75)),
    (job(deadline="1m30s"), RESERVED, AFTER, decision("wait", "deadline in 27.0s", after=27.0)),
    # admission won, for good
    (job(), ADMITTED, AFTER, decision("none", "Workload rv 200 is Admitted: admission won, no action")),
    (job(), FINISHED, AFTER, decision("none", "Workload rv 200 is Admitted: admission won, no action")),
    (job(), workload(("Admitted", "True", "Admitted"), active=False), AFTER,
     decision("none", "Workload rv 200 is Admitted: admission won, no action")),
    # decided before: never a second commit, whatever the Job's annotation says now
    (job(), COMMITTED, AFTER, decision("none", "timeout already committed on the Workload")),
    (job(deadline="soon"), COMMITTED, AFTER, decision("none", "timeout already committed on the Workload")),
    (job(), workload(("QuotaReserved", "True", "QuotaReserved"), **TIMED_OUT), AFTER,
     decision("none", "timeout already committed on the Workload")),
    # not ours to decide
    (job(), DEACTIVATED_BY_KUEUE, AFTER,
     decision("none", "Workload rv 200 was deactivated by someone else; no action")),
    (job(), DEACTIVATED_BY_KUEUE, BEFORE,
     decision("none", "Workload rv 200 was deactivated by someone else; no action")),
    (job(deadline=None), RESERVED, AFTER, decision("none", "no admission deadline")),
    (None, RESERVED, AFTER, decision("none", "owner Job is gone")),
    (None, None, AFTER, decision("none", "owner Job is gone")),
    (job(), None, AFTER, decision("none", "no Workload yet")),
], ids=["pending", "quota-reserved", "evicted-retry", "rv-of-the-read", "exactly-at-the-deadline",
        "before", "half-a-second-before", "short-deadline", "go-duration", "admitted", "finished",
        "admitted-beats-inactive", "committed", "committed-then-annotation-edited", "committed-still-active",
        "deactivated-by-kueue", "deactivated-before-deadline", "no-deadline", "job-gone", "both-gone", "no-workload"])
def test_decide_workload(j, wl, now, expected):
    assert dl.decide_workload(j, wl, now, NO_REQUEST) == expected


@pytest.mark.parametrize("value, problem", [
    ("soon", f"'soon' {NOT_A_DURATION}"),
    ("-5s", f"'-5s' {NOT_A_DURATION}"),
    ("5 minutes", f"'5 minutes' {NOT_A_DURATION}"),
    ("", f"'' {NOT_A_DURATION}"),
    ("0s", "'0s' must be positive"),
    ("0", "'0' must be positive"),
])
def test_malformed_deadline_takes_no_action_and_says_why(value, problem):
    d = dl.decide_workload(job(deadline=value), RESERVED, AFTER, NO_REQUEST)
    assert d == decision("none", f"malformed {DEADLINE_KEY}: {problem}; no action")


def test_a_job_without_creation_time_has_no_deadline_to_enforce():
    d = dl.decide_workload(job(created=None), RESERVED, AFTER, NO_REQUEST)
    assert d == decision("none", f"malformed {DEADLINE_KEY}: the Job has no creationTimestamp; no action")


def test_deadline_is_job_creation_plus_the_annotation():
    assert dl.deadline_of(job(deadline="90s")) == T0 + timedelta(seconds=90)
    assert dl.deadline_of(job(deadline="1s")) == T0 + timedelta(seconds=1)
    assert dl.deadline_of(job(deadline="0.5")) == T0 + timedelta(seconds=0.5)
    assert dl.deadline_of(job(deadline=None)) is None
    with pytest.raises(dl.BadDeadline, match=r"^'0s' must be positive$"):
        dl.deadline_of(job(deadline="0s"))
    with pytest.raises(dl.BadDeadline, match=r"^'soon' is not a duration \(examples: 90s, 5m, 1h30m\)$"):
        dl.deadline_of(job(deadline="soon"))
    with pytest.raises(dl.BadDeadline, match=r"^the Job has no creationTimestamp$"):
        dl.deadline_of(job(created=None))


def test_admission_wins_for_good():
    for wl in (ADMITTED, FINISHED):
        for now in (BEFORE, AFTER, AFTER + timedelta(days=1)):
            assert dl.decide_workload(job(), wl, now, NO_REQUEST).why == "Workload rv 200 is Admitted: admission won, no action"
            assert dl.decide_owner(job(), wl, now) == decision("none", "nothing to mirror")


# ---------------------------------------------------------------------------- steps 2-4: decide_owner

STALE = "stale terminal mark on the Job ({}); removing it and disarming cleanup"


@pytest.mark.parametrize("j, wl, now, expected", [
    # the owner is never written before the commit
    (job(), PENDING, AFTER, decision("none", "nothing to mirror")),
    (job(), RESERVED, AFTER, decision("none", "nothing to mirror")),
    (job(), EVICTED_RETRY, AFTER, decision("none", "nothing to mirror")),
    (job(), DEACTIVATED_BY_KUEUE, AFTER, decision("none", "nothing to mirror")),
    (job(), None, AFTER, decision("none", "nothing to mirror")),
    (None, COMMITTED, AFTER, decision("none", "owner Job is gone")),
    # mirror, then arm cleanup, then wait for it, then delete
    (job(), COMMITTED, AFTER,
     decision("mirror", f"Workload {WL_NAME} carries a committed timeout; mirroring it to the Job")),
    (job(), COMMITTED, AFTER + timedelta(hours=1),      # the controller died before the mirror: recovered
     decision("mirror", f"Workload {WL_NAME} carries a committed timeout; mirroring it to the Job")),
    (mirrored_job("job-train-older"), COMMITTED, AFTER,  # a mirror of another Workload is written again
     decision("mirror", f"Workload {WL_NAME} carries a committed timeout; mirroring it to the Job")),
    (mirrored_job(), COMMITTED, AFTER, decision("arm-cleanup", "mirror written; arming cleanup")),
    (mirrored_job(armed_ttl=30), COMMITTED, AFTER + timedelta(seconds=10),
     decision("wait", "cleanup in 20.0s", after=20.0)),
    (mirrored_job(armed_ttl=30), COMMITTED, AFTER + timedelta(seconds=29.5),
     decision("wait", "cleanup in 0.5s", after=0.5)),
    (mirrored_job(armed_ttl=30), COMMITTED, AFTER + timedelta(seconds=30),
     decision("delete", f"cleanup TTL expired 0.0s ago and Workload {WL_NAME} still carries the committed "
                        "timeout; deleting the Job")),
    (mirrored_job(armed_ttl=30), COMMITTED, AFTER + timedelta(seconds=42),
     decision("delete", f"cleanup TTL expired 12.0s ago and Workload {WL_NAME} still carries the committed "
                        "timeout; deleting the Job")),
    # recovery: a mark without a committed timeout behind it is removed, never acted on
    (mirrored_job(armed_ttl=1), ADMITTED, AFTER + timedelta(hours=1), decision("unmark", STALE.format("Workload is Admitted"))),
    (mirrored_job(armed_ttl=1), RESERVED, AFTER + timedelta(hours=1),
     decision("unmark", STALE.format("Workload carries no committed timeout"))),
    (mirrored_job(armed_ttl=1), PENDING, AFTER, decision("unmark", STALE.format("Workload carries no committed timeout"))),
    (mirrored_job(armed_ttl=1), None, AFTER, decision("unmark", STALE.format("no Workload"))),
], ids=["pending", "quota-reserved", "evicted-retry", "deactivated-by-kueue", "no-workload", "job-gone",
        "mirror", "mirror-recovered", "mirror-of-another-workload", "arm", "wait", "wait-half-a-second",
        "delete-when-due", "delete-late", "stale-admitted", "stale-reserved", "stale-pending", "stale-no-workload"])
def test_decide_owner(j, wl, now, expected):
    assert dl.decide_owner(j, wl, now) == expected


@pytest.mark.parametrize("key", dl.MIRROR_KEYS)
def test_any_one_mark_left_behind_is_removed(key):
    j = job(**{key: mirrored_job(armed_ttl=1)["metadata"]["annotations"][key]})
    assert dl.decide_owner(j, RESERVED, AFTER) == decision("unmark", STALE.format("Workload carries no committed timeout"))


def test_committed_but_admitted_counts_as_admitted():
    wl = copy.deepcopy(ADMITTED)
    wl["metadata"]["annotations"].update(TIMED_OUT)
    assert dl.decide_owner(mirrored_job(), wl, AFTER) == decision("unmark", STALE.format("Workload is Admitted"))
    assert dl.decide_owner(job(), wl, AFTER) == decision("none", "nothing to mirror")


def test_the_whole_timeout_path_converges_step_by_step():
    j = job()
    assert dl.decide_workload(j, RESERVED, AFTER, NO_REQUEST).action == "commit"
    wl = copy.deepcopy(RESERVED)
    patch = dl.commit_patch(AFTER)
    wl["metadata"]["annotations"].update(patch["metadata"]["annotations"])
    wl["spec"].update(patch["spec"])
    assert dl.decide_workload(j, wl, AFTER, NO_REQUEST) == decision("none", "timeout already committed on the Workload")
    assert dl.decide_owner(j, wl, AFTER).action == "mirror"
    j["metadata"]["annotations"].update(dl.mirror_patch(WL_NAME, AFTER)["metadata"]["annotations"])
    assert dl.decide_owner(j, wl, AFTER).action == "arm-cleanup"
    j["metadata"]["annotations"].update(dl.arm_patch(AFTER, 30)["metadata"]["annotations"])
    assert dl.decide_owner(j, wl, AFTER + timedelta(seconds=10)) == decision("wait", "cleanup in 20.0s", after=20.0)
    assert dl.decide_owner(j, wl, AFTER + timedelta(seconds=31)).action == "delete"


def test_commit_patch_sets_inactive_and_the_decision():
    p = dl.commit_patch(AFTER)
    assert p["spec"] == {"active": False}
    assert p["metadata"]["annotations"][dl.DECISION_ANNOTATION] == "timed-out"


def _snap(wl=None, job=None, pods=()):
    from demo.jobs.snapshot import Snapshot
    return Snapshot(job, wl, [], list(pods), [])


def test_soak_invariants_allow_a_timeout_after_an_eviction_and_catch_real_violations():
    from scenarios.walkthrough.soak import invariant_violations
    admitted = {"status": {"conditions": [{"type": "Admitted", "status": "True"}]}}
    committed = {"metadata": {"annotations": {dl.DECISION_ANNOTATION: "timed-out"}}}
    both = {"metadata": committed["metadata"], "status": admitted["status"]}
    marked_job = {"metadata": {"annotations": {dl.TERMINAL_REASON_ANNOTATION: "AdmissionTimeout"}}}
    # admitted, evicted (pods never ran), then timed out and cleaned up: legitimate
    seq = [_snap(admitted), _snap(committed, marked_job), _snap(committed, None)]
    assert invariant_violations(seq, True, True, False, True, True) == []
    assert invariant_violations([_snap(both)], True, True, False, True, False) == [
        "a Workload was Admitted and carried a committed timeout at once"]
    assert invariant_violations(seq, True, True, True, True, True) == ["a Job whose pods ran was marked or deleted"]
    assert invariant_violations([_snap(None, None)], False, False, False, False, True) == [
        "cleanup deleted a job without a committed timeout"]
    assert invariant_violations([_snap(committed)], False, True, False, False, False) == [
        "committed timeout never mirrored"]
    running = {"status": {"phase": "Running"}}
    assert "pods of a timed-out job kept running" in invariant_violations(
        [_snap(committed, marked_job, [running])], False, True, False, True, False)


# ---------------------------------------------------------------------------- the reviewed design (legacy)

@pytest.mark.parametrize("j, wl, now, expected", [
    (None, RESERVED, AFTER, decision("none", "nothing to do")),
    (job(), None, AFTER, decision("none", "nothing to do")),
    (job(), ADMITTED, AFTER, decision("none", "Workload is Admitted")),
    (job(deadline=None), RESERVED, AFTER, decision("none", "no admission deadline")),
    (job(deadline="0s"), RESERVED, AFTER, decision("none", f"malformed {DEADLINE_KEY}: '0s' must be positive; no action")),
    (job(), RESERVED, BEFORE, decision("wait", "deadline in 40.0s", after=40.0)),
    (job(), RESERVED, T0 + timedelta(seconds=59.5), decision("wait", "deadline in 0.5s", after=0.5)),
    (job(), RESERVED, T0 + timedelta(seconds=60),
     decision("mirror", "LEGACY: deadline passed; marking the owner terminal, then deactivating", resource_version="200")),
    (job(), workload(rv="321"), AFTER,
     decision("mirror", "LEGACY: deadline passed; marking the owner terminal, then deactivating", resource_version="321")),
    # the bug: a marked owner gets TTL cleanup whatever its Workload says
    (mirrored_job(), ADMITTED, AFTER, decision("arm-cleanup", "LEGACY: owner marked terminal; arming TTL cleanup")),
    (mirrored_job(armed_ttl=5), ADMITTED, AFTER + timedelta(seconds=1), decision("wait", "LEGACY: TTL cleanup in 4.0s", after=4.0)),
    (mirrored_job(armed_ttl=5), ADMITTED, AFTER + timedelta(seconds=6),
     decision("delete", "LEGACY: TTL expired; deleting the Job (its Workload is Admitted)")),
    (mirrored_job(armed_ttl=5), RESERVED, AFTER + timedelta(seconds=6),
     decision("delete", "LEGACY: TTL expired; deleting the Job (its Workload is not admitted)")),
], ids=["job-gone", "no-workload", "admitted", "no-deadline", "malformed", "before", "half-a-second-before",
        "at-the-deadline", "rv-of-the-read", "arm-on-an-admitted-job", "wait", "delete-admitted", "delete-not-admitted"])
def test_decide_legacy(j, wl, now, expected):
    assert dl.decide_legacy(j, wl, now) == expected


# ---------------------------------------------------------------------------- the patches

NOW = datetime(2026, 11, 29, 12, 1, 3, 250000, tzinfo=timezone.utc)


def test_commit_patch_deactivates_and_records_the_decision_to_the_microsecond():
    assert dl.commit_patch(NOW) == {
        "metadata": {"annotations": {"tau-demo.io/admission-decision": "timed-out",
                                     "tau-demo.io/admission-decision-time": "2026-11-29T12:01:03.250000Z"}},
        "spec": {"active": False}}


def test_mirror_patch_names_the_workload_whose_decision_it_mirrors():
    assert dl.mirror_patch("job-train-xyz", NOW) == {"metadata": {"annotations": {
        "tau-demo.io/terminal-reason": "AdmissionTimeout",
        "tau-demo.io/terminal-time": "2026-11-29T12:01:03.250000Z",
        "tau-demo.io/terminal-workload": "job-train-xyz"}}}


def test_arm_patch_sets_the_cleanup_time_ttl_seconds_ahead():
    assert dl.arm_patch(NOW, 30) == {"metadata": {"annotations": {
        "tau-demo.io/cleanup-after": "2026-11-29T12:01:33.250000Z"}}}


def test_unmark_patch_removes_every_mark():
    assert dl.unmark_patch() == {"metadata": {"annotations": {
        "tau-demo.io/terminal-reason": None, "tau-demo.io/terminal-time": None,
        "tau-demo.io/terminal-workload": None, "tau-demo.io/cleanup-after": None}}}


def test_the_jobs_workload_is_the_newest_one_it_controls():
    old = workload(rv="1")
    old["metadata"].update(name="job-train-old", creationTimestamp="2026-11-29T12:00:00Z")
    new = workload(rv="2")
    new["metadata"].update(name="job-train-new", creationTimestamp="2026-11-29T12:05:00Z")
    stranger = workload(rv="3")
    stranger["metadata"].update(name="job-other", creationTimestamp="2026-11-29T12:09:00Z")
    stranger["metadata"]["ownerReferences"][0]["uid"] = "other-uid"
    assert workloads.of_job([new, stranger, old], "job-uid")["metadata"]["name"] == "job-train-new"
    middle = workload(rv="4")
    middle["metadata"].update(name="job-train-middle", creationTimestamp="2026-11-29T12:02:00Z")
    assert workloads.of_job([middle, new, old], "job-uid")["metadata"]["name"] == "job-train-new"
    assert workloads.of_job([new, old, middle], "job-uid")["metadata"]["name"] == "job-train-new"
    assert workloads.of_job([stranger], "job-uid") is None
    assert workloads.of_job([], "job-uid") is None


def test_after_a_conflict_the_first_live_retry_is_immediate_then_backs_off_to_a_second():
    assert [dl.conflict_backoff(n) for n in range(1, 8)] == [0.0, 0.05, 0.1, 0.2, 0.4, 0.8, 1.0]
