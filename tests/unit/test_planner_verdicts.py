"""The planner's whole verdict, and the reason a user reads when a request does not fit
(fake_ca/planner.py): which pool, how many nodes, in which topology domains, and why not."""

from __future__ import annotations

import copy

from k8s.keys import BEST_EFFORT_ATOMIC, CHECK_CAPACITY, TOPOLOGY_LEVEL_LABEL
from fake_ca import planner
from fake_ca.planner import Verdict, plan
from k8s.pools import node_manifest, parse_pools
from fake_ca.request import request_from_objects

DOMAIN_LABEL = "topology.tau-demo.io/domain"
SEL = {"agentpool": "gpupool"}
TOL = [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
TOPO = {TOPOLOGY_LEVEL_LABEL: "domain"}


def pools(*specs: dict) -> list:
    out = []
    for i, spec in enumerate(specs):
        p = {"name": f"pool{i}", "maxNodes": 2, "namePrefix": f"aks-pool{i}-vmss", "labels": {"agentpool": "gpupool"},
             "taints": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}],
             "capacity": {"cpu": "96", "memory": "900Gi", "nvidia.com/gpu": "8", "pods": "110"},
             "allocatable": {"cpu": "94", "memory": "880Gi", "nvidia.com/gpu": "8", "pods": "110"}}
        p.update(spec)
        out.append(p)
    return parse_pools({"apiVersion": "tau-demo.io/v1", "kind": "NodePoolList", "pools": out}, "test")


def racks(**rooms) -> dict:
    return {"label": DOMAIN_LABEL, "domains": [{"name": f"rack-{k}", "maxNodes": v} for k, v in rooms.items()]}


def template(name, gpus=8, cpu="8", node_selector=SEL, tolerations=TOL, labels=None, extra=None) -> dict:
    requests = {"cpu": cpu, "memory": "64Gi", **(extra or {})}
    if gpus:
        requests["nvidia.com/gpu"] = str(gpus)
    spec = {"containers": [{"name": "main", "resources": {"requests": requests}}],
            "nodeSelector": dict(node_selector), "tolerations": copy.deepcopy(tolerations)}
    return {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": name, "namespace": "demo"},
            "template": {"metadata": {"labels": dict(labels or {})}, "spec": spec}}


def request(*podsets, cls=BEST_EFFORT_ATOMIC):
    """podsets: (template, count) pairs."""
    pr = {"metadata": {"name": "job-x-gpu-1", "namespace": "demo", "uid": "uid-x"},
          "spec": {"provisioningClassName": cls,
                   "podSets": [{"podTemplateRef": {"name": t["metadata"]["name"]}, "count": c} for t, c in podsets]}}
    return request_from_objects(pr, {t["metadata"]["name"]: t for t, _ in podsets})


