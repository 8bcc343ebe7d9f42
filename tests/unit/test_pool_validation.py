"""Every way a node-pools document can be wrong, with the exact message the user gets
("<source>: <field path>: <reason>"), and the boundaries of what is accepted (k8s/pools.py)."""

from __future__ import annotations

import copy

import pytest
import yaml

from k8s.pools import (Domain, PoolsError, Taint, load_pools, node_manifest, parse_pools, pools_from_configmap,
                           pools_to_configmap, pools_to_yaml)

SRC = "src"


def pool(**overrides) -> dict:
    p = {"name": "gpupool", "maxNodes": 2, "namePrefix": "aks-gpupool-vmss",
         "labels": {"agentpool": "gpupool"},
         "taints": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}],
         "capacity": {"cpu": "96", "memory": "900Gi", "nvidia.com/gpu": "8", "pods": "110"},
         "allocatable": {"cpu": "94", "memory": "880Gi", "nvidia.com/gpu": "8", "pods": "110"},
         "topology": {"label": "topology.tau-demo.io/domain",
                      "domains": [{"name": "rack-a", "maxNodes": 2}, {"name": "rack-b", "maxNodes": 2}]}}
    p.update(overrides)
    return p


def doc(*pools) -> dict:
    return {"apiVersion": "tau-demo.io/v1", "kind": "NodePoolList", "pools": list(pools) or [pool()]}


def error_of(d) -> str:
    with pytest.raises(PoolsError) as e:
        parse_pools(d, SRC)
    return str(e.value)


def without(d: dict, *keys) -> dict:
    d = copy.deepcopy(d)
    for k in keys:
        del d[k]
    return d


# ---------------------------------------------------------------------------- the document

@pytest.mark.parametrize("d, message", [
    (["pools"], "top level: must be a mapping with apiVersion, kind and pools (got a list)"),
    (None, "top level: must be a mapping with apiVersion, kind and pools (got nothing)"),
    ("pools", "top level: must be a mapping with apiVersion, kind and pools (got a string)"),
    (7, "top level: must be a mapping with apiVersion, kind and pools (got int)"),
    ({**doc(), "extra": 1, "b": 2}, "top level: unknown field(s) b, extra (allowed: apiVersion, kind, metadata, pools)"),
    ({**doc(), "apiVersion": "v1"}, "apiVersion: must be tau-demo.io/v1 (got 'v1')"),
    (without(doc(), "apiVersion"), "apiVersion: must be tau-demo.io/v1 (got None)"),
    ({**doc(), "kind": "NodePool"}, "kind: must be NodePoolList (got 'NodePool')"),
    ({**doc(), "pools": {"name": "x"}}, "pools: must be a list of pools (got a mapping)"),
    (without(doc(), "pools"), "pools: must be a list of pools (got nothing)"),
])
def test_document_errors(d, message):
    assert error_of(d) == f"{SRC}: {message}"


def test_an_empty_list_and_metadata_are_fine():
    assert parse_pools({**doc(), "pools": [], "metadata": {"name": "pools"}}, SRC) == []


# ---------------------------------------------------------------------------- one pool

@pytest.mark.parametrize("raw, message", [
    ("gpupool", "pools[0]: must be a mapping (got a string)"),
    (pool(maxnodes=3), "pools[0]: unknown field(s) maxnodes (allowed: allocatable, bootSeconds, capacity, labels, "
                       "maxNodes, minNodes, name, namePrefix, taints, topology)"),
    (without(pool(), "name"), "pools[0].name: is required"),
    (without(pool(), "maxNodes"), "pools[0].maxNodes: is required"),
    (without(pool(), "namePrefix"), "pools[0].namePrefix: is required"),
    (without(pool(), "capacity"), "pools[0].capacity: is required"),
    (without(pool(), "allocatable"), "pools[0].allocatable: is required"),
    (pool(name="GPU_pool"), "pools[0].name: must be a DNS-1123 label (lowercase letters, digits, '-', at most 63) "
                            "(got 'GPU_pool')"),
    (pool(name="a" * 64), f"pools[0].name: must be a DNS-1123 label (lowercase letters, digits, '-', at most 63) "
                          f"(got '{'a' * 64}')"),
    (pool(minNodes=-1), "pools[0].minNodes: must be a non-negative integer (got -1)"),
    (pool(minNodes=True), "pools[0].minNodes: must be a non-negative integer (got True)"),
    (pool(minNodes=3), "pools[0].maxNodes: must be an integer >= minNodes (got 2)"),
    (pool(maxNodes=-1), "pools[0].maxNodes: must be an integer >= minNodes (got -1)"),
    (pool(maxNodes=True), "pools[0].maxNodes: must be an integer >= minNodes (got True)"),
    (pool(maxNodes="2"), "pools[0].maxNodes: must be an integer >= minNodes (got '2')"),
    (pool(namePrefix=""), "pools[0].namePrefix: must be a non-empty prefix that makes a DNS-1123 node name with 6 "
                          "digits appended (got '')"),
    (pool(namePrefix=7), "pools[0].namePrefix: must be a non-empty prefix that makes a DNS-1123 node name with 6 "
                         "digits appended (got 7)"),
    (pool(namePrefix="Bad Prefix"), "pools[0].namePrefix: must be a non-empty prefix that makes a DNS-1123 node name "
                                    "with 6 digits appended (got 'Bad Prefix')"),
    (pool(namePrefix="a" * 248), "pools[0].namePrefix: must be a non-empty prefix that makes a DNS-1123 node name "
                                 f"with 6 digits appended (got '{'a' * 248}')"),
])
def test_pool_errors(raw, message):
    assert error_of(doc(raw)) == f"{SRC}: {message}"


