"""Node pools: the file format, its validation, the ConfigMap round trip and the Node objects."""

from __future__ import annotations

import dataclasses

from demo.cluster import install

import copy
from pathlib import Path

import pytest
import yaml

from k8s import pools as P
from k8s.keys import BATCH_ANNOTATION
from k8s.pools import (MANAGED_LABEL, POOL_LABEL, PROVREQ_ANNOTATION, PROVREQ_UID_ANNOTATION, Domain,
                           PoolsError, Taint, load_pools, node_manifest, parse_pools, pool_of_node,
                           pools_from_configmap, pools_to_configmap)

REPO = Path(__file__).resolve().parents[2]
POOLS_FILE = REPO / "manifests" / "node-pools.yaml"


def read_slots() -> list[str]:
    return install.read_slots()
SRC = "manifests/node-pools.yaml"


def doc(**overrides) -> dict:
    """A valid one-pool document; keyword arguments replace fields of the pool."""
    pool = {
        "name": "gpupool", "minNodes": 0, "maxNodes": 2, "namePrefix": "aks-gpupool-vmss",
        "labels": {"agentpool": "gpupool"},
        "taints": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}],
        "capacity": {"cpu": "96", "memory": "900Gi", "nvidia.com/gpu": "8", "pods": "110"},
        "allocatable": {"cpu": "94", "memory": "880Gi", "nvidia.com/gpu": "8", "pods": "110"},
        "topology": {"label": "topology.tau-demo.io/domain",
                     "domains": [{"name": "rack-a", "maxNodes": 2}, {"name": "rack-b", "maxNodes": 2}]},
    }
    pool.update(overrides)
    return {"apiVersion": "tau-demo.io/v1", "kind": "NodePoolList", "pools": [pool]}


def error_of(d) -> str:
    with pytest.raises(PoolsError) as e:
        parse_pools(d, SRC)
    return str(e.value)


def test_repository_pools_file_loads():
    pool, *slots, ondemand = load_pools(POOLS_FILE)
    # the walkthrough slots' pools: gpupool's in all but their name, node names and agentpool label
    assert [p.name for p in slots] == [f"wt-{slot}" for slot in read_slots()]
    for slot in slots:
        assert (slot.name_prefix, slot.labels["agentpool"]) == (f"aks-{slot.name}-vmss", slot.name)
        assert dataclasses.replace(slot, name=pool.name, name_prefix=pool.name_prefix,
                                   labels={**slot.labels, "agentpool": "gpupool"}) == pool
    assert pool.name == "gpupool" and (pool.min_nodes, pool.max_nodes) == (0, 2)
    assert pool.name_prefix == "aks-gpupool-vmss"
    assert pool.labels["agentpool"] == "gpupool"
    assert pool.taints == (Taint("sku", "gpu", "NoSchedule"),)
    assert pool.allocatable == {"cpu": "94", "memory": "880Gi", "nvidia.com/gpu": "8", "pods": "110"}
    assert pool.topology_label == "topology.tau-demo.io/domain"
    assert pool.domains == (Domain("rack-a", 2), Domain("rack-b", 2))
    # beside it, an on-demand CPU pool without taints or topology (the Kueue specs' second flavor)
    assert (ondemand.name, ondemand.min_nodes, ondemand.max_nodes, ondemand.taints) == ("ondemand", 0, 2, ())
    assert ondemand.labels["agentpool"] == "ondemand" and "nvidia.com/gpu" not in ondemand.allocatable
    assert ondemand.topology_label is None and ondemand.boot_seconds == 0


def test_topology_is_optional_and_unquoted_numbers_become_strings():
    d = doc(capacity={"cpu": 96, "memory": "900Gi", "pods": 110}, allocatable={"cpu": 94, "memory": "880Gi", "pods": 110})
    del d["pools"][0]["topology"]
    [pool] = parse_pools(d, SRC)
    assert pool.topology_label is None and pool.domains == ()
    assert pool.capacity["cpu"] == "96"


def test_bad_yaml_names_the_file(tmp_path):
    f = tmp_path / "node-pools.yaml"
    f.write_text("apiVersion: tau-demo.io/v1\npools: [\n  - name: x\n")
    with pytest.raises(PoolsError) as e:
        load_pools(f)
    assert str(e.value).startswith(f"{f}: invalid YAML:")


def test_missing_file_is_a_pools_error(tmp_path):
    with pytest.raises(PoolsError, match="cannot read"):
        load_pools(tmp_path / "nope.yaml")


def test_max_nodes_below_min_nodes():
    assert error_of(doc(minNodes=3, maxNodes=2)) == \
        "manifests/node-pools.yaml: pools[0].maxNodes: must be an integer >= minNodes (got 2)"
    assert error_of(doc(maxNodes=-1)) == \
        "manifests/node-pools.yaml: pools[0].maxNodes: must be an integer >= minNodes (got -1)"
    assert "pools[0].maxNodes" in error_of(doc(maxNodes="2"))
    assert "pools[0].minNodes" in error_of(doc(minNodes=-1))


