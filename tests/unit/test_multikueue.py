"""MultiKueue on one machine, the pure parts: the three clusters' names, a worker's kubeconfig with everything
embedded (as Kueue v0.19.2's validateKubeconfig wants it), the manager's MultiKueue objects and its version of the
demo's Kueue objects, each worker's pool table, `cluster status`'s rows; the manager's lanes in the timeline, the
Workload's MultiKueue fields, and preflight on a manager (objects recorded from a real trio)."""

from __future__ import annotations

import base64
import copy
import re
from pathlib import Path

import pytest
import yaml

from demo.cluster import multikueue as mk
from demo.jobs.preflight import PreflightInputs, check_profile, decide, Gang
from demo.timeline import lanes
from k8s import workload as workloads
from k8s.keys import (KUEUE_NAMESPACE, MULTIKUEUE_CHECK, MULTIKUEUE_CONTROLLER, MULTIKUEUE_SECRET_KEY,
                      PROVISIONING_CONTROLLER)
from k8s.manifests import ManifestError, load_manifest
from k8s.paths import MANIFESTS, POOLS_FILE
from demo.jobs.snapshot import Snapshot

RECORDED = Path(__file__).parent / "recorded"
OBJECTS = [d for d in yaml.safe_load_all((RECORDED / "multikueue-objects.yaml").read_text()) if d]
WORKLOADS = [d for d in yaml.safe_load_all((RECORDED / "multikueue-workloads.yaml").read_text()) if d]


def demo() -> list[dict]:
    """The demo's Kueue objects, read afresh (a test that changed them by mistake must not hide it from the next)."""
    return load_manifest(MANIFESTS / "kueue-objects.yaml")


def of_kind(docs, kind):
    return [d for d in docs if d["kind"] == kind]


KWOKCTL = {"apiVersion": "v1", "kind": "Config", "current-context": "kwok-w",
           "clusters": [{"name": "other", "cluster": {"server": "https://127.0.0.1:1"}},
                        {"name": "kwok-w", "cluster": {"server": "https://127.0.0.1:32752",
                                                       "certificate-authority": "/s/pki/ca.crt"}}],
           "contexts": [{"name": "first", "context": {"cluster": "other", "user": "other"}},
                        {"name": "kwok-w", "context": {"cluster": "kwok-w", "user": "kwok-w"}}],
           "users": [{"name": "other", "user": {}},
                     {"name": "kwok-w", "user": {"client-certificate": "/s/pki/admin.crt",
                                                 "client-key": "/s/pki/admin.key"}}]}


# ---------------------------------------------------------------------------- names

def test_the_workers_clusters_are_named_after_the_manager_and_back():
    assert mk.worker_clusters("tau-demo") == ["tau-demo-worker-1", "tau-demo-worker-2"]
    assert mk.worker_cluster("mk", "worker-2") == "mk-worker-2"
    assert mk.worker_of("mk", "mk-worker-2") == "worker-2"
    assert mk.worker_of("mk-x", "mk-x-worker-1") == "worker-1"


# ---------------------------------------------------------------------------- kubeconfig

def test_credentials_of_the_current_context_as_kwokctl_writes_them_file_paths():
    c = mk.credentials(KWOKCTL)
    assert c == mk.Credentials("https://127.0.0.1:32752", ("path", "/s/pki/ca.crt"), ("path", "/s/pki/admin.crt"),
                               ("path", "/s/pki/admin.key"))


def test_credentials_read_data_before_a_path_and_take_the_first_context_without_a_current_one():
    doc = copy.deepcopy(KWOKCTL)
    del doc["current-context"]
    doc["clusters"][0]["cluster"].update({"certificate-authority-data": "Q0E=", "certificate-authority": "/x"})
    doc["users"][0]["user"] = {"client-certificate-data": "Q0VSVA==", "client-key-data": "S0VZ",
                               "client-key": "/ignored"}
    c = mk.credentials(doc)
    assert c == mk.Credentials("https://127.0.0.1:1", ("data", "Q0E="), ("data", "Q0VSVA=="), ("data", "S0VZ"))


