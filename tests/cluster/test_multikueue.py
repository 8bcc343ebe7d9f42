"""MultiKueue on one machine (issue 21): a manager and two workers, each a kwok cluster of its own with Kueue
v0.19.2 as a host process, brought up once for this module with `cluster up --multikueue`'s code in the session's
TAU_DEMO_STATE and shared by its tests; then the group multikueue (scenarios/multikueue/), each scenario through
its record; then `cluster down` of all three, with nothing of them left running.  Not on the session's plain
cluster: a MultiKueue manager dispatches every Job to its workers."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest

from demo.cluster import backends, procs
from demo.cluster.backend import UpOptions
from demo.cluster.multikueue import MANAGER, WORKER, worker_clusters
from demo.cluster.multikueue_kwok import connection_status, workers_of
from demo.cluster.state import ClusterError, State
from demo.toolchain import components as toolchain
from k8s.client import Kube
from k8s.keys import DEADLINE_LEASE_PREFIX, DEFAULT_DEADLINE_CLASS
from scenarios.kit import catalogue
from scenarios.kit.controllers import ensure_controller, stop_started
from scenarios.kit.harness import Context
from tests.cluster.conftest import BACKEND, scenario_passes

pytestmark = pytest.mark.skipif(BACKEND != "kwok", reason="MultiKueue on one machine is kwok-only (docs/multikueue.md): "
                                "`cluster up --multikueue --backend kind` is refused")

NAME = os.environ.get("TAU_DEMO_TEST_MK_CLUSTER", "tau-test-mk")
REPO = Path(__file__).resolve().parents[2]
GROUP = catalogue.members("multikueue")


@pytest.fixture(scope="module")
def trio():
    """The three clusters, brought up once (the module's first test pays for it) and down at the end."""
    if not os.environ.get("TAU_DEMO_STATE"):
        pytest.fail("set TAU_DEMO_STATE (test.sh does) so the tests do not touch your demo cluster")
    backend = backends.get("kwok")
    t0 = time.monotonic()
    try:
        toolchain.ensure(backend.toolchain)
        st = backend.up(NAME, UpOptions(multikueue=True))
    except ClusterError as e:
        backend.down(NAME)
        pytest.fail(f"cannot bring the MultiKueue clusters up: {e}", pytrace=False)
    print(f"\n[multikueue] {NAME} and its two workers up in {time.monotonic() - t0:.1f}s", file=sys.stderr)
    yield st
    dirs = [State.load(n).dir for n in [NAME, *worker_clusters(NAME)] if State.load(n)]
    t0 = time.monotonic()
    assert backend.down(NAME)
    print(f"\n[multikueue] all three down in {time.monotonic() - t0:.1f}s", file=sys.stderr)
    left = [p for d in dirs for p in procs.running_under(d)]
    for pid, _ in left:
        os.kill(pid, 9)
    assert not left, "cluster down left processes behind: " + "; ".join(f"{pid} {cmd[:160]}" for pid, cmd in left)
    assert not any(d.exists() for d in dirs), "cluster down left state behind"


@pytest.fixture(scope="module")
def manager_ctx(trio):
    """The manager's context (controllers as their least-privilege ServiceAccounts) with its deadline controller."""
    c = Context(Kube(trio.kubeconfig), trio.kubeconfig, auto=True, out=sys.stdout, impersonate=True,
                runs_dir=Path(os.environ["TAU_DEMO_STATE"]) / "runs", cluster=MANAGER)
    ensure_controller(c, DEADLINE_LEASE_PREFIX + DEFAULT_DEADLINE_CLASS, ["deadline", "--cleanup-ttl", "10s"],
                      "deadline controller")
    yield c
    stop_started(c)


def test_the_three_clusters_are_up_healthy_and_connected(trio):
    assert trio.role == MANAGER and trio.workers == worker_clusters(NAME)
    workers = workers_of(trio)
    assert [w.role for w in workers] == [WORKER, WORKER]
    assert len({trio.kubeconfig, *(w.kubeconfig for w in workers)}) == 3
    rows = connection_status(Kube(trio.kubeconfig))
    assert all(ok for _, ok, _ in rows) and len(rows) == 3, rows
    env = dict(os.environ)
    out = subprocess.run([sys.executable, "-m", "cli", "cluster", "status", "--name", NAME], capture_output=True,
                         text=True, env=env, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    for name in [NAME, *trio.workers]:
        assert f"{name} (MultiKueue" in out.stdout
    assert out.stdout.count("✓ kueue webhooks") == 3 and "✓ multikueue worker-2" in out.stdout


def test_each_kueue_serves_its_own_clusters_metrics_certificate(trio):
    """Three Kueues on one machine, each reading its metrics certificate from the fixed /etc/kueue/metrics/certs,
    which each sees in a mount namespace of its own: each serves its own cluster's admin certificate, whatever the
    shared path holds."""
    for st in [trio, *workers_of(trio)]:
        served = ssl.get_server_certificate(("127.0.0.1", st.ports["kueue_metrics"]))
        pki = Path(st.kubeconfig).parent / "pki" / "admin.crt"
        assert ssl.PEM_cert_to_DER_cert(served) == ssl.PEM_cert_to_DER_cert(pki.read_text()), st.name
        pid = procs.read_pid(st.dir / "kueue" / "kueue.pid")
        assert pid is not None and os.readlink(f"/proc/{pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt"), st.name


def test_a_plain_cluster_up_over_the_manager_is_refused_and_changes_nothing(trio):
    out = subprocess.run([sys.executable, "-m", "cli", "cluster", "up", "--name", NAME, "--backend", "kwok"],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 1 and "is a MultiKueue manager" in out.stderr, out.stderr
    assert json.loads((trio.dir / "cluster.json").read_text())["role"] == MANAGER


@pytest.mark.parametrize("name", GROUP)
def test_multikueue_scenario(manager_ctx, name):
    scenario_passes(manager_ctx, name)
