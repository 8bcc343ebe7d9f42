"""Every decision of one loop of the fake autoscaler, pinned whole: the write (the request it is based on,
the condition type, all conditions as they will read, the log line, server-side apply or update, the
provisioningClassDetails), the scale-up, the pick.  Reasons and messages are the real Cluster
Autoscaler's where it has them (fake_ca/conditions.py); the `why` is the log line a user reads."""

from __future__ import annotations

import dataclasses

from k8s.keys import BATCH_ANNOTATION, CHECK_CAPACITY, TOPOLOGY_LEVEL_LABEL
from fake_ca import lifecycle
from fake_ca.backoff import GroupBackoff
from fake_ca.lifecycle import Pick, ScaleUp, Write
from k8s.pools import node_manifest
from fake_ca.request import request_from_objects
from test_fake_ca_loop import (GPUPOOL, OPTS, at, cluster, cond, consuming, loop, made_for, never_booting, pr,
                               provisioned, templates_for, ts)
from test_planner import POOLS, TPL, node, template

MSG_ACCEPTED = "ProvisioningRequest is accepted by ClusterAutoscaler"
MSG_FOUND = "Capacity is found in the cluster"
MSG_NOT_FOUND = "Capacity is not found, CA will try to find it later."
KEY = "demo/req-a"


def written(ctype: str, status_: str, reason: str, message: str, seconds: float = 1.0, gen: int | None = 1) -> dict:
    """A condition as the loop writes it at `seconds`: observedGeneration only on an update (gen)."""
    c = {"type": ctype, "status": status_, "reason": reason, "message": message, "lastTransitionTime": ts(seconds)}
    if gen is not None:
        c["observedGeneration"] = gen
    return c


def acceptance(r: dict, seconds: float = 1.0, gen: int = 1) -> tuple[Write, dict]:
    """The Accepted write of a picked request, and the request as it reads once accepted."""
    conds = [c for c in r["status"]["conditions"] if c["type"] != "Accepted"] + [
        written("Accepted", "True", "Accepted", MSG_ACCEPTED, seconds, gen)]
    return (Write(r, "Accepted", conds, f"provreq demo/{r['metadata']['name']}: accepted"),
            {**r, "status": {**r["status"], "conditions": conds}})


def then(after: dict, ctype: str, status_: str, reason: str, message: str, why: str, apply: bool = True,
         details: dict | None = None, seconds: float = 1.0) -> Write:
    """The write that follows the Accepted one."""
    cond_ = written(ctype, status_, reason, message, seconds, None if apply else after["metadata"]["generation"])
    return Write(after, ctype, after["status"]["conditions"] + [cond_], why, apply, details)


# ---------------------------------------------------------------------------- best-effort-atomic

def test_a_request_that_needs_nodes_is_accepted_and_provisioned_as_soon_as_they_are_requested():
    r = pr()
    r["metadata"]["generation"] = 4
    acc, after = acceptance(r, gen=4)
    assert loop(cluster(r)).pick == Pick(KEY, "uid-req-a", [acc], scale_up=ScaleUp(
        GPUPOOL, 2, ("rack-a", "rack-a"), ts(16),
        provisioned=then(after, "Provisioned", "True", "CapacityIsProvisioned", MSG_FOUND,
                         f"provreq {KEY}: Provisioned=True (CapacityIsProvisioned) as soon as the nodes are requested "
                         "(booting 15s)"),
        refused=then(after, "Provisioned", "False", "CapacityIsNotFound", MSG_NOT_FOUND,
                     f"provreq {KEY}: the scale-up failed; nodes rolled back"),
        why=f"provreq {KEY}: gang needs 2 node(s) of gpupool (max 2): fits"))


def test_the_provisioned_log_line_says_how_the_new_vms_boot():
    def line(params=None, opts=OPTS):
        up = loop(cluster(pr(params=params)), opts=opts).pick.scale_up
        return up.boots_at, up.provisioned.why.removeprefix(
            f"provreq {KEY}: Provisioned=True (CapacityIsProvisioned) as soon as the nodes are requested")
    assert line({"fakeCABootSeconds": "never"}) == ("never", " (their VMs never boot)")
    assert line({"fakeCABootSeconds": "0"}) == (None, "")
    assert line(opts=lifecycle.Options(boot=5)) == (ts(6), " (booting 5s)")


