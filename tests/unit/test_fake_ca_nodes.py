"""The fake autoscaler's nodes on plain objects: when a new VM boots, how a booting node looks to the
planner, which nodes time out and why, which idle nodes scale-down marks, clears and deletes (and
why), and the status ConfigMap exactly as the real autoscaler's fields name it."""

from __future__ import annotations

import dataclasses

import copy

import yaml

from k8s.keys import MANAGED_LABEL, POOL_LABEL, PROVREQ_UID_ANNOTATION, UNNEEDED_ANNOTATION
from fake_ca import nodes as vm, params as P, scaledown, status
from fake_ca.backoff import GroupBackoff
from fake_ca.scaledown import ScaleDown
from test_fake_ca_loop import at, cond, never_booting, pr, provisioned, ts
from test_planner import GPUPOOL, POOLS, make_pools, node, pod

UPCOMING = {"type": "Ready", "status": "True", "reason": "Upcoming"}


def gone(n: dict) -> dict:
    n["metadata"]["deletionTimestamp"] = ts(0)
    return n


def unmanaged(n: dict) -> dict:
    del n["metadata"]["labels"][MANAGED_LABEL]
    return n


# ---------------------------------------------------------------------------- booting VMs

def test_when_a_new_node_boots():
    assert [vm.boots_at(at(0), s) for s in (0, -1, 1, 15.0, P.FOREVER)] == [None, None, ts(1), ts(15), "never"]


def test_only_live_nodes_this_fake_made_are_managed_and_only_those_not_ready_are_booting():
    ready, booting = node("n1"), node("n2", ready=False)
    assert [vm.managed(n) for n in (ready, booting, unmanaged(node("n3")), gone(node("n4")))] == [
        True, True, False, False]
    assert [vm.booting(n) for n in (ready, booting, unmanaged(node("n5", ready=False)),
                                    gone(node("n6", ready=False)))] == [False, True, False, False]


def test_a_booting_node_looks_to_the_planner_like_the_ready_node_it_will_become():
    b = never_booting("n1")
    b["status"]["conditions"].insert(0, {"type": "MemoryPressure", "status": "False"})
    before = copy.deepcopy(b)
    up = vm.as_upcoming(b)
    assert b == before                                              # the cached object is not changed
    assert up["spec"]["taints"] == [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}]
    assert up["status"]["conditions"] == [{"type": "MemoryPressure", "status": "False"}, UPCOMING]
    assert {k: v for k, v in up.items() if k not in ("spec", "status")} == \
        {k: v for k, v in b.items() if k not in ("spec", "status")}
    assert vm.as_upcoming({"metadata": {"name": "bare"}}) == {
        "metadata": {"name": "bare"}, "spec": {"taints": []}, "status": {"conditions": [UPCOMING]}}


def test_the_planner_sees_live_nodes_as_they_are_booting_ones_as_upcoming_and_no_deleted_ones():
    ready, booting = node("n1"), never_booting("n2")
    seen = vm.snapshot_nodes([ready, booting, gone(node("n3")), gone(never_booting("n4"))])
    assert seen[0] is ready and seen[1:] == [vm.as_upcoming(booting)]


def test_nodes_time_out_only_after_the_max_provision_time_grouped_by_pool_oldest_first():
    other = make_pools({"name": "cpupool"})[0]
    late_other = node("c1", pool=other, ready=False)
    late_other["metadata"]["creationTimestamp"] = ts(0)
    no_pool = never_booting("x1")
    del no_pool["metadata"]["labels"][POOL_LABEL]
    undated = never_booting("n0")
    del undated["metadata"]["creationTimestamp"]
    nodes = [node("ready"), undated, never_booting("n3", created=10), never_booting("n2", created=-5),
             never_booting("n1", created=0), late_other, no_pool, gone(never_booting("n4", created=-9))]
    assert vm.timed_out(nodes, at(21), 20) == [
        vm.TimedOut("?", ("x1",), "1 node(s) of ? did not become Ready within 20s (--max-node-provision-time): "
                                  "removing them", "Scale-up timed out for node group ? after 21s"),
        vm.TimedOut("cpupool", ("c1",), "1 node(s) of cpupool did not become Ready within 20s "
                                        "(--max-node-provision-time): removing them",
                    "Scale-up timed out for node group cpupool after 21s"),
        # the real autoscaler's message counts from its scale-up request: here the oldest node's creation
        vm.TimedOut("gpupool", ("n2", "n1"), "2 node(s) of gpupool did not become Ready within 20s "
                                              "(--max-node-provision-time): removing them",
                    "Scale-up timed out for node group gpupool after 26s")]
    assert [t.nodes for t in vm.timed_out(nodes, at(20), 20)] == [("n2",)]     # n1, c1, x1 exactly 20s old: not yet


