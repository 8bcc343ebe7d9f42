"""The placement decision, on plain objects shaped like the real cluster's."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from fake_ca import planner
from k8s.keys import BEST_EFFORT_ATOMIC, CHECK_CAPACITY, SLOT_PREFIX, TOPOLOGY_LEVEL_LABEL
from fake_ca.planner import Verdict, plan
from fake_ca.request import SUPPORTED_CLASSES, PodSet, RequestError, gang_request, pod_requests, request_from_objects
from fake_ca.scheduling import tolerates
from k8s.pools import load_pools, node_manifest, parse_pools

POOLS_FILE = Path(__file__).resolve().parents[2] / "manifests" / "node-pools.yaml"
# the demo's own pools: the walkthrough slots' (wt-..., copies of gpupool) would only lengthen every explanation
POOLS = [p for p in load_pools(POOLS_FILE) if not p.name.startswith(SLOT_PREFIX)]
GPUPOOL = POOLS[0]
SEL = {"agentpool": "gpupool"}
TOL = [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
KEY = "demo/job-x-gpu-1"
TPL = "ppt-job-x-gpu-1-main"


# ---------------------------------------------------------------------------- builders

def make_pools(*specs: dict) -> list:
    """Pools from partial specs; each defaults to a gpupool-like shape without topology."""
    out = []
    for i, spec in enumerate(specs):
        pool = {"name": f"pool{i}", "maxNodes": 2, "namePrefix": f"aks-pool{i}-vmss",
                "labels": {"agentpool": "gpupool"},
                "taints": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}],
                "capacity": {"cpu": "96", "memory": "900Gi", "nvidia.com/gpu": "8", "pods": "110"},
                "allocatable": {"cpu": "94", "memory": "880Gi", "nvidia.com/gpu": "8", "pods": "110"}}
        pool.update(spec)
        out.append(pool)
    return parse_pools({"apiVersion": "tau-demo.io/v1", "kind": "NodePoolList", "pools": out}, "test")


def racks(a: int = 2, b: int = 2) -> dict:
    return {"label": "topology.tau-demo.io/domain",
            "domains": [{"name": "rack-a", "maxNodes": a}, {"name": "rack-b", "maxNodes": b}]}


def template(name=TPL, gpus=8, cpu="8", memory="64Gi", node_selector=SEL, tolerations=TOL, labels=None,
             affinity=None, namespace="demo", containers=None) -> dict:
    requests = {"cpu": cpu, "memory": memory}
    if gpus:
        requests["nvidia.com/gpu"] = str(gpus)
    spec = {"restartPolicy": "Never",
            "containers": containers or [{"name": "main", "image": "busybox", "resources": {"requests": requests}}]}
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        spec["tolerations"] = copy.deepcopy(tolerations)
    if affinity:
        spec["affinity"] = affinity
    return {"apiVersion": "v1", "kind": "PodTemplate",
            "metadata": {"name": name, "namespace": namespace},
            "template": {"metadata": {"labels": {"kueue.x-k8s.io/managed": "true", **(labels or {})}}, "spec": spec}}


def provreq(*podsets: tuple[str, int], cls=BEST_EFFORT_ATOMIC, parameters=None, name="job-x-gpu-1",
            uid="uid-x") -> dict:
    spec = {"provisioningClassName": cls,
            "podSets": [{"podTemplateRef": {"name": t}, "count": c} for t, c in podsets or [(TPL, 2)]]}
    if parameters is not None:
        spec["parameters"] = parameters
    return {"apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
            "metadata": {"name": name, "namespace": "demo", "uid": uid}, "spec": spec}


def request(count=2, cls=BEST_EFFORT_ATOMIC, uid="uid-x", **tkw):
    """A one-podset request of `count` pods of template(**tkw)."""
    return request_from_objects(provreq((TPL, count), cls=cls, uid=uid), {TPL: template(**tkw)})


def node(name, pool=GPUPOOL, domain=None, ready=True, labels=None, **spec) -> dict:
    n = node_manifest(pool, name, domain, "uid-old", "demo/old")
    n["metadata"]["labels"].update(labels or {})
    n["spec"].update(spec)
    n["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return n


def pod(node_name, gpus=8, phase="Running", name=None) -> dict:
    return {"metadata": {"name": name or f"p-{node_name}-{gpus}", "namespace": "demo"},
            "spec": {"nodeName": node_name,
                     "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": str(gpus), "cpu": "1"}}}]},
            "status": {"phase": phase}}


# ---------------------------------------------------------------------------- new nodes

def test_exact_fit_2x8_on_gpupool_max_2():
    v = plan(request(2), POOLS, [], [])
    assert (v.fits, v.status_reason, v.pool.name, v.new_nodes, v.max_nodes, v.pool_size) == \
        (True, "CapacityIsProvisioned", "gpupool", 2, 2, 0)
    assert v.new_node_pods == [[0], [1]] and v.nodes_to_create == 2
    assert v.placements == []
    assert v.domain is None                                   # no topology constraint
    assert v.new_node_domains == ["rack-a", "rack-a"]         # but every new node gets a rack
    assert v.line(KEY) == "provreq demo/job-x-gpu-1: gang needs 2 node(s) of gpupool (max 2): fits"


def test_several_pods_per_node():
    v = plan(request(4, gpus=2), POOLS, [], [])
    assert v.fits and v.new_nodes == 1 and v.new_node_pods == [[0, 1, 2, 3]]


def test_cpu_can_be_the_binding_resource():
    v = plan(request(3, gpus=1, cpu="40"), POOLS, [], [])      # 94 cpu per node: 2 pods per node
    assert v.fits and v.new_node_pods == [[0, 1], [2]]


def test_bin_packing_is_first_fit_decreasing():
    tpls = {"small": template("small", gpus=2), "big": template("big", gpus=6)}
    req = request_from_objects(provreq(("small", 2), ("big", 2)), tpls)
    v = plan(req, POOLS, [], [])
    # pod indexes: 0, 1 small; 2, 3 big.  In request order first fit would need 3 nodes.
    assert v.fits and v.new_nodes == 2
    assert sorted(v.new_node_pods) == [[0, 2], [1, 3]]


def test_pods_slot_limit_counts():
    pools = make_pools({"capacity": {"cpu": "96", "memory": "900Gi", "nvidia.com/gpu": "8", "pods": "3"},
                        "allocatable": {"cpu": "94", "memory": "880Gi", "nvidia.com/gpu": "8", "pods": "3"}})
    v = plan(request(4, gpus=1, cpu="1"), pools, [], [])
    assert v.fits and v.new_node_pods == [[0, 1, 2], [3]]


def test_pod_larger_than_any_node():
    v = plan(request(1, gpus=16), POOLS, [], [])
    assert not v.fits and v.status_reason == "CapacityIsNotFound"
    assert v.pool is None and v.new_nodes == 0 and v.new_node_pods == []
    assert v.line(KEY) == ("provreq demo/job-x-gpu-1: does not fit: pod of ppt-job-x-gpu-1-main needs "
                           "nvidia.com/gpu=16 but the largest node of any pool that admits it has 8")


def test_largest_node_reason_considers_only_pools_that_admit_the_pod():
    big_untolerated = {"name": "big", "namePrefix": "aks-big-vmss", "taints": [{"key": "x", "effect": "NoSchedule"}],
                       "capacity": {"cpu": "96", "memory": "900Gi", "nvidia.com/gpu": "32", "pods": "110"},
                       "allocatable": {"cpu": "94", "memory": "880Gi", "nvidia.com/gpu": "32", "pods": "110"}}
    v = plan(request(1, gpus=16), make_pools({}, big_untolerated), [], [])
    assert v.reason.endswith("needs nvidia.com/gpu=16 but the largest node of any pool that admits it has 8")


def test_memory_is_reported_in_binary_units():
    v = plan(request(1, memory="1Ti"), POOLS, [], [])
    assert v.reason.endswith("needs memory=1Ti but the largest node of any pool that admits it has 880Gi")


def test_max_exceeded_creates_nothing():
    v = plan(request(3), POOLS, [], [])
    assert (v.fits, v.status_reason) == (False, "CapacityIsNotFound")
    assert v.new_node_pods == [] and v.nodes_to_create == 0 and v.new_node_domains == []
    assert (v.pool.name, v.new_nodes, v.max_nodes, v.pool_size) == ("gpupool", 3, 2, 0)
    assert v.line(KEY) == ("provreq demo/job-x-gpu-1: gang needs 3 node(s) of gpupool (max 2): does not fit: "
                           "pool gpupool has 0 node(s) and max 2, 3 more needed")


def test_pool_size_counts_existing_nodes_but_not_deleting_ones():
    full = node("aks-gpupool-vmss000000")
    going = node("aks-gpupool-vmss000001")
    going["metadata"]["deletionTimestamp"] = "2026-11-29T12:00:00Z"
    v = plan(request(2), POOLS, [full, going], [pod("aks-gpupool-vmss000000")])
    assert not v.fits and v.pool_size == 1
    assert v.reason == "pool gpupool has 1 node(s) and max 2, 2 more needed"
    assert plan(request(1), POOLS, [full, going], [pod("aks-gpupool-vmss000000")]).fits


def test_first_pool_in_file_order_that_is_an_option():
    small, large = {"name": "small", "namePrefix": "s-", "maxNodes": 1}, {"name": "large", "namePrefix": "l-", "maxNodes": 4}
    v = plan(request(2), make_pools(small, large), [], [])
    assert v.fits and v.pool.name == "large" and v.max_nodes == 4
    v = plan(request(1), make_pools(small, large), [], [])
    assert v.fits and v.pool.name == "small"


def test_refusal_names_the_first_pool_that_admits_the_shape():
    other = {"name": "cpu", "namePrefix": "c-", "labels": {"agentpool": "cpupool"}, "maxNodes": 10}
    v = plan(request(3), make_pools(other, {"name": "gpu", "namePrefix": "g-"}), [], [])
    assert not v.fits and v.pool.name == "gpu" and v.new_nodes == 3
    assert v.reason == "pool gpu has 0 node(s) and max 2, 3 more needed"


def test_node_selector_mismatch():
    v = plan(request(1, node_selector={"agentpool": "cpupool"}), POOLS, [], [])
    assert not v.fits and v.pool is None
    assert v.reason == ("pod of ppt-job-x-gpu-1-main matches no pool (gpupool: nodeSelector agentpool=cpupool "
                        "does not match (agentpool=gpupool); ondemand: nodeSelector agentpool=cpupool does not match "
                        "(agentpool=ondemand))")


def test_untolerated_taint():
    v = plan(request(1, tolerations=None), POOLS, [], [])
    assert not v.fits
    assert v.reason == ("pod of ppt-job-x-gpu-1-main matches no pool (gpupool: taint sku=gpu:NoSchedule is not "
                        "tolerated; ondemand: nodeSelector agentpool=gpupool does not match (agentpool=ondemand))")


def test_prefer_no_schedule_taints_do_not_block():
    pools = make_pools({"taints": [{"key": "sku", "value": "gpu", "effect": "PreferNoSchedule"}]})
    assert plan(request(1, tolerations=None), pools, [], []).fits


@pytest.mark.parametrize("toleration, ok", [
    ({"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}, True),
    ({"key": "sku", "value": "gpu"}, True),                          # empty effect matches every effect
    ({"key": "sku", "operator": "Exists"}, True),
    ({"operator": "Exists"}, True),                                  # empty key + Exists tolerates everything
    ({"key": "sku", "operator": "Equal", "value": "cpu", "effect": "NoSchedule"}, False),
    ({"key": "sku", "operator": "Exists", "effect": "NoExecute"}, False),
    ({"key": "other", "operator": "Exists"}, False),
])
def test_toleration_semantics(toleration, ok):
    assert tolerates(toleration, {"key": "sku", "value": "gpu", "effect": "NoSchedule"}) is ok
    assert plan(request(1, tolerations=[toleration]), POOLS, [], []).fits is ok


def _affinity(*terms):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def _expr(key, op, *values):
    e = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


@pytest.mark.parametrize("expr, ok", [
    (_expr("gpus", "In", "4", "8"), True),
    (_expr("gpus", "In", "4"), False),
    (_expr("gpus", "NotIn", "4"), True),
    (_expr("gpus", "NotIn", "8"), False),
    (_expr("missing", "NotIn", "8"), True),          # NotIn matches an absent label
    (_expr("gpus", "Exists"), True),
    (_expr("missing", "Exists"), False),
    (_expr("missing", "DoesNotExist"), True),
    (_expr("gpus", "DoesNotExist"), False),
    (_expr("gpus", "Gt", "7"), True),
    (_expr("gpus", "Gt", "8"), False),
    (_expr("gpus", "Lt", "9"), True),
    (_expr("gpus", "Lt", "8"), False),
    (_expr("agentpool", "Gt", "1"), False),          # a non-numeric label never satisfies Gt/Lt
])
def test_affinity_operators(expr, ok):
    pools = make_pools({"labels": {"agentpool": "gpupool", "gpus": "8"}})
    assert plan(request(1, affinity=_affinity({"matchExpressions": [expr]})), pools, [], []).fits is ok


def test_affinity_terms_are_ored_and_expressions_anded():
    pools = make_pools({"labels": {"agentpool": "gpupool", "gpus": "8"}})
    yes, no = _expr("gpus", "In", "8"), _expr("gpus", "In", "4")
    assert plan(request(1, affinity=_affinity({"matchExpressions": [no]}, {"matchExpressions": [yes]})), pools, [], []).fits
    assert not plan(request(1, affinity=_affinity({"matchExpressions": [yes, no]})), pools, [], []).fits
    v = plan(request(1, affinity=_affinity({"matchExpressions": [yes, no]})), pools, [], [])
    assert "required node affinity does not match" in v.reason


def test_affinity_match_fields_on_existing_nodes():
    nodes = [node("n1"), node("n2")]
    terms = _affinity({"matchFields": [_expr("metadata.name", "In", "n2")]})
    v = plan(request(1, affinity=terms, cls=CHECK_CAPACITY), POOLS, nodes, [])
    assert v.fits and v.placements == [(0, "n2")]


@pytest.mark.parametrize("op", ["Exists", "DoesNotExist"])
def test_a_fresh_node_carries_its_hostname_label_for_affinity(op):
    """A node the scale-up would create has a name, and so a kubernetes.io/hostname label (as a kubelet
    registers it), before it exists: a 2 x 8 gang that requires the label fits on fresh nodes, one that
    forbids it matches no pool."""
    aff = _affinity({"matchExpressions": [_expr("kubernetes.io/hostname", op)]})
    v = plan(request(2, affinity=aff), POOLS, [], [])
    if op == "Exists":
        assert (v.fits, v.status_reason, v.pool.name, v.new_node_pods) == \
            (True, "CapacityIsProvisioned", "gpupool", [[0], [1]])
        assert v.line(KEY) == "provreq demo/job-x-gpu-1: gang needs 2 node(s) of gpupool (max 2): fits"
    else:
        assert (v.fits, v.status_reason, v.pool) == (False, "CapacityIsNotFound", None)
        assert v.line(KEY) == ("provreq demo/job-x-gpu-1: does not fit: pod of ppt-job-x-gpu-1-main matches no pool "
                               "(gpupool: required node affinity does not match; "
                               "ondemand: nodeSelector agentpool=gpupool does not match (agentpool=ondemand))")


# ---------------------------------------------------------------------------- existing capacity

def test_check_capacity_fits_on_existing_nodes():
    nodes = [node("n2"), node("n1")]
    v = plan(request(2, cls=CHECK_CAPACITY), POOLS, nodes, [])
    assert (v.fits, v.status_reason, v.pool, v.new_nodes) == (True, "CapacityIsFound", None, 0)
    assert v.placements == [(0, "n1"), (1, "n2")]         # first fit in node-name order
    assert v.line(KEY) == "provreq demo/job-x-gpu-1: fits on existing capacity (2 pod(s) on 2 node(s)): no node needed"


def test_check_capacity_never_scales_up():
    pools = make_pools({"name": "gpupool", "namePrefix": "g-", "maxNodes": 10})
    nodes = [node("n1", pool=pools[0]), node("n2", pool=pools[0])]
    v = plan(request(3, cls=CHECK_CAPACITY), pools, nodes, [])
    assert (v.fits, v.status_reason) == (False, "CapacityIsNotFound")
    assert v.new_nodes == 0 and v.new_node_pods == [] and v.nodes_to_create == 0 and v.pool is None
    assert v.line(KEY).startswith("provreq demo/job-x-gpu-1: does not fit: check-capacity never adds nodes")
    # the same request with best-effort-atomic scales up by the one missing node
    v = plan(request(3), pools, nodes, [])
    assert v.fits and v.new_nodes == 1 and v.new_node_pods == [[2]] and v.pool_size == 2


def test_best_effort_atomic_uses_existing_capacity_first():
    v = plan(request(4, gpus=2), POOLS, [node("n1")], [])
    assert (v.fits, v.status_reason) == (True, "CapacityIsFound")
    assert v.new_node_pods == [] and v.placements == [(i, "n1") for i in range(4)]
    assert v.line(KEY) == "provreq demo/job-x-gpu-1: fits on existing capacity (4 pod(s) on 1 node(s)): no node needed"


def test_running_pods_use_capacity_and_finished_ones_do_not():
    nodes = [node("n1")]
    half_used = [pod("n1", gpus=4), pod("n1", gpus=4, phase="Succeeded", name="done"),
                 pod("n1", gpus=4, phase="Failed", name="failed")]
    v = plan(request(2, gpus=4), POOLS, nodes, half_used)
    assert (v.fits, v.status_reason) == (True, "CapacityIsProvisioned")
    assert v.placements == [(0, "n1")] and v.new_node_pods == [[1]]
    assert (v.pool_size, v.new_nodes) == (1, 1)
    assert v.line(KEY) == "provreq demo/job-x-gpu-1: gang needs 1 node(s) of gpupool (max 2): fits"


def test_pods_on_other_nodes_do_not_count():
    v = plan(request(1, cls=CHECK_CAPACITY), POOLS, [node("n1")], [pod("elsewhere")])
    assert v.fits and v.placements == [(0, "n1")]


def test_booked_pods_of_another_request_take_their_capacity():
    nodes = [node("n1")]
    other = request(1, uid="uid-other").expand()            # one booked 8-GPU pod
    v = plan(request(1, cls=CHECK_CAPACITY), POOLS, nodes, [], booked=other)
    assert not v.fits and "do not fit on existing capacity" in v.reason
    v = plan(request(1, cls=CHECK_CAPACITY), POOLS, nodes, [], booked=[])
    assert v.fits and v.placements == [(0, "n1")]
    v = plan(request(1), POOLS, nodes, [], booked=other)
    assert v.fits and v.new_nodes == 1 and v.pool_size == 1     # booked nodes still count toward the pool size


def test_booking_is_pod_sized_the_rest_of_the_node_stays_free():
    nodes = [node("n1")]
    half = request(1, gpus=4, uid="uid-other").expand()     # books 4 of the node's 8 GPUs
    v = plan(request(1, gpus=4, cls=CHECK_CAPACITY), POOLS, nodes, [], booked=half)
    assert v.fits and v.placements == [(0, "n1")]
    v = plan(request(2, gpus=4, cls=CHECK_CAPACITY), POOLS, nodes, [], booked=half)
    assert not v.fits


def test_two_requests_cannot_both_find_the_same_free_node():
    """The first is Provisioned (CapacityIsFound) and books its pod; the second sees the node taken."""
    nodes = [node("n1")]
    first = request(1, cls=CHECK_CAPACITY, uid="uid-a")
    assert plan(first, POOLS, nodes, []).fits
    second = request(1, cls=CHECK_CAPACITY, uid="uid-b")
    assert not plan(second, POOLS, nodes, [], booked=first.expand()).fits


def test_a_booked_pod_that_fits_nowhere_books_nothing():
    nodes = [node("n1")]
    huge = request(1, gpus=16, uid="uid-other").expand()
    assert plan(request(1, cls=CHECK_CAPACITY), POOLS, nodes, [], booked=huge).fits


def gpus(n: int, name="main", tolerations=TOL, terms=()) -> PodSet:
    """One booked pod of n GPUs, as the request it came from would expand (the gpupool's selector)."""
    return PodSet(name, 1, {"nvidia.com/gpu": n * 1000}, dict(SEL), copy.deepcopy(tolerations), list(terms))


def free_of(nodes, pods=()):
    from fake_ca.scheduling import free_capacity
    return free_capacity(nodes, list(pods))


def test_booking_is_first_fit_for_every_shape_on_its_own():
    """A pod of one shape never fits before the node where the last pod of that shape went (capacity only
    shrinks), so its search starts there; a pod of another shape starts from the first node again."""
    nodes = [node("n1"), node("n2"), node("n3")]
    free = free_of(nodes, [pod("n1", gpus=4)])                   # n1 has 4 GPUs left, n2 and n3 have 8
    assert planner.reserve([gpus(8), gpus(4), gpus(8), gpus(8), gpus(8)], nodes, free) == ["n2", "n1", "n3"]
    assert [f["nvidia.com/gpu"] for f in free.values()] == [0, 0, 0]


def test_pods_that_differ_only_in_tolerations_or_affinity_are_shapes_of_their_own():
    tainted = node("n1")                                          # the gpupool's taint: sku=gpu:NoSchedule
    plain = node("n2", taints=[])
    untolerating = gpus(4, tolerations=[])
    only_n2 = gpus(4, terms=[{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}])
    assert planner.reserve([untolerating, gpus(4)], [tainted, plain], free_of([tainted, plain])) == ["n2", "n1"]
    assert planner.reserve([only_n2, gpus(4)], [tainted, plain], free_of([tainted, plain])) == ["n2", "n1"]


def test_a_booked_pod_is_searched_for_past_nodes_it_does_not_fit():
    nodes = [node("n1"), node("n2"), node("n3"), node("n4")]
    free = free_of(nodes, [pod("n1"), pod("n2"), pod("n3")])     # only n4 has room
    assert planner.reserve([gpus(8)], nodes, free) == ["n4"]
    free = free_of(nodes, [pod("n1"), pod("n3"), pod("n4")])     # only n2
    assert planner.reserve([gpus(8)], nodes, free) == ["n2"]


def test_a_backed_off_pool_is_no_option_for_a_topology_request_either():
    topo = {TOPOLOGY_LEVEL_LABEL: "domain"}
    pools = make_pools({"name": "first", "topology": racks()}, {"name": "second", "topology": racks()})
    req = request(2, labels=topo)
    v = plan(req, pools, [], [], backed_off={"first": "node group first is backed off"})
    assert (v.fits, v.pool.name, v.domain, v.new_node_domains) == (True, "second", "rack-a", ["rack-a", "rack-a"])
    v = plan(req, pools, [], [], backed_off={"first": "node group first is backed off",
                                             "second": "node group second is backed off"})
    assert (v.fits, v.status_reason, v.reason, v.nodes_to_create) == \
        (False, "CapacityIsNotFound", "node group first is backed off", 0)


def test_a_backed_off_pool_is_not_a_scale_up_option():
    v = plan(request(2), POOLS, [], [], backed_off={"gpupool": "node group gpupool is backed off"})
    assert not v.fits and v.status_reason == "CapacityIsNotFound"
    assert v.reason == "node group gpupool is backed off" and v.nodes_to_create == 0


@pytest.mark.parametrize("make", [
    lambda: node("n1", ready=False),
    lambda: node("n1", unschedulable=True),
    lambda: {**node("n1"), "metadata": {**node("n1")["metadata"], "deletionTimestamp": "2026-11-29T12:00:00Z"}},
    lambda: {**node("n1"), "status": {**node("n1")["status"], "conditions": []}},
])
def test_unusable_nodes_offer_no_capacity(make):
    assert not plan(request(1, cls=CHECK_CAPACITY), POOLS, [make()], []).fits


def test_existing_nodes_are_checked_for_selector_and_taints():
    plain = {"metadata": {"name": "n0", "labels": {"agentpool": "system"}},
             "status": {"allocatable": {"cpu": "94", "memory": "880Gi", "nvidia.com/gpu": "8", "pods": "110"},
                        "conditions": [{"type": "Ready", "status": "True"}]}}
    assert not plan(request(1, cls=CHECK_CAPACITY), POOLS, [plain], []).fits
    tainted = node("n1", taints=[{"key": "maintenance", "effect": "NoExecute"}])
    assert not plan(request(1, cls=CHECK_CAPACITY), POOLS, [tainted], []).fits


def test_resources_absent_from_allocatable_count_as_zero():
    n = node("n1")
    del n["status"]["allocatable"]["nvidia.com/gpu"]
    assert not plan(request(1, cls=CHECK_CAPACITY), POOLS, [n], []).fits
    assert plan(request(1, gpus=0, cls=CHECK_CAPACITY), POOLS, [n], []).fits


# ---------------------------------------------------------------------------- topology

TOPO = {TOPOLOGY_LEVEL_LABEL: "domain"}


def topo_pools(pool_max=4, a=2, b=2):
    return make_pools({"name": "gpupool", "namePrefix": "aks-gpupool-vmss", "maxNodes": pool_max,
                       "topology": racks(a, b)})


def test_topology_picks_the_first_domain_with_room():
    v = plan(request(2, labels=TOPO), topo_pools(), [], [])
    assert v.fits and v.domain == "rack-a" and v.new_node_domains == ["rack-a", "rack-a"]


def test_topology_skips_a_full_domain():
    pools = topo_pools()
    nodes = [node("a1", pool=pools[0], domain="rack-a")]
    v = plan(request(2, labels=TOPO), pools, nodes, [pod("a1")])
    assert v.fits and v.domain == "rack-b" and v.new_node_domains == ["rack-b", "rack-b"]
    assert v.pool_size == 1


def test_topology_all_domains_full():
    pools = topo_pools(pool_max=6)
    nodes = [node("a1", pool=pools[0], domain="rack-a"), node("a2", pool=pools[0], domain="rack-a"),
             node("b1", pool=pools[0], domain="rack-b")]
    v = plan(request(2, labels=TOPO), pools, nodes, [pod("a1"), pod("a2"), pod("b1")])
    assert not v.fits and v.new_node_pods == [] and v.status_reason == "CapacityIsNotFound"
    assert v.line(KEY) == ("provreq demo/job-x-gpu-1: gang needs 2 node(s) of gpupool (max 6): does not fit: "
                           "no topology domain of gpupool has room for 2 node(s) (largest room: 1 in rack-b)")


def test_topology_pool_max_still_applies():
    v = plan(request(3, labels=TOPO), topo_pools(pool_max=2, a=4, b=4), [], [])
    assert not v.fits and v.reason == "pool gpupool has 0 node(s) and max 2, 3 more needed"


def test_topology_existing_capacity_must_be_in_the_chosen_domain():
    pools = topo_pools()
    nodes = [node("a1", pool=pools[0], domain="rack-a"), node("b1", pool=pools[0], domain="rack-b")]
    # one free node per rack: without topology both pods fit on existing capacity ...
    assert plan(request(2), pools, nodes, []).status_reason == "CapacityIsFound"
    # ... with topology they must share a rack, so one new node joins rack-a
    v = plan(request(2, labels=TOPO), pools, nodes, [])
    assert v.fits and v.status_reason == "CapacityIsProvisioned" and v.domain == "rack-a"
    assert v.placements == [(0, "a1")] and v.new_node_pods == [[1]] and v.new_node_domains == ["rack-a"]


def test_topology_fits_on_existing_capacity_of_one_domain():
    pools = topo_pools()
    nodes = [node("a1", pool=pools[0], domain="rack-a"), node("b1", pool=pools[0], domain="rack-b"),
             node("b2", pool=pools[0], domain="rack-b")]
    v = plan(request(2, labels=TOPO, cls=CHECK_CAPACITY), pools, nodes, [pod("a1")])
    assert v.fits and v.status_reason == "CapacityIsFound" and v.domain == "rack-b"
    assert v.placements == [(0, "b1"), (1, "b2")]


def test_topology_needs_a_pool_with_domains():
    v = plan(request(1, labels=TOPO), make_pools({}), [], [])
    assert not v.fits and "has no topology domains" in v.reason


def test_without_topology_new_nodes_spread_over_domains_with_room():
    v = plan(request(3), topo_pools(a=1, b=2), [], [])
    assert v.fits and v.domain is None and v.new_node_domains == ["rack-a", "rack-b", "rack-b"]
    v = plan(request(3), topo_pools(a=1, b=1), [], [])
    assert not v.fits and "have room for 2 more node(s), 3 needed" in v.reason


def test_a_pod_pinned_to_a_domain_gets_a_node_there():
    v = plan(request(1, node_selector={**SEL, "topology.tau-demo.io/domain": "rack-b"}), topo_pools(), [], [])
    assert v.fits and v.new_node_domains == ["rack-b"]


# ---------------------------------------------------------------------------- building requests

def test_request_from_objects():
    req = request_from_objects(provreq((TPL, 2), parameters={"noRetry": "true"}), {TPL: template()})
    assert (req.namespace, req.name, req.uid, req.class_name, req.key) == \
        ("demo", "job-x-gpu-1", "uid-x", BEST_EFFORT_ATOMIC, "demo/job-x-gpu-1")
    assert req.parameters == {"noRetry": "true"}
    [ps] = req.podsets
    assert ps == PodSet(TPL, 2, {"cpu": 8000, "memory": 64 * 2**30 * 1000, "nvidia.com/gpu": 8000},
                        SEL, TOL, [], False)
    assert request(1, labels=TOPO).podsets[0].topology


def test_unknown_classes_are_kept():
    req = request_from_objects(provreq(cls="queued-provisioning.gke.io"), {TPL: template()})
    assert req.class_name == "queued-provisioning.gke.io" and req.class_name not in SUPPORTED_CLASSES


def test_missing_templates():
    with pytest.raises(RequestError) as e:
        request_from_objects(provreq((TPL, 2), ("ppt-other", 1)), {})
    assert e.value.reason == "FailedToCreatePods"
    assert str(e.value) == ("missing pod templates, 2 pod templates were referenced, 2 templates were missing: "
                            "ppt-job-x-gpu-1-main,ppt-other")
    with pytest.raises(RequestError, match=r"^missing pod templates, 2 pod templates were referenced, "
                                           r"1 templates were missing: ppt-other$"):
        request_from_objects(provreq((TPL, 2), ("ppt-other", 1)), {TPL: template()})


def test_template_in_the_wrong_namespace():
    with pytest.raises(RequestError) as e:
        request_from_objects(provreq(), {TPL: template(namespace="other")})
    assert e.value.reason == "FailedToCreatePods"
    assert "is in namespace other, not in the ProvisioningRequest's namespace demo" in e.value.message


@pytest.mark.parametrize("gpus, match", [
    ("1e30", "absurdly large"),
    ("-1", "must not be negative"),
    ("eight", "invalid quantity 'eight'"),
])
def test_bad_quantities(gpus, match):
    with pytest.raises(RequestError) as e:
        request(1, gpus=gpus)
    assert e.value.reason == "FailedToCreatePods"
    assert match in e.value.message and "nvidia.com/gpu" in e.value.message and TPL in e.value.message


@pytest.mark.parametrize("mutate, match", [
    (lambda p: p["spec"].update(parameters={"noRetry": True}), "spec.parameters"),
    (lambda p: p["spec"].update(parameters=["noRetry"]), "spec.parameters"),
    (lambda p: p["spec"].update(podSets=[]), "spec.podSets"),
    (lambda p: p["spec"].pop("podSets"), "spec.podSets"),
    (lambda p: p["spec"]["podSets"][0].update(count=0), r"spec.podSets\[0\].count"),
    (lambda p: p["spec"]["podSets"][0].update(count="2"), r"spec.podSets\[0\].count"),
    (lambda p: p["spec"]["podSets"][0].pop("podTemplateRef"), r"spec.podSets\[0\].podTemplateRef.name"),
    (lambda p: p.pop("spec"), "spec"),
    (lambda p: p["metadata"].pop("name"), "metadata.name"),
])
def test_malformed_provisioning_requests(mutate, match):
    pr = provreq()
    mutate(pr)
    with pytest.raises(RequestError, match=match) as e:
        request_from_objects(pr, {TPL: template()})
    assert e.value.reason == "InvalidProvisioningRequest"


@pytest.mark.parametrize("mutate, match", [
    (lambda t: t["template"]["spec"].update(containers=[]), "containers"),
    (lambda t: t["template"]["spec"].update(nodeSelector={"agentpool": 1}), "nodeSelector"),
    (lambda t: t["template"]["spec"].update(tolerations=[{"key": "sku", "operator": "Sometimes"}]), "operator"),
    (lambda t: t["template"]["spec"].update(affinity=_affinity({"matchExpressions": [_expr("a", "Near", "b")]})),
     "unsupported operator"),
    (lambda t: t["template"]["spec"].update(affinity=_affinity({"matchExpressions": [_expr("a", "Gt", "x")]})),
     "one integer value"),
    (lambda t: t.pop("template"), "template.spec is missing"),
])
def test_malformed_templates(mutate, match):
    t = template()
    mutate(t)
    with pytest.raises(RequestError, match=match) as e:
        request_from_objects(provreq(), {TPL: t})
    assert e.value.reason == "FailedToCreatePods"


def test_pod_requests_like_kubernetes():
    spec = {
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2", "nvidia.com/gpu": "4"}}},
            {"name": "b", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
        ],
        "initContainers": [
            {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "250m"}}},
            {"name": "setup", "resources": {"requests": {"cpu": "3", "memory": "512Mi"}}},
        ],
        "overhead": {"cpu": "100m"},
    }
    # containers: cpu 1 + 0.5 + sidecar 0.25 = 1.75; setup runs beside the sidecar: 3.25 -> max 3.25; + overhead
    assert pod_requests(spec) == {"cpu": 3350, "nvidia.com/gpu": 4000, "memory": 2**30 * 1000}


def test_gang_request():
    req = gang_request(2, 8, node_selector=SEL, tolerations=TOL)
    assert req.class_name == BEST_EFFORT_ATOMIC
    [ps] = req.podsets
    assert (ps.template_name, ps.count, ps.requests["nvidia.com/gpu"], ps.requests["cpu"]) == ("main", 2, 8000, 8000)
    assert plan(req, POOLS, [], []).detail() == "gang needs 2 node(s) of gpupool (max 2): fits"
    assert not plan(gang_request(3, 8, node_selector=SEL, tolerations=TOL), POOLS, [], []).fits
    with pytest.raises(RequestError):
        gang_request(0, 8)
    with pytest.raises(RequestError):
        gang_request(1, 8, cpu="lots")


def test_verdict_line_without_pool():
    v = Verdict(fits=False, status_reason="CapacityIsNotFound", reason="no node pool is configured")
    assert v.line("a/b") == "provreq a/b: does not fit: no node pool is configured"
    assert plan(request(1), [], [], []).reason == "no node pool is configured"


def test_an_empty_affinity_term_matches_no_node():
    v = plan(request(1, cls=CHECK_CAPACITY, affinity=_affinity({"matchExpressions": []})), POOLS, [node("n1")], [])
    assert not v.fits
