"""One way for a story to read the cluster (docs/scenarios.md): what is now through `ctx.live`
(scenarios/kit/live.py), never the client's reads directly; a pause only as `ctx.hold(seconds, why)`, never a bare
sleep (a write's effect is waited for by its resourceVersion: live.caught_up)."""

from __future__ import annotations

import ast
from pathlib import Path

from scenarios.kit.live import holds_version

ROOT = Path(__file__).resolve().parents[2]
READS = {"get", "get_or_none", "list"}          # the client's reads (k8s/client.Kube)
LIVE_HOME = "scenarios/kit/live.py"            # the live-read helper: the one place that reads the client
HOLD_HOME = "scenarios/kit/harness.py"          # Context.hold: the one sleep


def _client(node: ast.expr) -> bool:
    """`k`, `ctx.k`, `self.ctx.k`, `self.k`...: the client."""
    return (isinstance(node, ast.Name) and node.id == "k") or (isinstance(node, ast.Attribute) and node.attr == "k")


def offences(source: str) -> list[str]:
    """Direct reads of the client and bare sleeps in a module's source, with their lines."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        f = node.func
        if f.attr in READS and _client(f.value):
            out.append(f"line {node.lineno}: reads the client directly ({ast.unparse(f)}): use ctx.live")
        if isinstance(f.value, ast.Name) and f.value.id == "observe":
            out.append(f"line {node.lineno}: reads through demo.jobs.observe ({ast.unparse(f)}): use ctx.live")
        if f.attr == "sleep" and isinstance(f.value, ast.Name) and f.value.id == "time":
            out.append(f"line {node.lineno}: time.sleep: use ctx.hold(seconds, why), or wait for a resourceVersion")
    return out


def test_the_rule_finds_what_it_forbids():
    bad = "ctx.k.get(JOB, n)\nself.ctx.k.list(POD)\nk.get_or_none(NODE, n)\ntime.sleep(1)\nobserve.snapshot(k, a, b)\n"
    assert len(offences(bad)) == 5
    fine = "ctx.live.get(JOB, n)\nctx.k.patch(JOB, n, {})\nd.get('x')\nctx.hold(1, 'w')\nlabels(o).get(K)\n"
    assert offences(fine) == []


def test_every_story_and_kit_reads_the_cluster_one_way():
    found = {}
    for path in sorted((ROOT / "scenarios").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == LIVE_HOME:
            continue
        got = offences(path.read_text())
        if rel == HOLD_HOME:
            sleeps = [o for o in got if "time.sleep" in o]
            assert len(sleeps) == 1, sleeps
            got = [o for o in got if o not in sleeps]
        if got:
            found[rel] = got
    assert not found, found


def test_a_version_is_held_once_the_watch_delivered_it_or_a_later_one():
    v = lambda rv: (0.0, {"metadata": {"resourceVersion": str(rv)}})    # noqa: E731
    assert holds_version([v(5), v(9)], 9)
    assert holds_version([v(12)], 9)
    assert not holds_version([v(5), v(8)], 9)
    assert not holds_version([], 1)