# ---------------------------------------------------------------------------- scale-down

def idle(name: str, since: float | None = None, uid: str = "uid-old", pool=GPUPOOL) -> dict:
    n = node(name, pool=pool)
    n["metadata"]["annotations"][PROVREQ_UID_ANNOTATION] = uid
    if since is not None:
        n["metadata"]["annotations"][UNNEEDED_ANNOTATION] = ts(since)
    return n


def decide(nodes, pods=(), provreqs=(), seconds=100.0, pools=POOLS, booked=frozenset()) -> ScaleDown:
    by_uid = {r["metadata"]["uid"]: r for r in provreqs}
    return scaledown.scale_down(list(nodes), list(pods), by_uid, pools, at(seconds), 10, lambda: set(booked))


def test_an_idle_node_starts_its_timer_and_goes_once_it_was_unneeded_for_longer_than_the_unneeded_time():
    assert decide([idle("n1")], seconds=0) == ScaleDown(mark=["n1"])
    assert decide([idle("n1", since=0)], seconds=10) == ScaleDown()           # exactly 10s: not yet
    assert decide([idle("n1", since=0)], seconds=11) == ScaleDown(
        delete=["n1"], why={"n1": "unneeded for 11s (no running pods, booking over)"})
    assert scaledown.unneeded_for(idle("n1", since=4), at(10)) == 6 and scaledown.unneeded_for(idle("n1"), at(10)) is None


def job_pod(node_name: str, phase: str = "Running", owner: str = "Job", name: str | None = None) -> dict:
    p = pod(node_name, phase=phase, name=name)
    p["metadata"]["ownerReferences"] = [{"kind": owner, "name": "x", "uid": "u", "controller": True}]
    return p


def test_running_pods_keep_a_node_but_finished_and_daemonset_pods_do_not():
    nodes = [idle(n, since=0) for n in ("n1", "n2", "n3", "n4", "n5")] + [idle("n6")]
    pods = [job_pod("n9"), job_pod("n1", "Succeeded"), job_pod("n1"),              # n1: a running Job pod
            job_pod("n2", "Succeeded"), job_pod("n2", "Failed"), job_pod("n2", owner="DaemonSet"),
            job_pod("n3", owner="DaemonSet"), job_pod("n3", "Pending", owner="ReplicaSet"),   # n3: a pod to start
            pod("n4"),                                                             # n4: a bare pod
            job_pod("n5", "Succeeded"), job_pod("n6")]
    assert decide(nodes, pods, seconds=11) == ScaleDown(
        clear=["n1", "n3", "n4"], delete=["n2", "n5"],
        why={"n2": "unneeded for 11s (no running pods, booking over)",
             "n5": "unneeded for 11s (no running pods, booking over)"})


def test_a_requests_nodes_are_kept_while_it_is_being_provisioned_or_its_booking_lasts():
    expired = provisioned("done", uid="uid-done")
    expired["status"]["conditions"].append(cond("BookingExpired", "True", "CapacityReservationTimeExpired"))
    requests = [pr("new", uid="uid-new"),
                pr("retrying", uid="uid-retrying", conds=[cond("Provisioned", "False", "CapacityIsNotFound")]),
                provisioned("booking", uid="uid-booking"), expired,
                pr("failed", uid="uid-failed", conds=[cond("Failed", "True", "Expired")]),
                provisioned("failed-late", uid="uid-failed-late")]
    requests[-1]["status"]["conditions"].append(cond("Failed", "True", "Expired"))
    nodes = [idle(f"{r['metadata']['name']}-1", uid=r["metadata"]["uid"]) for r in requests]
    nodes += [idle(f"{r['metadata']['name']}-2", since=0, uid=r["metadata"]["uid"]) for r in requests]
    nodes += [idle("deleted-1", uid="uid-deleted"), unmanaged(idle("static-1")), gone(idle("leaving-1"))]
    assert decide(nodes, provreqs=requests, seconds=5) == ScaleDown(
        mark=["deleted-1", "done-1", "failed-1", "failed-late-1"],
        clear=["booking-2", "new-2", "retrying-2"])


