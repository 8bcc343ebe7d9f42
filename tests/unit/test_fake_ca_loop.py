"""The fake autoscaler's loop on plain objects: one request per loop, Accepted then Provisioned, boot after
Provisioned, both backoffs, pod-sized booking, refresh, the nodes that never boot, the status ConfigMap."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone

import pytest
import yaml

from k8s.keys import BEST_EFFORT_ATOMIC, CHECK_CAPACITY
from fake_ca import backoff, booking, lifecycle, nodes as vm, params as P, scaledown, status
from k8s.pools import node_manifest
from test_planner import GPUPOOL, POOLS, TPL, node, pod, provreq, template

T0 = datetime(2026, 12, 1, 10, 0, 0, tzinfo=timezone.utc)
OPTS = lifecycle.Options()


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def ts(seconds: float) -> str:
    return at(seconds).strftime("%Y-%m-%dT%H:%M:%SZ")


def cond(ctype, status_, reason="", seconds=0.0) -> dict:
    return {"type": ctype, "status": status_, "reason": reason, "message": "", "lastTransitionTime": ts(seconds)}


def pr(name="req-a", count=2, cls=BEST_EFFORT_ATOMIC, conds=(), params=None, created=0.0, uid=None, gpus=8) -> dict:
    obj = provreq((f"{TPL}-{name}", count), cls=cls, parameters=params, name=name, uid=uid or f"uid-{name}")
    obj["metadata"].update(creationTimestamp=ts(created), resourceVersion="7", generation=1)
    obj["status"] = {"conditions": list(conds)}
    return obj


def templates_for(*reqs, gpus=8) -> dict:
    return {("demo", f"{TPL}-{r['metadata']['name']}"): template(name=f"{TPL}-{r['metadata']['name']}", gpus=gpus)
            for r in reqs}


def cluster(*reqs, nodes=(), pods=(), gpus=8) -> lifecycle.Cluster:
    return lifecycle.Cluster(list(reqs), templates_for(*reqs, gpus=gpus), list(nodes), list(pods))


def loop(c: lifecycle.Cluster, seconds: float = 1.0, memory=None, opts=OPTS) -> lifecycle.LoopPlan:
    return lifecycle.plan_loop(c, POOLS, memory or lifecycle.Memory(), at(seconds), opts)


# ---------------------------------------------------------------------------- one request per loop

def test_one_request_per_loop_oldest_first():
    a, b = pr("req-a", created=0), pr("req-b", created=-5)
    plan = loop(cluster(a, b))
    assert plan.pick.key == "demo/req-b"                 # the older one
    assert [w.ctype for w in plan.pick.writes] == ["Accepted"]
    assert plan.pick.scale_up is not None and plan.pick.scale_up.count == 2
    assert lifecycle.next_wait(plan, False, OPTS) == 0.0           # processed one: the next loop at once


def test_an_idle_loop_waits_the_scan_interval_and_a_new_request_does_not_count_as_work():
    done = pr("req-a", conds=[cond("Accepted", "True", "Accepted"), cond("Provisioned", "True", "CapacityIsFound")])
    plan = loop(cluster(done))
    assert plan.pick is None
    assert lifecycle.next_wait(plan, False, OPTS) == OPTS.scan_interval
    assert lifecycle.next_wait(plan, True, OPTS) == 0.0            # after a scale-down: at once


def test_accepted_is_one_write_then_provisioned_is_another_applied_as_cluster_autoscaler():
    plan = loop(cluster(pr()))
    accepted = plan.pick.writes[0]
    assert not accepted.apply and accepted.condition["reason"] == "Accepted"
    assert accepted.condition["message"] == "ProvisioningRequest is accepted by ClusterAutoscaler"
    up = plan.pick.scale_up
    assert up.provisioned.apply and up.provisioned.condition["status"] == "True"
    assert up.provisioned.condition["reason"] == "CapacityIsProvisioned"
    assert up.provisioned.condition["message"] == "Capacity is found in the cluster"
    assert "observedGeneration" not in up.provisioned.condition            # SSA from the class: none
    assert [c["type"] for c in up.provisioned.conditions] == ["Accepted", "Provisioned"]
    assert up.refused.condition["reason"] == "CapacityIsNotFound" and up.refused.condition["status"] == "False"


def test_provisioned_does_not_wait_for_the_boot_the_nodes_carry_it():
    up = loop(cluster(pr()), seconds=3).pick.scale_up
    assert up.boots_at == ts(3 + GPUPOOL.boot_seconds)           # the pool's bootSeconds (15)
    n = node_manifest(GPUPOOL, "n1", None, "uid-req-a", "demo/req-a", up.boots_at)
    assert n["metadata"]["annotations"]["fake-ca.tau-demo.io/boots-at"] == up.boots_at
    assert {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"} in n["spec"]["taints"]
    assert n["status"]["conditions"][0]["status"] == "False"
    assert "fake-ca.tau-demo.io/boots-at" not in node_manifest(GPUPOOL, "n2", None, "u", "k")["metadata"]["annotations"]


@pytest.mark.parametrize("param,opt,expected", [
    ("0", None, None), ("30", None, ts(31)), ("never", None, "never"), ("NEVER", None, "never"),
    (None, 5.0, ts(6)), (None, P.FOREVER, "never"), (None, None, ts(16))])
def test_boot_time_from_the_request_then_the_flag_then_the_pool(param, opt, expected):
    params = {"fakeCABootSeconds": param} if param is not None else None
    opts = lifecycle.Options(boot=opt)
    assert loop(cluster(pr(params=params)), opts=opts).pick.scale_up.boots_at == expected


def test_fits_on_existing_capacity_writes_capacity_is_found_and_makes_no_node():
    plan = loop(cluster(pr(count=1), nodes=[node("n1")]))
    assert plan.pick.scale_up is None
    w = plan.pick.writes[-1]
    assert w.apply and (w.condition["status"], w.condition["reason"]) == ("True", "CapacityIsFound")


def test_over_the_pools_max_is_capacity_is_not_found_and_never_failed():
    plan = loop(cluster(pr(count=3)))
    w = plan.pick.writes[-1]
    assert (w.ctype, w.condition["status"], w.condition["reason"]) == ("Provisioned", "False", "CapacityIsNotFound")
    assert w.condition["message"] == "Capacity is not found, CA will try to find it later."
    assert plan.pick.scale_up is None and "max 2" in w.why


def test_booting_nodes_count_as_upcoming_capacity():
    booting = node("n1", ready=False)
    booting["metadata"]["annotations"]["fake-ca.tau-demo.io/boots-at"] = ts(30)
    booting["spec"]["taints"].append({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"})
    plan = loop(cluster(pr(count=1), nodes=[booting]))
    assert plan.pick.writes[-1].condition["reason"] == "CapacityIsFound"


# ---------------------------------------------------------------------------- retries

def test_request_retry_doubles_up_to_the_max():
    policy = backoff.RetryPolicy(5, 20)
    r = pr(conds=[cond("Accepted", "True"), cond("Provisioned", "False", "CapacityIsNotFound", seconds=0)])
    assert not backoff.availability(r, None, at(4), policy).available
    a = backoff.availability(r, None, at(5.5), policy)
    assert a.available and a.retry == 10 and a.why == "retry after 5s"
    assert not backoff.availability(r, 10, at(9), policy).available
    assert backoff.availability(r, 10, at(10.5), policy).retry == 20
    assert backoff.availability(r, 20, at(20.5), policy).retry == 20        # capped
    waiting = backoff.availability(r, 20, at(12), policy)
    assert waiting.due == at(20) and waiting.retry == 20


@pytest.mark.parametrize("conds,why", [
    ([cond("Provisioned", "True")], "Failed or Provisioned"), ([cond("Failed", "True")], "Failed or Provisioned"),
    ([cond("Provisioned", "Unknown")], "Provisioned=Unknown")])
def test_requests_the_injector_never_picks(conds, why):
    a = backoff.availability(pr(conds=conds), 7.0, at(100), backoff.RetryPolicy(1, 1))
    assert not a.available and a.why == why


def test_the_loop_remembers_the_retry_time_per_uid_and_forgets_deleted_requests():
    r = pr(conds=[cond("Accepted", "True"), cond("Provisioned", "False", "CapacityIsNotFound", seconds=0)])
    plan = loop(cluster(r), seconds=6)
    assert plan.pick is not None and plan.memory.retry == {"uid-req-a": 10}
    plan2 = loop(cluster(r), seconds=8, memory=plan.memory)         # 10s now: not yet
    assert plan2.pick is None and plan2.memory.retry == {"uid-req-a": 10}
    assert loop(cluster(), seconds=8, memory=plan.memory).memory.retry == {}


def test_injected_stockout_refuses_until_capacity_comes_back():
    r = pr(params={"fakeCAStockout": "10"})
    early = loop(cluster(r), seconds=3).pick
    assert early.scale_up is None and early.writes[-1].condition["reason"] == "CapacityIsNotFound"
    assert "INJECTED stock-out" in early.why and "back in 7s" in early.why
    assert loop(cluster(r), seconds=11).pick.scale_up is not None
    forever = loop(cluster(pr(params={"fakeCAStockout": "true"})), seconds=10 ** 5).pick
    assert forever.scale_up is None and "back in" not in forever.why


# ---------------------------------------------------------------------------- node-group backoff

G = backoff.GroupPolicy(60, 300, reset=3600)


def test_group_backoff_initial_then_doubling_after_it_ran_out_capped_and_reset():
    b1 = backoff.register_failure(None, at(0), G, "timeout", "x")
    assert (b1.duration, b1.until) == (60, at(60))
    b2 = backoff.register_failure(b1, at(30), G, "timeout", "y")                 # inside the backoff: same duration, extended
    assert (b2.duration, b2.until, b2.error_code, b2.error_message) == (60, at(90), "timeout", "y")
    b3 = backoff.register_failure(b2, at(100), G, "timeout", "z")                # after it ran out: doubled
    assert b3.duration == 120
    b4 = backoff.register_failure(backoff.register_failure(b3, at(300), G, "timeout", ""), at(700), G, "timeout", "")
    assert b4.duration == 300                                         # capped
    fresh = backoff.register_failure(b4, at(700 + 3601), G, "timeout", "")
    assert fresh.duration == 60                                       # reset after the reset timeout
    assert backoff.backed_off(b1, at(60)) and not backoff.backed_off(b1, at(61)) and not backoff.backed_off(None, T0)
    assert backoff.forget_stale({"p": b1}, at(3601), G) == {} and backoff.forget_stale({"p": b1}, at(3600), G)


def never_booting(name="n1", created=0.0) -> dict:
    n = node_manifest(GPUPOOL, name, None, "uid-old", "demo/old", "never")
    n["metadata"]["creationTimestamp"] = ts(created)
    return n


def test_nodes_that_never_boot_time_out_and_back_their_pool_off():
    opts = lifecycle.Options(max_node_provision_time=20)
    young = loop(cluster(nodes=[never_booting()]), seconds=19, opts=opts)
    assert young.timed_out == [] and young.memory.groups == {}
    old = loop(cluster(nodes=[never_booting("n1"), never_booting("n2", created=1)]), seconds=20.5, opts=opts)
    assert [(t.pool, t.nodes) for t in old.timed_out] == [("gpupool", ("n1",))]
    assert "did not become Ready within 20s" in old.timed_out[0].why
    g = old.memory.groups["gpupool"]
    assert g.until == at(20.5 + opts.initial_node_group_backoff)


def test_a_backed_off_pool_gives_capacity_is_not_found():
    memory = lifecycle.register_failures(lifecycle.Memory(), [("gpupool", "timeout", "nodes did not register")], at(0), OPTS)
    pick = loop(cluster(pr()), seconds=5, memory=memory).pick
    w = pick.writes[-1]
    assert pick.scale_up is None and w.condition["reason"] == "CapacityIsNotFound"
    assert "node group gpupool is backed off after a failed scale-up (nodes did not register)" in w.why
    assert loop(cluster(pr()), seconds=61, memory=memory).pick.scale_up is not None


# ---------------------------------------------------------------------------- booking

def provisioned(name, created=0.0, prov_at=0.0, **kw) -> dict:
    return pr(name, conds=[cond("Accepted", "True", "Accepted", prov_at), cond("Provisioned", "True",
                                                                              "CapacityIsFound", prov_at)],
              created=created, **kw)


def test_booking_is_pod_sized_and_keeps_a_second_request_off_the_same_free_node():
    first = provisioned("req-a", count=1)
    second = pr("req-b", count=1, cls=CHECK_CAPACITY, created=1)
    plan = loop(cluster(first, second, nodes=[node("n1")]))
    w = plan.pick.writes[-1]
    assert plan.pick.key == "demo/req-b" and w.condition["reason"] == "CapacityIsNotFound"
    # with its booking over (BookingExpired), the node is free again
    over = provisioned("req-a", count=1)
    over["status"]["conditions"].append(cond("BookingExpired", "True"))
    assert loop(cluster(over, second, nodes=[node("n1")])).pick.writes[-1].condition["reason"] == "CapacityIsFound"


def test_which_requests_book():
    assert booking.books(provisioned("a"))
    assert not booking.books(pr("b"))
    for extra in ("Failed", "BookingExpired", "CapacityRevoked"):
        r = provisioned("c")
        r["status"]["conditions"].append(cond(extra, "True"))
        assert not booking.books(r), extra
    assert not booking.books(provisioned("d", cls="queued-provisioning.gke.io"))
    both = [provisioned("e", count=2), provisioned("f", count=1, uid="uid-f")]
    assert len(booking.booked_pods(both, templates_for(*both))) == 3
    assert booking.booked_pods(both, {}) == []                      # templates gone: books nothing


def consuming(pr_name, node_name, key="autoscaling.x-k8s.io/consume-provisioning-request") -> dict:
    p = pod(node_name)
    p["metadata"]["annotations"] = {key: pr_name}
    return p


def test_refresh_ends_the_booking_when_all_pods_are_scheduled_under_either_key():
    r = provisioned("req-a", count=2)
    pods = [consuming("req-a", "n1"), consuming("req-a", "n2", "cluster-autoscaler.kubernetes.io/consume-provisioning-request")]
    writes, _ = lifecycle.refresh([r], pods[:1], at(1), OPTS)
    assert writes == []
    writes, _ = lifecycle.refresh([r], pods, at(1), OPTS)
    assert [(w.ctype, w.condition["reason"], w.condition["message"]) for w in writes] == [
        ("BookingExpired", "CapacityBookingConsumed", "Capacity booking consumed: all pods scheduled")]


def test_refresh_expires_the_booking_after_the_booking_time_and_keeps_provisioned():
    r = provisioned("req-a")
    assert lifecycle.refresh([r], [], at(59), OPTS)[0] == []
    (w,), _ = lifecycle.refresh([r], [], at(60), OPTS)
    assert (w.ctype, w.condition["reason"]) == ("BookingExpired", "CapacityReservationTimeExpired")
    assert any(c["type"] == "Provisioned" and c["status"] == "True" for c in w.conditions)


def test_refresh_fails_a_request_never_provisioned_for_the_expiry_time():
    r = pr(created=0)
    (w,), _ = lifecycle.refresh([r], [], at(OPTS.expiry), OPTS)
    assert (w.ctype, w.condition["reason"], w.condition["message"]) == ("Failed", "Expired",
                                                                        "ProvisioningRequest is expired")
    assert lifecycle.refresh([r], [], at(OPTS.expiry - 1), OPTS)[0] == []


def test_refresh_makes_at_most_twenty_updates_a_loop():
    many = [provisioned(f"r{i:02d}", created=i) for i in range(25)]
    assert len(lifecycle.refresh(many, [], at(100), OPTS)[0]) == 20


def test_valid_until_is_ignored_unless_honoured_and_a_bad_value_is_only_logged():
    r = pr(params={"ValidUntilSeconds": "8"})
    assert lifecycle.refresh([r], [], at(9), OPTS)[0] == []
    (w,), _ = lifecycle.refresh([r], [], at(9), lifecycle.Options(honor_valid_until=True))
    assert w.condition["reason"] == "ValidUntilSecondsExpired" and "ValidUntilSeconds=8" in w.condition["message"]
    per_request = pr(params={"ValidUntilSeconds": "8", "fakeCAHonorValidUntil": "true"})
    assert lifecycle.refresh([per_request], [], at(9), OPTS)[0][0].condition["reason"] == "ValidUntilSecondsExpired"
    bad = pr(params={"ValidUntilSeconds": "soon"})
    writes, notes = lifecycle.refresh([bad], [], at(1), OPTS)
    assert writes == [] and notes == ["provreq demo/req-a: parameters.ValidUntilSeconds='soon' is not a number of "
                                      "seconds: ignored (the real autoscaler never reads it)"]
    assert loop(cluster(bad)).pick.scale_up is not None              # and it is provisioned as usual
    (w,), _ = lifecycle.refresh([bad], [], at(1), lifecycle.Options(honor_valid_until=True))
    assert w.condition["reason"] == "FailedToCreatePods" and "ValidUntilSeconds" in w.condition["message"]


def test_injected_revocation_writes_capacity_revoked_after_provisioning():
    r = provisioned("req-a", params={"fakeCARevokeAfterSeconds": "3"})
    assert lifecycle.refresh([r], [], at(2), OPTS)[0] == []
    (w,), _ = lifecycle.refresh([r], [], at(3), OPTS)
    assert (w.ctype, w.condition["reason"]) == ("CapacityRevoked", "CapacityRevokedInjected")
    assert "INJECTED" in w.why


# ---------------------------------------------------------------------------- malformed requests

def test_the_injector_fails_requests_with_missing_templates_on_its_way_and_picks_the_next():
    broken, fine = pr("req-a"), pr("req-b", created=1)
    c = lifecycle.Cluster([broken, fine], templates_for(fine), [], [])
    plan = lifecycle.plan_loop(c, POOLS, lifecycle.Memory(), at(2), OPTS)
    assert [(w.ctype, w.condition["reason"]) for w in plan.failed] == [("Failed", "FailedToCreatePods")]
    assert plan.failed[0].condition["message"].startswith("missing pod templates")
    assert plan.pick.key == "demo/req-b"


@pytest.mark.parametrize("params,message", [
    ({"fakeCABootSeconds": "soon"}, "parameters.fakeCABootSeconds='soon' is not a number of seconds or \"never\""),
    ({"fakeCAStockout": "-1"}, "parameters.fakeCAStockout='-1' is out of range (0..315360000)"),
    ({"fakeCARevokeAfterSeconds": "x"}, "parameters.fakeCARevokeAfterSeconds='x' is not a number of seconds")])
def test_unusable_fake_parameters_fail_the_request(params, message):
    plan = loop(cluster(pr(params=params)))
    assert plan.pick is None and plan.failed[0].condition["message"] == f"invalid parameters: {message}"


def test_unsupported_classes_are_left_untouched_and_said_so():
    other = pr(cls="queued-provisioning.gke.io")
    plan = loop(cluster(other))
    assert plan.pick is None and plan.failed == [] and plan.refresh == []
    assert plan.notes == ["provreq demo/req-a: class queued-provisioning.gke.io is not handled by this "
                          "autoscaler; left untouched (rv 7)"]


# ---------------------------------------------------------------------------- check-capacity

def test_check_capacity_never_scales_up_and_honours_no_retry():
    plan = loop(cluster(pr(cls=CHECK_CAPACITY)))
    w = plan.pick.writes[-1]
    assert plan.pick.scale_up is None and not w.apply and w.condition["reason"] == "CapacityIsNotFound"
    assert w.ctype == "Provisioned"
    plan = loop(cluster(pr(cls=CHECK_CAPACITY, params={"noRetry": "true"})))
    w = plan.pick.writes[-1]
    assert (w.ctype, w.condition["status"], w.condition["reason"], w.condition["message"]) == (
        "Failed", "True", "CapacityIsNotFound", "CA could not find requested capacity")
    fits = loop(cluster(pr(cls=CHECK_CAPACITY, count=1), nodes=[node("n1")])).pick.writes[-1]
    assert (fits.condition["status"], fits.condition["reason"]) == ("True", "CapacityIsFound")


# ---------------------------------------------------------------------------- restarts

def made_for(req, name, batch) -> dict:
    n = node_manifest(GPUPOOL, name, None, req["metadata"]["uid"], "demo/" + req["metadata"]["name"])
    n["metadata"]["annotations"]["fake-ca.tau-demo.io/batch-size"] = str(batch)
    n["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    return n


def test_an_interrupted_scale_up_is_finished_when_complete_and_rolled_back_when_partial():
    r = pr(conds=[cond("Accepted", "True", "Accepted")])
    done = loop(cluster(r, nodes=[made_for(r, "n1", 2), made_for(r, "n2", 2)])).pick
    assert done.scale_up is None and done.rollback == []
    assert (done.writes[-1].condition["status"], done.writes[-1].condition["reason"]) == ("True", "CapacityIsProvisioned")
    half = loop(cluster(r, nodes=[made_for(r, "n1", 2)])).pick
    assert half.rollback == ["n1"] and half.scale_up is None and [w.ctype for w in half.writes] == ["Accepted"]
    assert "found 1 of 2 node(s) from an interrupted scale-up" in half.why


# ---------------------------------------------------------------------------- scale-down and status

def test_booting_nodes_are_never_scale_down_candidates():
    b = never_booting("n1", created=0)
    plan = scaledown.scale_down([b], [], {}, POOLS, at(1000), 10)
    assert plan.mark == [] and plan.delete == []


def test_status_configmap_reports_backoff_and_scale_up_in_progress():
    memory = lifecycle.register_failures(lifecycle.Memory(), [("gpupool", "timeout", "2 node(s) did not register")], at(0), OPTS)
    doc = status.status_document(POOLS, [never_booting()], memory.groups, at(1))
    g = doc["nodeGroups"][0]
    assert g["name"] == "gpupool" and g["scaleUp"]["status"] == "Backoff"
    assert g["scaleUp"]["backoffInfo"]["errorMessage"] == "2 node(s) did not register"
    assert g["health"]["nodeCounts"]["registered"] == {"total": 1, "ready": 0, "notStarted": 1}
    cm = status.configmap(doc, at(1))
    assert cm["metadata"] == {"name": "cluster-autoscaler-status", "namespace": "kube-system"}
    assert status.group_backoff(cm, "gpupool")["status"] == "Backoff"
    assert status.group_backoff(cm, "other") is None
    later = status.status_document(POOLS, [never_booting()], memory.groups, at(61))
    assert later["nodeGroups"][0]["scaleUp"] == {"status": "InProgress"}
    assert status.status_document(POOLS, [], {}, at(61))["nodeGroups"][0]["scaleUp"] == {"status": "NoActivity"}
    assert status.group_backoff({"data": {"status": "{unclosed"}}, "gpupool") is None
    assert yaml.safe_load(cm["data"]["status"])["time"] == ts(1)
    assert status.scale_up_states(doc) == [("gpupool", g["scaleUp"]), ("ondemand", {"status": "NoActivity"})]
    assert status.scale_up_states(doc) != status.scale_up_states(later)


def test_params_parse():
    assert P.parse(pr()) == P.Params()
    got = P.parse(pr(params={"noRetry": "true", "fakeCABootSeconds": "never", "fakeCAStockout": "false",
                             "fakeCAHonorValidUntil": "True", "ValidUntilSeconds": "60"}))
    assert (got.no_retry, got.boot, got.stockout, got.honor_valid_until, got.valid_until) == (
        True, P.FOREVER, None, True, 60.0)
    assert vm.boots_at(T0, 0) is None and vm.boots_at(T0, P.FOREVER) == "never"


def test_node_views_for_the_planner():
    b = copy.deepcopy(never_booting())
    up = vm.as_upcoming(b)
    assert not any(t["key"] == "node.kubernetes.io/not-ready" for t in up["spec"]["taints"])
    assert vm.booting(b) and not vm.booting(up)
    assert vm.snapshot_nodes([b])[0]["status"]["conditions"][-1]["status"] == "True"


def test_a_node_given_to_a_request_by_capacity_is_found_is_not_scaled_down():
    """The soak found it: a request got CapacityIsFound on an idle node whose scale-down timer had run
    out, and the same loop deleted that node.  Booked pods keep their node in use, as in the real
    scale-down planner's snapshot."""
    from fake_ca.planner import booked_nodes
    idle = node("n1")
    idle["metadata"]["annotations"]["fake-ca.tau-demo.io/unneeded-since"] = ts(0)
    given = provisioned("req-b", count=1)
    booked = booked_nodes(booking.booked_pods([given], templates_for(given)), [idle], [])
    assert booked == {"n1"}
    assert scaledown.scale_down([idle], [], {}, POOLS, at(30), 10, lambda: booked).delete == []
    assert scaledown.scale_down([idle], [], {}, POOLS, at(30), 10).delete == ["n1"]


