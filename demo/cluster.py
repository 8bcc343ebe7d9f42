"""Cluster lifecycle shared by both backends: state on disk, the demo objects, health.

A backend (backend_kwok, backend_kind) knows how to create the control plane and get real
Kueue v0.19.2 running on it; everything after that (ProvisioningRequest CRD order, the
demo's Kueue objects, RBAC, the demo-cluster marker, readiness) lives here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from . import kube, toolchain
from .paths import MANIFESTS, cluster_dir

DEFAULT_NAME = "tau-demo"
MARKER_NAMESPACE = "kube-system"
MARKER_NAME = "tau-demo-cluster"      # fake-ca refuses clusters without it
FIELD_MANAGER = "tau-demo"
DEMO_NAMESPACE = "demo"


class ClusterError(RuntimeError):
    """Cluster bring-up or teardown failed; the message says what to do."""


@dataclass
class State:
    name: str
    backend: str
    kubeconfig: str
    created: float = field(default_factory=time.time)
    ports: dict[str, int] = field(default_factory=dict)

    @property
    def dir(self) -> Path:
        return cluster_dir(self.name)

    def save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.dir / "cluster.json.tmp"
        tmp.write_text(json.dumps(asdict(self), indent=2))
        os.replace(tmp, self.dir / "cluster.json")

    @classmethod
    def load(cls, name: str = DEFAULT_NAME) -> "State | None":
        try:
            return cls(**json.loads((cluster_dir(name) / "cluster.json").read_text()))
        except (OSError, ValueError, TypeError):
            return None


def default_kubeconfig(name: str = DEFAULT_NAME) -> str | None:
    """The kubeconfig of the demo cluster if `cluster up` made one, else None (client default)."""
    st = State.load(name)
    return st.kubeconfig if st and Path(st.kubeconfig).is_file() else None


# ---------------------------------------------------------------------------- kubectl

def run_tool(binary: str, *args: str, input: str | None = None, env: dict | None = None, check: bool = True,
             timeout: float = 300, shown_args: int = 3) -> subprocess.CompletedProcess:
    """Run a pinned binary; with check, a non-zero exit becomes a ClusterError carrying its output."""
    proc = subprocess.run([str(toolchain.bin_path(binary)), *args], input=input, env=env, capture_output=True,
                          text=True, timeout=timeout)
    if check and proc.returncode != 0:
        shown = " ".join(a for a in args[:shown_args] if not a.startswith("--kubeconfig"))
        raise ClusterError(f"{binary} {shown} failed:\n{(proc.stderr or proc.stdout).strip()[-3000:]}")
    return proc


def kubectl(kubeconfig: str, *args: str, input: str | None = None, check: bool = True,
            timeout: float = 300) -> subprocess.CompletedProcess:
    return run_tool("kubectl", f"--kubeconfig={kubeconfig}", *args, input=input, check=check, timeout=timeout,
                    shown_args=4)


def apply_docs(kubeconfig: str, docs: list[dict], what: str) -> None:
    """Server-side apply (Kueue's workloads CRD is 1.4 MB, far over the client-side annotation limit)."""
    text = yaml.safe_dump_all(docs, sort_keys=False)
    proc = kubectl(kubeconfig, "apply", "--server-side", "--force-conflicts", f"--field-manager={FIELD_MANAGER}",
                   "-f", "-", input=text, check=False)
    if proc.returncode != 0:
        raise ClusterError(f"applying {what} was refused:\n{(proc.stderr or proc.stdout).strip()}")


def load_manifest(path: Path) -> list[dict]:
    """Parse a manifest file; a malformed file is reported with its name and the parser's position."""
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    except yaml.YAMLError as e:
        raise ClusterError(f"{path}: not valid YAML: {e}") from e
    for i, d in enumerate(docs):
        if not isinstance(d, dict) or not d.get("kind") or not d.get("apiVersion") \
                or not (d.get("metadata") or {}).get("name"):
            raise ClusterError(f"{path}: document {i + 1} needs apiVersion, kind and metadata.name")
    return docs


# ---------------------------------------------------------------------------- shared install steps

def install_provreq_crd(kubeconfig: str) -> None:
    """Must happen before Kueue starts: Kueue registers its provisioning controller only if the
    ProvisioningRequest API resolves at start-up (kueue notes §1)."""
    crd = toolchain.share_path(toolchain.PROVREQ_CRD, "provisioningrequests.yaml")
    apply_docs(kubeconfig, load_manifest(crd), "the ProvisioningRequest CRD")
    kubectl(kubeconfig, "wait", "--for=condition=Established", "--timeout=60s",
            "crd/provisioningrequests.autoscaling.x-k8s.io")


DEMO_MANIFESTS = ("kueue-objects.yaml", "rbac.yaml")


def install_demo_objects(kubeconfig: str, backend: str, manifests_dir: Path = MANIFESTS) -> None:
    for f in DEMO_MANIFESTS:
        p = manifests_dir / f
        if p.exists():
            apply_docs(kubeconfig, load_manifest(p), str(p))
    marker = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": MARKER_NAME, "namespace": MARKER_NAMESPACE,
                           "labels": {"app.kubernetes.io/managed-by": "tau-demo"}},
              "data": {"backend": backend, "purpose": "capacity-provisioning-demo: fake nodes may be created here"}}
    apply_docs(kubeconfig, [marker], "the demo-cluster marker")


