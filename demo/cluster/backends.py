"""The registry of cluster backends, and how `--backend auto` picks one."""

from __future__ import annotations

from . import attach, kind, multikueue_kwok
from .backend import Backend, docker_answers
from .state import State

BACKENDS: dict[str, Backend] = {"kwok": multikueue_kwok.BACKEND, "kind": kind.BACKEND,
                                attach.BACKEND_NAME: attach.BACKEND}   # a cluster `cluster attach` took on


def choose(choice: str, existing: State | None = None) -> str:
    """auto: the backend of an existing cluster, else kind when a Docker engine answers, else kwok."""
    if choice != "auto":
        return choice
    if existing is not None:
        return existing.backend
    return "kind" if docker_answers() else "kwok"


def get(name: str) -> Backend:
    return BACKENDS[name]
