"""Every concept once: a module-level name is defined in one module (and once there), a key keys.py declares is
never spelled out elsewhere, an apiVersion is typed only where the resources are declared, and each of the
fake autoscaler's settings has one name and one default from its flag to its field (all read with ast/click)."""

from __future__ import annotations

import ast
import dataclasses
import re
from collections import defaultdict
from pathlib import Path

import pytest

from cli.fake_ca import fake_ca_group
from k8s import keys
from k8s.duration import go_duration
from fake_ca import lifecycle

REPO = Path(__file__).resolve().parents[2]
CODE = ("k8s", "fake_ca", "demo", "scenarios", "cli", "bench")   # every layer, bottom to top
RESOURCES = REPO / "k8s" / "resources.py"
KEYS = REPO / "k8s" / "keys.py"
# Names every module of a kind declares for itself, by design (a protocol, not a concept said twice).
PROTOCOL = {"log": "a module's logger", "main": "a script's entry point",
            "BACKEND": "a cluster backend module's Backend (demo/cluster/backends.py lists them)",
            "SCENARIOS": "a story module's scenarios (scenarios/kit/catalogue.py reads them)",
            "run": "a story's run function (its Scenario names it)",
            "GROUPS": "a story family's groups (scenarios/kit/catalogue.py reads them)"}
GROUP_VERSION = re.compile(r"^[a-z0-9-]+(\.[a-z0-9-]+)+/v[0-9]+((alpha|beta)[0-9]+)?$")


def test_the_rules_read_every_layer_and_the_declaring_modules():
    """A folder moved away from under these rules would leave them nothing to check (they once read demo/k8s
    after it became k8s/): every folder they read and both declaring modules exist."""
    missing = [top for top in CODE if not any((REPO / top).glob("*.py"))]
    assert not missing and RESOURCES.is_file() and KEYS.is_file(), missing
    assert {p.parts[len(REPO.parts)] for p in sources()} == set(CODE)


def sources() -> list[Path]:
    return sorted(p for top in CODE for p in (REPO / top).rglob("*.py"))


def rel(p: Path) -> str:
    return str(p.relative_to(REPO))


