"""Each pinned component described once: what it provides, how its version is probed, how it is built.

Layout under the cache (paths.cache_root()), one folder per component and version:
    kubectl-v1.36.3/bin/kubectl                         (both backends)
    kubernetes-v1.36.3/bin/{kube-apiserver,kube-controller-manager,kube-scheduler}
    etcd-v3.6.14/bin/etcd
    kwok-v0.8.0/bin/{kwok,kwokctl}
    kwok-manifests-v0.8.0/share/{stages/*.yaml,kwok-in-cluster.yaml}          (both backends)
    kueue-v0.19.2/bin/kueue
    kueue-manifests-v0.19.2/share/kueue-manifests.yaml                       (both backends)
    autoscaler-apis-<ver>/share/provisioningrequests.yaml                   (both backends)
    kind-v0.32.0/bin/kind                                                   (kind backend)
    actionlint-<ver>/bin/actionlint                                         (lints the kind workflow)
    cluster-autoscaler-1.36.1/bin/cluster-autoscaler     (--with-real-ca: the real CA, kwok provider only)

A component is built only when one of its outputs is missing or reports the wrong version.
Binaries are written to a .partial folder and renamed into bin/ when the whole component
succeeded, so an interrupted build never leaves a half-written binary; Go's own build cache
makes the rerun resume where it stopped.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from k8s.paths import GO_MODULES, cache_root
from . import buildinfo, casource, versions
from .gobuild import (Progress, ToolchainError, check_go, fresh_partial, go_env, go_install, install_outputs,
                      module_dir, run_out)

BACKEND_NAMES = ("kwok", "kind")                 # the cluster backends (demo/cluster/backends.py)


@dataclass(frozen=True)
class Component:
    name: str
    version: str
    binaries: tuple[str, ...]
    artifacts: tuple[str, ...]                       # files under share/
    probe: Callable[["Component", str], str | None]  # the version a binary reports (None: missing/unreadable)
    build: Callable[["Component", Progress], None]
    needed_by: frozenset[str] = field(default_factory=lambda: frozenset(BACKEND_NAMES))   # backends; or "extra"
    note: str = ""

    @property
    def dir(self) -> Path:
        return cache_root() / f"{self.name}-{self.version}"

    @property
    def bin_dir(self) -> Path:
        return self.dir / "bin"

    @property
    def share_dir(self) -> Path:
        return self.dir / "share"

    def artifact_ok(self, artifact: str) -> bool:
        p = self.share_dir / artifact
        return p.is_file() and p.stat().st_size > 0

    def ready(self) -> bool:
        return (all(self.probe(self, b) == self.version for b in self.binaries)
                and all(self.artifact_ok(a) for a in self.artifacts))


# ---------------------------------------------------------------------------- probes

def probe_kube_version(c: Component, binary: str) -> str | None:
    path = c.bin_dir / binary
    if not path.is_file():
        return None
    if binary == "kubectl":
        try:
            return json.loads(run_out([str(path), "version", "--client", "-o", "json"]))["clientVersion"]["gitVersion"]
        except (ValueError, KeyError):
            return None
    m = re.search(r"Kubernetes (v\S+)", run_out([str(path), "--version"]))
    return m.group(1) if m else None


def probe_etcd(c: Component, binary: str) -> str | None:
    path = c.bin_dir / binary
    m = re.search(r"etcd Version: (\S+)", run_out([str(path), "--version"])) if path.is_file() else None
    return "v" + m.group(1) if m else None


def probe_module(module: str) -> Callable[[Component, str], str | None]:
    """The version of `module` the binary was built from, read from its embedded build info
    (no version flag and no Go needed)."""
    def probe(c: Component, binary: str) -> str | None:
        info = buildinfo.read_build_info(c.bin_dir / binary)
        if info is None:
            return None
        if info.main_module == module:
            return info.main_version
        return info.deps.get(module)
    return probe


def no_binaries(c: Component, binary: str) -> str | None:   # pragma: no cover - artifact-only components
    return None


# ---------------------------------------------------------------------------- builders

def kubernetes_ldflags(version: str, commit: str) -> str:
    """The version variables of hack/lib/version.sh; without them Kueue refuses the apiserver's /version."""
    major, minor = version.lstrip("v").split(".")[:2]
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {pkg}.gitMajor={major}", f"-X {pkg}.gitMinor={minor}", f"-X {pkg}.gitVersion={version}",
                  f"-X {pkg}.gitTreeState=clean", f"-X {pkg}.gitCommit={commit}",
                  f"-X {pkg}.buildDate=2026-01-01T00:00:00Z"]
    return " ".join(flags)


