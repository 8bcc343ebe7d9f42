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


# ---------------------------------------------------------------------------- the cache of passing verdicts

def test_the_verdicts_key_is_every_files_path_and_content_and_the_tools_versions():
    files = [("a.py", b"x = 1\n"), ("tests/test_a.py", b"def test(): pass\n")]
    key = R.verdicts_key(files, "mutmut 3.8.1, Python 3.11.7")
    assert R.verdicts_key(list(reversed(files)), "mutmut 3.8.1, Python 3.11.7") == key      # order is no content
    assert R.verdicts_key([files[0], ("tests/test_a.py", b"def test(): assert 0\n")], "mutmut 3.8.1, Python 3.11.7") != key
    assert R.verdicts_key([("b.py", b"x = 1\n"), files[1]], "mutmut 3.8.1, Python 3.11.7") != key
    assert R.verdicts_key(files[:1], "mutmut 3.8.1, Python 3.11.7") != key                    # a file gone
    assert R.verdicts_key(files, "mutmut 3.8.2, Python 3.11.7") != key


def test_the_keyed_files_are_what_git_lists_under_the_copied_paths_the_tests_and_the_settings(tmp_path):
    import subprocess
    repo = tmp_path / "repo"
    for path, text in {"pyproject.toml": '[tool.mutmut]\nsource_paths = ["pkg"]\nalso_copy = ["docs"]\n',
                       ".gitignore": "pkg/ignored.py\n", "pkg/mod.py": "x = 1\n", "pkg/ignored.py": "",
                       "docs/a.md": "a\n", "tests/test_mod.py": "", "other/elsewhere.py": ""}.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "pyproject.toml", "pkg/mod.py", "docs"], cwd=repo, check=True)
    (repo / "pkg/new.py").write_text("y = 2\n")                      # new, not yet added: still a file of the source
    (repo / "pkg/mod.py").write_text("x = 3\n")                      # changed, not committed: its content now
    files = dict(R.keyed_files(repo))
    assert sorted(files) == ["docs/a.md", "pkg/mod.py", "pkg/new.py", "pyproject.toml", "tests/test_mod.py"]
    assert files["pkg/mod.py"] == b"x = 3\n"


def test_passing_verdicts_are_kept_and_read_back_and_only_the_newest_sources_are_kept(tmp_path):
    mutants = results(tmp_path, **codes(killed=3))
    cache = tmp_path / "cache" / "mutation"
    for n in range(R.CACHE_KEEP + 2):
        R.save_verdicts(cache / f"key{n}", mutants, {"commit": f"c{n}", "date": "d", "took": 1.0})
    assert sorted(d.name for d in cache.iterdir()) == [f"key{n}" for n in range(2, R.CACHE_KEEP + 2)]
    again = tmp_path / "again"
    assert R.load_verdicts(cache / "key0", again) is None                # pruned: mutmut runs again
    assert R.load_verdicts(cache / f"key{R.CACHE_KEEP + 1}", again)["commit"] == f"c{R.CACHE_KEEP + 1}"
    [row], _ = R.tally(settings(tmp_path), {}, again)
    assert row.counts["killed"] == 3 and not (again / R.CACHED_RUN).exists()


@pytest.fixture
def gate(tmp_path, monkeypatch):
    """main() over one module, its mutmut run faked (it writes the codes in `gate.codes`), its cache in tmp_path."""
    class Gate:
        codes = codes(killed=10)
        files = [("pkg/mod.py", b"x = 1\n")]
        runs = 0
    g = Gate()
    mutants = tmp_path / "mutants"
    monkeypatch.setenv("TAU_DEMO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(R, "MUTANTS", mutants)
    monkeypatch.setattr(R, "settings", lambda: R.Settings(["pkg/mod.py"], 90.0, R.REPO / "no-equivalents.txt", set()))
    monkeypatch.setattr(R, "pure_modules", lambda: ["pkg/mod.py"])
    monkeypatch.setattr(R, "keyed_files", lambda: g.files)

    def run_mutmut(max_children, modules):
        g.runs += 1
        results(tmp_path, **g.codes)
        return 12.0
    monkeypatch.setattr(R, "run_mutmut", run_mutmut)
    return g


def test_a_whole_run_of_the_same_source_reads_the_passing_verdicts_and_says_so(gate, capsys):
    assert R.main([]) == 0 and gate.runs == 1
    assert "kept in" in capsys.readouterr().out
    assert R.main([]) == 0 and gate.runs == 1                           # the same source: mutmut not run again
    out = capsys.readouterr().out
    assert "verdicts from the cache" in out and "mutmut took 12s" in out and "100.0%" in out
    assert R.main(["--fresh"]) == 0 and gate.runs == 2                  # unless asked
    gate.files = [("pkg/mod.py", b"x = 2\n")]                           # another source: run again
    assert R.main([]) == 0 and gate.runs == 3


def test_a_failing_verdict_is_never_cached(gate, capsys):
    gate.codes = codes(killed=5, survived=5)
    assert R.main(["--show", "0"]) == 1 and gate.runs == 1
    assert R.main(["--show", "0"]) == 1 and gate.runs == 2              # judged again, by mutmut
    assert "verdicts from the cache" not in capsys.readouterr().out
