"""The pacing model of the real autoscaler's loop (fake_ca/pace.py, pure): the loop time, the rest a fast loop waits,
the fit recovering a known model from samples and keeping every coefficient 0 or more."""

from __future__ import annotations

import pytest

from fake_ca.pace import MODEL, OFF, SOFT_TAINT_BUDGET, Loop, LoopModel, fit_model, loop_seconds, looked_at, rest


def test_a_loops_time_grows_with_what_it_looks_at_and_does():
    m = LoopModel(base=0.1, per_node=0.002, per_pod=0.001, per_request=0.004, per_made=0.3, per_deleted=0.5,
                  per_marked=0.7)
    assert loop_seconds(m, Loop()) == pytest.approx(0.1)
    assert loop_seconds(m, Loop(100, 200, 50)) == pytest.approx(0.1 + 0.2 + 0.2 + 0.2)
    assert loop_seconds(m, Loop(made=2, deleted=3, marked=1)) == pytest.approx(0.1 + 0.6 + 1.5 + 0.7)
    assert loop_seconds(OFF, Loop(1000, 1000, 1000, 9, 9)) == 0.0
    assert loop_seconds(LoopModel(base=-1.0), Loop()) == 0.0


def test_the_fitted_model_is_the_real_loops_time_its_marks_and_its_deletes():
    assert loop_seconds(MODEL, Loop(450, 900, 200, 4, 0)) == pytest.approx(0.80)
    assert loop_seconds(MODEL, Loop(deleted=10, marked=2)) == pytest.approx(0.80 + 2.9 + 0.68)


def test_a_fast_loop_rests_the_remainder_and_a_slow_one_none():
    m = LoopModel(base=0.5)
    assert rest(m, Loop(), spent=0.2) == pytest.approx(0.3)
    assert rest(m, Loop(), spent=0.7) == 0.0
    assert rest(OFF, Loop(5, 5, 5), spent=0.0) == 0.0


def test_the_fit_recovers_a_known_model():
    truth = LoopModel(base=0.08, per_node=0.003, per_pod=0.0005, per_request=0.002, per_made=0.2, per_deleted=0.4,
                      per_marked=0.3)
    samples = [(lp, 1 + (lp.nodes % 3), loop_seconds(truth, lp))
               for n in (0, 10, 50, 200) for p in (0, 40, 300) for q in (0, 5, 60)
               for made, gone, marked in ((0, 0, 0), (2, 1, 3), (4, 0, 1), (1, 5, 0))
               for lp in [Loop(n, p, q, made, gone, marked)]]
    got = fit_model(samples)
    for name in ("base", "per_node", "per_pod", "per_request", "per_made", "per_deleted", "per_marked"):
        assert getattr(got, name) == pytest.approx(getattr(truth, name), abs=1e-9), name
    only = fit_model(samples, ("base", "per_deleted"))
    assert only.per_node == only.per_made == 0.0 and only.per_deleted > 0


def test_the_fit_drops_a_coefficient_the_data_would_make_negative():
    # loop time falls as requests grow (noise): no negative cost per request; the rest is fitted again
    samples = [(Loop(n, 0, q), 1, 0.1 + 0.001 * n - 0.0001 * q) for n in (0, 100, 200) for q in (0, 50, 100)]
    got = fit_model(samples)
    assert got.per_request == 0.0 and got.per_node > 0 and got.base > 0


def test_the_fit_of_one_flat_sample_is_its_mean():
    got = fit_model([(Loop(), 4, 0.25), (Loop(), 1, 0.5)])
    assert got.base == pytest.approx(0.3) and got.per_node == got.per_pod == got.per_request == 0.0


def test_a_loop_looks_at_every_node_the_pods_not_finished_and_the_requests_not_answered():
    def pod(phase):
        return {"status": {"phase": phase}}

    def req(*conds):
        return {"status": {"conditions": [{"type": t, "status": s} for t, s in conds]}}
    pods = [pod("Running"), pod("Pending"), pod("Succeeded"), pod("Failed"), {}]
    reqs = [req(), req(("Accepted", "True")), req(("Provisioned", "False")), req(("Provisioned", "True")),
            req(("Failed", "True")), {"status": None}]
    assert looked_at([{}, {}], pods, reqs, made=2, deleted=1, marked=4) == Loop(2, 3, 4, 2, 1, 4)


def test_every_field_counts_once_at_its_own_rate():
    m = LoopModel(base=1.0, per_node=2.0, per_pod=3.0, per_request=5.0, per_made=7.0, per_deleted=11.0,
                  per_marked=13.0)
    assert loop_seconds(m, Loop(1, 0, 0)) == 3.0 and loop_seconds(m, Loop(0, 1, 0)) == 4.0
    assert loop_seconds(m, Loop(0, 0, 1)) == 6.0 and loop_seconds(m, Loop(made=1)) == 8.0
    assert loop_seconds(m, Loop(deleted=1)) == 12.0 and loop_seconds(m, Loop(marked=1)) == 14.0
    assert loop_seconds(m, Loop(2, 3, 4, 5, 6, 7)) == 1 + 4 + 9 + 20 + 35 + 66 + 91
    assert loop_seconds(LoopModel(base=0.5, per_node=-0.1), Loop(10)) == 0.0       # never below 0
    assert MODEL == LoopModel(base=0.80, per_marked=0.34, per_deleted=0.29) and OFF == LoopModel(0, 0, 0, 0, 0, 0, 0)


