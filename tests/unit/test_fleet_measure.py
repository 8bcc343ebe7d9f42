"""What a fleet run measured (fleet/measure.py, pure), on plain records and gangs, each figure exact: percentiles at
their edges, rates, every phase's quantiles, skews, firings and the depth a deadline bore, the counts over time and
their thinning, the peak of a pool, the whole summary, what a loop looked at (state_at, loop_samples) and the real
autoscaler's loops read from its klog."""

from __future__ import annotations

import pytest

from fleet import events, measure
from fleet.events import Gang


def rec(t, kind, name, typ="MODIFIED", **kw):
    return {"t": t, "kind": kind, "type": typ, "name": name, "deleting": False, **kw}


def node(t, name, pool="fleet-p0", typ="ADDED", deleting=False):
    return rec(t, events.NODE, name, typ, owner=pool, deleting=deleting)


def pod(t, name, phase="Running", typ="MODIFIED"):
    return rec(t, events.POD, name, typ, owner="g", phase=phase)


def req(t, name, typ="MODIFIED", **conds):
    return rec(t, events.PROVREQ, name, typ, owner="w", conditions={k: [v, ""] for k, v in conds.items()})


def wl(t, name, admitted, typ="MODIFIED"):
    return rec(t, events.WORKLOAD, name, typ, owner="g", admitted=admitted)


# ---------------------------------------------------------------------------- percentiles and rates

def test_the_nearest_rank_percentile_at_its_edges():
    assert measure.percentile([3, 1, 2], 0) == 1                  # rank at least 1
    assert measure.percentile([4, 3, 2, 1], 30) == 2              # ceil(1.2) = 2, not 1.2 rounded down
    assert measure.percentile([4, 3, 2, 1], 25) == 1              # ceil(1.0) = 1 exactly
    big = list(range(200, 0, -1))
    assert measure.percentile(big, 100) == 200 and measure.percentile(big, 60) == 120
    assert measure.percentile([5.5], 0) == 5.5 and measure.percentile([], 0) is None


def test_a_rate_is_events_over_the_span_in_any_order():
    assert measure.rate([4, 0, 2]) == 0.5
    assert measure.rate([1, 3]) == 0.5
    assert measure.rate([0, 0, 2]) == 1.0                          # the span is first to last, whatever lies between
    assert measure.rate([3, 3, 3]) is None and measure.rate([]) is None and measure.rate([9]) is None


# ---------------------------------------------------------------------------- phases, skews, firings, depth

def test_every_phase_from_submission_over_the_gangs_that_reached_it():
    gangs = {f"g{i}": Gang(f"g{i}", 1, submitted=10.0, reserved=10.0 + i, requested=11.0 + i, provisioned=12.0 + i,
                           admitted=13.0 + i, running=14.0 + i, succeeded=15.0 + i) for i in range(1, 21)}
    gangs["late"] = Gang("late", 1, submitted=None, reserved=5.0, admitted=6.0)   # never seen submitted: not counted
    gangs["stuck"] = Gang("stuck", 1, submitted=100.0, reserved=101.0)           # reserved only
    got = measure.phases(gangs)
    assert got == [
        measure.Phase("QuotaReserved", 21, 10.0, 19.0, 20.0),
        measure.Phase("request created", 20, 11.0, 20.0, 21.0),
        measure.Phase("Provisioned", 20, 12.0, 21.0, 22.0),
        measure.Phase("Admitted", 20, 13.0, 22.0, 23.0),
        measure.Phase("all pods Running", 20, 14.0, 23.0, 24.0),
        measure.Phase("Succeeded", 20, 15.0, 24.0, 25.0)]
    assert measure.phases({}) == [measure.Phase(label, 0, None, None, None) for label, _ in measure.PHASES]


def test_a_skew_is_the_spread_of_a_whole_gangs_pod_starts():
    gangs = {"all": Gang("all", 3, pod_running={"a": 5.0, "b": 7.5, "c": 6.0}),
             "more": Gang("more", 2, pod_running={"a": 2.0, "b": 3.0, "c": 9.0}),    # more seen than planned
             "part": Gang("part", 3, pod_running={"a": 1.0, "b": 4.0}),              # one pod never ran
             "one": Gang("one", 1, pod_running={"a": 3.0})}                          # nothing to spread
    assert measure.skews(gangs) == [2.5, 7.0]


