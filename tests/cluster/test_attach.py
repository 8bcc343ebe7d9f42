"""A cluster the harness did not build, taken on with `tau-demo cluster attach` (demo/cluster/attach.py).

The cluster: `tau-demo cluster up --bare`, a control plane with the ProvisioningRequest CRD, Kueue v0.19.2 and KWOK
and nothing of the demo's (no TauCluster CRD, no namespace of ours, no marker). Its administrator then applies the
profile's Kueue objects with plain `kubectl apply` from manifests/namespaces.yaml and manifests/kueue-objects.yaml.
On it: the TauCluster controller refuses to run without the CRD; attach refuses `--mode manage` and writes nothing
with `--dry-run`; attached in Adopt mode, then in External mode, the walkthrough's `success`, `timeout-deadline` and
`race-timeout-wins` pass, and in Adopt mode a small `tau-demo fleet run` too; while External, nothing but Kueue wrote to the profile's objects (the cluster's audit log:
who wrote, by user agent); `cluster down` gives the cluster back exactly as the administrator left it (every object
of the five kinds, its namespaces and CRDs: the same spec generation, labels and annotations).

This module brings its own cluster up (not the session's), so .ci/run can run it beside the quick start."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from demo.cluster import backends, kwok
from demo.cluster.backend import UpOptions
from demo.cluster.state import State
from demo.cluster.tools import kubectl
from demo.toolchain import components as toolchain
from k8s import audit
from k8s.client import Kube
from k8s.keys import MODE_ADOPT, MODE_EXTERNAL, TAUCLUSTER_ADOPTED_ANNOTATION, TAUCLUSTER_LABEL
from k8s.manifests import load_manifest
from k8s.objects import annotations, labels, meta
from k8s.paths import MANIFESTS, REPO
from k8s.resources import (ADMISSION_CHECK, CLUSTER_QUEUE, CONFIG_MAP, CRD, LOCAL_QUEUE, NAMESPACE, PROVREQ_CONFIG,
                           RESOURCE_FLAVOR, TAUCLUSTER)
from scenarios.kit import catalogue
from scenarios.kit.controllers import stop_started
from scenarios.kit.runner import make_context, start_clean

pytestmark = pytest.mark.attach

ADMIN_CLUSTER = "admin-built"              # the cluster "its administrator" built
ATTACHED = "theirs"                        # the name the harness knows it by once attached
SCENARIOS = ("success", "timeout-deadline", "race-timeout-wins")
KINDS = (RESOURCE_FLAVOR, PROVREQ_CONFIG, ADMISSION_CHECK, CLUSTER_QUEUE, LOCAL_QUEUE)


def tau_demo(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *args], capture_output=True, text=True, timeout=600, cwd=REPO,
                          env=dict(os.environ, PYTHONUNBUFFERED="1"))


@pytest.fixture(scope="module")
def built() -> State:
    """A bare kwok cluster, and its Kueue objects applied by its administrator with plain kubectl."""
    if not os.environ.get("TAU_DEMO_STATE"):
        pytest.fail("set TAU_DEMO_STATE (test.sh does) so the tests do not touch your demo cluster")
    backend = backends.get("kwok")
    toolchain.ensure(backend.toolchain)
    st = backend.up(ADMIN_CLUSTER, UpOptions(bare=True))
    yield st
    backends.get("kwok").down(ADMIN_CLUSTER)


def snapshot(k: Kube) -> dict:
    """Everything attach could have touched, as it stands: the objects of the five kinds, the namespaces, CRDs and
    tau-demo-system's ConfigMaps, each by its spec generation, labels and annotations."""
    out = {}
    for res in (*KINDS, NAMESPACE, CRD):
        for o in k.list(res)[0]:
            out[(res.kind, meta(o).get("namespace"), meta(o)["name"])] = (meta(o).get("generation"), labels(o),
                                                                         annotations(o))
    return out


