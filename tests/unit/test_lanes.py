"""The timeline's lane states at one poll (demo.timeline.lanes), on objects shaped like the real cluster's."""

from __future__ import annotations

import pytest

import k8s_objects as K
from demo.timeline.lanes import (AFTER_COMPLETING, GONE, UNSUSPENDED, ObjectLane, deadline_at, decision, job_told,
                                  lane_for, object_lanes, phase_rows, pod_counts, run_phases, snapshot_states, told)
from demo.jobs.snapshot import Snapshot


def states(job=None, workload=None, provreqs=(), pods=(), nodes=(), **kw):
    return snapshot_states(Snapshot(job, workload, list(provreqs), list(pods), list(nodes)), **kw)


def deleting(obj):
    obj["metadata"]["deletionTimestamp"] = K.ts(60)
    return obj


# ---------------------------------------------------------------------------- Pods lane

def test_pods_are_counted_per_phase_terminating_first_in_lifecycle_order():
    pods = [K.pod(0, K.NODE_A, "Succeeded"), K.pod(1, K.NODE_A, "Running"), K.pod(2),
            deleting(K.pod(3, K.NODE_B, "Running")), K.pod(4, K.NODE_B, "Failed"), K.pod(5, K.NODE_B, "Running")]
    assert states(pods=pods)["Pods"] == "1 terminating, 1 pending, 2 running, 1 succeeded, 1 failed"


def test_pods_in_phases_the_lane_does_not_know_come_last_by_name():
    pods = [K.pod(0, K.NODE_A, "Zombie"), K.pod(1, K.NODE_A, "Limbo"), K.pod(2, K.NODE_A, "Limbo"), K.pod(3, K.NODE_A, "Running")]
    assert states(pods=pods)["Pods"] == "1 running, 2 limbo, 1 zombie"


def test_a_pod_without_a_phase_is_pending():
    p = K.pod(0)
    del p["status"]["phase"]
    assert states(pods=[p])["Pods"] == "1 pending"


# ---------------------------------------------------------------------------- ProvisioningRequest lane

def test_a_new_request_without_conditions_is_created():
    assert states(workload=K.workload(), provreqs=[K.provreq(1)])["ProvisioningRequest"] == "#1 created"


def test_several_true_conditions_are_joined_and_accepted_is_left_out():
    pr = K.provreq(2, [K.cond("Accepted", "True", "Accepted"), K.cond("Provisioned", "True", "Provisioned"),
                       K.cond("BookingExpired", "True", "CapacityReservationTimeExpired")])
    assert states(workload=K.workload(), provreqs=[pr])["ProvisioningRequest"] == "#2 Provisioned+BookingExpired"


def test_not_provisioned_without_a_reason_says_so():
    pr = K.provreq(1, [K.cond("Accepted", "True", "Accepted"), {"type": "Provisioned", "status": "False"}])
    assert states(workload=K.workload(), provreqs=[pr])["ProvisioningRequest"] == "#1 Accepted · not provisioned"


def test_only_the_newest_request_of_this_workload_is_shown():
    other = K.provreq(5, wl_name="job-other-1a2b3", wl_uid="uid-of-another-workload")
    mine = K.provreq(2, [K.cond("Accepted", "True", "Accepted")])
    assert states(workload=K.workload(), provreqs=[K.provreq(1), mine, other])["ProvisioningRequest"] == "#2 Accepted"


def test_a_request_named_outside_kueues_pattern_shows_its_name():
    pr = K.provreq(1)
    pr["metadata"]["name"] = "hand-made-request"          # still owned by the workload
    assert states(workload=K.workload(), provreqs=[pr])["ProvisioningRequest"] == "hand-made-request created"
    del pr["metadata"]["name"]
    assert states(provreqs=[pr])["ProvisioningRequest"] == "? created"
    del pr["metadata"]
    assert states(provreqs=[pr])["ProvisioningRequest"] == "? created"


