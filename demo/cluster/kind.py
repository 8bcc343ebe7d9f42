"""kind backend for laptops with Docker: Kueue v0.19.2 as its release Deployment, KWOK in-cluster.

It shares every step after "Kueue is running" with the kwok backend (install.py).  On a laptop
it uses the released kindest/node image and the released Kueue and KWOK images.  Machines
without a registry (tests/kind/) point it at a locally built node image and kind config
(TAU_DEMO_KIND_NODE_IMAGE, TAU_DEMO_KIND_CONFIG); images found in the local Docker engine are
loaded into the nodes with `kind load`.
"""

from __future__ import annotations

import os
import subprocess
from typing import Callable

import yaml

from k8s.client import Kube
from k8s.keys import DEMO_TAUCLUSTER, KUEUE_NAMESPACE
from k8s.manifests import load_manifest
from ..toolchain import versions
from ..toolchain.components import KUEUE_MANIFESTS, KWOK_MANIFESTS, bin_path, share_path
from . import install, kueue_manifests, setup
from .backend import UpOptions, docker_answers
from .state import ClusterError, State, remove_state
from .tools import apply_docs, kubectl, run_tool

MULTIKUEUE_KWOK_ONLY = (
    "--multikueue runs on the kwok backend only: on kind, each of the three clusters would be a Docker container "
    "whose Kueue runs in a pod, and the manager's Kueue would reach the workers' apiservers over Docker's network "
    "(kind's --internal kubeconfigs); none of that is built or tested here (docs/multikueue.md). "
    "Use `tau-demo cluster up --multikueue --backend kwok`.")
KUEUE_DEV_IMAGE_PREFIX = "us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue"


def _kind(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return run_tool("kind", *args, check=check, timeout=900, shown_args=len(args))


def kueue_release_docs() -> list[dict]:
    """Kueue's config/default as the release manifests.yaml is built (the image is the release's), with
    the demo's Kueue settings and imagePullPolicy IfNotPresent (a loaded image is used, else pulled)."""
    text = share_path(KUEUE_MANIFESTS, "kueue-manifests.yaml").read_text()
    text = text.replace(f"{KUEUE_DEV_IMAGE_PREFIX}:main", versions.KUEUE_IMAGE)
    docs = kueue_manifests.release_docs_with_demo_settings([d for d in yaml.safe_load_all(text) if d])
    for d in docs:
        if d.get("kind") == "Deployment":
            for c in d["spec"]["template"]["spec"].get("containers") or []:
                if c.get("image") == versions.KUEUE_IMAGE:
                    c["imagePullPolicy"] = "IfNotPresent"
    return docs


def node_image() -> str:
    return os.environ.get("TAU_DEMO_KIND_NODE_IMAGE") or versions.KIND_NODE_IMAGE


def create_args(name: str, kubeconfig: str) -> list[str]:
    args = ["create", "cluster", "--name", name, "--image", node_image(), "--kubeconfig", kubeconfig, "--wait", "3m"]
    config = os.environ.get("TAU_DEMO_KIND_CONFIG")
    if config:
        args += ["--config", config]
    return args


def local_image(image: str) -> bool:
    try:
        return subprocess.run(["docker", "image", "inspect", image], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class KindBackend:
    """kind create cluster with the v1.36 node image; Kueue and KWOK as in-cluster Deployments."""
    name = "kind"
    toolchain = ("kind",)

    def check(self, name: str, options: UpOptions) -> None:
        if options.multikueue:
            raise ClusterError(MULTIKUEUE_KWOK_ONLY)
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
        exists = name in _kind("get", "clusters").stdout.split()
        if st is None and exists:
            raise ClusterError(f"a kind cluster named {name} exists that this state directory did not create "
                               f"(left by an earlier run, or someone else's): `kind delete cluster --name {name}` "
                               f"removes it, or choose another name")
        if st is None or not exists:
            st = State(name=name, backend="kind", kubeconfig="")
            st.dir.mkdir(parents=True, exist_ok=True)
            st.kubeconfig = str(st.dir / "kubeconfig.yaml")
            _kind(*create_args(name, st.kubeconfig))
            st.save()
        local = [i for i in (versions.KUEUE_IMAGE, versions.KWOK_IMAGE) if local_image(i)]
        if local:                  # built or pulled already: the nodes need not pull them
            _kind("load", "docker-image", *local, "--name", name)
        kc = st.kubeconfig
        k = Kube(kc)
        install.wait_apiserver(k)
        install.install_provreq_crd(kc)                      # before Kueue starts
        apply_docs(kc, kueue_release_docs(), "Kueue's release manifests")
        kubectl(kc, "-n", KUEUE_NAMESPACE, "rollout", "status", "deploy/kueue-controller-manager", "--timeout=5m")
        apply_docs(kc, load_manifest(share_path(KWOK_MANIFESTS, "kwok-in-cluster.yaml")), "kwok")
        apply_docs(kc, install.kwok_stage_docs(), "kwok stages")
        if options.bare:
            return st
        install.install_demo_objects(kc, "kind")
        st.setup = DEMO_TAUCLUSTER
        st.save()
        setup.set_up(st)
        install.wait_kueue_objects(k)
        return st

    def down(self, name: str) -> bool:
        st = State.load(name)
        if st is None:
            return False
        setup.stop_controller(st)
        if bin_path("kind").exists():
            _kind("delete", "cluster", "--name", name, check=False)
        remove_state(name)
        return True

    def status(self, name: str) -> list[tuple[str, bool, str]]:
        st = State.load(name)
        if st is None:
            return [("cluster", False, f"no cluster {name}")]
        rows = [("kind", name in _kind("get", "clusters", check=False).stdout.split(), f"kind cluster {name}")]
        return rows + ([setup.controller_row(st)] if st.setup else [])

    def restart(self, name: str, component: str, while_down: Callable[[], None] | None = None) -> None:
        st = State.load(name)
        if st is None:
            raise ClusterError(f"no cluster {name}")
        if component == "kube-apiserver":      # the static pod's container: the kubelet starts it again
            node = f"{name}-control-plane"
            subprocess.run(["docker", "exec", node, "sh", "-c",
                            "crictl ps --name kube-apiserver -q | xargs -r crictl stop --timeout 0"],
                           capture_output=True, timeout=60, check=False)
            if while_down:         # only while the kubelet has not started it again
                while_down()
            install.wait_apiserver(Kube(st.kubeconfig), 120)
            return
        if component != "kueue":
            raise ClusterError(f"the kind backend cannot restart {component!r}")
        kubectl(st.kubeconfig, "-n", KUEUE_NAMESPACE, "delete", "pod", "-l", "control-plane=controller-manager",
                "--grace-period=0", "--force")
        kubectl(st.kubeconfig, "-n", KUEUE_NAMESPACE, "rollout", "status", "deploy/kueue-controller-manager",
                "--timeout=5m")


BACKEND = KindBackend()