def test_booking_pods_and_booting_vms_keep_their_nodes():
    b = never_booting("n2")
    b["metadata"]["annotations"][UNNEEDED_ANNOTATION] = ts(0)
    assert decide([idle("n1", since=0), b, never_booting("n3")], booked={"n1"}) == ScaleDown(clear=["n1", "n2"])


def test_scale_down_never_takes_a_pool_below_its_min_and_deleting_nodes_do_not_count():
    pools = make_pools({"name": "small", "minNodes": 1, "maxNodes": 4})
    small = pools[0]
    three = [idle(n, since=0, pool=small) for n in ("s3", "s1", "s2")]
    why = "unneeded for 11s (no running pods, booking over)"
    assert decide(three, pools=pools, seconds=11) == ScaleDown(delete=["s1", "s2"], why={"s1": why, "s2": why})
    two = three[:2] + [gone(idle("s0", since=0, pool=small))]
    assert decide(two, pools=pools, seconds=11) == ScaleDown(delete=["s1"], why={"s1": why})
    stray = idle("x1", since=0)                       # a pool that is no longer in the pools file: no min
    assert decide(three[:1] + [stray], pools=pools, seconds=11) == ScaleDown(delete=["x1"], why={"x1": why})


# ---------------------------------------------------------------------------- status ConfigMap

def two_pools():
    return make_pools({"name": "a", "minNodes": 1, "maxNodes": 3}, {"name": "b"})


def pool_node(name: str, pool, ready: bool = True) -> dict:
    return node(name, pool=pool, ready=ready)


def health(total: int, ready: int, lo: int, hi: int) -> dict:
    return {"status": "Healthy", "cloudProviderTarget": total, "minSize": lo, "maxSize": hi,
            "nodeCounts": {"registered": {"total": total, "ready": ready, "notStarted": total - ready}}}


def test_the_status_document_per_node_group():
    a, b = two_pools()
    nodes = [pool_node("a1", a), pool_node("a2", a, ready=False), gone(pool_node("a3", a)), pool_node("a4", a),
             pool_node("x1", GPUPOOL)]
    backoff_b = GroupBackoff(60, at(70), at(10), "timeout", "Scale-up timed out for node group b after 21s")
    assert status.status_document([a, b], nodes, {"b": backoff_b}, at(20)) == {"autoscalerStatus": "Running", "nodeGroups": [
        {"name": "a", "health": health(3, 2, 1, 3), "scaleUp": {"status": "InProgress"}},
        {"name": "b", "health": health(0, 0, 0, 2),
         "scaleUp": {"status": "Backoff",
                     "backoffInfo": {"errorCode": "timeout",
                                     "errorMessage": "Scale-up timed out for node group b after 21s"},
                     "lastTransitionTime": "2026-12-01T10:00:10Z"}}]}
    # a backoff outranks a scale-up in progress, up to its last second
    backoff_a = GroupBackoff(60, at(70), at(10), "timeout", "why")
    assert [g["scaleUp"]["status"] for g in status.status_document([a, b], nodes, {"a": backoff_a}, at(70))["nodeGroups"]] == [
        "Backoff", "NoActivity"]
    assert [g["scaleUp"]["status"] for g in status.status_document([a, b], nodes, {"a": backoff_a}, at(71))["nodeGroups"]] == [
        "InProgress", "NoActivity"]


def test_the_status_configmap_is_kube_system_cluster_autoscaler_status_with_the_time_first():
    doc = status.status_document(two_pools(), [], {}, at(0))
    cm = status.configmap(doc, at(5))
    text = cm.pop("data")["status"]
    assert cm == {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "cluster-autoscaler-status", "namespace": "kube-system"}}
    assert yaml.safe_load(text) == {"time": "2026-12-01T10:00:05Z", **doc}
    # the real one marshals its Go struct: time, autoscalerStatus, ..., nodeGroups, in that order
    assert [line.split(":")[0] for line in text.splitlines() if line[:1] not in (" ", "-")] == [
        "time", "autoscalerStatus", "nodeGroups"]


def test_group_backoff_is_read_back_only_for_a_backed_off_group_of_a_well_formed_document():
    a, b = two_pools()
    failed = GroupBackoff(60, at(70), at(10), "cloudProviderError", "failed to increase node group size: x")
    cm = status.configmap(status.status_document([a, b], [], {"a": failed}, at(20)), at(20))
    assert status.group_backoff(cm, "a") == {
        "status": "Backoff", "lastTransitionTime": "2026-12-01T10:00:10Z",
        "backoffInfo": {"errorCode": "cloudProviderError", "errorMessage": "failed to increase node group size: x"}}
    assert status.group_backoff(cm, "b") is None
    for data in ({}, {"status": ""}, {"status": "- a\n- b\n"}, {"status": "nodeGroups: [x, {name: a}]"}):
        assert status.group_backoff({"data": data}, "a") is None
    assert status.group_backoff({"data": {"status": "nodeGroups: [x, {name: a, scaleUp: {status: Backoff}}]"}},
                                "a") == {"status": "Backoff"}
    assert status.group_backoff(None, "a") is None and status.group_backoff({}, "a") is None


