"""What the scenario half-gang (scenarios/walkthrough/half_gang.py) reads, on plain objects: which pods hold their
GPUs, half a gang started, a ClusterQueue's GPU reservation, the nodes made for one request, the other workload's
pod it binds to a booting node."""

from __future__ import annotations

from demo.jobs.snapshot import Snapshot
from k8s.keys import GPU, POD_SCHEDULED, POD_UNSCHEDULABLE, PROVREQ_UID_ANNOTATION
from k8s.resources import POD
from scenarios.kit import catalogue
from scenarios.walkthrough.half_gang import (gpus_reserved, half_started, holding, made_for, other_pod, since)


def pod(name: str, phase: str = "Pending", unschedulable: bool = False, deleting: bool = False) -> dict:
    md = {"name": name, **({"deletionTimestamp": "2026-12-05T10:00:00Z"} if deleting else {})}
    conds = [{"type": POD_SCHEDULED, "status": "False", "reason": POD_UNSCHEDULABLE}] if unschedulable else []
    return {"metadata": md, "status": {"phase": phase, "conditions": conds}}


def test_a_pod_holds_its_gpus_while_running_and_not_being_deleted():
    pods = [pod("a", "Running"), pod("b", "Running", deleting=True), pod("c"), pod("d", "Succeeded")]
    assert [p["metadata"]["name"] for p in holding(pods)] == ["a"]


def test_half_started_is_one_pod_running_and_the_other_unschedulable():
    assert half_started([pod("a", "Running"), pod("b", unschedulable=True)])
    assert not half_started([pod("a", "Running"), pod("b")]), "pending but not (yet) found unschedulable"
    assert not half_started([pod("a", "Running"), pod("b", "Running")]), "the whole gang"
    assert not half_started([pod("a", unschedulable=True), pod("b", unschedulable=True)]), "none started"
    assert not half_started([pod("a", "Running")]), "a gang of two"
    assert not half_started([pod("a", "Running", deleting=True), pod("b", unschedulable=True)]), "being evicted"


def test_a_cluster_queues_gpu_reservation_sums_every_flavor():
    cq = {"status": {"flavorsReservation": [
        {"name": "a100", "resources": [{"name": GPU, "total": "16"}, {"name": "cpu", "total": "16"}]},
        {"name": "other", "resources": [{"name": GPU, "total": "8"}]}]}}
    assert gpus_reserved(cq) == 24
    assert gpus_reserved({"status": {"flavorsReservation": [{"name": "a100", "resources": [{"name": GPU,
                                                                                            "total": "0"}]}]}}) == 0
    assert gpus_reserved({}) == gpus_reserved(None) == 0


def test_the_nodes_made_for_a_request_are_those_carrying_its_uid_and_alive():
    def node(name, req_uid, deleting=False):
        md = {"name": name, "annotations": {PROVREQ_UID_ANNOTATION: req_uid}}
        if deleting:
            md["deletionTimestamp"] = "2026-12-05T10:00:00Z"
        return {"metadata": md}
    snap = Snapshot(nodes=[node("n2", "u1"), node("n1", "u1"), node("n3", "u2"), node("n4", "u1", deleting=True)])
    assert made_for(snap, {"metadata": {"uid": "u1"}}) == ["n1", "n2"]


def test_the_other_pod_is_bound_takes_all_eight_gpus_and_tolerates_the_booting_node():
    p = other_pod("gangs-other-1", "demo", "n1")
    assert (p["apiVersion"], p["kind"]) == (POD.api_version, POD.kind)
    assert p["metadata"] == {"name": "gangs-other-1", "namespace": "demo"}
    assert p["spec"]["nodeName"] == "n1" and p["spec"]["tolerations"] == [{"operator": "Exists"}]
    [c] = p["spec"]["containers"]
    assert c["resources"] == {"requests": {GPU: "8"}, "limits": {GPU: "8"}}


def test_since_keeps_the_samples_from_a_time_on():
    assert since([(1.0, "a"), (2.0, "b"), (3.0, "c")], 2.0) == [(2.0, "b"), (3.0, "c")]


def test_the_scenario_is_the_group_gangs_outside_the_walkthrough_and_fake_only():
    s = catalogue.by_name()["half-gang"]
    assert s.group == "gangs" and not s.slot and s.needs_fake
    assert "half-gang" not in catalogue.members("all") and catalogue.members("gangs") == ["half-gang"]
