"""The sampled gate's decisions (tests/mutation/sampled.py): what a record keeps, how it counts, what CI judges."""

from __future__ import annotations

from tests.mutation import sampled as S

FAILED = ("FAILED tests/cluster/test_scenarios.py::test_race_scenarios_repeatedly[race-legacy-1] - AssertionError: "
          "a - b")


def entry(status, first="", commit=None, diff=("-a", "+b")):
    v = {"status": status, "seconds": 40, "first": first, "diff": list(diff)}
    if commit:
        v["commit"] = commit
    return v


def test_the_killing_test_is_the_node_of_the_first_failure_and_nothing_else():
    assert S.killer(FAILED) == "tests/cluster/test_scenarios.py::test_race_scenarios_repeatedly[race-legacy-1]"
    error = "ERROR tests/cluster/test_fake_ca.py::test_x - RuntimeError"
    assert S.killer(error) == "tests/cluster/test_fake_ca.py::test_x"
    assert S.killer("no verdict within 600s") is None
    assert S.killer("its controller did not start: timed out") is None
    assert S.killer("ERROR tests/cluster/test_fake_ca.py - ImportError") is None       # a whole file: no one test
    assert S.killer("") is None


def record_with(**modules):
    """The record of a run that judged these mutants (entry() each)."""
    return S.record_of({"seed": 2, "per_module": 8, "commit": "abc",
                        "modules": {path: {"mutants": 100, "judged": judged} for path, judged in modules.items()}})


def test_the_verdict_line_is_pytests_summary_line_never_a_captured_log_line_at_level_error():
    text = "\n".join(["..F", "----- Captured log call -----",
                      "ERROR    fake-ca:controller.py:340 loop failed; next loop in 2s",
                      "FAILED test output without its path",
                      "=== short test summary info ===",
                      "ERROR tests/cluster/test_fake_ca.py::test_x - AssertionError: a process logged an exception",
                      "FAILED tests/cluster/test_fake_ca.py::test_y - assert False"])
    assert S.summary_line(text) == ("ERROR tests/cluster/test_fake_ca.py::test_x - "
                                    "AssertionError: a process logged an exception")
    assert S.killer(S.summary_line(text)) == "tests/cluster/test_fake_ca.py::test_x"
    assert S.summary_line("....\n4 passed in 3.0s") == ""


def test_the_record_keeps_each_verdict_its_commit_its_killer_and_its_change():
    results = {"seed": 2, "per_module": 8, "commit": "abc", "clean_seconds": 500, "seconds": 4000,
               "modules": {"m.py": {"mutants": 7, "judged": {
                   "m.x__mutmut_2": entry("killed", FAILED),
                   "m.x__mutmut_1": entry("survived", commit="def")}}}}
    rec = S.record_of(results)
    assert rec["seed"] == 2 and rec["per_module"] == 8 and rec["commit"] == "abc"
    judged = rec["modules"]["m.py"]["judged"]
    assert rec["modules"]["m.py"]["mutants"] == 7
    assert list(judged) == ["m.x__mutmut_1", "m.x__mutmut_2"]
    assert judged["m.x__mutmut_2"] == {"status": "killed", "commit": "abc", "seconds": 40, "diff": ["-a", "+b"],
                                      "killer": S.killer(FAILED)}
    assert judged["m.x__mutmut_1"]["commit"] == "def" and judged["m.x__mutmut_1"]["killer"] is None


def test_the_rate_counts_a_timeout_as_a_kill_and_leaves_the_equivalents_out():
    rec = record_with(**{"a.py": {"a.1": entry("killed"), "a.2": entry("timeout"), "a.3": entry("survived"),
                                  "a.4": entry("survived")},
                         "b.py": {}})
    assert S.rates(rec, {}) == {"a.py": (2, 4, 50.0), "b.py": (0, 0, 0.0)}
    assert S.rates(rec, {"a.3": "why"})["a.py"] == (2, 3, 100.0 * 2 / 3)


def test_an_equivalent_must_be_a_recorded_survivor():
    rec = record_with(**{"a.py": {"a.1": entry("killed"), "a.2": entry("survived"), "a.3": entry("timeout")}})
    assert S.equivalence_problems(rec, {"a.2": "why"}) == []
    assert S.equivalence_problems(rec, {"a.1": "why", "a.3": "why", "a.9": "why"}) == [
        "a.1 is listed as equivalent but is killed", "a.3 is listed as equivalent but is timeout",
        "a.9 is listed as equivalent but is not in the record"]


def test_each_turn_judges_one_kill_of_each_module_and_the_turns_cover_them_all():
    rec = record_with(**{
        "a.py": {"a.3": entry("killed", FAILED), "a.1": entry("killed", FAILED), "a.2": entry("survived"),
                 "a.4": entry("timeout"), "a.5": entry("killed", "its controller did not start: x")},
        "b.py": {"b.1": entry("killed", FAILED)},
        "c.py": {"c.1": entry("survived")}})
    assert S.turn_of(rec, 0) == [("a.py", "a.1"), ("b.py", "b.1")]
    assert S.turn_of(rec, 1) == [("a.py", "a.3"), ("b.py", "b.1")]
    assert S.turn_of(rec, 2) == S.turn_of(rec, 0)
    assert {name for turn in range(2) for _, name in S.turn_of(rec, turn)} == {"a.1", "a.3", "b.1"}


def test_a_recorded_mutant_is_found_by_its_change_under_its_name_or_renumbered_or_not_at_all():
    path = "demo/taucluster/controller.py"
    code, names = S.mutants_of(path)
    name = next(n for n in names if n.endswith("reconcile__mutmut_19"))
    change = S.diff(path, S.apply(path, code, name))
    assert change and all(line[:1] in "+-" for line in change)
    assert S.today(path, code, names, name, change) == name
    renumbered = name.replace("__mutmut_19", "__mutmut_20")           # as if mutmut had renumbered the function's
    assert S.today(path, code, names, renumbered, change) == name
    assert S.today(path, code, names, name, ["-    gone()", "+    None"]) is None
    moved = [line[:1] + "    " + line[1:] for line in change]          # as if its statement had moved into a block
    assert S.today(path, code, names, name, moved) == name
    assert S.today(path, code, names, name, [line[:1] + line[1:].replace("(", "( ") for line in change]) is None


def test_two_changes_are_the_same_whatever_their_indentation_and_never_across_a_sign_or_a_word():
    assert S.same_change(["-        a(x)", "+        a(None)"], ["-    a(x)", "+            a(None)"])
    assert not S.same_change(["-    a(x)", "+    a(None)"], ["+    a(x)", "-    a(None)"])
    assert not S.same_change(["-    a(x)", "+    a(None)"], ["-    a(x)", "+    a(y)"])
    assert not S.same_change(["-    a(x)"], ["-    a(x)", "+    a(y)"])