def test_the_admission_check_name_selects_the_requests_and_their_attempt_numbers():
    pr = K.provreq(1)
    pr["metadata"]["name"] = f"{K.WL_NAME}-capacity-check-3"
    del pr["metadata"]["ownerReferences"]                 # matched by its name alone
    wl = K.workload(checks=[{"name": "capacity-check", "state": "Retry"}])
    s = states(workload=wl, provreqs=[pr], check_name="capacity-check")
    assert (s["AdmissionCheck"], s["ProvisioningRequest"]) == ("Retry", "#3 created")


# ---------------------------------------------------------------------------- Workload lane

def test_workload_lane_tells_waiting_for_kueue_from_garbage_collected():
    assert states(job=K.job())["Workload"] == "none"                          # Kueue has not created it yet
    done = K.snap_job_complete()["job"]
    assert states(job=done)["Workload"] == "deleted"                          # gone with its finished Job
    assert states()["Workload"] == "deleted"


def test_workload_states():
    assert states(workload=K.workload())["Workload"] == "pending"
    evicted = K.workload([{"type": "Evicted", "status": "True"}])
    assert states(workload=evicted)["Workload"] == "evicted: unknown"
    assert states(workload=K.workload([K.cond("Evicted", "False", "Whatever")]))["Workload"] == "pending"


# ---------------------------------------------------------------------------- one lane per object



def objects(snap, seen=None, **kw):
    return object_lanes(Snapshot(**snap), seen, **kw)


PR1 = f"{K.WL_NAME}-{K.CHECK}-1"


def test_each_request_node_and_pod_of_the_job_has_its_own_lane():
    got = objects(K.snap_admitted_pods_pending())
    unsched = "Unschedulable: 0/3 nodes are available: 3 node(s) had untolerated taint {sku: gpu}."
    assert got == {
        "ProvisioningRequest #1": ObjectLane("ProvisioningRequest", PR1, "Provisioned", PR1),
        f"Node {K.NODE_B}": ObjectLane("Nodes", K.NODE_B, "Ready", "pool gpupool, made for ProvisioningRequest #1"),
        f"Node {K.NODE_A}": ObjectLane("Nodes", K.NODE_A, "Ready", "pool gpupool, made for ProvisioningRequest #1"),
        f"Pod {K.JOB_NAME}-0-x0k9q": ObjectLane("Pods", f"{K.JOB_NAME}-0-x0k9q", "pending", unsched),
        f"Pod {K.JOB_NAME}-1-x1k9q": ObjectLane("Pods", f"{K.JOB_NAME}-1-x1k9q", "pending", unsched),
    }
    assert list(got) == ["ProvisioningRequest #1", f"Node {K.NODE_B}", f"Node {K.NODE_A}",
                         f"Pod {K.JOB_NAME}-0-x0k9q", f"Pod {K.JOB_NAME}-1-x1k9q"]


def test_a_node_booting_deleting_and_a_node_of_another_request():
    snap = K.snap_admitted_pods_pending()
    booting = K.node(K.NODE_A, K.provreq_uid(1))
    booting["status"]["conditions"] = [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]
    booting["metadata"]["annotations"]["fake-ca.tau-demo.io/boots-at"] = "2025-06-01T10:00:45Z"
    snap["nodes"] = [booting, K.node(K.NODE_B, K.provreq_uid(1), deleting=True), K.other_node()]
    got = objects(snap)
    assert got[f"Node {K.NODE_A}"] == ObjectLane(
        "Nodes", K.NODE_A, "booting", "pool gpupool, made for ProvisioningRequest #1, VM up at 2025-06-01T10:00:45Z")
    assert got[f"Node {K.NODE_B}"].state == "deleting"
    assert f"Node {K.other_node()['metadata']['name']}" not in got
    del booting["status"]["conditions"]
    assert objects(snap)[f"Node {K.NODE_A}"].state == "booting"
    up = K.node(K.NODE_A, K.provreq_uid(1))
    up["metadata"]["annotations"]["fake-ca.tau-demo.io/boots-at"] = "2025-06-01T10:00:45Z"
    snap["nodes"] = [up]
    assert objects(snap)[f"Node {K.NODE_A}"].detail == "pool gpupool, made for ProvisioningRequest #1"


