"""Bad inputs that only the API can tell apart, on the real cluster: a Job name already taken (before the
create, or by a race lost between submit's check and its create), a gang preflight refuses, a Job or a
namespace that does not exist, a pool table left behind by an autoscaler that has stopped, and a malformed
pools file.  Each with its message and exit code, and nothing created or left behind.  The decisions taken
on what was read are unit-tested on recorded objects in tests/unit/test_bad_input.py."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from demo.jobs.preflight import Gang
from demo.jobs.submit import run_preflight
from k8s import heartbeat
from k8s import resources as R
from k8s.keys import (DEMO_NAMESPACE, FAKE_CA_FIELD_MANAGER, FAKE_CA_LEASE, POOL_TABLE, POOL_TABLE_KEY, PROFILE,
                           REAL_CA_LEASE)
from k8s.paths import POOLS_FILE, REPO
from k8s.pools import load_pools, pools_to_configmap
from k8s.tape import Tape

from tests.cluster.conftest import wait_for

pytestmark = pytest.mark.cluster


def tau(kubeconfig: str, *args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *args, "--kubeconfig", kubeconfig], capture_output=True,
                          text=True, cwd=REPO, timeout=timeout)


def plain_job(name: str) -> dict:
    """A suspended Job of the name, without a queue label: nothing queues, provisions or runs it."""
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": DEMO_NAMESPACE},
            "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never",
                                                            "containers": [{"name": "c", "image": "x"}]}}}}


def test_a_job_name_already_taken_is_refused_and_the_job_left_alone(k, kubeconfig, unique):
    name = f"dup-{unique}"
    uid = k.create(R.JOB, plain_job(name), DEMO_NAMESPACE)["metadata"]["uid"]
    try:
        r = tau(kubeconfig, "submit", "--name", name, "--gang", "1x8")
        assert r.returncode == 1, r.stdout + r.stderr
        assert f"a Job named {DEMO_NAMESPACE}/{name} already exists; nothing was created" in r.stderr
        assert f"kubectl delete job -n {DEMO_NAMESPACE} {name}" in r.stderr
        assert "preflight" not in r.stdout            # refused before anything else
        assert k.get(R.JOB, name, DEMO_NAMESPACE)["metadata"]["uid"] == uid
    finally:
        k.delete(R.JOB, name, DEMO_NAMESPACE)


def fill(fd: int) -> int:
    """Fill a pipe to capacity, so that the next write to it blocks; returns the bytes written."""
    os.set_blocking(fd, False)
    n = 0
    for chunk in (4096, 1):
        try:
            while True:
                n += os.write(fd, b"#" * chunk)
        except BlockingIOError:
            pass
    os.set_blocking(fd, True)           # the file description is shared: the CLI's writes must block, not fail
    return n


def blocked_writing_a_pipe(pid: int) -> bool:
    return "pipe_write" in Path(f"/proc/{pid}/wchan").read_text()


def read_to_eof(fd: int, timeout: float) -> bytes:
    out, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline:
        if select.select([fd], [], [], 0.5)[0]:
            chunk = os.read(fd, 65536)
            if not chunk:
                return out
            out += chunk
    raise AssertionError(f"the CLI's stdout still open after {timeout:.0f}s; read so far: {out[-2000:]!r}")


def test_a_name_race_lost_between_the_check_and_the_create_says_the_name_is_taken(k, kubeconfig, ctx, unique):
    """Staged for real, nothing patched: `submit`'s stdout is a pipe the test has filled, so the CLI blocks
    writing its first preflight line -- after it found no Job of that name, before its create.  The test
    creates the Job meanwhile, then drains the pipe: the CLI's create gets the apiserver's 409 AlreadyExists."""
    name = f"race-{unique}"
    r, w = os.pipe()
    filler = fill(w)
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen([sys.executable, "-m", "cli", "submit", "--name", name, "--gang", "2x8",
                              "--kubeconfig", kubeconfig], stdout=w, stderr=err, cwd=REPO)
        os.close(w)
        try:
            wait_for(lambda: p.poll() is not None or blocked_writing_a_pipe(p.pid), 60,
                     what="submit blocked writing its preflight lines")
            assert p.poll() is None, "submit ended before writing to stdout"
            assert k.get_or_none(R.JOB, name, DEMO_NAMESPACE) is None
            uid = k.create(R.JOB, plain_job(name), DEMO_NAMESPACE)["metadata"]["uid"]
            out = read_to_eof(r, 90)[filler:].decode()
            assert p.wait(30) == 1
            err.seek(0)
            stderr = err.read().decode()
            assert "preflight: profile gpu-a100-8 ProvisioningReady=True" in out           # the check had passed
            assert out.rstrip().endswith("preflight: gang needs 2 node(s) of gpupool (max 2): fits"), out
            assert f"a Job named {DEMO_NAMESPACE}/{name} already exists; nothing was created" in stderr, stderr
            assert "Traceback" not in stderr
            assert k.get(R.JOB, name, DEMO_NAMESPACE)["metadata"]["uid"] == uid           # the winner's, untouched
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            os.close(r)
            k.delete(R.JOB, name, DEMO_NAMESPACE)


AFTER = 1.0          # seconds a window of "nothing was created" stays open after the command returned


def watched(k, kinds, namespace: str | None, name: str) -> Tape:
    """A Tape (k8s/tape.py) of every change of objects named `name`: an absence is judged over all it saw, from
    before the command to AFTER seconds after it, never by one read at the end."""
    return Tape(k, kinds, namespace, keep=lambda o: o["metadata"].get("name") == name)


def nothing_seen(tape: Tape) -> list[str]:
    """Once the window has stayed open AFTER seconds, every change the tape saw (none: nothing was made)."""
    end = time.time() + AFTER
    wait_for(lambda: time.time() >= end, AFTER + 5, what="the window to close")
    return [f"{typ} {o.get('kind', '')} {o['metadata'].get('name')}" for _, typ, o in list(tape.changes)]


def test_submit_refused_by_preflight_creates_nothing(k, kubeconfig, ctx, unique):
    name = f"big-{unique}"
    with watched(k, [R.JOB, R.WORKLOAD], DEMO_NAMESPACE, name) as tape:
        r = tau(kubeconfig, "submit", "--name", name, "--gang", "3x8")
        made = nothing_seen(tape)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "preflight: gang needs 3 node(s) of gpupool (max 2): does not fit" in r.stdout
    assert "preflight refused the job; nothing was created" in r.stderr
    assert made == [], f"a Job named {name} was created or changed, watched until {AFTER:g}s after submit: {made}"
    assert k.get_or_none(R.JOB, name, DEMO_NAMESPACE) is None


def test_watch_of_a_job_that_does_not_exist_says_so_after_the_grace_period(kubeconfig, unique):
    t0 = time.monotonic()
    r = tau(kubeconfig, "watch", f"nope-{unique}", "--grace", "2s")
    assert r.returncode == 1
    assert f"job {DEMO_NAMESPACE}/nope-{unique} does not exist (waited 2s)" in r.stderr and "--wait" in r.stderr
    assert f"kubectl get jobs -n {DEMO_NAMESPACE}" in r.stderr
    assert time.monotonic() - t0 < 30


def test_watch_wait_waits_for_the_job_until_the_timeout(kubeconfig, unique):
    t0 = time.monotonic()
    r = tau(kubeconfig, "watch", f"later-{unique}", "--wait", "--grace", "1s", "--timeout", "4s")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "does not exist" not in r.stderr
    assert f"job {DEMO_NAMESPACE}/later-{unique} still " in r.stderr and "after 4s" in r.stderr
    assert time.monotonic() - t0 >= 4               # past --grace, up to --timeout


def test_a_namespace_that_does_not_exist(k, kubeconfig, unique):
    ns = f"nosuch-{unique}"
    t0 = time.monotonic()
    r = tau(kubeconfig, "watch", "job-x", "-n", ns, "--grace", "60s")
    assert r.returncode == 1
    assert f"namespace '{ns}' does not exist, so job {ns}/job-x does not either" in r.stderr
    assert time.monotonic() - t0 < 30               # said at once, not after --grace
    with watched(k, [R.NAMESPACE], None, ns) as tape:
        r = tau(kubeconfig, "submit", "--name", "job-x", "-n", ns, "--no-preflight")
        assert r.returncode == 1 and f"namespace '{ns}' does not exist; nothing was created" in r.stderr
        r = tau(kubeconfig, "preflight", "--gang", "2x8", "-n", ns)
        assert r.returncode == 1 and f"namespace '{ns}' does not exist" in r.stdout
        made = nothing_seen(tape)
    assert made == [], f"namespace {ns} was created, watched until {AFTER:g}s after the commands: {made}"
    assert k.get_or_none(R.NAMESPACE, ns) is None


def test_preflight_does_not_trust_a_pool_table_left_by_an_autoscaler_that_stopped(k, kubeconfig, ctx, own_fake_ca):
    """What bench/provreq_latency.py used to leave: its fake-ca's 200-node benchpool table."""
    c = own_fake_ca("--pools", str(REPO / "bench" / "pools-bench.yaml"))
    try:
        wait_for(lambda: heartbeat.alive(k, FAKE_CA_LEASE), 30, what="the bench pools' fake-ca")
        r = tau(kubeconfig, "preflight", "--gang", "2x8")
        assert r.returncode == 2, r.stdout + r.stderr
        assert "matches no pool (benchpool" in r.stdout         # while it runs, its table is the truth
        c.stop()
        wait_for(lambda: not heartbeat.alive(k, FAKE_CA_LEASE), 30, what="no fake-ca heartbeat")
        table = k.get(R.CONFIG_MAP, POOL_TABLE[1], POOL_TABLE[0])
        assert "benchpool" in table["data"][POOL_TABLE_KEY]
        r = tau(kubeconfig, "preflight", "--gang", "2x8")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "no autoscaler is running" in r.stdout and "not trusting the pool table" in r.stdout
        assert "manifests/node-pools.yaml" in r.stdout
        assert r.stdout.rstrip().endswith("preflight: gang needs 2 node(s) of gpupool (max 2): fits")
    finally:
        k.apply(R.CONFIG_MAP, pools_to_configmap(load_pools(POOLS_FILE)), field_manager=FAKE_CA_FIELD_MANAGER)


def test_a_malformed_pools_file_fails_preflight_when_no_autoscaler_runs(k, ctx, no_autoscaler, tmp_path):
    """run_preflight is what `tau-demo preflight` and `submit` run; the CLI always passes the pools file of
    the repository (manifests/node-pools.yaml), so a malformed one is given here as its parameter."""
    assert not any(heartbeat.alive(k, lease) for lease in (FAKE_CA_LEASE, REAL_CA_LEASE))
    bad = tmp_path / "pools.yaml"
    bad.write_text("apiVersion: tau-demo.io/v1\nkind: NodePoolList\npools: {}\n")
    code, lines = run_preflight(k, PROFILE, Gang(2, 8), DEMO_NAMESPACE, pools_file=bad)
    assert code == 1, lines
    assert "no autoscaler is running" in lines[-2]
    assert lines[-1].startswith(f"preflight: the pools file is malformed: {bad}: pools")
