"""The docs match the code: every `tau-demo ...` a table of README.md or docs/*.md names is a real command,
every flag it shows exists there with the default or the choices the table gives (read from click), every
scenario list is the records', every relative link points to a file that exists, the README stays short,
and every measured figure in a table of docs/benchmarks.md or docs/history.md says the commit it was measured at and
how; benchmarks.md opens with today's figures, one row each, at commits of this history; every #anchor a link names
is a heading of the page it points to."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import click
import pytest

from cli import main as tau_demo
from cli.scenario import markdown_list
from k8s.duration import BadDuration, parse_duration
from scenarios.kit import catalogue

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
GENERATED = "<!-- generated: tau-demo scenario list --markdown -->"


def table_commands(text: str) -> list[str]:
    """Every backticked `tau-demo ...` inside a Markdown table row (cells may hold several, split by " / ")."""
    out = []
    for line in text.splitlines():
        if line.startswith("|"):
            out += [c for c in re.findall(r"`(tau-demo [^`]+)`", line)]
    return out


def resolve(words: list[str]) -> tuple[click.Command, list[click.Command], list[str]]:
    """The command a word list names (groups followed), the groups on the way, and the words after it."""
    cmd, chain, rest = tau_demo, [], list(words)
    while rest and isinstance(cmd, click.Group) and rest[0] in cmd.commands:
        chain.append(cmd)
        cmd = cmd.commands[rest.pop(0)]
    return cmd, chain, rest


def options(cmds: list[click.Command]) -> dict[str, click.Option]:
    return {o: p for c in cmds for p in c.params if isinstance(p, click.Option) for o in p.opts + p.secondary_opts}


def same_value(shown: str, default) -> bool:
    if str(default) == shown:
        return True
    try:
        return default is not None and parse_duration(shown) == parse_duration(str(default))
    except BadDuration:
        return False


def check_command(text: str) -> list[str]:
    """A flag in [brackets] with a lowercase value shows its default ([--grace 10s]), with a|b its choices
    (the first the default); outside brackets a value is an example; UPPER CASE is a value of yours."""
    optional = {m.split()[0] for m in re.findall(r"\[(--[a-z-]+ [^\]]+)\]", text.replace("\\|", "|"))}
    words = text.replace("[", " ").replace("]", " ").replace("\\|", "|").split()[1:]
    cmd, chain, rest = resolve(words)
    if chain == [] or (isinstance(cmd, click.Group) and rest and not rest[0].startswith("-")
                       and rest[0] not in getattr(cmd, "commands", {}) and rest[0].isupper() is False
                       and not any(isinstance(p, click.Argument) for p in cmd.params)):
        return [f"`{text}`: no such command"]
    opts = options(chain + [cmd])
    bad = []
    for i, w in enumerate(rest):
        if not w.startswith("--") and not re.fullmatch(r"-[a-z]", w):
            continue
        name = w.split("=", 1)[0]
        p = opts.get(name)
        if p is None:
            bad.append(f"`{text}`: {' '.join(c.name for c in chain[1:] + [cmd])} has no {name}")
            continue
        value = rest[i + 1] if i + 1 < len(rest) and not rest[i + 1].startswith("-") and not p.is_flag else None
        if value is None or name not in optional or any(ch.isupper() for ch in value) or "=" in value:
            continue                                    # a flag alone, an example, or a value of yours
        if "|" in value:
            choices = value.split("|")
            real = list(getattr(p.type, "choices", []))
            if not set(choices) <= set(real) or not same_value(choices[0], p.default):
                bad.append(f"`{text}`: {name} {value}: the CLI's choices are {real}, default {p.default!r}")
        elif not same_value(value, p.default):
            bad.append(f"`{text}`: {name} {value}: the CLI's default is {p.default!r}")
    return bad


def test_every_command_flag_default_and_choice_in_a_docs_table_is_the_clis():
    found, bad = 0, []
    for page in PAGES:
        for text in table_commands(page.read_text()):
            found += 1
            bad += [f"{page.relative_to(REPO)}: {b}" for b in check_command(text)]
    assert found >= 15, found
    assert not bad, "docs tables that do not match the CLI:\n" + "\n".join(bad)


def test_the_scenario_list_in_the_docs_is_the_records():
    page = (REPO / "docs" / "scenarios.md").read_text()
    block = page[page.index(GENERATED) + len(GENERATED):page.index("<!-- end generated -->")].strip()
    assert block == markdown_list(), "docs/scenarios.md: regenerate with `tau-demo scenario list --markdown`"
    for s in catalogue.scenarios():
        assert f"`{s.name}`" in block


def test_every_scenario_a_page_names_in_backticks_exists():
    names = set(catalogue.by_name()) | set(catalogue.group_names())
    bad = []
    for page in [REPO / "README.md"] + [REPO / "docs" / f for f in ("scenarios.md", "usage.md", "autoscaler.md",
                                                                    "bounded-waits.md", "design.md")]:
        for m in re.finditer(r"`((?:timeout|race|upstream|kueue-spec|multikueue)-[a-z0-9-]+|never-boot)`", page.read_text()):
            if m.group(1) not in names and not m.group(1).endswith("-"):
                bad.append(f"{page.relative_to(REPO)}: `{m.group(1)}`")
    assert not bad, "scenario names in the docs that no record has: " + ", ".join(bad)


def test_every_relative_link_points_to_a_file():
    bad = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            if not (page.parent / target).exists():
                bad.append(f"{page.relative_to(REPO)} -> {target}")
    assert not bad, "broken links: " + ", ".join(bad)


def test_the_readme_is_short_and_its_first_screen_says_what_a_newcomer_needs():
    text = (REPO / "README.md").read_text()
    lines = text.splitlines()
    assert len(lines) <= 150, len(lines)
    first = "\n".join(lines[:50])
    for needle in ("The problem", "ProvisioningRequest", "AdmissionCheck", "KWOK", "root", "./setup.sh && AUTO=1 ./scenario.sh",
                   "./test.sh", "cluster down", "docs/design.md", "timeline-success.svg"):
        assert needle in first, needle



MEASURED = re.compile(r"\d[\d.,]*\s?(?:ms|s|min|GB|MB|nodes/s)\b")
MEASURED_AT = re.compile(r"measured (?:at|on older code)\W{0,3}([0-9a-f]{7,40})\b", re.IGNORECASE)
COMMIT = re.compile(r"\b[0-9a-f]{7,40}\b")
COMMAND = re.compile(r"`[^`]*(?:\.venv/bin/|tau-demo |bash |\./)[^`]*`")


def tables(text: str) -> list[tuple[list[str], list[str], str]]:
    """Each Markdown table: its header cells, its rows (after the separator), and the nearest paragraph above
    and below it that is not a table (where a table's figures say when and how they were measured)."""
    blocks = [b.strip() for b in text.split("\n\n") if b.strip()]
    is_table = [all(line.startswith("|") for line in b.splitlines()) for b in blocks]
    out = []
    for i, b in enumerate(blocks):
        if not is_table[i] or len(b.splitlines()) < 3:
            continue
        above = next((blocks[j] for j in range(i - 1, -1, -1) if not is_table[j]), "")
        below = next((blocks[j] for j in range(i + 1, len(blocks)) if not is_table[j]), "")
        lines = b.splitlines()
        out.append((cells(lines[0]), lines[2:], (above + " " + below).replace("\n", " ")))
    return out


def cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


AT_COLUMNS = ("measured at", "commit")      # a table's column that names the commit each row was measured at


def at_column(header: list[str]) -> int | None:
    return next((header.index(name) for name in AT_COLUMNS if name in header), None)


def provenance_problems(text: str) -> list[str]:
    """Table rows with a measured figure that do not say the commit it was measured at (a "measured at" or "commit"
    column, or "measured at <commit>" / "measured on older code (<commit>)" next to the table) or the command
    (in the row, "same" as the row above, or next to the table)."""
    bad = []
    for header, rows, around in tables(text):
        at_column_ = at_column(header)
        for row in rows:
            if not MEASURED.search(row):
                continue
            row_cells = cells(row)
            in_column = at_column_ is not None and at_column_ < len(row_cells) and COMMIT.search(row_cells[at_column_])
            if not (in_column or MEASURED_AT.search(around)):
                bad.append(f"no commit it was measured at: {row[:70]}")
            if not (COMMAND.search(row) or "same" in row_cells or COMMAND.search(around)):
                bad.append(f"no command: {row[:70]}")
    return bad


MEASURED_PAGES = ("benchmarks.md", "history.md")     # today's figures, and the runs moved out of them


@pytest.mark.parametrize("page", MEASURED_PAGES)
def test_every_measured_figure_in_a_benchmarks_table_names_its_commit_and_command(page):
    text = (REPO / "docs" / page).read_text()
    assert len(tables(text)) >= 8
    assert not provenance_problems(text), "\n".join(provenance_problems(text))
    assert "this branch" not in text, "say which commit, not 'this branch'"


@pytest.mark.parametrize("check, text, problem", [(check_command, text, problem) for text, problem in [
    ("tau-demo cluster down [--backend kind]", "has no --backend"),
    ("tau-demo deadline [--workers 8]", "default is 16"),
    ("tau-demo deadline [--protocol legacy\\|committed]", "choices are"),
    ("tau-demo nosuch", "no such command"),
]] + [(provenance_problems, text, problem) for text, problem in [
    ("Intro, `./x`.\n\n| a | b |\n| --- | --- |\n| up | 3.1 s |\n", "no commit"),
    ("Measured at 1234abc (2026-12-01).\n\n| a | b |\n| --- | --- |\n| up | 3.1 s |\n", "no command"),
    ("| a | command | measured at |\n| --- | --- | --- |\n| up 2 s | `tau-demo x` | older |\n", "no commit"),
    ("| a | command | measured at |\n| --- | --- | --- |\n| up 2 s | none | 1234abc |\n", "no command"),
    ("| figure | value | command | commit |\n| --- | --- | --- | --- |\n| up | 2 s | `tau-demo x` | today |\n", "no commit"),
]])
def test_the_docs_checks_find_what_is_wrong(check, text, problem):
    assert any(problem in b for b in check(text)), check(text)


def test_the_provenance_check_accepts_a_column_or_the_paragraph_beside_the_table():
    column = "| a | command | measured at |\n| --- | --- | --- |\n| up | `tau-demo x` | 1234abc (2026-12-01) |\n" \
             "| down | same | 1234abc |\n"
    prose = "Measured at 1234abc.\n\n| a | b |\n| --- | --- |\n| up | 3.1 s |\n\nCommand: `.venv/bin/python b.py`.\n"
    assert provenance_problems(column) == [] and provenance_problems(prose) == []


@pytest.mark.parametrize("page", MEASURED_PAGES)
def test_every_commit_the_benchmarks_name_is_in_the_history(page):
    if not _full_checkout():
        pytest.skip("not a full git checkout (a mutant's copy, or a shallow clone)")
    text = (REPO / "docs" / page).read_text()
    named = set(MEASURED_AT.findall(text))
    for header, rows, _ in tables(text):
        if at_column(header) is not None:
            named |= {c for r in rows for c in COMMIT.findall(cells(r)[at_column(header)])}
    assert len(named) >= 8, named
    missing = [c for c in sorted(named) if not _in_history(c)]
    assert not missing, f"commits docs/{page} names that neither this history nor docs/history.md has: {missing}"


TODAY_HEADER = ["figure", "value", "command", "commit"]


def today_table(text: str) -> list[list[str]]:
    """The rows (cells) of the first table under benchmarks.md's "## Today", which must be its first section."""
    assert text.index("\n## Today\n") == text.index("\n## "), "benchmarks.md opens with ## Today"
    section = text.split("\n## Today\n", 1)[1].split("\n## ", 1)[0]
    found = [rows for header, rows, _ in tables(section) if header == TODAY_HEADER]
    assert found, f"no table with the columns {TODAY_HEADER} under ## Today"
    return [cells(r) for r in found[0]]


def today_problems(rows: list[list[str]], landed: dict[str, str], in_git) -> list[str]:
    """Today's table: one row per figure (no figure twice), each with a value, a command (or "same" as the row above)
    and the commit it was measured at; that commit an ancestor of HEAD, or one that did not land (docs/history.md)
    with the commit its work landed in named beside it."""
    bad, seen = [], set()
    for row in rows:
        if len(row) != len(TODAY_HEADER):
            bad.append(f"{row[:1]}: {len(row)} cells, not {len(TODAY_HEADER)}")
            continue
        figure, value, command, commit = row
        if figure in seen:
            bad.append(f"{figure}: two rows")
        seen.add(figure)
        if not value:
            bad.append(f"{figure}: no value")
        if not (COMMAND.search(command) or command == "same"):
            bad.append(f"{figure}: no command")
        commits = COMMIT.findall(commit)
        if not commits:
            bad.append(f"{figure}: no commit")
        for c in commits:
            if in_git(c):
                continue
            if c not in landed:
                bad.append(f"{figure}: {c} is not an ancestor of HEAD")
            elif landed[c] not in commits:
                bad.append(f"{figure}: {c} did not land; name {landed[c]}, the commit its work landed in, beside it")
    return bad


def test_benchmarks_opens_with_todays_figures_one_row_each_at_commits_of_this_history():
    if not _full_checkout():
        pytest.skip("not a full git checkout (a mutant's copy, or a shallow clone)")
    rows = today_table((REPO / "docs" / "benchmarks.md").read_text())
    assert len(rows) >= 10, rows
    landed = did_not_land((REPO / "docs" / "history.md").read_text())
    problems = today_problems(rows, landed, _in_git)
    assert not problems, "docs/benchmarks.md's today table:\n" + "\n".join(problems)


def test_the_today_check_finds_what_is_wrong():
    landed = {"1234abc": "5678def"}
    in_git = {"5678def", "9abcdef"}.__contains__
    good = [["up", "2 s", "`tau-demo x`", "9abcdef (2026-12-01)"], ["down", "1 s", "same", "1234abc (landed in 5678def)"]]
    assert today_problems(good, landed, in_git) == []
    for row, problem in [(["up", "3 s", "`tau-demo x`", "9abcdef"], "two rows"),
                         (["x", "3 s", "by hand", "9abcdef"], "no command"),
                         (["x", "3 s", "same", "today"], "no commit"),
                         (["x", "3 s", "same", "deadbe1"], "not an ancestor"),
                         (["x", "3 s", "same", "1234abc"], "did not land"),
                         (["x", "3 s", "same"], "cells")]:
        assert any(problem in b for b in today_problems(good + [row], landed, in_git)), (row, problem)


def heading_anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    out = set()
    for line in text.splitlines():
        m = re.match(r"#{1,6} (.+)", line)
        if m:
            out.add(re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-"))
    return out


def test_every_anchor_a_link_names_is_a_heading_of_its_page():
    bad = []
    for page in PAGES:
        for target, anchor in re.findall(r"\]\(([^)#\s]*)#([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+:", target) or not (target == "" or target.endswith(".md")):
                continue
            linked = page if target == "" else page.parent / target
            if linked.exists() and anchor not in heading_anchors(linked.read_text()):
                bad.append(f"{page.relative_to(REPO)} -> {target}#{anchor}")
    assert not bad, "links to a heading that is not there: " + ", ".join(bad)


def test_heading_anchors_are_githubs():
    assert heading_anchors("## The kind path in `./test.sh`\n### Fake autoscaler: the runs at d0f7d75, and before\n") \
        == {"the-kind-path-in-testsh", "fake-autoscaler-the-runs-at-d0f7d75-and-before"}


SHORT_COMMIT = re.compile(r"\b(?=[0-9a-f]*[0-9])[0-9a-f]{7}\b")   # how the docs name a commit (a digit in it)


def test_every_commit_the_docs_name_is_in_the_history_or_listed_as_not_landed():
    if not _full_checkout():
        pytest.skip("not a full git checkout (a mutant's copy, or a shallow clone)")
    landed = did_not_land((REPO / "docs" / "history.md").read_text())
    assert landed and all(_in_git(c) for c in set(landed.values())), landed
    assert not [c for c in landed if _in_git(c)], "a commit listed as not landed is in the history"
    named = {c for f in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
             for c in SHORT_COMMIT.findall(f.read_text())}
    missing = [c for c in sorted(named - set(landed)) if not _in_git(c)]
    assert not missing, f"commits the docs name that neither this history nor docs/history.md has: {missing}"
    assert set(landed) <= named, f"docs/history.md lists commits no doc names: {sorted(set(landed) - named)}"


def _full_checkout() -> bool:
    return (REPO / ".git").exists() and subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--is-shallow-repository"],
        capture_output=True, text=True).stdout.strip() == "false"


def _in_git(commit: str) -> bool:
    """In this history: an ancestor of HEAD. An object the local repository merely holds (a rebased branch's commit,
    dangling) is not, and a clone of main would not have it."""
    return subprocess.run(["git", "-C", str(REPO), "merge-base", "--is-ancestor", commit, "HEAD"],
                          capture_output=True).returncode == 0


def _in_history(commit: str) -> bool:
    """A commit of this history, or one docs/history.md says did not land (with the commit its work landed in)."""
    return commit in did_not_land((REPO / "docs" / "history.md").read_text()) or _in_git(commit)


def did_not_land(text: str) -> dict[str, str]:
    """docs/history.md's table: the commits that are not in the history (their session's CI failed) and the commit
    their work landed in: {commit: landed in}."""
    for header, rows, _ in tables(text):
        if header[:2] == ["commit named in the docs", "landed in"]:
            return {c: COMMIT.findall(cells(r)[1])[0] for r in rows for c in COMMIT.findall(cells(r)[0])}
    return {}


def test_the_commits_that_did_not_land_are_read_from_their_table():
    text = "Intro.\n\n| commit named in the docs | landed in |\n| --- | --- |\n| 1234abc, 5678def | 9abcdef |\n\nAfter.\n"
    assert did_not_land(text) == {"1234abc": "9abcdef", "5678def": "9abcdef"}
    assert did_not_land(text.replace("landed in", "merged in")) == {}
    assert SHORT_COMMIT.findall("at 0187795, vmss532497, 35e8a280425c, 1234567, deadbee, abc1234.") == ["0187795", "1234567", "abc1234"]


# ------------------------------------------------------------------ every thing that can be added has its row

def leaf_commands(group: click.Group = tau_demo, path: tuple[str, ...] = ()) -> list[str]:
    """Every command of the CLI that runs something, as "tau-demo a b" (a group with a callback of its own,
    `fake-ca` say, counts as one too)."""
    out = []
    for name, cmd in sorted(group.commands.items()):
        words = (*path, name)
        if isinstance(cmd, click.Group):
            if cmd.invoke_without_command:
                out.append(" ".join(("tau-demo", *words)))
            out += leaf_commands(cmd, words)
        else:
            out.append(" ".join(("tau-demo", *words)))
    return out


def usage_rows() -> set[str]:
    """The commands docs/usage.md's table names: the words of each backticked `tau-demo ...` up to its first
    flag or value."""
    page = (REPO / "docs" / "usage.md").read_text()
    named = set()
    for text in table_commands(page):
        cmd, chain, _ = resolve(text.replace("[", " ").split()[1:])
        named.add(" ".join(["tau-demo", *[c.name for c in chain[1:]], cmd.name]))
    return named


def test_every_cli_command_has_a_row_in_the_usage_table():
    commands = leaf_commands()
    assert len(commands) >= 15, commands
    missing = [c for c in commands if c not in usage_rows()]
    assert not missing, f"commands without a row in docs/usage.md: {missing}"


def test_the_command_walk_finds_subcommands_and_groups_that_run_themselves():
    commands = leaf_commands()
    assert {"tau-demo cluster up", "tau-demo toolchain ensure", "tau-demo fake-ca", "tau-demo fake-ca explain",
            "tau-demo kueue-specs", "tau-demo scenario list"} <= set(commands)
    assert "tau-demo cluster" not in commands and "tau-demo scenario" not in commands


def described_files(page: str, heading: str) -> set[str]:
    """The test files the first table under `heading` of docs/<page> names in backticks."""
    text = (REPO / "docs" / page).read_text()
    section = text.split(heading, 1)[1]
    rows = []
    for line in section.splitlines()[1:]:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            rows.append(line.split("|")[1])
    return set(re.findall(r"`(test_[a-z0-9_]+\.py)`", "\n".join(rows)))


@pytest.mark.parametrize("folder, heading", [("unit", "## Unit tests"), ("cluster", "## Cluster tests")])
def test_every_test_file_has_a_row_in_the_testing_page(folder, heading):
    files = {p.name for p in (REPO / "tests" / folder).glob("test_*.py")}
    described = described_files("testing.md", heading)
    assert len(files) >= 10, files
    assert not files - described, f"tests/{folder} files without a row in docs/testing.md: {sorted(files - described)}"
    assert not described - files, f"rows of docs/testing.md naming no file of tests/{folder}: {sorted(described - files)}"


WORDS = {6: "six", 9: "nine"}     # a count the docs spell out; another is written in digits there


def counted_claims() -> list[tuple[str, str, int]]:
    """(page, the words that state a count, the count the code gives): the scenario groups, Kueue's specs, the
    mutation gate's modules and equivalents (the probes' counts: tests/unit/test_conformance_probes.py)."""
    from tests.mutation import report
    walkthrough, upstream = len(catalogue.members("all")), len(catalogue.members("upstream"))
    specs = [s for s in catalogue.scenarios() if s.group == "kueue-specs"]
    real = sum(1 for s in specs if not s.needs_fake)
    from scenarios.conformance.probes import PROBES
    gate = report.settings()
    equivalents = len(report.read_equivalents(gate.equivalents_file))
    return [
        ("docs/usage.md", f"the same probes ({len(PROBES)}, `--list`)", len(PROBES)),
        ("README.md", f"the design's story in {WORDS.get(walkthrough, walkthrough)} scenarios", walkthrough),
        ("docs/upstream.md", f"The group `upstream` holds {WORDS.get(upstream, upstream)} scenarios", upstream),
        ("docs/usage.md", f"the group `upstream` after them: {WORDS.get(upstream, upstream)} scenarios", upstream),
        ("README.md", f"Kueue's {len(specs)} provisioning specs", len(specs)),
        ("docs/usage.md", f"Kueue v0.19.2's own {len(specs)} provisioning specs", len(specs)),
        ("docs/testing.md", f"own {len(specs)} provisioning specs (`scenarios/kueue_specs/`), each under the "
                            f"session's fake autoscaler, then, in one test, the {real} the real", real),
        ("docs/testing.md", f"`only_mutate` holds **{len(gate.modules)} modules**", len(gate.modules)),
        ("docs/testing.md", f"lists **{equivalents} equivalent mutants**", equivalents),
    ]


def test_the_counts_the_docs_state_are_the_codes():
    claims = counted_claims()
    missing = [(page, words) for page, words, _ in claims if " ".join(words.split()) not in
               " ".join((REPO / page).read_text().split())]
    assert not missing, f"a count in the docs is not the code's (or the sentence changed): {missing}"


def test_what_benchmarks_says_ci_runs_is_what_it_runs():
    """benchmarks.md: `.ci/run` is `./test.sh` and nothing else, whose every-stage flow ends with the kind path, and
    no pytest session of it stops at its first failure (`-x`)."""
    ci = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()]
    commands = [c for c in ci if c and not c.startswith(("#", "set ", "cd "))]
    assert commands == ["exec ./test.sh"], commands
    script = (REPO / "test.sh").read_text()
    flow = re.split(r"^# -+ every stage$", script, flags=re.MULTILINE)[1]
    assert re.search(r"^  setsid bash -c 'exec ./test.sh --kind' ", flow, re.MULTILINE) and \
        re.search(r'^verdict "the kind path', flow, re.MULTILINE), "the every-stage flow runs the kind path"
    assert re.search(r"^setsid bash -c 'exec ./test.sh --sampled' ", flow, re.MULTILINE) and \
        re.search(r'^verdict "the sampled gate', flow, re.MULTILINE), "the every-stage flow runs the sampled gate"
    assert not re.search(r"pytest[^\n]*\s-x\b", script), "a pytest session of test.sh stops at its first failure"
    text = " ".join((REPO / "docs" / "benchmarks.md").read_text().split())
    for claim in ("`.ci/run` is `./test.sh` and nothing else", "runs every stage to its end (no `-x`)",
                  "then the kind path"):
        assert claim in text, claim