def test_boundaries_that_are_accepted():
    [p] = parse_pools(doc(pool(name="a" * 63, namePrefix="a" * 247, maxNodes=0)), SRC)
    assert (p.name, len(p.name_prefix), p.min_nodes, p.max_nodes) == ("a" * 63, 247, 0, 0)
    [p] = parse_pools(doc(pool(minNodes=2, maxNodes=2)), SRC)
    assert (p.min_nodes, p.max_nodes) == (2, 2)


# ---------------------------------------------------------------------------- labels and taints

@pytest.mark.parametrize("labels, message", [
    (["agentpool"], "pools[0].labels: must be a mapping (got a list)"),
    ({"bad key!": "x"}, "pools[0].labels.bad key!: is not a valid label key"),
    ({"Bad_Prefix/key": "x"}, "pools[0].labels.Bad_Prefix/key: is not a valid label key"),
    ({"k" * 64: "x"}, f"pools[0].labels.{'k' * 64}: is not a valid label key"),
    ({"kubernetes.io/hostname": "x"}, "pools[0].labels.kubernetes.io/hostname: is set by the fake autoscaler on every "
                                      "node; a pool may not set it"),
    ({"type": "x"}, "pools[0].labels.type: is set by the fake autoscaler on every node; a pool may not set it"),
    ({"agentpool": True}, "pools[0].labels.agentpool: must be a string; quote it (got True)"),
    ({"agentpool": "-bad"}, "pools[0].labels.agentpool: is not a valid label value (got '-bad')"),
    ({"agentpool": "v" * 64}, f"pools[0].labels.agentpool: is not a valid label value (got '{'v' * 64}')"),
])
def test_label_errors(labels, message):
    assert error_of(doc(pool(labels=labels))) == f"{SRC}: {message}"


def test_labels_that_are_accepted():
    labels = {"example.com/" + "k" * 63: "v" * 63, "empty": "", "a.b_c-d": "X.y_z-1"}
    [p] = parse_pools(doc(pool(labels=labels)), SRC)
    assert p.labels == labels
    [p] = parse_pools(doc(pool(labels=None)), SRC)
    assert p.labels == {}
    [p] = parse_pools(doc(without(pool(), "labels")), SRC)
    assert p.labels == {}


@pytest.mark.parametrize("taints, message", [
    ({"key": "sku"}, "pools[0].taints: must be a list (got a mapping)"),
    (["sku"], "pools[0].taints[0]: must be a mapping (got a string)"),
    ([{"key": "sku", "effect": "NoSchedule", "colour": "red"}],
     "pools[0].taints[0]: unknown field(s) colour (allowed: effect, key, value)"),
    ([{"effect": "NoSchedule"}], "pools[0].taints[0].key: must be a valid label key (got None)"),
    ([{"key": "bad key", "effect": "NoSchedule"}], "pools[0].taints[0].key: must be a valid label key (got 'bad key')"),
    ([{"key": "sku", "value": 5, "effect": "NoSchedule"}], "pools[0].taints[0].value: must be a valid label value "
                                                           "string (got 5)"),
    ([{"key": "sku", "value": "-x", "effect": "NoSchedule"}], "pools[0].taints[0].value: must be a valid label value "
                                                              "string (got '-x')"),
    ([{"key": "sku", "effect": "Never"}], "pools[0].taints[0].effect: must be one of NoSchedule, PreferNoSchedule, "
                                         "NoExecute (got 'Never')"),
    ([{"key": "sku", "value": "a", "effect": "NoSchedule"}, {"key": "sku", "value": "b", "effect": "NoSchedule"}],
     "pools[0].taints[1]: duplicate taint sku:NoSchedule"),
])
def test_taint_errors(taints, message):
    assert error_of(doc(pool(taints=taints))) == f"{SRC}: {message}"


