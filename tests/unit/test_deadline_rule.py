"""When the admission deadline falls, and its cause (demo/deadline/rule.py), and the protocol's step 1 under each
rule (demo/deadline/protocol.py), on plain objects shaped like the real cluster's: a Job created at 10:00:00
(tests/unit/k8s_objects.py), its Workload, and Kueue's ProvisioningRequests with the conditions an autoscaler
writes on them (Accepted when its injector picks the request, then Provisioned)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from demo.deadline import protocol as dl
from demo.deadline import routing
from demo.deadline import rule as R
from demo.deadline.rule import Bound, Cause, Rule, Waiting
from tests.unit import k8s_objects as K

DEADLINE = "tau-demo.io/admission-deadline"
RULE = "tau-demo.io/deadline-rule"
MAX_WAIT = "tau-demo.io/admission-max-wait"
TAKEN_UP = "tau-demo.io/admission-taken-up"       # on the Workload: the earliest take-up the controller saw
T0 = datetime(2025, 6, 1, 10, 0, 0, tzinfo=timezone.utc)        # the Job's creationTimestamp, K.ts(0)
NOT_A_DURATION = "is not a duration (examples: 90s, 5m, 1h30m)"


def at(sec: float) -> datetime:
    return T0 + timedelta(seconds=sec)


def job(deadline: str | None = "40s", **ann: str) -> dict:
    a = {} if deadline is None else {DEADLINE: deadline}
    return K.job(annotations={**a, **{k.replace("_", "-"): v for k, v in ann.items()}})


def annotated(**extra: str) -> dict:
    return K.job(annotations={DEADLINE: "40s", **extra})


def accepted(sec: int) -> dict:
    return K.cond("Accepted", "True", "Accepted", "ProvisioningRequest is accepted by ClusterAutoscaler", at=sec)


def not_found(sec: int) -> dict:
    return K.cond("Provisioned", "False", "CapacityIsNotFound", "Capacity is not found", at=sec)


def provisioned(sec: int) -> dict:
    return K.cond("Provisioned", "True", "CapacityIsProvisioned", "Capacity is found in the cluster", at=sec)


def failed(sec: int) -> dict:
    return K.cond("Failed", "True", "FailedToCreatePods", "missing pod templates", at=sec)


def waiting(attempt: int = 1) -> dict:
    """A request no autoscaler has taken up: Kueue made it, nothing wrote a condition."""
    return K.provreq(attempt)


def taken(sec: int, attempt: int = 1, *more: dict) -> dict:
    """A request taken up at `sec` and found out of stock in the same loop."""
    return K.provreq(attempt, [accepted(sec), not_found(sec), *more])


# ---------------------------------------------------------------------------- the annotations

def test_the_budget_is_the_deadline_annotation_in_seconds():
    assert R.budget_of(job("40s")) == 40.0
    assert R.budget_of(job("1m30s")) == 90.0
    assert R.budget_of(job(None)) is None


@pytest.mark.parametrize("value, problem", [("soon", f"'soon' {NOT_A_DURATION}"), ("0s", "'0s' must be positive"),
                                            ("-1s", f"'-1s' {NOT_A_DURATION}")])
def test_a_malformed_deadline_names_its_annotation_and_what_is_wrong(value, problem):
    with pytest.raises(R.BadDeadline) as e:
        R.budget_of(job(value))
    assert (e.value.key, str(e.value)) == (DEADLINE, problem)


def test_the_rule_is_the_jobs_own_else_the_controllers():
    assert R.rule_of(job(), Rule.TAKEN_UP) is Rule.TAKEN_UP
    assert R.rule_of(job(), Rule.SUBMITTED) is Rule.SUBMITTED
    assert R.rule_of(annotated(**{RULE: "submitted"}), Rule.TAKEN_UP) is Rule.SUBMITTED
    assert R.rule_of(annotated(**{RULE: "taken-up"}), Rule.SUBMITTED) is Rule.TAKEN_UP
    with pytest.raises(R.BadDeadline) as e:
        R.rule_of(annotated(**{RULE: "accepted"}), Rule.TAKEN_UP)
    assert (e.value.key, str(e.value)) == (RULE, "'accepted' is not a rule (taken-up, submitted)")


def test_the_outer_bound_is_the_jobs_max_wait_else_a_multiple_of_the_budget():
    assert R.outer_of(job(), 40.0, 4.0) == 160.0
    assert R.outer_of(job(), 40.0, 2.5) == 100.0
    assert R.outer_of(annotated(**{MAX_WAIT: "5m"}), 40.0, 4.0) == 300.0
    assert R.outer_of(annotated(**{MAX_WAIT: "40s"}), 40.0, 4.0) == 40.0       # as long as the budget: allowed
    with pytest.raises(R.BadDeadline) as e:
        R.outer_of(annotated(**{MAX_WAIT: "39s"}), 40.0, 4.0)
    assert (e.value.key, str(e.value)) == (MAX_WAIT, "'39s' is shorter than the deadline (40s)")
    with pytest.raises(R.BadDeadline) as e:
        R.outer_of(annotated(**{MAX_WAIT: "later"}), 40.0, 4.0)
    assert (e.value.key, str(e.value)) == (MAX_WAIT, f"'later' {NOT_A_DURATION}")


# ---------------------------------------------------------------------------- the take-up

def test_a_request_is_taken_up_when_an_autoscaler_first_wrote_one_of_its_answers():
    assert R.taken_up_at([]) is None
    assert R.taken_up_at([waiting()]) is None
    assert R.taken_up_at([K.provreq(1, [accepted(7)])]) == at(7)
    # a check-capacity batch writes no Accepted; a missing pod template only Failed
    assert R.taken_up_at([K.provreq(1, [provisioned(9)])]) == at(9)
    assert R.taken_up_at([K.provreq(1, [failed(11)])]) == at(11)
    assert R.taken_up_at([K.provreq(1, [provisioned(9), accepted(8), failed(12)])]) == at(8)
    # other conditions are no answer of the injector's
    assert R.taken_up_at([K.provreq(1, [K.cond("BookingExpired", "True", "CapacityReservationTimeExpired", at=3)])]) \
        is None


def test_the_earliest_take_up_counts_over_retries_and_attempts():
    # the autoscaler rewrites Accepted at every retry: what was seen before is earlier, and is kept
    assert R.taken_up_at([taken(30)], at(8)) == at(8)
    assert R.taken_up_at([taken(30)], at(50)) == at(30)
    assert R.taken_up_at([], at(8)) == at(8)
    assert R.taken_up_at([taken(40, 2), taken(12, 1)]) == at(12)
    # more than one earlier sighting (the controller's memory, the Workload's record): the earliest of all
    assert R.taken_up_at([taken(30)], at(20), at(9)) == at(9)
    assert R.taken_up_at([taken(30)], at(9), at(20)) == at(9)
    assert R.taken_up_at([taken(30)], None, at(9)) == at(9)
    assert R.taken_up_at([taken(30)], at(9), None) == at(9)
    assert R.taken_up_at([taken(5)], at(9), at(20)) == at(5)
    assert R.taken_up_at([], None, None) is None


def created(pr: dict, sec: int, name: str | None = None) -> dict:
    """The request made at `sec` (and named `name`)."""
    md = {**pr["metadata"], "creationTimestamp": K.ts(sec)}
    return {**pr, "metadata": {**md, "name": name or md["name"]}}


def test_the_current_request_is_the_latest_attempt():
    assert R.current_request([]) is None
    # the attempt number decides, whatever the creation times say
    assert R.current_request([created(taken(8, 1), 90), created(waiting(2), 5)]) == created(waiting(2), 5)
    assert R.current_request([created(waiting(3), 5), created(taken(8, 2), 90)]) == created(waiting(3), 5)
    # the same attempt (or no number: not Kueue's name): the one created last, in either order
    early, late = created(waiting(1), 5), created(waiting(1), 6, name="job-train-llm-7c1e4-other-1")
    assert R.current_request([early, late]) == late and R.current_request([late, early]) == late
    # a check of another name (a walkthrough slot's, a TauCluster profile's): its attempt number all the same
    slot = [created(waiting(2), 5, name="job-a-wt-timeout-deadline-2"), created(waiting(1), 9, name="job-a-wt-timeout-deadline-1")]
    assert R.current_request(slot) == slot[0]
    undated = {**early, "metadata": {k: v for k, v in early["metadata"].items() if k != "creationTimestamp"}}
    assert R.current_request([late, undated]) == late and R.current_request([undated, late]) == late  # the oldest
    other = created(waiting(1), 95, name="not-kueues")
    assert R.current_request([other, created(waiting(1), 40)]) == created(waiting(1), 40)   # attempt 1 beats none
    assert R.current_request([created(other, 7, name="x"), created(other, 9, name="y")])["metadata"]["name"] == "y"


@pytest.mark.parametrize("current, expected", [
    (None, Waiting.QUOTA),
    (waiting(), Waiting.AUTOSCALER),
    (K.provreq(1, [accepted(5)]), Waiting.CAPACITY),
    (taken(5), Waiting.CAPACITY),
    (K.provreq(1, [accepted(5), failed(6)]), Waiting.CAPACITY),
    (K.provreq(1, [accepted(5), provisioned(5)]), Waiting.ADMISSION),
], ids=["no-request", "not-taken-up", "accepted", "out-of-stock", "failed", "provisioned"])
def test_what_a_workload_waits_for(current, expected):
    assert R.waiting_for(current) is expected


def test_the_slack_is_one_scan_interval_or_half_the_budget():
    assert R.TAKE_UP_SLACK == 10.0 and R.DEFAULT_OUTER_FACTOR == 4.0 and R.DEFAULT_RULE is Rule.TAKEN_UP
    assert R.slack_of(40.0) == 10.0
    assert R.slack_of(20.0) == 10.0
    assert R.slack_of(8.0) == 4.0


# ---------------------------------------------------------------------------- when it falls

def due(j: dict, provreqs: list[dict], seen: datetime | None = None, rule: Rule = Rule.TAKEN_UP,
        factor: float = 4.0, wl: dict | None = None) -> R.Due | None:
    """R.due on a Workload that records no take-up (unless `wl` is given)."""
    return R.due(j, K.workload() if wl is None else wl, provreqs, seen, rule, factor)


@pytest.mark.parametrize("j, provreqs, seen, rule, expected", [
    # the old rule: creation + budget, whatever the autoscaler did
    (job(), [waiting()], None, Rule.SUBMITTED, R.Due(at(40), "deadline", Cause(Bound.SUBMITTED, Waiting.AUTOSCALER))),
    (job(), [taken(70)], None, Rule.SUBMITTED, R.Due(at(40), "deadline", Cause(Bound.SUBMITTED, Waiting.CAPACITY))),
    (job(), [], None, Rule.SUBMITTED, R.Due(at(40), "deadline", Cause(Bound.SUBMITTED, Waiting.QUOTA))),
    # taken-up, no request: waiting for quota (or a MultiKueue manager's Workload) keeps the old deadline
    (job(), [], None, Rule.TAKEN_UP, R.Due(at(40), "deadline", Cause(Bound.SUBMITTED, Waiting.QUOTA))),
    # taken-up, a request no autoscaler took up: only the outer bound ends it
    (job(), [waiting()], None, Rule.TAKEN_UP,
     R.Due(at(160), "outer bound (160s after submission)", Cause(Bound.OUTER, Waiting.AUTOSCALER))),
    (annotated(**{MAX_WAIT: "100s"}), [waiting()], None, Rule.TAKEN_UP,
     R.Due(at(100), "outer bound (100s after submission)", Cause(Bound.OUTER, Waiting.AUTOSCALER))),
    # taken up promptly (within the slack): the old deadline, caught as a stockout
    (job(), [taken(3)], None, Rule.TAKEN_UP, R.Due(at(40), "deadline", Cause(Bound.TAKEN_UP, Waiting.CAPACITY))),
    (job(), [taken(10)], None, Rule.TAKEN_UP, R.Due(at(40), "deadline", Cause(Bound.TAKEN_UP, Waiting.CAPACITY))),
    # taken up late, behind other requests: the take-up + budget - slack
    (job(), [taken(11)], None, Rule.TAKEN_UP,
     R.Due(at(41), "deadline (1s later for the wait to be taken up)", Cause(Bound.TAKEN_UP, Waiting.CAPACITY))),
    (job(), [taken(77)], None, Rule.TAKEN_UP,
     R.Due(at(107), "deadline (67s later for the wait to be taken up)", Cause(Bound.TAKEN_UP, Waiting.CAPACITY))),
    (job("8s"), [taken(20)], None, Rule.TAKEN_UP,
     R.Due(at(24), "deadline (16s later for the wait to be taken up)", Cause(Bound.TAKEN_UP, Waiting.CAPACITY))),
    # the earliest take-up seen counts, not the retry's rewrite; a retry's request waiting again keeps it
    (job(), [taken(90)], at(77), Rule.TAKEN_UP,
     R.Due(at(107), "deadline (67s later for the wait to be taken up)", Cause(Bound.TAKEN_UP, Waiting.CAPACITY))),
    (job(), [waiting(2)], at(77), Rule.TAKEN_UP,
     R.Due(at(107), "deadline (67s later for the wait to be taken up)", Cause(Bound.TAKEN_UP, Waiting.AUTOSCALER))),
    (job(), [], at(77), Rule.TAKEN_UP,
     R.Due(at(107), "deadline (67s later for the wait to be taken up)", Cause(Bound.TAKEN_UP, Waiting.QUOTA))),
    (job(), [K.provreq(1, [accepted(50), provisioned(50)])], None, Rule.TAKEN_UP,
     R.Due(at(80), "deadline (40s later for the wait to be taken up)", Cause(Bound.TAKEN_UP, Waiting.ADMISSION))),
    # never later than the outer bound
    (job(), [taken(130)], None, Rule.TAKEN_UP,
     R.Due(at(160), "outer bound (160s after submission)", Cause(Bound.OUTER, Waiting.CAPACITY))),
    (job(), [taken(129)], None, Rule.TAKEN_UP,
     R.Due(at(159), "deadline (119s later for the wait to be taken up)", Cause(Bound.TAKEN_UP, Waiting.CAPACITY))),
    # the Job's own rule beats the controller's
    (annotated(**{RULE: "submitted"}), [waiting()], None, Rule.TAKEN_UP,
     R.Due(at(40), "deadline", Cause(Bound.SUBMITTED, Waiting.AUTOSCALER))),
    (annotated(**{RULE: "taken-up"}), [waiting()], None, Rule.SUBMITTED,
     R.Due(at(160), "outer bound (160s after submission)", Cause(Bound.OUTER, Waiting.AUTOSCALER))),
], ids=["submitted-waiting", "submitted-taken-late", "submitted-no-request", "no-request", "never-taken-up",
        "never-taken-up-max-wait", "prompt", "at-the-slack", "just-late", "late", "late-short-budget",
        "seen-before-the-retry", "retry-waiting", "between-attempts", "provisioned-late", "past-the-outer-bound",
        "just-before-the-outer-bound", "job-says-submitted", "job-says-taken-up"])
def test_when_the_deadline_falls_and_why(j, provreqs, seen, rule, expected):
    assert due(j, provreqs, seen, rule) == expected


def test_the_outer_factor_is_the_controllers():
    assert due(job(), [waiting()], factor=2.0) == R.Due(at(80), "outer bound (80s after submission)",
                                                       Cause(Bound.OUTER, Waiting.AUTOSCALER))


def test_no_deadline_or_a_malformed_one():
    assert due(job(None), [waiting()]) is None
    no_creation = job()
    del no_creation["metadata"]["creationTimestamp"]
    with pytest.raises(R.BadDeadline) as e:
        due(no_creation, [])
    assert (e.value.key, str(e.value)) == (DEADLINE, "the Job has no creationTimestamp")
    # a malformed rule or max-wait: counted as the old rule counts, which always ends the wait, and said
    assert due(annotated(**{MAX_WAIT: "10s"}), [waiting()]) == R.Due(
        at(40), f"deadline (from submission: malformed {MAX_WAIT}: '10s' is shorter than the deadline (40s))",
        Cause(Bound.SUBMITTED, Waiting.AUTOSCALER))
    assert due(annotated(**{RULE: "fifo"}), [taken(70)], rule=Rule.SUBMITTED) == R.Due(
        at(40), f"deadline (from submission: malformed {RULE}: 'fifo' is not a rule (taken-up, submitted))",
        Cause(Bound.SUBMITTED, Waiting.CAPACITY))
    assert due(annotated(**{MAX_WAIT: "10s"}), [waiting()], rule=Rule.SUBMITTED) == R.Due(
        at(40), "deadline", Cause(Bound.SUBMITTED, Waiting.AUTOSCALER))            # the old rule reads no max-wait


# ---------------------------------------------------------------------------- the take-up the Workload records

def recording(value: str | None) -> dict:
    """The Workload, recording the take-up `value` (None: recording none)."""
    return K.workload(annotations={} if value is None else {TAKEN_UP: value})


def test_the_recorded_take_up_is_the_workloads_annotation_read_as_a_time():
    assert R.recorded_take_up(recording(None)) is None
    assert R.recorded_take_up(None) is None
    assert R.recorded_take_up(recording(K.ts(77))) == at(77)                      # seconds, as conditions have them
    assert R.recorded_take_up(recording("2025-06-01T10:01:17.250000Z")) == at(77.25)    # the controller's micro
    assert R.recorded_take_up(recording("2025-06-01T10:01:17")) == at(77)         # no zone: UTC, as parse_time


@pytest.mark.parametrize("value", ["soon", "", "77", "2025-13-01T10:01:17Z"])
def test_a_malformed_recorded_take_up_names_its_annotation_and_what_is_wrong(value):
    with pytest.raises(R.BadDeadline) as e:
        R.recorded_take_up(recording(value))
    assert (e.value.key, str(e.value)) == (TAKEN_UP, f"{value!r} is not an RFC 3339 time")


LATE_77 = R.Due(at(107), "deadline (67s later for the wait to be taken up)", Cause(Bound.TAKEN_UP, Waiting.CAPACITY))


@pytest.mark.parametrize("provreqs, seen, record, rule, expected", [
    # a restarted controller: its memory empty, the request's time rewritten by a retry (90 s); the record keeps 77 s
    ([taken(90)], None, K.ts(77), Rule.TAKEN_UP, LATE_77),
    ([taken(90)], at(90), K.ts(77), Rule.TAKEN_UP, LATE_77),
    # the earliest of the three counts, whichever it is
    ([taken(77)], None, K.ts(90), Rule.TAKEN_UP, LATE_77),
    ([taken(95)], at(77), K.ts(90), Rule.TAKEN_UP, LATE_77),
    # Kueue's next attempt, not taken up yet, or none at the moment: the record still counts
    ([waiting(2)], None, K.ts(77), Rule.TAKEN_UP,
     R.Due(at(107), "deadline (67s later for the wait to be taken up)", Cause(Bound.TAKEN_UP, Waiting.AUTOSCALER))),
    ([], None, K.ts(77), Rule.TAKEN_UP,
     R.Due(at(107), "deadline (67s later for the wait to be taken up)", Cause(Bound.TAKEN_UP, Waiting.QUOTA))),
    # a prompt take-up recorded: the old deadline; a late one never past the outer bound
    ([taken(90)], None, K.ts(5), Rule.TAKEN_UP, R.Due(at(40), "deadline", Cause(Bound.TAKEN_UP, Waiting.CAPACITY))),
    ([taken(140)], None, K.ts(130), Rule.TAKEN_UP,
     R.Due(at(160), "outer bound (160s after submission)", Cause(Bound.OUTER, Waiting.CAPACITY))),
    # a malformed record: counted from submission, as a malformed rule or max-wait, and said
    ([taken(90)], at(77), "soon", Rule.TAKEN_UP,
     R.Due(at(40), f"deadline (from submission: malformed {TAKEN_UP}: 'soon' is not an RFC 3339 time)",
           Cause(Bound.SUBMITTED, Waiting.CAPACITY))),
    # the old rule reads no record, well-formed or not
    ([taken(90)], None, K.ts(77), Rule.SUBMITTED, R.Due(at(40), "deadline", Cause(Bound.SUBMITTED, Waiting.CAPACITY))),
    ([taken(90)], None, "soon", Rule.SUBMITTED, R.Due(at(40), "deadline", Cause(Bound.SUBMITTED, Waiting.CAPACITY))),
], ids=["restarted", "restarted-remembering-the-rewrite", "request-earliest", "memory-earliest", "retry-waiting",
        "between-attempts", "prompt", "past-the-outer-bound", "malformed", "submitted", "submitted-malformed"])
def test_the_recorded_take_up_counts_as_seen(provreqs, seen, record, rule, expected):
    assert due(job(), provreqs, seen, rule, wl=recording(record)) == expected


def test_without_the_record_a_restart_after_a_retry_counts_from_the_rewrite():
    # what the record prevents: the same restarted controller on a Workload that records nothing
    assert due(job(), [taken(90)], at(90), wl=recording(None)) == R.Due(
        at(120), "deadline (80s later for the wait to be taken up)", Cause(Bound.TAKEN_UP, Waiting.CAPACITY))


# ---------------------------------------------------------------------------- the protocol's step 1 under each rule

RESERVED = K.workload([K.cond("QuotaReserved", "True", "QuotaReserved", at=1)])
RV = RESERVED["metadata"]["resourceVersion"]


def counting(rule: Rule = Rule.TAKEN_UP, *provreqs: dict, seen: datetime | None = None) -> dl.Counting:
    return dl.Counting(rule, 4.0, tuple(provreqs), seen)


def test_a_gang_behind_other_requests_waits_past_the_submission_deadline_under_taken_up_only():
    behind = counting(Rule.TAKEN_UP, waiting())
    assert dl.decide_workload(job(), RESERVED, at(41), behind) == dl.Decision(
        dl.Action.WAIT, "outer bound (160s after submission) in 119.0s", after=119.0)
    assert dl.decide_workload(job(), RESERVED, at(161), behind) == dl.Decision(
        dl.Action.COMMIT, f"outer bound (160s after submission) passed 1.0s ago; Workload rv {RV} not admitted; "
                          "committing timeout", resource_version=RV, cause=Cause(Bound.OUTER, Waiting.AUTOSCALER))
    assert dl.decide_workload(job(), RESERVED, at(41), counting(Rule.SUBMITTED, waiting())) == dl.Decision(
        dl.Action.COMMIT, f"deadline passed 1.0s ago; Workload rv {RV} not admitted; committing timeout",
        resource_version=RV, cause=Cause(Bound.SUBMITTED, Waiting.AUTOSCALER))


def test_a_stockout_taken_up_late_is_caught_within_the_budget_of_its_take_up():
    late = counting(Rule.TAKEN_UP, taken(77))
    assert dl.decide_workload(job(), RESERVED, at(100), late) == dl.Decision(
        dl.Action.WAIT, "deadline (67s later for the wait to be taken up) in 7.0s", after=7.0)
    assert dl.decide_workload(job(), RESERVED, at(107), late) == dl.Decision(
        dl.Action.COMMIT, f"deadline (67s later for the wait to be taken up) passed 0.0s ago; Workload rv {RV} not "
                          "admitted; committing timeout", resource_version=RV,
        cause=Cause(Bound.TAKEN_UP, Waiting.CAPACITY))


def test_the_take_up_seen_before_counts_in_the_decision():
    # Kueue's second attempt, not taken up yet; the first was taken up at 77 s (the controller remembers it)
    retry = counting(Rule.TAKEN_UP, waiting(2), seen=at(77))
    assert dl.decide_workload(job(), RESERVED, at(100), retry) == dl.Decision(
        dl.Action.WAIT, "deadline (67s later for the wait to be taken up) in 7.0s", after=7.0)


def test_a_restarted_controller_commits_at_the_deadline_the_record_keeps():
    # its memory is gone; the retry rewrote the request's take-up to 90 s, which is all it remembers now (controller
    # counting(): memory and requests); the Workload records 77 s: the deadline stays at 107 s, not 120 s
    restarted = counting(Rule.TAKEN_UP, taken(90), seen=at(90))
    recorded = K.workload([K.cond("QuotaReserved", "True", "QuotaReserved", at=1)], annotations={TAKEN_UP: K.ts(77)})
    rv = recorded["metadata"]["resourceVersion"]
    assert dl.decide_workload(job(), recorded, at(100), restarted) == dl.Decision(
        dl.Action.WAIT, "deadline (67s later for the wait to be taken up) in 7.0s", after=7.0)
    assert dl.decide_workload(job(), recorded, at(107), restarted) == dl.Decision(
        dl.Action.COMMIT, f"deadline (67s later for the wait to be taken up) passed 0.0s ago; Workload rv {rv} not "
                          "admitted; committing timeout", resource_version=rv,
        cause=Cause(Bound.TAKEN_UP, Waiting.CAPACITY))
    assert dl.decide_workload(job(), RESERVED, at(107), restarted) == dl.Decision(       # without the record
        dl.Action.WAIT, "deadline (80s later for the wait to be taken up) in 13.0s", after=13.0)


def test_the_submission_deadline_of_a_job_without_creation_time_names_its_annotation():
    no_creation = job()
    del no_creation["metadata"]["creationTimestamp"]
    with pytest.raises(dl.BadDeadline) as e:
        dl.deadline_of(no_creation)
    assert (e.value.key, str(e.value)) == (DEADLINE, "the Job has no creationTimestamp")


def test_admission_won_no_deadline_and_malformed_annotations_under_the_new_rule():
    # admission won, no deadline, a malformed deadline: as under the old rule, whatever the requests say
    admitted = K.workload([K.cond("QuotaReserved", "True", "QuotaReserved", at=1),
                           K.cond("Admitted", "True", "Admitted", at=2)])
    assert dl.decide_workload(job(), admitted, at(200), counting(Rule.TAKEN_UP, taken(3))).action == "none"
    assert dl.decide_workload(job(None), RESERVED, at(200), counting()) == dl.Decision(
        dl.Action.NONE, "no admission deadline")
    assert dl.decide_workload(job("soon"), RESERVED, at(200), counting()) == dl.Decision(
        dl.Action.NONE, f"malformed {DEADLINE}: 'soon' {NOT_A_DURATION}; no action")
    assert dl.decide_workload(annotated(**{RULE: "fifo"}), RESERVED, at(30), counting(Rule.TAKEN_UP, waiting())) \
        == dl.Decision(dl.Action.WAIT, f"deadline (from submission: malformed {RULE}: 'fifo' is not a rule "
                                       "(taken-up, submitted)) in 10.0s", after=10.0)


def test_the_commit_records_its_cause_on_the_workload():
    now = at(107)
    assert dl.commit_patch(now, Cause(Bound.TAKEN_UP, Waiting.CAPACITY)) == {
        "metadata": {"annotations": {"tau-demo.io/admission-decision": "timed-out",
                                     "tau-demo.io/admission-decision-time": "2025-06-01T10:01:47.000000Z",
                                     "tau-demo.io/admission-decision-bound": "taken-up",
                                     "tau-demo.io/admission-decision-waiting-for": "capacity"}},
        "spec": {"active": False}}
    assert dl.commit_patch(now) == dl.commit_patch(now, None) == {
        "metadata": {"annotations": {"tau-demo.io/admission-decision": "timed-out",
                                     "tau-demo.io/admission-decision-time": "2025-06-01T10:01:47.000000Z"}},
        "spec": {"active": False}}


# ---------------------------------------------------------------------------- which Job a request concerns

def test_a_request_is_indexed_by_its_workloads_uid_and_leads_to_its_workload():
    pr = taken(5)
    assert routing.owner_workload_uids(pr) == [K.WL_UID]
    assert routing.owner_workloads(pr) == [(f"{K.NS}/{K.WL_NAME}", K.WL_UID)]
    foreign = {**pr, "metadata": {**pr["metadata"], "ownerReferences": [
        {"kind": "Job", "name": "x", "uid": "u1"}, {"kind": "Workload", "name": "", "uid": ""}]}}
    assert routing.owner_workload_uids(foreign) == [] and routing.owner_workloads(foreign) == []
    for half in ({"kind": "Workload", "name": "w"}, {"kind": "Workload", "uid": "u2"}):
        assert routing.owner_workloads({**pr, "metadata": {**pr["metadata"], "ownerReferences": [half]}}) == []
    assert routing.owner_workload_uids({"metadata": {}}) == []