def topology_cluster(*nodes) -> lifecycle.Cluster:
    r = pr()
    name = f"{TPL}-req-a"
    return lifecycle.Cluster([r], {("demo", name): template(name=name, labels={TOPOLOGY_LEVEL_LABEL: "domain"})},
                             list(nodes), [])


def test_a_topology_request_publishes_its_one_domain_with_provisioned():
    up = loop(topology_cluster()).pick.scale_up
    assert (up.domains, up.provisioned.details, up.refused.details) == (("rack-a", "rack-a"),
                                                                       {"topology-domain": "rack-a"}, None)
    up = loop(topology_cluster(node("b1", domain="rack-b"))).pick.scale_up          # one pod fits on b1
    assert (up.domains, up.provisioned.details) == (("rack-b",), {"topology-domain": "rack-b"})
    w = loop(topology_cluster(node("b1", domain="rack-b"), node("b2", domain="rack-b"))).pick.writes[-1]
    assert (w.condition["reason"], w.details) == ("CapacityIsFound", {"topology-domain": "rack-b"})


def test_a_request_that_fits_existing_capacity_is_found_without_a_node():
    r = pr(count=1)
    acc, after = acceptance(r)
    assert loop(cluster(r, nodes=[node("n1")])).pick == Pick(KEY, "uid-req-a", [acc, then(
        after, "Provisioned", "True", "CapacityIsFound", MSG_FOUND,
        f"provreq {KEY}: fits on existing capacity (1 pod(s) on 1 node(s)): no node needed")])


def test_a_request_that_does_not_fit_is_not_found_and_says_why():
    r = pr(count=3)
    r["status"]["provisioningClassDetails"] = {"other": "kept"}          # the rest of the status stays as read
    acc, after = acceptance(r)
    assert loop(cluster(r)).pick == Pick(KEY, "uid-req-a", [acc, then(
        after, "Provisioned", "False", "CapacityIsNotFound", MSG_NOT_FOUND,
        f"provreq {KEY}: gang needs 3 node(s) of gpupool (max 2): does not fit: pool gpupool has 0 node(s) and max 2, "
        "3 more needed")])


def test_a_backed_off_node_group_is_named_with_its_reason_and_end():
    memory = lifecycle.Memory(groups={"gpupool": GroupBackoff(60, at(60), at(0), "timeout", "nodes did not register")})
    r = pr()
    acc, after = acceptance(r, seconds=5)
    assert loop(cluster(r), seconds=5, memory=memory).pick == Pick(KEY, "uid-req-a", [acc, then(
        after, "Provisioned", "False", "CapacityIsNotFound", MSG_NOT_FOUND,
        f"provreq {KEY}: does not fit: node group gpupool is backed off after a failed scale-up (nodes did not "
        "register) until 10:01:00", seconds=5)])


def test_a_stockout_refuses_the_scale_up_until_the_request_is_old_enough():
    r = pr(params={"fakeCAStockout": "10"})
    acc, after = acceptance(r, seconds=3)
    why = "INJECTED stock-out: the cloud refused 2 node(s) of gpupool, back in 7s"
    assert loop(cluster(r), seconds=3).pick == Pick(KEY, "uid-req-a", [acc, then(
        after, "Provisioned", "False", "CapacityIsNotFound", MSG_NOT_FOUND,
        f"provreq {KEY}: gang needs 2 node(s) of gpupool (max 2): fits; {why}", seconds=3)], why=why)
    assert loop(cluster(r), seconds=10).pick.scale_up is not None                  # 10s old: capacity is back
    flag = lifecycle.Options(stockout=10)
    assert loop(cluster(pr()), seconds=3, opts=flag).pick.why == why                # the flag, for every request
    assert loop(cluster(pr(params={"fakeCAStockout": "0"})), seconds=3, opts=flag).pick.scale_up is not None
    forever = loop(cluster(pr(params={"fakeCAStockout": "true"})), seconds=10 ** 5).pick
    assert forever.why == "INJECTED stock-out: the cloud refused 2 node(s) of gpupool"