def node(name, pool, domain=None) -> dict:
    n = node_manifest(pool, name, domain, "uid-old", "demo/old")
    n["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    return n


def busy(node_name, gpus=8) -> dict:
    """A running pod that takes `gpus` GPUs of a node."""
    return {"metadata": {"name": f"busy-{node_name}"},
            "spec": {"nodeName": node_name,
                     "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}]},
            "status": {"phase": "Running"}}


def in_rack(rack):
    return {**SEL, DOMAIN_LABEL: f"rack-{rack}"}


# ---------------------------------------------------------------------------- why nothing fits

def test_the_first_podset_that_fits_no_pool_is_named_even_when_a_later_one_fits():
    bad = template("ppt-cpu", node_selector={"agentpool": "cpupool"})
    good = template("ppt-gpu")
    v = plan(request((bad, 1), (good, 1)), pools({}), [], [])
    assert v == Verdict(fits=False, status_reason="CapacityIsNotFound", reason=(
        "pod of ppt-cpu matches no pool (pool0: nodeSelector agentpool=cpupool does not match (agentpool=gpupool))"))
    v = plan(request((good, 1), (bad, 1)), pools({}), [], [])
    assert v.reason.startswith("pod of ppt-cpu matches no pool")


def test_every_pool_says_why_it_does_not_match():
    v = plan(request((template("ppt-main", tolerations=[]), 1)), pools({}, {"taints": [{"key": "spot", "effect": "NoExecute"}]}),
             [], [])
    assert v.reason == ("pod of ppt-main matches no pool (pool0: taint sku=gpu:NoSchedule is not tolerated; "
                        "pool1: taint spot:NoExecute is not tolerated)")


def test_a_pod_pinned_to_a_domain_is_judged_in_that_domain():
    too_big = template("ppt-main", gpus=16, node_selector=in_rack("b"))
    v = plan(request((too_big, 1)), pools({"topology": racks(a=2, b=2)}), [], [])
    assert v.reason == ("pod of ppt-main needs nvidia.com/gpu=16 but the largest node of any pool "
                        "that admits it has 8")


def test_a_resource_no_pool_offers_is_reported_as_zero():
    fpga = template("ppt-main", gpus=0, extra={"example.com/fpga": "1"})
    v = plan(request((fpga, 1)), pools({}), [], [])
    assert v.reason == "pod of ppt-main needs example.com/fpga=1 but the largest node of any pool that admits it has 0"


def test_a_pod_that_needs_two_pools_shapes_at_once():
    # pool0 has the CPUs, pool1 the GPUs; the pod needs 94 CPUs (exactly pool0's) and 16 GPUs (exactly pool1's)
    shapes = pools({"capacity": {"cpu": "96", "memory": "900Gi", "nvidia.com/gpu": "8", "pods": "110"},
                    "allocatable": {"cpu": "94", "memory": "880Gi", "nvidia.com/gpu": "8", "pods": "110"}},
                   {"capacity": {"cpu": "32", "memory": "900Gi", "nvidia.com/gpu": "16", "pods": "110"},
                    "allocatable": {"cpu": "30", "memory": "880Gi", "nvidia.com/gpu": "16", "pods": "110"}})
    v = plan(request((template("ppt-main", gpus=16, cpu="94"), 1)), shapes, [], [])
    assert v.reason == ("pod of ppt-main needs cpu=94, memory=64Gi, nvidia.com/gpu=16, which no single node shape "
                        "of pool0, pool1 holds")


def test_when_each_podset_fits_some_pool_but_no_pool_takes_them_all_every_pool_says_why():
    racked = {"name": "racked", "namePrefix": "r-", "topology": racks(a=2, b=2), "maxNodes": 4}
    plain = {"name": "plain", "namePrefix": "p-", "labels": {"agentpool": "gpupool", "gen": "h100"}}
    pinned = template("ppt-pinned", node_selector=in_rack("b"))          # only racked has rack-b
    h100 = template("ppt-h100", node_selector={**SEL, "gen": "h100"})    # only plain has gen=h100
    v = plan(request((pinned, 1), (h100, 1)), pools(racked, plain), [], [])
    assert (v.fits, v.pool, v.new_nodes) == (False, None, 0)
    assert v.reason == (
        "no pool can take the whole gang: "
        "racked: pod of ppt-h100: nodeSelector gen=h100 does not match (no gen label); "
        "plain: pod of ppt-pinned: nodeSelector topology.tau-demo.io/domain=rack-b does not match "
        "(no topology.tau-demo.io/domain label)")


def test_a_pool_whose_domains_all_refuse_a_pod_quotes_its_first_domain():
    """A pod that no domain of a racked pool admits is refused as that pool's first domain would refuse it."""
    racked = {"name": "racked", "namePrefix": "r-", "topology": racks(a=2, b=2), "maxNodes": 4}
    rack_c = {"name": "plain", "namePrefix": "p-", "labels": {"agentpool": "gpupool", DOMAIN_LABEL: "rack-c"}}
    pinned_b = template("ppt-b", node_selector=in_rack("b"))                          # only racked has rack-b
    pinned_c = template("ppt-c", node_selector={DOMAIN_LABEL: "rack-c", **SEL})     # only plain is in rack-c
    v = plan(request((pinned_b, 1), (pinned_c, 1)), pools(racked, rack_c), [], [])
    assert v.reason == (
        "no pool can take the whole gang: "
        "racked: pod of ppt-c: nodeSelector topology.tau-demo.io/domain=rack-c does not match "
        "(topology.tau-demo.io/domain=rack-a); "
        "plain: pod of ppt-b: nodeSelector topology.tau-demo.io/domain=rack-b does not match "
        "(topology.tau-demo.io/domain=rack-c)")


# ---------------------------------------------------------------------------- new nodes and their domains

def test_a_pool_without_topology_gives_new_nodes_no_domain_and_keeps_existing_placements():
    [p] = pools({"maxNodes": 3})
    v = plan(request((template("ppt-main"), 2)), [p], [node("n1", p)], [])
    assert v == Verdict(fits=True, status_reason="CapacityIsProvisioned", pool=p, new_nodes=1,
                        pool_size=1, placements=[(0, "n1")], new_node_pods=[[1]], new_node_domains=[None])
    v = plan(request((template("ppt-main"), 2)), [p], [], [])
    assert (v.new_node_pods, v.new_node_domains) == ([[0], [1]], [None, None])


def test_pods_pinned_to_different_domains_never_share_a_new_node():
    a, b = template("ppt-a", gpus=2, node_selector=in_rack("a")), template("ppt-b", gpus=2, node_selector=in_rack("b"))
    v = plan(request((a, 1), (b, 1)), pools({"topology": racks(a=2, b=2)}), [], [])
    assert v.fits and v.new_node_pods == [[0], [1]] and v.new_node_domains == ["rack-a", "rack-b"]


def test_new_nodes_skip_a_domain_that_is_already_full():
    [p] = pools({"maxNodes": 4, "topology": racks(a=2, b=2)})
    full = [node("a1", p, "rack-a"), node("a2", p, "rack-a")]
    v = plan(request((template("ppt-main"), 1)), [p], full, [busy("a1"), busy("a2")])
    assert v.fits and v.new_node_domains == ["rack-b"] and v.pool_size == 2


def test_not_enough_room_in_the_domains_is_a_size_refusal_of_that_pool():
    [p] = pools({"maxNodes": 4, "topology": racks(a=2, b=1)})
    full = [node("a1", p, "rack-a"), node("a2", p, "rack-a")]
    v = plan(request((template("ppt-main"), 2)), [p], full, [busy("a1"), busy("a2")])
    assert v == Verdict(fits=False, status_reason="CapacityIsNotFound", pool=p, new_nodes=2,
                        pool_size=2, reason="the topology domains of pool0 have room for 1 more node(s), 2 needed")


# ---------------------------------------------------------------------------- topology requests

def test_a_topology_request_pinned_to_the_second_domain_goes_there():
    v = plan(request((template("ppt-main", labels=TOPO, node_selector=in_rack("b")), 2)),
             pools({"topology": racks(a=2, b=2)}), [], [])
    assert (v.fits, v.domain, v.new_node_domains) == (True, "rack-b", ["rack-b", "rack-b"])


def test_a_topology_request_packs_small_pods_onto_few_nodes():
    v = plan(request((template("ppt-main", gpus=2, labels=TOPO), 4)), pools({"topology": racks(a=2, b=2)}), [], [])
    assert (v.fits, v.new_node_pods, v.new_node_domains) == (True, [[0, 1, 2, 3]], ["rack-a"])


def test_a_topology_request_whose_podsets_want_different_domains_names_the_first_complaint():
    a = template("ppt-a", labels=TOPO, node_selector=in_rack("a"))
    b = template("ppt-b", labels=TOPO, node_selector=in_rack("b"))
    v = plan(request((a, 1), (b, 1)), pools({"topology": racks(a=2, b=2)}), [], [])
    assert (v.fits, v.pool) == (False, None)
    assert v.reason == ("no pool can take the whole gang: pool0: pod of ppt-b: nodeSelector topology.tau-demo.io/domain="
                        "rack-b does not match (topology.tau-demo.io/domain=rack-a) (domain rack-a)")


def test_a_domain_with_room_in_a_pool_without_room_is_the_pools_size_refusal():
    [p] = pools({"maxNodes": 3, "topology": racks(a=2, b=2)})
    rack_b_full = [node("b1", p, "rack-b"), node("b2", p, "rack-b")]
    v = plan(request((template("ppt-main", labels=TOPO), 2)), [p], rack_b_full, [busy("b1"), busy("b2")])
    assert v == Verdict(fits=False, status_reason="CapacityIsNotFound", pool=p, new_nodes=2,
                        pool_size=2, reason="pool pool0 has 2 node(s) and max 3, 2 more needed")


def test_the_domain_closest_to_fitting_is_named():
    # rack-a already has 2 free nodes (2 of the 4 pods fit there) and room for 1 more: 1 node short.
    # rack-b is empty with room for 2: 2 nodes short.
    [p] = pools({"maxNodes": 10, "topology": racks(a=3, b=2)})
    v = plan(request((template("ppt-main", labels=TOPO), 4)), [p], [node("a1", p, "rack-a"), node("a2", p, "rack-a")], [])
    assert v == Verdict(fits=False, status_reason="CapacityIsNotFound", pool=p, new_nodes=2,
                        pool_size=2, reason="no topology domain of pool0 has room for 2 node(s) (largest room: 1 in rack-a)")


def test_room_is_never_shown_below_zero():
    [p] = pools({"maxNodes": 10, "topology": racks(a=1, b=0)})
    over = [node("a1", p, "rack-a"), node("a2", p, "rack-a")]           # rack-a holds more than its maximum
    v = plan(request((template("ppt-main", labels=TOPO), 1)), [p], over, [busy("a1"), busy("a2")])
    assert v.reason == "no topology domain of pool0 has room for 1 node(s) (largest room: 0 in rack-b)"
    [p] = pools({"maxNodes": 10, "topology": racks(a=1, b=0)})
    over += [node("b1", p, "rack-b")]                                    # now both are over
    v = plan(request((template("ppt-main", labels=TOPO), 1)), [p], over, [busy("a1"), busy("a2"), busy("b1")])
    assert v.reason == "no topology domain of pool0 has room for 1 node(s) (largest room: 0 in rack-a)"


def test_domains_shared_by_pools_are_searched_once_and_every_other_domain_is_searched():
    first = {"name": "first", "namePrefix": "f-", "topology": racks(a=2)}
    second = {"name": "second", "namePrefix": "s-", "topology": racks(a=2, c=2)}
    ps = pools(first, second)
    nodes = [node("c1", ps[1], "rack-c"), node("c2", ps[1], "rack-c")]
    v = plan(request((template("ppt-main", labels=TOPO), 2), cls=CHECK_CAPACITY), ps, nodes, [])
    assert (v.fits, v.status_reason, v.domain, v.placements) == (True, "CapacityIsFound", "rack-c",
                                                                 [(0, "c1"), (1, "c2")])


# ---------------------------------------------------------------------------- check-capacity

def test_check_capacity_says_how_many_pods_do_not_fit_and_the_first_of_them():
    [p] = pools({})
    v = plan(request((template("ppt-small", gpus=4), 1), (template("ppt-big"), 2), cls=CHECK_CAPACITY), [p],
             [node("n1", p)], [])
    assert v == Verdict(fits=False, status_reason="CapacityIsNotFound", reason=(
        "check-capacity never adds nodes, and 2 of 3 pod(s) do not fit on existing capacity (first: a pod of ppt-big)"))


def test_check_capacity_with_topology_needs_one_domain_with_room_for_all():
    [p] = pools({"topology": racks(a=2, b=2)})
    v = plan(request((template("ppt-main", labels=TOPO), 2), cls=CHECK_CAPACITY), [p],
             [node("a1", p, "rack-a"), node("b1", p, "rack-b")], [])
    assert v == Verdict(fits=False, status_reason="CapacityIsNotFound", reason=(
        "check-capacity never adds nodes, and no topology domain has free capacity for all 2 pod(s)"))


# ---------------------------------------------------------------------------- limits

def test_one_scale_up_may_add_at_most_max_nodes_per_scaleup(monkeypatch):
    assert planner.MAX_NODES_PER_SCALEUP == 1000                   # the Cluster Autoscaler's default
    monkeypatch.setattr(planner, "MAX_NODES_PER_SCALEUP", 3)       # the same rule, on a gang small enough to plan fast
    [p] = pools({"maxNodes": 10})
    v = plan(request((template("ppt-main"), 3)), [p], [], [])
    assert (v.fits, v.new_nodes) == (True, 3)
    v = plan(request((template("ppt-main"), 4)), [p], [], [])
    assert (v.fits, v.pool.name, v.new_nodes, v.reason) == (False, "pool0", 4, "4 nodes exceed the 3 allowed in one scale-up")
