"""One real cluster per test run: control plane + real Kueue v0.19.2 + real KWOK.

The cluster is brought up with the same code as `tau-demo cluster up` (state under
$TAU_DEMO_STATE, which test.sh points at a temporary directory) and torn down at the end.
If it cannot be brought up, every cluster test fails with the reason -- never a skip.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import pytest

from demo.cluster import backends, procs
from demo.cluster.backend import UpOptions
from demo.cluster.install import TAUCLUSTER_CRD
from demo.cluster.state import ClusterError
from k8s import heartbeat
from k8s.client import Kube
from k8s.keys import CA_STATUS, DEADLINE_LEASE_PREFIX, DEFAULT_DEADLINE_CLASS, FAKE_CA_LEASE, SYSTEM_NAMESPACE
from k8s.manifests import load_manifest
from k8s.objects import is_true, meta
from k8s.paths import MANIFESTS
from k8s.errors import ApiError
from k8s.resources import CONFIG_MAP, CRD, LEASE, VALIDATING_ADMISSION_POLICY, VALIDATING_ADMISSION_POLICY_BINDING
from k8s.watch import Event
from demo.toolchain import components as toolchain
from demo.toolchain.gobuild import ToolchainError
from scenarios.kit.controllers import DEMO_FAKE_CA, LOG_MESSAGE, ensure_controller, stop_started
from k8s import poll
from scenarios.kit import catalogue, runner
from scenarios.kit.harness import Context, ScenarioFailed

NAME = os.environ.get("TAU_DEMO_TEST_CLUSTER", "tau-test")
BACKEND = os.environ.get("TAU_DEMO_TEST_BACKEND", "kwok")         # kind: on a Docker engine (tests/kind/)
# 1: the session leaves its cluster up for the next run to reuse (`up` finds it running): the sampled
# mutation run of the controllers (tests/mutation/sampled.py) judges every mutant on one cluster.
# Bring it down with `tau-demo cluster down --name tau-test` under the same TAU_DEMO_STATE.
KEEP_CLUSTER = os.environ.get("TAU_DEMO_TEST_KEEP_CLUSTER") == "1"
REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

# pytest-timeout, per cluster test: the first one also brings the session's cluster up.  Unit tests
# keep the default in pyproject.toml; a test may still set its own with @pytest.mark.timeout.
# TAU_DEMO_TEST_TIMEOUT: another limit (the sampled mutation run, on a cluster that is up, takes 300 s).
CLUSTER_TEST_TIMEOUT = int(os.environ.get("TAU_DEMO_TEST_TIMEOUT", "900"))


# Side by side (`./test.sh --shards 3`): the cluster tests run as three pytest sessions at once, each on a cluster of
# its own (its own TAU_DEMO_STATE), by file: SHARD_OF says which session runs a file (unlisted: the first).  Chosen by
# the files' measured times (docs/benchmarks.md) so the three take about as long; a file is never split, so what a
# file's tests share (a module's fixture, a cluster-wide setting it changes) stays in one session.  The two files
# that run the real cluster-autoscaler longest (test_real_ca.py, test_upstream.py) share the first session, so that
# two real CAs never scan at once on two cores (a CI run with them side by side saw the real CA leave a pool
# undrained for 240 s; alone, the same test passed in 133 s).
SHARD = os.environ.get("TAU_DEMO_TEST_SHARD", "")           # "1/3", "2/3" or "3/3"; "" runs every file
SHARDS = 3
SHARD_OF = {"test_fake_ca.py": 2, "test_multikueue.py": 2, "test_faults.py": 2,
            "test_foundation.py": 3,
            "test_kueue_specs.py": 3, "test_scenarios.py": 3, "test_deadline_controller.py": 3, "test_deadline_rule.py": 3, "test_taucluster_crd.py": 3,
            "test_taucluster.py": 2, "test_ui.py": 3, "test_bad_input_cluster.py": 3, "test_client_retry.py": 3,
            "test_interrupts.py": 3}


def in_shard(filename: str, shard: str) -> bool:
    """Does `shard` ("1/3", "2/3", "3/3", or "" for all) run this test file?"""
    if not shard:
        return True
    number, _, of = shard.partition("/")
    if of != str(SHARDS) or number not in {str(i) for i in range(1, SHARDS + 1)}:
        raise pytest.UsageError(f"TAU_DEMO_TEST_SHARD={shard!r}: 1/{SHARDS} to {SHARDS}/{SHARDS}, or empty")
    return SHARD_OF.get(filename, 1) == int(number)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if Path(str(item.fspath)).resolve().is_relative_to(HERE) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(CLUSTER_TEST_TIMEOUT))
    if SHARD:
        keep = [i for i in items if in_shard(Path(str(i.fspath)).name, SHARD)]
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep


def _delete_leftover_kind_cluster() -> None:
    """A kind cluster lives in Docker, not in the state directory: one that a killed test run left under
    the test cluster's name (which belongs to the tests) would make `kind create` refuse."""
    kind = str(toolchain.bin_path("kind"))
    names = subprocess.run([kind, "get", "clusters"], capture_output=True, text=True, timeout=60).stdout.split()
    if NAME in names:
        print(f"\n[cluster] deleting the kind cluster {NAME} left by an earlier test run", file=sys.stderr)
        subprocess.run([kind, "delete", "cluster", "--name", NAME], capture_output=True, timeout=300, check=True)


