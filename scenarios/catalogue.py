"""Every scenario, read from the records its module declares (`SCENARIOS`, see record.py), and the groups.

The runner, `tau-demo scenario list`, `./scenario.sh` and the cluster tests all read this.  A new
scenario is one record in its story's module; a new story module is found by itself (every module of
this package is looked at).  A new group is one line in GROUPS.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from pathlib import Path

from .record import Group, Scenario

GROUPS = (   # in order; the walkthrough groups make up "all"
    Group("success", "a 2 × 8-GPU gang waits for its nodes and starts once they exist", walkthrough=True),
    Group("timeout", "every wait is bounded, one layer at a time", walkthrough=True),
    Group("race", "admission and the admission deadline at the same moment", walkthrough=True),
    Group("beyond", "beyond the design's paths: nodes that never boot", walkthrough=True),
    Group("upstream", "known Kueue v0.19.2 and Cluster Autoscaler 1.36.1 defects, reproduced or not",
          walkthrough=False),
    Group("kueue-specs", "Kueue v0.19.2's own provisioning specs, driven end to end by an autoscaler", walkthrough=False),
    Group("taucluster", "the design's once-per-cluster setup: a TauCluster in Manage, Adopt and External mode",
          walkthrough=False),
    Group("multikueue", "a MultiKueue manager dispatches to two capacity-aware workers (`cluster up --multikueue`)",
          walkthrough=False, multikueue=True),
)
ALL = "all"     # the walkthrough


class CatalogueError(RuntimeError):
    """Two scenarios share a name, or one names a group that is not declared."""


def _story_modules() -> list:
    """Every module of this package.  The one import by name in the project: it imports only this package's
    own modules, each of which tests/unit/test_layers.py parses like any other, so no dependency is hidden."""
    names = sorted(m.name for m in pkgutil.walk_packages([str(Path(__file__).parent)], "scenarios."))
    return [importlib.import_module(n) for n in names]


@lru_cache(maxsize=1)
def scenarios() -> tuple[Scenario, ...]:
    """Every scenario, by group (in GROUPS order), then module name, then order in its module."""
    found: list[Scenario] = []
    for module in _story_modules():
        found += list(getattr(module, "SCENARIOS", ()))
    return check(found)


def check(found: list[Scenario]) -> tuple[Scenario, ...]:
    """The records in catalogue order; CatalogueError for a duplicate name or an undeclared group (pure)."""
    order = {g.name: i for i, g in enumerate(GROUPS)}
    names: set[str] = set()
    for s in found:
        if s.group not in order:
            raise CatalogueError(f"scenario {s.name}: group {s.group!r} is not declared in scenarios/catalogue.py "
                                 f"GROUPS ({', '.join(order)})")
        if s.name in names or (s.name in order and s.name != s.group) or s.name == ALL:
            raise CatalogueError(f"scenario name {s.name!r} is used twice (or is another group's name)")
        names.add(s.name)
    return tuple(sorted(found, key=lambda s: order[s.group]))     # sorted() is stable: module order within a group


def by_name() -> dict[str, Scenario]:
    return {s.name: s for s in scenarios()}


def group_names() -> list[str]:
    """What `./scenario.sh` takes besides scenario names: "all" and every group."""
    return [ALL] + [g.name for g in GROUPS]


def members(group: str) -> list[str]:
    """The scenarios of a group, in order; of "all", the walkthrough."""
    walk = {g.name for g in GROUPS if g.walkthrough}
    return [s.name for s in scenarios() if (s.group in walk if group == ALL else s.group == group)]


def resolve(names: tuple[str, ...] | list[str], with_upstream: bool = False) -> list[str]:
    """Scenario names from groups and names, in order, each once; with_upstream appends the upstream group.
    KeyError names the unknown one."""
    known = by_name()
    chosen: list[str] = []
    for n in list(names or (ALL,)) + (["upstream"] if with_upstream else []):
        if n in group_names():
            chosen += [m for m in members(n) if m not in chosen]
        elif n in known:
            chosen += [n] if n not in chosen else []
        else:
            raise KeyError(n)
    return chosen
