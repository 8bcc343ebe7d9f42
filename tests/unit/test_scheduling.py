"""Scheduling predicates on plain Node and Pod objects (fake_ca/scheduling.py): what the fake
autoscaler decides a pod could run on, and the reason it gives when it could not."""

from __future__ import annotations

import pytest

from fake_ca.request import PodSet
from fake_ca.scheduling import (demand_of, eligible_nodes, free_capacity, parse_resources, selector_mismatch, shortfall,
                                subtract, tolerates)


def node(name, labels=None, taints=None, ready="True", allocatable=None, **meta) -> dict:
    n = {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}, **meta},
         "spec": {"taints": list(taints or [])},
         "status": {"allocatable": allocatable or {"cpu": "94", "memory": "880Gi", "nvidia.com/gpu": "8", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": ready}]}}
    return n


def podset(node_selector=None, tolerations=None, terms=None, **requests) -> PodSet:
    return PodSet("ppt-main", 1, requests or {"cpu": 1000}, node_selector or {}, tolerations or [], terms or [])


def term(*exprs, fields=()):
    t = {}
    if exprs:
        t["matchExpressions"] = list(exprs)
    if fields:
        t["matchFields"] = list(fields)
    return t


def req(key, op, *values):
    return {"key": key, "operator": op, "values": list(values)}


# ---------------------------------------------------------------------------- selectors, affinity, taints

def test_node_selector_mismatch_names_the_label_and_what_the_node_has():
    n = node("n1", labels={"agentpool": "cpupool"})
    assert selector_mismatch(podset({"agentpool": "gpupool"}), n) == \
        "nodeSelector agentpool=gpupool does not match (agentpool=cpupool)"
    assert selector_mismatch(podset({"gpu": "a100"}), n) == "nodeSelector gpu=a100 does not match (no gpu label)"
    assert selector_mismatch(podset({"agentpool": "cpupool"}), n) is None


@pytest.mark.parametrize("expr, matches", [
    (req("rack", "In", "a", "b"), True), (req("rack", "In", "c"), False), (req("zone", "In", "a"), False),
    (req("rack", "NotIn", "c"), True), (req("rack", "NotIn", "a"), False), (req("zone", "NotIn", "a"), True),
    (req("rack", "Exists"), True), (req("zone", "Exists"), False),
    (req("rack", "DoesNotExist"), False), (req("zone", "DoesNotExist"), True),
    (req("gpus", "Gt", "4"), True), (req("gpus", "Gt", "8"), False), (req("gpus", "Lt", "9"), True),
    (req("gpus", "Lt", "8"), False), (req("rack", "Gt", "1"), False), (req("zone", "Gt", "1"), False),
    (req("gpus", "Gt", "1", "2"), False), (req("gpus", "Gt", "x"), False), (req("gpus", "Gt"), False),
    (req("rack", "Near", "a"), False),
])
def test_required_node_affinity_operators(expr, matches):
    n = node("n1", labels={"rack": "a", "gpus": "8"})
    why = selector_mismatch(podset(terms=[term(expr)]), n)
    assert why == (None if matches else "required node affinity does not match")


def test_match_fields_only_know_the_node_name():
    n = node("n1")
    assert selector_mismatch(podset(terms=[term(fields=[req("metadata.name", "In", "n1")])]), n) is None
    assert selector_mismatch(podset(terms=[term(fields=[req("metadata.name", "In", "n2")])]), n) is not None
    assert selector_mismatch(podset(terms=[term(fields=[req("metadata.namespace", "In", "n1")])]), n) is not None


def test_terms_are_ored_their_expressions_anded_and_an_empty_term_matches_nothing():
    n = node("n1", labels={"rack": "a"})
    yes, no = req("rack", "In", "a"), req("rack", "In", "b")
    assert selector_mismatch(podset(terms=[term(no), term(yes)]), n) is None
    assert selector_mismatch(podset(terms=[term(yes, no)]), n) is not None
    assert selector_mismatch(podset(terms=[term(yes, fields=[req("metadata.name", "In", "n2")])]), n) is not None
    assert selector_mismatch(podset(terms=[{}]), n) == "required node affinity does not match"


TAINT = {"key": "sku", "value": "gpu", "effect": "NoSchedule"}


@pytest.mark.parametrize("toleration, taint, ok", [
    ({"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}, TAINT, True),
    ({"key": "sku", "value": "gpu"}, TAINT, True),                                 # Equal and any effect by default
    ({"key": "sku", "value": "cpu"}, TAINT, False),
    ({"key": "sku", "value": "gpu", "effect": "NoExecute"}, TAINT, False),
    ({"key": "other", "operator": "Exists"}, TAINT, False),
    ({"key": "sku", "operator": "Exists"}, TAINT, True),
    ({"operator": "Exists"}, TAINT, True),                                         # tolerates everything
    ({"key": "sku"}, {"key": "sku", "effect": "NoSchedule"}, True),                # no value on either side
    ({"key": "sku", "value": ""}, {"key": "sku", "value": None, "effect": "NoSchedule"}, True),
    ({"key": "sku", "value": "gpu"}, {"key": "sku", "effect": "NoSchedule"}, False),
    ({"key": "sku"}, TAINT, False),
    ({"key": "sku", "operator": "Sometimes", "value": "gpu"}, TAINT, False),
])
def test_tolerations_like_kubernetes(toleration, taint, ok):
    assert tolerates(toleration, taint) is ok


def test_untolerated_taints_are_named_and_only_scheduling_effects_count():
    n = node("n1", taints=[{"key": "spot", "effect": "PreferNoSchedule"}, {"key": "maintenance", "effect": "NoExecute"}])
    assert selector_mismatch(podset(), n) == "taint maintenance:NoExecute is not tolerated"
    n = node("n1", taints=[TAINT])
    assert selector_mismatch(podset(), n) == "taint sku=gpu:NoSchedule is not tolerated"
    assert selector_mismatch(podset(tolerations=[{"key": "sku", "operator": "Exists"}]), n) is None
    assert selector_mismatch(podset(), node("n1", taints=[{"key": "spot", "effect": "PreferNoSchedule"}])) is None


# ---------------------------------------------------------------------------- resources

def test_a_pod_takes_its_requests_and_one_pod_slot():
    assert demand_of(podset(cpu=500, memory=0)) == {"cpu": 500, "memory": 0, "pods": 1000}


def test_shortfall_names_the_first_missing_resource_by_name():
    assert shortfall({"cpu": 2000, "memory": 5, "pods": 1000}, {"cpu": 1000, "memory": 0, "pods": 0}) == ("cpu", 2000, 1000)
    assert shortfall({"example.com/fpga": 1, "pods": 1000}, {"pods": 110_000}) == ("example.com/fpga", 1, 0)
    assert shortfall({"cpu": 1, "pods": 1000}, {"cpu": 0, "pods": 1000}) == ("cpu", 1, 0)
    assert shortfall({"cpu": 1000, "pods": 1000}, {"cpu": 1000, "pods": 1000}) is None


def test_a_resource_the_pod_does_not_need_never_blocks_it():
    overcommitted = {"cpu": 10_000, "memory": -5, "pods": 1000}
    assert shortfall({"cpu": 1000, "memory": 0, "pods": 1000}, overcommitted) is None


def test_subtracting_from_a_resource_the_node_lacks_goes_negative():
    free = {"cpu": 1000}
    subtract(free, {"cpu": 250, "example.com/fpga": 2})
    assert free == {"cpu": 750, "example.com/fpga": -2}


def test_unreadable_allocatable_offers_nothing():
    assert parse_resources({"cpu": "lots", "memory": "1Gi"}) == {"cpu": 0, "memory": 2**30 * 1000}
    assert parse_resources(["cpu"]) == {} and parse_resources(None) == {}


# ---------------------------------------------------------------------------- which nodes, how much room

def test_eligible_nodes_skip_unusable_ones_wherever_they_are_in_the_list():
    good = [node("n9"), node("n5")]
    unusable = [None, "junk", {"metadata": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
                node("deleting", deletionTimestamp="2026-11-29T12:00:00Z"), node("not-ready", ready="False"),
                {**node("cordoned"), "spec": {"unschedulable": True}}]
    for bad in unusable:
        assert [n["metadata"]["name"] for n in eligible_nodes([bad] + good)] == ["n5", "n9"]


def pod(node_name, phase="Running", **requests) -> dict:
    return {"metadata": {"name": f"p-{node_name}"},
            "spec": {"nodeName": node_name, "containers": [{"name": "c", "resources": {"requests": requests}}]},
            "status": {"phase": phase}}


def test_free_capacity_subtracts_live_pods_on_each_node():
    nodes = [node("n1"), node("n2")]
    pods = ["junk", pod("elsewhere", cpu="90"), pod("n1", cpu="4", **{"nvidia.com/gpu": "8"}),
            pod("n1", phase="Succeeded", cpu="50"), pod("n1", phase="Failed", cpu="50"), pod("n2", cpu="1"),
            {"metadata": {"name": "unreadable"}, "spec": {"nodeName": "n2"}, "status": {"phase": "Running"}}]
    free = free_capacity(nodes, pods)
    assert free["n1"] == {"cpu": 90_000, "memory": 880 * 2**30 * 1000, "nvidia.com/gpu": 0, "pods": 109_000}
    # a pod whose spec cannot be read still takes a pod slot
    assert free["n2"] == {"cpu": 93_000, "memory": 880 * 2**30 * 1000, "nvidia.com/gpu": 8000, "pods": 108_000}