@pytest.fixture(scope="session")
def demo_cluster():
    if not os.environ.get("TAU_DEMO_STATE"):
        pytest.fail("set TAU_DEMO_STATE (test.sh does) so the tests do not touch your demo cluster")
    t0 = time.monotonic()
    try:
        backend = backends.get(BACKEND)
        toolchain.ensure(backend.toolchain)
        if BACKEND == "kind":
            _delete_leftover_kind_cluster()
        st = backend.up(NAME, UpOptions())
    except (ToolchainError, ClusterError) as e:
        if not KEEP_CLUSTER:         # a kept cluster stays for the next run, which may well bring it up
            backends.get(BACKEND).down(NAME)
        pytest.fail(f"cannot bring the test cluster up: {e}", pytrace=False)
    print(f"\n[cluster] {NAME} up in {time.monotonic() - t0:.1f}s", file=sys.stderr)
    yield st
    if KEEP_CLUSTER:
        return
    backends.get(BACKEND).down(NAME)
    # nothing of the cluster may outlive `cluster down` (a restarted apiserver whose pid kwokctl could not
    # read once did); killed here so that one run does not leak into the next, and reported as an error
    left = procs.running_under(Path(os.environ["TAU_DEMO_STATE"]))
    for pid, _ in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, "cluster down left processes behind: " + "; ".join(f"{pid} {cmd[:160]}" for pid, cmd in left)


@pytest.fixture(scope="session")
def kubeconfig(demo_cluster) -> str:
    return demo_cluster.kubeconfig


@pytest.fixture(scope="session")
def k(kubeconfig) -> Kube:
    return Kube(kubeconfig)


LOGGING_ERROR = "--- Logging error ---"      # what Python's logging prints in place of a line it could not format


def logging_errors(text: str) -> list[str]:
    """The lines a process's log lost: for each of logging's error reports in `text`, its Message and Arguments."""
    out = []
    for block in text.split(LOGGING_ERROR)[1:]:
        said = [line for line in block.splitlines() if line.startswith(("Message: ", "Arguments: "))][:2]
        out.append(" ".join(said) or "(a line it could not write)")
    return out


def tracebacks(text: str) -> list[str]:
    """The exceptions a process logged with their traceback in `text`: each is one it survived (its reconcile,
    k8s.runtime's RECONCILE_FAILED; a watch's handler, k8s.watch; the fake's loop, LOOP_FAILED: the only places that
    log one) or one it died of; each given as the line that said it and the exception the traceback ends with."""
    out, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last):"):
            end = next((j for j in range(i + 1, len(lines)) if LOG_MESSAGE.match(lines[j])), len(lines))
            last = next((x for x in reversed(lines[i + 1:end]) if x.strip()), "(no exception line)")
            said = lines[i - 1] if i and LOG_MESSAGE.match(lines[i - 1]) else "(no line before it)"
            out.append(f"{said} -> {last}")
    return out