def test_a_bare_cluster_set_up_by_its_administrator_is_attached_runs_the_walkthrough_and_is_given_back(built):
    k = Kube(built.kubeconfig)
    r = tau_demo("taucluster", "--kubeconfig", built.kubeconfig)
    assert r.returncode == 1 and "the TauCluster CRD (tauclusters.tau-demo.io) is not installed in this cluster" \
        in r.stderr, r.stderr
    assert k.get_or_none(CRD, TAUCLUSTER.crd_name) is None and k.get_or_none(NAMESPACE, "demo") is None

    # its administrator: plain kubectl apply of the profile's objects
    kubectl(built.kubeconfig, "apply", "-f", str(MANIFESTS / "namespaces.yaml"), "-f",
            str(MANIFESTS / "kueue-objects.yaml"))
    admin = [d for d in load_manifest(MANIFESTS / "kueue-objects.yaml")]
    before = snapshot(k)

    r = tau_demo("cluster", "attach", "--kubeconfig", built.kubeconfig, "--mode", "manage", "--name", ATTACHED)
    assert r.returncode == 2 or (r.returncode == 1 and "attach takes one of adopt, external" in r.stderr), r.stderr
    r = tau_demo("cluster", "attach", "--kubeconfig", built.kubeconfig, "--mode", "adopt", "--autoscaler", "fake",
                 "--name", ATTACHED, "--dry-run")
    assert r.returncode == 0 and "--dry-run: nothing was written" in r.stdout, r.stdout + r.stderr
    assert "+ create the CustomResourceDefinition tauclusters.tau-demo.io" in r.stdout
    assert "- create, change or delete any Kueue object (Adopt: only the labels above)" in r.stdout
    assert snapshot(k) == before and State.load(ATTACHED) is None, "a dry run wrote something"

    for mode in (MODE_ADOPT, MODE_EXTERNAL):
        log = kwok.audit_log(built)
        audit_from = log.stat().st_size
        r = tau_demo("cluster", "attach", "--kubeconfig", built.kubeconfig, "--mode", mode.lower(), "--autoscaler",
                     "fake", "--name", ATTACHED)
        print(r.stdout, r.stderr)
        assert r.returncode == 0 and f"cluster {ATTACHED} attached" in r.stdout, r.stdout + r.stderr
        assert re.search(r"^✓ profiles +every profile ProvisioningReady=True$", r.stdout, re.M), r.stdout
        st = State.load(ATTACHED)
        assert st is not None and st.attached and st.mode == mode and Path(st.kubeconfig).is_file()
        adopted = [k.get(r_, meta(d)["name"], meta(d).get("namespace")) for d in admin
                   for r_ in KINDS if r_.kind == d["kind"]]
        if mode == MODE_ADOPT:
            assert all(labels(o).get(TAUCLUSTER_LABEL) == "demo" and
                       annotations(o).get(TAUCLUSTER_ADOPTED_ANNOTATION) == "true" for o in adopted)
        else:
            assert not any(TAUCLUSTER_LABEL in labels(o) for o in adopted), "External labelled an object"

        ctx = make_context(st.kubeconfig, None, auto=True)
        ctx.cluster = ATTACHED                   # its controllers' files apart from any other cluster's
        ctx.runs_dir = Path(os.environ["TAU_DEMO_STATE"]) / "runs"
        try:
            start_clean(ctx)
            for name in SCENARIOS:
                ctx.checks.clear()
                catalogue.by_name()[name].run(ctx)
                failed = [c.what for c in ctx.checks if not c.ok]
                assert ctx.checks and not failed, f"{name} in {mode} mode: {failed}"
            assert ctx.leftovers() == []
        finally:
            stop_started(ctx)
        if mode == MODE_ADOPT:                   # beyond one machine: the fleet run on a cluster taken on
            r = tau_demo("fleet", "run", "--gangs", "4", "--run", "5s", "--boot", "2s", "--out",
                         str(Path(os.environ["TAU_DEMO_STATE"]) / "fleet"), "--kubeconfig", st.kubeconfig)
            print(r.stdout, r.stderr)
            assert r.returncode == 0 and "PASS  nothing is left at the end" in r.stdout, r.stdout + r.stderr

        with open(log, "rb") as f:
            f.seek(audit_from)
            writes = audit.writes(f.read().decode(errors="replace").splitlines())
        names = {(r_.plural, meta(d).get("namespace") or "", meta(d)["name"]) for d in admin for r_ in KINDS
                 if r_.kind == d["kind"]}
        ours = [w for w in writes if (w.resource, w.namespace, w.name) in names and w.agent != "kueue"]
        if mode == MODE_EXTERNAL:
            assert ours == [], f"External: something of the harness wrote to the profile's objects: {ours}"
        else:
            labelled = {(w.resource, w.namespace, w.name) for w in ours if not w.refused}
            assert {w.verb for w in ours} == {"patch"} and labelled == names, \
                f"Adopt: labelling patches of each object, nothing else: {[str(w) for w in ours]}"

        r = tau_demo("cluster", "down", "--name", ATTACHED)
        assert r.returncode == 0 and f"cluster {ATTACHED} removed" in r.stdout, r.stdout + r.stderr
        assert State.load(ATTACHED) is None
        assert snapshot(k) == before, "cluster down did not give the cluster back as its administrator left it"
        assert k.get_or_none(CONFIG_MAP, "tau-demo-cluster", "tau-demo-system") is None
