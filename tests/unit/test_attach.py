"""`tau-demo cluster attach` on plain data (demo/cluster/attach.py, setup.py): the mode's spelling, the TauCluster it
writes, what it says it will and will not write before writing, the standalone kubeconfig of one context, and
the readiness `cluster up` waits for."""

from __future__ import annotations

import base64
import copy

import pytest

from demo.cluster import attach as A
from demo.cluster.setup import not_ready
from k8s.manifests import load_manifest
from k8s.paths import MANIFESTS

[DEMO_TC] = load_manifest(MANIFESTS / "taucluster-demo.yaml")


@pytest.mark.parametrize("text, mode", [("adopt", "Adopt"), ("Adopt", "Adopt"), (" EXTERNAL ", "External")])
def test_the_mode_is_adopt_or_external_in_any_case(text, mode):
    assert A.parse_mode(text) == mode


@pytest.mark.parametrize("text", ["manage", "Manage", "own", ""])
def test_manage_and_anything_else_are_refused_saying_why(text):
    with pytest.raises(A.AttachError, match=r"attach takes one of adopt, external \(Manage makes the objects itself"):
        A.parse_mode(text)


def test_the_taucluster_written_is_the_files_in_the_chosen_mode_without_what_the_apiserver_owns():
    read_back = copy.deepcopy(DEMO_TC)
    read_back["metadata"].update(resourceVersion="7", uid="u", generation=2, creationTimestamp="t", managedFields=[],
                                 finalizers=["tau-demo.io/taucluster-cleanup"])
    read_back["status"] = {"profiles": []}
    out = A.with_mode(read_back, "External")
    assert out["metadata"] == {"name": "demo"} and "status" not in out
    assert out["spec"] == {**DEMO_TC["spec"], "mode": "External"}
    assert read_back["spec"]["mode"] == "Manage", "the file's object is not changed"


def test_the_plan_on_a_bare_cluster_in_external_mode_says_each_write_and_that_nothing_else_is_written():
    p = A.attach_plan(A.with_mode(DEMO_TC, "External"), have_crd=False, have_namespace=False, have_marker=False,
               fake_autoscaler=False)
    assert p.will == [
        "create the CustomResourceDefinition tauclusters.tau-demo.io (cluster-scoped; removed again by `cluster down`)",
        "create the namespace tau-demo-system (the controllers' heartbeat Leases; removed again by `cluster down`)",
        "create or update TauCluster demo in External mode, profiles gpu-a100-8",
        "write the TauCluster's status, and nothing else: the profiles' Kueue objects are only read"]
    assert p.wont[0].startswith("create, change or delete any Kueue object (Adopt: only the labels above)")
    assert p.wont[1].startswith("install or restart Kueue, KWOK or an autoscaler")
    assert p.wont[2].startswith("let the fake autoscaler create nodes (its marker is not written)") and len(p.wont) == 3


def test_the_plan_in_adopt_mode_with_the_fake_autoscaler_says_the_labels_and_the_marker():
    p = A.attach_plan(A.with_mode(DEMO_TC, "Adopt"), have_crd=True, have_namespace=True, have_marker=False,
               fake_autoscaler=True)
    assert p.will[0] == "create or update TauCluster demo in Adopt mode, profiles gpu-a100-8"
    assert p.will[1].startswith("adopt each compatible Kueue object of those profiles: add the labels "
                                "tau-demo.io/taucluster and tau-demo.io/profile and the annotation tau-demo.io/adopted")
    assert p.will[2].startswith("create the ConfigMap tau-demo-system/tau-demo-cluster (if missing): the fake "
                                "autoscaler then creates KWOK nodes here") and len(p.will) == 3
    assert len(p.wont) == 2


def test_a_marker_already_there_is_said_to_be_left_alone_without_the_fake_autoscaler():
    p = A.attach_plan(A.with_mode(DEMO_TC, "External"), True, True, have_marker=True, fake_autoscaler=False)
    assert p.wont[-1] == "remove the marker tau-demo-system/tau-demo-cluster that is already there"
    assert A.attach_plan(A.with_mode(DEMO_TC, "External"), True, True, True, True).wont[-1].startswith("install or restart")


