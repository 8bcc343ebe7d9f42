"""What `cluster up` leaves on disk about a cluster (backend, kubeconfig, ports), read by every command."""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from k8s.paths import cluster_dir, state_root

DEFAULT_NAME = "tau-demo"


class ClusterError(RuntimeError):
    """Cluster bring-up or teardown failed; the message says what to do."""


@dataclass
class State:
    name: str
    backend: str
    kubeconfig: str
    created: float = field(default_factory=time.time)
    ports: dict[str, int] = field(default_factory=dict)
    role: str = ""                   # "" (a plain demo cluster), or MultiKueue's "manager" / "worker" (multikueue.py)
    workers: list[str] = field(default_factory=list)     # a manager's: its workers' cluster names
    setup: str = ""                  # the TauCluster whose controller runs for this cluster ("": none runs)
    attached: bool = False           # a cluster `cluster attach` took on: never created nor deleted by the harness
    mode: str = ""                   # an attached cluster's TauCluster mode (Adopt or External)
    wrote: list[str] = field(default_factory=list)       # what attaching created (attach.MADE_*): down removes it

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


def state_of(kubeconfig: str | os.PathLike[str] | None) -> State | None:
    """The state of the cluster `cluster up` made whose kubeconfig this is (None: not one of ours)."""
    if not kubeconfig:
        return None
    want = Path(kubeconfig).resolve()
    for f in sorted((state_root() / "clusters").glob("*/cluster.json")):
        st = State.load(f.parent.name)
        if st is not None and Path(st.kubeconfig).resolve() == want:
            return st
    return None


def default_kubeconfig(name: str = DEFAULT_NAME) -> str | None:
    """The kubeconfig of the demo cluster if `cluster up` made one, else None (client default)."""
    st = State.load(name)
    return st.kubeconfig if st and Path(st.kubeconfig).is_file() else None


def remove_state(name: str) -> None:
    shutil.rmtree(cluster_dir(name), ignore_errors=True)
