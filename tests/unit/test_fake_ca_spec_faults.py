"""The fake autoscaler's knobs that Kueue's own provisioning specs need (scenarios/kueue_specs/), each decision
pinned whole on plain objects: fail the first N attempts of a Workload (the attempt read from Kueue's request
name, not from a clock), a booking of the request's own length, CapacityRevoked before a request is ever
provisioned, and the deletion of old requests (the real one's DeleteOldProvReqs, at a TTL of the request's own
or --terminal-ttl)."""

from __future__ import annotations

import pytest

from fake_ca import lifecycle, params as P
from fake_ca.lifecycle import Delete, Pick
from test_fake_ca_lifecycle import acceptance, refreshed, then, update
from test_fake_ca_loop import OPTS, at, cluster, cond, loop, pr, provisioned, ts

FAILED_MSG = "attempt {} failed by fault injection (fake-ca fakeCAFailAttempts={})"


def attempt_pr(attempt: int | None, fail: str | None = "2", **kw) -> dict:
    name = "wl-a-check" + (f"-{attempt}" if attempt is not None else "")
    return pr(name, params={"fakeCAFailAttempts": fail} if fail is not None else None, **kw)


# ---------------------------------------------------------------------------- failing the first attempts

@pytest.mark.parametrize("attempt", [1, 2])
def test_the_first_n_attempts_of_a_workload_are_accepted_then_failed(attempt):
    r = attempt_pr(attempt)
    key = f"demo/{r['metadata']['name']}"
    acc, after = acceptance(r)
    acc = lifecycle.Write(acc.provreq, acc.ctype, acc.conditions, f"provreq {key}: accepted")
    assert loop(cluster(r)).pick == Pick(key, f"uid-{r['metadata']['name']}", [acc, then(
        after, "Failed", "True", "AttemptFailedInjected", FAILED_MSG.format(attempt, 2),
        f"provreq {key}: INJECTED fault: attempt {attempt} fails (fakeCAFailAttempts=2; the real autoscaler fails "
        "best-effort-atomic requests only for missing pod templates or after 7 days)", apply=False)])


def test_the_attempt_after_the_failing_ones_is_provisioned_as_usual():
    plan = loop(cluster(attempt_pr(3)))
    assert plan.pick.scale_up is not None and [w.ctype for w in plan.pick.writes] == ["Accepted"]
    assert loop(cluster(attempt_pr(1, fail="0"))).pick.scale_up is not None          # 0: no attempt fails
    assert loop(cluster(attempt_pr(1, fail=None))).pick.scale_up is not None         # no parameter: none


def test_a_request_name_without_an_attempt_number_counts_as_attempt_one_as_kueue_reads_it():
    assert loop(cluster(attempt_pr(None, fail="1"))).pick.writes[-1].condition["reason"] == "AttemptFailedInjected"
    odd = pr("wl-a-check-2x", params={"fakeCAFailAttempts": "1"})                 # no number at the very end
    assert loop(cluster(odd)).pick.writes[-1].condition["message"] == FAILED_MSG.format(1, 1)


def test_the_attempt_number_is_the_one_kueue_gave_not_a_count_of_what_the_fake_saw():
    # attempt 2 arrives first (attempt 1 was answered by another autoscaler, or before a restart): still failed
    assert loop(cluster(attempt_pr(2, fail="2"))).pick.writes[-1].condition["reason"] == "AttemptFailedInjected"
    assert loop(cluster(attempt_pr(12, fail="11"))).pick.scale_up is not None


def test_a_failed_attempt_is_not_processed_again():
    r = attempt_pr(1, conds=[cond("Accepted", "True", "Accepted"), cond("Failed", "True", "AttemptFailedInjected")])
    plan = loop(cluster(r))
    assert plan.pick is None and plan.refresh == []


# ---------------------------------------------------------------------------- the request's own booking

def test_a_request_books_its_own_time_instead_of_the_flags():
    r = provisioned("req-a", params={"fakeCABookingSeconds": "3"})
    assert refreshed(r, 2.5) == []
    assert refreshed(r, 3) == [update(r, "BookingExpired", "True", "CapacityReservationTimeExpired",
                                      "Capacity reservation time is expired", 3,
                                      "provreq demo/req-a: booking of 3s expired")]
    long = provisioned("req-a", params={"fakeCABookingSeconds": "600"})
    assert refreshed(long, OPTS.booking) == []                                    # longer than --booking
    zero = provisioned("req-a", params={"fakeCABookingSeconds": "0"})
    assert [w.why for w in refreshed(zero, 0)] == ["provreq demo/req-a: booking of 0s expired"]


# ---------------------------------------------------------------------------- CapacityRevoked before provisioning

def test_capacity_is_revoked_before_provisioning_once_the_request_is_old_enough():
    r = pr(params={"fakeCARevokeBeforeProvisionedSeconds": "4"},
           conds=[cond("Accepted", "True", "Accepted"), cond("Provisioned", "False", "CapacityIsNotFound")])
    assert refreshed(r, 3.5) == []
    why = ("provreq demo/req-a: INJECTED fault: revoking capacity 4s after creation, never provisioned (the real "
           "autoscaler never writes CapacityRevoked)")
    assert refreshed(r, 4) == [update(r, "CapacityRevoked", "True", "CapacityRevokedInjected",
                                      "capacity revoked by fault injection (fake-ca)", 4, why)]
    assert refreshed(pr(), 100) == []                                              # not asked for


