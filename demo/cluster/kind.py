"""kind backend for laptops with Docker: Kueue v0.19.2 as its release Deployment, KWOK in-cluster.

It shares every step after "Kueue is running" with the kwok backend (install.py).
"""

from __future__ import annotations

import subprocess

import yaml

from ..k8s.client import Kube
from ..k8s.keys import KUEUE_NAMESPACE
from ..k8s.manifests import load_manifest
from ..toolchain import versions
from ..toolchain.components import KUEUE_MANIFESTS, KWOK_MANIFESTS, bin_path, share_path
from . import install
from .backend import UpOptions, docker_answers
from .state import ClusterError, State, remove_state
from .tools import apply_docs, kubectl, run_tool

KUEUE_DEV_IMAGE_PREFIX = "us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue"


def _kind(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return run_tool("kind", *args, check=check, timeout=900, shown_args=len(args))


def kueue_release_docs() -> list[dict]:
    """Kueue's config/default as the release manifests.yaml is built: only the image differs."""
    text = share_path(KUEUE_MANIFESTS, "kueue-manifests.yaml").read_text()
    text = text.replace(f"{KUEUE_DEV_IMAGE_PREFIX}:main", versions.KUEUE_IMAGE)
    return [d for d in yaml.safe_load_all(text) if d]


class KindBackend:
    """kind create cluster with the v1.36 node image; Kueue and KWOK as in-cluster Deployments."""
    name = "kind"
    toolchain = ("kind",)

    def check(self, name: str, options: UpOptions) -> None:
        if options.apiserver_port:
            raise ClusterError("--apiserver-port applies to the kwok backend only")
        st = State.load(name)
        if st and st.backend != "kind":
            raise ClusterError(f"cluster {name} exists with backend {st.backend}; run `tau-demo cluster down` first")
        if not docker_answers():
            raise ClusterError("the kind backend needs a running Docker engine (`docker info` failed); "
                               "use --backend kwok on machines without Docker")

    def up(self, name: str, options: UpOptions) -> State:
        self.check(name, options)
        st = State.load(name)
        if st is None or name not in _kind("get", "clusters").stdout.split():
            st = State(name=name, backend="kind", kubeconfig="")
            st.dir.mkdir(parents=True, exist_ok=True)
            st.kubeconfig = str(st.dir / "kubeconfig.yaml")
            _kind("create", "cluster", "--name", name, "--image", versions.KIND_NODE_IMAGE,
                  "--kubeconfig", st.kubeconfig, "--wait", "2m")
            st.save()
        kc = st.kubeconfig
        k = Kube(kc)
        install.wait_apiserver(k)
        install.install_provreq_crd(kc)                      # before Kueue starts
        apply_docs(kc, kueue_release_docs(), "Kueue's release manifests")
        kubectl(kc, "-n", KUEUE_NAMESPACE, "rollout", "status", "deploy/kueue-controller-manager", "--timeout=5m")
        apply_docs(kc, load_manifest(share_path(KWOK_MANIFESTS, "kwok-in-cluster.yaml")), "kwok")
        apply_docs(kc, install.kwok_stage_docs(), "kwok stages")
        install.install_demo_objects(kc, "kind")
        install.wait_kueue_objects(k)
        return st

    def down(self, name: str) -> bool:
        st = State.load(name)
        if st is None:
            return False
        if bin_path("kind").exists():
            _kind("delete", "cluster", "--name", name, check=False)
        remove_state(name)
        return True

    def status(self, name: str) -> list[tuple[str, bool, str]]:
        if State.load(name) is None:
            return [("cluster", False, f"no cluster {name}")]
        return [("kind", name in _kind("get", "clusters", check=False).stdout.split(), f"kind cluster {name}")]


BACKEND = KindBackend()
