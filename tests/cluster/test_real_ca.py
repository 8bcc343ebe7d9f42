"""The real Cluster Autoscaler 1.36.1 (kwok provider, `tau-demo real-ca`) against the test cluster: the
success probe of `tau-demo conformance` (a 2 × 8-GPU gang on an empty pool of max 2), the mutual
exclusion with the fake autoscaler both ways, and no node left behind when it stops."""

from __future__ import annotations

import subprocess
import sys

import pytest

from demo.k8s import heartbeat
from demo.k8s.keys import CA_STATUS, FAKE_CA_LEASE, POOL_TABLE, REAL_CA_LEASE
from demo.k8s.resources import CONFIG_MAP, NODE, PROVREQ
from demo.paths import POOLS_FILE, REPO
from demo.realca import exclusion
from demo.toolchain.components import CLUSTER_AUTOSCALER
from fake_ca.pools import load_pools
from scenarios import conformance as cf
from scenarios import fidelity
from scenarios.controllers import start_private
from scenarios.harness import Context
from tests.cluster.conftest import wait_for

SCAN = 1.0


def tau(kubeconfig: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "demo", *args, "--kubeconfig", kubeconfig], capture_output=True,
                          text=True, timeout=timeout, cwd=REPO)


@pytest.fixture
def quiet_ctx(k, kubeconfig, no_autoscaler, tmp_path):
    """A context with no autoscaler running, an empty pool, and whatever it starts stopped afterwards."""
    if not CLUSTER_AUTOSCALER.ready():
        pytest.fail("the real cluster-autoscaler is not built: run `tau-demo toolchain ensure --with-real-ca` "
                    "(test.sh does)", pytrace=False)
    ctx = Context(k, kubeconfig, out=sys.stdout, runs_dir=tmp_path)
    cf.ensure_namespace(k)
    cf.reset(ctx)
    yield ctx
    for c in list(ctx.started):
        c.stop()
    ctx.started.clear()
    wait_for(lambda: not heartbeat.alive(k, REAL_CA_LEASE) and not heartbeat.alive(k, FAKE_CA_LEASE), 30,
             what="no autoscaler heartbeat")
    cf.reset(ctx)


def test_real_ca_refuses_to_start_while_the_fake_runs(quiet_ctx, kubeconfig):
    start_private(quiet_ctx, FAKE_CA_LEASE, ["fake-ca"], "fake autoscaler")
    wait_for(lambda: heartbeat.alive(quiet_ctx.k, FAKE_CA_LEASE), 30, what="fake-ca heartbeat")
    out = tau(kubeconfig, "real-ca", "--scan-interval", "1s")
    assert out.returncode == 1, out.stderr
    assert "the fake autoscaler is running" in out.stderr


def test_real_ca_success_probe_and_clean_stop(quiet_ctx, kubeconfig):
    k = quiet_ctx.k
    under = cf.Under("real", scan_interval=SCAN)
    ctl = start_private(quiet_ctx, REAL_CA_LEASE, under.args(), "real Cluster Autoscaler",
                        timeout=under.start_timeout)
    assert heartbeat.alive(k, REAL_CA_LEASE)
    assert k.get_or_none(CONFIG_MAP, POOL_TABLE[1], POOL_TABLE[0]) is not None, "no pool table for preflight"

    refused = tau(kubeconfig, "fake-ca")
    assert refused.returncode == 1 and "real Cluster Autoscaler is running" in refused.stderr, refused.stderr

    pool = load_pools(POOLS_FILE)[0]
    rec = cf.run_probe(quiet_ctx, cf.PROBES[0], under, pool)        # scale-up: 2 x 8 GPU, pool max 2
    print("\n".join(fidelity.timeline(rec)))
    assert not rec.error, rec.error
    assert fidelity.sequence(rec) == "Accepted=True/Accepted → Provisioned=True/CapacityIsProvisioned"
    assert fidelity.nodes_created(rec) == "2"
    assert {n.what for n in rec.nodes} >= {"created", "ready"}

    # capacity the CA made, then stop it: its clean-up (or the wrapper's) leaves no node behind
    probe = cf.Probe("stop", "", (cf.Ask("a", 1),))
    k.create(cf.POD_TEMPLATE, cf.pod_template(probe, probe.asks[0], pool), cf.NS)
    k.create(PROVREQ, cf.provisioning_request(probe, probe.asks[0]), cf.NS)
    wait_for(lambda: exclusion.real_nodes(k.list(NODE)[0]), 60, what="a node of the real CA")
    ctl.stop()
    quiet_ctx.started.remove(ctl)
    assert not heartbeat.alive(k, REAL_CA_LEASE)
    wait_for(lambda: not exclusion.real_nodes(k.list(NODE)[0]), 15, what="no node of the real CA")
    assert k.get_or_none(CONFIG_MAP, CA_STATUS[1], CA_STATUS[0]) is None
