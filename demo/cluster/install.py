"""Install steps both backends share once Kueue runs: the ProvisioningRequest CRD (before Kueue
starts), KWOK's stages, the TauCluster CRD, the demo's namespaces, RBAC and TauCluster (or, for a MultiKueue manager,
its Kueue objects from the plain file), the demo-cluster marker, and health."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import yaml

from k8s import job as jobs
from k8s import crd, keys, poll
from k8s.client import Kube
from k8s.errors import ApiError, Unreachable
from k8s.manifests import ManifestError, load_manifest
from k8s.objects import condition, is_true
from k8s.resources import ADMISSION_CHECK, CLUSTER_QUEUE, CONFIG_MAP, CRD, JOB, NAMESPACE, TAUCLUSTER
from k8s.paths import MANIFESTS
from ..toolchain.components import KWOK_MANIFESTS, PROVREQ_CRD, share_path
from . import slots as slots_
from .state import ClusterError
from .tools import apply_docs

TAUCLUSTER_CRD = "taucluster-crd.yaml"
NAMESPACES_FILE = "namespaces.yaml"
KUEUE_OBJECTS = "kueue-objects.yaml"          # the demo's Kueue objects as an administrator applies them
TAUCLUSTER_FILE = "taucluster-demo.yaml"       # the TauCluster (Manage) that makes the same objects
RBAC = "rbac.yaml"
KWOK_UPSTREAM_STAGES = ("node-heartbeat-with-lease.yaml", "pod-ready.yaml", "pod-delete.yaml")
DEMO_STAGES = ("node-initialize.yaml", "pod-complete.yaml")     # ours, in manifests/kwok/


def install_provreq_crd(kubeconfig: str) -> None:
    """Must happen before Kueue starts: Kueue registers its provisioning controller only if the
    ProvisioningRequest API resolves at start-up."""
    apply_docs(kubeconfig, load_manifest(share_path(PROVREQ_CRD, "provisioningrequests.yaml")),
               "the ProvisioningRequest CRD")
    wait_established(kubeconfig, "provisioningrequests.autoscaling.x-k8s.io")


def wait_established(kubeconfig: str, *crds: str, selector: str | None = None, timeout: float = 60) -> None:
    """Until every CRD named (or labelled `selector`) is Established and discovery lists what it serves (k8s/crd.py
    says why both), read through the API.  Not `kubectl wait`: it fails at once ("status.conditions accessor error:
    <nil>") on a CRD read before the apiserver wrote its first condition, as a kind path's cluster up did in CI."""
    k = Kube(kubeconfig)
    last: list[str] = []

    def ready() -> bool:
        found = [k.get_or_none(CRD, n) for n in crds] + (k.list(CRD, label_selector=selector)[0] if selector else [])
        if not found or not all(crd.established(c) for c in found):
            last[:] = ["not Established"]
            return False
        paths = {crd.version_path(g, v) for c in found for g, v, _ in crd.served(c)}
        last[:] = crd.discovery_gaps(found, k.get_path("/apis", crd.AGGREGATED_DISCOVERY),
                                     {p: k.get_path(p) for p in sorted(paths)})
        return not last
    try:
        poll.until(ready, timeout, "the CRDs to be Established and discoverable", 0.2)
    except poll.WaitTimedOut:
        raise ClusterError(f"CRDs {', '.join(crds) or selector} not ready within {timeout:.0f}s: "
                           f"{'; '.join(last[:5]) or 'none found'}") from None


def demo_manifests(plain: bool) -> tuple[str, ...]:
    """The files cluster up applies, in order: the TauCluster CRD, the namespaces, RBAC (the controllers'
    ServiceAccounts, so the TauCluster controller can start as its own), then the demo's TauCluster, or with
    `plain` the Kueue objects themselves from the administrator's file."""
    return (TAUCLUSTER_CRD, NAMESPACES_FILE, RBAC, KUEUE_OBJECTS if plain else TAUCLUSTER_FILE)


def install_demo_objects(kubeconfig: str, backend: str, manifests_dir: Path = MANIFESTS,
                         kueue_objects: Callable[[list[dict]], list[dict]] | None = None, marker: bool = True,
                         plain: bool = False) -> None:
    """The TauCluster CRD (Established before anything may use it), the demo's namespaces, RBAC and TauCluster, and
    the marker without which the fake autoscaler refuses to run.  kueue_objects: the Kueue objects from the plain
    file, changed so (a MultiKueue manager's: implies `plain`); plain: the Kueue objects from the plain file, no
    TauCluster; marker=False: no autoscaler may run here (the manager makes no nodes)."""
    plain = plain or kueue_objects is not None
    for f in demo_manifests(plain):
        p = manifests_dir / f
        if not p.exists():
            continue
        docs = load_manifest(p)
        if f == TAUCLUSTER_FILE:           # the walkthrough's slots: a profile and a namespace each
            slots = read_slots(manifests_dir)
            docs = [slots_.with_slots(d, slots) if d.get("kind") == TAUCLUSTER.kind else d for d in docs]
            if slots:
                apply_docs(kubeconfig, [NAMESPACE.new(slots_.slot_name(slot)) for slot in slots],
                           "the walkthrough slots' namespaces")
        apply_docs(kubeconfig, kueue_objects(docs) if kueue_objects and f == KUEUE_OBJECTS else docs, str(p))
        if f == TAUCLUSTER_CRD:
            wait_established(kubeconfig, *(d["metadata"]["name"] for d in docs))
    if not marker:
        return
    ns, name = keys.MARKER
    cm = CONFIG_MAP.new(name, ns, labels={keys.MANAGED_BY_LABEL: "tau-demo"},
                        data={"backend": backend, "purpose": "capacity-provisioning-demo: fake nodes may be created here"})
    apply_docs(kubeconfig, [cm], "the demo-cluster marker")


def read_slots(manifests_dir: Path = MANIFESTS) -> list[str]:
    """The walkthrough's slots manifests/walkthrough-slots.yaml names; [] without the file (a test's folder)."""
    path = manifests_dir / slots_.SLOTS_FILE
    if not path.exists():
        return []
    try:
        return slots_.parse_slots(yaml.safe_load(path.read_text()), str(path))
    except yaml.YAMLError as e:
        raise ManifestError(f"{path}: not valid YAML: {e}") from e


def kwok_stage_docs() -> list[dict]:
    """Every KWOK Stage the demo uses: upstream's fast node/pod stages (from the kwok module) plus ours:
    node-initialize that waits for a node's boot time, and pod-complete with a per-pod delay.
    Supplying any Stage drops kwok's defaults, so all are listed."""
    docs: list[dict] = []
    for f in KWOK_UPSTREAM_STAGES:
        docs += load_manifest(share_path(KWOK_MANIFESTS, f"stages/{f}"))
    for f in DEMO_STAGES:
        docs += load_manifest(MANIFESTS / "kwok" / f)
    return docs


def wait_kueue_objects(k: Kube, timeout: float = 90, check: str = keys.CHECK_NAME) -> None:
    """The AdmissionCheck `check` must be Active (its ProvisioningRequestConfig resolved; a MultiKueue manager's:
    its workers connected) and the ClusterQueue Active."""
    def not_yet() -> str:
        """'' when both are Active, else what they say."""
        ac = k.get_or_none(ADMISSION_CHECK, check)
        cq = k.get_or_none(CLUSTER_QUEUE, keys.DEMO_CLUSTER_QUEUE)
        if is_true(ac, keys.ACTIVE) and is_true(cq, keys.ACTIVE):
            return ""
        return (f"AdmissionCheck {check} Active={(condition(ac, keys.ACTIVE) or {}).get('status')} "
                f"({(condition(ac, keys.ACTIVE) or {}).get('message', '')}), "
                f"ClusterQueue {keys.DEMO_CLUSTER_QUEUE} Active={(condition(cq, keys.ACTIVE) or {}).get('status')} "
                f"({(condition(cq, keys.ACTIVE) or {}).get('message', '')})")
    last = _poll(not_yet, timeout, 1.0)
    if last:
        raise ClusterError(f"Kueue objects not active after {timeout:.0f}s: {last}")


def webhook_answers(k: Kube) -> tuple[bool, str]:
    """Ask Kueue's mutating webhook for real: a server-side dry-run of an unsuspended, queue-labelled Job."""
    job = JOB.new("", keys.DEMO_NAMESPACE, labels={keys.QUEUE_LABEL: keys.PROFILE},
                  spec={"suspend": False, "template": {"spec": {"restartPolicy": "Never", "containers": [
                      {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}})
    del job["metadata"]["name"]
    job["metadata"]["generateName"] = "webhook-probe-"
    try:
        out = k.create(JOB, job, keys.DEMO_NAMESPACE, dry_run=True)
    except (ApiError, Unreachable) as e:
        return False, str(e)
    if jobs.suspended(out):
        return True, "Kueue's job webhook suspended a dry-run Job"
    return False, "a dry-run Job came back unsuspended: Kueue's mutating webhook is not wired"


def wait_apiserver(k: Kube, timeout: float = 60) -> None:
    def not_yet() -> str:
        try:
            answer = k.raw("/readyz").strip()
        except (ApiError, Unreachable) as e:
            return str(e)
        return "" if answer == "ok" else f"/readyz says {answer[:200]!r}"
    err = _poll(not_yet, timeout, 0.5)
    if err:
        raise ClusterError(f"apiserver not ready after {timeout:.0f}s: {err}")


def _poll(not_yet: Callable[[], str], timeout: float, every: float) -> str:
    """Call not_yet() every `every` seconds until it returns '' or `timeout` passed; its last answer."""
    return poll.eventually(not_yet, timeout, every, done=lambda answer: answer == "")
