"""What the fake autoscaler's controller sends and when (fake_ca/outbox.py), on plain objects: the pod events that
wake the loop, the status ConfigMap's pace, each ProvisioningRequest status write's body (apply or update), the new
node names, the ToBeDeleted taint among a node's others, and the lines the controller logs."""

from __future__ import annotations

import dataclasses
import random
from datetime import datetime, timedelta, timezone

import pytest

from fake_ca import lifecycle, outbox
from k8s.keys import TO_BE_DELETED_TAINT
from k8s.resources import PROVREQ
from test_planner import GPUPOOL, POOLS, node, provreq

NOW = datetime(2026, 12, 1, 10, 0, 30, tzinfo=timezone.utc)


def ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def pending_pod(age: float = 2.0, scheduled: str | None = "False", node_name=None, deleting=False) -> dict:
    md = {"name": "p", "namespace": "demo", "creationTimestamp": ts(NOW - timedelta(seconds=age))}
    if deleting:
        md["deletionTimestamp"] = ts(NOW)
    p = {"metadata": md, "spec": {}, "status": {"conditions": []}}
    if node_name:
        p["spec"]["nodeName"] = node_name
    if scheduled is not None:
        p["status"]["conditions"].append({"type": "PodScheduled", "status": scheduled, "reason": "Unschedulable"})
    return p


@pytest.mark.parametrize("pod, wakes", [
    (pending_pod(), True),
    (pending_pod(age=0), True),
    (pending_pod(age=9), True),
    (pending_pod(age=10), False),                        # loop/trigger.go: only pods changed within maxPodChangeAge
    (pending_pod(age=30), False),
    (pending_pod(scheduled="True"), False),
    (pending_pod(scheduled=None), False),                 # not looked at by the scheduler yet
    (pending_pod(node_name="n1"), False),                 # bound
    (pending_pod(deleting=True), False),
    ({"metadata": {"name": "p"}, "spec": {}, "status": {"conditions": [{"type": "PodScheduled", "status": "False"}]}},
     False),                                              # no creation time: not known to be recent
])
def test_a_recent_unschedulable_pod_wakes_the_loop(pod, wakes):
    assert outbox.wakes(pod, NOW) is wakes


def test_pod_templates_are_keyed_by_namespace_and_name():
    a = {"metadata": {"name": "t1", "namespace": "demo"}}
    b = {"metadata": {"name": "t1", "namespace": "other"}}
    assert outbox.templates_by_key([a, b]) == {("demo", "t1"): a, ("other", "t1"): b}


def test_a_requests_reading_depends_on_its_version_and_its_templates_versions():
    pr = provreq(("tpl-b", 1), ("tpl-a", 2))
    pr["metadata"]["resourceVersion"] = "7"
    templates = {"tpl-a": {"metadata": {"resourceVersion": "3"}}, "tpl-b": {"metadata": {"resourceVersion": "4"}}}
    assert outbox.parse_version(pr, templates) == ("7", (("tpl-a", "3"), ("tpl-b", "4")))
    assert outbox.parse_version(pr, {}) == ("7", (("tpl-a", None), ("tpl-b", None)))
    odd = {"metadata": {}, "spec": {"podSets": [None, "x", {"podTemplateRef": None}, {}]}}
    assert outbox.parse_version(odd, {}) == (None, (("None", None), ("None", None)))     # only the dicts
    assert outbox.parse_version({"metadata": {"resourceVersion": "1"}}, {}) == ("1", ())


def doc(scale_up="NoActivity", nodes=0) -> dict:
    return {"autoscalerStatus": "Running",
            "nodeGroups": [{"name": "gpupool", "health": {"nodeCounts": {"registered": {"total": nodes}}},
                            "scaleUp": {"status": scale_up}}]}


def test_the_status_configmap_is_written_at_once_when_a_scale_up_state_changed_else_once_a_second():
    assert outbox.status_due(doc(), None, 0.0), "nothing written yet: at once"
    assert not outbox.status_due(doc(), doc(), 100.0), "nothing changed: never"
    assert outbox.status_due(doc("Backoff"), doc(), 0.0), "a scale-up state changed: at once"
    assert not outbox.status_due(doc(nodes=1), doc(), 0.5), "only a node count: not within a second"
    assert outbox.status_due(doc(nodes=1), doc(), 1.0)
    assert outbox.status_due(doc(nodes=1), doc(), 3.0)


def write(apply=False, details=None) -> lifecycle.Write:
    pr = provreq()
    pr["metadata"].update(resourceVersion="7", managedFields=[{"manager": "kueue"}])
    pr["status"] = {"conditions": [{"type": "Accepted", "status": "True"}], "other": 1}
    conds = [{"type": "Accepted", "status": "True", "reason": "Accepted"},
             {"type": "Provisioned", "status": "True", "reason": "CapacityIsProvisioned"}]
    return lifecycle.Write(pr, "Provisioned", conds, "provreq demo/job-x-gpu-1: provisioned", apply=apply,
                           details=details)