@pytest.mark.parametrize("change, says", [
    (lambda d: d.update(contexts=[]), "the kubeconfig has no context named 'kwok-w'"),
    (lambda d: d.update(contexts=[], **{"current-context": ""}), "the kubeconfig has no context"),
    (lambda d: d.update({"current-context": "nosuch"}), "the kubeconfig has no context named 'nosuch'"),
    (lambda d: d["contexts"][1]["context"].update(cluster="gone"), "the kubeconfig has no cluster named 'gone'"),
    (lambda d: d["contexts"][1]["context"].update(user="gone"), "the kubeconfig has no user named 'gone'"),
    (lambda d: d["clusters"][1]["cluster"].pop("server"), "the kubeconfig's cluster has no server"),
    (lambda d: d["clusters"][1]["cluster"].pop("certificate-authority"),
     "the kubeconfig gives no certificate-authority (neither certificate-authority-data nor a file)"),
    (lambda d: d["users"][1]["user"].pop("client-key"), "the kubeconfig gives no client-key (neither"),
    (lambda d: d["users"][1]["user"].update({"client-certificate": ""}), "the kubeconfig gives no client-certificate "),
])
def test_a_kubeconfig_without_what_a_worker_connection_needs_is_refused(change, says):
    doc = copy.deepcopy(KWOKCTL)
    change(doc)
    with pytest.raises(ManifestError, match=f"^{re.escape(says)}"):
        mk.credentials(doc)


def test_without_a_current_context_the_first_context_that_is_a_mapping_counts():
    doc = copy.deepcopy(KWOKCTL)
    doc["contexts"][0] = "junk"
    del doc["current-context"]
    assert mk.credentials(doc).server == "https://127.0.0.1:32752"


@pytest.mark.parametrize("context, says", [({"name": "kwok-w"}, "^the kubeconfig's context names no cluster$"),
                                           ({"name": "kwok-w", "context": {"cluster": "kwok-w"}},
                                            "^the kubeconfig's context names no user$")])
def test_a_context_that_names_no_cluster_or_user_is_refused(context, says):
    doc = copy.deepcopy(KWOKCTL)
    doc["contexts"] = [context]
    with pytest.raises(ManifestError, match=says):
        mk.credentials(doc)


def test_the_embedded_kubeconfig_carries_every_certificate_as_data_as_kueue_requires():
    doc = mk.embedded_kubeconfig("worker-1", "https://127.0.0.1:5", b"CA", b"CERT", b"KEY")
    assert doc["apiVersion"] == "v1" and doc["kind"] == "Config" and doc["current-context"] == "worker-1"
    [cluster], [user], [ctx] = doc["clusters"], doc["users"], doc["contexts"]
    assert cluster == {"name": "worker-1", "cluster": {"server": "https://127.0.0.1:5",
                                                       "certificate-authority-data": base64.b64encode(b"CA").decode()}}
    assert user == {"name": "worker-1", "user": {"client-certificate-data": base64.b64encode(b"CERT").decode(),
                                                 "client-key-data": base64.b64encode(b"KEY").decode()}}
    assert ctx == {"name": "worker-1", "context": {"cluster": "worker-1", "user": "worker-1"}}
    # Kueue refuses file paths, token files, insecure TLS: none is there, and it reads back as it was written
    assert mk.credentials(doc) == mk.Credentials("https://127.0.0.1:5", ("data", "Q0E="), ("data", "Q0VSVA=="),
                                                 ("data", "S0VZ"))


# ---------------------------------------------------------------------------- the manager's objects

def test_a_workers_secret_holds_its_kubeconfig_under_the_key_kueue_reads():
    s = mk.worker_secret("worker-2", "apiVersion: v1\n")
    assert s["apiVersion"] == "v1" and s["kind"] == "Secret" and s["type"] == "Opaque"
    assert s["metadata"] == {"name": "multikueue-worker-2", "namespace": KUEUE_NAMESPACE}
    assert base64.b64decode(s["data"][MULTIKUEUE_SECRET_KEY]) == b"apiVersion: v1\n"
    assert list(s["data"]) == [MULTIKUEUE_SECRET_KEY]


def test_a_multikueue_cluster_points_to_its_secret_as_the_recorded_one_does():
    c = mk.multikueue_cluster("worker-1")
    recorded = next(d for d in of_kind(OBJECTS, "MultiKueueCluster") if d["metadata"]["name"] == "worker-1")
    assert c["apiVersion"] == recorded["apiVersion"] and c["kind"] == recorded["kind"]
    assert c["metadata"] == {"name": "worker-1"} and c["spec"] == recorded["spec"]
    assert c["spec"]["clusterSource"]["kubeConfig"]["location"] == mk.secret_name("worker-1")


