"""A MultiKueue manager and two capacity-aware workers on one machine (`tau-demo cluster up --multikueue`, the group
multikueue): the three clusters' watches and the end of every scenario (`kit`), the cross-cluster decisions
(`checks`, pure) and the stories (`stories`)."""

from ..kit.scenario import Group
from .kit import worker_contexts

GROUPS = (Group("multikueue", "a MultiKueue manager dispatches to two capacity-aware workers (`cluster up --multikueue`)",
                walkthrough=False, multikueue=True, other_clusters=worker_contexts),)