def test_firings_counted_by_cause_and_by_bound():
    gangs = {"a": Gang("a", 1, timed_out=40, cause="waiting", bound="budget"),
             "b": Gang("b", 1, timed_out=41, cause="waiting", bound="budget"),
             "c": Gang("c", 1, timed_out=42, cause="refused", bound=""),
             "d": Gang("d", 1, provisioned=3)}
    assert measure.firings(gangs, {"c", "d"}) == {"total": 3, "false": 2, "true": 1, "cause:waiting": 2,
                                                  "bound:budget": 2, "cause:refused": 1}
    assert measure.firings({}, set()) == {"total": 0, "false": 0, "true": 0}


def test_the_depth_counts_the_gangs_provisioned_strictly_before_the_first_false_timeout():
    gangs = {"late": Gang("late", 1, timed_out=60),
             "first": Gang("first", 1, timed_out=50),
             "true": Gang("true", 1, timed_out=10),                 # out of stock: not a false one
             "p1": Gang("p1", 1, provisioned=49.5), "p2": Gang("p2", 1, provisioned=50), "p3": Gang("p3", 1)}
    assert measure.depth(gangs, {"true"}) == {"first_false_timeout": 50, "provisioned_before": 1}


def test_a_stockout_is_caught_from_each_out_of_stock_gangs_submission_to_its_timeout():
    gangs = {"s1": Gang("s1", 1, submitted=2, timed_out=44),
             "s2": Gang("s2", 1, submitted=1, timed_out=80),
             "s3": Gang("s3", 1, submitted=5, timed_out=46),
             "s4": Gang("s4", 1, submitted=3),                       # out of stock, never timed out: not caught
             "s5": Gang("s5", 1, timed_out=9),                       # never seen submitted: no wait to count
             "in": Gang("in", 1, submitted=0, timed_out=40)}         # in stock: a false one, not counted here
    stock = {"s1", "s2", "s3", "s4", "s5"}
    assert measure.caught(gangs, stock) == {"gangs": 5, "timed_out": 3, "p50": 42, "max": 79}   # 41, 42, 79
    assert measure.caught(gangs, set()) == {"gangs": 0, "timed_out": 0, "p50": None, "max": None}
    assert measure.caught(gangs, {"s4"}) == {"gangs": 1, "timed_out": 0, "p50": None, "max": None}
    gangs["s6"] = Gang("s6", 1, submitted=0, timed_out=50)
    assert measure.caught(gangs, stock | {"s6"})["p50"] == 42          # 41, 42, 50, 79: the 2nd of 4 (nearest rank)


# ---------------------------------------------------------------------------- counts over time

def test_the_counts_after_every_record_of_a_counted_kind():
    log = [rec(0, events.JOB, "j", "ADDED"),                          # not counted: no point
           node(1, "n1"), node(1.1, "x", pool="other"),               # another pool's: no point
           node(1.2, "n2"), node(1.3, "n2", deleting=True),
           pod(2, "p1"), pod(2.1, "p2", phase="Pending"), pod(2.2, "p1", phase="Succeeded"),
           pod(2.3, "p2", phase="Failed"), pod(2.4, "p3"), pod(2.5, "p3", typ="DELETED"),
           req(3, "r1"), req(3.1, "r2", Accepted="True"), req(3.2, "r1", Provisioned="False"),
           req(3.3, "r3", Accepted="True"), req(3.4, "r3", typ="DELETED", Accepted="True"),
           req(3.5, "r2", Provisioned="True"), req(3.6, "r4"), req(3.7, "r4", Failed="True"),
           wl(4, "w1", True), wl(4.1, "w2", True), wl(4.2, "w1", False), wl(4.3, "w2", True, typ="DELETED"),
           node(5, "n1", typ="DELETED")]
    assert measure.counts(log, {"fleet-p0"}) == [
        (1, 1, 0, 0, 0), (1.2, 2, 0, 0, 0), (1.3, 1, 0, 0, 0),
        (2, 1, 1, 0, 0), (2.1, 1, 2, 0, 0), (2.2, 1, 1, 0, 0), (2.3, 1, 0, 0, 0), (2.4, 1, 1, 0, 0), (2.5, 1, 0, 0, 0),
        (3, 1, 0, 1, 0), (3.1, 1, 0, 2, 0), (3.2, 1, 0, 1, 0), (3.3, 1, 0, 2, 0), (3.4, 1, 0, 1, 0),
        (3.5, 1, 0, 0, 0), (3.6, 1, 0, 1, 0), (3.7, 1, 0, 0, 0),
        (4, 1, 0, 0, 1), (4.1, 1, 0, 0, 2), (4.2, 1, 0, 0, 1), (4.3, 1, 0, 0, 0),
        (5, 0, 0, 0, 0)]
    assert measure.state_at(log, {"fleet-p0"})[:6] == [(1, 1, 0, 0), (1.2, 2, 0, 0), (1.3, 1, 0, 0), (2, 1, 1, 0),
                                                      (2.1, 1, 2, 0), (2.2, 1, 1, 0)]


