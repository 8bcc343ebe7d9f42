"""Layers only point down: every import of the project's code, parsed with ast, against one declared order.

Lowest first.  A module may import its own layer and the layers below it, never one above;
packages of one layer may not import each other in a cycle.  No import by string
(importlib, __import__) hides a dependency, and an import inside a function says why.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CODE = ("k8s", "fake_ca", "demo", "scenarios", "fleet", "cli", "bench")

# (layer, packages) lowest first: the top-level folders in this order, demo/'s packages between fake_ca/ and
# scenarios/, and scenarios/'s in three floors: the kit every story stands on, the story families, and the two
# products with an entry point and a report of their own (demo/__init__.py, scenarios/__init__.py and
# docs/architecture.md say the same).
LAYERS = [
    ("foundation", ["k8s"]),
    ("autoscaler", ["fake_ca"]),
    ("toolchain", ["demo", "demo.toolchain"]),       # "demo": its __init__ only
    ("cluster", ["demo.cluster"]),
    ("services", ["demo.jobs", "demo.deadline", "demo.timeline", "demo.realca", "demo.taucluster"]),
    ("page", ["demo.ui"]),                                   # the live page's server (I/O over demo.timeline)
    ("scenario kit", ["scenarios", "scenarios.kit"]),        # "scenarios": its __init__ only
    ("story families", ["scenarios.walkthrough", "scenarios.upstream", "scenarios.taucluster", "scenarios.multikueue"]),
    ("scenario products", ["scenarios.kueue_specs", "scenarios.conformance"]),     # tau-demo kueue-specs, conformance
    ("fleet", ["fleet"]),                           # the design at fleet scale: a product on the scenario kit
    ("cli", ["cli"]),
    ("bench", ["bench"]),                           # the benchmarks: they may use everything below, nothing uses them
]
RANK = {pkg: i for i, (_, pkgs) in enumerate(LAYERS) for pkg in pkgs}
BAND_ROOTS = ("demo", "scenarios")        # a band's own folder: its __init__ only, its packages declared one by one


def module_name(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def package_of(module: str) -> str | None:
    """The declared package a module belongs to (longest match)."""
    best = None
    for pkg in RANK:
        if module == pkg or (module.startswith(pkg + ".") and pkg not in BAND_ROOTS):
            if best is None or len(pkg) > len(best):
                best = pkg
    return best


def sources() -> list[Path]:
    return sorted(p for top in CODE for p in (REPO / top).rglob("*.py"))


def imports(path: Path) -> list[tuple[int, str, bool]]:
    """(line, imported module, inside a function) for every import of our own code."""
    tree = ast.parse(path.read_text(), str(path))
    me = module_name(path)
    pkg_parts = me.split(".") if path.name == "__init__.py" else me.split(".")[:-1]
    out = []
    funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    inner = {id(n) for f in funcs for n in ast.walk(f) if n is not f}
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg_parts[:len(pkg_parts) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [mod] + [f"{mod}.{a.name}" for a in node.names]
        for t in targets:
            if t.split(".")[0] in CODE:
                out.append((node.lineno, t, id(node) in inner))
    return out


def test_every_module_belongs_to_a_declared_layer():
    stray = [module_name(p) for p in sources() if package_of(module_name(p)) is None]
    assert not stray, f"modules outside every declared layer (add them to LAYERS): {stray}"


def test_no_upward_imports():
    bad = []
    for path in sources():
        me = package_of(module_name(path))
        for line, target, _ in imports(path):
            them = package_of(target)
            if them is not None and RANK[them] > RANK[me]:
                bad.append(f"{path.relative_to(REPO)}:{line}: {me} (layer {RANK[me]}) imports {target} "
                           f"(layer {RANK[them]})")
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_no_import_cycles_between_packages():
    edges: dict[str, set[str]] = {}
    for path in sources():
        me = package_of(module_name(path))
        for _, target, _ in imports(path):
            them = package_of(target)
            if them and them != me:
                edges.setdefault(me, set()).add(them)

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for n in edges.get(todo.pop(), ()):
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        return seen
    cycles = sorted(p for p in edges if p in reach(p))
    assert not cycles, f"packages in an import cycle: {cycles} ({ {p: sorted(edges[p]) for p in cycles} })"


# The one module allowed to import by name: the scenario catalogue (in the kit) finds the story modules of the
# scenarios package, the families' above it among them (every one of them is parsed here like any other module, so
# no dependency is hidden).
DISCOVERS_OWN_PACKAGE = {
    "scenarios/kit/catalogue.py": 'pkgutil.walk_packages([str(Path(__file__).parents[1])], "scenarios.")'}


def test_no_import_by_string():
    bad = []
    for rel, walk in DISCOVERS_OWN_PACKAGE.items():
        assert walk in (REPO / rel).read_text(), f"{rel} imports by name only the modules of its own package"
    for path in sources():
        if str(path.relative_to(REPO)) in DISCOVERS_OWN_PACKAGE:
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                if name in ("import_module", "__import__"):
                    bad.append(f"{path.relative_to(REPO)}:{node.lineno}")
            if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                    a.name == "importlib" for a in node.names):
                bad.append(f"{path.relative_to(REPO)}:{node.lineno}: imports importlib")
    assert not bad, f"imports by string hide dependencies: {bad}"


def test_each_scenario_family_and_product_stands_on_the_kit_alone():
    """Inside scenarios/ no package imports another of its own floor: a family reads no other family's stories or
    kit, a product no other product's, and what two of them share lives in the kit below."""
    floor = {pkg: RANK[pkg] for pkg in RANK if pkg.startswith("scenarios.")}
    bad = []
    for path in sources():
        me = package_of(module_name(path))
        for line, target, _ in imports(path):
            them = package_of(target)
            if me in floor and them in floor and them != me and floor[them] == floor[me]:
                bad.append(f"{path.relative_to(REPO)}:{line}: {me} imports {target}")
    assert not bad, "a scenario family or product reaches into a sibling (move what they share into the kit):\n" + \
        "\n".join(bad)