def test_a_status_configmap_reads_back_as_the_document_written_with_its_time_and_as_nothing_when_malformed():
    a, b = two_pools()
    doc = status.status_document([a, b], [], {}, at(20))
    assert status.document_of(status.configmap(doc, at(20))) == {"time": "2026-12-01T10:00:20Z", **doc}
    for cm in (None, {}, {"data": None}, {"data": {}}, {"data": {"status": ""}}, {"data": {"other": "time: x"}},
               {"data": {"status": "{unclosed"}}, {"data": {"status": "- a\n- b\n"}}, {"data": {"status": "just text"}}):
        assert status.document_of(cm) == {}, cm


# ---------------------------------------------------------------------------- the delay after the ToBeDeleted taint

def tainted(n: dict, value: str) -> dict:
    n["spec"]["taints"] = [{"key": "other", "effect": "NoSchedule"},
                           {"key": "ToBeDeletedByClusterAutoscaler", "value": value, "effect": "NoSchedule"}]
    return n


def test_with_a_delay_after_the_taint_a_node_is_first_tainted_then_deleted_once_tainted_that_long():
    by_uid: dict = {}

    def go(nodes, seconds, delay=5.0, pods=()):
        return scaledown.scale_down(list(nodes), list(pods), by_uid, POOLS, at(seconds), 10, frozenset, delay)
    assert go([idle("n1", since=0)], 11) == ScaleDown(taint=["n1"])
    t = int(at(11).timestamp())
    assert scaledown.taint_value(at(11)) == str(t)
    assert go([tainted(idle("n1", since=0), str(t))], 15) == ScaleDown()            # tainted 4s ago
    assert go([tainted(idle("n1", since=0), str(t))], 16) == ScaleDown(
        delete=["n1"], why={"n1": "unneeded for 16s (no running pods, booking over), tainted "
                                  "ToBeDeletedByClusterAutoscaler 5s ago"})
    assert go([tainted(idle("n1", since=0), "junk")], 12).delete == ["n1"]          # no time: long enough
    assert go([tainted(idle("n1", since=0), str(t))], 16, delay=0).delete == ["n1"]
    assert go([idle("n1", since=0)], 11, delay=0).delete == ["n1"]
    assert go([idle("n1", since=0)], 11, delay=0.5) == ScaleDown(taint=["n1"])          # any delay: tainted first
    # needed again (a pod runs there): the timer and the taint go
    assert go([tainted(idle("n1", since=0), str(t))], 16, pods=[job_pod("n1")]) == ScaleDown(
        clear=["n1"], untaint=["n1"])


def test_in_the_cooldown_after_a_scale_up_no_deletion_starts_but_timers_run_and_started_ones_go_on():
    """--scale-down-delay-after-add: core/static_autoscaler.go isScaleDownInCooldown skips TryToScaleDown, while
    the unneeded nodes are still computed; the actuator's deletions already under way finish."""
    by_uid: dict = {}

    def go(nodes, seconds, delay=5.0, pods=()):
        return scaledown.scale_down(list(nodes), list(pods), by_uid, POOLS, at(seconds), 10, frozenset, delay, True)
    assert go([idle("n1")], 0) == ScaleDown(mark=["n1"])                             # the timer starts
    assert go([idle("n1", since=0)], 11) == ScaleDown()                              # no taint
    assert go([idle("n1", since=0)], 11, delay=0) == ScaleDown()                     # no delete
    t = str(int(at(11).timestamp()))
    assert go([tainted(idle("n1", since=0), t)], 16).delete == ["n1"]               # a started deletion goes on
    assert go([tainted(idle("n1", since=0), t)], 16, pods=[job_pod("n1")]) == ScaleDown(clear=["n1"], untaint=["n1"])
    assert go([idle("n1", since=0), idle("n2", since=0)], 11, delay=0) == ScaleDown()
    assert go([idle("n1", since=0), idle("n2")], 11, delay=0) == ScaleDown(mark=["n2"])    # the next node still seen
    # out of the cooldown the same nodes go
    assert scaledown.scale_down([idle("n1", since=0)], [], by_uid, POOLS, at(11), 10, frozenset, 0.0,
                                False).delete == ["n1"]


