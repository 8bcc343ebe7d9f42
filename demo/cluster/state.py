"""What `cluster up` leaves on disk about a cluster (backend, kubeconfig, ports), read by every command."""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..paths import cluster_dir

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


def remove_state(name: str) -> None:
    shutil.rmtree(cluster_dir(name), ignore_errors=True)