def test_a_request_read_without_creation_time_counts_as_just_created():
    r = pr(params={"fakeCAStockout": "1"})
    del r["metadata"]["creationTimestamp"]
    assert loop(cluster(r), seconds=100).pick.why == "INJECTED stock-out: the cloud refused 2 node(s) of gpupool, back in 1s"
    assert lifecycle.refresh([r], [], at(OPTS.expiry + 1), OPTS) == ([], [])     # never expires


# ---------------------------------------------------------------------------- check-capacity

def test_check_capacity_writes_by_update_and_never_scales_up():
    r = pr(cls=CHECK_CAPACITY)
    acc, after = acceptance(r)
    line = (f"provreq {KEY}: does not fit: check-capacity never adds nodes, and 2 of 2 pod(s) do not fit on existing "
            f"capacity (first: a pod of {TPL}-req-a)")
    assert loop(cluster(r)).pick == Pick(KEY, "uid-req-a", [acc, then(
        after, "Provisioned", "False", "CapacityIsNotFound", MSG_NOT_FOUND, line, apply=False)])
    no_retry = pr(cls=CHECK_CAPACITY, params={"noRetry": "true"})
    acc, after = acceptance(no_retry)
    assert loop(cluster(no_retry)).pick == Pick(KEY, "uid-req-a", [acc, then(
        after, "Failed", "True", "CapacityIsNotFound", "CA could not find requested capacity",
        line + " (noRetry: Failed)", apply=False)])
    fits = pr(cls=CHECK_CAPACITY, count=1)
    acc, after = acceptance(fits)
    assert loop(cluster(fits, nodes=[node("n1")])).pick == Pick(KEY, "uid-req-a", [acc, then(
        after, "Provisioned", "True", "CapacityIsFound", MSG_FOUND,
        f"provreq {KEY}: fits on existing capacity (1 pod(s) on 1 node(s)): no node needed", apply=False)])


# ---------------------------------------------------------------------------- an interrupted scale-up

def test_an_interrupted_scale_up_with_all_its_nodes_is_provisioned():
    r = pr(conds=[cond("Accepted", "True", "Accepted")])
    acc, after = acceptance(r)
    assert loop(cluster(r, nodes=[made_for(r, "n2", 2), made_for(r, "n1", 2)])).pick == Pick(KEY, "uid-req-a", [
        acc, then(after, "Provisioned", "True", "CapacityIsProvisioned", MSG_FOUND,
                  f"provreq {KEY}: all 2 node(s) exist (n1, n2): provisioned")])


def test_an_interrupted_scale_up_missing_nodes_is_rolled_back_and_planned_again():
    r = pr()
    leaving = made_for(r, "n3", 3)
    leaving["metadata"]["deletionTimestamp"] = ts(0)
    acc, _ = acceptance(r)
    assert loop(cluster(r, nodes=[made_for(r, "n2", 3), made_for(r, "n1", 3), leaving])).pick == Pick(
        KEY, "uid-req-a", [acc], rollback=["n1", "n2"],
        why=f"provreq {KEY}: found 2 of 3 node(s) from an interrupted scale-up; deleting n1, n2 (atomic) and "
            "planning again")
    unknown = made_for(r, "n1", 2)
    del unknown["metadata"]["annotations"][BATCH_ANNOTATION]            # how many it belonged to is unknown
    assert loop(cluster(r, nodes=[unknown])).pick.why == (
        f"provreq {KEY}: found 1 of 0 node(s) from an interrupted scale-up; deleting n1 (atomic) and planning again")
    for edited in ("two", "-2", "2.0", " "):                          # edited by hand: no count, so unknown too
        unknown["metadata"]["annotations"][BATCH_ANNOTATION] = edited
        assert loop(cluster(r, nodes=[unknown])).pick.rollback == ["n1"]


def made_in(r: dict, name: str, domain: str | None) -> dict:
    n = made_for(r, name, 2)
    n["metadata"]["labels"].update(node_manifest(GPUPOOL, name, domain, "", "")["metadata"]["labels"])
    return n


