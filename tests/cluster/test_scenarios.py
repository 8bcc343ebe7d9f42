"""The reviewers' scenarios, run through their records on the real cluster (scenarios/kit/catalogue.py)."""

from __future__ import annotations

import pytest

from scenarios.kit import catalogue
from scenarios.walkthrough import race
from tests.cluster.conftest import scenario_passes

RACES = catalogue.members("race")
ONCE = [n for n in catalogue.members("all") if n not in RACES]


@pytest.mark.walkthrough
@pytest.mark.parametrize("name", ONCE)
def test_walkthrough_scenario(clean, name):
    scenario_passes(clean, name)


# round 1 is the walkthrough's own run, rounds 2 and 3 repeat it (./test.sh runs all three; .ci/run none: its
# quick start ran round 1, and a CI run runs each scenario once)
@pytest.mark.parametrize("round_", [pytest.param(1, marks=pytest.mark.walkthrough),
                                    pytest.param(2, marks=pytest.mark.repeat),
                                    pytest.param(3, marks=pytest.mark.repeat)])
@pytest.mark.parametrize("name", RACES)
def test_race_scenarios_repeatedly(clean, name, round_):
    scenario_passes(clean, name)


@pytest.mark.parametrize("point", ["after-commit", "after-mirror", "after-arm"])
def test_deadline_controller_killed_at_each_step_boundary_converges(clean, point):
    r = race.interrupted(clean, point)
    expected = {"after-commit": {"committed": True, "mirrored": False, "armed": False},
                "after-mirror": {"committed": True, "mirrored": True, "armed": False},
                "after-arm": {"committed": True, "mirrored": True, "armed": True}}[point]
    assert r["at_kill"] == expected
    assert r["mirror_writes"] == 1, "the mirror was written more than once"
    assert r["arm_writes"] == 1, "cleanup was armed more than once"
    assert not r["unsuspended"]