def test_bad_quantity():
    d = doc()
    d["pools"][0]["allocatable"]["memory"] = "880 GiB"
    msg = error_of(d)
    assert msg.startswith("manifests/node-pools.yaml: pools[0].allocatable.memory: invalid quantity '880 GiB'")


def test_allocatable_above_capacity():
    d = doc()
    d["pools"][0]["allocatable"]["nvidia.com/gpu"] = "16"
    assert "pools[0].allocatable.nvidia.com/gpu: must not exceed capacity (16 > 8)" in error_of(d)


def test_negative_quantity_and_missing_pods_resource():
    d = doc()
    d["pools"][0]["allocatable"]["cpu"] = "-1"
    assert "pools[0].allocatable.cpu: must not be negative" in error_of(d)
    d = doc()
    del d["pools"][0]["capacity"]["pods"]
    assert "pools[0].capacity.pods: is required" in error_of(d)


def test_duplicate_pool_names():
    d = doc()
    second = copy.deepcopy(d["pools"][0])
    second["namePrefix"] = "aks-other-vmss"
    d["pools"].append(second)
    assert error_of(d) == "manifests/node-pools.yaml: pools[1].name: duplicate pool name 'gpupool' (also pools[0])"


def test_duplicate_name_prefix():
    d = doc()
    second = copy.deepcopy(d["pools"][0])
    second["name"] = "other"
    d["pools"].append(second)
    assert "pools[1].namePrefix: duplicate namePrefix" in error_of(d)


def test_bad_taint_effect():
    msg = error_of(doc(taints=[{"key": "sku", "value": "gpu", "effect": "NoScheduel"}]))
    assert msg == ("manifests/node-pools.yaml: pools[0].taints[0].effect: must be one of "
                   "NoSchedule, PreferNoSchedule, NoExecute (got 'NoScheduel')")


@pytest.mark.parametrize("field, value, path", [
    ("name", "GPU_pool", "pools[0].name"),
    ("namePrefix", "Bad Prefix", "pools[0].namePrefix"),
    ("labels", {"agentpool": True}, "pools[0].labels.agentpool"),
    ("labels", {"kubernetes.io/hostname": "x"}, "pools[0].labels.kubernetes.io/hostname"),
    ("labels", {"bad key!": "x"}, "pools[0].labels.bad key!"),
    ("taints", [{"key": "sku", "effect": "NoSchedule", "colour": "red"}], "pools[0].taints[0]"),
    ("maxnodes", 3, "pools[0]: unknown field(s) maxnodes"),
    ("topology", {"label": "topology.tau-demo.io/domain", "domains": [{"name": "rack-a", "maxNodes": "two"}]},
     "pools[0].topology.domains[0].maxNodes"),
    ("topology", {"label": "topology.tau-demo.io/domain", "domains": []}, "pools[0].topology.domains"),
    ("topology", {"label": "agentpool", "domains": [{"name": "a", "maxNodes": 1}]}, "pools[0].topology.label"),
    ("topology", {"label": "t/d", "domains": [{"name": "a", "maxNodes": 1}, {"name": "a", "maxNodes": 1}]},
     "pools[0].topology.domains[1].name"),
])
def test_field_errors_name_the_field(field, value, path):
    assert f"manifests/node-pools.yaml: {path}" in error_of(doc(**{field: value}))


def test_missing_required_field():
    d = doc()
    del d["pools"][0]["namePrefix"]
    assert error_of(d) == "manifests/node-pools.yaml: pools[0].namePrefix: is required"


@pytest.mark.parametrize("mutate, path", [
    (lambda d: d.update(kind="NodePool"), "kind"),
    (lambda d: d.update(apiVersion="v1"), "apiVersion"),
    (lambda d: d.update(pools={"name": "x"}), "pools"),
])
def test_document_errors(mutate, path):
    d = doc()
    mutate(d)
    assert error_of(d).startswith(f"manifests/node-pools.yaml: {path}: ")


def test_not_a_mapping():
    assert error_of(["pools"]).startswith("manifests/node-pools.yaml: top level: must be a mapping")


def test_configmap_round_trip():
    pools = load_pools(POOLS_FILE)
    d = doc(name="cpupool", namePrefix="aks-cpupool-vmss", taints=[], labels={"agentpool": "cpupool"})
    del d["pools"][0]["topology"]
    pools += parse_pools(d, SRC)
    cm = pools_to_configmap(pools)
    assert cm["kind"] == "ConfigMap" and cm["apiVersion"] == "v1"
    assert cm["metadata"] == {"name": "tau-demo-node-pools", "namespace": "tau-demo-system"}
    # the payload is itself a valid pools file
    assert parse_pools(yaml.safe_load(cm["data"]["pools.yaml"]), "x") == pools
    assert pools_from_configmap(cm) == pools
    assert pools_to_configmap(pools, namespace="fake-ca", name="p")["metadata"] == {"name": "p", "namespace": "fake-ca"}


