"""Bad input and missing prerequisites give a clear error and change nothing."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli import main

REPO = Path(__file__).resolve().parents[2]


def tau(*args, env=None):
    return subprocess.run([sys.executable, "-m", "cli", *args], capture_output=True, text=True, cwd=REPO,
                          env=env or dict(os.environ), timeout=120)


@pytest.mark.subprocess
def test_toolchain_without_go_and_without_cache_says_what_to_do(tmp_path):
    env = dict(os.environ, TAU_DEMO_CACHE=str(tmp_path / "empty-cache"),
               PATH=os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                    if not (Path(p) / "go").exists()))
    r = tau("toolchain", "ensure", env=env)
    assert r.returncode == 1
    assert "Go is not installed" in r.stderr and "Install Go >= 1.26" in r.stderr
    assert "Traceback" not in r.stderr
    r = tau("toolchain", "versions", env=env)
    assert r.returncode == 1 and "run `tau-demo toolchain ensure`" in r.stderr


@pytest.mark.subprocess
def test_cluster_up_with_the_apiserver_port_taken_fails_before_creating_anything(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        env = dict(os.environ, TAU_DEMO_STATE=str(tmp_path / "state"))
        r = tau("cluster", "up", "--backend", "kwok", "--name", "port-test", "--apiserver-port", str(port), env=env)
    assert r.returncode == 1
    assert f"apiserver port {port} is already in use" in r.stderr
    assert "--apiserver-port" in r.stderr
    assert not (tmp_path / "state" / "clusters" / "port-test").exists()


@pytest.mark.subprocess
def test_cluster_down_with_nothing_running_succeeds(tmp_path):
    r = tau("cluster", "down", "--name", "nothing-here", env=dict(os.environ, TAU_DEMO_STATE=str(tmp_path)))
    assert r.returncode == 0 and "nothing to do" in r.stdout


@pytest.mark.subprocess
def test_dead_apiserver_is_reported_not_a_traceback(tmp_path):
    kc = tmp_path / "kubeconfig"
    kc.write_text("""apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
""")
    r = tau("preflight", "--profile", "gpu-a100-8", "--gang", "2x8", "--kubeconfig", str(kc))
    assert r.returncode == 1
    assert "did not answer" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("args,needle", [
    (["submit", "--gang", "2by8", "--dry-run"], "expected PODSxGPUS"),
    (["submit", "--deadline", "soon", "--dry-run"], "is not a duration"),
    (["submit", "--provreq", "novalue", "--dry-run"], "expected KEY=VALUE"),
    (["cluster", "up", "--backend", "docker"], "Invalid value for '--backend'"),
    (["deadline", "--cleanup-ttl", "-3"], "is not a duration"),
])
def test_bad_arguments_are_refused_with_the_reason(args, needle):
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2
    assert needle in r.output


def test_submit_dry_run_renders_the_researchers_job():
    import yaml
    r = CliRunner().invoke(main, ["submit", "--gang", "2x8", "--name", "job-train-x", "--deadline", "90s",
                                  "--provreq", "ValidUntilSeconds=60", "--dry-run"])
    assert r.exit_code == 0, r.output
    job = yaml.safe_load(r.output)
    assert job["spec"]["suspend"] is True and job["spec"]["parallelism"] == 2
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "gpu-a100-8"
    assert job["metadata"]["annotations"] == {"tau-demo.io/admission-deadline": "90s",
                                              "provreq.kueue.x-k8s.io/ValidUntilSeconds": "60"}
    req = job["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert req["requests"]["nvidia.com/gpu"] == "8" and req["limits"]["nvidia.com/gpu"] == "8"


def test_fake_ca_refuses_a_malformed_pools_file(tmp_path):
    bad = tmp_path / "pools.yaml"
    bad.write_text("apiVersion: tau-demo.io/v1\nkind: NodePoolList\npools:\n- name: gpupool\n  maxNodes: -1\n")
    r = CliRunner().invoke(main, ["fake-ca", "--pools", str(bad)])
    assert r.exit_code == 1
    assert str(bad) in r.output and "pools[0]" in r.output
