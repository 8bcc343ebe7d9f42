"""The scenario catalogue: every scenario is one record found in its module; groups, the walkthrough and
the upstream reports (listed with their numbers, kept out of the default walkthrough, added by --upstream)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.scenario import scenario_group
from scenarios.kit import catalogue
from scenarios.kit.scenario import Scenario

REPO = Path(__file__).resolve().parents[2]
WALKTHROUGH = ["success", "timeout-preflight", "timeout-window", "timeout-deadline", "race-admission-wins",
               "race-timeout-wins", "race-legacy", "race-interrupted-mirror", "never-boot"]


def upstream() -> list[Scenario]:
    return [s for s in catalogue.scenarios() if s.group == "upstream"]


def test_every_upstream_scenario_reports_what_it_reproduces():
    assert upstream()
    for s in upstream():
        assert s.report and s.report.number.startswith(("kubernetes-sigs/kueue#", "kubernetes/autoscaler#"))
        assert s.report.title and s.report.claim and s.report.fixed_in
        assert s.name.startswith("upstream-")
        module = sys.modules[s.run.__module__]
        assert module.__doc__.startswith(s.report.number), f"{module.__name__} opens with the report's number"


def test_default_walkthrough_is_unchanged_and_upstream_is_opt_in():
    names = [s.name for s in upstream()]
    assert catalogue.resolve(()) == WALKTHROUGH
    assert catalogue.resolve(("all",), with_upstream=True) == WALKTHROUGH + names
    assert catalogue.resolve(("upstream", "upstream-3245"), with_upstream=True) == names
    assert catalogue.resolve(("race-legacy", "race", "success")) == [
        "race-legacy", "race-admission-wins", "race-timeout-wins", "race-interrupted-mirror", "success"]
    with pytest.raises(KeyError):
        catalogue.resolve(("no-such-scenario",))


def test_every_record_runs_something_and_names_a_declared_group():
    for s in catalogue.scenarios():
        assert callable(s.run) and s.about and s.group in {g.name for g in catalogue.all_groups()}


def test_a_duplicate_name_or_an_undeclared_group_is_refused():
    one = Scenario("x", "race", "about", lambda ctx: None)
    with pytest.raises(catalogue.CatalogueError, match="used twice"):
        catalogue.check([one, one])
    with pytest.raises(catalogue.CatalogueError, match="not declared"):
        catalogue.check([Scenario("y", "nowhere", "about", lambda ctx: None)])
    with pytest.raises(catalogue.CatalogueError, match="another group"):
        catalogue.check([Scenario("timeout", "race", "about", lambda ctx: None)])
    assert catalogue.check([Scenario("success", "success", "about", lambda ctx: None)])   # its own group's name


def test_records_sort_by_group_then_module_order():
    a = Scenario("a", "upstream", "a", lambda ctx: None)
    b = Scenario("b", "success", "b", lambda ctx: None)
    c = Scenario("c", "upstream", "c", lambda ctx: None)
    assert [s.name for s in catalogue.check([a, b, c])] == ["b", "a", "c"]


def test_scenario_list_shows_every_record():
    out = CliRunner().invoke(scenario_group, ["list"]).output
    for s in catalogue.scenarios():
        line = next(x for x in out.splitlines() if x.split()[1:2] == [s.name])
        assert line.split()[0] == s.group
        assert (s.report.number.removeprefix("kubernetes-sigs/") if s.report else "-") == line.split()[2]
        assert ("yes" if s.needs_fake else "no") == line.split()[3]
    for g in catalogue.all_groups():
        assert any(x.split()[:1] == [g.name] and g.about in x for x in out.splitlines())


def test_the_example_in_the_scenarios_page_is_a_short_real_module():
    page = (REPO / "docs" / "scenarios.md").read_text()
    example = (REPO / "scenarios" / "upstream" / "never_provisioned.py").read_text()
    assert "## Write your own scenario" in page and "scenarios/upstream/never_provisioned.py" in page
    assert len(example.splitlines()) <= 75
    body = example[example.index("REPORT = "):].strip()
    assert body in page, "docs/scenarios.md shows never_provisioned.py from REPORT on, as it is"
