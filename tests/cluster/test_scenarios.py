"""The reviewers' scenarios, run through their Python entry points on the real cluster."""

from __future__ import annotations

import pytest

from scenarios import never_boot, race, success, timeout


def run(ctx, fn):
    ctx.checks.clear()
    fn(ctx)
    failed = [c.what for c in ctx.checks if not c.ok]
    assert ctx.checks and not failed, failed


def test_success_path(clean):
    run(clean, success.run)


@pytest.mark.parametrize("path", [timeout.preflight_refusal, timeout.autoscaler_window, timeout.admission_deadline],
                         ids=["preflight", "autoscaler-window", "admission-deadline"])
def test_timeout_paths(clean, path):
    run(clean, path)


def test_nodes_that_never_boot_are_bounded_by_the_admission_deadline(clean):
    run(clean, never_boot.run)


@pytest.mark.parametrize("round_", [1, 2, 3])
@pytest.mark.parametrize("scenario", [race.scenario_admission_wins, race.scenario_timeout_wins,
                                      race.scenario_legacy, race.scenario_interrupted_mirror],
                         ids=["admission-wins", "timeout-wins", "legacy", "interrupted-mirror"])
def test_race_scenarios_repeatedly(clean, scenario, round_):
    run(clean, scenario)


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