def test_the_config_lists_the_workers_in_order_and_the_check_uses_it():
    config, check = mk.multikueue_objects(["b", "a"])
    assert config["kind"] == "MultiKueueConfig" and config["metadata"] == {"name": MULTIKUEUE_CHECK}
    assert config["spec"] == {"clusters": ["b", "a"]}
    assert check["kind"] == "AdmissionCheck" and check["metadata"] == {"name": MULTIKUEUE_CHECK}
    assert check["spec"] == {"controllerName": MULTIKUEUE_CONTROLLER, "parameters": {
        "apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": MULTIKUEUE_CHECK}}
    default_config, _ = mk.multikueue_objects()
    assert default_config["spec"]["clusters"] == ["worker-1", "worker-2"]
    assert default_config["spec"] == of_kind(OBJECTS, "MultiKueueConfig")[0]["spec"]


def test_the_managers_kueue_objects_swap_the_provisioning_check_for_the_multikueue_check():
    docs = demo()
    out = mk.manager_objects(docs)
    assert docs == demo(), "the input is left as it was"
    DEMO = demo()
    kinds = [d["kind"] for d in out]
    assert "ProvisioningRequestConfig" not in kinds
    assert not any(d["kind"] == "AdmissionCheck" and d["spec"]["controllerName"] == PROVISIONING_CONTROLLER
                   for d in out)
    [cq] = of_kind(out, "ClusterQueue")
    assert cq["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": MULTIKUEUE_CHECK}]}
    [demo_cq] = of_kind(DEMO, "ClusterQueue")
    assert cq["spec"]["resourceGroups"] == demo_cq["spec"]["resourceGroups"]     # the same quota
    for kind in ("Namespace", "ResourceFlavor", "LocalQueue"):
        assert of_kind(out, kind) == of_kind(DEMO, kind)
    assert [d["kind"] for d in out[-2:]] == ["MultiKueueConfig", "AdmissionCheck"]
    recorded = of_kind(OBJECTS, "ClusterQueue")[0]
    assert recorded["spec"]["admissionChecksStrategy"] == cq["spec"]["admissionChecksStrategy"]


def test_an_admission_check_of_another_controller_stays_on_the_manager():
    other = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": "gpu-provisioning"},
             "spec": {"controllerName": "example.com/other"}}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gpu-provisioning"}}
    out = mk.manager_objects([other, config] + [d for d in demo() if d["kind"] == "ClusterQueue"])
    assert other in out and config in out


def test_the_manager_needs_a_cluster_queue():
    with pytest.raises(ManifestError, match="^the demo's Kueue objects have no ClusterQueue to put the MultiKueue "
                                            "check on$"):
        mk.manager_objects([d for d in demo() if d["kind"] != "ClusterQueue"])


def test_a_cluster_queue_without_a_spec_gets_the_check():
    [cq] = of_kind(mk.manager_objects([{"kind": "ClusterQueue", "metadata": {"name": "q"}}]), "ClusterQueue")
    assert cq["spec"] == {"admissionChecksStrategy": {"admissionChecks": [{"name": MULTIKUEUE_CHECK}]}}


# ---------------------------------------------------------------------------- each worker's pools

def test_each_workers_pool_table_names_its_nodes_after_it_and_keeps_the_rest():
    doc = yaml.safe_load(POOLS_FILE.read_text())
    out = mk.worker_pools(doc, "worker-1")
    assert [p["namePrefix"] for p in out["pools"]] == [p["namePrefix"].replace("-vmss", "-worker-1-vmss")
                                                       for p in doc["pools"]]
    assert out["pools"][0]["namePrefix"] == "aks-gpupool-worker-1-vmss"
    assert doc == yaml.safe_load(POOLS_FILE.read_text()), "the input is left as it was"
    for a, b in zip(doc["pools"], out["pools"]):
        assert {k: v for k, v in a.items() if k != "namePrefix"} == {k: v for k, v in b.items() if k != "namePrefix"}


