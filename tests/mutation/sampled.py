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

Needs TAU_DEMO_STATE (a state directory of its own, as for the cluster tests).  Not run by .ci/run (hours);
docs/testing.md has the last run's kill rates, the command and the commit.  Results: mutants-sampled/.
"""

from __future__ import annotations

import argparse
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
                                     f"{FAULTS}[deadline]"],
                                    20),
    "demo/taucluster/controller.py": (["tests/cluster/test_taucluster.py"], 12),
    "k8s/client.py": (["tests/cluster/test_client_retry.py", "tests/cluster/test_deadline_controller.py"], 20),
    "fake_ca/controller.py": (["tests/cluster/test_fake_ca.py", f"{FAULTS}[fake-ca]",
                               "tests/cluster/test_faults.py::"
                               "test_the_fakes_loop_meets_a_dead_apiserver_says_so_and_a_later_loop_ends_the_scale_up"],
                              12),
    "k8s/runtime.py": (["tests/cluster/test_deadline_controller.py", "tests/cluster/test_fake_ca.py"], 12),
}
PYTEST = ["-q", "-p", "no:cacheprovider", "-x"]
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


def apply(path: str, mutated_code: str, name: str) -> str:
    """The module's source with only mutant `name` applied (as `mutmut apply`, but minding the class)."""
    import libcst as cst
    from mutmut.utils.format_utils import orig_function_and_class_names_from_key
    function, class_name = orig_function_and_class_names_from_key(name)
    function = function.rpartition(".")[2]
    orig = cst.parse_module((REPO / path).read_text())
    generated = name.rpartition(".")[2]
    mutant = _function(cst.parse_module(mutated_code), generated, class_name).with_changes(name=cst.Name(function))
    return orig.deep_replace(_function(orig, function, class_name), mutant).code


def diff(path: str, source: str) -> list[str]:
    import difflib
    return [line for line in difflib.unified_diff((REPO / path).read_text().splitlines(), source.splitlines(),
                                                  lineterm="", n=0)
            if line[:1] in "+-" and line[:3] not in ("+++", "---")]


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
    first = next((line for line in text.splitlines() if line.startswith(("FAILED", "ERROR"))), "")
    return ("survived" if rc == 0 else "killed"), took, first[:300]


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--per-module", type=int, help="mutants sampled per module (default: SELECTION's)")
    ap.add_argument("--seed", type=int, default=1, help="the sample's random seed (default 1)")
    ap.add_argument("--module", action="append", default=[], metavar="PATH", help="only this module (repeatable)")
    ap.add_argument("--resume", action="store_true",
                    help="go on with the last run: its commit, keeping the mutants it judged")
    ap.add_argument("--keep-cluster", action="store_true", help="leave the shared cluster up at the end")
    ap.add_argument("--report", action="store_true", help="only print the table of the last run")
    args = ap.parse_args(argv)
    if args.report:
        return report(load())
    if not os.environ.get("TAU_DEMO_STATE"):
        raise SystemExit("[sampled] set TAU_DEMO_STATE to a state directory of its own (the shared cluster lives there)")
    modules = args.module or list(SELECTION)
    unknown = [m for m in modules if m not in SELECTION]
    if unknown:
        raise SystemExit(f"[sampled] no cluster tests are chosen for {', '.join(unknown)} (SELECTION)")
    os.chdir(REPO)
    OUT.mkdir(exist_ok=True)
    results = load() if args.resume else {}
    commit = results.get("commit") or head()
    if results and results.get("seed") != args.seed:
        raise SystemExit(f"[sampled] the last run sampled with seed {results.get('seed')}: resume with it")
    results.update(commit=commit, seed=args.seed, per_module=args.per_module or "SELECTION's")
    results.setdefault("modules", {})
    make_copy(commit)
    # the cluster is brought up from here, not from the copy: its processes are the runner's, never the mutants'
    from demo.cluster import backends
    from demo.cluster.backend import UpOptions
    from tests.cluster.conftest import BACKEND, NAME
    from demo.cluster.state import State
    from demo.cluster import setup
    from k8s.client import Kube
    from k8s.poll import WaitTimedOut
    t_all = time.monotonic()
    backends.get(BACKEND).up(NAME, UpOptions())
    try:        # from here on, whatever happens, the shared cluster comes down at the end (unless --keep-cluster)
        selection = sorted({t for m in modules for t in SELECTION[m][0]})
        st = State.load(NAME)
        if FROM_COPY & set(modules):
            taucluster_from_copy(st)
        print(f"[sampled] commit {commit}: the unmutated copy against {', '.join(selection)} "
              f"(brings the shared cluster up)", flush=True)
        status, clean, first = pytest(selection, 3 * 3600, OUT / "clean.log")
        if status != "survived":
            raise SystemExit(f"[sampled] the unmutated code fails its cluster tests ({first}); "
                             f"see {OUT / 'clean.log'}")
        results["clean_seconds"] = clean
        save(results)
        k = Kube(st.kubeconfig)
        for path in modules:
            code, names = mutants_of(path)
            tests, size = SELECTION[path]
            rng = random.Random(f"{args.seed}:{path}")      # per module: the same sample with or without --module
            sample = sorted(rng.sample(sorted(names), min(args.per_module or size, len(names))))
            m = results["modules"].setdefault(path, {"mutants": len(names), "judged": {}})
            m["mutants"] = len(names)
            limit = max(2 * clean, clean + 300)         # a hung test fails after 300 s before that
            for n, name in enumerate(sample, 1):
                if name in m["judged"]:
                    continue
                source = apply(path, code, name)
                target = COPY / path
                target.write_text(source)
                try:
                    try:
                        if path in FROM_COPY:
                            taucluster_from_copy(st)
                    except (WaitTimedOut, subprocess.CalledProcessError) as e:     # the mutant does not start
                        status, took, first = "killed", 0.0, f"its controller did not start: {e}"[:300]
                    else:
                        status, took, first = pytest(tests, limit, OUT / f"{name}.log")
                finally:
                    target.write_text((REPO / path).read_text())
                    tidy(k)
                m["judged"][name] = {"status": status, "seconds": round(took), "first": first, "diff": diff(path, source)}
                save(results)
                print(f"[sampled] {path} {n}/{len(sample)} {name}: {status} in {took:.0f}s {first}", flush=True)
            if path in FROM_COPY:
                setup.start_controller(st)       # the runner's own again (tidy killed the copy's)
    finally:
        results["seconds"] = results.get("seconds", 0) + (time.monotonic() - t_all)
        save(results)
        if not args.keep_cluster:
            backends.get(BACKEND).down(NAME)
    return report(results)


if __name__ == "__main__":
    sys.exit(main())