def test_an_update_sends_the_whole_request_as_read_without_managed_fields():
    w = write()
    apply, body = outbox.status_write(w)
    assert apply is False
    md = dict(w.provreq["metadata"])
    del md["managedFields"]
    assert body == {**w.provreq, "metadata": md, "status": {"conditions": w.conditions, "other": 1}}
    assert "managedFields" in w.provreq["metadata"], "the read object is not changed"


def test_an_update_after_a_write_of_the_same_request_carries_that_writes_version():
    w = write()
    base = {**w.provreq, "metadata": {**w.provreq["metadata"], "resourceVersion": "9"}, "status": {"kept": 2}}
    apply, body = outbox.status_write(w, base)
    md = dict(base["metadata"])
    del md["managedFields"]
    assert apply is False and body == {**base, "metadata": md, "status": {"kept": 2, "conditions": w.conditions}}
    no_status = {**base}
    del no_status["status"]
    assert outbox.status_write(w, no_status)[1]["status"] == {"conditions": w.conditions}


def test_an_apply_sends_only_the_one_condition_and_the_class_details():
    w = write(apply=True, details={"k": "v"})
    md = w.provreq["metadata"]
    assert outbox.status_write(w) == (True, PROVREQ.new(md["name"], md["namespace"], uid=md["uid"], status={
        "conditions": [w.conditions[1]], "provisioningClassDetails": {"k": "v"}}))
    assert outbox.status_write(write(apply=True))[1]["status"] == {"conditions": [w.conditions[1]]}


def test_a_write_that_went_through_is_logged_with_its_condition_and_version():
    assert outbox.written_line(write(), {"metadata": {"resourceVersion": "12"}}) == (
        "provreq demo/job-x-gpu-1: provisioned [Provisioned=True/CapacityIsProvisioned, rv 12]")
    assert outbox.written_line(write(), {"metadata": {}}).endswith(", rv None]")


def test_new_node_names_are_the_pools_prefix_and_six_digits_never_taken():
    rng = random.Random(4242)
    first = [f"{GPUPOOL.name_prefix}{random.Random(4242).randrange(10 ** 6):06d}"]
    taken = {first[0]}
    names = outbox.new_names(GPUPOOL, 2, taken, rng)
    assert len(names) == 2 and first[0] not in names and len(set(names)) == 2
    assert taken == {first[0]}, "the names taken are not changed"
    replay = random.Random(4242)
    draws = [f"{GPUPOOL.name_prefix}{replay.randrange(10 ** 6):06d}" for _ in range(3)]
    assert names == draws[1:], "the first draw was taken: the next two"
    assert all(len(n) == len(GPUPOOL.name_prefix) + 6 for n in names)


def test_names_drawn_twice_in_one_call_are_taken_once():
    class Repeats(random.Random):
        seq = iter([5, 5, 7])
        def randrange(self, *_):
            return next(self.seq)
    assert outbox.new_names(GPUPOOL, 2, set(), Repeats()) == [f"{GPUPOOL.name_prefix}000005",
                                                              f"{GPUPOOL.name_prefix}000007"]
    assert outbox.new_names(GPUPOOL, 0, set(), random.Random(1)) == []


def test_the_to_be_deleted_taint_among_a_nodes_other_taints():
    t = outbox.to_be_deleted(NOW)
    assert t == {"key": TO_BE_DELETED_TAINT, "value": str(int(NOW.timestamp())), "effect": "NoSchedule"}
    other = {"key": "sku", "value": "gpu", "effect": "NoSchedule"}
    old = {"key": TO_BE_DELETED_TAINT, "value": "1", "effect": "NoSchedule"}
    n = node("n1", taints=[other, old])
    assert outbox.taints_with(n, t) == [other, t]
    assert outbox.taints_with(n, None) == [other]
    assert outbox.taints_with({"metadata": {"name": "n2"}, "spec": {"taints": None}}, None) == []
    assert outbox.taints_with({"metadata": {"name": "n"}}, t) == [t]


def test_after_a_scale_down_each_pool_is_said_with_its_nodes_left():
    nodes = [node("a"), node("b"), node("c")]
    assert outbox.pool_lines(nodes, ["b"], POOLS[:1]) == [f"scale-down: node pool {GPUPOOL.name}: 2/{GPUPOOL.max_nodes} nodes"]
    other = dataclasses.replace(GPUPOOL, name="other", max_nodes=7)
    assert outbox.pool_lines(nodes, ["a", "b", "c"], [GPUPOOL, other]) == [
        f"scale-down: node pool {GPUPOOL.name}: 0/{GPUPOOL.max_nodes} nodes", "scale-down: node pool other: 0/7 nodes"]