KUBECONFIG = {"apiVersion": "v1", "kind": "Config", "current-context": "kind-a",
              "contexts": [{"name": "kind-a", "context": {"cluster": "a", "user": "ua"}},
                           {"name": "kind-b", "context": {"cluster": "b", "user": "ub"}}],
              "clusters": [{"name": "a", "cluster": {"server": "https://a:6443", "certificate-authority-data": "QQ=="}},
                           {"name": "b", "cluster": {"server": "https://b:6443", "certificate-authority": "ca.crt"}}],
              "users": [{"name": "ua", "user": {"token": "t"}},
                        {"name": "ub", "user": {"client-certificate": "/abs/missing.crt", "client-key": "k.key"}}]}


def test_the_kubeconfig_copy_holds_the_one_context_its_cluster_and_user():
    out = A.minified(KUBECONFIG, None, MANIFESTS)
    assert out == {"apiVersion": "v1", "kind": "Config", "current-context": "kind-a",
                   "contexts": [KUBECONFIG["contexts"][0]], "clusters": [KUBECONFIG["clusters"][0]],
                   "users": [KUBECONFIG["users"][0]]}


def test_files_the_kubeconfig_names_are_read_in_relative_to_it(tmp_path):
    (tmp_path / "ca.crt").write_bytes(b"CA")
    (tmp_path / "k.key").write_bytes(b"KEY")
    (tmp_path / "c.crt").write_bytes(b"CERT")
    doc = copy.deepcopy(KUBECONFIG)
    doc["users"][1]["user"]["client-certificate"] = str(tmp_path / "c.crt")
    out = A.minified(doc, "kind-b", tmp_path)
    assert out["clusters"][0]["cluster"] == {"server": "https://b:6443",
                                             "certificate-authority-data": base64.b64encode(b"CA").decode()}
    assert out["users"][0]["user"] == {"client-certificate-data": base64.b64encode(b"CERT").decode(),
                                       "client-key-data": base64.b64encode(b"KEY").decode()}
    assert out["current-context"] == "kind-b"


@pytest.mark.parametrize("doc, context, message", [
    (KUBECONFIG, "kind-c", "the kubeconfig has no context named 'kind-c' (it has: kind-a, kind-b)"),
    ({**KUBECONFIG, "current-context": ""}, None, "the kubeconfig has no current-context: give --context"),
    ({**KUBECONFIG, "users": []}, None, "the kubeconfig has no user named 'ua' (it has: none)"),
    ("just text", None, "the kubeconfig is not a kubeconfig (not a YAML mapping)"),
    (KUBECONFIG, "kind-b", "the kubeconfig's certificate-authority"),
])
def test_a_kubeconfig_that_cannot_be_copied_says_what_is_missing(doc, context, message, tmp_path):
    with pytest.raises(A.AttachError) as e:
        A.minified(doc, context, tmp_path)
    assert str(e.value).startswith(message)


def status(profile: str, st: str = "True", reason: str = "Ready", message: str = "ok", gen: int = 1) -> dict:
    return {"name": profile, "conditions": [{"type": "ProvisioningReady", "status": st, "reason": reason,
                                             "message": message, "observedGeneration": gen}]}


def test_cluster_up_waits_until_every_profile_reads_ready_for_the_present_spec():
    tc = {"metadata": {"name": "demo", "generation": 2},
          "spec": {"profiles": [{"name": "p1"}, {"name": "p2"}, {"name": "p3"}]},
          "status": {"profiles": [status("p1", gen=2), status("p2", "False", "SettingUp", "ClusterQueue q is being "
                                                                           "created", gen=2), status("p3", gen=1)]}}
    assert not_ready(tc, "demo") == (
        "profile p2: ProvisioningReady=False (SettingUp): ClusterQueue q is being created; profile p3: its status was "
        "written for generation 1, the TauCluster is at generation 2")
    tc["status"]["profiles"] = [status("p1", gen=2), status("p2", gen=2), status("p3", gen=2)]
    assert not_ready(tc, "demo") == ""
    assert not_ready(None, "demo") == "TauCluster demo does not exist"
    assert not_ready({"metadata": {"generation": 1}, "spec": {"profiles": [{"name": "p"}]}}, "x") == \
        "profile p: its status says nothing of this profile yet"
