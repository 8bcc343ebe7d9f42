"""Pinned binaries and upstream manifests, built from the Go module proxy into a version-keyed cache.

Layout under cache_root():
    kubernetes-v1.36.3/bin/{kube-apiserver,kube-controller-manager,kube-scheduler,kubectl}
    etcd-v3.6.14/bin/etcd
    kwok-v0.8.0/bin/{kwok,kwokctl}       kwok-v0.8.0/share/stages/*.yaml
    kueue-v0.19.2/bin/kueue              kueue-v0.19.2/share/kueue-manifests.yaml
    autoscaler-apis-<ver>/share/provisioningrequests.yaml
    kind-v0.32.0/bin/kind                (Docker path only)

Each component is built only when one of its outputs is missing or reports the wrong
version.  Binaries are written to a .partial directory and renamed into bin/ when the
whole component succeeded, so an interrupted build never leaves a half-written binary;
Go's own build cache makes the rerun resume where it stopped.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import buildinfo, versions
from .paths import TOOLCHAIN_MODULES, cache_root


class ToolchainError(RuntimeError):
    """A binary cannot be had; the message says what to do."""


@dataclass(frozen=True)
class Binary:
    name: str
    component: str
    version: str


@dataclass(frozen=True)
class Component:
    name: str
    version: str
    binaries: tuple[str, ...]
    artifacts: tuple[str, ...] = ()      # files under share/
    docker_only: bool = False

    @property
    def dir(self) -> Path:
        return cache_root() / f"{self.name}-{self.version}"

    @property
    def bin_dir(self) -> Path:
        return self.dir / "bin"

    @property
    def share_dir(self) -> Path:
        return self.dir / "share"


KUBERNETES = Component("kubernetes", versions.KUBERNETES,
                       ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"))
ETCD = Component("etcd", versions.ETCD, ("etcd",))
KWOK = Component("kwok", versions.KWOK, ("kwok", "kwokctl"),
                 ("stages/node-initialize.yaml", "stages/node-heartbeat-with-lease.yaml",
                  "stages/pod-ready.yaml", "stages/pod-delete.yaml", "kwok-in-cluster.yaml"))
KUEUE = Component("kueue", versions.KUEUE, ("kueue",), ("kueue-manifests.yaml",))
PROVREQ_CRD = Component("autoscaler-apis", versions.AUTOSCALER_APIS, (), ("provisioningrequests.yaml",))
KIND = Component("kind", versions.KIND, ("kind",), docker_only=True)
ACTIONLINT = Component("actionlint", versions.ACTIONLINT, ("actionlint",))

COMPONENTS = (KWOK, ETCD, KUBERNETES, KUEUE, PROVREQ_CRD, KIND, ACTIONLINT)


# ---------------------------------------------------------------------------- versions

def _run_out(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def reported_version(component: Component, binary: str) -> str | None:
    """The version a cached binary reports, or None if it is missing or unreadable."""
    path = component.bin_dir / binary
    if not path.is_file():
        return None
    if component is KUBERNETES:
        if binary == "kubectl":
            out = _run_out([str(path), "version", "--client", "-o", "json"])
            try:
                return json.loads(out)["clientVersion"]["gitVersion"]
            except (ValueError, KeyError):
                return None
        m = re.search(r"Kubernetes (v\S+)", _run_out([str(path), "--version"]))
        return m.group(1) if m else None
    if component is ETCD:
        m = re.search(r"etcd Version: (\S+)", _run_out([str(path), "--version"]))
        return "v" + m.group(1) if m else None
    info = buildinfo.read(path)
    if info is None:
        return None
    if component is KUEUE:
        # the dependency version is what was built; GitVersion ldflags are checked at runtime by Kueue itself
        return info.main_version if info.main_module == "sigs.k8s.io/kueue" else None
    return info.main_version


def artifact_ok(component: Component, artifact: str) -> bool:
    p = component.share_dir / artifact
    return p.is_file() and p.stat().st_size > 0


def component_ready(component: Component) -> bool:
    return (all(reported_version(component, b) == component.version for b in component.binaries)
            and all(artifact_ok(component, a) for a in component.artifacts))


def bin_path(binary: str) -> Path:
    for c in COMPONENTS:
        if binary in c.binaries:
            return c.bin_dir / binary
    raise KeyError(binary)


def share_path(component: Component, artifact: str) -> Path:
    return component.share_dir / artifact


def path_dirs() -> list[str]:
    """Directories to put first on PATH so kwokctl finds our kubectl and never downloads one."""
    return [str(c.bin_dir) for c in COMPONENTS if c.binaries]


def versions_table() -> list[tuple[str, str, str, bool]]:
    """(name, reported version or 'missing', path, ok) for every binary and artifact."""
    rows = []
    for c in COMPONENTS:
        for b in c.binaries:
            v = reported_version(c, b)
            rows.append((b, v or "missing", str(c.bin_dir / b), v == c.version))
        for a in c.artifacts:
            ok = artifact_ok(c, a)
            rows.append((f"{c.name}:{a}", c.version if ok else "missing", str(c.share_dir / a), ok))
    return rows


# ---------------------------------------------------------------------------- building

class Progress:
    """Prints which component and step is running, with elapsed time, and a heartbeat for long steps."""

    def __init__(self, out=sys.stderr, heartbeat: float = 30.0):
        self.out = out
        self.t0 = time.monotonic()
        self.heartbeat = heartbeat

    def elapsed(self) -> str:
        s = int(time.monotonic() - self.t0)
        return f"{s // 60}m{s % 60:02d}s"

    def say(self, msg: str) -> None:
        print(f"[toolchain {self.elapsed()}] {msg}", file=self.out, flush=True)

    def run(self, step: str, cmd: list[str], cwd: Path | None = None, env: dict | None = None,
            stdout=None) -> str:
        self.say(step)
        started = time.monotonic()
        done = threading.Event()

        def beat():
            while not done.wait(self.heartbeat):
                self.say(f"  … still {step} ({int(time.monotonic() - started)}s)")

        t = threading.Thread(target=beat, daemon=True)
        t.start()
        try:
            proc = subprocess.run(cmd, cwd=cwd, env=env, text=True,
                                  stdout=stdout if stdout is not None else subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        except FileNotFoundError as e:
            raise ToolchainError(f"{step}: {e.filename} not found") from e
        finally:
            done.set()
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr or "").strip().splitlines()[-25:])
            raise ToolchainError(f"{step} failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")
        return proc.stdout if stdout is None else ""


def go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(GOTOOLCHAIN="local", CGO_ENABLED="0", GOFLAGS="-buildvcs=false")
    return env


def check_go() -> str:
    go = shutil.which("go")
    if not go:
        raise ToolchainError(
            "Go is not installed and the cache at "
            f"{cache_root()} lacks pinned binaries. Install Go >= "
            f"{versions.GO_MIN[0]}.{versions.GO_MIN[1]} (https://go.dev/doc/install, or your package manager), "
            "or point TAU_DEMO_CACHE at a populated cache.")
    out = _run_out([go, "env", "GOVERSION"]).strip()
    m = re.match(r"go(\d+)\.(\d+)", out)
    if not m or (int(m.group(1)), int(m.group(2))) < versions.GO_MIN:
        raise ToolchainError(f"Go {out or '?'} is too old: the pinned modules need Go >= "
                             f"{versions.GO_MIN[0]}.{versions.GO_MIN[1]}")
    return go


def module_dir(progress: Progress, module: str, version: str) -> Path:
    out = progress.run(f"downloading {module}@{version}",
                       ["go", "mod", "download", "-json", f"{module}@{version}"], env=go_env())
    d = json.loads(out).get("Dir")
    if not d:
        raise ToolchainError(f"go mod download {module}@{version} returned no directory: {out[:300]}")
    return Path(d)


def _install_outputs(partial: Path, dest: Path, names) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for n in names:
        os.replace(partial / n, dest / n)
    shutil.rmtree(partial, ignore_errors=True)


def _partial(c: Component) -> Path:
    p = c.dir / ".partial"
    shutil.rmtree(p, ignore_errors=True)
    p.mkdir(parents=True)
    return p


def build_kwok(p: Progress) -> None:
    c = KWOK
    partial = _partial(c)
    env = go_env() | {"GOBIN": str(partial)}
    p.run(f"building kwok, kwokctl {c.version}",
          ["go", "install", "-trimpath", "-ldflags=-s -w",
           f"sigs.k8s.io/kwok/cmd/kwok@{c.version}", f"sigs.k8s.io/kwok/cmd/kwokctl@{c.version}"], env=env)
    _install_outputs(partial, c.bin_dir, c.binaries)
    src = module_dir(p, "sigs.k8s.io/kwok", c.version) / "kustomize"
    stages = c.share_dir / "stages"
    stages.mkdir(parents=True, exist_ok=True)
    for rel in ("stage/node/fast/node-initialize.yaml", "stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
                "stage/pod/fast/pod-ready.yaml", "stage/pod/fast/pod-delete.yaml"):
        shutil.copyfile(src / rel, stages / Path(rel).name)
    # in-cluster kwok for the kind path: the upstream kustomization with the release image
    out = p.run("rendering the in-cluster kwok manifests (kind path)",
                [str(bin_path("kubectl")), "kustomize", str(src / "kwok")])
    out = out.replace("image: registry.k8s.io/kwok/kwok:staging", f"image: {versions.KWOK_IMAGE}")
    out = re.sub(r"image: (\S*/)?kwok(:\S+)?\n", f"image: {versions.KWOK_IMAGE}\n", out)
    (c.share_dir / "kwok-in-cluster.yaml").write_text(out)


def build_etcd(p: Progress) -> None:
    c = ETCD
    partial = _partial(c)
    p.run(f"building etcd {c.version}",
          ["go", "build", "-trimpath", "-ldflags=-s -w", "-o", str(partial / "etcd"), "go.etcd.io/etcd/server/v3"],
          cwd=TOOLCHAIN_MODULES / "etcd", env=go_env())
    _install_outputs(partial, c.bin_dir, c.binaries)


def kubernetes_ldflags(version: str, commit: str) -> str:
    """The version variables of hack/lib/version.sh; without them Kueue refuses the apiserver's /version."""
    major, minor = version.lstrip("v").split(".")[:2]
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {pkg}.gitMajor={major}", f"-X {pkg}.gitMinor={minor}", f"-X {pkg}.gitVersion={version}",
                  f"-X {pkg}.gitTreeState=clean", f"-X {pkg}.gitCommit={commit}",
                  f"-X {pkg}.buildDate=2026-01-01T00:00:00Z"]
    return " ".join(flags)