class Raised(logging.Handler):
    """The records the project's loggers logged in this process with an exception (what tracebacks() finds in a
    process's log file): the controllers a test runs in its own process.  A library's (aiohttp's of a browser gone
    mid-request) is its own business."""

    OURS = ("k8s", "demo", "fake_ca", "scenarios", "fleet", "cli", "deadline", "taucluster", "fake-ca", "real-ca")

    def __init__(self):
        super().__init__(logging.ERROR)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None and record.name.split(".")[0] in self.OURS:
            e = record.exc_info[1]
            self.seen.append(f"in this process, {record.name}: {record.getMessage()} -> {type(e).__name__}: {e}")


class LogReader:
    """What the log files under a state directory grew by since they were last read.  A file made again under the
    same name (a race's own controller: its log is removed before it starts) is read from its start: it is known by
    its first bytes (each log starts with a time of day), as the inode a removed file had is often given to the next."""

    HEAD = 256

    def __init__(self, root: Path):
        self.root = root
        self.read: dict[Path, tuple[bytes, int]] = {}        # path -> (its first bytes, the offset read up to)

    def files(self) -> list[Path]:
        return sorted(self.root.rglob("*.log")) if self.root.is_dir() else []

    def _take(self, path: Path, text_too: bool = True) -> str | None:
        """What the file holds past its last read (the whole of it when it was made again or shrank), marked read;
        None if it is gone (or not asked for)."""
        try:
            with open(path, "rb") as f:
                head, size = f.read(self.HEAD), os.fstat(f.fileno()).st_size
                if not text_too:
                    self.read[path] = (head, size)
                    return None
                was_head, was = self.read.get(path, (b"", 0))
                start = was if head.startswith(was_head) and len(was_head) <= was <= size else 0
                f.seek(start)
                data = f.read()
        except OSError:
            return None
        self.read[path] = (head, start + len(data))
        return data.decode(errors="replace")

    def skip(self) -> None:
        """Everything written so far counts as read (what earlier sessions in the same state wrote)."""
        for path in self.files():
            self._take(path, text_too=False)

    def grown(self) -> list[tuple[Path, str]]:
        """What each log file was written since the last read."""
        return [(path, text) for path in self.files() if (text := self._take(path))]

    def lost(self) -> list[str]:
        """The lines lost (logging's error reports) in what was written since the last read."""
        return [f"{path.name}: {e}" for path, text in self.grown() for e in logging_errors(text)]


LOGS = LogReader(Path(os.environ.get("TAU_DEMO_STATE") or "/nonexistent"))
LOGS.skip()             # at import, before any fixture of the session: what earlier sessions wrote is theirs


@pytest.fixture(autouse=True)
def every_line_logged(request):
    """After each cluster test: no process under the session's state (the controllers it started, the cluster's
    TauCluster controller, a race's own deadline controllers) lost a log line since the test before it was checked
    (so the first test answers for what the session's fixtures logged at its start), as a process does when a line's
    format does not fit its arguments; and none logged an exception with its traceback (an exception of its own that
    its loop survives and retries: a deadline controller whose 409 branch raised a TypeError, one whose Workload
    handler raised a KeyError, still converged and every test passed, in the sample at 9188f1f; a fake that fails
    every loop still scales, late, in the one at d408381), unless the test takes the apiserver down under it (marker
    `apiserver_down`: as the apiserver starts again it refuses a write 403 until its RBAC is loaded, which fails the
    loop or reconcile that made it).  The controllers a test runs in its own process (its loggers) are held to the
    same: no record with an exception.  What is logged after the last test is checked at the session's end."""
    in_process = Raised()
    logging.getLogger().addHandler(in_process)
    try:
        yield
    finally:
        logging.getLogger().removeHandler(in_process)
    grown = LOGS.grown()
    lost = [f"{path.name}: {e}" for path, text in grown for e in logging_errors(text)]
    assert not lost, "a process lost log lines during this test: " + "; ".join(lost)
    raised = [] if request.node.get_closest_marker("apiserver_down") else \
        [f"{path.name}: {e}" for path, text in grown for e in tracebacks(text)] + in_process.seen
    assert not raised, ("a process logged an exception of its own during this test (its traceback is in its log): "
                        + "; ".join(raised))