def test_booked_pods_are_placed_only_when_a_node_is_otherwise_unneeded():
    """Placing every booked pod is the costly part of a loop at scale: asked once, and only if needed."""
    asked = []

    def booked():
        asked.append(1)
        return set()
    busy = node("n2")
    assert scaledown.scale_down([busy], [pod("n2")], {}, POOLS, at(30), 10, booked).mark == []
    assert asked == []
    idle = [node("n3"), node("n4")]
    assert scaledown.scale_down(idle, [], {}, POOLS, at(30), 10, booked).mark == ["n3", "n4"]
    assert asked == [1]


# ---------------------------------------------------------------------------- processorInstance

def test_check_capacity_naming_a_processor_instance_is_another_autoscalers_and_left_untouched():
    theirs = pr("req-i", cls=CHECK_CAPACITY, params={"processorInstance": "other"})
    plan = loop(cluster(theirs))
    assert plan.pick is None and plan.failed == [] and plan.refresh == []
    assert any("parameters.processorInstance=other names another autoscaler instance; left untouched" in n
               for n in plan.notes)
    mine = pr("req-j", cls=CHECK_CAPACITY, params={"processorInstance": ""})
    assert loop(cluster(mine)).pick.key == "demo/req-j"
    other = pr("req-k", cls="queued-provisioning.gke.io")
    assert any("class queued-provisioning.gke.io is not handled by this autoscaler" in n for n in loop(cluster(other)).notes)
    odd = pr("req-o", cls="queued-provisioning.gke.io")
    odd["spec"]["parameters"] = "junk"                              # not a map: no instance named
    assert any("req-o: class queued-provisioning.gke.io is not handled" in n for n in loop(cluster(odd)).notes)


def test_a_setting_declares_its_default_its_help_and_the_real_value():
    f = lifecycle.setting(5, "h", real="r", metavar="M", never="n", off="o")
    assert f.default == 5 and dict(f.metadata) == {"help": "h", "real": "r", "metavar": "M", "never": "n", "off": "o"}
    g = lifecycle.setting(1.5, "h")
    assert g.default == 1.5 and dict(g.metadata) == {"help": "h", "real": "", "metavar": "DURATION", "never": "",
                                                      "off": ""}