def test_a_node_without_a_request_mark_is_the_jobs_when_its_pods_run_there_or_it_was_made_since():
    job = K.job(suspend=False)
    plain = K.node("static-gpu-1")                       # no request uid: the real autoscaler's, or anyone's
    del plain["metadata"]["labels"]["cluster-autoscaler.kwok.nodegroup/name"]
    del plain["metadata"]["annotations"]
    pooled = K.node("kwok-gpupool-abcde")                # a pool's node made after the Job (ts(30) > ts(0))
    old = K.node("kwok-gpupool-old")
    old["metadata"]["creationTimestamp"] = "2025-06-01T09:59:59Z"
    nameless = K.node("kwok-gpupool-nots")
    del nameless["metadata"]["creationTimestamp"]
    other = K.other_node()
    nodes = [plain, pooled, old, nameless, other]
    got = object_lanes(Snapshot(job, None, [], [], nodes))
    assert list(got) == ["Node kwok-gpupool-abcde"]
    assert got["Node kwok-gpupool-abcde"] == ObjectLane("Nodes", "kwok-gpupool-abcde", "Ready", "pool gpupool")
    assert list(object_lanes(Snapshot(None, None, [], [], nodes))) == []              # no Job: nothing made since
    assert list(object_lanes(Snapshot(job, None, [], [K.pod(0, "static-gpu-1", "Running")], nodes))) == [
        "Node static-gpu-1", "Node kwok-gpupool-abcde", f"Pod {K.JOB_NAME}-0-x0k9q"]
    seen = {"Node kwok-gpupool-old": ObjectLane("Nodes", "kwok-gpupool-old", "Ready", "")}
    assert list(object_lanes(Snapshot(job, None, [], [], nodes), seen)) == ["Node kwok-gpupool-abcde",
                                                                            "Node kwok-gpupool-old"]
    assert object_lanes(Snapshot(job, None, [], [], [plain])) == {}
    assert object_lanes(Snapshot(job, None, [], [], [K.node("x", "uid-of-nobody")])) == {}
    same_moment = K.node("kwok-gpupool-same")
    same_moment["metadata"]["creationTimestamp"] = job["metadata"]["creationTimestamp"]
    assert list(object_lanes(Snapshot(job, None, [], [], [same_moment]))) == ["Node kwok-gpupool-same"]


def test_objects_gone_since_the_last_poll_end_their_lanes():
    first = objects(K.snap_pods_running())
    later = objects(K.snap_fresh(), first)
    assert set(later) == set(first)
    assert all(o.state == GONE and o.detail == "" for o in later.values())
    assert later[f"Node {K.NODE_A}"] == ObjectLane("Nodes", K.NODE_A, GONE, "")
    assert objects(K.snap_fresh()) == {}


def test_pod_states():
    pods = [K.pod(0), K.pod(1, K.NODE_A), K.pod(2, K.NODE_A, "Running"), K.pod(3, K.NODE_B, "Succeeded"),
            K.pod(4, K.NODE_B, "Failed"), deleting(K.pod(5, K.NODE_B, "Running")), K.pod(6, unschedulable="no room")]
    del pods[0]["status"]["phase"]
    pods[6]["status"]["conditions"][0]["reason"] = ""
    got = object_lanes(Snapshot(None, None, [], pods, []))
    assert [(o.state, o.detail) for o in got.values()] == [
        ("pending", ""), ("scheduled", f"on {K.NODE_A}"), ("running", f"on {K.NODE_A}"),
        ("succeeded", f"on {K.NODE_B}"), ("failed", f"on {K.NODE_B}"), ("terminating", f"on {K.NODE_B}"),
        ("pending", "Unschedulable: no room")]
    quiet = K.pod(7, unschedulable="x")
    quiet["status"]["conditions"][0].update({"reason": "WaitingX", "message": ""})
    scheduled_true = K.pod(8)
    scheduled_true["status"]["conditions"] = [{"type": "PodScheduled", "status": "True", "message": "m"}]
    assert [o.detail for o in object_lanes(Snapshot(pods=[quiet, scheduled_true])).values()] == ["WaitingX", ""]
    nameless = K.pod(9)
    del nameless["metadata"]["name"]
    assert list(object_lanes(Snapshot(None, None, [], [nameless], []))) == ["Pod ?"]


