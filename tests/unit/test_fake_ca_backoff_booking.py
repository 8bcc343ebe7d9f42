"""The two backoffs and the booking of the fake autoscaler, on plain objects: every answer of the
injector's availability check with its reason, the node-group backoff at its boundaries (the real
autoscaler compares with time.Before), which requests book capacity and how many of their pods count
as consumed."""

from __future__ import annotations

from k8s.keys import CONSUME_PROVREQ_ANNOTATION_OLD
from fake_ca import backoff, booking
from fake_ca.backoff import Availability
from test_fake_ca_loop import G, at, cond, consuming, pr, provisioned, templates_for
from test_planner import TPL, template

RETRY = backoff.RetryPolicy(5, 20)


def not_found(seconds=0.0) -> dict:
    return pr(conds=[cond("Accepted", "True", "Accepted", seconds),
                     cond("Provisioned", "False", "CapacityIsNotFound", seconds)])


# ---------------------------------------------------------------------------- request retry

def test_a_new_request_is_available_and_keeps_what_was_remembered():
    assert backoff.availability(pr(), 7.0, at(1), RETRY) == Availability(True, "new", 7.0)
    assert backoff.availability(pr(conds=[cond("Accepted", "True")]), None, at(1), RETRY) == Availability(True, "new")


def test_provisioned_or_failed_requests_are_never_picked_and_their_retry_time_is_forgotten():
    for c in (cond("Provisioned", "True"), cond("Failed", "True")):
        assert backoff.availability(pr(conds=[c]), 7.0, at(1), RETRY) == Availability(False, "Failed or Provisioned")


def test_provisioned_unknown_is_never_picked_but_its_retry_time_is_kept():
    r = pr(conds=[cond("Provisioned", "Unknown")])
    assert backoff.availability(r, 7.0, at(100), RETRY) == Availability(False, "Provisioned=Unknown", 7.0)


def test_a_request_in_backoff_says_for_how_long_and_when_it_is_due():
    assert backoff.availability(not_found(), None, at(3), RETRY) == Availability(
        False, "in backoff for 2.0s more", 5, at(5))
    assert backoff.availability(not_found(), 10, at(3), RETRY) == Availability(
        False, "in backoff for 7.0s more", 10, at(10))


def test_the_retry_is_due_only_after_the_retry_time_has_passed():
    """injector.go: LastTransitionTime.Add(retryTime).Before(now): not at the very instant."""
    assert backoff.availability(not_found(), None, at(5), RETRY) == Availability(
        False, "in backoff for 0.0s more", 5, at(5))
    assert backoff.availability(not_found(), None, at(5.5), RETRY) == Availability(True, "retry after 5s", 10)
    assert backoff.availability(not_found(), 20, at(20.5), RETRY) == Availability(True, "retry after 20s", 20)


def test_provisioned_false_without_a_transition_time_waits_a_full_retry_time_from_now():
    r = pr(conds=[{"type": "Provisioned", "status": "False", "reason": "CapacityIsNotFound"}])
    assert backoff.availability(r, None, at(50), RETRY) == Availability(False, "in backoff for 5.0s more", 5, at(55))


# ---------------------------------------------------------------------------- node-group backoff

def test_a_failure_at_the_instant_a_backoff_ends_keeps_its_duration_and_a_later_one_doubles_it():
    first = backoff.register_failure(None, at(0), G, "timeout", "x")
    assert backoff.register_failure(first, at(60), G, "timeout", "y") == backoff.GroupBackoff(60, at(120), at(60), "timeout", "y")
    assert backoff.register_failure(first, at(60.5), G, "timeout", "y") == backoff.GroupBackoff(120, at(180.5), at(60.5), "timeout", "y")


def test_backoff_data_is_kept_up_to_the_reset_timeout_inclusive():
    long = backoff.GroupBackoff(240, at(240), at(0), "timeout", "x")
    assert backoff.register_failure(long, at(3600), G, "timeout", "y") == backoff.GroupBackoff(300, at(3900), at(3600), "timeout", "y")
    assert backoff.register_failure(long, at(3600.5), G, "timeout", "y") == backoff.GroupBackoff(60, at(3660.5), at(3600.5), "timeout", "y")
    assert backoff.forget_stale({"a": long, "b": backoff.GroupBackoff(60, at(100), at(100), "timeout", "z")}, at(3650), G) == {
        "b": backoff.GroupBackoff(60, at(100), at(100), "timeout", "z")}


# ---------------------------------------------------------------------------- booking

def booked_templates(provreqs, templates=None) -> list[str]:
    got = booking.booked_pods(provreqs, templates_for(*provreqs) if templates is None else templates)
    return [ps.template_name for ps in got]


def test_every_booking_request_books_its_pods_whatever_comes_before_it():
    waiting, unparsable = pr("req-a", count=1), provisioned("req-b", count=1)
    booked = provisioned("req-c", count=2, uid="uid-c")
    assert booked_templates([waiting, booked]) == [f"{TPL}-req-c"] * 2
    assert booked_templates([unparsable, booked]) == [f"{TPL}-req-b"] + [f"{TPL}-req-c"] * 2
    gone = templates_for(booked)                               # req-b's PodTemplate was deleted
    assert booked_templates([unparsable, booked], gone) == [f"{TPL}-req-c"] * 2


def test_a_request_without_namespace_books_with_the_templates_of_default():
    r = provisioned("req-a", count=1)
    del r["metadata"]["namespace"]
    tpl = template(name=f"{TPL}-req-a", namespace="default")
    assert booked_templates([r], {("default", f"{TPL}-req-a"): tpl}) == [f"{TPL}-req-a"]
    assert booked_templates([r], {("demo", f"{TPL}-req-a"): tpl}) == []


def test_only_scheduled_live_pods_of_the_request_in_its_namespace_count_as_consumed():
    r = provisioned("req-a", count=5)
    elsewhere = consuming("req-a", "n1")
    elsewhere["metadata"]["namespace"] = "other"
    leaving = consuming("req-a", "n2")
    leaving["metadata"]["deletionTimestamp"] = "2026-12-01T10:00:00Z"
    pending = consuming("req-a", "n3")
    del pending["spec"]["nodeName"]
    for_b = consuming("req-b", "n4")
    unannotated = consuming("req-a", "n5", key="example.com/other")
    counted = [consuming("req-a", "n6"), consuming("req-a", "n7", key=CONSUME_PROVREQ_ANNOTATION_OLD)]
    assert booking.consuming_pods_scheduled(r, [elsewhere, leaving, pending, for_b, unannotated] + counted) == 2
    assert booking.consuming_pods_scheduled(r, [for_b, unannotated]) == 0


def test_total_pods_counts_every_pod_set_and_skips_malformed_ones():
    r = pr(count=2)
    r["spec"]["podSets"] += [{"podTemplateRef": {"name": "no-count"}}, "junk", {"count": "3"}]
    assert booking.total_pods(r) == 5
    assert booking.total_pods({"spec": {}}) == 0


def test_a_check_capacity_request_for_another_processor_instance_books_nothing():
    from test_fake_ca_loop import cond as c, pr as req, templates_for
    from k8s.keys import CHECK_CAPACITY
    mine = req("req-m", count=1, cls=CHECK_CAPACITY, conds=[c("Provisioned", "True", "CapacityIsFound")])
    theirs = req("req-t", count=1, cls=CHECK_CAPACITY, conds=[c("Provisioned", "True", "CapacityIsFound")],
                 params={"processorInstance": "other"})
    assert booking.books(mine) and not booking.books(theirs)
    assert len(booking.booked_pods([mine, theirs], templates_for(mine, theirs))) == 1
