"""Mutation testing of the pure modules: run mutmut, then judge every module against the floor.

    ./test.sh --mutation                                  # the same: every module, from scratch
    ./test.sh --mutation --module fake_ca/lifecycle.py    # while writing tests: retest one module's mutants
    ./test.sh --mutation --no-run                         # judge the results already in mutants/
    ./test.sh --mutation --fresh                          # every module, mutmut run even where the cache holds a pass

A whole run whose verdict passed is cached outside the repository, in $TAU_DEMO_CACHE/mutation/<key>
(~/.cache/tau-demo by default), keyed by the content of every file mutmut copies or runs (the code, the
tests, docs, manifests, pyproject.toml, the lock) and by mutmut's and Python's versions: a later whole
run of the very same source reads those verdicts instead of running mutmut again, and says so.  Any
change to any of those files is another key, so mutmut runs; a failing verdict is never cached.

The modules are mutmut's `only_mutate` list and the floor, the equivalents file and the modules
not yet gated are in [tool.tau-demo.mutation], all in pyproject.toml.  For every module the
table shows killed (a test failed), timeout (the tests hung: counted as killed), survived
(every test passed), no-test (no test runs the mutated function), the listed equivalents and
the score killed / (mutants - equivalents), and every mutant that survived with its change.
A gated module fails below the floor, with any mutant that no test runs, or with a survivor that is
neither killed nor listed as equivalent (with a reason a reader can check).  An equivalents entry
that names no surviving mutant fails too, so the list cannot rot; and so does a module that does no
I/O (found by its imports: pure_modules) but is missing from `only_mutate`.  Exit 0 when every gated
module passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MUTANTS = REPO / "mutants"
LOG = MUTANTS / "mutmut-run.log"
HELD = REPO / "tests" / "mutation" / "held.py"   # mutmut run, each mutant's tests in a fork of one held pytest session
# what the mutants' verdicts depend on besides [tool.mutmut]'s source_paths and also_copy: the tests, this gate,
# the settings, the locked packages
KEYED_ALSO = ("tests", "pyproject.toml", "requirements.lock")
CACHED_RUN = "run.json"                 # in a cached verdict's directory: where and when mutmut ran
CACHE_KEEP = 4                          # cached verdicts kept: those of the newest sources

# mutmut 3.8.1's exit codes (mutmut/stats.py status_by_exit_code), folded into our columns
_STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no-test", 33: "no-test",
           -24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout", 36: "timeout", None: "not-checked"}
COLUMNS = ("killed", "timeout", "survived", "no-test", "equivalent", "other")


def status_of(exit_code: int | None) -> str:
    return _STATUS.get(exit_code, "other")


@dataclass
class Settings:
    modules: list[str]
    floor: float
    equivalents_file: Path
    not_gated: set[str]


def settings(pyproject: Path = REPO / "pyproject.toml") -> Settings:
    data = tomllib.loads(pyproject.read_text())
    tool = data["tool"]
    mine = tool["tau-demo"]["mutation"]
    return Settings(modules=list(tool["mutmut"]["only_mutate"]), floor=float(mine["floor"]),
                    equivalents_file=REPO / mine["equivalents"], not_gated=set(mine.get("not_gated", [])))


# A module does I/O when it imports one of these (processes, the network, the clock and threads, the
# terminal, the Kubernetes client), or imports a module of the project that does.  Reading a file through
# pathlib or yaml does not count: the pure modules read their input files (the pools file, a manifest).
IO_IMPORTS = frozenset({"os", "sys", "subprocess", "socket", "signal", "threading", "time", "shutil", "tempfile",
                        "tarfile", "urllib", "http", "kubernetes", "urllib3", "click", "concurrent", "logging",
                        "asyncio", "select", "selectors", "multiprocessing"})
CODE = ("k8s", "fake_ca", "demo", "scenarios", "fleet", "cli")


def _imports(path: Path, repo: Path) -> tuple[set[str], set[str]]:
    """(top-level names of the other modules it imports, the project's modules it imports), of one file."""
    rel = path.relative_to(repo).with_suffix("")
    parts = list(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
    package = parts if rel.name == "__init__" else parts[:-1]
    outside, ours = set(), set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else node.module or ""
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for n in names:
            (ours if n.split(".")[0] in CODE else outside).add(n if n.split(".")[0] in CODE else n.split(".")[0])
    return outside, ours


def pure_modules(repo: Path = REPO) -> list[str]:
    """Every module of the project that does no I/O, by its imports (IO_IMPORTS, also through the project's
    modules it imports), and that has code to mutate (a function): the modules `only_mutate` must list."""
    files = {".".join(p.relative_to(repo).with_suffix("").parts).removesuffix(".__init__"): p
             for top in CODE for p in sorted((repo / top).rglob("*.py"))}
    found = {m: _imports(p, repo) for m, p in files.items()}

    def resolve(name: str) -> str | None:            # "k8s.keys.X" -> "k8s.keys"
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    io: dict[str, bool] = {}

    def does_io(m: str, seen: frozenset = frozenset()) -> bool:
        if m not in io:
            outside, ours = found[m]
            deps = {d for d in map(resolve, ours) if d and d != m and d not in seen}
            io[m] = bool(outside & IO_IMPORTS) or any(does_io(d, seen | {m}) for d in deps)
        return io[m]

    def has_functions(p: Path) -> bool:
        return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(ast.parse(p.read_text())))
    return sorted(str(p.relative_to(repo)) for m, p in files.items() if not does_io(m) and has_functions(p))


def read_equivalents(path: Path) -> dict[str, str]:
    """mutant name -> reason, from lines "<name>  <reason>"; blank lines and # comments skipped."""
    out: dict[str, str] = {}
    if not path.exists():
        return out
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, reason = line.partition(" ")
        if not reason.strip():
            raise SystemExit(f"{path}:{n}: {name}: every equivalent mutant needs a one-line reason")
        out[name] = reason.strip()
    return out


def natural(item: tuple[str, object]) -> tuple[str, int]:
    """Mutants in function order, then by number (…__mutmut_2 before …__mutmut_10)."""
    function, _, number = item[0].rpartition("__mutmut_")
    return function, int(number) if number.isdigit() else 0


def module_of(path: str) -> str:
    return path[:-3].replace("/", ".")


@dataclass
class Row:
    path: str
    counts: Counter = field(default_factory=Counter)
    survivors: list[str] = field(default_factory=list)
    untested: list[str] = field(default_factory=list)
    missing: bool = False

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def score(self) -> float | None:
        judged = self.total - self.counts["equivalent"]
        return None if judged == 0 else 100.0 * (self.counts["killed"] + self.counts["timeout"]) / judged


def tally(s: Settings, equivalents: dict[str, str], mutants: Path = MUTANTS) -> tuple[list[Row], list[str]]:
    """One row per module from mutmut's mutants/<path>.meta files, and the problems with the equivalents list."""
    rows, seen, problems = [], set(), []
    for path in s.modules:
        row = Row(path)
        meta = mutants / (path + ".meta")
        if not meta.exists():
            row.missing = True
            rows.append(row)
            continue
        for name, code in sorted(json.loads(meta.read_text())["exit_code_by_key"].items(), key=natural):
            st = status_of(code)
            if name in equivalents:
                seen.add(name)
                if st != "survived":
                    problems.append(f"{name} is listed as equivalent but is {st}: remove it from the list")
                    row.counts[st] += 1
                    continue
                st = "equivalent"
            row.counts[st if st in COLUMNS else "other"] += 1
            if st == "survived":
                row.survivors.append(name)
            elif st == "no-test":
                row.untested.append(name)
        rows.append(row)
    mutated = {module_of(p) for p in s.modules}
    for name in sorted(set(equivalents) - seen):
        where = "a module that is not mutated" if not any(name.startswith(m + ".") for m in mutated) else "no mutant"
        problems.append(f"{name} is listed as equivalent but names {where} (renumbered after an edit?): "
                        "find the mutant again with `mutmut results` / `mutmut show` and fix the list")
    return rows, problems


def verdict(row: Row, s: Settings) -> str:
    if row.missing:
        return "FAIL: no results"
    gated = row.path not in s.not_gated
    problems = []
    if row.score is not None and row.score < s.floor:
        problems.append(f"below {s.floor:g}%")
    if row.counts["no-test"]:
        problems.append("mutants without a test")
    if row.counts["survived"]:
        problems.append(f"{row.counts['survived']} survivor(s) neither killed nor listed")
    if row.counts["other"]:
        problems.append("unjudged mutants")
    if not problems:
        return "ok"
    return ("FAIL: " if gated else "not gated: ") + ", ".join(problems)


def table(rows: list[Row], s: Settings) -> str:
    width = max(len(r.path) for r in rows)
    head = f"{'module'.ljust(width)}  {'mutants':>7}  " + "  ".join(f"{c:>10}" for c in COLUMNS) + "   score  verdict"
    lines = [head, "-" * len(head)]
    total = Row("total")
    for r in rows:
        total.counts.update(r.counts)
        score = "   n/a" if r.score is None else f"{r.score:5.1f}%"
        lines.append(f"{r.path.ljust(width)}  {r.total:7d}  " + "  ".join(f"{r.counts[c]:10d}" for c in COLUMNS)
                     + f"  {score}  {verdict(r, s)}")
    lines.append("-" * len(head))
    score = "   n/a" if total.score is None else f"{total.score:5.1f}%"
    lines.append(f"{'all modules'.ljust(width)}  {total.total:7d}  "
                 + "  ".join(f"{total.counts[c]:10d}" for c in COLUMNS) + f"  {score}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- the cache of passing verdicts

def verdicts_key(files: list[tuple[str, bytes]], versions: str) -> str:
    """The key of a whole run's verdicts: every file they depend on (path and content, in any order) and the
    versions of the tools that judged them."""
    h = hashlib.sha256(versions.encode() + b"\0")
    for path, content in sorted(files):
        h.update(path.encode() + b"\0" + hashlib.sha256(content).digest())
    return h.hexdigest()[:24]


def keyed_files(repo: Path = REPO) -> list[tuple[str, bytes]] | None:
    """Every file the verdicts depend on, as git lists them (tracked, or new and not ignored), with its content
    in the working tree; None where git cannot answer (then nothing is cached)."""
    data = tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["mutmut"]
    roots = [*data["source_paths"], *data.get("also_copy", []), *KEYED_ALSO]
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", *roots],
                             cwd=repo, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    paths = sorted({p for p in out.decode().split("\0") if p})
    return [(p, (repo / p).read_bytes()) for p in paths if (repo / p).is_file()]


def tool_versions() -> str:
    from importlib.metadata import version
    return f"mutmut {version('mutmut')}, Python {platform.python_version()}"


def cache_dir(key: str) -> Path:
    if str(REPO) not in sys.path:                            # run as a script: the repository's packages too
        sys.path.insert(0, str(REPO))
    from k8s.paths import cache_root                         # the project's cache root (TAU_DEMO_CACHE)
    return cache_root() / "mutation" / key


def save_verdicts(where: Path, mutants: Path, run: dict) -> None:
    """Keep the verdicts of a whole passing run: each module's .meta file, and where and when mutmut ran."""
    tmp = where.with_name(where.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    for meta in mutants.rglob("*.py.meta"):
        dest = tmp / meta.relative_to(mutants)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(meta, dest)
    (tmp / CACHED_RUN).write_text(json.dumps(run, indent=1))
    shutil.rmtree(where, ignore_errors=True)
    tmp.rename(where)
    kept = sorted((d for d in where.parent.iterdir() if (d / CACHED_RUN).is_file()),
                  key=lambda d: (d / CACHED_RUN).stat().st_mtime, reverse=True)
    for old in kept[CACHE_KEEP:]:                            # the newest few sources' verdicts, not every one
        shutil.rmtree(old, ignore_errors=True)


def load_verdicts(where: Path, mutants: Path) -> dict | None:
    """Put cached verdicts in mutants/ (emptied first), for tally(); where and when mutmut ran, or None."""
    run = where / CACHED_RUN
    if not run.is_file():
        return None
    shutil.rmtree(mutants, ignore_errors=True)
    shutil.copytree(where, mutants, ignore=shutil.ignore_patterns(CACHED_RUN))
    return json.loads(run.read_text())


def run_mutmut(max_children: int, modules: list[str]) -> float:
    """Run mutmut: from scratch, or (with `modules`) again for those modules' mutants only, keeping the
    rest of mutants/.  The stats file goes either way, so tests added or changed since the last run
    are matched to the functions they run before any mutant is judged."""
    if modules:
        (MUTANTS / "mutmut-stats.json").unlink(missing_ok=True)
    elif MUTANTS.exists():
        shutil.rmtree(MUTANTS)
    MUTANTS.mkdir(exist_ok=True)
    # mutmut's `run`, each mutant's tests run in a fork of one pytest session collected once (held.py)
    cmd = ["nice", "-n", "10", sys.executable, str(HELD.relative_to(REPO)), "run", "--max-children", str(max_children)]
    cmd += [module_of(m) + ".*" for m in modules]
    print(f"[mutation] {' '.join(cmd[4:])} (log: {LOG.relative_to(REPO)})", flush=True)
    t0 = time.monotonic()
    with open(LOG, "w") as log:
        rc = subprocess.run(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT).returncode
    took = time.monotonic() - t0
    if rc != 0:
        tail = LOG.read_text(errors="replace").replace("\r", "\n").splitlines()[-30:]
        print("\n".join(tail))
        raise SystemExit(f"[mutation] mutmut failed (exit {rc}); full log in {LOG}")
    return took


def changed_lines(name: str, path: str) -> list[str]:
    """The lines a mutant changes, as mutmut shows them ("-" original, "+" mutant)."""
    try:
        from mutmut.mutation.diff_apply import get_diff_for_mutant      # mutmut is only needed here
        diff = get_diff_for_mutant(name, path=path)
    except Exception as e:                                             # a report without diffs is still a report
        return [f"(no diff: {e})"]
    return [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]


def _commit() -> str:
    """The commit, "-dirty" when the working tree has changes the commit does not hold."""
    out = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=REPO, capture_output=True, text=True)
    return out.stdout.strip() or "(no commit)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--max-children", type=int, default=os.cpu_count() or 2, help="parallel mutant runs (default: cores)")
    ap.add_argument("--module", action="append", default=[], metavar="PATH",
                    help="retest only this module's mutants (repeatable), keep the others' results, judge only it")
    ap.add_argument("--no-run", action="store_true", help="only judge the results already in mutants/")
    ap.add_argument("--fresh", action="store_true",
                    help="run mutmut even when the cache holds a passing verdict of this very source")
    ap.add_argument("--show", type=int, default=10, help="survivors to show per failing module, with their change")
    args = ap.parse_args(argv)
    os.chdir(REPO)

    s = settings()
    unknown = [m for m in args.module if m not in s.modules]
    if unknown:
        raise SystemExit(f"[mutation] not in [tool.mutmut] only_mutate: {', '.join(unknown)}")
    equivalents = read_equivalents(s.equivalents_file)
    whole = not args.module and not args.no_run
    files = keyed_files() if whole else None
    where = cache_dir(verdicts_key(files, tool_versions())) if files is not None else None
    cached = None if where is None or args.fresh else load_verdicts(where, MUTANTS)
    if cached is not None:
        print(f"[mutation] verdicts from the cache: a whole run of this very source (the same {len(files)} files "
              f"and {tool_versions()}), passed at commit {cached['commit']} on {cached['date']}, where mutmut "
              f"took {cached['took']:.0f}s; mutmut not run again ({where}; --fresh runs it)", flush=True)
    took = None if args.no_run or cached is not None else run_mutmut(args.max_children, args.module)
    if args.module:
        s.modules = args.module
    rows, problems = tally(s, equivalents, MUTANTS)
    if args.module:
        judged = tuple(module_of(m) + "." for m in args.module)
        problems = [p for p in problems if p.startswith(judged)]
    print(table(rows, s))
    if took is not None:
        print(f"[mutation] mutmut run took {took:.0f}s with {args.max_children} parallel runs")

    failed = False
    for r in rows:
        v = verdict(r, s)
        if v == "ok":
            continue
        failed |= v.startswith("FAIL")
        names = r.untested + r.survivors
        if names and args.show:
            print(f"\n{r.path}: {v}")
            for name in names[:args.show]:
                print(f"  {'no test ' if name in r.untested else 'survived'}  {name}")
                for line in changed_lines(name, r.path):
                    print(f"      {line.strip()[:1]} {line[1:].strip()}")
            if len(names) > args.show:
                print(f"  ... and {len(names) - args.show} more: `.venv/bin/mutmut results`, `.venv/bin/mutmut show NAME`")
    for p in problems:
        print(f"[mutation] equivalents: {p}")
    failed |= bool(problems)
    missing = [] if args.module else sorted(set(pure_modules()) - set(s.modules))
    for m in missing:
        print(f"[mutation] {m} does no I/O (by its imports) but is not in [tool.mutmut] only_mutate: add it")
    failed |= bool(missing)
    if where is not None and cached is None and not failed:
        save_verdicts(where, MUTANTS, {"commit": _commit(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                       "took": took, "max_children": args.max_children})
        print(f"[mutation] these passing verdicts are kept in {where}, for a later whole run of the same source")
    print(f"[mutation] {'FAILED' if failed else 'passed'}: floor {s.floor:g}% killed per gated module, "
          f"no mutant without a test ({len(equivalents)} equivalent mutants listed in "
          f"{s.equivalents_file.relative_to(REPO)})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