def test_the_series_is_thinned_to_400_points_and_its_last():
    exactly = [node(i, f"n{i}") for i in range(400)]
    assert measure.series(exactly, {"fleet-p0"}) == [(i, i + 1, 0, 0) for i in range(400)]
    many = [node(i, f"n{i}") for i in range(1000)]
    thin = measure.series(many, {"fleet-p0"})
    assert len(thin) == 401
    assert thin == [(int(i * 2.5), int(i * 2.5) + 1, 0, 0) for i in range(400)] + [(999, 1000, 0, 0)]
    assert thin[:4] == [(0, 1, 0, 0), (2, 3, 0, 0), (5, 6, 0, 0), (7, 8, 0, 0)]


def test_a_pools_peak_is_its_most_live_nodes_at_once():
    log = [node(1, "a"), node(2, "b"), node(2.5, "x", pool="other"), node(3, "a", deleting=True), node(4, "c"),
           node(5, "d"), node(6, "b", typ="DELETED"), pod(7, "p")]
    assert measure.peak_nodes(log, "fleet-p0") == 3
    assert measure.peak_nodes(log, "other") == 1 and measure.peak_nodes(log, "none") == 0
    assert measure.peak_nodes([node(1, "a"), node(2, "b"), node(3, "c", deleting=True)], "fleet-p0") == 2
    assert measure.peak_nodes([node(1, "a"), node(2, "b"), node(3, "a", typ="DELETED"), node(4, "c")], "fleet-p0") == 2


# ---------------------------------------------------------------------------- the summary

def test_the_summary_holds_every_figure():
    gangs = {"a": Gang("a", 2, submitted=0.0, reserved=1.0, requested=2.0, provisioned=4.0, admitted=5.0,
                       running=8.0, succeeded=20.0, requests={"ra"}, pod_running={"a0": 6.0, "a1": 8.5}),
             "b": Gang("b", 3, submitted=1.0, reserved=2.0, requested=3.0, provisioned=8.0, admitted=10.0,
                       running=11.0, requests={"rb", "rb2"}, pod_running={"b0": 10.5, "b1": 11.0, "b2": 11.0}),
             "c": Gang("c", 1, submitted=2.0, reserved=3.0, requested=4.0, timed_out=30.0, cause="waiting",
                       bound="budget", requests={"rc"}, pod_running={})}
    log = [node(1, "n1"), node(2, "n2", pool="fleet-p1"), wl(5, "wa", True), node(6, "n3"),
           node(7, "n1", typ="DELETED"), req(9, "rc"), pod(12.5, "p")]
    m = measure.summary(gangs, log, {"b"}, {"fleet-p1", "fleet-p0"})
    assert m == {
        "gangs": 3,
        "phases": [{"name": "QuotaReserved", "count": 3, "p50": 1.0, "p95": 1.0, "p99": 1.0},
                   {"name": "request created", "count": 3, "p50": 2.0, "p95": 2.0, "p99": 2.0},
                   {"name": "Provisioned", "count": 2, "p50": 4.0, "p95": 7.0, "p99": 7.0},
                   {"name": "Admitted", "count": 2, "p50": 5.0, "p95": 9.0, "p99": 9.0},
                   {"name": "all pods Running", "count": 2, "p50": 8.0, "p95": 10.0, "p99": 10.0},
                   {"name": "Succeeded", "count": 1, "p50": 20.0, "p95": 20.0, "p99": 20.0}],
        "drain_rate": 0.25,
        "admission_rate": 0.2,
        "skew": {"gangs": 2, "p50": 0.5, "p95": 2.5, "max": 2.5, "over_2s": 1},
        "firings": {"total": 1, "false": 1, "true": 0, "cause:waiting": 1, "bound:budget": 1},
        "depth": {"first_false_timeout": 30.0, "provisioned_before": 2},
        "caught": {"gangs": 1, "timed_out": 0, "p50": None, "max": None},       # b: out of stock, not timed out
        "succeeded": 1,
        "requests": 4,
        "peak_nodes": {"fleet-p0": 2, "fleet-p1": 1},
        "pod_start_count": 5,
        "records": 7,
        "span": 12.5,
        "admission_cdf": [5.0, 9.0],
        "series": [(1, 1, 0, 0), (2, 2, 0, 0), (5, 2, 0, 1), (6, 3, 0, 1), (7, 2, 0, 1), (9, 2, 1, 1),
                   (12.5, 2, 1, 1)],
    }
    assert list(m) == ["gangs", "phases", "drain_rate", "admission_rate", "skew", "firings", "depth", "caught",
                       "succeeded", "requests", "peak_nodes", "pod_start_count", "records", "span", "admission_cdf", "series"]