def test_imports_inside_functions_say_why():
    """An import inside a function is allowed only to avoid a real cost, with a comment saying which
    (on the line before or on the same line)."""
    bad = []
    for path in sources():
        lines = path.read_text().splitlines()
        for line, target, inside in imports(path):
            if not inside:
                continue
            around = lines[line - 2] + lines[line - 1]
            if "#" not in around:
                bad.append(f"{path.relative_to(REPO)}:{line}: {target}")
    assert not bad, "imports inside functions without a comment:\n" + "\n".join(sorted(set(bad)))


@pytest.mark.parametrize("pkg", list(RANK))
def test_every_package_says_what_lives_there(pkg):
    init = REPO / Path(*pkg.split(".")) / "__init__.py"
    assert init.is_file(), f"{pkg} is not a package"
    doc = ast.get_docstring(ast.parse(init.read_text()))
    assert doc and len(doc) > 20, f"{pkg}/__init__.py needs a docstring saying what lives there"


def test_the_top_level_of_demo_holds_only_its_packages():
    top = sorted(p.name for p in (REPO / "demo").glob("*.py"))
    assert top == ["__init__.py"], top


def test_the_top_level_folders_are_the_layers_in_order():
    """Each top-level folder is one band of layers, and the bands are in order: no import between two
    top-level folders runs back up (demo/ is the band between fake_ca/ and scenarios/)."""
    band = {top: [RANK[p] for p in RANK if p.split(".")[0] == top] for top in CODE}
    spans = [(min(b), max(b), top) for top, b in band.items()]
    assert [t for _, _, t in sorted(spans)] == list(CODE), spans
    for (lo1, hi1, a), (lo2, hi2, b) in zip(sorted(spans), sorted(spans)[1:]):
        assert hi1 < lo2, f"{a} and {b} overlap in layers"


