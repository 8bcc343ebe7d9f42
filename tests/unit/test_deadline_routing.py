"""The admission-deadline controller's own decisions (demo/deadline/routing.py), on plain objects shaped like the
real cluster's: which Jobs an instance handles, which Job key a Workload's event concerns, what each owner step
writes and the pause point after it, and what the controller logs about a decision that writes nothing."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone

import pytest

from demo.deadline import protocol as dl
from demo.deadline import routing
from demo.deadline import rule as R
from demo.deadline.protocol import Action, Decision
from k8s.keys import (CLEANUP_AFTER_ANNOTATION, DEADLINE_ANNOTATION, DEADLINE_CLASS_ANNOTATION, TAKEN_UP_ANNOTATION,
                      TERMINAL_REASON_ANNOTATION, TERMINAL_TIME_ANNOTATION, TERMINAL_WORKLOAD_ANNOTATION)
from test_deadline import ADMITTED, COMMITTED, PENDING, WL_NAME

NOW = datetime(2026, 11, 29, 12, 1, 3, tzinfo=timezone.utc)


def job(name="train", namespace="demo", **ann) -> dict:
    return {"metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "annotations": ann}}


@pytest.mark.parametrize("ann, instance, handled", [
    ({DEADLINE_ANNOTATION: "60s"}, "default", True),                      # no class: the default instance's
    ({DEADLINE_ANNOTATION: "60s"}, "race-a", False),
    ({DEADLINE_ANNOTATION: "60s", DEADLINE_CLASS_ANNOTATION: "race-a"}, "race-a", True),
    ({DEADLINE_ANNOTATION: "60s", DEADLINE_CLASS_ANNOTATION: "race-a"}, "default", False),
    ({}, "default", False),                                                # no deadline and no mirror: not ours
    ({"other": "x"}, "default", False),
    ({TERMINAL_REASON_ANNOTATION: "AdmissionTimeout"}, "default", True),   # a mirror left to undo or clean up
    ({TERMINAL_TIME_ANNOTATION: "t"}, "default", True),
    ({TERMINAL_WORKLOAD_ANNOTATION: "w"}, "default", True),
    ({CLEANUP_AFTER_ANNOTATION: "t"}, "default", True),
    ({CLEANUP_AFTER_ANNOTATION: "t", DEADLINE_CLASS_ANNOTATION: "race-a"}, "default", False),
])
def test_an_instance_handles_the_jobs_of_its_class_that_carry_a_deadline_or_a_mirror(ann, instance, handled):
    assert routing.handles(job(**ann), instance) is handled


def test_no_job_is_handled_by_nobody():
    assert routing.handles(None, "default") is False


def test_the_handled_keys_are_sorted_and_only_the_instances():
    jobs = [job("b", **{DEADLINE_ANNOTATION: "1m"}), job("plain"), job("a", "ns2", **{DEADLINE_ANNOTATION: "1m"}),
            job("c", **{DEADLINE_ANNOTATION: "1m", DEADLINE_CLASS_ANNOTATION: "race-a"})]
    assert routing.handled_keys(jobs, "default") == ["demo/b", "ns2/a"]
    assert routing.handled_keys(jobs, "race-a") == ["demo/c"]
    assert routing.handled_keys([], "default") == []


def workload(*refs, namespace="demo") -> dict:
    return {"metadata": {"name": "wl", "namespace": namespace, "ownerReferences": list(refs)}}


def ref(name="train", kind="Job", controller=True, uid="job-uid") -> dict:
    r = {"kind": kind, "name": name, "controller": controller}
    if uid is not None:
        r["uid"] = uid
    return r


def test_a_workloads_event_concerns_the_job_that_controls_it():
    wl = workload(ref("train", uid="u1"), ref("other", controller=False, uid="u2"), ref("js", kind="JobSet", uid="u3"),
                  namespace="team")
    assert routing.owner_keys(wl) == ["team/train"]
    assert routing.owner_job_uids(wl) == ["u1"]
    assert routing.owner_keys(workload()) == [] and routing.owner_job_uids(workload()) == []
    assert routing.owner_keys({"metadata": {"namespace": "demo"}}) == []
    no_controller_field = {"kind": "Job", "name": "x", "uid": "u"}
    assert routing.owner_keys(workload(no_controller_field)) == [] == routing.owner_job_uids(workload(no_controller_field))


def test_a_controller_reference_without_a_uid_is_not_indexed():
    wl = workload(ref("train", uid=None), ref("train2", uid=""), ref("train3", uid="u3"))
    assert routing.owner_job_uids(wl) == ["u3"]
    assert routing.owner_keys(wl) == ["demo/train", "demo/train2", "demo/train3"]


def test_a_wait_is_said_once_whatever_time_it_has_left():
    a = Decision(Action.WAIT, "deadline in 30.0s", after=30.0)
    b = Decision(Action.WAIT, "deadline in 25.0s", after=25.0)
    assert routing.say(a) == ("wait", "not admitted yet; deadline in 30.0s")
    assert routing.say(a)[0] == routing.say(b)[0]


def test_a_no_op_is_said_by_its_reason_and_the_quiet_ones_not_at_all():
    assert routing.say(Decision(Action.NONE, "Workload admitted; nothing to do")) == (
        "Workload admitted; nothing to do", "Workload admitted; nothing to do")
    assert routing.say(Decision(Action.NONE, "no Workload yet")) == ("no Workload yet", None)
    assert routing.say(Decision(Action.NONE, "nothing to mirror")) == ("nothing to mirror", None)


def test_a_reread_after_a_conflict_says_what_it_found():
    assert routing.reread(ADMITTED) == "Admitted=True"
    assert routing.reread(COMMITTED) == "timeout committed"
    assert routing.reread(PENDING) == "not admitted"
    assert routing.reread(None) == "not admitted"


def test_each_owner_step_writes_its_patch_and_reaches_its_pause_point():
    wl = {"metadata": {"name": WL_NAME}}
    assert routing.owner_patch(Decision(Action.MIRROR, "m"), wl, NOW, 30.0) == (dl.mirror_patch(WL_NAME, NOW),
                                                                                  "after-mirror")
    assert routing.owner_patch(Decision(Action.ARM_CLEANUP, "a"), wl, NOW, 30.0) == (dl.arm_patch(NOW, 30.0),
                                                                                      "after-arm")
    assert routing.owner_patch(Decision(Action.ARM_CLEANUP, "a"), wl, NOW, 7.0)[0] == dl.arm_patch(NOW, 7.0)
    assert routing.owner_patch(Decision(Action.UNMARK, "u"), None, NOW, 30.0) == (dl.unmark_patch(), None)


@pytest.mark.parametrize("action", [Action.NONE, Action.WAIT, Action.COMMIT, Action.DELETE])
def test_a_decision_that_is_no_owner_patch_is_refused(action):
    with pytest.raises(ValueError, match=f"^{action} writes no patch of the owner Job$"):
        routing.owner_patch(Decision(action, "x"), {"metadata": {"name": WL_NAME}}, NOW, 30.0)


# ---------------------------------------------------------------------------- the take-up recorded on the Workload

TAKEN_UP = "tau-demo.io/admission-taken-up"
RULE = "tau-demo.io/deadline-rule"
WAIT = Decision(Action.WAIT, "deadline (67s later for the wait to be taken up) in 7.0s", after=7.0)
T77 = datetime(2026, 11, 29, 12, 1, 17, 250000, tzinfo=timezone.utc)     # the earliest take-up the controller knows


def recording(value: str | None = None, **ann: str) -> dict:
    """The Workload (quota reserved, its check pending), recording the take-up `value` (None: none)."""
    return workload_with({} if value is None else {TAKEN_UP: value}, **ann)


def workload_with(record: dict, **ann: str) -> dict:
    wl = copy.deepcopy(PENDING)
    wl["metadata"]["annotations"].update(record, **ann)
    return wl


def knowing(seen: datetime | None, rule: R.Rule = R.Rule.TAKEN_UP) -> dl.Counting:
    return dl.Counting(rule, 4.0, (), seen)


def record_of(t: str) -> dict:
    return {"metadata": {"annotations": {TAKEN_UP: t}}}


@pytest.mark.parametrize("record", [None, "2026-11-29T12:01:18Z", "2026-11-29T12:01:17.250001Z"],
                         ids=["none", "a-second-later", "a-microsecond-later"])
def test_the_take_up_known_is_recorded_when_the_workload_records_none_or_a_later_one(record):
    assert routing.take_up_patch(WAIT, deadline_job(), recording(record), knowing(T77)) == \
        record_of("2026-11-29T12:01:17.250000Z")


@pytest.mark.parametrize("record", ["2026-11-29T12:01:17.250000Z", "2026-11-29T12:01:17.25+00:00",
                                    "2026-11-29T12:01:17Z", "2026-11-29T12:00:05Z"],
                         ids=["the-same", "the-same-written-otherwise", "a-quarter-second-earlier", "earlier"])
def test_a_record_as_early_or_earlier_is_never_moved_later(record):
    assert routing.take_up_patch(WAIT, deadline_job(), recording(record), knowing(T77)) is None


def test_a_malformed_record_is_left_as_it_is():
    # it cannot be told earlier or later; rule.due counts the Job from submission and says why
    for record in ("soon", "", "77"):
        assert routing.take_up_patch(WAIT, deadline_job(), recording(record), knowing(T77)) is None


def test_nothing_is_recorded_while_no_take_up_is_known():
    assert routing.take_up_patch(WAIT, deadline_job(), recording(), knowing(None)) is None
    assert routing.take_up_patch(WAIT, deadline_job(), recording("2026-11-29T12:01:18Z"), knowing(None)) is None


@pytest.mark.parametrize("d", [
    Decision(Action.COMMIT, "deadline passed 0.0s ago; committing timeout", resource_version="200"),
    Decision(Action.NONE, "Workload rv 200 is Admitted: admission won, no action"),
    Decision(Action.NONE, "no admission deadline"),
], ids=["commit", "admitted", "no-deadline"])
def test_only_a_wait_records_the_take_up(d):
    # a commit ends the count; an admitted Workload or a Job without a deadline has none to keep
    assert routing.take_up_patch(d, deadline_job(), recording(), knowing(T77)) is None


@pytest.mark.parametrize("ann, rule, recorded", [
    ({}, R.Rule.TAKEN_UP, True),
    ({}, R.Rule.SUBMITTED, False),                             # the old rule counts no take-up
    ({RULE: "taken-up"}, R.Rule.SUBMITTED, True),             # the Job's own rule beats the controller's
    ({RULE: "submitted"}, R.Rule.TAKEN_UP, False),
    ({RULE: "fifo"}, R.Rule.TAKEN_UP, False),                 # a malformed rule: counted from submission
], ids=["taken-up", "submitted", "job-says-taken-up", "job-says-submitted", "job-rule-malformed"])
def test_only_the_rule_taken_up_records_the_take_up(ann, rule, recorded):
    patch = routing.take_up_patch(WAIT, deadline_job(**ann), recording(), knowing(T77, rule))
    assert patch == (record_of("2026-11-29T12:01:17.250000Z") if recorded else None)


def test_the_record_read_back_is_the_take_up_written():
    patch = routing.take_up_patch(WAIT, deadline_job(), recording(), knowing(T77))
    assert R.recorded_take_up(workload_with(patch["metadata"]["annotations"])) == T77


def test_the_record_only_moves_earlier_and_is_written_only_when_it_changes():
    # reconciles one after the other, each knowing a take-up (a controller's memory and the requests; one restarted
    # after a retry rewrote the time knows a later one): the record is the earliest known so far, written only when
    # that changes
    base = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)
    wl, writes = recording(), []
    for sec in (50, 50, 60, 40, 45, 40, 30, 30, 75):
        patch = routing.take_up_patch(WAIT, deadline_job(), wl, knowing(base + timedelta(seconds=sec)))
        if patch is not None:
            writes.append(sec)
            wl = workload_with(patch["metadata"]["annotations"])
        assert R.recorded_take_up(wl) == base + timedelta(seconds=min(writes))
    assert writes == [50, 40, 30]


def deadline_job(**ann: str) -> dict:
    return job(**{DEADLINE_ANNOTATION: "60s", **ann})


# ---------------------------------------------------------------------------- what the controller says

KEY = "demo/train"


def test_step_1s_lines_say_the_reread_a_commits_reason_and_nothing_else():
    commit = Decision(Action.COMMIT, "deadline passed 1.0s ago; committing", resource_version="7")
    wait = Decision(Action.WAIT, "deadline in 3.0s", after=3.0)
    assert routing.decided_line(KEY, 0, PENDING, commit) == "deadline demo/train: deadline passed 1.0s ago; committing"
    assert routing.decided_line(KEY, 0, PENDING, wait) is None           # said by `say`, only when it changes
    assert routing.decided_line(KEY, 1, ADMITTED, wait) == (
        "deadline demo/train: re-read: Admitted=True; deadline in 3.0s")
    assert routing.decided_line(KEY, 2, PENDING, commit) == (
        "deadline demo/train: re-read: not admitted; deadline passed 1.0s ago; committing")
    assert routing.no_op_line(KEY, "not admitted yet; x") == "deadline demo/train: not admitted yet; x"


def test_a_commits_outcome_is_said_word_for_word():
    assert routing.commit_refused_line(KEY, True, WL_NAME, "41") == (
        "deadline demo/train: 409 conflict on Workload rv 41; reading again")
    assert routing.commit_refused_line(KEY, False, WL_NAME, "41") == (
        f"deadline demo/train: Workload {WL_NAME} is gone (404); reading again")
    assert routing.committed_line(KEY, WL_NAME, 0.0126) == (
        f"deadline demo/train: committed timeout on Workload {WL_NAME} (spec.active=false; the write took 13 ms)")
    assert routing.committed_line(KEY, WL_NAME, 2.0).endswith("the write took 2000 ms)")
    assert routing.still_conflicting_line(KEY, 6) == (
        "deadline demo/train: still conflicting after 6 attempts; will retry")


def test_a_take_up_record_is_said_with_its_time_or_why_it_failed():
    patch = {"metadata": {"annotations": {TAKEN_UP_ANNOTATION: "2026-11-29T12:00:00.000000Z"}}}
    assert routing.take_up_line(KEY, WL_NAME, patch, None) == (
        f"deadline demo/train: recorded the take-up 2026-11-29T12:00:00.000000Z on Workload {WL_NAME} "
        "(a restart counts from it)")
    assert routing.take_up_line(KEY, WL_NAME, patch, RuntimeError("503 busy")) == (
        f"deadline demo/train: could not record the take-up on Workload {WL_NAME} (503 busy); will try again")


def test_the_owner_steps_and_the_legacy_protocols_lines():
    d = Decision(Action.MIRROR, "timeout committed; mirroring on the owner Job")
    assert routing.step_line(KEY, d) == "deadline demo/train: timeout committed; mirroring on the owner Job"
    assert routing.owner_conflict_line(KEY) == "deadline demo/train: Job changed under us (409); reading again"
    assert routing.legacy_commit_line(KEY, False) == "deadline demo/train: LEGACY: Workload deactivated"
    assert routing.legacy_commit_line(KEY, True) == (
        "deadline demo/train: LEGACY: 409 conflict deactivating the Workload; the owner keeps its terminal mark")
    assert routing.LEGACY_WARNING == (
        "deadline: running the LEGACY protocol (mark owner, then deactivate, then TTL cleanup). It reports running "
        "jobs failed and deletes them; it exists only to reproduce that bug.")


def test_the_start_line_says_what_is_watched_and_how_it_decides():
    assert routing.start_line(None, "default", "committed", R.Rule.TAKEN_UP, 4.0, 30.0, 5.0, 16) == (
        "deadline: watching Jobs, Workloads and ProvisioningRequests in all namespaces (class default, protocol "
        "committed, rule taken-up, outer bound 4 deadlines, cleanup TTL 30s, resync 5s, 16 workers)")
    assert routing.start_line("demo", "race-a", "legacy", R.Rule.SUBMITTED, 2.5, 7.4, 0.5, 2) == (
        "deadline: watching Jobs, Workloads and ProvisioningRequests in demo (class race-a, protocol legacy, rule "
        "submitted, outer bound 2.5 deadlines, cleanup TTL 7s, resync 0s, 2 workers)")
