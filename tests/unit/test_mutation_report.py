"""The mutation gate itself (tests/mutation/report.py): how it counts, and when it fails."""

from __future__ import annotations

import json

import pytest

from tests.mutation import report as R


def settings(tmp_path, modules=("pkg/mod.py",), floor=90.0, not_gated=()):
    return R.Settings(list(modules), floor, tmp_path / "equivalent.txt", set(not_gated))


def results(tmp_path, path="pkg/mod.py", **codes):
    meta = tmp_path / "mutants" / (path + ".meta")
    meta.parent.mkdir(parents=True, exist_ok=True)
    module = path[:-3].replace("/", ".")
    meta.write_text(json.dumps({"exit_code_by_key": {f"{module}.x_f__mutmut_{n}": c for n, c in codes.items()}}))
    return tmp_path / "mutants"


def codes(killed=0, survived=0, untested=0, timeout=0, start=1):
    out, n = {}, start
    for code, count in ((1, killed), (0, survived), (33, untested), (-24, timeout)):
        for _ in range(count):
            out[str(n)] = code
            n += 1
    return out


def test_the_score_is_killed_over_mutants_without_the_listed_equivalents(tmp_path):
    s = settings(tmp_path)
    mutants = results(tmp_path, **codes(killed=17, survived=2, timeout=1))
    [row], problems = R.tally(s, {"pkg.mod.x_f__mutmut_18": "same behaviour"}, mutants)
    assert problems == []
    assert (row.counts["killed"], row.counts["timeout"], row.counts["survived"], row.counts["equivalent"]) == (17, 1, 1, 1)
    assert row.score == pytest.approx(100 * 18 / 19) and R.verdict(row, s) == "ok"
    assert row.survivors == ["pkg.mod.x_f__mutmut_19"]


def test_below_the_floor_or_a_mutant_without_a_test_fails_a_gated_module(tmp_path):
    s = settings(tmp_path)
    [row], _ = R.tally(s, {}, results(tmp_path, **codes(killed=8, survived=2)))
    assert row.score == 80 and R.verdict(row, s) == "FAIL: below 90%"
    [row], _ = R.tally(s, {}, results(tmp_path, **codes(killed=99, untested=1)))
    assert row.score == 99 and R.verdict(row, s) == "FAIL: mutants without a test"
    assert row.untested == ["pkg.mod.x_f__mutmut_100"]
    s = settings(tmp_path, not_gated=["pkg/mod.py"])
    assert R.verdict(row, s) == "not gated: mutants without a test"


def test_a_module_without_results_fails(tmp_path):
    s = settings(tmp_path, modules=["pkg/other.py"])
    [row], _ = R.tally(s, {}, results(tmp_path, **codes(killed=1)))
    assert row.missing and R.verdict(row, s) == "FAIL: no results"


def test_an_equivalent_that_is_killed_or_gone_is_a_problem(tmp_path):
    s = settings(tmp_path)
    mutants = results(tmp_path, **codes(killed=3))
    _, problems = R.tally(s, {"pkg.mod.x_f__mutmut_1": "r", "pkg.mod.x_f__mutmut_9": "r", "other.x_g__mutmut_1": "r"},
                          mutants)
    assert problems == [
        "pkg.mod.x_f__mutmut_1 is listed as equivalent but is killed: remove it from the list",
        "other.x_g__mutmut_1 is listed as equivalent but names a module that is not mutated (renumbered after an "
        "edit?): find the mutant again with `mutmut results` / `mutmut show` and fix the list",
        "pkg.mod.x_f__mutmut_9 is listed as equivalent but names no mutant (renumbered after an edit?): find the "
        "mutant again with `mutmut results` / `mutmut show` and fix the list"]


def test_every_equivalent_needs_a_reason(tmp_path):
    f = tmp_path / "equivalent.txt"
    f.write_text("# comment\n\npkg.mod.x_f__mutmut_1  the same value either way\n")
    assert R.read_equivalents(f) == {"pkg.mod.x_f__mutmut_1": "the same value either way"}
    f.write_text("pkg.mod.x_f__mutmut_1\n")
    with pytest.raises(SystemExit, match="every equivalent mutant needs a one-line reason"):
        R.read_equivalents(f)


def test_the_repository_settings_gate_every_pure_module():
    s = R.settings()
    assert s.floor == 90 and set(s.not_gated) <= set(s.modules)
    for m in ("fake_ca/request.py", "fake_ca/scheduling.py", "fake_ca/planner.py", "fake_ca/conditions.py",
              "fake_ca/lifecycle.py", "fake_ca/scaledown.py", "fake_ca/pools.py", "fake_ca/explain.py",
              "demo/k8s/quantity.py", "demo/k8s/duration.py", "demo/k8s/objects.py", "demo/deadline/protocol.py",
              "demo/jobs/phases.py", "demo/jobs/preflight.py", "demo/jobs/render.py",
              "demo/cluster/kueue_manifests.py", "demo/timeline/lanes.py"):
        assert m in s.modules and (R.REPO / m).is_file()
    assert R.read_equivalents(s.equivalents_file)       # parses, every entry with a reason
