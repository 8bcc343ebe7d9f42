"""Sampled mutation testing of the controllers that do I/O, judged by their cluster tests on one shared cluster.

    nice -n 10 .venv/bin/python tests/mutation/sampled.py                 # every module of SELECTION
    nice -n 10 .venv/bin/python tests/mutation/sampled.py --per-module 5 --module demo/k8s/client.py
    .venv/bin/python tests/mutation/sampled.py --report                   # the table again from the results

The pure modules are mutation-tested against the unit tests (report.py, every mutant).  The controllers do
I/O: only a cluster can judge them, and a cluster test takes seconds to minutes, so a sample of each
module's mutants is judged instead.  For each module of SELECTION: all its mutants, made by mutmut 3.8.1's
own mutation operators (the same as the pure modules get), a random sample of them (seeded, so a run can be
repeated), and for each one: a copy of the repository at HEAD with only that mutant applied to the module,
and the module's cluster tests run in that copy (pytest -x).  Killed: a test failed or erred, or hung
(each cluster test fails after 300 s here: TAU_DEMO_TEST_TIMEOUT), or the whole run outlasted twice the
unmutated one; survived: every test passed.  Controllers that the tests start as processes run
from the copy, so they run the mutant too.

One cluster serves every run: this script brings it up (so that no process of the cluster is started from
the copy), every pytest session finds it running and leaves it up (TAU_DEMO_TEST_KEEP_CLUSTER=1, also when a
mutant keeps the session from using it), and it is torn down at the end (unless --keep-cluster).  Before the mutants, the
selection runs once on the unmutated copy and must pass; its time sets each mutant's limit.  Between two
mutants, whatever a killed one left behind is removed with the unmutated code: processes started from the
copy, the demo namespace's Jobs, Workloads and ProvisioningRequests, the pool's nodes, and the objects of
the retry tests; and the controllers' Leases must go stale, so the next run starts its own from the copy.

Needs TAU_DEMO_STATE (a state directory of its own, as for the cluster tests).  The run itself is not part of
.ci/run (an hour or more); docs/testing.md has the last run's kill rates, the command and the commit.  Results:
mutants-sampled/.  `--again NAME...` judges those mutants again at HEAD (after a check was added for them), keeping the
run's other verdicts (each found by its recorded change, under today's name); each verdict keeps the commit it was
judged at.  It does not run the unmutated selection first (its limit is the run's): the new checks pass on
the unmutated code in CI's cluster stage, which the gate's record goes through before it lands.

The gate CI runs (`--gate`, `./test.sh --sampled`): `--record` writes the run's verdicts into RECORD (committed, made
by this script, never by hand), each kill with the test that killed it.  The gate fails when a module's recorded kill
rate, the equivalents of EQUIVALENTS left out, is under FLOOR; then it judges again, on a cluster of its own, one
recorded kill of each module, taken in turn (the commit's count picks which, so successive commits cover them all):
its killing test must pass on the unmutated copy and fail with the mutant applied (or, if it passes alone, the
module's tests in the run's order must fail, as in the run).  A recorded kill that now survives means a check was
weakened or lost: the gate fails and names it.  A recorded mutant whose change
no mutant of today's code makes (the code it changed is gone) is named and not judged; when more than a quarter of a
module's record is gone the gate fails: the record is stale, run the sample again.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:            # run as a script: the repository's packages, not only tests/mutation
    sys.path.insert(0, str(REPO))
OUT = REPO / "mutants-sampled"
COPY = OUT / "src"
RESULTS = OUT / "results.json"

# module -> (the cluster tests that exercise it, its own first: pytest -x stops at the first failure; the
# mutants sampled by default).  The samples are sized so that a run ends in about three hours on two busy
# cores: a mutant that survives costs the whole selection (measured: test_deadline_controller.py 1.5 min,
# test_fake_ca.py 4 min, test_client_retry.py 0.5 min), a killed one less.
FAULTS = ("tests/cluster/test_faults.py::"          # a controller's start while the apiserver is down
          "test_a_controller_whose_apiserver_dies_before_its_caches_synced_waits_and_says_so")
SELECTION = {
    "demo/deadline/controller.py": (["tests/cluster/test_deadline_controller.py",
                                     "tests/cluster/test_scenarios.py::test_race_scenarios_repeatedly[race-legacy-1]",
                                     # killed (kill -9) at each pause point of its steps, started again, converges
                                     "tests/cluster/test_scenarios.py::"
                                     "test_deadline_controller_killed_at_each_step_boundary_converges",
                                     f"{FAULTS}[deadline]",
                                     # the take-up's record refused by the apiserver, said, made at a later look
                                     "tests/cluster/test_deadline_rule.py::"
                                     "test_a_take_up_record_the_apiserver_refuses_is_said_and_made_at_a_later_look",
                                     # two gangs taken up apart: each counts from its own take-up
                                     "tests/cluster/test_deadline_rule.py::"
                                     "test_each_workload_counts_from_its_own_take_up_not_from_another_gangs",
                                     # a take-up learned from a relist alone, remembered by the look that reads it
                                     "tests/cluster/test_deadline_rule.py::"
                                     "test_a_take_up_learned_from_a_relist_is_remembered_at_the_look_that_reads_it"],
                                    20),
    "demo/taucluster/controller.py": (["tests/cluster/test_taucluster.py"], 12),
    "k8s/client.py": (["tests/cluster/test_client_retry.py", "tests/cluster/test_deadline_controller.py"], 20),
    "fake_ca/controller.py": (["tests/cluster/test_fake_ca.py", f"{FAULTS}[fake-ca]",
                               "tests/cluster/test_faults.py::"
                               "test_the_fakes_loop_meets_a_dead_apiserver_says_so_and_a_later_loop_ends_the_scale_up",
                               # the one test that parks a scale-up after a node's create (its pause point's report)
                               "tests/cluster/test_faults.py::test_apiserver_killed_in_the_middle_of_a_scale_up"],
                              12),
    "k8s/runtime.py": (["tests/cluster/test_deadline_controller.py", "tests/cluster/test_fake_ca.py"], 12),
}
PYTEST = ["-q", "-p", "no:cacheprovider", "-x"]
RECORD = REPO / "tests/mutation/sampled-record.json"
EQUIVALENTS = REPO / "tests/mutation/equivalent-sampled.txt"
FLOOR = 90.0                # the recorded kill rate each module must keep, in percent
STALE = 0.25                # the share of a module's record that may be gone before the gate asks for a new sample
# Modules whose controller is a process of the cluster itself (`cluster up` starts it, from the runner's code): before
# each run of their tests it is started again from the copy, so that the tests judge the mutant.
FROM_COPY = {"demo/taucluster/controller.py"}


# ---------------------------------------------------------------------------- mutants

def module_of(path: str) -> str:
    return path[:-3].replace("/", ".")


def mutants_of(path: str) -> tuple[str, list[str]]:
    """(the mutated file mutmut writes, with every mutant behind its trampolines; the mutants' names)."""
    from mutmut.mutation.file_mutation import mutate_file_contents     # only needed here
    mutated = mutate_file_contents(path, (REPO / path).read_text())
    return mutated.code, [f"{module_of(path)}.{n}" for n in mutated.mutant_names]


def _function(module, name: str, class_name: str | None):
    import libcst as cst
    body = module.body
    if class_name:
        cls = next(c for c in body if isinstance(c, cst.ClassDef) and c.name.value == class_name)
        body = cls.body.body
    return next(f for f in body if isinstance(f, cst.FunctionDef) and f.name.value == name)


@functools.lru_cache(maxsize=8)
def _parsed(code: str):
    import libcst as cst
    return cst.parse_module(code)


def apply(path: str, mutated_code: str, name: str) -> str:
    """The module's source with only mutant `name` applied (as `mutmut apply`, but minding the class)."""
    import libcst as cst
    from mutmut.utils.format_utils import orig_function_and_class_names_from_key
    function, class_name = orig_function_and_class_names_from_key(name)
    function = function.rpartition(".")[2]
    orig = _parsed((REPO / path).read_text())
    generated = name.rpartition(".")[2]
    mutant = _function(_parsed(mutated_code), generated, class_name).with_changes(name=cst.Name(function))
    return orig.deep_replace(_function(orig, function, class_name), mutant).code


def diff(path: str, source: str) -> list[str]:
    import difflib
    return [line for line in difflib.unified_diff((REPO / path).read_text().splitlines(), source.splitlines(),
                                                  lineterm="", n=0)
            if line[:1] in "+-" and line[:3] not in ("+++", "---")]


# ---------------------------------------------------------------------------- the record and the gate (no I/O)

def killer(first: str) -> str | None:
    """The test that killed a mutant, from pytest -q's summary line ("FAILED tests/x.py::test[p] - why"), or None
    (a timeout, a controller that did not start: nothing one test can show again)."""
    for word in ("FAILED ", "ERROR "):
        if first.startswith(word):
            node = first[len(word):].split(" - ", 1)[0].strip()
            return node if "::" in node else None
    return None


def record_of(results: dict) -> dict:
    """What RECORD keeps of a run: per module its count of mutants and, per mutant judged, its verdict, the commit
    it was judged at, its killing test (for a kill) and its change."""
    return {"seed": results["seed"], "per_module": results["per_module"], "commit": results["commit"],
            "modules": {path: {"mutants": m["mutants"],
                               "judged": {name: {"status": v["status"], "commit": v.get("commit", results["commit"]),
                                                 "seconds": v["seconds"], "killer": killer(v["first"]),
                                                 "diff": v["diff"]}
                                          for name, v in sorted(m["judged"].items())}}
                        for path, m in sorted(results["modules"].items())}}


def rates(record: dict, equivalents: dict[str, str]) -> dict[str, tuple[int, int, float]]:
    """module -> (killed, judged less the equivalents, kill rate in percent); a timeout is a kill."""
    out = {}
    for path, m in record["modules"].items():
        judged = [v["status"] for name, v in m["judged"].items() if name not in equivalents]
        killed = sum(1 for st in judged if st in ("killed", "timeout"))
        out[path] = (killed, len(judged), 100.0 * killed / len(judged) if judged else 0.0)
    return out


def equivalence_problems(record: dict, equivalents: dict[str, str]) -> list[str]:
    """Every listed equivalent must be a recorded survivor: a killed one is not equivalent, an unknown name is stale."""
    verdicts = {name: v["status"] for m in record["modules"].values() for name, v in m["judged"].items()}
    return [f"{name} is listed as equivalent but "
            + (f"is {verdicts[name]}" if name in verdicts else "is not in the record")
            for name in sorted(equivalents) if verdicts.get(name) != "survived"]


def turn_of(record: dict, turn: int) -> list[tuple[str, str]]:
    """The recorded kills the gate judges on its `turn`: one per module, the module's kills (those a test can show
    again) in name order, taken in turn, so that `turn`, `turn + 1`, ... cover them all."""
    out = []
    for path, m in sorted(record["modules"].items()):
        kills = sorted(name for name, v in m["judged"].items() if v["status"] == "killed" and v.get("killer"))
        if kills:
            out.append((path, kills[turn % len(kills)]))
    return out


def same_change(a: list[str], b: list[str]) -> bool:
    """Two diffs make the same change, whatever the indentation of their lines (a statement moved into a block)."""
    def plain(lines: list[str]) -> list[str]:
        return [line[:1] + line[1:].strip() for line in lines]
    return plain(a) == plain(b)


def today(path: str, code: str, names: list[str], name: str, change: list[str]) -> str | None:
    """Today's name of a recorded mutant: its own if it still makes the recorded change; else the mutant of the same
    function that makes it (mutmut renumbers a function's mutants when the function changes); else None (gone)."""
    if name in names and same_change(diff(path, apply(path, code, name)), change):
        return name
    function = name.rsplit("__mutmut_", 1)[0] + "__mutmut_"
    return next((other for other in names if other.startswith(function) and other != name
                 and same_change(diff(path, apply(path, code, other)), change)), None)


# ---------------------------------------------------------------------------- the copy and the cluster

def head() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout.strip()


def make_copy(commit: str) -> None:
    """The repository at `commit` (tracked files), unpacked into COPY."""
    if COPY.exists():
        shutil.rmtree(COPY)
    COPY.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", commit], cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(COPY)], input=archive, check=True)
    where = subprocess.run([sys.executable, "-c", "import demo, fake_ca; print(demo.__file__, fake_ca.__file__)"],
                           cwd=COPY, capture_output=True, text=True, check=True).stdout.split()
    if not all(Path(w).resolve().is_relative_to(COPY.resolve()) for w in where):
        raise SystemExit(f"[sampled] the copy does not import its own code ({where}): cannot judge mutants")


def started_from_copy() -> list[int]:
    """The controllers the copy's tests started (`python -m cli ...` working in the copy) and left running.
    Nothing else: a Kueue that a run's session restarted keeps running, as the cluster does."""
    out = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
                if b"-m" in argv and b"cli" in argv and Path(os.readlink(proc / "cwd")).is_relative_to(COPY.resolve()):
                    out.append(int(proc.name))
            except OSError:
                continue
    return out


def taucluster_from_copy(st) -> None:
    """The cluster's TauCluster controller stopped and started again from the copy, its ready line seen."""
    from demo.cluster import setup
    from k8s import poll
    setup.stop_controller(st)
    log = setup.controller_files(st)[1]
    before = log.read_text(errors="replace") if log.exists() else ""
    subprocess.run([sys.executable, "-c", "import sys; from demo.cluster import setup; from demo.cluster.state import "
                    "State; sys.exit(0 if setup.start_controller(State.load(sys.argv[1])) else 1)", st.name],
                   cwd=COPY, check=True)

    def ready() -> bool:
        text = log.read_text(errors="replace") if log.exists() else ""
        return "taucluster: caches synced; ready" in (text[len(before):] if text.startswith(before) else text)
    poll.until(ready, 120, "the TauCluster controller started from the copy to be ready", 0.5)


def tidy(k) -> None:
    """Remove what a mutant's run left: its processes, the objects of its tests; wait for the Leases to go."""
    from k8s import heartbeat
    from k8s.keys import DEADLINE_LEASE_PREFIX, DEFAULT_DEADLINE_CLASS, FAKE_CA_LEASE, POOL_LABEL
    from k8s.resources import JOB, NAMESPACE, NODE, PROVREQ, WORKLOAD, Resource
    from k8s import poll
    from scenarios.kit.harness import NS
    for pid in started_from_copy():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for job in k.list(JOB, NS)[0]:
        k.delete(JOB, job["metadata"]["name"], NS, propagation="Foreground")
    for res in (PROVREQ, WORKLOAD):
        for obj in k.list(res, NS)[0]:
            k.delete(res, obj["metadata"]["name"], NS)
    for n in k.list(NODE, label_selector=POOL_LABEL)[0]:
        k.delete(NODE, n["metadata"]["name"], None)
    cluster_scoped = [Resource("flowcontrol.apiserver.k8s.io", "v1", "flowschemas", "FlowSchema", namespaced=False),
                      Resource("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations",
                               "PriorityLevelConfiguration", namespaced=False),
                      Resource("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
                               "ValidatingWebhookConfiguration", namespaced=False)]
    for res in cluster_scoped:
        for obj in k.list(res)[0]:
            if obj["metadata"]["name"].startswith("tau-test-retry-"):
                k.delete(res, obj["metadata"]["name"])
    for ns in k.list(NAMESPACE)[0]:
        if ns["metadata"]["name"].startswith("tau-retry-"):
            k.delete(NAMESPACE, ns["metadata"]["name"])
    leases = (FAKE_CA_LEASE, DEADLINE_LEASE_PREFIX + DEFAULT_DEADLINE_CLASS)
    poll.until(lambda: not any(heartbeat.alive(k, lease) for lease in leases), 60, "the controllers' Leases to go", 1)
    poll.until(lambda: not k.list(JOB, NS)[0] and not k.list(WORKLOAD, NS)[0] and not k.list(PROVREQ, NS)[0]
               and not k.list(NODE, label_selector=POOL_LABEL)[0], 180, "the demo namespace and the pool to empty", 1)


def pytest(tests: list[str], limit: float, log: Path) -> tuple[str, float, str]:
    """Run the tests in the copy: (killed | survived | timeout, seconds, the first failure's line)."""
    env = dict(os.environ, TAU_DEMO_TEST_KEEP_CLUSTER="1", PYTHONDONTWRITEBYTECODE="1", TAU_DEMO_TEST_TIMEOUT="300")
    env.pop("MUTANT_UNDER_TEST", None)
    t0 = time.monotonic()
    with open(log, "w") as out:
        p = subprocess.Popen(["nice", "-n", "10", sys.executable, "-m", "pytest", *PYTEST, *tests], cwd=COPY,
                             env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = p.wait(limit)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            return "timeout", time.monotonic() - t0, f"no verdict within {limit:.0f}s"
    took = time.monotonic() - t0
    text = log.read_text(errors="replace")
    return ("survived" if rc == 0 else "killed"), took, summary_line(text)[:300]


def summary_line(text: str) -> str:
    """pytest's first verdict line ("FAILED tests/…::test - why", "ERROR tests/…"), not a captured log line at level
    ERROR ("ERROR    fake-ca:controller.py:340 loop failed…"), which comes before the summary; "" when there is none."""
    return next((line for line in text.splitlines() if line.startswith(("FAILED tests/", "ERROR tests/"))), "")


# ---------------------------------------------------------------------------- the run

def load() -> dict:
    return json.loads(RESULTS.read_text()) if RESULTS.exists() else {}


def save(results: dict) -> None:
    tmp = RESULTS.with_suffix(".tmp")
    tmp.write_text(json.dumps(results, indent=1, sort_keys=True))
    os.replace(tmp, RESULTS)


def report(results: dict) -> int:
    print(f"[sampled] commit {results.get('commit')}, seed {results.get('seed')}, "
          f"{results.get('per_module')} mutants per module; clean run {results.get('clean_seconds', 0):.0f}s")
    head_ = f"{'module':32}  {'mutants':>7}  {'sampled':>7}  {'killed':>6}  {'timeout':>7}  {'survived':>8}  {'kill rate':>9}"
    print(head_ + "\n" + "-" * len(head_))
    for path in results.get("modules", {}):
        m = results["modules"][path]
        judged = m["judged"]
        count = {s: sum(1 for v in judged.values() if v["status"] == s) for s in ("killed", "timeout", "survived")}
        rate = (count["killed"] + count["timeout"]) / len(judged) * 100 if judged else 0.0
        print(f"{path:32}  {m['mutants']:7d}  {len(judged):7d}  {count['killed']:6d}  {count['timeout']:7d}  "
              f"{count['survived']:8d}  {rate:8.0f}%")
    for path, m in results.get("modules", {}).items():
        for name, v in sorted(m["judged"].items()):
            if v["status"] == "survived":
                print(f"\nsurvived  {name}  ({', '.join(SELECTION[path][0])})")
                for line in v["diff"]:
                    print(f"    {line[:160]}")
    return 0


def judge(path: str, code: str, name: str, tests: list[str], limit: float, st, k) -> tuple[str, float, str, str]:
    """Mutant `name` applied alone in the copy and judged by `tests`: (verdict, seconds, first failure, its source);
    the copy is made whole again and what the run left is removed, whatever happened."""
    from k8s.poll import WaitTimedOut
    source = apply(path, code, name)
    target = COPY / path
    target.write_text(source)
    try:
        try:
            if path in FROM_COPY:
                taucluster_from_copy(st)
        except (WaitTimedOut, subprocess.CalledProcessError) as e:     # the mutant does not start
            return "killed", 0.0, f"its controller did not start: {e}"[:300], source
        return (*pytest(tests, limit, COPY.parent / f"{name}.log"), source)
    finally:
        target.write_text((REPO / path).read_text())
        tidy(k)


@contextlib.contextmanager
def shared_cluster(keep: bool):
    """The one cluster every pytest session of the run finds up; brought up from here, not from the copy (its processes
    are the runner's, never a mutant's), and down at the end whatever happened (unless `keep`)."""
    from demo.cluster import backends
    from demo.cluster.backend import UpOptions
    from demo.cluster.state import State
    from tests.cluster.conftest import BACKEND, NAME
    from k8s.client import Kube
    backends.get(BACKEND).up(NAME, UpOptions())
    try:
        st = State.load(NAME)
        yield st, Kube(st.kubeconfig)
    finally:
        if not keep:
            backends.get(BACKEND).down(NAME)


def run(args) -> int:
    """The sampled run (or, with --again, some of its mutants judged again at HEAD)."""
    from demo.cluster import setup
    modules = args.module or list(SELECTION)
    again: dict[str, list[str]] = {}
    for name in args.again:
        path = next((m for m in SELECTION if name.startswith(module_of(m) + ".")), None)
        if path is None:
            raise SystemExit(f"[sampled] {name}: not a mutant of a module of SELECTION")
        again.setdefault(path, []).append(name)
    if again:
        modules = list(again)
    unknown = [m for m in modules if m not in SELECTION]
    if unknown:
        raise SystemExit(f"[sampled] no cluster tests are chosen for {', '.join(unknown)} (SELECTION)")
    results = load() if (args.resume or again) else {}
    if again and not results:
        raise SystemExit(f"[sampled] --again needs a run to go on with ({RESULTS})")
    commit = head() if again else (results.get("commit") or head())
    if results and not again and results.get("seed") != args.seed:
        raise SystemExit(f"[sampled] the last run sampled with seed {results.get('seed')}: resume with it")
    if not again:
        results.update(commit=commit, seed=args.seed, per_module=args.per_module or "SELECTION's")
    results.setdefault("modules", {})
    make_copy(commit)
    t_all = time.monotonic()
    with shared_cluster(args.keep_cluster) as (st, k):
        try:
            selection = sorted({t for m in modules for t in SELECTION[m][0]})
            if FROM_COPY & set(modules):
                taucluster_from_copy(st)
            if again:       # the unmutated code's verdict on these tests: CI's cluster stage (and its time, the run's)
                clean = results["clean_seconds"]
            else:
                print(f"[sampled] commit {commit}: the unmutated copy against {', '.join(selection)}", flush=True)
                status, clean, first = pytest(selection, 3 * 3600, OUT / "clean.log")
                if status != "survived":
                    raise SystemExit(f"[sampled] the unmutated code fails its cluster tests ({first}); "
                                     f"see {OUT / 'clean.log'}")
                results["clean_seconds"] = clean
                save(results)
            for path in modules:
                code, names = mutants_of(path)
                tests, size = SELECTION[path]
                rng = random.Random(f"{args.seed}:{path}")      # per module: the same sample with or without --module
                sample = again.get(path) or sorted(rng.sample(sorted(names), min(args.per_module or size, len(names))))
                m = results["modules"].setdefault(path, {"mutants": len(names), "judged": {}})
                m["mutants"] = len(names)
                limit = max(2 * clean, clean + 300)         # a hung test fails after 300 s before that
                for n, name in enumerate(sample, 1):
                    if name in m["judged"] and not again:
                        continue
                    if again:       # by its change: an edit of its function since the run renumbers its mutants
                        was = m["judged"].get(name)
                        now = was and today(path, code, names, name, was["diff"])
                        if not now:
                            raise SystemExit(f"[sampled] {name}: " + (f"no mutant of {commit} makes its recorded change"
                                                                      if was else "not judged by the last run"))
                        if now != name and now in m["judged"]:
                            raise SystemExit(f"[sampled] {name} is {now} today, a name the run gave another mutant: "
                                             f"sample again")
                    else:
                        now = name
                    status, took, first, source = judge(path, code, now, tests, limit, st, k)
                    m["judged"].pop(name, None)         # the verdict of today's code, under today's name
                    m["judged"][now] = {"status": status, "seconds": round(took), "first": first,
                                        "diff": diff(path, source), "commit": commit}
                    name = now
                    save(results)
                    print(f"[sampled] {path} {n}/{len(sample)} {name}: {status} in {took:.0f}s {first}", flush=True)
                if path in FROM_COPY:
                    setup.start_controller(st)       # the runner's own again (tidy killed the copy's)
        finally:
            results["seconds"] = results.get("seconds", 0) + (time.monotonic() - t_all)
            save(results)
    return report(results)


def gate(turn: int | None) -> int:
    """CI's gate over RECORD (the module docstring says what it checks), in a copy of its own (a sampled run in the
    same repository keeps its copy and its results)."""
    from demo.cluster import setup
    from tests.mutation.report import read_equivalents
    global COPY
    COPY = OUT / "gate" / "src"
    record = json.loads(RECORD.read_text())
    equivalents = read_equivalents(EQUIVALENTS)
    commit = head()
    turn = int(subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout) if turn is None else turn
    failures = [f"equivalents: {p}" for p in equivalence_problems(record, equivalents)]
    print(f"[sampled gate] the record: seed {record['seed']}, {record['per_module']} mutants per module, "
          f"run at {record['commit']}; the floor {FLOOR:.0f}% killed, equivalents left out")
    for path, (killed, judged, rate) in rates(record, equivalents).items():
        print(f"[sampled gate]   {path}: {killed} of {judged} killed ({rate:.0f}%)")
        if rate < FLOOR:
            failures.append(f"{path}: {rate:.0f}% of its recorded mutants killed, under {FLOOR:.0f}%")
    # which recorded mutants today's code still makes
    codes, now = {}, {}
    for path, m in record["modules"].items():
        code, names = codes[path] = mutants_of(path)
        gone = []
        for name, v in m["judged"].items():
            now[name] = today(path, code, names, name, v["diff"])
            if now[name] is None:
                gone.append(name)
        for name in gone:
            change = " / ".join(m["judged"][name]["diff"])[:160]
            print(f"[sampled gate]   gone: {name} (no mutant of {commit} makes its change: {change})")
        if len(gone) > STALE * len(m["judged"]):
            failures.append(f"{path}: {len(gone)} of its {len(m['judged'])} recorded mutants are gone: the record is "
                            f"stale; run the sample again (docs/testing.md) and --record it")
    chosen = [(path, name) for path, name in turn_of(record, turn) if now.get(name)]
    if not chosen:
        failures.append("no recorded kill to judge again")
    make_copy(commit)
    with shared_cluster(False) as (st, k):
        killers = [record["modules"][path]["judged"][name]["killer"] for path, name in chosen]
        if any(path in FROM_COPY for path, _ in chosen):
            taucluster_from_copy(st)
        print(f"[sampled gate] turn {turn}: the unmutated copy against the killing tests of "
              f"{', '.join(name for _, name in chosen)}", flush=True)
        status, clean, first = pytest(sorted(set(killers)), 1800, OUT / "gate" / "clean.log")
        said = "passed" if status == "survived" else status
        print(f"[sampled gate]   unmutated: {said} in {clean:.0f}s {first[:160]}", flush=True)
        if status != "survived":
            failures.append(f"the unmutated code fails the killing tests ({first}): nothing can be judged; "
                            f"see {OUT / 'gate' / 'clean.log'}")
            chosen = []
        for (path, name), test in zip(chosen, killers):
            v = record["modules"][path]["judged"][name]
            status, took, first, _ = judge(path, codes[path][0], now[name], [test], 2 * v["seconds"] + 120, st, k)
            said = f"{name}" + (f" (today {now[name]})" if now[name] != name else "")
            print(f"[sampled gate]   {said}: {status} in {took:.0f}s by {test} {first[:160]}", flush=True)
            if status == "survived":        # alone; in the run its tests ran in order before it: judged so again
                tests = SELECTION[path][0]
                status, took, first, _ = judge(path, codes[path][0], now[name], tests, 1800, st, k)
                print(f"[sampled gate]   {said}: {status} in {took:.0f}s by the module's tests in order "
                      f"({', '.join(tests)}) {first[:160]}", flush=True)
            if path in FROM_COPY:
                setup.start_controller(st)       # the runner's own again (tidy killed the copy's)
            if status == "survived":
                failures.append(f"{said} was killed by {test} at {v['commit']} and now survives its module's tests: "
                                f"a check was weakened or lost; its change: {' / '.join(v['diff'])[:300]}")
    for f in failures:
        print(f"[sampled gate] FAILED: {f}")
    print(f"[sampled gate] {'failed' if failures else 'passed'}")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--per-module", type=int, help="mutants sampled per module (default: SELECTION's)")
    ap.add_argument("--seed", type=int, default=1, help="the sample's random seed (default 1)")
    ap.add_argument("--module", action="append", default=[], metavar="PATH", help="only this module (repeatable)")
    ap.add_argument("--resume", action="store_true",
                    help="go on with the last run: its commit, keeping the mutants it judged")
    ap.add_argument("--again", nargs="+", default=[], metavar="NAME",
                    help="judge these mutants of the last run again at HEAD (after a check was added for them)")
    ap.add_argument("--keep-cluster", action="store_true", help="leave the shared cluster up at the end")
    ap.add_argument("--report", action="store_true", help="only print the table of the last run")
    ap.add_argument("--record", action="store_true", help=f"write the last run's verdicts into {RECORD.name}")
    ap.add_argument("--gate", action="store_true", help="CI's gate over the record (./test.sh --sampled)")
    ap.add_argument("--turn", type=int, help="with --gate: which recorded kills to judge (default: the commit count)")
    args = ap.parse_args(argv)
    if args.report:
        return report(load())
    if args.record:
        RECORD.write_text(json.dumps(record_of(load()), indent=1) + "\n")
        print(f"[sampled] {RECORD.relative_to(REPO)} written from {RESULTS.relative_to(REPO)}")
        return report(load())
    if not os.environ.get("TAU_DEMO_STATE"):
        raise SystemExit("[sampled] set TAU_DEMO_STATE to a state directory of its own (the shared cluster lives there)")
    os.chdir(REPO)
    OUT.mkdir(exist_ok=True)
    return gate(args.turn) if args.gate else run(args)


if __name__ == "__main__":
    sys.exit(main())