def test_taints_that_are_accepted():
    taints = [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}, {"key": "sku", "effect": "NoExecute"},
              {"key": "spot", "value": None, "effect": "NoSchedule"}, {"key": "x", "effect": "PreferNoSchedule"}]
    [p] = parse_pools(doc(pool(taints=taints)), SRC)
    assert p.taints == (Taint("sku", "gpu", "NoSchedule"), Taint("sku", "", "NoExecute"), Taint("spot", "", "NoSchedule"),
                        Taint("x", "", "PreferNoSchedule"))
    assert parse_pools(doc(pool(taints=None)), SRC)[0].taints == ()
    assert parse_pools(doc(without(pool(), "taints")), SRC)[0].taints == ()


# ---------------------------------------------------------------------------- capacity and allocatable

def resources(**extra):
    r = {"cpu": "96", "memory": "900Gi", "pods": "110"}
    r.update(extra)
    return r


@pytest.mark.parametrize("field, value, message", [
    ("capacity", ["cpu"], "pools[0].capacity: must be a mapping (got a list)"),
    ("capacity", resources(**{"bad name": "1"}), "pools[0].capacity.bad name: is not a valid resource name"),
    ("capacity", resources(cpu=True), "pools[0].capacity.cpu: must be a quantity such as \"8\" or 900Gi (got True)"),
    ("capacity", resources(cpu=["8"]), "pools[0].capacity.cpu: must be a quantity such as \"8\" or 900Gi (got ['8'])"),
    ("capacity", resources(cpu="lots"), "pools[0].capacity.cpu: invalid quantity 'lots': expected a number with an "
                                        "optional suffix or exponent, e.g. 500m, 2, 1.5, 900Gi, 2e3"),
    ("capacity", resources(cpu="-1"), "pools[0].capacity.cpu: must not be negative (got -1)"),
    ("capacity", resources(cpu=-1), "pools[0].capacity.cpu: must not be negative (got -1)"),
    ("capacity", resources(cpu="1e30"), "pools[0].capacity.cpu: is absurdly large (got 1e30)"),
    ("capacity", {"cpu": "96", "memory": "900Gi"}, "pools[0].capacity.pods: is required (every node reports cpu, "
                                                   "memory and pods)"),
    ("allocatable", resources(**{"nvidia.com/gpu": "8", "example.com/fpga": "1"}),
     "pools[0].allocatable.example.com/fpga: is not in capacity"),
])
def test_resource_errors(field, value, message):
    assert error_of(doc(pool(**{field: value}))) == f"{SRC}: {message}"


def test_resources_that_are_accepted():
    cap = resources(**{"nvidia.com/gpu": "0", "example.com/big": "9223372036854775807m"})
    [p] = parse_pools(doc(pool(capacity=cap, allocatable=resources(cpu=94.5))), SRC)
    assert p.capacity == cap and p.allocatable["cpu"] == "94.5"


# ---------------------------------------------------------------------------- topology