@pytest.mark.parametrize("prefix, name, want", [("node-", "gpu", "node-worker-2-"), (None, "gpu", "gpu-worker-2-"),
                                                ("vmss", "gpu", "vmssworker-2-"), ("a-vmss-b", "x", "a-worker-2-vmss-b"),
                                                ("-vmss", "x", "-worker-2-vmss"),
                                                ("a-vmss-b-vmss", "x", "a-vmss-b-worker-2-vmss")])
def test_a_prefix_without_vmss_gets_the_worker_at_its_end(prefix, name, want):
    pool = {"name": name} if prefix is None else {"name": name, "namePrefix": prefix}
    assert mk.worker_pools({"pools": [pool]}, "worker-2")["pools"][0]["namePrefix"] == want


def test_a_pool_without_a_name_or_prefix_is_named_pool():
    assert mk.worker_pools({"pools": [{}]}, "w")["pools"][0]["namePrefix"] == "pool-w-"


@pytest.mark.parametrize("doc", [{}, {"pools": []}, {"pools": "x"}])
def test_a_pools_document_without_pools_is_refused(doc):
    with pytest.raises(ManifestError, match="^the pools file has no pools$"):
        mk.worker_pools(doc, "worker-1")


# ---------------------------------------------------------------------------- status

def test_status_rows_of_a_connected_trio_as_recorded():
    rows = mk.connection_rows(of_kind(OBJECTS, "MultiKueueCluster"), of_kind(OBJECTS, "AdmissionCheck")[0])
    assert rows == [("multikueue worker-1", True, "Active: Connected"), ("multikueue worker-2", True, "Active: Connected"),
                    ("admission check multikueue", True, "Active: The admission check is active")]


def test_status_rows_say_what_is_missing_or_inactive():
    lost = copy.deepcopy(of_kind(OBJECTS, "MultiKueueCluster")[0])
    lost["status"]["conditions"] = [{"type": "Active", "status": "False", "reason": "ClientConnectionFailed",
                                     "message": "dial tcp: refused"}]
    fresh = {"metadata": {"name": "worker-2"}}
    rows = mk.connection_rows([lost, fresh], None)
    assert rows == [("multikueue worker-1", False, "ClientConnectionFailed: dial tcp: refused"),
                    ("multikueue worker-2", False, "MultiKueueCluster: no Active condition yet"),
                    ("admission check multikueue", False, "no AdmissionCheck")]
    assert mk.connection_rows([], {"metadata": {"name": "multikueue"}}, ["w"]) == [
        ("multikueue w", False, "no MultiKueueCluster"), ("admission check multikueue", False, "no Active condition yet")]
    partly = {"status": {"conditions": [{"type": "Active", "status": "False", "reason": "NoUsableClusters"}]}}
    assert mk.connection_rows([], partly, [])[-1] == ("admission check multikueue", False, "NoUsableClusters")
    bare = {"status": {"conditions": [{"type": "Active", "status": "True"}]}}
    assert mk.connection_rows([], bare, [])[-1] == ("admission check multikueue", True, "")
    said = {"status": {"conditions": [{"type": "Active", "status": "True", "message": "m"}]}}
    assert mk.connection_rows([], said, [])[-1] == ("admission check multikueue", True, "m")
    lost = {"metadata": {"name": "w"}, "status": {"conditions": [{"type": "Active", "status": "False", "reason": "R"}]}}
    assert mk.connection_rows([lost], None, ["w"])[0] == ("multikueue w", False, "R")


# ---------------------------------------------------------------------------- a manager's Workload, its lanes

def manager_workloads():
    return [d for d in WORKLOADS if d["kind"] == "Workload" and "kueue.x-k8s.io/multikueue-origin" not in
            (d["metadata"].get("labels") or {})]


def test_a_dispatched_workload_names_its_workers_then_the_one_that_admitted_it():
    dispatched, admitted = manager_workloads()
    assert workloads.nominated_clusters(dispatched) == ["worker-1", "worker-2"]
    assert workloads.cluster_name(dispatched) == "" and workloads.cluster_name(admitted) == "worker-2"
    assert workloads.nominated_clusters(admitted) == []
    assert lanes.dispatch_state(dispatched, MULTIKUEUE_CHECK) == "Pending · to worker-1, worker-2"
    assert lanes.dispatch_state(admitted, MULTIKUEUE_CHECK) == "Ready · on worker-2"
    assert lanes.dispatch_state(None, MULTIKUEUE_CHECK) == "-"
    assert workloads.nominated_clusters({"status": {"nominatedClusterNames": ["b", "a"]}}) == ["a", "b"]
    assert lanes.dispatch_state({"status": {"admissionChecks": [{"name": MULTIKUEUE_CHECK, "state": "Pending"}]}},
                                MULTIKUEUE_CHECK) == "Pending"