def test_the_rest_at_its_edges():
    m = LoopModel(base=0.5, per_node=0.25)
    assert rest(m, Loop(2), spent=0.25) == 0.75
    assert rest(m, Loop(2), spent=1.0) == 0.0 and rest(m, Loop(2), spent=1.5) == 0.0
    assert rest(m, Loop(), spent=0.0) == 0.5


def test_what_a_loop_looked_at_counts_each_kind_apart():
    def req(*conds):
        return {"status": {"conditions": [{"type": t, "status": s} for t, s in conds]}}
    assert looked_at([], [], []) == Loop(0, 0, 0, 0, 0, 0)
    assert looked_at([{}], [{"status": {"phase": "Succeeded"}}, {"status": None}], [{}]) == Loop(1, 1, 1, 0, 0, 0)
    # a condition True of another type, or False of an answering type, leaves the request waiting
    assert looked_at([], [], [req(("Failed", "False"), ("Provisioned", "Unknown")), req(("CapacityRevoked", "True")),
                              req(("Accepted", "True"), ("Failed", "True")), {"status": {"conditions": None}}]) == \
        Loop(0, 0, 3, 0, 0, 0)
    assert looked_at([], [], [], 1, 2, 3) == Loop(0, 0, 0, 1, 2, 3)


def test_a_negative_base_is_kept_in_the_fit_and_said_as_0():
    # loops that take 1 s per node less 1 s: the base is not dropped (only the per-object costs are), so the cost per
    # node is fitted with it; a model cannot give a negative base, so it says 0
    samples = [(Loop(n), 1, -1.0 + n) for n in range(5)]
    assert fit_model(samples) == LoopModel(base=0.0, per_node=pytest.approx(1.0))


def test_the_most_negative_coefficient_is_dropped_first_and_the_rest_fitted_again():
    # fitted over base, nodes and pods: per node -2.5, per pod -0.5.  Dropping the cost per node (the most negative)
    # leaves a positive cost per pod; dropping the cost per pod first would leave a negative one per node, then none
    samples = [(Loop(2, 2), 1, 1.0), (Loop(2, 1), 1, 2.0), (Loop(2, 2), 1, 2.0), (Loop(3, 0), 1, 0.0)]
    got = fit_model(samples, ("base", "per_node", "per_pod"))
    assert got == LoopModel(base=pytest.approx(5 / 11), per_pod=pytest.approx(7 / 11))
    # the same with nodes and pods swapped: the order is by coefficient, not by name
    swapped = [(Loop(lp.pods, lp.nodes), w, y) for lp, w, y in samples]
    assert fit_model(swapped, ("base", "per_node", "per_pod")) == \
        LoopModel(base=pytest.approx(5 / 11), per_node=pytest.approx(7 / 11))


def test_a_column_the_samples_never_vary_is_fitted_as_0():
    # pods always equal nodes: the second of the two columns is singular once the first is eliminated; requests are
    # never seen at all
    samples = [(Loop(n, n), 1, 0.5 + 0.3 * n) for n in range(4)]
    got = fit_model(samples, ("base", "per_node", "per_pod", "per_request"))
    assert got == LoopModel(base=pytest.approx(0.5), per_node=pytest.approx(0.3))
    assert fit_model([], ("base", "per_node")) == OFF
    # a singular column before others: the columns after it are still eliminated
    assert fit_model(samples, ("base", "per_request", "per_node")) == \
        LoopModel(base=pytest.approx(0.5), per_node=pytest.approx(0.3))


def test_a_pivot_of_exactly_the_threshold_is_still_one():
    # one loop of weight 1e-12 (its weighted sums exactly 1e-12): a column is singular only below 1e-12, so the base
    # takes the whole time and the cost per node, a column then left at 0, is 0 (not the time again)
    assert fit_model([(Loop(1), 1e-12, 2.0)], ("base", "per_node")) == LoopModel(base=2.0)


def test_the_fit_of_few_loops_weighs_them_as_given():
    # weights far below 1 are still weights, not singular columns
    samples = [(Loop(n), 0.001, 0.5 + 0.3 * n) for n in range(4)]
    assert fit_model(samples, ("base", "per_node")) == LoopModel(base=pytest.approx(0.5), per_node=pytest.approx(0.3))
    uneven = [(Loop(0), 3, 1.0), (Loop(0), 1, 2.0), (Loop(2), 2, 5.0)]
    assert fit_model(uneven, ("base", "per_node")) == LoopModel(base=pytest.approx(1.25), per_node=pytest.approx(1.875))


def test_a_loop_pays_for_no_more_marks_than_the_real_one_writes_soft_taints():
    """The real CA's --max-bulk-soft-taint-count (10): the fake's marks beyond it cost its loop nothing."""
    assert SOFT_TAINT_BUDGET == 10
    assert looked_at([], [], [], 0, 0, 9).marked == 9
    assert looked_at([], [], [], 0, 0, 10).marked == 10
    assert looked_at([], [], [], 0, 0, 11).marked == 10
    assert looked_at([], [], [], 2, 3, 40) == Loop(0, 0, 0, 2, 3, 10)
    assert loop_seconds(MODEL, looked_at([], [], [], 0, 0, 40)) == loop_seconds(MODEL, Loop(marked=10))