def build_kubernetes_binaries(c: Component, p: Progress) -> None:
    """kube-* and kubectl from the wrapper module gomod/k8s (33 staging modules replaced)."""
    wd = GO_MODULES / "k8s"
    info = json.loads(p.run("resolving k8s.io/kubernetes", ["go", "list", "-m", "-json", "k8s.io/kubernetes"],
                            cwd=wd, env=go_env()))
    if info.get("Version") != c.version:
        raise ToolchainError(f"gomod/k8s/go.mod pins k8s.io/kubernetes {info.get('Version')}, "
                             f"versions.py says {c.version}: regenerate the wrapper module")
    commit = info.get("Origin", {}).get("Hash") or "0" * 40
    partial = fresh_partial(c.dir)
    p.run(f"building {', '.join(c.binaries)} {c.version}{c.note}",
          ["go", "build", "-trimpath", "-tags", "selinux,notest,grpcnotrace",
           "-ldflags", kubernetes_ldflags(c.version, commit), "-o", str(partial) + "/",
           *[f"k8s.io/kubernetes/cmd/{b}" for b in c.binaries]], cwd=wd, env=go_env())
    install_outputs(partial, c.bin_dir, c.binaries)


def build_etcd(c: Component, p: Progress) -> None:
    partial = fresh_partial(c.dir)
    p.run(f"building etcd {c.version}",
          ["go", "build", "-trimpath", "-ldflags=-s -w", "-o", str(partial / "etcd"), "go.etcd.io/etcd/server/v3"],
          cwd=GO_MODULES / "etcd", env=go_env())
    install_outputs(partial, c.bin_dir, c.binaries)


def build_go_install(module: str, packages: tuple[str, ...], ldflags: Callable[[Component], str] | None = None):
    def build(c: Component, p: Progress) -> None:
        partial = fresh_partial(c.dir)
        go_install(p, f"building {', '.join(c.binaries)} {c.version}", [f"{pkg}@{c.version}" for pkg in packages],
                   partial, ldflags(c) if ldflags else "-s -w")
        install_outputs(partial, c.bin_dir, c.binaries)
    return build


def kueue_ldflags(c: Component) -> str:
    pkg = "sigs.k8s.io/kueue/pkg/version"
    return (f"-s -w -X {pkg}.GitVersion={c.version} -X {pkg}.GitCommit={versions.KUEUE_COMMIT} "
            f"-X {pkg}.BuildDate={versions.KUEUE_BUILD_DATE}")


def kustomize(p: Progress, step: str, directory: Path) -> str:
    """`kubectl kustomize` with the pinned kubectl (built first)."""
    if not KUBECTL_BINARY.ready():
        raise ToolchainError("manifests are rendered with the pinned kubectl: build kubectl first")
    return p.run(step, [str(bin_path("kubectl")), "kustomize", str(directory)])


KWOK_STAGE_SOURCES = ("stage/node/fast/node-initialize.yaml", "stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
                      "stage/pod/fast/pod-ready.yaml", "stage/pod/fast/pod-delete.yaml")


def build_kwok_manifests(c: Component, p: Progress) -> None:
    src = module_dir(p, "sigs.k8s.io/kwok", c.version) / "kustomize"
    stages = c.share_dir / "stages"
    stages.mkdir(parents=True, exist_ok=True)
    for rel in KWOK_STAGE_SOURCES:
        shutil.copyfile(src / rel, stages / Path(rel).name)
    # in-cluster kwok for the kind path: the upstream kustomization with the release image
    out = kustomize(p, "rendering the in-cluster kwok manifests (kind path)", src / "kwok")
    out = out.replace("image: registry.k8s.io/kwok/kwok:staging", f"image: {versions.KWOK_IMAGE}")
    out = re.sub(r"image: (\S*/)?kwok(:\S+)?\n", f"image: {versions.KWOK_IMAGE}\n", out)
    (c.share_dir / "kwok-in-cluster.yaml").write_text(out)