def test_configmap_errors_name_the_configmap():
    with pytest.raises(PoolsError, match=r"configmap tau-demo-system/tau-demo-node-pools: data.pools.yaml: is missing"):
        pools_from_configmap({"metadata": {"name": "tau-demo-node-pools", "namespace": "tau-demo-system"}, "data": {}})
    cm = pools_to_configmap(load_pools(POOLS_FILE))
    cm["data"]["pools.yaml"] = cm["data"]["pools.yaml"].replace("maxNodes: 2\n  namePrefix", "maxNodes: -5\n  namePrefix")
    with pytest.raises(PoolsError, match=r"^configmap tau-demo-system/tau-demo-node-pools data.pools.yaml: pools\[0\].maxNodes"):
        pools_from_configmap(cm)


def test_node_manifest_shape():
    pool = load_pools(POOLS_FILE)[0]
    node = node_manifest(pool, "aks-gpupool-vmss000003", "rack-b", "uid-1", "demo/job-x-gpu-1")
    assert node["apiVersion"] == "v1" and node["kind"] == "Node"
    meta = node["metadata"]
    assert meta["name"] == "aks-gpupool-vmss000003"
    assert meta["labels"] == {
        "agentpool": "gpupool",
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
        "node.kubernetes.io/instance-type": "Standard_ND96asr_v4",
        "kubernetes.io/hostname": "aks-gpupool-vmss000003",
        "kubernetes.io/os": "linux",
        "type": "kwok",
        MANAGED_LABEL: "true",
        POOL_LABEL: "gpupool",
        "topology.tau-demo.io/domain": "rack-b",
    }
    assert meta["annotations"] == {"kwok.x-k8s.io/node": "fake", POOL_LABEL: "gpupool",
                                   PROVREQ_UID_ANNOTATION: "uid-1", PROVREQ_ANNOTATION: "demo/job-x-gpu-1"}
    assert node["spec"] == {"providerID": "kwok:aks-gpupool-vmss000003",
                            "taints": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}]}
    assert node["status"] == {"capacity": pool.capacity, "allocatable": pool.allocatable,
                              "nodeInfo": {"kubeletVersion": "fake"}}
    # the manifest is a copy: editing it does not change the pool
    node["metadata"]["labels"]["agentpool"] = "x"
    node["status"]["allocatable"]["cpu"] = "1"
    assert pool.labels["agentpool"] == "gpupool" and pool.allocatable["cpu"] == "94"


def test_node_manifest_without_domain_has_no_topology_label():
    pool = load_pools(POOLS_FILE)[0]
    node = node_manifest(pool, "n1", None, "u", "demo/x")
    assert "topology.tau-demo.io/domain" not in node["metadata"]["labels"]


def test_a_node_of_a_scale_up_carries_its_batch_size_and_a_template_no_request():
    """The batch size lets a restarted fake finish or roll back a scale-up; the planner's template of a node to
    come (no request yet) carries no request marks."""
    pool = load_pools(POOLS_FILE)[0]
    ann = node_manifest(pool, "n1", None, "u", "demo/x", batch=2)["metadata"]["annotations"]
    assert ann[BATCH_ANNOTATION] == "2" and ann[PROVREQ_UID_ANNOTATION] == "u" and ann[PROVREQ_ANNOTATION] == "demo/x"
    assert BATCH_ANNOTATION not in node_manifest(pool, "n1", None, "u", "demo/x")["metadata"]["annotations"]
    assert node_manifest(pool, "aks-gpupool-vmsstemplate")["metadata"]["annotations"] == {
        "kwok.x-k8s.io/node": "fake", POOL_LABEL: "gpupool"}
    assert PROVREQ_ANNOTATION not in node_manifest(pool, "n1", None, "u")["metadata"]["annotations"]


def test_pool_of_node():
    pool = load_pools(POOLS_FILE)[0]
    node = node_manifest(pool, "n1", None, "u", "demo/x")
    assert pool_of_node(node, [pool]) is pool
    assert pool_of_node({"metadata": {"name": "kind-control-plane", "labels": {}}}, [pool]) is None
    node["metadata"]["labels"][POOL_LABEL] = "gone"
    assert pool_of_node(node, [pool]) is None


def test_module_constants():
    assert P.MANAGED_LABEL == "fake-ca.tau-demo.io/managed"
    assert P.PROVREQ_UID_ANNOTATION == "fake-ca.tau-demo.io/provreq-uid"
    assert P.PROVREQ_ANNOTATION == "fake-ca.tau-demo.io/provreq"
    assert P.POOL_LABEL == "cluster-autoscaler.kwok.nodegroup/name"