def test_a_revoked_request_is_revoked_once_and_never_processed_again():
    r = pr(params={"fakeCARevokeBeforeProvisionedSeconds": "1"},
           conds=[cond("CapacityRevoked", "True", "CapacityRevokedInjected")])
    plan = loop(cluster(r), seconds=5)
    assert plan.refresh == [] and plan.pick is None


def test_revocation_before_provisioning_does_not_touch_a_provisioned_request():
    r = provisioned("req-a", params={"fakeCARevokeBeforeProvisionedSeconds": "1", "fakeCABookingSeconds": "100"})
    assert refreshed(r, 50) == []


# ---------------------------------------------------------------------------- deleting old requests

def test_a_request_is_deleted_once_provisioned_or_failed_longer_ago_than_its_ttl():
    r = provisioned("req-a", params={"fakeCATTLSeconds": "5", "fakeCABookingSeconds": "100"})
    assert lifecycle.old_requests([r], at(5), OPTS) == []
    assert lifecycle.old_requests([r], at(5.5), OPTS) == [Delete(
        r, f"provreq demo/req-a: Provisioned=True since {ts(0)}, more than 5s ago: deleting it (DeleteOldProvReqs)")]
    failed = pr(params={"fakeCATTLSeconds": "2"}, conds=[cond("Failed", "True", "Expired", seconds=1)])
    assert [d.why for d in lifecycle.old_requests([failed], at(4), OPTS)] == [
        f"provreq demo/req-a: Failed=True since {ts(1)}, more than 2s ago: deleting it (DeleteOldProvReqs)"]


def test_any_status_of_provisioned_counts_and_a_request_without_either_condition_stays():
    waiting = pr(params={"fakeCATTLSeconds": "2"}, conds=[cond("Provisioned", "False", "CapacityIsNotFound")])
    assert [d.provreq for d in lifecycle.old_requests([waiting], at(3), OPTS)] == [waiting]
    accepted = pr(params={"fakeCATTLSeconds": "2"}, conds=[cond("Accepted", "True", "Accepted")])
    assert lifecycle.old_requests([accepted], at(100), OPTS) == []


def test_the_terminal_ttl_flag_is_the_default_and_an_unusable_parameter_falls_back_to_it():
    r = provisioned("req-a")
    week = OPTS.terminal_ttl
    assert week == 7 * 24 * 3600
    assert lifecycle.old_requests([r], at(week), OPTS) == []
    assert len(lifecycle.old_requests([r], at(week + 1), OPTS)) == 1
    assert len(lifecycle.old_requests([r], at(11), lifecycle.Options(terminal_ttl=10))) == 1
    bad = provisioned("req-a", params={"fakeCATTLSeconds": "soon"})
    assert lifecycle.old_requests([bad], at(11), lifecycle.Options(terminal_ttl=10))[0].provreq is bad
    other_class = provisioned("req-b", cls="queued-provisioning.gke.io")          # any class, as the real one
    assert len(lifecycle.old_requests([other_class], at(11), lifecycle.Options(terminal_ttl=10))) == 1


def test_a_request_deleted_in_a_loop_is_neither_refreshed_nor_picked_in_it():
    old = provisioned("req-a", params={"fakeCATTLSeconds": "1"})                  # its booking also ends (60s)
    waiting = pr("req-b", created=-1, params={"fakeCATTLSeconds": "1"},
                 conds=[cond("Provisioned", "False", "CapacityIsNotFound", seconds=-90)])
    plan = loop(cluster(old, waiting), seconds=OPTS.booking)
    assert [d.provreq["metadata"]["name"] for d in plan.deletes] == ["req-b", "req-a"]
    assert plan.refresh == [] and plan.pick is None


# ---------------------------------------------------------------------------- the parameters

def test_the_new_parameters_are_read_and_checked():
    got = P.parse(pr(params={"fakeCAFailAttempts": " 3 ", "fakeCABookingSeconds": "2.5", "fakeCATTLSeconds": "7",
                             "fakeCARevokeBeforeProvisionedSeconds": "1"}))
    assert (got.fail_attempts, got.booking, got.ttl, got.revoke_unprovisioned) == (3, 2.5, 7.0, 1.0)
    assert P.parse(pr()).fail_attempts == 0
    assert P.parse(pr(params={"fakeCAFailAttempts": "1000"})).fail_attempts == 1000


@pytest.mark.parametrize("value", ["-1", "1.5", "two", "", "1001"])
def test_an_unusable_attempt_count_fails_the_request_saying_why(value):
    with pytest.raises(P.BadParameter) as e:
        P.parse(pr(params={"fakeCAFailAttempts": value}))
    assert str(e.value) == f"parameters.fakeCAFailAttempts={value!r} is not a number of attempts (0..1000)"
    plan = loop(cluster(pr(params={"fakeCAFailAttempts": value})))
    assert plan.pick is None and plan.failed[0].condition["message"] == f"invalid parameters: {e.value}"


def test_the_fault_decisions_use_the_request_time_not_the_wall_clock():
    assert refreshed(provisioned("req-a", params={"fakeCABookingSeconds": "3"}), 3)[0].condition[
        "lastTransitionTime"] == ts(3) == at(3).strftime("%Y-%m-%dT%H:%M:%SZ")