def test_the_benchmarks_use_only_public_names():
    bad = []
    for path in sorted((REPO / "bench").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in CODE:
                bad += [f"{path.name}:{node.lineno}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    assert not bad, "bench/ imports private names: " + ", ".join(bad)


# The scenarios' shared kit (scenarios/kit/), the one part of scenarios/ a benchmark may use: never a story
# family's or a product's (the conformance tool, the Kueue-spec suite) own modules.
SCENARIO_KIT = "scenarios.kit"


def in_the_scenario_kit(module: str) -> bool:
    return (module + ".").startswith(SCENARIO_KIT + ".")


def test_the_benchmarks_reach_the_scenarios_only_through_their_kit():
    bad = [f"{path.relative_to(REPO)}:{line}: {target}" for path in sorted((REPO / "bench").glob("*.py"))
           for line, target, _ in imports(path)
           if target.split(".")[0] == "scenarios" and not in_the_scenario_kit(target)]
    assert not bad, "bench/ imports scenario modules outside their kit:\n" + "\n".join(bad)


BENCH_FUNCTION_LINES = 60        # the longest a benchmark's function may be, its nested functions included


def long_functions(text: str, limit: int = BENCH_FUNCTION_LINES) -> list[str]:
    """Every function (or method) longer than `limit` lines, from its `def` to its last line: 'name:line (N lines)'."""
    return [f"{n.name}:{n.lineno} ({n.end_lineno - n.lineno + 1} lines)" for n in ast.walk(ast.parse(text))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > limit]


def sys_path_edits(text: str) -> list[int]:
    """The lines that change the import path (sys.path.insert/append/extend/…, or assign to it)."""
    out = []
    for n in ast.walk(ast.parse(text)):
        target = n.func.value if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) else None
        if isinstance(n, (ast.Assign, ast.AugAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            target = next((t for t in targets if isinstance(t, (ast.Attribute, ast.Subscript))), None)
            target = target.value if isinstance(target, ast.Subscript) else target
        if isinstance(target, ast.Attribute) and target.attr == "path" and getattr(target.value, "id", "") == "sys":
            out.append(n.lineno)
    return out


def test_no_benchmark_function_is_longer_than_60_lines():
    long = {str(p.relative_to(REPO)): got for p in sorted((REPO / "bench").glob("*.py"))
            if (got := long_functions(p.read_text()))}
    assert not long, f"bench/ functions over {BENCH_FUNCTION_LINES} lines (split them into named steps): {long}"


def test_no_benchmark_edits_the_import_path():
    """bench/ is a package run as `python -m bench.<name>` from the repository's root: nothing edits sys.path."""
    edits = {str(p.relative_to(REPO)): got for p in sorted((REPO / "bench").glob("*.py"))
             if (got := sys_path_edits(p.read_text()))}
    assert not edits, f"bench/ modules that edit sys.path (lines): {edits}"


def test_the_bench_rules_see_a_long_function_every_way_of_editing_the_path_and_a_scenario_module_outside_the_kit():
    body = "".join(f"    x = {i}\n" for i in range(BENCH_FUNCTION_LINES - 1))
    assert long_functions(f"def ok():\n{body}") == []
    assert long_functions(f"def f():\n{body}    x = 0\n") == [f"f:1 ({BENCH_FUNCTION_LINES + 1} lines)"]
    for text in ("import sys\nsys.path.insert(0, 'x')\n", "import sys\nsys.path.append('x')\n",
                 "import sys\nsys.path = ['x']\n", "import sys\nsys.path += ['x']\n",
                 "import sys\nsys.path[0] = 'x'\n"):
        assert sys_path_edits(text) == [2], text
    assert sys_path_edits("import sys\nprint(sys.path)\nsys.exit(1)\n") == []
    assert not in_the_scenario_kit("scenarios.conformance.probes") and not in_the_scenario_kit("scenarios.kueue_specs.kit")


# What observes the cluster (the stories, the probes, the views) does so through the one observation layer,
# k8s/tape.py: it makes no Watch or Store of its own.  Controllers (which write) keep theirs.
OBSERVERS = ("scenarios", "demo/jobs", "demo/timeline", "demo/ui", "bench")
WATCH_MACHINERY = {"k8s.watch": {"Watch", "start_synced", "informer"}, "k8s.runtime": {"Store"}}
CONTROLLERS_AMONG_OBSERVERS = {
    "scenarios/kit/toolbox.py": "ExternalCheck: an AdmissionCheck controller of the scenarios' own (it writes its entry)",
    "bench/ideal_autoscaler.py": "the serial ceiling the fake autoscaler is measured against: a controller (it writes)",
    "bench/ideal_deadline.py": "the ceiling the deadline controller is measured against: a controller (it writes)"}


def watch_machinery_imported(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module in WATCH_MACHINERY:
            out += [f"{node.module}.{a.name}" for a in node.names if a.name in WATCH_MACHINERY[node.module]]
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name in WATCH_MACHINERY]
        elif isinstance(node, ast.ImportFrom) and node.module == "k8s":
            out += [f"k8s.{a.name}" for a in node.names if f"k8s.{a.name}" in WATCH_MACHINERY]
    return out


def test_observers_watch_only_through_the_tape():
    found = {str(p.relative_to(REPO)): got for top in OBSERVERS for p in sorted((REPO / top).rglob("*.py"))
             if (got := watch_machinery_imported(p))}
    assert set(CONTROLLERS_AMONG_OBSERVERS) <= set(found), "an exception that no longer needs to be one"
    wrong = {p: got for p, got in found.items() if p not in CONTROLLERS_AMONG_OBSERVERS}
    assert not wrong, f"observers that watch around k8s/tape.py (use a Tape and its query set): {wrong}"


def test_the_watch_machinery_rule_sees_each_way_of_importing_it(tmp_path):
    p = tmp_path / "m.py"
    for text, want in (("from k8s.watch import Event, NotSynced\n", []),
                       ("from k8s.watch import Watch as W\n", ["k8s.watch.Watch"]),
                       ("from k8s.runtime import Store, WorkQueue\n", ["k8s.runtime.Store"]),
                       ("import k8s.watch\n", ["k8s.watch"]),
                       ("from k8s import runtime\n", ["k8s.runtime"]),
                       ("from k8s.tape import Tape\n", [])):
        p.write_text(text)
        assert watch_machinery_imported(p) == want, text