def test_request_lanes_follow_the_attempts_of_this_workload_only():
    other = K.provreq(5, wl_name="job-other-1a2b3", wl_uid="uid-of-another-workload")
    second = K.provreq(2, [K.cond("Accepted", "True", "Accepted"),
                           K.cond("Provisioned", "False", "CapacityIsNotFound", "no")])
    second["metadata"]["deletionTimestamp"] = K.ts(50)
    got = object_lanes(Snapshot(K.job(), K.workload(), [K.provreq(1), second, other], [], []))
    assert list(got) == ["ProvisioningRequest #1", "ProvisioningRequest #2"]
    assert got["ProvisioningRequest #1"].state == "created"
    assert got["ProvisioningRequest #2"].state == "deleting"
    del second["metadata"]["deletionTimestamp"]
    assert object_lanes(Snapshot(K.job(), K.workload(), [second], [], []))["ProvisioningRequest #2"].state == \
        "Accepted · CapacityIsNotFound"
    assert object_lanes(Snapshot(K.job(), None, [K.provreq(1)], [], [])) == {}        # no Workload: no request is its
    odd = K.provreq(1)
    odd["metadata"]["name"] = "hand-made"
    assert list(object_lanes(Snapshot(K.job(), K.workload(), [odd], [], []))) == ["ProvisioningRequest hand-made"]
    del odd["metadata"]["name"]
    assert object_lanes(Snapshot(K.job(), K.workload(), [odd], [], []))["ProvisioningRequest ?"].name == "?"


def test_nodes_made_for_a_request_that_is_no_longer_listed_stay_followed_once_seen():
    snap = K.snap_pods_running()
    first = objects(snap)
    snap["provreqs"], snap["pods"] = [], []
    later = objects(snap, first)
    assert later[f"Node {K.NODE_A}"] == ObjectLane("Nodes", K.NODE_A, "Ready", "pool gpupool")
    assert objects(snap) == {}


def test_requests_of_another_admission_check_and_a_request_without_a_uid():
    pr = K.provreq(2)
    pr["metadata"]["name"] = f"{K.WL_NAME}-capacity-check-2"
    del pr["metadata"]["ownerReferences"]                 # matched by its name alone
    got = object_lanes(Snapshot(K.job(), K.workload(), [pr], [], []), check_name="capacity-check")
    assert list(got) == ["ProvisioningRequest #2"]
    assert object_lanes(Snapshot(K.job(), K.workload(), [pr], [], [])) == {}
    nameless = K.provreq(1)
    del nameless["metadata"]["uid"]
    plain = K.node("kwok-gpupool-abcde")                  # no request uid, made after the Job
    assert object_lanes(Snapshot(K.job(), K.workload(), [nameless], [], [plain]))["Node kwok-gpupool-abcde"].detail == \
        "pool gpupool"


def test_a_node_without_a_pool_label_has_no_pool_in_its_detail():
    n = K.node(K.NODE_A, K.provreq_uid(1))
    del n["metadata"]["labels"]["cluster-autoscaler.kwok.nodegroup/name"]
    got = object_lanes(Snapshot(K.job(), K.workload(), [K.provreq(1)], [], [n]))
    assert got[f"Node {K.NODE_A}"].detail == "made for ProvisioningRequest #1"
    del n["metadata"]["name"]
    assert "Node ?" in object_lanes(Snapshot(K.job(), K.workload(), [K.provreq(1)], [], [n]))


# ---------------------------------------------------------------------------- phases, deadline, decision

