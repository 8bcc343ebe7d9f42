"""The source tree the real Cluster Autoscaler is built from.

The Go module proxy refuses k8s.io/autoscaler/cluster-autoscaler at every version (its go.mod has
replace lines, so it cannot be `go install`ed either), but it serves every dependency.  So the
module is built inside its own source tree, which comes from, in this order:

1. $TAU_DEMO_CA_SOURCE naming a directory: the kubernetes/autoscaler checkout, its
   cluster-autoscaler/ folder, or a folder holding autoscaler/cluster-autoscaler/ (an unpacked
   tarball).  Its version/version.go must say the pinned version.
2. $TAU_DEMO_CA_SOURCE naming a .tar.xz of the tag's cluster-autoscaler/ directory under the prefix
   autoscaler/ (`git archive --format=tar --prefix=autoscaler/ <tag> cluster-autoscaler | xz`): its
   sha256 must equal versions.CLUSTER_AUTOSCALER_TARBALL_SHA256; it is unpacked into a work folder.
3. unset: a shallow, sparse `git clone` of the tag from GitHub; HEAD must be the pinned commit.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

from . import versions
from .gobuild import Progress, ToolchainError

ENV = "TAU_DEMO_CA_SOURCE"
_VERSION_LINE = re.compile(r'^var ClusterAutoscalerVersion = "([^"]+)"', re.M)


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def module_root(root: Path) -> Path | None:
    """The directory holding the cluster-autoscaler go.mod inside root (root itself, root/cluster-autoscaler
    or root/autoscaler/cluster-autoscaler), or None."""
    for cand in (root, root / "cluster-autoscaler", root / "autoscaler" / "cluster-autoscaler"):
        try:
            first = (cand / "go.mod").read_text().splitlines()[0]
        except (OSError, IndexError):
            continue
        if first.split() == ["module", versions.CLUSTER_AUTOSCALER_MODULE]:
            return cand
    return None


def source_version(module_dir: Path) -> str | None:
    """The version compiled into the source tree (version/version.go), or None."""
    try:
        m = _VERSION_LINE.search((module_dir / "version" / "version.go").read_text())
    except OSError:
        return None
    return m.group(1) if m else None


def checked_module(root: Path, origin: str) -> Path:
    mod = module_root(root)
    if mod is None:
        raise ToolchainError(f"{origin}: no {versions.CLUSTER_AUTOSCALER_MODULE} go.mod in {root}, "
                             f"{root}/cluster-autoscaler or {root}/autoscaler/cluster-autoscaler")
    found = source_version(mod)
    if found != versions.CLUSTER_AUTOSCALER:
        raise ToolchainError(f"{origin}: {mod} is cluster-autoscaler {found or '(unknown version)'}, "
                             f"the pin is {versions.CLUSTER_AUTOSCALER}")
    return mod


def unpack_tarball(path: Path, workdir: Path, progress: Progress) -> Path:
    progress.say(f"checking sha256 of {path}")
    digest = sha256_of(path)
    if digest != versions.CLUSTER_AUTOSCALER_TARBALL_SHA256:
        raise ToolchainError(f"{ENV}={path}: sha256 {digest} does not match the pin "
                             f"{versions.CLUSTER_AUTOSCALER_TARBALL_SHA256} (demo/toolchain/versions.py)")
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    progress.say(f"unpacking {path.name}")
    with tarfile.open(path, "r:xz") as tar:
        tar.extractall(workdir, filter="data")
    return checked_module(workdir, f"{ENV}={path}")


def git_clone(workdir: Path, progress: Progress, url: str = versions.CLUSTER_AUTOSCALER_GIT) -> Path:
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    dest = workdir / "autoscaler"
    tag = versions.CLUSTER_AUTOSCALER_TAG
    hint = (f"; or set {ENV} to a cluster-autoscaler source directory or to the .tar.xz of the tag "
            f"(sha256 {versions.CLUSTER_AUTOSCALER_TARBALL_SHA256[:12]}…)")
    if not shutil.which("git"):
        raise ToolchainError(f"git is not installed, so the cluster-autoscaler source cannot be cloned{hint}")
    try:
        progress.run(f"cloning {url} at {tag} (shallow, sparse: cluster-autoscaler/ only)",
                     ["git", "clone", "--quiet", "--depth", "1", "--branch", tag, "--filter=blob:none", "--sparse",
                      url, str(dest)])
        progress.run("checking out cluster-autoscaler/",
                     ["git", "-C", str(dest), "sparse-checkout", "set", "cluster-autoscaler"])
    except ToolchainError as e:
        raise ToolchainError(f"{e}{hint}") from e
    head = subprocess.run(["git", "-C", str(dest), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    if head != versions.CLUSTER_AUTOSCALER_COMMIT:
        raise ToolchainError(f"{url} tag {tag} is commit {head or '?'}, the pin is {versions.CLUSTER_AUTOSCALER_COMMIT}")
    return checked_module(dest, f"git clone of {tag}")


def prepare(workdir: Path, progress: Progress) -> tuple[Path, str]:
    """(module directory to build in, a phrase saying where it came from).  Files are unpacked or cloned
    into workdir, which the caller removes afterwards; a directory source is used in place."""
    spec = os.environ.get(ENV, "").strip()
    if not spec:
        return git_clone(workdir, progress), f"git clone of {versions.CLUSTER_AUTOSCALER_TAG}"
    path = Path(spec).expanduser()
    if path.is_dir():
        return checked_module(path.resolve(), f"{ENV}={spec}"), f"directory {path}"
    if path.is_file() and path.name.endswith(".tar.xz"):
        return unpack_tarball(path.resolve(), workdir, progress), f"tarball {path.name} (sha256 verified)"
    raise ToolchainError(f"{ENV}={spec}: neither a directory nor a .tar.xz file")