def test_the_summary_of_nothing():
    m = measure.summary({}, [], set(), set())
    assert m["span"] == 0.0 and m["series"] == [] and m["peak_nodes"] == {} and m["admission_cdf"] == []
    assert m["skew"] == {"gangs": 0, "p50": None, "p95": None, "max": None, "over_2s": 0}
    assert m["drain_rate"] is None and m["admission_rate"] is None and m["records"] == 0 and m["gangs"] == 0


def test_a_skew_of_exactly_2s_is_not_over_2s():
    gangs = {"a": Gang("a", 2, pod_running={"x": 1.0, "y": 3.0}), "b": Gang("b", 2, pod_running={"x": 1.0, "y": 3.5})}
    assert measure.summary(gangs, [], set(), set())["skew"] == {"gangs": 2, "p50": 2.0, "p95": 2.5, "max": 2.5,
                                                                "over_2s": 1}
    twenty = {f"g{i}": Gang(f"g{i}", 2, pod_running={"x": 0.0, "y": float(i)}) for i in range(1, 21)}
    assert measure.summary(twenty, [], set(), set())["skew"] == {"gangs": 20, "p50": 10.0, "p95": 19.0, "max": 20.0,
                                                                 "over_2s": 18}


# ---------------------------------------------------------------------------- what the loops looked at

def test_loop_samples_read_the_state_at_the_intervals_start_and_the_nodes_made_and_gone_in_it():
    log = [node(1, "n1"), pod(1, "p1"), node(2, "n2"), node(2, "n2b", pool="other"),
           node(2.5, "n2", typ="MODIFIED"),                                      # MODIFIED: not made again
           req(3, "r1"), node(4, "n3"), node(4, "n1", typ="DELETED"), node(4, "x", pool="other", typ="DELETED"),
           node(6, "n4")]
    scrapes = [(1.0, 5, 1.0), (2.0, 7, 2.0), (4.0, 9, 6.0), (4.0, 9, 6.0), (6.0, 10, 6.5)]
    assert measure.loop_samples(scrapes, log, {"fleet-p0"}) == [
        # (1, 2]: n2 made; at 1 the state after both records at 1
        {"nodes": 1, "pods": 1, "requests": 0, "made": 0.5, "deleted": 0.0, "loops": 2, "mean": 0.5},
        # (2, 4]: n3 made and n1 deleted at 4; at 2 the state after n2
        {"nodes": 2, "pods": 1, "requests": 0, "made": 0.5, "deleted": 0.5, "loops": 2, "mean": 2.0},
        # (4, 6]: n4 made at 6
        {"nodes": 2, "pods": 1, "requests": 1, "made": 1.0, "deleted": 0.0, "loops": 1, "mean": 0.5}]
    assert measure.loop_samples([(0.5, 1, 0.0), (1.5, 2, 0.25)], log, {"fleet-p0"}) == [
        {"nodes": 0, "pods": 0, "requests": 0, "made": 1.0, "deleted": 0.0, "loops": 1, "mean": 0.25}]
    assert measure.loop_samples([(0.5, 3, 0.0), (1.5, 2, 0.25)], log, {"fleet-p0"}) == []    # counter reset
    assert measure.loop_samples([(0.5, 3, 0.0)], log, {"fleet-p0"}) == []


# ---------------------------------------------------------------------------- the real autoscaler's klog

