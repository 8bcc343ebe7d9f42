"""kind backend for laptops with Docker: Kueue v0.19.2 as its release Deployment, KWOK in-cluster.

Not exercised on the project's CI machines (no Docker engine there); it shares every step
after "Kueue is running" with the kwok backend (cluster.py), and the kind smoke workflow
(.github/workflows/kind-smoke.yml) runs it on a hosted runner.
"""

from __future__ import annotations

import subprocess
import sys

import yaml

from . import cluster, kube, toolchain, versions
from .cluster import ClusterError, State

KUEUE_DEV_IMAGE_PREFIX = "us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue"


def docker_answers() -> bool:
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _kind(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return cluster.run_tool("kind", *args, check=check, timeout=900, shown_args=len(args))


def kueue_release_docs() -> list[dict]:
    """Kueue's config/default as the release manifests.yaml is built: only the image differs."""
    text = toolchain.share_path(toolchain.KUEUE, "kueue-manifests.yaml").read_text()
    text = text.replace(f"{KUEUE_DEV_IMAGE_PREFIX}:main", versions.KUEUE_IMAGE)
    return [d for d in yaml.safe_load_all(text) if d]


def up(name: str) -> State:
    if not docker_answers():
        raise ClusterError("the kind backend needs a running Docker engine (`docker info` failed); "
                           "use --backend kwok on machines without Docker")
    st = State.load(name)
    if st is None or name not in _kind("get", "clusters").stdout.split():
        st = State(name=name, backend="kind", kubeconfig="")
        st.dir.mkdir(parents=True, exist_ok=True)
        st.kubeconfig = str(st.dir / "kubeconfig.yaml")
        _kind("create", "cluster", "--name", name, "--image", versions.KIND_NODE_IMAGE,
              "--kubeconfig", st.kubeconfig, "--wait", "2m")
        st.save()
    kc = st.kubeconfig
    k = kube.Kube(kc)
    cluster.wait_apiserver(k)
    cluster.install_provreq_crd(kc)                      # before Kueue starts
    cluster.apply_docs(kc, kueue_release_docs(), "Kueue's release manifests")
    cluster.kubectl(kc, "-n", "kueue-system", "rollout", "status", "deploy/kueue-controller-manager", "--timeout=5m")
    cluster.apply_docs(kc, cluster.load_manifest(toolchain.share_path(toolchain.KWOK, "kwok-in-cluster.yaml")), "kwok")
    cluster.apply_docs(kc, cluster.kwok_stage_docs(), "kwok stages")
    cluster.install_demo_objects(kc, "kind")
    cluster.wait_kueue_objects(k)
    return st


def down(name: str) -> bool:
    st = State.load(name)
    if st is None:
        return False
    if toolchain.bin_path("kind").exists():
        _kind("delete", "cluster", "--name", name, check=False)
    cluster.remove_state(name)
    return True


def status(name: str) -> list[tuple[str, bool, str]]:
    st = State.load(name)
    if st is None:
        return [("cluster", False, f"no cluster {name}")]
    return [("kind", name in _kind("get", "clusters", check=False).stdout.split(), f"kind cluster {name}")]


def say(msg: str) -> None:
    print(f"[cluster] {msg}", file=sys.stderr, flush=True)