def build_kubernetes(p: Progress) -> None:
    c = KUBERNETES
    wd = TOOLCHAIN_MODULES / "k8s"
    info = json.loads(p.run("resolving k8s.io/kubernetes", ["go", "list", "-m", "-json", "k8s.io/kubernetes"],
                            cwd=wd, env=go_env()))
    if info.get("Version") != c.version:
        raise ToolchainError(f"toolchain/k8s/go.mod pins k8s.io/kubernetes {info.get('Version')}, "
                             f"versions.py says {c.version}: regenerate the wrapper module")
    commit = info.get("Origin", {}).get("Hash") or "0" * 40
    partial = _partial(c)
    p.run(f"building kube-apiserver, kube-controller-manager, kube-scheduler, kubectl {c.version} "
          "(the longest step: about 6 min cold on 2 cores)",
          ["go", "build", "-trimpath", "-tags", "selinux,notest,grpcnotrace",
           "-ldflags", kubernetes_ldflags(c.version, commit), "-o", str(partial) + "/",
           *[f"k8s.io/kubernetes/cmd/{b}" for b in c.binaries]], cwd=wd, env=go_env())
    _install_outputs(partial, c.bin_dir, c.binaries)


def build_kueue(p: Progress) -> None:
    c = KUEUE
    if not component_ready(KUBERNETES):
        raise ToolchainError("Kueue's manifests are rendered with the pinned kubectl: build kubernetes first")
    partial = _partial(c)
    pkg = "sigs.k8s.io/kueue/pkg/version"
    p.run(f"building kueue {c.version}",
          ["go", "install", "-trimpath",
           f"-ldflags=-s -w -X {pkg}.GitVersion={c.version} -X {pkg}.GitCommit={versions.KUEUE_COMMIT} "
           f"-X {pkg}.BuildDate={versions.KUEUE_BUILD_DATE}",
           f"sigs.k8s.io/kueue/cmd/kueue@{c.version}"], env=go_env() | {"GOBIN": str(partial)})
    _install_outputs(partial, c.bin_dir, c.binaries)
    src = module_dir(p, "sigs.k8s.io/kueue", c.version)
    out = p.run("rendering Kueue's config/default", [str(bin_path("kubectl")), "kustomize", str(src / "config" / "default")])
    c.share_dir.mkdir(parents=True, exist_ok=True)
    (c.share_dir / "kueue-manifests.yaml").write_text(out)


