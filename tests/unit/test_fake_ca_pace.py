"""The pacing model of the real autoscaler's loop (fake_ca/pace.py, pure): the loop time, the rest a fast loop waits,
the fit recovering a known model from samples and keeping every coefficient 0 or more."""

from __future__ import annotations

import pytest

from fake_ca.pace import OFF, LoopModel, fit_model, loop_seconds, looked_at, rest


def test_a_loops_time_grows_with_what_it_looks_at():
    m = LoopModel(base=0.1, per_node=0.002, per_pod=0.001, per_request=0.004)
    assert loop_seconds(m, 0, 0, 0) == pytest.approx(0.1)
    assert loop_seconds(m, 100, 200, 50) == pytest.approx(0.1 + 0.2 + 0.2 + 0.2)
    assert loop_seconds(OFF, 1000, 1000, 1000) == 0.0
    assert loop_seconds(LoopModel(base=-1.0), 0, 0, 0) == 0.0


def test_a_fast_loop_rests_the_remainder_and_a_slow_one_none():
    m = LoopModel(base=0.5)
    assert rest(m, 0, 0, 0, spent=0.2) == pytest.approx(0.3)
    assert rest(m, 0, 0, 0, spent=0.7) == 0.0
    assert rest(OFF, 5, 5, 5, spent=0.0) == 0.0


def test_the_fit_recovers_a_known_model():
    truth = LoopModel(base=0.08, per_node=0.003, per_pod=0.0005, per_request=0.002)
    samples = [(n, p, q, 1 + (n % 3), loop_seconds(truth, n, p, q))
               for n in (0, 10, 50, 200) for p in (0, 40, 300) for q in (0, 5, 60)]
    got = fit_model(samples)
    for name in ("base", "per_node", "per_pod", "per_request"):
        assert getattr(got, name) == pytest.approx(getattr(truth, name), abs=1e-9), name


def test_the_fit_drops_a_coefficient_the_data_would_make_negative():
    # loop time falls as requests grow (noise): no negative cost per request; the rest is fitted again
    samples = [(n, 0, q, 1, 0.1 + 0.001 * n - 0.0001 * q) for n in (0, 100, 200) for q in (0, 50, 100)]
    got = fit_model(samples)
    assert got.per_request == 0.0 and got.per_node > 0 and got.base > 0


def test_the_fit_of_one_flat_sample_is_its_mean():
    got = fit_model([(0, 0, 0, 4, 0.25), (0, 0, 0, 1, 0.5)])
    assert got.base == pytest.approx(0.3) and got.per_node == got.per_pod == got.per_request == 0.0


def test_a_loop_looks_at_every_node_the_pods_not_finished_and_the_requests_not_answered():
    def pod(phase):
        return {"status": {"phase": phase}}

    def req(*conds):
        return {"status": {"conditions": [{"type": t, "status": s} for t, s in conds]}}
    pods = [pod("Running"), pod("Pending"), pod("Succeeded"), pod("Failed"), {}]
    reqs = [req(), req(("Accepted", "True")), req(("Provisioned", "False")), req(("Provisioned", "True")),
            req(("Failed", "True")), {"status": None}]
    assert looked_at([{}, {}], pods, reqs) == (2, 3, 4)