def build_kueue_manifests(c: Component, p: Progress) -> None:
    src = module_dir(p, "sigs.k8s.io/kueue", c.version)
    out = kustomize(p, "rendering Kueue's config/default", src / "config" / "default")
    c.share_dir.mkdir(parents=True, exist_ok=True)
    (c.share_dir / "kueue-manifests.yaml").write_text(out)


def build_provreq_crd(c: Component, p: Progress) -> None:
    src = module_dir(p, "k8s.io/autoscaler/cluster-autoscaler/apis", c.version)
    c.share_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src / "config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml",
                    c.share_dir / "provisioningrequests.yaml")


CA_VERSION_VAR = f"{versions.CLUSTER_AUTOSCALER_MODULE}/version.ClusterAutoscalerVersion"
CA_STAMP_SUFFIX = ".stamp"          # beside the binary: "<version> <sha256 of the binary>"


def probe_cluster_autoscaler(c: Component, binary: str) -> str | None:
    """The real CA has no version flag, and -trimpath keeps -ldflags out of its build info.  So: the build
    info must show the CA main module built with -tags kwok, and the stamp the builder wrote beside the
    binary must carry the sha256 of exactly this binary; the stamp's version is the answer."""
    path = c.bin_dir / binary
    info = buildinfo.read_build_info(path)
    if info is None or info.main_module != versions.CLUSTER_AUTOSCALER_MODULE:
        return None
    if "kwok" not in info.settings.get("-tags", "").split(","):
        return None
    try:
        version, digest = (path.parent / (binary + CA_STAMP_SUFFIX)).read_text().split()[:2]
    except (OSError, ValueError):
        return None
    return version if digest == casource.sha256_of(path) else None


def build_cluster_autoscaler(c: Component, p: Progress) -> None:
    """`go build -tags kwok` inside the CA's own source tree (its replace lines resolve from the proxy)."""
    work = c.dir / ".src"
    try:
        mod, origin = casource.prepare(work, p)
        partial = fresh_partial(c.dir)
        p.run(f"building cluster-autoscaler {c.version} (kwok provider only) from {origin}{c.note}",
              ["go", "build", "-trimpath", "-tags", "kwok",
               "-ldflags", f"-s -w -X {CA_VERSION_VAR}={c.version}",
               "-o", str(partial / "cluster-autoscaler"), "."], cwd=mod, env=go_env())
        stamp = "cluster-autoscaler" + CA_STAMP_SUFFIX
        (partial / stamp).write_text(f"{c.version} {casource.sha256_of(partial / 'cluster-autoscaler')} {origin}\n")
        install_outputs(partial, c.bin_dir, (*c.binaries, stamp))
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------------------- the components

_KWOK_ONLY = frozenset({"kwok"})
KUBECTL_BINARY = Component("kubectl", versions.KUBERNETES, ("kubectl",), (), probe_kube_version, build_kubernetes_binaries)
KUBERNETES_BINARIES = Component("kubernetes", versions.KUBERNETES,
                       ("kube-apiserver", "kube-controller-manager", "kube-scheduler"), (),
                       probe_kube_version, build_kubernetes_binaries, _KWOK_ONLY,
                       note=" (the longest step: about 6 min cold on 2 cores)")
ETCD_BINARY = Component("etcd", versions.ETCD, ("etcd",), (), probe_etcd, build_etcd, _KWOK_ONLY)
KWOK_BINARIES = Component("kwok", versions.KWOK, ("kwok", "kwokctl"), (), probe_module("sigs.k8s.io/kwok"),
                 build_go_install("sigs.k8s.io/kwok", ("sigs.k8s.io/kwok/cmd/kwok", "sigs.k8s.io/kwok/cmd/kwokctl")),
                 _KWOK_ONLY)