@pytest.mark.parametrize("topology, message", [
    ("racks", "pools[0].topology: must be a mapping (got a string)"),
    ({"label": "t/d", "domains": [{"name": "a", "maxNodes": 1}], "levels": 2},
     "pools[0].topology: unknown field(s) levels (allowed: domains, label)"),
    ({"label": "bad key", "domains": [{"name": "a", "maxNodes": 1}]},
     "pools[0].topology.label: must be a valid label key (got 'bad key')"),
    ({"label": "kubernetes.io/hostname", "domains": [{"name": "a", "maxNodes": 1}]},
     "pools[0].topology.label: kubernetes.io/hostname is already a node label of this pool"),
    ({"label": "agentpool", "domains": [{"name": "a", "maxNodes": 1}]},
     "pools[0].topology.label: agentpool is already a node label of this pool"),
    ({"label": "t/d"}, "pools[0].topology.domains: must be a non-empty list (got nothing)"),
    ({"label": "t/d", "domains": []}, "pools[0].topology.domains: must be a non-empty list (got a list)"),
    ({"label": "t/d", "domains": ["a"]}, "pools[0].topology.domains[0]: must be a mapping (got a string)"),
    ({"label": "t/d", "domains": [{"name": "a", "maxNodes": 1, "zone": "z"}]},
     "pools[0].topology.domains[0]: unknown field(s) zone (allowed: maxNodes, name)"),
    ({"label": "t/d", "domains": [{"name": "Rack A", "maxNodes": 1}]},
     "pools[0].topology.domains[0].name: must be a DNS-1123 label (got 'Rack A')"),
    ({"label": "t/d", "domains": [{"name": "a", "maxNodes": 1}, {"name": "a", "maxNodes": 1}]},
     "pools[0].topology.domains[1].name: duplicate domain 'a'"),
    ({"label": "t/d", "domains": [{"name": "a"}]}, "pools[0].topology.domains[0].maxNodes: is required"),
    ({"label": "t/d", "domains": [{"name": "a", "maxNodes": -1}]},
     "pools[0].topology.domains[0].maxNodes: must be a non-negative integer (got -1)"),
])
def test_topology_errors(topology, message):
    assert error_of(doc(pool(topology=topology))) == f"{SRC}: {message}"


def test_topology_domains_are_read_in_order():
    [p] = parse_pools(doc(pool(topology={"label": "t/d", "domains": [{"name": "b", "maxNodes": 0},
                                                                     {"name": "a", "maxNodes": 3}]})), SRC)
    assert (p.topology_label, p.domains) == ("t/d", (Domain("b", 0), Domain("a", 3)))
    [p] = parse_pools(doc(pool(topology=None)), SRC)
    assert (p.topology_label, p.domains) == (None, ())


# ---------------------------------------------------------------------------- several pools

def test_duplicate_prefixes_name_the_first_pool_that_has_it():
    pools = [pool(), pool(name="cpupool", namePrefix="aks-cpupool-vmss"), pool(name="other")]
    assert error_of(doc(*pools)) == (f"{SRC}: pools[2].namePrefix: duplicate namePrefix 'aks-gpupool-vmss' "
                                     "(also pools[0]); node names would clash")
    pools = [pool(), pool(name="cpupool", namePrefix="aks-cpupool-vmss"), pool(namePrefix="x-")]
    assert error_of(doc(*pools)) == f"{SRC}: pools[2].name: duplicate pool name 'gpupool' (also pools[0])"


# ---------------------------------------------------------------------------- files, YAML and ConfigMaps

def test_files_say_why_they_cannot_be_read(tmp_path):
    with pytest.raises(PoolsError) as e:
        load_pools(tmp_path / "missing.yaml")
    assert str(e.value) == f"{tmp_path}/missing.yaml: cannot read: No such file or directory"
    bad = tmp_path / "bad.yaml"
    bad.write_text("pools: [\n")
    with pytest.raises(PoolsError) as e:
        load_pools(bad)
    assert str(e.value) == (f"{bad}: invalid YAML: while parsing a flow node expected the node content, but found "
                            "'<stream end>' in \"<unicode string>\", line 2, column 1: ^")


def test_the_yaml_written_for_the_configmap_is_the_file_format_in_field_order():
    [p] = parse_pools(doc(pool(taints=[{"key": "sku", "value": "gpu", "effect": "NoSchedule"},
                                       {"key": "spot", "effect": "NoExecute"}],
                               capacity=resources(), allocatable=resources(cpu="94", memory="880Gi"),
                               topology={"label": "topology.tau-demo.io/domain",
                                         "domains": [{"name": "rack-a", "maxNodes": 2}]})), SRC)
    assert pools_to_yaml([p]) == """\
apiVersion: tau-demo.io/v1
kind: NodePoolList
pools:
- name: gpupool
  minNodes: 0
  maxNodes: 2
  namePrefix: aks-gpupool-vmss
  labels:
    agentpool: gpupool
  taints:
  - key: sku
    value: gpu
    effect: NoSchedule
  - key: spot
    value: ''
    effect: NoExecute
  capacity:
    cpu: '96'
    memory: 900Gi
    pods: '110'
  allocatable:
    cpu: '94'
    memory: 880Gi
    pods: '110'
  topology:
    label: topology.tau-demo.io/domain
    domains:
    - name: rack-a
      maxNodes: 2
"""