def top_level_names(tree: ast.Module) -> list[tuple[str, int]]:
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append((node.name, node.lineno))
        elif isinstance(node, ast.Assign):
            out += [(n.id, node.lineno) for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.append((node.target.id, node.lineno))
    return out


def is_story(tree: ast.Module) -> bool:
    """A story module (it declares SCENARIOS): its UPPER_CASE names are that story's own parameters."""
    return any(n == "SCENARIOS" for n, _ in top_level_names(tree))


def test_no_module_level_name_is_defined_twice_in_one_module():
    twice = []
    for p in sources():
        seen: dict[str, int] = {}
        for name, line in top_level_names(ast.parse(p.read_text())):
            if name in seen and not name.startswith("_") and name != "__all__":
                twice.append(f"{rel(p)}:{line}: {name} (also line {seen[name]})")
            seen.setdefault(name, line)
    assert not twice, "defined twice in one module:\n" + "\n".join(twice)


def test_no_module_level_name_is_defined_in_two_modules():
    where: dict[str, list[str]] = defaultdict(list)
    for p in sources():
        tree = ast.parse(p.read_text())
        story = is_story(tree)
        for name, _ in top_level_names(tree):
            if name.startswith("_") or name in PROTOCOL or (story and name.isupper()):
                continue
            if rel(p) not in where[name]:
                where[name].append(rel(p))
    both = {n: ps for n, ps in where.items() if len(ps) > 1}
    assert not both, "the same name in two modules (one concept twice, or two concepts one name):\n" + \
        "\n".join(f"  {n}: {', '.join(ps)}" for n, ps in sorted(both.items()))


def declared_keys() -> dict[str, str]:
    """keys.py's string values that can only be keys (labels, annotations, resource names, parameters): the
    ones with a '/' or a '.' in them and no space, and the fake autoscaler's fakeCA* parameters.  (Plain
    words such as "AdmissionCheck" are also kinds and lane names: not judged.)"""
    out = {}
    for name, value in vars(keys).items():
        if name.isupper() and isinstance(value, str) and " " not in value and (
                "/" in value or "." in value or value.startswith("fakeCA")):
            out[value] = name
    return out


def string_literals(tree: ast.AST):
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
                  and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings:
            yield n


def test_a_key_that_keys_py_declares_is_never_spelled_out_elsewhere():
    known = declared_keys()
    assert "fake-ca.tau-demo.io/provreq-uid" in known and "fakeCAStockout" in known     # the rule has teeth
    spelled = []
    for p in sources():
        if p == KEYS:
            continue
        for lit in string_literals(ast.parse(p.read_text())):
            if lit.value in known:
                spelled.append(f"{rel(p)}:{lit.lineno}: {lit.value!r} is keys.{known[lit.value]}")
    assert not spelled, "keys spelled out instead of imported:\n" + "\n".join(spelled)


def test_api_versions_are_typed_only_where_the_resources_are_declared():
    typed = []
    for p in sources():
        if p == RESOURCES:
            continue
        tree = ast.parse(p.read_text())
        for n in ast.walk(tree):
            if isinstance(n, ast.Dict):
                for k, v in zip(n.keys, n.values):
                    if isinstance(k, ast.Constant) and k.value == "apiVersion" and isinstance(v, ast.Constant):
                        typed.append(f"{rel(p)}:{v.lineno}: apiVersion {v.value!r}")
        for lit in string_literals(tree):
            if GROUP_VERSION.match(lit.value):
                typed.append(f"{rel(p)}:{lit.lineno}: {lit.value!r}")
    assert not typed, ("API group/version strings outside k8s/resources.py (use Resource.new, Resource.api_version "
                       "or a Kind declared there):\n" + "\n".join(typed))


@pytest.mark.parametrize("text, ok", [("kueue.x-k8s.io/v1beta2", True), ("autoscaling.x-k8s.io/v1", True),
                                      ("config.kwok.x-k8s.io/v1alpha1", True), ("batch/v1", False),
                                      ("kueue.x-k8s.io/queue-name", False), ("v1", False)])
def test_the_group_version_pattern(text, ok):
    assert bool(GROUP_VERSION.match(text)) is ok


def test_each_fake_autoscaler_setting_has_one_name_and_one_default_from_flag_to_field():
    params = {p.name: p for p in fake_ca_group.params}
    settings = [f for f in dataclasses.fields(lifecycle.Options) if f.metadata]
    assert len(settings) >= 13
    for f in settings:
        p = params.get(f.name)
        assert p is not None, f"Options.{f.name} has no flag"
        assert f"--{f.name.replace('_', '-')}" in p.opts, (f.name, p.opts)
        want = f.default if f.default is None or isinstance(f.default, bool) else go_duration(f.default)
        assert p.default == want, (f.name, p.default, want)
    lifecycle_names = {f.name for f in dataclasses.fields(lifecycle.Options)}
    others = {"kubeconfig", "context", "as_user", "pools_file", "force", "seed", "hook_dir", "help"}
    assert set(params) - lifecycle_names <= others, set(params) - lifecycle_names - others


# One way to find a Job's Workload: the one it owns (k8s/workload.of_job, over a watch's store or a live list).
# Kueue's name rule (demo/jobs/kueue_names.py) says what Kueue will call it; nothing finds a Workload by it.
WORKLOAD_NAME_RULE = "workload_name_for_job"


def test_a_jobs_workload_is_found_by_owner_reference_not_by_recomputing_its_name():
    home = REPO / "demo" / "jobs" / "kueue_names.py"
    calls = [f"{rel(p)}:{node.lineno}" for p in sources() if p != home
             for node in ast.walk(ast.parse(p.read_text()))
             if isinstance(node, ast.Call) and WORKLOAD_NAME_RULE in ast.unparse(node.func)]
    assert not calls, f"a Workload found by recomputing Kueue's name (find it with workload.of_job): {calls}"
    assert f"def {WORKLOAD_NAME_RULE}(" in home.read_text()