def test_no_more_deletions_under_way_at_once_than_the_real_ones_scale_down_parallelism():
    """--max-scale-down-parallelism (10): core/scaledown/budgets CropNodes, deletions under way included."""
    assert scaledown.SCALE_DOWN_PARALLELISM == 10
    big = dataclasses.replace(GPUPOOL, max_nodes=50)
    idle12 = [idle(f"n{i:02}", since=0, pool=big) for i in range(12)]
    by_uid: dict = {}
    got = scaledown.scale_down(idle12, [], by_uid, [big], at(11), 10, frozenset, 0.0)
    assert got.delete == [f"n{i:02}" for i in range(10)]
    got = scaledown.scale_down(idle12, [], by_uid, [big], at(11), 10, frozenset, 5.0)
    assert got.taint == [f"n{i:02}" for i in range(10)] and not got.delete
    # three deletions under way (tainted 1 s ago): seven more start; the three go on
    t = str(int(at(10).timestamp()))
    under_way = [tainted(idle(f"m{i}", since=0, pool=big), t) for i in range(3)]
    got = scaledown.scale_down(under_way + idle12, [], by_uid, [big], at(11), 10, frozenset, 5.0)
    assert got.taint == [f"n{i:02}" for i in range(7)] and got.delete == []
    got = scaledown.scale_down(under_way + idle12, [], by_uid, [big], at(16), 10, frozenset, 5.0)
    assert got.delete == ["m0", "m1", "m2"] and got.taint == [f"n{i:02}" for i in range(7)]
    assert scaledown.scale_down(idle12, [], by_uid, [big], at(11), 10, frozenset, 0.0, parallelism=0) == ScaleDown()
    assert scaledown.scale_down(idle12 + [idle("z", pool=big)], [], by_uid, [big], at(11), 10, frozenset, 0.0,
                                parallelism=0) == ScaleDown(mark=["z"])
    assert len(scaledown.scale_down(idle12, [], by_uid, [big], at(11), 10, frozenset, 0.0,
                                    parallelism=1).delete) == 1


def test_a_node_a_cooldown_or_the_budget_keeps_still_counts_for_the_pool_min():
    lo = dataclasses.replace(GPUPOOL, min_nodes=1, max_nodes=5)
    nodes = [idle("a", since=0, pool=lo), idle("b", since=0, pool=lo)]
    assert scaledown.scale_down(nodes, [], {}, [lo], at(11), 10, frozenset, 0.0, parallelism=1).delete == ["a"]
    assert scaledown.scale_down(nodes, [], {}, [lo], at(11), 10, frozenset, 0.0, True) == ScaleDown()
    assert scaledown.scale_down(nodes, [], {}, [lo], at(11), 10, frozenset, 0.0).delete == ["a"]


def test_tainted_for():
    n = idle("n1")
    assert scaledown.tainted_for(n, at(10)) is None
    assert scaledown.tainted_for(tainted(idle("n1"), str(int(at(4).timestamp()))), at(10)) == 6
    assert scaledown.tainted_for(tainted(idle("n1"), str(int(at(14).timestamp()))), at(10)) == 0     # in the future
    assert scaledown.tainted_for(tainted(idle("n1"), ""), at(10)) == float("inf")
    no_value = tainted(idle("n1"), "1")
    del no_value["spec"]["taints"][1]["value"]
    assert scaledown.tainted_for(no_value, at(10)) == float("inf")
    n["spec"]["taints"] = ["junk", {"key": "other"}]
    assert scaledown.tainted_for(n, at(10)) is None


def test_a_node_being_deleted_counts_against_the_pool_min():
    lo = make_pools({"name": "lo", "minNodes": 1, "maxNodes": 3})[0]
    t = str(int(at(11).timestamp()))
    nodes = [idle("n1", since=0, pool=lo), idle("n2", since=0, pool=lo)]
    assert scaledown.scale_down(nodes, [], {}, [lo], at(11), 10, frozenset, 5.0) == ScaleDown(taint=["n1"])
    nodes = [tainted(idle("n1", since=0, pool=lo), t), idle("n2", since=0, pool=lo)]
    assert scaledown.scale_down(nodes, [], {}, [lo], at(12), 10, frozenset, 5.0) == ScaleDown()