KLOG = """I1205 09:00:00.000000       1 main.go:1] Cluster Autoscaler 1.36.1
I1205 09:00:01.000000       1 trigger.go:142] Autoscaler loop triggered by unschedulable pod appearing
garbage between the lines
W1205 09:59:59.500000       1 trigger.go:142] Autoscaler loop triggered immediately after a scale up
I1205 09:59:59.600000       1 orchestrator.go:177] Final scale-up plan: [{fleet-p1 6->10 (max: 12)} {fleet-p0 1->3 (max: 9)}]
I1205 09:59:59.700000       1 orchestrator.go:177] Final scale-up plan: [{fleet-p2 0->1 (max: 12)}]
E1205 10:00:00.250000       1 trigger.go:142] Autoscaler loop triggered immediately after a scale up
I1205 10:00:00.300000       1 delete.go:1] Scale-down: removing empty node "fleet-p0-abcde"
I1205 10:00:00.310000       1 delete.go:1] Scale-down: removing empty node "fleet-p0-fghij"
I1205 10:00:00.320000       1 taints.go:1] Successfully added DeletionCandidateOfClusterAutoscaler on node x
I1205 10:00:00.330000       1 taints.go:1] Successfully released DeletionCandidateOfClusterAutoscaler on node y
I1205 10:00:00.335000       1 taints.go:1] Successfully added DeletionCandidateOfClusterAutoscaler to [node w] at once
I1205 10:00:00.340000       1 taints.go:1] Releasing taint {Key:DeletionCandidateOfClusterAutoscaler}
I1205 10:00:00.350000       1 taints.go:1] Successfully added ToBeDeletedByClusterAutoscaler on node z
F1205 10:01:00.250000       1 trigger.go:142] Autoscaler loop triggered immediately after a scale down
I1205 10:01:00.250000       1 trigger.go:142] Autoscaler loop triggered immediately after a scale up
I1205 10:01:05.000000       1 trigger.go:142] Autoscaler loop triggered by a 10s timer
I1205 10:01:15.250000       1 trigger.go:142] Autoscaler loop triggered immediately after a scale down
"""


def test_each_loop_of_the_last_run_its_time_and_what_it_did():
    assert measure.ca_loops(KLOG) == [
        {"made": 0, "deleted": 0, "taints": 0, "seconds": pytest.approx(3598.5)},   # 09:00:01 to 09:59:59.5
        {"made": 7, "deleted": 0, "taints": 0, "seconds": pytest.approx(0.75)},     # across the hour
        {"made": 0, "deleted": 2, "taints": 3, "seconds": pytest.approx(60.0)},     # across the minute
        {"made": 0, "deleted": 0, "taints": 0, "seconds": 0.0},                     # the next began at once
        # the loop whose next one the timer started is left out (its gap holds the wait); the timer's own counts
        {"made": 0, "deleted": 0, "taints": 0, "seconds": pytest.approx(10.25)}]
    # a loop before the log's first start line, and one whose next one the clock put before it (midnight): left out
    text = ("I1205 08:00:00.000000 1 trigger.go:1] Autoscaler loop triggered by unschedulable pod appearing\n"
            "I1205 08:00:02.000000 1 trigger.go:1] Autoscaler loop triggered immediately after a scale up\n"
            "I1205 09:00:00.000000 1 main.go:1] Cluster Autoscaler 1.36.1\n"
            "I1205 23:59:59.000000 1 trigger.go:1] Autoscaler loop triggered by unschedulable pod appearing\n"
            "I1206 00:00:01.000000 1 trigger.go:1] Autoscaler loop triggered immediately after a scale up\n"
            "I1206 00:00:02.500000 1 trigger.go:1] Autoscaler loop triggered immediately after a scale up\n")
    assert measure.ca_loops(text) == [{"made": 0, "deleted": 0, "taints": 0, "seconds": pytest.approx(1.5)}]
    # without a start line every loop counts; lines before the first loop say nothing of one
    text = ("I1205 08:00:00.000000 1 orchestrator.go:1] Final scale-up plan: [{fleet-p0 0->4 (max: 9)}]\n"
            "I1205 08:00:00.100000 1 delete.go:1] Scale-down: removing empty node \"n\"\n"
            "I1205 08:00:00.200000 1 taints.go:1] Successfully added DeletionCandidateOfClusterAutoscaler on x\n"
            "I1205 08:00:01.000000 1 trigger.go:1] Autoscaler loop triggered by unschedulable pod appearing\n"
            "X1205 08:00:01.500000 1 trigger.go:1] Autoscaler loop triggered immediately after a scale up\n"
            "I1205 08:00:02.000000 1 trigger.go:1] Autoscaler loop triggered immediately after a scale up\n")
    assert measure.ca_loops(text) == [{"made": 0, "deleted": 0, "taints": 0, "seconds": pytest.approx(1.0)}]
    text = ("I1205 08:00:00.000000 1 trigger.go:1] Autoscaler loop triggered by unschedulable pod appearing\n"
            "I1205 08:00:00.500000 1 trigger.go:1] Autoscaler loop triggered immediately after a scale up\n")
    assert measure.ca_loops(text) == [{"made": 0, "deleted": 0, "taints": 0, "seconds": pytest.approx(0.5)}]


def test_the_gangs_of_a_pool_out_of_stock():
    class G:
        def __init__(self, name, pool):
            self.name, self.pool = name, pool
    assert measure.out_of_stock_gangs([G("a", 0), G("b", 1), G("c", 2), G("d", 1)], (1, 2)) == {"b", "c", "d"}
    assert measure.out_of_stock_gangs([G("a", 0)], ()) == set()
