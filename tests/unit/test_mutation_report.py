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
    assert row.score == pytest.approx(100 * 18 / 19)
    assert row.survivors == ["pkg.mod.x_f__mutmut_19"]
    assert R.verdict(row, s) == "FAIL: 1 survivor(s) neither killed nor listed"
    [row], _ = R.tally(s, {"pkg.mod.x_f__mutmut_18": "same", "pkg.mod.x_f__mutmut_19": "same"}, mutants)
    assert row.score == 100 and row.survivors == [] and R.verdict(row, s) == "ok"


def test_below_the_floor_or_a_mutant_without_a_test_fails_a_gated_module(tmp_path):
    s = settings(tmp_path)
    [row], _ = R.tally(s, {}, results(tmp_path, **codes(killed=8, survived=2)))
    assert row.score == 80 and R.verdict(row, s) == "FAIL: below 90%, 2 survivor(s) neither killed nor listed"
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
    assert all((R.REPO / m).is_file() for m in s.modules)
    missing = sorted(set(R.pure_modules()) - set(s.modules))
    assert missing == [], f"modules without I/O imports that [tool.mutmut] only_mutate leaves out: {missing}"
    assert R.read_equivalents(s.equivalents_file)       # parses, every entry with a reason


def project(tmp_path, files: dict[str, str]):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def test_a_module_is_pure_when_neither_it_nor_what_it_imports_of_the_project_does_io(tmp_path):
    repo = project(tmp_path, {
        "demo/__init__.py": "",
        "demo/pure.py": "import re\nfrom dataclasses import dataclass\nfrom pathlib import Path\n"
                        "from .leaf import X\ndef f(): return re, dataclass, Path, X\n",
        "demo/leaf.py": "X = 1\ndef g(): return X\n",
        "demo/clock.py": "import time\ndef now(): return time.time()\n",
        "demo/uses_clock.py": "from demo.clock import now\ndef f(): return now()\n",
        "demo/uses_clock_relative.py": "from . import clock\ndef f(): return clock\n",
        "demo/constants.py": "A = 1\n",                                     # nothing to mutate
        "demo/k8s/__init__.py": "",
        "demo/k8s/client.py": "import kubernetes.client\ndef c(): pass\n",
        "demo/k8s/caller.py": "from ..k8s.client import c\ndef f(): return c\n",
        "demo/k8s/cycle_a.py": "from . import cycle_b\ndef f(): pass\n",
        "demo/k8s/cycle_b.py": "from . import cycle_a\nimport os.path\ndef f(): pass\n",
        "fake_ca/__init__.py": "",
        "fake_ca/cli.py": "import click\ndef main(): pass\n",
        "scenarios/__init__.py": "",
        "scenarios/x.py": "from demo.pure import f\ndef g(): return f\n",
    })
    assert R.pure_modules(repo) == ["demo/leaf.py", "demo/pure.py", "scenarios/x.py"]