def pytest_sessionfinish(session, exitstatus):
    lost = LOGS.lost()
    if lost:
        print("\n[cluster tests] FAILED: a process lost log lines after the last test (the session's teardown): "
              + "; ".join(lost), file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def unique():
    return uuid.uuid4().hex[:5]


def wait_for(pred, timeout=60.0, interval=0.25, what="condition"):
    return poll.until(pred, timeout, what, interval)


def refusing_policy(name: str, group: str, resource: str, operation: str, expression: str, message: str,
                    namespace: str | None = None) -> tuple[dict, dict]:
    """A ValidatingAdmissionPolicy and its Deny binding by which the apiserver refuses each `operation` on `resource`
    for which `expression` is false, with `message`: a real refusal of a controller's write, in the namespace given
    or cluster-wide."""
    policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
              "metadata": {"name": name},
              "spec": {"failurePolicy": "Fail",
                       "matchConstraints": {"resourceRules": [{"apiGroups": [group], "apiVersions": ["*"],
                                                               "operations": [operation], "resources": [resource]}]},
                       "validations": [{"expression": expression, "message": message}]}}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Deny"]}}
    if namespace:
        binding["spec"]["matchResources"] = {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}
    return policy, binding


def refusing_an_added_annotation(name: str, group: str, resource: str, annotation: str, message: str,
                                 namespace: str | None = None) -> tuple[dict, dict]:
    """The policy by which the apiserver refuses any update that adds `annotation` to an object of `resource`."""
    a, old = "object.metadata.annotations", "oldObject.metadata.annotations"
    return refusing_policy(name, group, resource, "UPDATE",
                           f"!has({a}) || !('{annotation}' in {a}) || (has({old}) && '{annotation}' in {old})",
                           message, namespace)


def relist(store, objs) -> None:
    """Hand `objs` to a cache as its Watch delivers a relist: every object LISTED, then SYNCED.  The cache is replaced
    whole and no event handler is called (only its on_sync)."""
    for obj in list(objs):
        store.handle(Event.LISTED, obj)
    store.handle(Event.SYNCED, {})


@contextmanager
def in_force(k: Kube, policy_and_binding: tuple[dict, dict]) -> Iterator[Callable[[Callable[[], object]], None]]:
    """Creates the policy and its binding, deletes both on the way out, and gives a wait for the moment the
    apiserver has loaded it: `loaded(probe)` returns once `probe`, a dry-run write the policy refuses, is refused
    with the policy's message."""
    policy, binding = policy_and_binding
    message = policy["spec"]["validations"][0]["message"]

    def loaded(probe: Callable[[], object]) -> None:
        def refused() -> bool:
            try:
                probe()
            except ApiError as e:
                return message in str(e)
            return False
        wait_for(refused, 30, what=f"the policy {policy['metadata']['name']} to take effect")
    k.create(VALIDATING_ADMISSION_POLICY, policy)
    k.create(VALIDATING_ADMISSION_POLICY_BINDING, binding)
    try:
        yield loaded
    finally:
        k.delete(VALIDATING_ADMISSION_POLICY_BINDING, binding["metadata"]["name"])
        k.delete(VALIDATING_ADMISSION_POLICY, policy["metadata"]["name"])


@pytest.fixture(scope="session")
def taucluster_crd(k) -> str:
    """The TauCluster CRD's name: `cluster up` installs it with the demo's objects; it is Established and not
    being deleted (no test removes it: a CRD that is terminating refuses every create for a while after)."""
    (doc,) = load_manifest(MANIFESTS / TAUCLUSTER_CRD)
    name = doc["metadata"]["name"]
    crd = k.get_or_none(CRD, name)
    assert is_true(crd, "Established") and not meta(crd).get("deletionTimestamp"), \
        f"CRD {name} is not installed and Established by cluster up: {crd and crd.get('status')}"
    return name


HOOK_DIR = Path(os.environ.get("TAU_DEMO_STATE", "/tmp")) / "fake-ca-hooks"