def test_an_interrupted_topology_scale_up_publishes_the_domain_only_when_all_its_nodes_share_one():
    c = topology_cluster()
    r = c.provreqs[0]
    def details(*nodes):
        return loop(lifecycle.Cluster(c.provreqs, c.templates, list(nodes), [])).pick.writes[-1].details
    assert details(made_in(r, "n1", "rack-b"), made_in(r, "n2", "rack-b")) == {"topology-domain": "rack-b"}
    assert details(made_in(r, "n1", "rack-a"), made_in(r, "n2", "rack-b")) is None
    assert details(made_in(r, "n1", None), made_in(r, "n2", None)) is None
    plain = loop(cluster(r, nodes=[made_in(r, "n1", "rack-b"), made_in(r, "n2", "rack-b")])).pick.writes[-1]
    assert (plain.condition["reason"], plain.details) == ("CapacityIsProvisioned", None)


# ---------------------------------------------------------------------------- refresh

def refreshed(r: dict, seconds: float, pods=(), opts=OPTS) -> list[Write]:
    writes, _ = lifecycle.refresh([r], list(pods), at(seconds), opts)
    return writes


def update(r: dict, ctype: str, status_: str, reason: str, message: str, seconds: float, why: str) -> Write:
    conds = [c for c in r["status"]["conditions"] if c["type"] != ctype] + [
        written(ctype, status_, reason, message, seconds)]
    return Write(r, ctype, conds, why)


def test_refresh_ends_a_booking_when_its_pods_are_scheduled_or_its_time_is_over():
    r = provisioned("req-a", count=2)
    pods = [consuming("req-a", "n1"), consuming("req-a", "n2")]
    assert refreshed(r, 5, pods) == [update(r, "BookingExpired", "True", "CapacityBookingConsumed",
                                            "Capacity booking consumed: all pods scheduled", 5,
                                            f"provreq {KEY}: all 2 pod(s) scheduled: booking consumed (CA 1.37)")]
    assert refreshed(r, 60) == [update(r, "BookingExpired", "True", "CapacityReservationTimeExpired",
                                       "Capacity reservation time is expired", 60, f"provreq {KEY}: booking of 60s expired")]
    r["status"]["conditions"].append(cond("BookingExpired", "True", "CapacityReservationTimeExpired", 60))
    assert refreshed(r, 500, pods) == []                                           # ended once, not again


def test_without_the_1_37_rule_a_booking_ends_only_when_its_time_is_over_as_in_1_36_1():
    r = provisioned("req-a", count=2)
    pods = [consuming("req-a", "n1"), consuming("req-a", "n2")]
    as_136 = dataclasses.replace(OPTS, booking_consumed=False)
    assert OPTS.booking_consumed is True
    assert refreshed(r, 5, pods, opts=as_136) == []                               # every pod scheduled: still booked
    assert refreshed(r, 60, pods, opts=as_136) == [
        update(r, "BookingExpired", "True", "CapacityReservationTimeExpired", "Capacity reservation time is expired", 60,
               f"provreq {KEY}: booking of 60s expired")]


def test_refresh_revokes_capacity_when_injected_once():
    r = provisioned("req-a", params={"fakeCARevokeAfterSeconds": "3"})
    why = (f"provreq {KEY}: INJECTED fault: revoking capacity 4s after provisioning "
           "(the real autoscaler never writes CapacityRevoked)")
    assert refreshed(r, 4) == [update(r, "CapacityRevoked", "True", "CapacityRevokedInjected",
                                      "capacity revoked by fault injection (fake-ca)", 4, why)]
    assert refreshed(provisioned("req-a"), 4, opts=lifecycle.Options(revoke_after=3)) == [
        update(provisioned("req-a"), "CapacityRevoked", "True", "CapacityRevokedInjected",
               "capacity revoked by fault injection (fake-ca)", 4, why)]
    r["status"]["conditions"].append(cond("CapacityRevoked", "True", "CapacityRevokedInjected", 4))
    assert refreshed(r, 10) == []                                                   # revoked once, not again


def test_refresh_expires_a_request_never_provisioned():
    r = pr()
    week = OPTS.expiry
    assert refreshed(r, week) == [update(r, "Failed", "True", "Expired", "ProvisioningRequest is expired", week,
                                         f"provreq {KEY}: not provisioned 604800s after creation: expired")]
    r["status"]["conditions"].append(cond("Failed", "True", "Expired", week))
    assert refreshed(r, week + 1) == []                                             # failed once, not again