KWOK_MANIFESTS = Component("kwok-manifests", versions.KWOK, (),
                           tuple(f"stages/{Path(s).name}" for s in KWOK_STAGE_SOURCES) + ("kwok-in-cluster.yaml",),
                           no_binaries, build_kwok_manifests)
KUEUE_BINARY = Component("kueue", versions.KUEUE, ("kueue",), (), probe_module("sigs.k8s.io/kueue"),
                  build_go_install("sigs.k8s.io/kueue", ("sigs.k8s.io/kueue/cmd/kueue",), kueue_ldflags), _KWOK_ONLY)
KUEUE_MANIFESTS = Component("kueue-manifests", versions.KUEUE, (), ("kueue-manifests.yaml",), no_binaries,
                            build_kueue_manifests)
PROVREQ_CRD = Component("autoscaler-apis", versions.AUTOSCALER_APIS, (), ("provisioningrequests.yaml",), no_binaries,
                        build_provreq_crd)
KIND_BINARY = Component("kind", versions.KIND, ("kind",), (), probe_module("sigs.k8s.io/kind"),
                 build_go_install("sigs.k8s.io/kind", ("sigs.k8s.io/kind",)), frozenset({"kind"}))
ACTIONLINT_BINARY = Component("actionlint", versions.ACTIONLINT, ("actionlint",), (),
                       probe_module("github.com/rhysd/actionlint"),
                       build_go_install("github.com/rhysd/actionlint", ("github.com/rhysd/actionlint/cmd/actionlint",)),
                       frozenset({"extra"}))
CLUSTER_AUTOSCALER_BINARY = Component("cluster-autoscaler", versions.CLUSTER_AUTOSCALER, ("cluster-autoscaler",), (),
                               probe_cluster_autoscaler, build_cluster_autoscaler, frozenset({"extra"}),
                               note=" (5-7 min cold on 2 cores; seconds with a warm Go build cache)")

# build order: kubectl renders the other components' manifests, so it comes first
COMPONENTS = (KUBECTL_BINARY, ETCD_BINARY, KUBERNETES_BINARIES, KWOK_BINARIES, KWOK_MANIFESTS, PROVREQ_CRD, KUEUE_BINARY,
              KUEUE_MANIFESTS, KIND_BINARY, ACTIONLINT_BINARY, CLUSTER_AUTOSCALER_BINARY)


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


def wanted(backends: tuple[str, ...] = ("kwok",), extras: tuple[str, ...] = ()) -> list[Component]:
    """The components the given backends (and extras) need, in build order."""
    return [c for c in COMPONENTS if c.needed_by & set(backends) or c.name in extras]


def versions_table(components: list[Component] | None = None) -> list[tuple[str, str, str, bool]]:
    """(name, reported version or 'missing', path, ok) for every binary and artifact."""
    rows = []
    for c in components or COMPONENTS:
        for b in c.binaries:
            v = c.probe(c, b)
            rows.append((b, v or "missing", str(c.bin_dir / b), v == c.version))
        for a in c.artifacts:
            ok = c.artifact_ok(a)
            rows.append((f"{c.name}:{a}", c.version if ok else "missing", str(c.share_dir / a), ok))
    return rows


def ensure(backends: tuple[str, ...] = ("kwok",), extras: tuple[str, ...] = (),
           progress: Progress | None = None) -> list[str]:
    """Build whatever the backends need and is missing; return the names of the components built."""
    p = progress or Progress()
    missing = [c for c in wanted(backends, extras) if not c.ready()]
    if not missing:
        p.say(f"all pinned binaries present in {cache_root()}")
        return []
    check_go(cache_root())
    p.say(f"cache {cache_root()}; to build: {', '.join(f'{c.name} {c.version}' for c in missing)}")
    for c in missing:
        c.build(c, p)
        if not c.ready():
            bad = [(b, c.probe(c, b)) for b in c.binaries if c.probe(c, b) != c.version]
            raise ToolchainError(f"{c.name} built but reports the wrong version: {bad or c.artifacts} "
                                 f"(wanted {c.version})")
        p.say(f"{c.name} {c.version} ready")
    return [c.name for c in missing]