def test_phase_rows_are_watchs_five_phases_without_counting_seconds():
    snap = K.snap_admitted_pods_pending()
    snap["nodes"][0]["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    rows, outcome = phase_rows(Snapshot(**snap))
    assert [r[0] for r in rows] == ["Submitted", "Quota reserved", "Capacity provisioning", "Pod scheduling", "Running"]
    assert [r[1] for r in rows] == ["done", "done", "done", "active", "pending"]
    assert rows[3][2] == "0/2 scheduled: 1 node(s) booting (NotReady until their VMs are up)"
    assert outcome == "waiting"
    assert phase_rows(Snapshot(**K.snap_job_complete()))[1] == "succeeded"
    pr = K.provreq(1)
    pr["metadata"]["name"] = f"{K.WL_NAME}-other-check-1"
    wl = K.workload(checks=[{"name": "other-check", "state": "Pending", "message": "asked"}],
                    conditions=[K.cond("QuotaReserved", "True", "QuotaReserved")])
    rows, _ = phase_rows(Snapshot(K.job(), wl, [pr], [], []), check_name="other-check")
    assert rows[2] == ["Capacity provisioning", "active", "asked"]


def test_the_deadline_is_the_jobs_creation_plus_its_annotation():
    job = K.job(annotations={"tau-demo.io/admission-deadline": "90s"})
    assert deadline_at(job) == K.epoch(90)
    assert deadline_at(K.job()) is None
    assert deadline_at(None) is None
    assert deadline_at(K.job(annotations={"tau-demo.io/admission-deadline": "soon"})) is None



def test_the_committed_decision_and_its_time():
    assert decision(K.snap_deadline()["workload"]) == ("timed-out", K.epoch(61))
    wl = K.workload(annotations={"tau-demo.io/admission-decision": "timed-out"})
    assert decision(wl) == ("timed-out", None)
    assert decision(K.workload()) is None
    assert decision(None) is None
    assert decision(K.workload(annotations={"tau-demo.io/admission-decision": "admitted"})) is None


# ---------------------------------------------------------------------------- which lane a log line concerns

def test_a_log_line_concerns_the_lane_of_the_longest_whole_name_it_carries():
    names = {K.JOB_NAME: "Job", K.WL_NAME: "Workload", PR1: "ProvisioningRequest #1", K.NODE_A: f"Node {K.NODE_A}"}
    assert lane_for(f"provreq demo/{PR1}: creating {K.NODE_A}", names) == "ProvisioningRequest #1"
    assert lane_for(f"deadline demo/{K.JOB_NAME}: not admitted yet", names) == "Job"
    assert lane_for(f'"workload":{{"name":"{K.WL_NAME}"}}', names) == "Workload"
    assert lane_for(f"scale-down: deleting {K.NODE_A}: unneeded", names) == f"Node {K.NODE_A}"
    assert lane_for(f"{K.NODE_A}", names) == f"Node {K.NODE_A}"
    assert lane_for("nothing of ours", names) is None
    assert lane_for(f"demo/{K.JOB_NAME}x: another job", names) is None          # inside a longer name
    assert lane_for(f"demo/x{K.JOB_NAME}", names) is None
    assert lane_for(f"{K.NODE_A}9 ready", names) is None
    assert lane_for(f"{K.JOB_NAME}.", {"": "Nothing", K.JOB_NAME: "Job"}) == "Job"
    assert lane_for("anything", {"": "Nothing"}) is None
    assert lane_for("a.b c", {"a.b": "Dots", "axb": "X"}) == "Dots"            # names are text, not patterns
    assert lane_for("axb", {"a.b": "Dots"}) is None
    # two names of one length: the first given wins
    assert lane_for("aa bb", {"aa": "A", "bb": "B"}) == "A"
    assert lane_for("aa bbb", {"aa": "A", "bbb": "B"}) == "B"
    assert lane_for("aaa bb", {"aaa": "A", "bb": "B"}) == "A"


def test_a_request_of_another_check_owned_by_the_workload_is_no_attempt_of_ours():
    """A Workload with two provisioning checks owns the requests of both; only names of this check carry
    one of its attempt numbers: the other's request is shown by its name."""
    other = K.provreq(3)
    other["metadata"]["name"] = f"{K.WL_NAME}-other-check-3"         # owned by the Workload, like ours
    assert states(workload=K.workload(), provreqs=[other])["ProvisioningRequest"] == \
        f"{K.WL_NAME}-other-check-3 created"
    got = object_lanes(Snapshot(K.job(), K.workload(), [other], [], []))
    assert list(got) == [f"ProvisioningRequest {K.WL_NAME}-other-check-3"]
    assert got[f"ProvisioningRequest {K.WL_NAME}-other-check-3"].state == "created"
    n = K.node(K.NODE_A, K.provreq_uid(3))
    assert object_lanes(Snapshot(K.job(), K.workload(), [other], [], [n]))[f"Node {K.NODE_A}"].detail == \
        f"pool gpupool, made for ProvisioningRequest {K.WL_NAME}-other-check-3"


def test_a_request_whose_name_kueue_cut_and_hashed_is_labelled_by_its_name_not_a_guessed_attempt():
    """Kueue cuts a name over 247 characters and hashes it (kubernetes-sigs/kueue#12542): the request, still owned by
    the Workload, no longer ends in -<check>-<attempt>, and no attempt number is read from its digits."""
    cut = K.provreq(1)
    cut["metadata"]["name"] = f"{K.WL_NAME}-gpu-prov-9f3e2-7"
    assert states(workload=K.workload(), provreqs=[cut])["ProvisioningRequest"] == f"{K.WL_NAME}-gpu-prov-9f3e2-7 created"
    lanes = object_lanes(Snapshot(K.job(), K.workload(), [cut], [], [K.node(K.NODE_A, K.provreq_uid(1))]))
    assert f"ProvisioningRequest {K.WL_NAME}-gpu-prov-9f3e2-7" in lanes
    assert f"made for ProvisioningRequest {K.WL_NAME}-gpu-prov-9f3e2-7" in lanes[f"Node {K.NODE_A}"].detail


# ---------------------------------------------------------------------------- how the readers tell a log (told)

def ev(t, lane, state, detail="", of=None):
    e = {"t": t, "lane": lane, "state": state, "detail": detail}
    if of:
        e.update({"of": of, "name": lane.split(" ", 1)[1]})
    return e


def told_states(events, lane):
    return [(e["t"], e["state"]) for e in told(events) if e.get("lane") == lane]


def test_pod_counts_read_the_pods_lane():
    assert pod_counts("1 terminating, 2 pending, 1 running") == {"terminating": 1, "pending": 2, "running": 1}
    assert pod_counts("0") == {} and pod_counts("") == {}
    assert pod_counts("x pending, 3, 12 limbo") == {"limbo": 12}
    assert pod_counts("1 pen ding, 2 running") == {"running": 2}      # a part is a count and one word


@pytest.mark.parametrize("pods, told_as", [
    (None, "running"),                                           # no Pods lane known: as written
    ("0", UNSUSPENDED), ("2 pending", UNSUSPENDED),
    ("1 pending, 1 running", "unsuspended · 1/2 pods started"),
    ("2 pending, 1 succeeded", "unsuspended · 1/3 pods started"),
    ("1 pending, 1 failed", "unsuspended · 1/2 pods started"),
    ("1 terminating, 1 pending", UNSUSPENDED),
    ("2 running", "running"), ("1 running, 1 succeeded", "running"), ("2 succeeded", "running"),
    ("1 terminating", "running"),
])
def test_the_job_runs_only_once_no_pod_is_pending(pods, told_as):
    assert job_told("running", pods) == told_as


def test_only_a_running_job_is_told_with_its_pods_and_its_marks_stay():
    assert job_told("suspended", "2 pending") == "suspended"
    assert job_told("succeeded", "2 pending") == "succeeded"
    assert job_told("running · marked AdmissionTimeout", "1 pending") == UNSUSPENDED + " · marked AdmissionTimeout"
    assert job_told("running · marked X", "1 pending, 1 running") == "unsuspended · 1/2 pods started · marked X"
    assert job_told("xrunning", "1 pending") == "xrunning"


def test_the_job_lane_is_told_again_when_the_pods_lane_changes():
    events = [ev(1, "Job", "suspended"), ev(1, "Pods", "0"), {"t": 2, "marker": "m"}, ev(3, "Job", "running", "d"),
              ev(4, "Pods", "2 pending"), ev(5, "Pods", "1 pending, 1 running"), ev(6, "Pods", "2 running"),
              ev(7, "Pods", "1 running, 1 succeeded"), ev(8, "Job", "succeeded"), ev(9, "Pods", "0")]
    out = told(events)
    assert told_states(events, "Job") == [(1, "suspended"), (3, UNSUSPENDED), (5, "unsuspended · 1/2 pods started"),
                                          (6, "running"), (8, "succeeded")]
    # each added Job event comes right after the Pods event that made it, at its time; the rest as written
    assert [(e["t"], e.get("lane", "marker")) for e in out] == [
        (1, "Job"), (1, "Pods"), (2, "marker"), (3, "Job"), (4, "Pods"), (5, "Pods"), (5, "Job"), (6, "Pods"),
        (6, "Job"), (7, "Pods"), (8, "Job"), (9, "Pods")]
    jobs_ = [e for e in out if e.get("lane") == "Job"]
    assert jobs_[1]["detail"] == "d: Kueue unsuspended the Job; its pods have not all started"
    assert jobs_[2]["detail"] == "d: Kueue unsuspended the Job; its pods have not all started"
    assert jobs_[3] == {"t": 6, "lane": "Job", "state": "running", "detail": "d"}
    assert events[3] == ev(3, "Job", "running", "d")                  # the events given are not changed


def test_a_pods_own_lane_or_another_clusters_pods_lane_does_not_tell_the_job():
    events = [ev(1, "Pods", "1 pending"), ev(2, "Job", "running"), ev(3, "Pod p", "running", of="Pods"),
              ev(4, "worker-a Pods", "1 running"), ev(5, "worker-a Job", "running"), ev(6, "worker-a Pods", "1 pending")]
    assert told_states(events, "Job") == [(2, UNSUSPENDED)]
    assert told_states(events, "worker-a Job") == [(5, "running"), (6, UNSUSPENDED)]
    assert told_states(events, "Pod p") == [(3, "running")]
    assert told_states([ev(1, "Job", "running")], "Job") == [(1, "running")]      # no Pods lane: as written


def test_booking_expired_once_the_job_was_unsuspended_is_expected():
    before = [ev(1, "Job", "suspended"), ev(2, "ProvisioningRequest", "#1 Provisioned+BookingExpired")]
    assert told_states(before, "ProvisioningRequest") == [(2, "#1 Provisioned+BookingExpired")]
    for job in ("running", "succeeded"):
        events = [ev(1, "Job", job), ev(2, "ProvisioningRequest", "#1 Provisioned+BookingExpired"),
                  ev(2, "ProvisioningRequest #1", "Provisioned+BookingExpired", "pr-1", of="ProvisioningRequest"),
                  ev(3, "ProvisioningRequest", "#1 Provisioned")]
        out = [e for e in told(events) if "ProvisioningRequest" in e["lane"]]
        assert [e["state"] for e in out] == ["#1 Provisioned+BookingExpired (as expected)",
                                             "Provisioned+BookingExpired (as expected)", "#1 Provisioned"]
        why = ("the booking ended after the Job was unsuspended: its pods hold the capacity now (Kueue ignores "
               "BookingExpired once the Workload is admitted)")
        assert [e["detail"] for e in out] == [why, f"pr-1: {why}", ""]
    # the Job unsuspended in another cluster of a MultiKueue trio says nothing of this one's request
    other = [ev(1, "worker-a Job", "running"), ev(2, "worker-b ProvReq", "#1 BookingExpired"),
             ev(3, "worker-a ProvReq", "#1 BookingExpired")]
    assert [e["state"] for e in told(other)][1:] == ["#1 BookingExpired", "#1 BookingExpired (as expected)"]


def test_a_deletion_after_the_job_succeeded_is_after_completing():
    events = [ev(1, "Workload", "deleted"), ev(1, "Job", "running"), ev(2, "Job", "succeeded"),
              ev(3, "Workload", "finished"), ev(4, "Workload", "deleted"), ev(5, "Job", "deleted"),
              ev(6, "worker-a Workload", "deleted")]
    assert [(e["lane"], e["state"], e["detail"]) for e in told(events) if e["state"].startswith("deleted")] == [
        ("Workload", "deleted", ""),
        ("Workload", AFTER_COMPLETING, "the Workload was deleted after the Job succeeded"),
        ("Job", AFTER_COMPLETING, "the Job was deleted after it succeeded"),
        ("worker-a Workload", "deleted", "")]
    failed = [ev(1, "Job", "failed"), ev(2, "Workload", "deleted"), ev(3, "Job", "deleted")]
    assert [e["state"] for e in told(failed)] == ["failed", "deleted", "deleted"]


def test_run_phases_are_over_the_run_and_say_what_was_deleted_after_completing():
    rows = lambda *details: [["Quota reserved", "done", details[0]], ["Pod scheduling", "done", details[1]]]
    events = [{"t": 1, "phases": rows("16 GPU", "2/2 on a, b"), "outcome": "succeeded"},
              ev(1, "Job", "succeeded"), ev(1, "Pods", "2 succeeded"),
              ev(2, "Workload", "deleted"), ev(2, "Pods", "0"),
              {"t": 2, "phases": rows("quota was reserved", "1/2 on b"), "outcome": "succeeded"}]
    assert run_phases(events) == (
        [["Quota reserved", "done", "16 GPU; the Workload was deleted after the Job completed"],
         ["Pod scheduling", "done", "2/2 on a, b; the pods were deleted after the Job completed"]], "succeeded")
    assert run_phases([]) == ([], "")
    assert run_phases([ev(1, "Job", "running")]) == ([], "")
    # the pods gone before the Job completed, the Workload there at the end: nothing to add
    running = [{"t": 1, "phases": rows("16 GPU", "2/2 on a, b") + [["Running", "active", "Running (2/2 pods)"]],
                "outcome": "running"}, ev(1, "Job", "running"), ev(2, "Pods", "0"), ev(2, "Workload", "admitted")]
    assert run_phases(running) == (rows("16 GPU", "2/2 on a, b") + [["Running", "active", "Running (2/2 pods)"]],
                                   "running")
    # a detail that says it already is not said twice; a phase not done gets nothing; an empty detail the note alone
    said = [{"t": 1, "phases": [["Quota reserved", "done", ""], ["Pod scheduling", "done",
                                "scheduled (the pods were deleted after the Job completed)"]], "outcome": None},
            ev(1, "Job", "succeeded"), ev(2, "Workload", "deleted"), ev(2, "Pods", "0")]
    assert run_phases(said) == ([["Quota reserved", "done", "the Workload was deleted after the Job completed"],
                                 ["Pod scheduling", "done", "scheduled (the pods were deleted after the Job completed)"]],
                                "succeeded")
    open_ = [{"t": 1, "phases": [["Quota reserved", "active", "waiting"]], "outcome": "waiting"},
             ev(1, "Job", "succeeded"), ev(2, "Workload", "deleted")]
    assert run_phases(open_) == ([["Quota reserved", "active", "waiting"]], "waiting")
    # phases written without an outcome, not all done: no outcome is made up
    assert run_phases([{"t": 1, "phases": [["Quota reserved", "active", "waiting"]]}]) == (
        [["Quota reserved", "active", "waiting"]], "")
