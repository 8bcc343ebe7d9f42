"""Where things live on disk.  Nothing here is inside the repository except manifests/ and runs/ (the
scenarios' event logs and pictures; not committed)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MANIFESTS = REPO / "manifests"
POOLS_FILE = MANIFESTS / "node-pools.yaml"       # the node pools of the fake (and the real) autoscaler
DEVIATIONS_DOC = REPO / "docs" / "autoscaler.md"   # the table of the fake's differences from the real autoscaler
FIDELITY_DOC = REPO / "docs" / "fidelity.md"       # written by tau-demo conformance
KUEUE_SPECS_DOC = REPO / "docs" / "kueue-specs.md"  # written by tau-demo kueue-specs
GO_MODULES = REPO / "gomod"             # the wrapper Go modules (go.mod/go.sum) of the builds that need replace lines
RUNS = REPO / "runs"                     # a scenario run's event logs: runs/<time>/<label>.jsonl (and .svg)
FLEET_RUNS = RUNS / "fleet"              # a fleet run's: runs/fleet/<time>-<autoscaler>/ (events.jsonl, results.json, report.svg)


def cache_root() -> Path:
    """Version-keyed build cache for binaries and rendered upstream manifests.

    Override with TAU_DEMO_CACHE; defaults to ~/.cache/tau-demo (XDG_CACHE_HOME honoured).
    """
    env = os.environ.get("TAU_DEMO_CACHE")
    if env:
        return Path(env).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return (base / "tau-demo").resolve()


def state_root() -> Path:
    """Cluster state (kwokctl workdir, Kueue config, pids, logs).  Override with TAU_DEMO_STATE."""
    env = os.environ.get("TAU_DEMO_STATE")
    if env:
        return Path(env).expanduser().resolve()
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "state"
    return (base / "tau-demo").resolve()


def cluster_dir(name: str) -> Path:
    return state_root() / "clusters" / name


def shown(path: str | Path) -> str:
    """A path as output meant for readers shows it: relative to the repository, or to the state
    or cache root ($TAU_DEMO_STATE/..., $TAU_DEMO_CACHE/...), so no machine's home directory leaks."""
    p = Path(path).resolve()
    for root, label in ((REPO, ""), (state_root(), "$TAU_DEMO_STATE/"), (cache_root(), "$TAU_DEMO_CACHE/")):
        try:
            return label + str(p.relative_to(root))
        except ValueError:
            continue
    return str(p)