@pytest.fixture(scope="session")
def ctx(k, kubeconfig):
    """A scenario context whose controllers run as their least-privilege ServiceAccounts.
    The session's fake autoscaler books for 8s (not 60s) so booking expiry is testable."""
    HOOK_DIR.mkdir(parents=True, exist_ok=True)
    c = Context(k, kubeconfig, auto=True, out=sys.stdout, impersonate=True,
                runs_dir=Path(os.environ["TAU_DEMO_STATE"]) / "runs",
                extra_args={"fake-ca": ["--booking", "8s", "--hook-dir", str(HOOK_DIR)]})
    ensure_controller(c, FAKE_CA_LEASE, DEMO_FAKE_CA, "fake autoscaler")
    ensure_controller(c, DEADLINE_LEASE_PREFIX + DEFAULT_DEADLINE_CLASS, ["deadline", "--cleanup-ttl", "10s"],
                      "deadline controller")
    SESSION_CTX.append(c)
    yield c
    SESSION_CTX.clear()
    stop_started(c)


SESSION_CTX: list = []


def session_fake(ctx):
    """The fake autoscaler this session started (its Controller: its log, its pid)."""
    fake = next((c for c in ctx.started if c.lease == FAKE_CA_LEASE), None)
    assert fake is not None, "this session started no fake autoscaler"
    return fake


def stopped_cleanly(k) -> None:
    """A fake autoscaler stopped cleanly gave its Lease up before it ended (a Lease left looking alive up to 6 s made the
    next session take a stopped fake as running, and start none), and, like the real autoscaler on SIGTERM, took its
    status ConfigMap with it (the twelfth sample's `run__mutmut_65` deleted it in a namespace named after it, and
    every test passed)."""
    assert k.get_or_none(LEASE, FAKE_CA_LEASE, SYSTEM_NAMESPACE) is None, "the stopped fake left its Lease"
    assert k.get_or_none(CONFIG_MAP, CA_STATUS[1], CA_STATUS[0]) is None, \
        f"the stopped fake left its status ConfigMap {CA_STATUS[0]}/{CA_STATUS[1]}"


@pytest.fixture
def no_autoscaler(k):
    """For tests that play the autoscaler by hand: the session's fake-ca is stopped meanwhile."""
    paused = [c for ctx_ in SESSION_CTX for c in ctx_.started if c.lease == FAKE_CA_LEASE]
    for c in paused:
        c.stop()
        stopped_cleanly(k)
    wait_for(lambda: not heartbeat.alive(k, FAKE_CA_LEASE), 30, what="no fake-ca heartbeat")
    yield
    for c in paused:
        c.start(SESSION_CTX[0].kubeconfig)
        wait_for(lambda: heartbeat.alive(k, FAKE_CA_LEASE), 30, what="fake-ca back")


@pytest.fixture
def own_fake_ca(k, no_autoscaler):
    """Start a fake autoscaler of the test's own with extra flags (the session's is stopped meanwhile)."""
    from scenarios.kit.controllers import start_private
    started = []

    def start(*args: str):
        c = start_private(SESSION_CTX[0], FAKE_CA_LEASE, ["fake-ca", *args], "fake autoscaler (test flags)")
        started.append(c)
        return c
    yield start
    for c in started:
        c.stop()
        SESSION_CTX[0].started.remove(c)
        stopped_cleanly(k)
    wait_for(lambda: not heartbeat.alive(k, FAKE_CA_LEASE), 30, what="the test's fake-ca gone")


def scenario_passes(ctx: Context, name: str) -> None:
    """Run the catalogue's scenario `name` on ctx from no checks at all (an earlier test's, failed, left none to
    read): it must make checks, and each must pass."""
    ctx.checks.clear()
    ctx.verdicts.clear()
    catalogue.by_name()[name].run(ctx)
    failed = [c.what for c in ctx.checks if not c.ok]
    assert ctx.checks and not failed, failed


@pytest.fixture
def clean(ctx):
    """Each test starts and must end with nothing left in the demo namespace and an empty pool.  What a test leaves
    fails it and is then removed (`tau-demo clean`'s sweep), so that the tests after it are not failed for it.  (That
    no controller failed a loop or a reconcile meanwhile, every_line_logged checks.)"""
    assert ctx.leftovers() == [], "a previous test left objects behind"
    yield ctx
    drained = None
    try:
        ctx.wait_pool_empty(120)
    except ScenarioFailed as e:
        drained = str(e)
    left = ctx.leftovers()
    if drained is None and not left:
        return
    removed, still = runner.clean(ctx)
    pytest.fail(f"the test left {left or 'no object'} behind{'; ' + drained if drained else ''}; removed after it: "
                f"{removed or 'nothing'}; still there: {still or 'nothing'}", pytrace=False)