@pytest.mark.parametrize("cm, source", [
    ({"data": {}}, "configmap ?/?"),
    ({"metadata": "junk", "data": {}}, "configmap ?/?"),
    ("junk", "configmap ?/?"),
    ({"metadata": {"namespace": "kube-system"}, "data": {"pools.yaml": 7}}, "configmap kube-system/?"),
    ({"metadata": {"name": "p"}, "data": "junk"}, "configmap ?/p"),
])
def test_a_configmap_without_the_pools_is_named(cm, source):
    with pytest.raises(PoolsError) as e:
        pools_from_configmap(cm)
    assert str(e.value) == f"{source}: data.pools.yaml: is missing"


def test_configmap_round_trip_keeps_every_field():
    pools = parse_pools(doc(pool(minNodes=1), pool(name="cpupool", namePrefix="c-", taints=[], topology=None)), SRC)
    assert pools_from_configmap(pools_to_configmap(pools)) == pools


def test_a_node_can_only_be_placed_in_a_domain_of_a_pool_with_topology():
    [p] = parse_pools(doc(pool(topology=None)), SRC)
    with pytest.raises(ValueError) as e:
        node_manifest(p, "n1", "rack-a", "u", "demo/x")
    assert str(e.value) == "pool gpupool has no topology; cannot place node n1 in domain rack-a"


# ---------------------------------------------------------------------------- boot time

@pytest.mark.parametrize("value, seconds", [(15, 15.0), (0, 0.0), (2.5, 2.5), (24 * 3600, 86400.0)])
def test_boot_seconds_from_zero_to_a_day(value, seconds):
    [p] = parse_pools(doc(pool(bootSeconds=value)), SRC)
    assert p.boot_seconds == seconds and isinstance(p.boot_seconds, float)


def test_without_boot_seconds_a_node_boots_at_once():
    [p] = parse_pools(doc(pool()), SRC)
    assert p.boot_seconds == 0.0


@pytest.mark.parametrize("value", [-1, 24 * 3600 + 1, "15", True, None, [15], "Never"])
def test_boot_seconds_that_are_no_time_are_refused(value):
    assert error_of(doc(pool(bootSeconds=value))) == \
        f"{SRC}: pools[0].bootSeconds: must be a number of seconds from 0 to 86400 or \"never\" (got {value!r})"


def test_a_node_for_no_request_and_the_batch_it_came_in():
    [p] = parse_pools(doc(pool()), SRC)
    from k8s.keys import BATCH_ANNOTATION, PROVREQ_ANNOTATION, PROVREQ_UID_ANNOTATION
    ann = node_manifest(p, "n")["metadata"]["annotations"]
    assert PROVREQ_UID_ANNOTATION not in ann and PROVREQ_ANNOTATION not in ann and BATCH_ANNOTATION not in ann
    assert node_manifest(p, "n", batch=2)["metadata"]["annotations"][BATCH_ANNOTATION] == "2"


def test_a_pool_whose_vms_never_boot_and_its_kwok_provider_template():
    [p] = parse_pools(doc(pool(bootSeconds="never")), SRC)
    assert p.boot_seconds == float("inf")
    assert "bootSeconds: never" in pools_to_yaml([p])
    assert parse_pools(yaml.safe_load(pools_to_yaml([p])), SRC) == [p]
    template = node_manifest(p, "t", kwok_provider_template=True)
    assert template["metadata"]["annotations"]["fake-ca.tau-demo.io/boots-at"] == "never"
    [quick] = parse_pools(doc(pool(bootSeconds=15)), SRC)
    assert "fake-ca.tau-demo.io/boots-at" not in node_manifest(quick, "t", kwok_provider_template=True)["metadata"][
        "annotations"]


def test_a_booting_node_reports_ready_false_as_a_starting_kubelet():
    [p] = parse_pools(doc(pool()), SRC)
    n = node_manifest(p, "aks-gpupool-vmss000001", "rack-a", "uid-1", "demo/req", boots_at="2026-01-01T00:00:15Z")
    assert n["status"]["conditions"] == [{"type": "Ready", "status": "False", "reason": "KubeletNotReady",
                                          "message": "the VM is booting (fake-ca)"}]
    assert n["metadata"]["annotations"]["fake-ca.tau-demo.io/boots-at"] == "2026-01-01T00:00:15Z"
    assert {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"} in n["spec"]["taints"]
    assert "conditions" not in node_manifest(p, "n", "rack-a", "uid-1", "demo/req")["status"]
