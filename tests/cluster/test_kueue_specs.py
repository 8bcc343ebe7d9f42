"""Kueue v0.19.2's own provisioning specs (the group kueue-specs, scenarios/kueue_specs/), on the session cluster:
each spec under the session's fake autoscaler, then the specs the real Cluster Autoscaler 1.36.1 can drive, in
one test under it.  A spec holds when every check of its scenario passes, among them that every
ProvisioningRequest condition was written by the autoscaler.  docs/kueue-specs.md comes from
`tau-demo kueue-specs --autoscaler both`, the same scenarios."""

from __future__ import annotations

import sys

import pytest

from k8s import heartbeat
from k8s.keys import REAL_CA_LEASE
from scenarios.kit import catalogue
from scenarios.kit.controllers import start_private
from scenarios.kit.harness import Context
from scenarios.kueue_specs import suite, table
from tests.cluster.conftest import wait_for

SPECS = suite.names()


def not_nodes(left: list[str]) -> list[str]:
    return [x for x in left if not x.startswith("Node ")]


@pytest.fixture(scope="module")
def specs_ctx(ctx):
    """The session context; the specs' nodes may outlive one spec (the autoscaler scales them down in its own time),
    so the pools are waited for once, after the last spec."""
    assert ctx.leftovers() == [], "a previous test left objects behind"
    yield ctx
    ctx.wait_pool_empty(180)
    assert ctx.leftovers() == []


@pytest.fixture
def drained(specs_ctx):
    """The fake's nodes scaled down, while it still runs (the real CA refuses to start beside any of them)."""
    specs_ctx.wait_pool_empty(180)
    return specs_ctx


@pytest.mark.parametrize("name", SPECS)
def test_kueue_spec_under_the_fake_autoscaler(specs_ctx, name):
    ctx = specs_ctx
    assert not_nodes(ctx.leftovers()) == []
    ctx.checks.clear()
    ctx.spec_results.clear()
    catalogue.by_name()[name].run(ctx)
    [result] = ctx.spec_results
    print("\n".join(table.rows([e for e in suite.entries() if e.scenario == name], {"fake": {result.number: result}})))
    failed = [what for ok, what in result.checks if not ok]
    assert result.holds and not result.error, failed or result.error
    assert not_nodes(ctx.leftovers()) == []


def test_the_specs_the_real_autoscaler_can_drive_hold_under_it(drained, k, kubeconfig, no_autoscaler, tmp_path):
    """One run of the group under the real Cluster Autoscaler (the session's fake is stopped meanwhile)."""
    ctx = Context(k, kubeconfig, out=sys.stdout, runs_dir=tmp_path, autoscaler="real")
    suite.configure(ctx)
    assert ctx.leftovers() == []
    start_private(ctx, REAL_CA_LEASE, ["real-ca"], "real Cluster Autoscaler", timeout=150)   # + suite.REAL_CA_ARGS
    try:
        summary, results = suite.run(ctx)
    finally:
        for c in list(ctx.started):
            c.stop()
        ctx.started.clear()
        wait_for(lambda: not heartbeat.alive(k, REAL_CA_LEASE), 30, what="the real CA gone")
    print("\n".join(table.rows(suite.entries(), {"real": results})))
    ran = {n for n, ok, _ in summary if ok is not None}
    skipped = {n for n, ok, _ in summary if ok is None}
    assert skipped == {e.scenario for e in suite.entries() if e.needs_fake}
    failed = {n: d for n, ok, d in summary if ok is False}
    assert not failed, failed
    assert len(results) == len(ran) and all(r.holds for r in results.values())
    wait_for(lambda: not ctx.autoscaler_nodes(), 60, what="no node of the real CA left")
    assert not_nodes(ctx.leftovers()) == []