def test_cluster_lanes_are_named_per_cluster_and_say_none_for_what_was_never_there():
    states = lanes.snapshot_states(Snapshot(None, None, [], [], []))
    out = lanes.cluster_lanes("worker-1", lanes.WORKER_LANES, states, set())
    assert list(out) == ["worker-1 Workload", "worker-1 check", "worker-1 ProvReq", "worker-1 Job", "worker-1 Pods",
                         "worker-1 Nodes"]
    assert out["worker-1 Job"] == out["worker-1 Workload"] == lanes.NOT_YET
    gone = lanes.cluster_lanes("worker-1", lanes.WORKER_LANES, states, {"Job", "Workload"})
    assert gone["worker-1 Job"] == gone["worker-1 Workload"] == "deleted"
    assert gone["worker-1 Nodes"] == "0" and gone["worker-1 check"] == "-"
    manager = lanes.cluster_lanes("manager", lanes.MANAGER_LANES, {**states, "AdmissionCheck": "Ready"}, {"Job"})
    assert manager == {"manager Job": "deleted", "manager Workload": lanes.NOT_YET, "manager check": "Ready"}


# ---------------------------------------------------------------------------- preflight on a manager

def manager_inputs(**change) -> PreflightInputs:
    acs = {d["metadata"]["name"]: d for d in of_kind(OBJECTS, "AdmissionCheck")}
    inputs = PreflightInputs(of_kind(OBJECTS, "LocalQueue")[0], of_kind(OBJECTS, "ClusterQueue")[0], acs, {}, None,
                             {"fake-ca": False, "real-ca": False},
                             flavor=next(d for d in demo() if d["kind"] == "ResourceFlavor"))
    for k, v in change.items():
        setattr(inputs, k, v)
    return inputs


def test_preflight_on_a_manager_is_ready_through_its_multikueue_check_and_plans_against_the_pools_file():
    i = manager_inputs()
    res = check_profile("gpu-a100-8", i.local_queue, i.cluster_queue, i.admission_checks, {})
    assert res.code == 0 and res.multikueue and res.attempts == {}
    assert res.flavor == {"names": ["a100-scale"]}
    assert res.lines == ["preflight: profile gpu-a100-8 ProvisioningReady=True on the MultiKueue workers: AdmissionCheck "
                         "multikueue dispatches the Job, and each worker holds it with its own ProvisioningRequest "
                         "check until its autoscaler has the nodes"]
    out = decide(i, "gpu-a100-8", Gang(2, 8), "demo", POOLS_FILE, job_name="x" * 60)
    assert out.code == 0
    assert out.lines[2] == ("preflight: the workers' autoscalers publish their pool tables on the workers; checking "
                            "against manifests/node-pools.yaml, which each worker's table copies")
    assert "fits" in out.lines[-1] and not any("WARNING" in line for line in out.lines)
    assert decide(i, "gpu-a100-8", Gang(3, 8), "demo", POOLS_FILE).code == 2


def test_preflight_on_a_manager_whose_multikueue_check_is_not_active_refuses():
    ac = copy.deepcopy(of_kind(OBJECTS, "AdmissionCheck")[0])
    ac["status"]["conditions"][0].update(status="False", message="Inactive clusters: [worker-1]")
    i = manager_inputs(admission_checks={MULTIKUEUE_CHECK: ac})
    res = check_profile("gpu-a100-8", i.local_queue, i.cluster_queue, i.admission_checks, {})
    assert res.code == 1 and not res.multikueue
    assert res.lines == ["preflight: profile gpu-a100-8 ProvisioningReady=False: its MultiKueue AdmissionCheck "
                         "multikueue is not Active (Inactive clusters: [worker-1])"]


def test_a_kubeconfig_without_any_context_says_so_exactly():
    with pytest.raises(ManifestError, match="^the kubeconfig has no context$"):
        mk.credentials({"contexts": []})