KWOK_UPSTREAM_STAGES = ("node-initialize.yaml", "node-heartbeat-with-lease.yaml", "pod-ready.yaml", "pod-delete.yaml")


def kwok_stage_docs() -> list[dict]:
    """Every KWOK Stage the demo uses: upstream's fast node/pod stages (from the kwok module) plus our
    pod-complete with a per-pod delay.  Supplying any Stage drops kwok's defaults, so all are listed."""
    stages = toolchain.KWOK.share_dir / "stages"
    docs: list[dict] = []
    for f in KWOK_UPSTREAM_STAGES:
        docs += load_manifest(stages / f)
    return docs + load_manifest(MANIFESTS / "kwok" / "pod-complete.yaml")


def wait_kueue_objects(k: kube.Kube, timeout: float = 90) -> None:
    """The AdmissionCheck must be Active (its ProvisioningRequestConfig resolved) and the ClusterQueue Active."""
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        ac = k.get_or_none(kube.ADMISSION_CHECK, "gpu-provisioning")
        cq = k.get_or_none(kube.CLUSTER_QUEUE, "gpu-a100")
        if kube.is_true(ac, "Active") and kube.is_true(cq, "Active"):
            return
        last = (f"AdmissionCheck gpu-provisioning Active={(kube.condition(ac, 'Active') or {}).get('status')}, "
                f"ClusterQueue gpu-a100 Active={(kube.condition(cq, 'Active') or {}).get('status')} "
                f"({(kube.condition(cq, 'Active') or {}).get('message', '')})")
        time.sleep(1)
    raise ClusterError(f"Kueue objects not active after {timeout:.0f}s: {last}")


def webhook_answers(k: kube.Kube) -> tuple[bool, str]:
    """Ask Kueue's mutating webhook for real: a server-side dry-run of an unsuspended, queue-labelled Job."""
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"generateName": "webhook-probe-", "namespace": DEMO_NAMESPACE,
                        "labels": {"kueue.x-k8s.io/queue-name": "gpu-a100-8"}},
           "spec": {"suspend": False, "template": {"spec": {"restartPolicy": "Never", "containers": [
               {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}}
    try:
        out = k.create(kube.JOB, job, DEMO_NAMESPACE, dry_run=True)
    except (kube.ApiError, kube.Unreachable) as e:
        return False, str(e)
    if out.get("spec", {}).get("suspend") is True:
        return True, "Kueue's job webhook suspended a dry-run Job"
    return False, "a dry-run Job came back unsuspended: Kueue's mutating webhook is not wired"


def wait_apiserver(k: kube.Kube, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    err = ""
    while time.monotonic() < deadline:
        try:
            if k.raw("/readyz").strip() == "ok":
                return
        except (kube.ApiError, kube.Unreachable) as e:
            err = str(e)
        time.sleep(0.5)
    raise ClusterError(f"apiserver not ready after {timeout:.0f}s: {err}")


def remove_state(name: str) -> None:
    shutil.rmtree(cluster_dir(name), ignore_errors=True)
