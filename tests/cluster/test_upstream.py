"""The upstream reports (scenarios/upstream/), each through its record on the real cluster: it says
whether the defect reproduces on Kueue v0.19.2 (or, for the autoscaler's reports, on the autoscaler that
ran), which layer bounds it, and leaves nothing behind.  The Kueue reports run under the session's fake
autoscaler; the autoscaler's reports under the real Cluster Autoscaler 1.36.1, the version they are about (the
fake's side of #9805 is the conformance probe booking-consumed-by-pods)."""

from __future__ import annotations

import sys

import pytest

from demo.toolchain.components import CLUSTER_AUTOSCALER_BINARY
from k8s import heartbeat
from k8s.keys import REAL_CA_LEASE
from scenarios.kit import catalogue
from scenarios.kit.controllers import start_private
from scenarios.kit.harness import Context
from tests.cluster.conftest import scenario_passes, wait_for

AUTOSCALER_REPORTS = ["upstream-9805", "upstream-9490"]      # kubernetes/autoscaler#9805, #9490: run under the real CA
UPSTREAM = [n for n in catalogue.members("upstream") if n not in AUTOSCALER_REPORTS]
# deterministic on this harness; the two races are reported either way, with what was observed
ALWAYS_REPRODUCES = {"upstream-12542", "upstream-3245"}
# under the real Cluster Autoscaler 1.36.1: #9805 reproduces (its fix is on the 1.37 branch only); #9490 does not
# as reported (GKE's class and node auto-provisioning are not in it), its analogue is observed
REPRODUCES_UNDER_REAL = {"upstream-9805": True, "upstream-9490": False}


@pytest.mark.parametrize("name", UPSTREAM)
def test_upstream_report(clean, name):
    scenario_passes(clean, name)
    [v] = clean.verdicts
    assert v.number == catalogue.by_name()[name].report.number and v.evidence and v.layer
    if name in ALWAYS_REPRODUCES:
        assert v.reproduced, v.evidence


def test_the_always_reproducing_reports_exist():
    assert ALWAYS_REPRODUCES <= set(UPSTREAM)


def test_the_autoscaler_reports_under_the_real_cluster_autoscaler(ctx, k, kubeconfig, no_autoscaler, tmp_path):
    if not CLUSTER_AUTOSCALER_BINARY.ready():
        pytest.fail("the real cluster-autoscaler is not built: run `tau-demo toolchain ensure --with-real-ca`",
                    pytrace=False)
    real = Context(k, kubeconfig, out=sys.stdout, runs_dir=tmp_path, autoscaler="real")
    assert real.leftovers() == []
    # a node the CA found unremovable (booked by #9805's running Job) is looked at again after 20s, not upstream's 5m
    # (as the kueue-specs group runs it): the scenario's drain then takes seconds, not up to five minutes
    start_private(real, REAL_CA_LEASE, ["real-ca", "--scan-interval", "2s", "--", "--unremovable-node-recheck-timeout=20s"],
                  "real Cluster Autoscaler", timeout=120)
    try:
        for name in AUTOSCALER_REPORTS:
            real.checks.clear()
            real.verdicts.clear()
            catalogue.by_name()[name].run(real)
            failed = [c.what for c in real.checks if not c.ok]
            assert real.checks and not failed, (name, failed)
            [v] = real.verdicts
            assert v.reproduced == REPRODUCES_UNDER_REAL[name], (name, v.evidence)
    finally:
        for c in list(real.started):
            c.stop()
        real.started.clear()
        wait_for(lambda: not heartbeat.alive(k, REAL_CA_LEASE), 30, what="the real CA gone")
    real.wait_pool_empty(60)
    assert real.leftovers() == []


def test_the_autoscaler_reports_are_upstream_records():
    assert set(AUTOSCALER_REPORTS) <= set(catalogue.members("upstream"))
