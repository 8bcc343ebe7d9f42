"""The design's once-per-cluster setup told on the real cluster (the group taucluster): a TauCluster in Manage,
Adopt and External mode (`stories`)."""

from ..kit.scenario import Group

GROUPS = (Group("taucluster", "the design's once-per-cluster setup: a TauCluster in Manage, Adopt and External mode",
                walkthrough=False),)
