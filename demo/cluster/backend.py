"""The one interface both cluster backends implement, and how `auto` picks one.

    check(name, options)            cheap checks before anything is built or created (ports, Docker)
    restart(name, component)        kill one component (kueue, kube-apiserver) with SIGKILL and start it
                                    again: fault injection for soaks and tests
    up(name, options)  -> State     create or repair (idempotent)
    down(name)         -> bool      stop everything, remove state; False if there was nothing
    status(name)       -> rows      (component, ok, detail) per process

The registry and the `auto` choice are in backends.py.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Callable, Protocol

from .state import State


@dataclass(frozen=True)
class UpOptions:
    apiserver_port: int = 0          # kwok: fixed apiserver port (0 = any free port); kind: refused unless 0
    multikueue: bool = False         # kwok: the demo cluster as a MultiKueue manager with two workers; kind: refused
    bare: bool = False               # only the control plane, the ProvisioningRequest CRD, Kueue and KWOK: no demo
                                     # objects, no TauCluster (a cluster for `tau-demo cluster attach` to take on)


class Backend(Protocol):
    name: str
    toolchain: tuple[str, ...]       # which toolchain components it needs (components.wanted(...) key)

    def check(self, name: str, options: UpOptions) -> None: ...

    def up(self, name: str, options: UpOptions) -> State: ...

    def down(self, name: str) -> bool: ...

    def status(self, name: str) -> list[tuple[str, bool, str]]: ...

    def restart(self, name: str, component: str, while_down: Callable[[], None] | None = None) -> None: ...


def docker_answers() -> bool:
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
