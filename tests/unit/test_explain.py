"""`fake-ca explain`: the planner on a YAML bundle, without a cluster."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner

from demo.cli.fake_ca import explain_cmd as explain
from demo.paths import POOLS_FILE as DEFAULT_POOLS

FIXTURES = Path(__file__).resolve().parent / "fixtures"
KEY = "demo/job-train-5f2a1-gpu-provisioning-1"


def run(*args, input=None):
    return CliRunner().invoke(explain, list(args), input=input)


def bundle(count=2, **spec) -> list[dict]:
    docs = list(yaml.safe_load_all((FIXTURES / "provreq-2x8.yaml").read_text()))
    docs[0]["spec"]["podSets"][0]["count"] = count
    docs[0]["spec"].update(spec)
    return docs


def write(tmp_path, docs, name="bundle.yaml") -> str:
    f = tmp_path / name
    f.write_text(yaml.safe_dump_all(docs))
    return str(f)


def test_is_a_click_command_using_the_repo_pools_file():
    assert isinstance(explain, click.Command) and explain.name == "explain"
    assert DEFAULT_POOLS == Path(__file__).resolve().parents[2] / "manifests" / "node-pools.yaml"


def test_fits_exit_0():
    r = run("-f", str(FIXTURES / "provreq-2x8.yaml"))
    assert r.exit_code == 0, r.output
    assert r.stdout == f"provreq {KEY}: gang needs 2 node(s) of gpupool (max 2): fits\n"


def test_does_not_fit_exit_2():
    r = run("--filename", str(FIXTURES / "provreq-3x8.yaml"))
    assert r.exit_code == 2
    assert r.stdout == (f"provreq {KEY}: gang needs 3 node(s) of gpupool (max 2): does not fit: "
                        "pool gpupool has 0 node(s) and max 2, 3 more needed\n")


def test_reads_stdin():
    r = run("-f", "-", input=(FIXTURES / "provreq-2x8.yaml").read_text())
    assert r.exit_code == 0 and "fits" in r.stdout


def test_other_pools_file(tmp_path):
    text = (DEFAULT_POOLS).read_text().replace("maxNodes: 2\n  namePrefix", "maxNodes: 3\n  namePrefix")
    pools = tmp_path / "pools.yaml"
    pools.write_text(text)
    r = run("-f", str(FIXTURES / "provreq-3x8.yaml"), "--pools", str(pools))
    assert r.exit_code == 0 and "gang needs 3 node(s) of gpupool (max 3): fits" in r.stdout


def test_kubectl_list_is_unwrapped(tmp_path):
    f = write(tmp_path, [{"apiVersion": "v1", "kind": "List", "items": bundle()}])
    assert run("-f", f).exit_code == 0


def test_unsupported_class_exit_2(tmp_path):
    r = run("-f", write(tmp_path, bundle(provisioningClassName="queued-provisioning.gke.io")))
    assert r.exit_code == 2
    assert r.stdout == (f"provreq {KEY}: class queued-provisioning.gke.io is not handled by the autoscaler; "
                        "it would be left untouched\n")


def test_check_capacity_on_an_empty_cluster_does_not_fit(tmp_path):
    r = run("-f", write(tmp_path, bundle(provisioningClassName="check-capacity.autoscaling.x-k8s.io")))
    assert r.exit_code == 2 and "check-capacity never adds nodes" in r.stdout


def test_missing_template_exit_1(tmp_path):
    r = run("-f", write(tmp_path, bundle()[:1]))
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr == (f"error: provreq {KEY}: FailedToCreatePods: missing pod templates, 1 pod templates were "
                        "referenced, 1 templates were missing: ppt-job-train-5f2a1-gpu-provisioning-1-main\n")


def _bad_quantity(docs):
    docs[1]["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1e30"
    return docs


@pytest.mark.parametrize("content, message", [
    ("kind: [unclosed\n", "invalid YAML"),
    ("", "no ProvisioningRequest found"),
    ("- just\n- a list\n", "expected a Kubernetes object"),
    (yaml.safe_dump_all(bundle()[1:]), "no ProvisioningRequest found"),
    (yaml.safe_dump_all([bundle()[0], bundle()[0], bundle()[1]]), "2 ProvisioningRequests found"),
    (yaml.safe_dump_all(_bad_quantity(bundle())), "FailedToCreatePods"),
    (yaml.safe_dump_all(bundle(parameters={"noRetry": True})), "InvalidProvisioningRequest"),
    (yaml.safe_dump_all(bundle(podSets="many")), "spec.podSets"),
    (yaml.safe_dump_all(bundle(provisioningClassName=None)), "provisioningClassName is required"),
    (yaml.safe_dump_all([{"kind": "ProvisioningRequest", "spec": "x"}]), "error: "),
    (yaml.safe_dump_all([{"kind": "ProvisioningRequest", "metadata": "x",
                          "spec": {"provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io"}}]),
     "metadata.name"),
])
def test_invalid_input_exit_1(tmp_path, content, message):
    f = tmp_path / "in.yaml"
    f.write_text(content)
    r = run("-f", str(f))
    assert r.exit_code == 1, r.output
    assert r.stderr.startswith("error: ") and message in r.stderr
    assert r.exception is None or isinstance(r.exception, SystemExit)   # never a traceback


def test_unreadable_file_exit_1(tmp_path):
    r = run("-f", str(tmp_path / "missing.yaml"))
    assert r.exit_code == 1 and r.stderr.startswith("error: ") and "cannot read" in r.stderr


def test_bad_pools_file_exit_1(tmp_path):
    pools = tmp_path / "pools.yaml"
    pools.write_text(DEFAULT_POOLS.read_text().replace("effect: NoSchedule", "effect: Never"))
    r = run("-f", str(FIXTURES / "provreq-2x8.yaml"), "--pools", str(pools))
    assert r.exit_code == 1
    assert r.stderr == (f"error: {pools}: pools[0].taints[0].effect: must be one of NoSchedule, PreferNoSchedule, "
                        "NoExecute (got 'Never')\n")


def test_filename_is_required():
    assert run().exit_code == 2     # click usage error
