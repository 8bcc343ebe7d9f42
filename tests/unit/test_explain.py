"""`fake-ca explain`: the planner on a YAML bundle, without a cluster."""

from __future__ import annotations

import io
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner

from cli.fake_ca import explain_cmd as explain
from k8s.paths import POOLS_FILE as DEFAULT_POOLS
from fake_ca.explain import InputError, read_source
from fake_ca.explain import explain as explain_text
from k8s.pools import load_pools

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


def test_check_capacity_for_another_processor_instance_exit_2(tmp_path):
    r = run("-f", write(tmp_path, bundle(provisioningClassName="check-capacity.autoscaling.x-k8s.io",
                                         parameters={"processorInstance": "other"})))
    assert r.exit_code == 2
    assert r.stdout == (f"provreq {KEY}: parameters.processorInstance names another autoscaler instance; it would "
                        "be left untouched\n")


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


# ---------------------------------------------------------------------------- the bundle reader, directly

POOLS = load_pools(DEFAULT_POOLS)


def explain_docs(docs, source="bundle.yaml"):
    return explain_text(yaml.safe_dump_all(docs), source, POOLS)


def input_error(text, source="bundle.yaml") -> str:
    with pytest.raises(InputError) as e:
        explain_text(text, source, POOLS)
    return str(e.value)


def test_a_fitting_bundle_exits_0_with_the_planners_line():
    assert explain_docs(bundle()) == (0, f"provreq {KEY}: gang needs 2 node(s) of gpupool (max 2): fits")


def test_yaml_errors_are_one_line_naming_the_source():
    assert input_error("kind: [unclosed\n", "in.yaml") == (
        "in.yaml: invalid YAML: while parsing a flow sequence in \"<unicode string>\", line 1, column 7: "
        "kind: [unclosed ^ expected ',' or ']', but got '<stream end>' in \"<unicode string>\", line 2, column 1: ^")


def test_errors_name_the_document_and_list_item():
    docs = bundle()
    text = yaml.safe_dump_all(docs[:1]) + "---\n- not an object\n"
    assert input_error(text) == "bundle.yaml: document 2: expected a Kubernetes object, got list"
    wrapped = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [docs[0], "oops"]})
    assert input_error(wrapped) == "bundle.yaml: document 1.items[1]: expected a Kubernetes object, got str"


@pytest.mark.parametrize("kind", ["List", "PodTemplateList"])
def test_any_list_kind_is_unwrapped(kind):
    docs = bundle()
    text = yaml.safe_dump_all([docs[0], {"apiVersion": "v1", "kind": kind, "items": docs[1:]}])
    assert explain_text(text, "b.yaml", POOLS)[0] == 0


def test_a_list_without_items_is_refused():
    text = yaml.safe_dump_all(bundle() + [{"apiVersion": "v1", "kind": "List", "items": "oops"}])
    assert input_error(text) == "bundle.yaml: document 3: a List needs a list of items, got str"


def test_an_object_with_an_items_field_is_not_a_list():
    docs = bundle()
    docs[0]["items"] = []
    assert explain_docs(docs)[0] == 0


def test_several_requests_are_named():
    second = bundle()[0]
    second["metadata"] = {"name": "other"}
    assert input_error(yaml.safe_dump_all([bundle()[0], second])) == (
        "bundle.yaml: 2 ProvisioningRequests found (demo/job-train-5f2a1-gpu-provisioning-1, default/other); "
        "pass one at a time")


def test_a_template_given_twice_is_refused():
    docs = bundle()
    assert input_error(yaml.safe_dump_all(docs + docs[1:])) == (
        f"bundle.yaml: PodTemplate {docs[1]['metadata']['name']} appears twice")


def test_documents_of_other_kinds_are_ignored():
    docs = bundle() + [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}, None]
    assert explain_docs(docs)[0] == 0


@pytest.mark.parametrize("class_name", [None, "", 5])
def test_a_request_without_a_class_is_invalid(class_name):
    docs = bundle(provisioningClassName=class_name)
    assert input_error(yaml.safe_dump_all(docs)) == f"provreq {KEY}: spec.provisioningClassName is required"


def test_a_request_without_name_or_namespace_is_named_by_defaults():
    assert input_error(yaml.safe_dump({"kind": "ProvisioningRequest"})) == (
        "provreq default/?: spec.provisioningClassName is required")


def test_read_source_names_stdin(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("kind: X\n"))
    assert read_source("-") == ("kind: X\n", "<stdin>")


def test_read_source_says_why_a_file_cannot_be_read(tmp_path):
    with pytest.raises(InputError, match=rf"^{tmp_path}/missing.yaml: cannot read: No such file or directory$"):
        read_source(str(tmp_path / "missing.yaml"))
    with pytest.raises(InputError, match=rf"^{tmp_path}: cannot read: Is a directory$"):
        read_source(str(tmp_path))
    binary = tmp_path / "bundle.bin"
    binary.write_bytes(b"\xff\xfe")
    with pytest.raises(InputError, match=rf"^{binary}: cannot read: 'utf-8' codec can't decode byte 0xff in position 0"):
        read_source(str(binary))
    good = tmp_path / "ok.yaml"
    good.write_text("a: 1\n")
    assert read_source(str(good)) == ("a: 1\n", str(good))
