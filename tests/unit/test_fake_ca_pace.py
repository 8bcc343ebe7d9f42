"""The pacing model of the real autoscaler's loop (fake_ca/pace.py, pure): the loop time, the rest a fast loop waits,
the fit recovering a known model from samples and keeping every coefficient 0 or more."""

from __future__ import annotations

import pytest

from fake_ca.pace import MODEL, OFF, Loop, LoopModel, fit_model, loop_seconds, looked_at, rest


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
