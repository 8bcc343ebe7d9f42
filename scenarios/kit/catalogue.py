"""Every scenario and every group, read from what the story families declare (`SCENARIOS` and `GROUPS`, see
scenario.py).

The runner, `tau-demo scenario list`, `./scenario.sh` and the cluster tests all read this.  A new scenario is one
`Scenario` in its story's module; a new story module is found by itself (every module of the scenarios package is
looked at).  A new group is one `Group` in its family's `GROUPS` and its name in GROUP_ORDER.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from pathlib import Path

from .scenario import Group, Scenario

# The groups in the order `tau-demo scenario list` shows them; the walkthrough groups among them make up "all", in
# this order.  Each `Group` is declared by its family (`GROUPS`: what it is, and what the runner asks of it).
GROUP_ORDER = ("success", "timeout", "race", "beyond", "gangs", "upstream", "kueue-specs", "taucluster", "multikueue")
ALL = "all"     # the walkthrough


class CatalogueError(RuntimeError):
    """Two scenarios share a name, or one names a group that is not declared."""


def _story_modules() -> list:
    """Every module of the scenarios package.  The one import by name in the project: it imports only the
    scenarios' own modules (the families' above this kit among them, which is how the kit reads their declarations
    without importing them), each of which tests/unit/test_layers.py parses like any other, so no dependency is
    hidden."""
    names = sorted(m.name for m in pkgutil.walk_packages([str(Path(__file__).parents[1])], "scenarios."))
    return [importlib.import_module(n) for n in names]


@lru_cache(maxsize=1)
def all_groups() -> tuple[Group, ...]:
    """Every group, in GROUP_ORDER; CatalogueError for a group declared twice, one not in GROUP_ORDER or a name
    there that no family declares."""
    declared = {id(g): g for module in _story_modules() for g in getattr(module, "GROUPS", ())}   # each once, where
    return order_groups(list(declared.values()))                                                 # else it is read


def order_groups(found: list[Group]) -> tuple[Group, ...]:
    """The groups in GROUP_ORDER (pure); CatalogueError unless each name there is declared exactly once."""
    names = [g.name for g in found]
    if sorted(names) != sorted(GROUP_ORDER):
        raise CatalogueError(f"the groups the families declare ({', '.join(names)}) are not those of "
                             f"scenarios/kit/catalogue.py GROUP_ORDER ({', '.join(GROUP_ORDER)}), each once")
    return tuple(sorted(found, key=lambda g: GROUP_ORDER.index(g.name)))


@lru_cache(maxsize=1)
def scenarios() -> tuple[Scenario, ...]:
    """Every scenario, by group (in GROUP_ORDER), then module name, then order in its module."""
    found: list[Scenario] = []
    for module in _story_modules():
        found += list(getattr(module, "SCENARIOS", ()))
    return check(found)


def check(found: list[Scenario]) -> tuple[Scenario, ...]:
    """The scenarios in catalogue order; CatalogueError for a duplicate name or an undeclared group (pure)."""
    order = {g: i for i, g in enumerate(GROUP_ORDER)}
    names: set[str] = set()
    for s in found:
        if s.group not in order:
            raise CatalogueError(f"scenario {s.name}: group {s.group!r} is not declared in scenarios/kit/catalogue.py "
                                 f"GROUP_ORDER ({', '.join(order)})")
        if s.name in names or (s.name in order and s.name != s.group) or s.name == ALL:
            raise CatalogueError(f"scenario name {s.name!r} is used twice (or is another group's name)")
        names.add(s.name)
    return tuple(sorted(found, key=lambda s: order[s.group]))     # sorted() is stable: module order within a group


def by_name() -> dict[str, Scenario]:
    return {s.name: s for s in scenarios()}


def group_names() -> list[str]:
    """What `./scenario.sh` takes besides scenario names: "all" and every group."""
    return [ALL, *GROUP_ORDER]


def members(group: str) -> list[str]:
    """The scenarios of a group, in order; of "all", the walkthrough."""
    walk = {g.name for g in all_groups() if g.walkthrough}
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
