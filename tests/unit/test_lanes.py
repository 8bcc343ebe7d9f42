"""The timeline's lane states at one poll (demo.timeline.lanes), on objects shaped like the real cluster's."""

from __future__ import annotations

import k8s_objects as K
from demo.timeline.lanes import snapshot_states


def states(job=None, workload=None, provreqs=(), pods=(), nodes=(), **kw):
    return snapshot_states(job, workload, list(provreqs), list(pods), list(nodes), **kw)


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
