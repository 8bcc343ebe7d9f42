"""Bad inputs: each one gets a message naming the problem, an exit code that means something
(1 invalid or failed, 2 usage or can never fit), and nothing is created or written.

No cluster: a "cluster that is down" is a kubeconfig pointing at a closed port.  What only the API can
tell (a Job name taken, a Job or a namespace that does not exist, a pool table left behind, a name race
lost) is in tests/cluster/test_bad_input_cluster.py, against the real cluster; here are the decisions taken
on what was read (submit_refusal.refusal, submit_refusal.create_refused, preflight.decide), on plain data recorded from
the real cluster.
"""

from __future__ import annotations

import copy
import json
import os
import socket
import stat
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import cli.jobs as cli_jobs
from cli import main
from demo.jobs.preflight import Gang, PoolSource, PoolsFrom, PreflightInputs, decide, pool_source
from demo.jobs.submit_refusal import create_refused, refusal
from k8s.errors import ApiError, Conflict, Invalid, NotFound, from_response
from k8s.keys import FAKE_CA_LEASE, PROFILE, QUEUE_LABEL, REAL_CA_LEASE, SLOT_PREFIX
from k8s.paths import POOLS_FILE as POOLS_PATH
from demo.realca import coexist
from demo.timeline.log import EventLog, read
from k8s.pools import load_pools, pools_to_configmap

HERE = Path(__file__).parent
REPO = HERE.parents[1]
REC = {d["kind"]: d for d in yaml.safe_load_all((HERE / "recorded" / "queue-objects.yaml").read_text())}
GOOD_LOG = ('{"t": 1, "lane": "Job", "state": "suspended", "detail": ""}\n'
            '{"t": 2, "marker": "deadline"}\n'
            '{"t": 3, "lane": "Job", "state": "running", "detail": ""}\n')


def run(*args, env=None):
    r = CliRunner().invoke(main, list(args), env=env)
    assert "Traceback" not in r.output, r.output
    assert not isinstance(r.exception, Exception) or isinstance(r.exception, SystemExit), repr(r.exception)
    return r


def files(d: Path) -> set[str]:
    return {str(p.relative_to(d)) for p in d.rglob("*")}


@pytest.fixture
def closed_port_kubeconfig(tmp_path):
    """A kubeconfig for a cluster that is down: nothing listens on its port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kc = tmp_path / "kubeconfig"
    kc.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "https://127.0.0.1:{port}", insecure-skip-tls-verify: true}}}}]
users: [{{name: u, user: {{token: x}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
""")
    return str(kc)


# ============================================================================ tau-demo report

