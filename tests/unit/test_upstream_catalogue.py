"""The scenario catalogue: the upstream reports are registered, listed with their numbers, kept out of
the default walkthrough and added by --upstream."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from demo.cli.scenario import scenario_group
from scenarios import runner, upstream

REPO = Path(__file__).resolve().parents[2]


def test_every_upstream_module_reports_what_it_reproduces():
    assert upstream.REPORTS
    for m in upstream.REPORTS:
        assert set(m.REPORT) >= {"number", "title", "claim", "fixed_in"}
        assert m.REPORT["number"].startswith("kubernetes-sigs/kueue#")
        assert m.NAME.startswith("upstream-") and m.NAME in runner.SCENARIOS
        assert m.__doc__.startswith(m.REPORT["number"]), f"{m.__name__} opens with the report's number"


def test_default_walkthrough_is_unchanged_and_upstream_is_opt_in():
    assert runner.resolve(()) == list(runner.DESIGN)
    assert not set(runner.resolve(("all",))) & set(runner.UPSTREAM)
    assert runner.resolve(("all",), with_upstream=True) == list(runner.DESIGN) + list(runner.UPSTREAM)
    assert runner.resolve(("upstream", "upstream-3245"), with_upstream=True) == list(runner.UPSTREAM)


def test_scenario_list_shows_report_numbers_and_fake_only():
    out = CliRunner().invoke(scenario_group, ["list"]).output
    for m in upstream.REPORTS:
        line = next(x for x in out.splitlines() if x.startswith(m.NAME + " "))
        assert m.REPORT["number"].removeprefix("kubernetes-sigs/") in line
        assert ("yes" if getattr(m, "NEEDS_FAKE", None) else "no") in line.split()[2]


def test_the_example_in_the_readme_is_a_short_real_module():
    readme = (REPO / "README.md").read_text()
    example = (REPO / "scenarios" / "upstream" / "never_provisioned.py").read_text()
    assert "## Write your own scenario" in readme and "scenarios/upstream/never_provisioned.py" in readme
    assert len(example.splitlines()) <= 70
    body = example[example.index("REPORT = "):].strip()
    assert body in readme, "the README shows never_provisioned.py from REPORT on, as it is"