def test_the_start_up_line_says_every_setting_and_whether_valid_until_is_honoured():
    o = lifecycle.Options()
    line = outbox.options_line(o)
    assert line == (
        f"fake-ca: one ProvisioningRequest per loop, loops {o.scan_interval:.1f}s apart when idle (--scan-interval); "
        f"request backoff {o.initial_backoff:.0f}..{o.max_backoff:.0f}s, node-group backoff "
        f"{o.initial_node_group_backoff:.0f}..{o.max_node_group_backoff:.0f}s, max node provision time "
        f"{o.max_node_provision_time:.0f}s, booking {o.booking:.0f}s, scale-down after {o.scale_down_unneeded:.0f}s "
        f"unneeded and 0s after a scale-up, requests deleted {o.terminal_ttl:.0f}s after Provisioned/Failed; "
        "ValidUntilSeconds ignored (like the real CA); loops paced as the real CA's (--pace)")
    assert "scale-down after 10s unneeded and 20s after a scale-up" in outbox.options_line(
        dataclasses.replace(o, scale_down_delay_after_add=20.0))
    assert outbox.options_line(dataclasses.replace(o, honor_valid_until=True, pace=False)).endswith(
        "ValidUntilSeconds HONOURED (differs from the real CA); loops NOT paced as the real CA's (--no-pace)")


def test_the_pool_table_is_said_with_each_pools_bounds_and_boot():
    small = dataclasses.replace(GPUPOOL, name="small", min_nodes=1, max_nodes=3, boot_seconds=14.6)
    assert outbox.pools_line("tau-demo-system", "pools", [small]) == (
        "fake-ca: published pool table tau-demo-system/pools: small (1..3 nodes, boot 15s)")
    other = dataclasses.replace(small, name="other", min_nodes=0, max_nodes=7, boot_seconds=0.0)
    assert outbox.pools_line("ns", "cm", [small, other]) == (
        "fake-ca: published pool table ns/cm: small (1..3 nodes, boot 15s), other (0..7 nodes, boot 0s)")


def test_a_scale_ups_lines_word_for_word():
    assert outbox.creating_line("demo/r", ["n1", "n2"]) == "provreq demo/r: creating n1, n2"
    assert outbox.nodes_requested_line("demo/r", ["n1", "n2"], None) == "provreq demo/r: nodes n1, n2 requested"
    assert outbox.nodes_requested_line("demo/r", ["n1"], "12:00:15") == (
        "provreq demo/r: nodes n1 requested; they boot until 12:00:15")
    assert outbox.creates_failed_line("demo/r", ["n2: 500", "n3: 409"], 3, ["n1"]) == (
        "provreq demo/r: 2 of 3 node creates failed (n2: 500; n3: 409); deleting n1 so the scale-up stays atomic")
    assert outbox.creates_failed_line("demo/r", ["n3: 500"], 3, ["n1", "n2"]).endswith(
        "(n3: 500); deleting n1, n2 so the scale-up stays atomic")
    assert outbox.creates_failed_line("demo/r", ["n1: 500"], 1, []) == (
        "provreq demo/r: 1 of 1 node creates failed (n1: 500); deleting nothing so the scale-up stays atomic")
    assert outbox.timed_out_line("not Ready within 20s", ["n1", "n2"]) == (
        "scale-up timed out: not Ready within 20s (n1, n2)")


def test_a_refused_write_and_a_failed_one_are_said_with_what_comes_next():
    assert outbox.not_written_line("demo/r", KeyError("x")) == (
        "provreq demo/r: not written (KeyError): gone or changed since it was read; the next loop reads it again")
    assert outbox.not_deleted_line("demo/r", None) == "provreq demo/r: not deleted: made again since it was read"
    assert outbox.not_deleted_line("demo/r", RuntimeError("503")) == (
        "deleting provreq demo/r failed (503); the next loop tries again")
    for what in ("deleting", "tainting", "annotating"):
        assert outbox.node_write_failed_line(what, "n1", RuntimeError("503")) == (
            f"{what} node n1 failed (503); the next loop tries again")
    assert outbox.status_failed_line(RuntimeError("503")) == "writing the status ConfigMap failed (503)"
    assert outbox.unreachable_line(RuntimeError("refused")) == "apiserver unreachable (refused); next loop in 2s"
    assert outbox.LOOP_FAILED == "loop failed; next loop in 2s" and outbox.LOOP_RETRY == 2.0


def test_each_scale_down_step_is_said():
    assert outbox.tainting_line("n1", 5.4) == f"scale-down: tainting n1 {TO_BE_DELETED_TAINT}; deleting it in 5s"
    assert outbox.untainting_line("n1") == f"scale-down: n1 is needed again; removing {TO_BE_DELETED_TAINT}"
    assert outbox.deleting_line("n1", "unneeded for 26s") == "scale-down: deleting n1: unneeded for 26s"