def test_report_refuses_a_file_that_is_not_an_event_log(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("hello world\nthis is no event log\n")
    r = run("report", str(notes))
    assert r.exit_code == 1
    assert f"{notes}:1: not a JSON line" in r.output and "is not a tau-demo event log" in r.output
    assert "nothing was written" in r.output
    assert files(tmp_path) == {"notes.txt"}


def test_report_refuses_a_one_line_file_that_is_not_json(tmp_path):
    """A lone unparsable line is not "a log whose writer was killed mid-line": it is no log."""
    notes = tmp_path / "notes.txt"
    notes.write_text("hello world")
    r = run("report", str(notes))
    assert r.exit_code == 1 and ":1: not a JSON line" in r.output
    assert files(tmp_path) == {"notes.txt"}


@pytest.mark.parametrize("line,why", [
    ('{"name": "x", "version": 1}', 'no numeric "t"'),
    ('{"t": "soon", "lane": "Job", "state": "x"}', 'no numeric "t"'),
    ('{"t": 1, "lane": "Job"}', "lane 'Job' has no \"state\" string"),
    ('{"t": 1, "something": "else"}', "neither a lane state"),
    ('[1, 2, 3]', "expected a JSON object, got list"),
    ('{"t": 1, "marker": 7}', '"marker" is not a string'),
])
def test_report_refuses_json_lines_that_are_not_events(tmp_path, line, why):
    log = tmp_path / "other.jsonl"
    log.write_text(GOOD_LOG + line + "\n" + GOOD_LOG)
    r = run("report", str(log))
    assert r.exit_code == 1
    assert f"{log}:4: not an event: {why}" in r.output
    assert files(tmp_path) == {"other.jsonl"}


def test_report_refuses_a_garbage_line_in_the_middle(tmp_path):
    log = tmp_path / "ev.jsonl"
    log.write_text(GOOD_LOG + "\x00garbage\n" + GOOD_LOG)
    r = run("report", str(log))
    assert r.exit_code == 1 and f"{log}:4: not a JSON line" in r.output
    assert files(tmp_path) == {"ev.jsonl"}


def test_report_refuses_an_empty_log(tmp_path):
    log = tmp_path / "ev.jsonl"
    log.write_text("\n\n")
    r = run("report", str(log))
    assert r.exit_code == 1 and "holds no events" in r.output and "nothing was written" in r.output
    assert files(tmp_path) == {"ev.jsonl"}


def test_report_refuses_a_binary_file(tmp_path):
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00")
    r = run("report", str(blob))
    assert r.exit_code == 1 and "not a text file" in r.output
    assert files(tmp_path) == {"blob.bin"}


def test_report_draws_a_log_whose_last_line_was_cut_by_a_killed_writer(tmp_path):
    log = tmp_path / "ev.jsonl"
    log.write_text(GOOD_LOG + '{"t": 4, "lane": "Job", "sta')
    r = run("report", str(log))
    assert r.exit_code == 0, r.output
    assert (tmp_path / "ev.svg").read_text().startswith("<svg")


def test_report_into_a_missing_directory_writes_nothing(tmp_path):
    log = tmp_path / "ev.jsonl"
    log.write_text(GOOD_LOG)
    r = run("report", str(log), "-o", str(tmp_path / "missing" / "pic.svg"))
    assert r.exit_code == 2
    assert f"directory '{tmp_path / 'missing'}' does not exist" in r.output
    assert files(tmp_path) == {"ev.jsonl"}


def test_report_never_overwrites_its_own_event_log(tmp_path):
    log = tmp_path / "ev.jsonl"
    log.write_text(GOOD_LOG)
    r = run("report", str(log), "-o", str(log))
    assert r.exit_code == 2 and "is the event log itself" in r.output
    assert log.read_text() == GOOD_LOG


def test_report_of_a_missing_file(tmp_path):
    r = run("report", str(tmp_path / "nope.jsonl"))
    assert r.exit_code == 2 and "does not exist" in r.output
    assert files(tmp_path) == set()


def test_report_default_output_replaces_only_the_suffix(tmp_path):
    d = tmp_path / "runs.d"
    d.mkdir()
    (d / "ev.jsonl").write_text(GOOD_LOG)
    r = run("report", str(d / "ev.jsonl"))
    assert r.exit_code == 0 and (d / "ev.svg").exists()


def test_an_event_log_continued_after_a_cut_line_stays_readable(tmp_path):
    log = tmp_path / "ev.jsonl"
    log.write_text(GOOD_LOG + '{"t": 4, "lane": "Job", "sta')
    EventLog(log).record("Job", "succeeded", t=5.0)
    assert [e.get("state") for e in read(log)] == ["suspended", None, "running", "succeeded"]


def test_an_event_log_without_its_last_newline_keeps_its_last_event(tmp_path):
    log = tmp_path / "ev.jsonl"
    log.write_text(GOOD_LOG.rstrip("\n"))
    EventLog(log).record("Job", "succeeded", t=5.0)
    assert [e.get("state") for e in read(log)] == ["suspended", None, "running", "succeeded"]


# ============================================================================ tau-demo watch

# A Job that does not exist (given up on after --grace, or waited for with --wait until --timeout) and a
# namespace that does not exist are told by the API: tests/cluster/test_bad_input_cluster.py.

def test_watch_grace_period_is_short_by_default():
    params = {p.name: p for p in cli_jobs.watch_cmd.params}
    assert params["grace"].default == "10s" and params["timeout"].default == "10m"


@pytest.mark.parametrize("args,needle", [
    (["--timeout", "garbage"], "Invalid value for '--timeout': 'garbage' is not a duration"),
    (["--timeout", "-1s"], "is not a duration"),
    (["--grace", "soon"], "Invalid value for '--grace': 'soon' is not a duration"),
    (["--until", "forever"], "Invalid value for '--until'"),
])
def test_watch_bad_options(args, needle):
    r = run("watch", "job-x", *args)
    assert r.exit_code == 2 and needle in r.output


def test_watch_of_a_name_no_job_can_have():
    r = run("watch", "Job_X")
    assert r.exit_code == 2 and "'Job_X' is not a valid Job name" in r.output


def test_watch_never_appends_events_to_a_file_that_is_not_an_event_log(tmp_path, closed_port_kubeconfig):
    """Refused before the cluster is asked anything: with a cluster that is down, no "did not answer"."""
    notes = tmp_path / "README.md"
    notes.write_text("# notes\n\nsome text\n")
    r = run("watch", "job-x", "--events", str(notes), "--grace", "0s", "--kubeconfig", closed_port_kubeconfig)
    assert r.exit_code == 1
    assert f"--events {notes}: {notes}:1: not a JSON line" in r.output and "not appending" in r.output
    assert "did not answer" not in r.output
    assert notes.read_text() == "# notes\n\nsome text\n"


# ============================================================================ tau-demo submit / preflight

@pytest.mark.parametrize("gang,needle", [
    ("2x0", "pods of 0 GPUs ask for no GPU capacity, so there is nothing to provision"),
    ("0x8", "a gang of 0 pods runs nothing"),
    ("2x65", "at most 1000 pods of at most 64 GPUs each"),
    ("1001x8", "at most 1000 pods of at most 64 GPUs each"),
    ("2by8", "expected PODSxGPUS, e.g. 2x8"),
    ("-2x8", "expected PODSxGPUS"),
])
def test_submit_and_preflight_refuse_a_bad_gang(gang, needle):
    for cmd in (["submit", "--dry-run"], ["preflight"]):
        r = run(*cmd, "--gang", gang)
        assert r.exit_code == 2, (cmd, r.output)
        assert f"Invalid value for '--gang': --gang '{gang}'" in r.output and needle in r.output


@pytest.mark.parametrize("deadline,needle", [
    ("0s", "'0s' is a deadline that has already passed"),
    ("0", "'0' is a deadline that has already passed"),
    ("0m0s", "already passed"),
    ("-5s", "'-5s' is negative: a deadline in the past"),
    ("-90", "is negative"),
    ("2020-01-01T00:00:00Z", "is a time; the admission deadline is a duration counted from submission"),
    ("yesterday", "'yesterday' is not a duration"),
])
def test_submit_refuses_a_deadline_in_the_past(deadline, needle):
    r = run("submit", "--deadline", deadline, "--dry-run")
    assert r.exit_code == 2
    assert "Invalid value for '--deadline'" in r.output and needle in r.output
    assert "apiVersion" not in r.output          # nothing rendered


@pytest.mark.parametrize("opt,value,what", [
    ("--name", "Job_Train", "Job name"),
    ("--name", "job.train", "Job name"),
    ("--name", "-job", "Job name"),
    ("--name", "j" * 64, "Job name"),
    ("--namespace", "Demo", "namespace name"),
    ("--profile", "gpu_a100", "profile name (a LocalQueue)"),
    ("--profile", "", "profile name (a LocalQueue)"),
    ("--profile", "q" * 64, "profile name (a LocalQueue)"),
])
def test_submit_refuses_names_the_api_would_refuse(opt, value, what):
    r = run("submit", opt, value, "--dry-run")
    assert r.exit_code == 2
    assert f"{value!r} is not a valid {what}" in r.output
    assert "apiVersion" not in r.output


def test_submit_refuses_a_provreq_parameter_that_is_no_annotation_key():
    r = run("submit", "--provreq", "bad/key=1", "--dry-run")
    assert r.exit_code == 2 and "'bad/key' cannot be a ProvisioningRequest parameter" in r.output


def test_preflight_and_submit_share_one_default_profile():
    defaults = {cmd.name: {p.name: p.default for p in cmd.params}["profile"]
                for cmd in (cli_jobs.preflight_cmd, cli_jobs.submit_cmd)}
    assert defaults == {"preflight": PROFILE, "submit": PROFILE}
    r = run("submit", "--dry-run")
    assert yaml.safe_load(r.output)["metadata"]["labels"][QUEUE_LABEL] == PROFILE


# What submit says when it creates nothing.  That it really creates nothing (a name taken, a namespace that
# does not exist, a gang preflight refuses, a name race lost between its check and its create) is shown on
# the real cluster: tests/cluster/test_bad_input_cluster.py.  Here, the decisions on what it read.

REFUSALS = {r["status"]: r["body"] for r in
            yaml.safe_load((HERE / "recorded" / "job-create-refusals.yaml").read_text())}


def recorded_error(status: int):
    """The API's refusal of a Job create, as k8s.client raises it, from the body the real cluster sent."""
    return from_response(status, json.dumps(REFUSALS[status]).encode())


def test_submit_with_a_duplicate_job_name_creates_nothing():
    why = refusal("demo", "job-train-1", namespace_exists=True, job_exists=True)
    assert why.startswith("a Job named demo/job-train-1 already exists; nothing was created")
    assert "kubectl delete job -n demo job-train-1" in why


def test_submit_into_a_namespace_that_does_not_exist():
    why = refusal("nosuch", "job-x", namespace_exists=False, job_exists=False)
    assert why.startswith("namespace 'nosuch' does not exist; nothing was created")
    assert "kubectl get localqueues -A" in why


def test_submit_goes_on_when_the_namespace_cannot_be_read():
    """Forbidden to read namespaces (None) is no refusal: the create itself will tell."""
    assert refusal("demo", "job-x", namespace_exists=None, job_exists=False) is None
    assert refusal("demo", "job-x", namespace_exists=True, job_exists=False) is None


def test_submit_losing_a_name_race_says_the_same():
    """The Job created between submit's check and its create: the apiserver's 409 AlreadyExists."""
    e = recorded_error(409)
    assert isinstance(e, Conflict) and e.reason == "AlreadyExists"
    assert create_refused(e, "demo", "job-train-1") == refusal("demo", "job-train-1", True, True)


def test_submit_into_a_namespace_deleted_before_the_create_says_so():
    e = recorded_error(404)
    assert isinstance(e, NotFound)
    assert create_refused(e, "nosuch", "job-train-1") == refusal("nosuch", "job-train-1", False, False)


def test_submit_refused_by_the_apiserver_gives_its_reason():
    e = recorded_error(422)
    assert isinstance(e, Invalid)
    assert create_refused(e, "demo", "job-train-2") == (
        'the cluster refused the Job: Job.batch "job-train-2" is invalid: spec.parallelism: Invalid value: -1: '
        "must be greater than or equal to 0")



def test_what_submit_says_when_it_creates_nothing_word_for_word():
    assert refusal("demo", "job-x", namespace_exists=True, job_exists=True) == (
        "a Job named demo/job-x already exists; nothing was created. Choose another --name, or delete it first: "
        "kubectl delete job -n demo job-x")
    assert refusal("nosuch", "job-x", namespace_exists=False, job_exists=True) == (
        "namespace 'nosuch' does not exist; nothing was created. The demo's profiles live in 'demo' "
        "(kubectl get localqueues -A)"), "a namespace that does not exist is said first"
    assert refusal("demo", "job-x", namespace_exists=None, job_exists=True).startswith("a Job named demo/job-x")


def test_any_other_refusal_of_the_create_is_the_api_errors_own_words():
    e = recorded_error(422)
    plain = ApiError(e.status, e.reason, e.message)
    assert create_refused(plain, "demo", "job-train-2") == str(plain) == (
        f"422 Invalid: {e.message}"), "no 'the cluster refused the Job' for an error that is not Invalid"

# ---------------------------------------------------------------------------- a kubeconfig for a dead cluster

@pytest.mark.parametrize("args", [
    ["preflight", "--gang", "2x8"],
    ["submit", "--name", "job-x"],
    ["watch", "job-x"],
])
def test_a_cluster_that_is_down_is_reported_at_once(closed_port_kubeconfig, args):
    r = run(*args, "--kubeconfig", closed_port_kubeconfig)
    assert r.exit_code == 1
    assert "did not answer" in r.output and "Connection refused" in r.output


@pytest.mark.parametrize("cmd", [["deadline"], ["fake-ca"], ["real-ca"]])
def test_controllers_refuse_to_start_against_a_cluster_that_is_down(closed_port_kubeconfig, cmd):
    r = run(*cmd, "--kubeconfig", closed_port_kubeconfig)
    assert r.exit_code == 1
    assert "did not answer" in r.output or "cannot reach the cluster" in r.output, r.output
    assert "caches synced" not in r.output


@pytest.mark.parametrize("content,needle", [
    (None, "No configuration found"),
    ("clusters: [\n", "while parsing"),
    ("just a string\n", "not a kubeconfig file"),
    ("apiVersion: v1\nkind: Config\nclusters: 3\n", "not a kubeconfig file"),
])
def test_a_kubeconfig_that_is_missing_or_garbage(tmp_path, content, needle):
    kc = tmp_path / "kc"
    if content is not None:
        kc.write_text(content)
    for args in (["preflight", "--gang", "2x8"], ["deadline"]):
        r = run(*args, "--kubeconfig", str(kc))
        assert r.exit_code == 1, (args, r.output)
        assert f"cannot load kubeconfig {kc}" in r.output and needle in r.output


# ============================================================================ preflight: which pool table

BENCH_TABLE = pools_to_configmap(load_pools(REPO / "bench" / "pools-bench.yaml"))
DEMO_FILE = "manifests/node-pools.yaml"


@pytest.mark.parametrize("alive", [{FAKE_CA_LEASE: True, REAL_CA_LEASE: False},
                                   {FAKE_CA_LEASE: False, REAL_CA_LEASE: True}])
def test_a_running_autoscalers_table_is_trusted(alive):
    assert pool_source(BENCH_TABLE, alive, DEMO_FILE) == PoolSource(PoolsFrom.TABLE, [])


def test_a_table_left_by_an_autoscaler_that_stopped_is_not_trusted():
    s = pool_source(BENCH_TABLE, {FAKE_CA_LEASE: False, REAL_CA_LEASE: False}, DEMO_FILE)
    assert s.use == PoolsFrom.FILE
    assert s.lines == [
        "preflight: no autoscaler is running (heartbeat Leases tau-demo-system/fake-ca and tau-demo-system/real-ca "
        "missing or stale): not trusting the pool table in tau-demo-system/tau-demo-node-pools (what the last one "
        f"published) and checking against {DEMO_FILE}, the pools `tau-demo fake-ca` and `tau-demo real-ca` "
        "publish by default; the job waits in its queue until one runs"]


LEASES = "tau-demo-system/fake-ca and tau-demo-system/real-ca"


def test_no_autoscaler_and_no_table_reads_the_pools_file():
    s = pool_source(None, {FAKE_CA_LEASE: False, REAL_CA_LEASE: False}, DEMO_FILE)
    assert s == PoolSource(PoolsFrom.FILE, [
        f"preflight: no autoscaler is running (heartbeat Leases {LEASES} missing or stale): checking against "
        f"{DEMO_FILE}, the pools `tau-demo fake-ca` and `tau-demo real-ca` publish by default; the job waits "
        "in its queue until one runs"])


def test_a_running_autoscaler_without_a_table_is_not_ready():
    s = pool_source(None, {FAKE_CA_LEASE: True, REAL_CA_LEASE: False}, DEMO_FILE)
    assert s == PoolSource(PoolsFrom.MISSING, ["preflight: the running autoscaler has not published its pool table "
                                     "(tau-demo-system/tau-demo-node-pools) yet; try again in a few seconds"])


def test_unreadable_leases_trust_the_table_and_say_so():
    s = pool_source(BENCH_TABLE, {FAKE_CA_LEASE: None, REAL_CA_LEASE: False}, DEMO_FILE)
    assert s == PoolSource(PoolsFrom.TABLE, [f"preflight: note: cannot read the autoscalers' heartbeat Leases ({LEASES}); "
                                   "trusting the published pool table tau-demo-system/tau-demo-node-pools"])
    assert pool_source(None, {FAKE_CA_LEASE: None, REAL_CA_LEASE: None}, DEMO_FILE) == PoolSource(PoolsFrom.MISSING, [
        "preflight: no pool table published (tau-demo-system/tau-demo-node-pools) and the autoscalers' heartbeat "
        f"Leases ({LEASES}) cannot be read; start one with `tau-demo fake-ca`"])


NO_AUTOSCALER = {FAKE_CA_LEASE: False, REAL_CA_LEASE: False}


def inputs(table, alive, namespace_exists=True) -> PreflightInputs:
    """What observe.preflight_inputs reads, from objects recorded on the real cluster."""
    return PreflightInputs(REC["LocalQueue"], REC["ClusterQueue"], {"gpu-provisioning": REC["AdmissionCheck"]},
                           {"gpu-provisioning": REC["ProvisioningRequestConfig"]}, table, alive,
                           namespace_exists=namespace_exists, flavor=REC["ResourceFlavor"])


def test_after_a_benchmark_preflight_plans_against_the_demo_pools():
    """The issue: bench/provreq_latency.py left its 200-node benchpool table; no autoscaler runs."""
    r = decide(inputs(BENCH_TABLE, NO_AUTOSCALER), PROFILE, Gang(2, 8), "demo", POOLS_PATH)
    assert r.code == 0, r.lines
    assert "not trusting the pool table in tau-demo-system/tau-demo-node-pools" in r.lines[2]
    assert DEMO_FILE in r.lines[2]
    assert r.lines[3] == "preflight: gang needs 2 node(s) of gpupool (max 2): fits"


def test_while_the_benchmarks_autoscaler_runs_its_table_is_what_counts():
    r = decide(inputs(BENCH_TABLE, {FAKE_CA_LEASE: True, REAL_CA_LEASE: False}), PROFILE, Gang(2, 8), "demo",
               POOLS_PATH)
    assert r.code == 2 and "matches no pool (benchpool" in r.lines[-1]


def test_a_malformed_pools_file_fails_preflight_when_it_is_used(tmp_path):
    bad = tmp_path / "pools.yaml"
    bad.write_text("apiVersion: tau-demo.io/v1\nkind: NodePoolList\npools: {}\n")
    r = decide(inputs(None, NO_AUTOSCALER), PROFILE, Gang(2, 8), "demo", bad)
    assert r.code == 1 and r.lines[-1].startswith(f"preflight: the pools file is malformed: {bad}: pools")
    r = decide(inputs(BENCH_TABLE, {FAKE_CA_LEASE: True, REAL_CA_LEASE: None}), PROFILE, Gang(2, 8), "demo",
               bad)
    assert r.code == 2 and "malformed" not in "".join(r.lines)        # a running autoscaler's table is used


def test_a_malformed_published_table_fails_preflight():
    table = copy.deepcopy(BENCH_TABLE)
    table["data"]["pools.yaml"] = "pools: [\n"
    r = decide(inputs(table, {FAKE_CA_LEASE: True, REAL_CA_LEASE: False}), PROFILE, Gang(2, 8), "demo",
               POOLS_PATH)
    assert r.code == 1 and "the published pool table is malformed" in r.lines[-1]


def test_preflight_in_a_namespace_that_does_not_exist():
    r = decide(PreflightInputs(None, None, {}, {}, None, {}, namespace_exists=False), PROFILE, Gang(2, 8),
               "nosuch", POOLS_PATH)
    assert r.code == 1
    assert r.lines == ["preflight: namespace 'nosuch' does not exist; the demo's profiles (LocalQueues) live in "
                       "'demo' (list them: kubectl get localqueues -A)"]


def test_the_fakes_own_status_writes_do_not_look_like_a_real_autoscaler():
    """After the bench's (or any) fake-ca stopped, `tau-demo fake-ca` was refused for a minute: "a real
    Cluster Autoscaler is running: it updated kube-system/cluster-autoscaler-status 7s ago"."""
    now = datetime(2026, 1, 1, 0, 1, 0, tzinfo=timezone.utc)
    fake = {"manager": "fake-ca", "operation": "Apply", "time": "2026-01-01T00:00:53Z"}
    real = {"manager": "cluster-autoscaler", "operation": "Update", "time": "2026-01-01T00:00:30Z"}
    meta = {"creationTimestamp": "2026-01-01T00:00:50Z"}
    assert coexist.status_age({"metadata": {**meta, "managedFields": [fake]}}, now) is None
    assert coexist.status_age({"metadata": {**meta, "managedFields": [real, fake]}}, now) == 30


# ============================================================================ pools files and requests

@pytest.mark.parametrize("content,needle", [
    ("not: [yaml", "invalid YAML"),
    ("apiVersion: v1\nkind: ConfigMap\n", "apiVersion: must be tau-demo.io/v1 (got 'v1')"),
    ("apiVersion: tau-demo.io/v1\nkind: NodePoolList\npools:\n- name: gpupool\n  maxNodes: -1\n", "pools[0]"),
    (None, "cannot read: No such file or directory"),
])
def test_a_malformed_pools_file(tmp_path, content, needle):
    pools = tmp_path / "pools.yaml"
    if content is not None:
        pools.write_text(content)
    r = run("fake-ca", "--pools", str(pools))
    assert r.exit_code == 1 and str(pools) in r.output and needle in r.output
    r = run("fake-ca", "explain", "-f", str(HERE / "fixtures" / "provreq-2x8.yaml"), "--pools", str(pools))
    assert r.exit_code == 1 and str(pools) in r.output and needle in r.output


def test_a_pools_file_with_a_duplicate_pool(tmp_path):
    doc = yaml.safe_load(POOLS_PATH.read_text())
    doc["pools"].append(copy.deepcopy(doc["pools"][0]))
    pools = tmp_path / "pools.yaml"
    pools.write_text(yaml.safe_dump(doc))
    r = run("fake-ca", "explain", "-f", str(HERE / "fixtures" / "provreq-2x8.yaml"), "--pools", str(pools))
    assert r.exit_code == 1 and "duplicate" in r.output and "gpupool" in r.output


def provreq_bundle(node_selector=None, gpus="8", template="t1", ref="t1") -> str:
    return yaml.safe_dump_all([
        {"apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
         "metadata": {"name": "pr1", "namespace": "demo"},
         "spec": {"provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
                  "podSets": [{"podTemplateRef": {"name": ref}, "count": 2}]}},
        {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": template, "namespace": "demo"},
         "template": {"spec": {"nodeSelector": node_selector or {"agentpool": "gpupool"},
                               "tolerations": [{"key": "sku", "operator": "Equal", "value": "gpu",
                                                "effect": "NoSchedule"}],
                               "containers": [{"name": "c", "image": "x",
                                               "resources": {"requests": {"nvidia.com/gpu": gpus},
                                                             "limits": {"nvidia.com/gpu": gpus}}}]}}}])


def test_a_request_for_an_unknown_pool_names_why_it_matches_none(tmp_path):
    f = tmp_path / "pr.yaml"
    f.write_text(provreq_bundle(node_selector={"agentpool": "nosuchpool"}))
    demo_pools = tmp_path / "pools.yaml"           # the demo's own two pools, without the walkthrough slots' copies
    doc = yaml.safe_load(POOLS_PATH.read_text())
    doc["pools"] = [p for p in doc["pools"] if not p["name"].startswith(SLOT_PREFIX)]
    demo_pools.write_text(yaml.safe_dump(doc))
    r = run("fake-ca", "explain", "-f", str(f), "--pools", str(demo_pools))
    assert r.exit_code == 2
    assert ("provreq demo/pr1: does not fit: pod of t1 matches no pool (gpupool: nodeSelector "
            "agentpool=nosuchpool does not match (agentpool=gpupool); ondemand: nodeSelector agentpool=nosuchpool "
            "does not match (agentpool=ondemand))") in r.output


@pytest.mark.parametrize("text,needle", [
    ("kind: [\n", "invalid YAML"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "no ProvisioningRequest found"),
    (provreq_bundle(template="other"), "FailedToCreatePods"),
    ("- 1\n- 2\n", "expected a Kubernetes object, got list"),
])
def test_explain_refuses_what_is_no_provisioning_request(tmp_path, text, needle):
    f = tmp_path / "pr.yaml"
    f.write_text(text)
    r = run("fake-ca", "explain", "-f", str(f))
    assert r.exit_code == 1 and needle in r.output


# ============================================================================ cluster and scenarios

def test_cluster_up_kind_without_docker_says_so_and_creates_nothing(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n")
    docker.chmod(docker.stat().st_mode | stat.S_IXUSR)
    state = tmp_path / "state"
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "TAU_DEMO_STATE": str(state),
           "TAU_DEMO_CACHE": str(tmp_path / "cache")}
    r = run("cluster", "up", "--backend", "kind", "--name", "nodocker", env=env)
    assert r.exit_code == 1
    assert ("the kind backend needs a running Docker engine (`docker info` failed); use --backend kwok on "
            "machines without Docker") in r.output
    assert not state.exists() and not (tmp_path / "cache").exists()


def test_cluster_up_multikueue_on_kind_is_refused_saying_why_and_creates_nothing(tmp_path):
    env = {"TAU_DEMO_STATE": str(tmp_path / "state"), "TAU_DEMO_CACHE": str(tmp_path / "cache")}
    r = run("cluster", "up", "--multikueue", "--backend", "kind", env=env)
    assert r.exit_code == 1
    assert "--multikueue runs on the kwok backend only" in r.output and "docs/multikueue.md" in r.output
    assert "Use `tau-demo cluster up --multikueue --backend kwok`." in r.output
    assert not (tmp_path / "state").exists() and not (tmp_path / "cache").exists()


def test_cluster_up_over_a_cluster_of_the_other_kind_is_refused_and_changes_nothing(tmp_path):
    """A plain `up` over a MultiKueue manager, `--multikueue` over a plain cluster, `up` of a worker by name."""
    clusters = tmp_path / "state" / "clusters"
    for name, role in (("mgr", "manager"), ("plain", ""), ("mgr-worker-1", "worker")):
        (clusters / name).mkdir(parents=True)
        (clusters / name / "cluster.json").write_text(json.dumps(
            {"name": name, "backend": "kwok", "kubeconfig": "/nonexistent", "role": role,
             "workers": ["mgr-worker-1", "mgr-worker-2"] if role == "manager" else []}))
    before = {p: p.read_text() for p in clusters.rglob("*.json")}
    env = {"TAU_DEMO_STATE": str(tmp_path / "state"), "TAU_DEMO_CACHE": str(tmp_path / "cache")}
    for args, says in [(["--name", "mgr"], "cluster mgr is a MultiKueue manager with workers mgr-worker-1, mgr-worker-2"),
                       (["--name", "plain", "--multikueue"], "cluster plain exists without MultiKueue; run "
                                                             "`tau-demo cluster down --name plain` first"),
                       (["--name", "mgr-worker-1"], "cluster mgr-worker-1 is a MultiKueue worker: it comes and goes "
                                                    "with its manager (`tau-demo cluster up/down --name mgr`)"),
                       (["--name", "mgr-worker-1", "--multikueue"], "is a MultiKueue worker")]:
        r = run("cluster", "up", "--backend", "kwok", *args, env=env)
        assert r.exit_code == 1 and says in r.output, (args, r.output)
    (clusters / "plain-worker-2").mkdir()
    (clusters / "plain-worker-2" / "cluster.json").write_text(json.dumps(
        {"name": "plain-worker-2", "backend": "kwok", "kubeconfig": "/nonexistent"}))
    r = run("cluster", "up", "--backend", "kwok", "--name", "plain-worker-2", "--multikueue", env=env)
    assert r.exit_code == 1 and "exists without MultiKueue" in r.output
    (clusters / "plain-worker-2" / "cluster.json").unlink()
    (clusters / "plain-worker-2").rmdir()
    (clusters / "fresh-worker-2").mkdir()
    (clusters / "fresh-worker-2" / "cluster.json").write_text(json.dumps(
        {"name": "fresh-worker-2", "backend": "kwok", "kubeconfig": "/nonexistent"}))
    r = run("cluster", "up", "--backend", "kwok", "--name", "fresh", "--multikueue", env=env)
    assert r.exit_code == 1 and ("a cluster named fresh-worker-2 exists that is not a worker of fresh; run "
                                 "`tau-demo cluster down --name fresh-worker-2` first") in r.output
    assert {p: p.read_text() for p in clusters.rglob("*.json") if "worker-2" not in str(p)} == before
    assert not (tmp_path / "cache").exists()


def test_scenario_run_of_an_unknown_name_lists_the_names():
    r = run("scenario", "run", "nosuch")
    assert r.exit_code == 2
    assert "unknown scenario 'nosuch'" in r.output
    assert "a group (all, success, timeout, race, beyond, gangs, upstream, kueue-specs, taucluster, multikueue)" in r.output
    for name in ("success", "timeout-preflight", "timeout-window", "timeout-deadline", "race-admission-wins",
                 "race-timeout-wins", "race-legacy", "race-interrupted-mirror", "never-boot"):
        assert name in r.output
    msg = r.output[r.output.index("or a scenario"):]
    assert msg.count("success") == 1            # each name once



def test_a_manager_runs_only_the_multikueue_group_and_the_group_runs_only_on_a_manager(tmp_path, monkeypatch):
    from scenarios.kit import runner
    from scenarios.kit.harness import Context
    monkeypatch.setenv("TAU_DEMO_STATE", str(tmp_path))
    kubeconfigs = {}
    for name, role in (("mgr", "manager"), ("plain", "")):
        d = tmp_path / "clusters" / name
        d.mkdir(parents=True)
        kubeconfigs[name] = d / "kubeconfig.yaml"
        kubeconfigs[name].write_text("{}")
        (d / "cluster.json").write_text(json.dumps({"name": name, "backend": "kwok", "kubeconfig": str(kubeconfigs[name]),
                                                    "role": role}))
    manager, plain = Context(None, str(kubeconfigs["mgr"])), Context(None, str(kubeconfigs["plain"]))
    with pytest.raises(runner.NoCluster, match="this cluster is a MultiKueue manager: its ClusterQueue dispatches"):
        runner.check_cluster(manager, ["success", "multikueue-race"])
    with pytest.raises(runner.NoCluster, match=r"the multikueue group runs on a MultiKueue manager and its two workers: "
                                               r"bring them up with `tau-demo cluster up --multikueue`"):
        runner.check_cluster(plain, ["multikueue-race"])
    runner.check_cluster(manager, ["multikueue-race", "multikueue-kueue-specs"])
    runner.check_cluster(plain, ["success", "upstream-3245"])
    runner.check_cluster(Context(None, str(tmp_path / "elsewhere")), ["success"])       # not one of ours: plain


@pytest.mark.parametrize("args, needle", [
    (["--gangs", "0"], "--gangs 0: must be 1..5000"),
    (["--queues", "1", "--pools", "2"], "give at least as many queues as pools"),
    (["--stockout", "7"], "--stockout 7: no such pool"),
    (["--shapes", "2y8"], "expected PODSxGPUS"),
    (["--arrival", "poisson", "--rate", "0"], "--rate 0.0: a Poisson stream needs a rate above 0"),
])
def test_fleet_run_refuses_settings_out_of_range_before_touching_a_cluster(args, needle):
    r = run("fleet", "run", *args, "--plan-only", "--kubeconfig", "/nonexistent/kubeconfig")
    assert r.exit_code == 2 and needle in r.output and "Traceback" not in r.output, r.output


def test_fleet_run_refuses_a_fleet_that_never_fits_and_makes_nothing():
    r = run("fleet", "run", "--gangs", "3", "--shapes", "2x8", "--pool-max", "1", "--kubeconfig", "/nonexistent/kc")
    assert r.exit_code == 2 and "the fleet cannot run, so nothing was made" in r.output, r.output
    assert "holds at most 1 (--pool-max)" in r.output


def test_fleet_commands_on_a_cluster_that_does_not_answer_say_so(closed_port_kubeconfig):
    r = run("fleet", "run", "--gangs", "2", "--kubeconfig", "/nonexistent/kubeconfig")
    assert r.exit_code == 1 and "the cluster does not answer" in r.output and "nothing was made" in r.output, r.output
    r = run("fleet", "run", "--gangs", "2", "--kubeconfig", str(closed_port_kubeconfig))
    assert r.exit_code == 1 and "the cluster does not answer" in r.output, r.output
    r = run("fleet", "clean", "--kubeconfig", "/nonexistent/kubeconfig")
    assert r.exit_code == 1 and "tau-demo fleet clean: cannot load kubeconfig" in r.output, r.output


def test_fleet_pace_refuses_runs_that_are_not_a_real_and_a_fake_run_of_the_same_fleet(tmp_path):
    """The real autoscaler's kwok nodes are Ready at once: its fake is the one run with --boot 0s."""
    spec = {"gangs": 2, "boot": 15.0, "run": 20.0}
    phases = [{"name": "Provisioned", "count": 2, "p50": 10.0, "p95": 20.0, "p99": 20.0}]

    def results(name, autoscaler, **more):
        d = tmp_path / name
        d.mkdir()
        (d / "results.json").write_text(json.dumps({"autoscaler": autoscaler, "gangs": 2, "drain_rate": 1.0,
                                                    "phases": phases, "spec": {**spec, **more}}))
        return str(d)

    real, fake15, fake0 = results("real", "real"), results("fake15", "fake"), results("fake0", "fake", boot=0.0)
    r = run("fleet", "pace", real, fake15)
    assert r.exit_code == 1 and "not runs of the same fleet" in r.output and "--boot 0s" in r.output, r.output
    r = run("fleet", "pace", fake0, real)
    assert r.exit_code == 1 and "not a real and a fake run" in r.output, r.output
    r = run("fleet", "pace", real, fake0)
    assert r.exit_code == 0 and "| yes |" in r.output, r.output
    r = run("fleet", "pace", real)
    assert r.exit_code == 1 and "give the runs in pairs" in r.output, r.output