def test_refresh_honours_valid_until_only_when_asked_and_fails_an_unreadable_one():
    honour = lifecycle.Options(honor_valid_until=True)
    r = pr(params={"ValidUntilSeconds": "8"})
    assert refreshed(r, 7.5, opts=honour) == []
    assert refreshed(r, 8, opts=honour) == [update(
        r, "Failed", "True", "ValidUntilSecondsExpired",
        "capacity not provisioned within ValidUntilSeconds=8 (honoured by fake-ca --honor-valid-until; the real "
        "autoscaler ignores it)", 8,
        f"provreq {KEY}: ValidUntilSeconds=8 passed without capacity: Failed (--honor-valid-until; the real Cluster "
        "Autoscaler ignores ValidUntilSeconds)")]
    assert refreshed(pr(), 8, opts=honour) == []                                     # nothing to honour
    bad = pr(params={"ValidUntilSeconds": "soon"})
    note = "parameters.ValidUntilSeconds='soon' is not a number of seconds"
    assert refreshed(bad, 1, opts=honour) == [update(bad, "Failed", "True", "FailedToCreatePods",
                                                     f"invalid parameters: {note}", 1,
                                                     f"provreq {KEY}: {note} (--honor-valid-until is on)")]


def test_refresh_notes_an_ignored_valid_until_only_when_it_is_not_honoured():
    bad = provisioned("req-a", params={"ValidUntilSeconds": "soon"})
    note = (f"provreq {KEY}: parameters.ValidUntilSeconds='soon' is not a number of seconds: ignored (the real "
            "autoscaler never reads it)")
    assert lifecycle.refresh([bad], [], at(1), OPTS) == ([], [note])
    assert lifecycle.refresh([bad], [], at(1), lifecycle.Options(honor_valid_until=True)) == ([], [])
    assert lifecycle.refresh([pr("req-b")], [], at(1), OPTS) == ([], [])


def test_refresh_skips_what_it_must_not_touch_and_goes_on_with_the_rest():
    old = OPTS.booking
    other_class = provisioned("req-0", cls="queued-provisioning.gke.io", created=-3)
    failed = provisioned("req-1", created=-2)
    failed["status"]["conditions"].append(cond("Failed", "True", "Expired"))
    unusable = provisioned("req-2", params={"fakeCABootSeconds": "soon"}, created=-1)
    due = provisioned("req-a")
    writes, notes = lifecycle.refresh([due, unusable, failed, other_class], [], at(old), OPTS)
    assert [w.why for w in writes] == [f"provreq {KEY}: booking of 60s expired"] and notes == []


# ---------------------------------------------------------------------------- the loop

def test_a_request_refresh_wrote_is_not_also_picked_in_that_loop_the_next_one_is():
    week = OPTS.expiry
    expiring, fresh = pr("req-a", created=0), pr("req-b", created=week)
    plan = loop(cluster(expiring, fresh), seconds=week)
    assert [w.ctype for w in plan.refresh] == ["Failed"] and plan.pick.key == "demo/req-b"


def test_the_injector_passes_over_unsupported_and_unusable_requests_to_the_next():
    other = pr("req-0", cls="queued-provisioning.gke.io", created=-2)
    unusable = pr("req-1", params={"fakeCAStockout": "soon"}, created=-1)
    plan = loop(cluster(other, unusable, pr("req-a")))
    message = "invalid parameters: parameters.fakeCAStockout='soon' is not a number of seconds"
    assert plan.failed == [update(unusable, "Failed", "True", "FailedToCreatePods", message, 1,
                                  "provreq demo/req-1: invalid: parameters.fakeCAStockout='soon' is not a number of "
                                  "seconds")]
    assert plan.pick.key == KEY


