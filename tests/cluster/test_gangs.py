"""The group `gangs` (scenarios/walkthrough/half_gang.py) on the real cluster with the real Kueue v0.19.2 and the
session's fake autoscaler: half a gang runs while its other pod cannot be scheduled; Kueue's waitForPodsReady (the
harness's configuration, demo/cluster/kueue_manifests.py) evicts it with reason PodsReadyTimeout within its timeout
and a tolerance of its Admitted transition, the GPUs (the running pod, the ClusterQueue's quota, the request) are
released, no pod of it runs while it waits again, it is requeued after the backoff and starts whole once the node
is free; nothing is left behind (the `clean` fixture: the Jobs, Workloads, requests, nodes and the group's own pod)."""

from __future__ import annotations

import pytest

from scenarios.kit import catalogue
from tests.cluster.conftest import scenario_passes

GANGS = catalogue.members("gangs")


def test_the_group_has_its_scenario():
    assert GANGS == ["half-gang"]


@pytest.mark.parametrize("name", GANGS)
def test_gangs_scenario(clean, name):
    scenario_passes(clean, name)
