"""What a scenario is: one `Scenario`, declared in the module that tells its story.

A story module lists its scenarios in a module attribute `SCENARIOS` (a tuple of `Scenario`);
`scenarios.kit.catalogue` finds every such module of the package, so adding a scenario touches that one
file.  A scenario belongs to a group (`Group`, declared once, in its family's package: `GROUPS`); the groups
marked `walkthrough` make up "all", the design's walkthrough, in the catalogue's order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .harness import Context


@dataclass(frozen=True)
class Report:
    """An upstream report a scenario reproduces (or not)."""
    number: str          # "kubernetes-sigs/kueue#3245"
    title: str
    claim: str           # what the report says happens
    fixed_in: str        # where upstream fixed it, or why it is open


@dataclass(frozen=True)
class Spec:
    """One of Kueue v0.19.2's own provisioning specs (its ginkgo.It in provisioning_test.go), made to happen end to
    end: real Kueue reacts to conditions an autoscaler wrote (scenarios/kueue_specs/)."""
    number: int          # 1..21, in the file's order
    line: int            # the It's line at tag v0.19.2
    title: str           # the It's text, as written
    must: str            # what Kueue v0.19.2 must do, one line
    fake: str            # the driving condition, and how the fake autoscaler comes to write it
    real: str = ""       # how the real Cluster Autoscaler 1.36.1 writes it ("" when it cannot: needs_fake says why)
    unreachable: str = ""    # a part of the spec that neither can drive here, and why


@dataclass(frozen=True)
class Group:
    name: str            # what `./scenario.sh <group>` takes
    about: str           # one line
    walkthrough: bool    # part of "all" (the design's walkthrough)
    multikueue: bool = False     # runs on a MultiKueue manager (`tau-demo cluster up --multikueue`), not a plain cluster
    # The clusters besides ctx's own that its scenarios make objects on, each (its name, its context): where what a run
    # left behind is looked for, and what `tau-demo clean` sweeps, on the kind of cluster the group runs on.  None:
    # ctx's own cluster only.
    other_clusters: Callable[[Context], list[tuple[str, Context]]] | None = None


@dataclass(frozen=True)
class Scenario:
    name: str                          # unique; what `./scenario.sh <name>` takes
    group: str                         # a Group's name
    about: str                         # what it shows, one line (`tau-demo scenario list`)
    run: Callable[[Context], None]     # tells the story with ctx.step/ctx.check on the real cluster
    needs_fake: str = ""               # why it cannot run against the real autoscaler ("": it can)
    report: Report | None = None       # the upstream report it reproduces, if any
    spec: Spec | None = None           # the Kueue spec it makes happen, if any
    slot: bool = False                 # a walkthrough scenario that runs side by side in a slot of its own
                                       # (harness.slot_of(name): cluster up's TauCluster has its profile and pool)