def test_a_request_whose_templates_are_gone_is_failed_with_the_real_message():
    r = pr()
    plan = lifecycle.plan_loop(lifecycle.Cluster([r], {}, [], []), POOLS, lifecycle.Memory(), at(1), OPTS)
    message = f"missing pod templates, 1 pod templates were referenced, 1 templates were missing: {TPL}-req-a"
    assert (plan.pick, plan.failed) == (None, [update(r, "Failed", "True", "FailedToCreatePods", message, 1,
                                                      f"provreq {KEY}: {message}")])


def test_the_oldest_request_goes_first_then_by_name_and_one_without_a_creation_time_first_of_all():
    a, b = pr("req-a", created=5), pr("req-b", created=5)
    assert loop(cluster(b, a), seconds=9).pick.key == KEY
    undated = pr("req-c", created=9)
    del undated["metadata"]["creationTimestamp"]
    assert loop(cluster(b, a, undated), seconds=9).pick.key == "demo/req-c"


def test_a_request_without_namespace_takes_its_templates_from_default():
    r = pr()
    del r["metadata"]["namespace"]
    name = f"{TPL}-req-a"
    c = lifecycle.Cluster([r], {("default", name): template(name=name, namespace="default"),
                                ("demo", name): template(name=name, gpus=80)}, [], [])
    assert lifecycle.plan_loop(c, POOLS, lifecycle.Memory(), at(1), OPTS).pick.scale_up.why == \
        "provreq req-a: gang needs 2 node(s) of gpupool (max 2): fits"


def test_nodes_that_time_out_in_this_loop_are_no_upcoming_capacity_for_it():
    opts = lifecycle.Options(max_node_provision_time=20)
    plan = loop(cluster(pr(count=1), nodes=[never_booting("n1", created=0)]), seconds=21, opts=opts)
    assert [t.nodes for t in plan.timed_out] == [("n1",)]
    assert plan.pick.writes[-1].why == (
        f"provreq {KEY}: does not fit: node group gpupool is backed off after a failed scale-up (Scale-up timed out "
        "for node group gpupool after 21s) until 10:01:21")


def test_the_retry_time_of_a_request_that_got_provisioned_is_forgotten():
    done = pr(conds=[cond("Provisioned", "True", "CapacityIsFound")])
    assert loop(cluster(done), memory=lifecycle.Memory(retry={"uid-req-a": 10})).memory == lifecycle.Memory()


def test_a_failure_of_a_backed_off_group_builds_on_its_backoff():
    memory = lifecycle.Memory(retry={"u": 5}, groups={"gpupool": GroupBackoff(60, at(60), at(0), "timeout", "first")})
    after = lifecycle.register_failures(memory, [("gpupool", "timeout", "second")], at(100), OPTS)
    assert after == lifecycle.Memory({"u": 5}, {"gpupool": GroupBackoff(120, at(220), at(100), "timeout", "second")})


def test_booked_requests_are_read_through_the_clusters_parser():
    parsed = []
    def parse(provreq, templates):
        parsed.append(provreq["metadata"]["name"])
        return request_from_objects(provreq, templates)
    booked, picked = provisioned("req-b", count=1, created=-1), pr(count=1)
    c = lifecycle.Cluster([booked, picked], templates_for(booked, picked), [node("n1")], [], parse)
    assert lifecycle.plan_loop(c, POOLS, lifecycle.Memory(), at(1), OPTS).pick.scale_up.why == \
        f"provreq {KEY}: gang needs 1 node(s) of gpupool (max 2): fits"             # n1 is req-b's
    assert parsed == ["req-b"]


def test_a_setting_is_a_field_with_its_default_and_what_the_flag_says():
    """tau-demo fake-ca makes each Options field a flag from this metadata (cli/fake_ca.py)."""
    import dataclasses
    f = lifecycle.setting(5.0, "how long")
    assert f.default == 5.0
    assert dict(f.metadata) == {"help": "how long", "real": "", "metavar": "DURATION", "never": "", "off": ""}
    f = lifecycle.setting(True, "honor it", real="10m", metavar="SECONDS", never="never", off="no-honor")
    assert dict(f.metadata) == {"help": "honor it", "real": "10m", "metavar": "SECONDS", "never": "never",
                                "off": "no-honor"}
    booking = {x.name: x for x in dataclasses.fields(lifecycle.Options)}["booking"]
    assert booking.default == lifecycle.Options().booking and booking.metadata["help"]