def build_provreq_crd(p: Progress) -> None:
    c = PROVREQ_CRD
    src = module_dir(p, "k8s.io/autoscaler/cluster-autoscaler/apis", c.version)
    c.share_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src / "config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml",
                    c.share_dir / "provisioningrequests.yaml")


def build_kind(p: Progress) -> None:
    c = KIND
    partial = _partial(c)
    p.run(f"building kind {c.version}", ["go", "install", "-trimpath", "-ldflags=-s -w", f"sigs.k8s.io/kind@{c.version}"],
          env=go_env() | {"GOBIN": str(partial)})
    _install_outputs(partial, c.bin_dir, c.binaries)


def build_actionlint(p: Progress) -> None:
    c = ACTIONLINT
    partial = _partial(c)
    p.run(f"building actionlint {c.version}",
          ["go", "install", "-trimpath", "-ldflags=-s -w", f"github.com/rhysd/actionlint/cmd/actionlint@{c.version}"],
          env=go_env() | {"GOBIN": str(partial)})
    _install_outputs(partial, c.bin_dir, c.binaries)


BUILDERS: dict[str, Callable[[Progress], None]] = {
    "kwok": build_kwok, "etcd": build_etcd, "kubernetes": build_kubernetes,
    "kueue": build_kueue, "autoscaler-apis": build_provreq_crd, "kind": build_kind,
    "actionlint": build_actionlint,
}
# kubectl renders the other components' manifests, so kubernetes comes before kwok and kueue
BUILD_ORDER = ("etcd", "kubernetes", "kwok", "autoscaler-apis", "kueue", "actionlint", "kind")


def ensure(include_kind: bool = False, progress: Progress | None = None) -> list[str]:
    """Build whatever is missing; return the names of the components built."""
    p = progress or Progress()
    by_name = {c.name: c for c in COMPONENTS}
    wanted = [by_name[n] for n in BUILD_ORDER if include_kind or not by_name[n].docker_only]
    missing = [c for c in wanted if not component_ready(c)]
    if not missing:
        p.say(f"all pinned binaries present in {cache_root()}")
        return []
    check_go()
    p.say(f"cache {cache_root()}; to build: {', '.join(f'{c.name} {c.version}' for c in missing)}")
    for c in missing:
        BUILDERS[c.name](p)
        if not component_ready(c):
            bad = [(b, reported_version(c, b)) for b in c.binaries if reported_version(c, b) != c.version]
            raise ToolchainError(f"{c.name} built but reports the wrong version: {bad} (wanted {c.version})")
        p.say(f"{c.name} {c.version} ready")
    return [c.name for c in missing]
