"""The details `tau-demo watch` prints for each startup phase, in the corners of a Job's life
(demo/jobs/phases.py): which ProvisioningRequest counts, what was reserved, why it failed."""

from __future__ import annotations

import copy
from datetime import datetime, timezone

import pytest

import k8s_objects as K
from demo.jobs.phases import derive, pod_phase, pool_line, quota_summary
from k8s import job as jobs
from k8s import provreq as provreqs
from demo.jobs.snapshot import Snapshot

RESERVED = K.cond("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue gpu-a100", at=5)
ADMITTED = K.cond("Admitted", "True", "Admitted", "The workload is admitted", at=31)


def view(job=None, workload=None, provreqs=(), pods=(), nodes=(), **kw):
    v = derive(Snapshot(job, workload, list(provreqs), list(pods), list(nodes)), **kw)
    return [(p.state, p.detail) for p in v.phases], v.outcome, v.reason


def phase(name, job=None, workload=None, provreqs=(), pods=(), nodes=(), **kw):
    v = derive(Snapshot(job, workload, list(provreqs), list(pods), list(nodes)), **kw)
    p = v.phase(name)
    return p.state, p.detail


def named(pr, name=None, created=None, owner=True):
    pr = copy.deepcopy(pr)
    if name is not None:
        pr["metadata"]["name"] = name
    if created is not None:
        pr["metadata"]["creationTimestamp"] = created
    if not owner:
        del pr["metadata"]["ownerReferences"]
    return pr


def names(prs):
    return [p["metadata"].get("name") for p in prs]


# ---------------------------------------------------------------------------- which requests are this Workload's

def test_requests_of_this_workload_by_owner_or_by_name_in_attempt_order():
    wl = K.workload()
    foreign = K.provreq(5, wl_name="job-other-1a2b3", wl_uid="uid-of-another-workload")
    hand_made = named(K.provreq(1), "hand-made", created=K.ts(100))            # owned, no attempt number
    by_name = named(K.provreq(2), owner=False)                                 # not owned, Kueue's name
    tenth = named(K.provreq(10), created=K.ts(5))                               # created before the others
    first = K.provreq(1)
    assert names(provreqs.of_workload(wl, [foreign, tenth, by_name, hand_made, first])) == [
        "hand-made", f"{K.WL_NAME}-gpu-provisioning-1", f"{K.WL_NAME}-gpu-provisioning-2",
        f"{K.WL_NAME}-gpu-provisioning-10"]


def test_a_workload_without_uid_or_name_matches_what_it_can():
    by_owner, by_name = named(K.provreq(1), "hand-made"), named(K.provreq(2), owner=False)
    no_uid = K.workload()
    del no_uid["metadata"]["uid"]
    assert names(provreqs.of_workload(no_uid, [by_owner, by_name])) == [f"{K.WL_NAME}-gpu-provisioning-2"]
    no_name = K.workload()
    del no_name["metadata"]["name"]
    assert names(provreqs.of_workload(no_name, [by_owner, by_name])) == ["hand-made"]
    assert names(provreqs.of_workload(None, [by_name, by_owner])) == ["hand-made", f"{K.WL_NAME}-gpu-provisioning-2"]


def test_requests_without_attempt_number_are_ordered_by_creation_then_name():
    a = named(K.provreq(1), "b-request", created=K.ts(20))
    b = named(K.provreq(1), "a-request", created=K.ts(20))
    c = named(K.provreq(1), "c-request", created=K.ts(10))
    d = named(K.provreq(1), "d-request")
    del d["metadata"]["creationTimestamp"]
    e = named(K.provreq(1), created=K.ts(20))
    del e["metadata"]["name"]
    f = named(K.provreq(1), "0-request", created=K.ts(20))
    assert names(provreqs.of_workload(K.workload(), [a, b, c, d, e, f])) == ["d-request", "c-request", None, "0-request",
                                                                          "a-request", "b-request"]


def test_the_check_name_gives_the_attempt_numbers():
    third = named(K.provreq(1), f"{K.WL_NAME}-capacity-3", created=K.ts(1))
    first = named(K.provreq(1), f"{K.WL_NAME}-capacity-1", created=K.ts(50))
    assert names(provreqs.of_workload(K.workload(), [third, first], "capacity")) == [
        f"{K.WL_NAME}-capacity-1", f"{K.WL_NAME}-capacity-3"]
    assert provreqs.attempt(third, "capacity") == 3 and provreqs.attempt(third) is None
    assert provreqs.attempt({}) is None
    assert provreqs.attempt({"metadata": {"name": "x-gpu-provisioning-7-extra"}}) is None
    assert provreqs.attempt({"metadata": {"name": "x-gpu-provisioning-12"}}) == 12


# ---------------------------------------------------------------------------- small readers

@pytest.mark.parametrize("spec, n", [({}, 1), ({"parallelism": 0}, 1), ({"parallelism": 1}, 1), ({"parallelism": 4}, 4),
                                     ({"parallelism": 4, "completions": 2}, 2), ({"parallelism": 2, "completions": 5}, 2),
                                     ({"completions": 3}, 1), ({"parallelism": "3"}, 3)])
def test_job_parallelism(spec, n):
    assert jobs.parallelism({"spec": spec}) == n
    assert jobs.parallelism(None) == 1


def test_job_finished_reads_complete_and_failed():
    assert jobs.outcome(K.job(conditions=[K.cond("Complete", "True", "CompletionsReached")])) == "succeeded"
    assert jobs.outcome(K.job(conditions=[K.cond("Failed", "True", "BackoffLimitExceeded")])) == "failed"
    assert jobs.outcome(K.job(conditions=[K.cond("Failed", "False", "")])) is None
    assert jobs.outcome(K.job()) is None


def test_a_pod_without_phase_is_pending_and_the_pool_line_counts_live_nodes():
    assert pod_phase({}) == "Pending"
    nodes = [K.node("a1"), K.node("a2", deleting=True), K.node("a3"), K.node("c1", pool="cpupool")]
    assert pool_line("gpupool", nodes, 2) == "Node pool gpupool: 2/2 nodes"


def admission(usage=None, flavors=None, *more):
    psa = [{"name": "main", "count": 2, "flavors": flavors or {}, "resourceUsage": usage or {}}] + list(more)
    return {"status": {"admission": {"clusterQueue": "gpu-a100", "podSetAssignments": psa}}}


def test_quota_summary_names_the_gpu_flavor_only_when_gpus_were_reserved():
    assert quota_summary(None) == "quota"
    assert quota_summary({"status": {"admission": {"clusterQueue": "gpu-a100"}}}) == "quota on ClusterQueue gpu-a100"
    assert quota_summary(admission(flavors={"cpu": "default"})) == "quota on ClusterQueue gpu-a100 (flavor default)"
    wl = admission({"cpu": "8", "nvidia.com/gpu": "16"}, {"cpu": "default", "nvidia.com/gpu": "a100"})
    assert quota_summary(wl) == "16 nvidia.com/gpu on ClusterQueue gpu-a100 (flavor a100)"
    wl = admission({"nvidia.com/gpu": "16"}, {"cpu": "default", "memory": "big"})
    assert quota_summary(wl) == "16 nvidia.com/gpu on ClusterQueue gpu-a100 (flavors big, default)"


def test_quota_summary_adds_up_podsets_and_keeps_what_it_cannot_read():
    wl = admission({"nvidia.com/gpu": "8"}, {"nvidia.com/gpu": "a100"},
                   {"name": "workers", "resourceUsage": {"nvidia.com/gpu": "16"}, "flavors": {"nvidia.com/gpu": "a100"}})
    assert quota_summary(wl) == "24 nvidia.com/gpu on ClusterQueue gpu-a100 (flavor a100)"
    wl["status"]["admission"]["podSetAssignments"][1]["resourceUsage"]["nvidia.com/gpu"] = "lots"
    assert quota_summary(wl) == "8+lots nvidia.com/gpu on ClusterQueue gpu-a100 (flavor a100)"


# ---------------------------------------------------------------------------- Submitted and Quota reserved

def unmanaged(job):
    """The Job without the fields Kueue sets: no queue label, no spec.suspend."""
    job = copy.deepcopy(job)
    job["metadata"]["labels"] = {}
    del job["spec"]["suspend"]
    return job


def test_a_suspended_job_outside_any_queue_is_still_applied_suspended():
    assert phase("Submitted", K.job(queue=False)) == ("done", "Job applied (suspended)")


def test_a_workload_gone_while_the_job_runs_had_its_quota():
    job = K.job(suspend=False, active=2)
    assert phase("Quota reserved", job) == ("done", "quota was reserved (the Workload has been deleted since)")
    assert phase("Capacity provisioning", job) == ("done", "capacity found on existing nodes")


def test_a_finished_job_whose_workload_is_gone_had_its_quota_and_capacity():
    done = unmanaged(K.snap_job_complete()["job"])
    # it was not "no longer there" as if it never was: it went with the Job once the Job completed
    assert phase("Quota reserved", done) == ("done", "quota was reserved (the Workload was deleted after the Job "
                                                     "completed)")
    assert phase("Capacity provisioning", done) == ("done", "capacity found on existing nodes")
    running = unmanaged(K.job(suspend=False, active=2))
    assert phase("Capacity provisioning", running, K.workload([RESERVED], K.admission())) == \
        ("active", "waiting for the autoscaler")


def test_admitted_without_quota_reserved_still_counts_as_reserved():
    assert phase("Quota reserved", K.job(), K.workload([ADMITTED], K.admission())) == \
        ("done", "16 nvidia.com/gpu on ClusterQueue gpu-a100 (flavor a100-scale)")


def test_a_finished_workload_keeps_showing_what_was_reserved():
    wl = K.workload([K.cond("QuotaReserved", "False", "Finished"), K.cond("Finished", "True", "Succeeded")], K.admission())
    assert phase("Quota reserved", unmanaged(K.job()), wl) == \
        ("done", "16 nvidia.com/gpu on ClusterQueue gpu-a100 (flavor a100-scale)")
    finished_without_admission = K.workload([K.cond("Finished", "True", "Succeeded")])
    assert phase("Quota reserved", unmanaged(K.job()), finished_without_admission) == \
        ("active", "waiting for Kueue to reserve quota")


def test_a_started_job_had_its_quota_even_when_the_workload_no_longer_says_so():
    started = K.job(suspend=False, active=2)
    assert phase("Quota reserved", started, K.workload([])) == ("done", "quota was reserved")
    assert phase("Quota reserved", started, K.workload([], K.admission())) == \
        ("done", "16 nvidia.com/gpu on ClusterQueue gpu-a100 (flavor a100-scale)")


def test_deactivated_after_quota_was_reserved():
    wl = K.workload([K.cond("QuotaReserved", "False", "Pending"), K.cond("Evicted", "True", "Deactivated", "gone")],
                    K.admission(), active=False)
    assert phase("Quota reserved", K.job(), wl) == ("done", "quota was reserved (released on eviction)")


def test_retry_backoff_without_attempt_or_requeue_time():
    wl = K.workload([K.cond("QuotaReserved", "False", "Pending"),
                     K.cond("Requeued", "False", "AdmissionCheck", "At least one admission check is false")],
                    checks=[K.check("Pending", "Reset to Pending after eviction. Previously: Retry")])
    assert phase("Quota reserved", K.job(), wl) == ("active", "retry: quota released, requeued")


@pytest.mark.parametrize("conditions", [[], [K.cond("QuotaReserved", "False", "Pending")],
                                        [K.cond("QuotaReserved", "Unknown", "Pending", "still thinking")]])
def test_without_a_pending_message_it_waits_for_kueue(conditions):
    assert phase("Quota reserved", K.job(), K.workload(conditions)) == ("active", "waiting for Kueue to reserve quota")


# ---------------------------------------------------------------------------- Capacity provisioning

def test_the_check_turns_ready_before_kueue_admits():
    snap = K.snap_admitted_job_still_suspended()
    wl = K.workload([RESERVED], K.admission(), [K.check("Ready", "", at=30)])
    assert phase("Capacity provisioning", snap["job"], wl, snap["provreqs"], [], snap["nodes"]) == \
        ("done", "capacity booked on 2 node(s) of gpupool")


def test_a_finished_job_with_an_unadmitted_workload_is_still_waiting_for_capacity():
    done = unmanaged(K.snap_job_complete()["job"])
    assert phase("Capacity provisioning", done, K.workload([RESERVED], K.admission())) == \
        ("active", "waiting for the autoscaler")


def test_capacity_booked_in_several_pools_names_them_all():
    snap = K.snap_pods_running()
    nodes = [K.node(K.NODE_A, K.provreq_uid(1)), K.node(K.NODE_B, K.provreq_uid(1), pool="a100pool")]
    assert phase("Capacity provisioning", snap["job"], snap["workload"], snap["provreqs"], snap["pods"], nodes) == \
        ("done", "capacity booked on 2 node(s) of a100pool, gpupool")


def test_admitted_without_any_admission_check_found_capacity():
    wl = K.workload([RESERVED, ADMITTED], K.admission(), checks=[])
    assert phase("Capacity provisioning", K.job(), wl) == ("done", "capacity found on existing nodes")


def test_after_a_reset_the_requests_failure_message_beats_its_provisioned_message():
    wl = K.workload([RESERVED], K.admission(), [K.check("Pending", "Reset to Pending after eviction. Previously: Retry")])
    pr = K.provreq(2, [K.cond("Provisioned", "False", "CapacityIsNotFound", "Capacity is not found"),
                       K.cond("Failed", "True", "CapacityNotFound", "ValidUntilSeconds passed")])
    assert phase("Capacity provisioning", K.job(), wl, [pr]) == ("active", "ValidUntilSeconds passed")
    pr["status"]["conditions"][1]["status"] = "False"
    assert phase("Capacity provisioning", K.job(), wl, [pr]) == ("active", "Capacity is not found")
    pr["status"]["conditions"][1].update(status="True", message="")
    assert phase("Capacity provisioning", K.job(), wl, [pr]) == ("active", "Capacity is not found")
    pr["status"]["conditions"] = [K.cond("Accepted", "True", "Accepted")]
    assert phase("Capacity provisioning", K.job(), wl, [pr]) == ("active", "waiting for the autoscaler")


def test_retry_counts_attempts_from_the_check_when_no_request_is_left():
    wl = K.workload([RESERVED], K.admission(), [K.check("Retry", "ValidUntilSeconds passed", retryCount=2)])
    assert phase("Capacity provisioning", K.job(), wl) == ("active", "retry after attempt 3: ValidUntilSeconds passed")
    wl["status"]["admissionChecks"][0].pop("retryCount")
    assert phase("Capacity provisioning", K.job(), wl) == ("active", "retry after attempt 1: ValidUntilSeconds passed")


def test_retry_under_another_check_name_reads_its_attempt():
    wl = K.workload([RESERVED], K.admission(), [{"name": "capacity", "state": "Retry", "message": "not yet"}])
    pr = named(K.provreq(1), f"{K.WL_NAME}-capacity-4", owner=False)
    assert phase("Capacity provisioning", K.job(), wl, [pr], check_name="capacity") == \
        ("active", "retry after attempt 4: not yet")


def test_a_request_of_another_check_owned_by_the_workload_is_no_attempt_of_this_one():
    """A Workload with two provisioning checks owns both checks' requests: for this check, the other's request
    sorts before its own attempts and gives no attempt number (the check's retryCount does)."""
    wl = K.workload([RESERVED], K.admission(), [K.check("Retry", "not yet", retryCount=1)])
    other = named(K.provreq(1), f"{K.WL_NAME}-other-check-5")               # owned, another check's name
    assert phase("Capacity provisioning", K.job(), wl, [other]) == ("active", "retry after attempt 2: not yet")
    mine = K.provreq(2)
    assert names(provreqs.of_workload(wl, [other, mine])) == [f"{K.WL_NAME}-other-check-5", f"{K.WL_NAME}-gpu-provisioning-2"]
    assert names(provreqs.of_workload(wl, [mine, other])) == [f"{K.WL_NAME}-other-check-5", f"{K.WL_NAME}-gpu-provisioning-2"]
    assert phase("Capacity provisioning", K.job(), wl, [mine, other]) == ("active", "retry after attempt 2: not yet")


def test_capacity_booked_on_the_nodes_the_pods_ran_on_when_the_request_is_gone():
    pods = [K.pod(0, K.NODE_A, "Running"), K.pod(1, "plain-node", "Running")]
    plain = K.node("plain-node")                 # a node no autoscaler made: no request uid, no pool label
    del plain["metadata"]["labels"]["cluster-autoscaler.kwok.nodegroup/name"]
    nodes = [K.node(K.NODE_A, K.provreq_uid(1)), plain]
    snap = K.snap_pods_running()
    assert phase("Capacity provisioning", snap["job"], snap["workload"], [], pods, nodes) == \
        ("done", "capacity booked on 1 node(s) of gpupool")
    unlabelled = K.node(K.NODE_A, K.provreq_uid(1))
    del unlabelled["metadata"]["labels"]["cluster-autoscaler.kwok.nodegroup/name"]
    assert phase("Capacity provisioning", snap["job"], snap["workload"], [], pods, [unlabelled]) == \
        ("done", "capacity booked on 1 node(s)")


# ---------------------------------------------------------------------------- why a workload was deactivated

def deactivated(*conditions, checks=None):
    return K.workload(list(conditions), checks=checks if checks is not None else [K.check("Pending")], active=False)


@pytest.mark.parametrize("wl, cause", [
    (deactivated(K.cond("Evicted", "True", "DeactivatedDueToAdmissionCheck", "The workload is deactivated")),
     "rejected by admission check: The workload is deactivated"),
    (deactivated(K.cond("Evicted", "True", "DeactivatedDueToAdmissionCheck", "")), "rejected by admission check"),
    (deactivated(K.cond("Evicted", "True", "Deactivated", "evicted by hand"),
                 checks=[K.check("Rejected", "")]), "rejected by admission check: evicted by hand"),
    (deactivated(K.cond("Evicted", "True", "Deactivated", ""), checks=[K.check("Rejected", "")]),
     "rejected by admission check"),
    (deactivated(checks=[K.check("Rejected", "")]), "rejected by admission check"),
    (deactivated(K.cond("Evicted", "True", "Preempted", "")), "evicted (Preempted)"),
    (deactivated({"type": "Evicted", "status": "True"}), "evicted ()"),
    (deactivated(K.cond("Evicted", "False", "Preempted", "old news")), "workload deactivated (spec.active=false)"),
    (deactivated(), "workload deactivated (spec.active=false)"),
])
def test_the_cause_of_a_deactivation(wl, cause):
    states, outcome, reason = view(K.job(), wl)
    assert ("failed", cause) in states and (outcome, reason) == ("failed", cause)


# ---------------------------------------------------------------------------- Pod scheduling and Running

def test_a_finished_job_whose_pods_are_gone_was_scheduled():
    snap = K.snap_job_complete()
    assert phase("Pod scheduling", snap["job"], snap["workload"], snap["provreqs"], [], snap["nodes"]) == \
        ("done", "scheduled (the pods were deleted after the Job completed)")


def test_more_pods_than_the_job_runs_at_once_are_counted_as_pods():
    snap = K.snap_pods_running()
    pods = snap["pods"] + [K.pod(2, K.NODE_A, "Running")]
    assert phase("Pod scheduling", snap["job"], snap["workload"], snap["provreqs"], pods, snap["nodes"]) == \
        ("done", f"3 pods on {K.NODE_A}, {K.NODE_B}")


def test_the_unschedulable_message_is_the_first_unbound_pods():
    snap = K.snap_admitted_pods_pending()
    bound_with_stale = K.pod(0, K.NODE_A)
    bound_with_stale["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                                 "message": "stale"}]
    no_condition = K.pod(1)
    empty_message = K.pod(2, unschedulable="")
    empty_message["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "message": ""}]
    without_reason = K.pod(3)
    without_reason["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "message": "0/3 nodes"}]
    job = K.job(suspend=False, parallelism=4, completions=4)
    pods = [bound_with_stale, no_condition, empty_message, without_reason]
    assert phase("Pod scheduling", job, snap["workload"], snap["provreqs"], pods, snap["nodes"]) == \
        ("active", "1/4 scheduled (Unschedulable: 0/3 nodes)")
    without_reason["status"]["conditions"][0]["reason"] = "SchedulerError"
    assert phase("Pod scheduling", job, snap["workload"], snap["provreqs"], pods, snap["nodes"]) == \
        ("active", "1/4 scheduled (SchedulerError: 0/3 nodes)")


def test_pods_being_deleted_do_not_count():
    snap = K.snap_pods_running()
    leaving = K.pod(1, K.NODE_B, "Running")
    leaving["metadata"]["deletionTimestamp"] = K.ts(50)
    states, outcome, _ = view(snap["job"], snap["workload"], snap["provreqs"], [snap["pods"][0], leaving], snap["nodes"])
    assert states[3] == ("active", "1/2 scheduled") and outcome == "waiting"


def test_running_counts_finished_pods_separately():
    snap = K.snap_pods_running()
    pods = [K.pod(0, K.NODE_A, "Running"), K.pod(1, K.NODE_B, "Succeeded")]
    assert phase("Running", snap["job"], snap["workload"], snap["provreqs"], pods, snap["nodes"]) == \
        ("active", "Running (1/2 pods, 1 finished)")


def test_bound_pods_not_started_yet():
    snap = K.snap_pods_running()
    pods = [K.pod(0, K.NODE_A, "Pending"), K.pod(1, K.NODE_B, "Pending")]
    assert phase("Running", snap["job"], snap["workload"], snap["provreqs"], pods, snap["nodes"]) == \
        ("active", "waiting for pods to start (0/2 running)")


def test_completions_come_from_the_job_or_its_parallelism():
    snap = K.snap_job_complete()
    job = copy.deepcopy(snap["job"])
    job["spec"].update(parallelism=2, completions=3)
    job["status"]["succeeded"] = 3
    assert phase("Running", job, snap["workload"]) == ("done", "Succeeded (3/3 completions)")
    del job["spec"]["completions"]
    del job["status"]["succeeded"]
    assert phase("Running", job, snap["workload"]) == ("done", "Succeeded (0/2 completions)")


@pytest.mark.parametrize("failed, detail", [
    (K.cond("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
     "BackoffLimitExceeded: Job has reached the specified backoff limit"),
    (K.cond("Failed", "True", "BackoffLimitExceeded", ""), "BackoffLimitExceeded"),
    (K.cond("Failed", "True", "", "Job has reached the specified backoff limit"),
     "Job has reached the specified backoff limit"),
    ({"type": "Failed", "status": "True"}, "Failed"),
    ({"status": "True", "type": "Failed", "reason": None, "message": None}, "Failed"),
])
def test_a_failed_job_says_why(failed, detail):
    snap = K.snap_pods_running()
    job = K.job(suspend=False, conditions=[failed])
    assert phase("Running", job, snap["workload"], snap["provreqs"], snap["pods"], snap["nodes"]) == ("failed", detail)


def test_a_terminal_mark_other_than_the_deadline():
    job = K.job(annotations={"tau-demo.io/terminal-reason": "Cancelled"})
    states, outcome, reason = view(job, K.snap_reserved_check_pending()["workload"])
    assert states[2] == ("failed", "Cancelled: Job marked terminal") and reason == "Cancelled: Job marked terminal"


def test_asking_for_a_phase_that_does_not_exist():
    v = derive(Snapshot(None, None, [], [], []))
    with pytest.raises(KeyError) as e:
        v.phase("Booting")
    assert e.value.args == ("Booting",)


# ---------------------------------------------------------------------------- Scheduling while the nodes boot

def booting(name, uid_of_provreq=K.provreq_uid(1), created=None, **kw):
    """A node the autoscaler made for a request, still booting: NotReady, as its VM is not up yet."""
    n = K.node(name, uid_of_provreq, **kw)
    n["status"]["conditions"] = [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]
    if created is None:
        del n["metadata"]["creationTimestamp"]
    else:
        n["metadata"]["creationTimestamp"] = K.ts(created)
    return n


NOW = datetime(2025, 6, 1, 10, 1, 40, tzinfo=timezone.utc)            # K.ts(100)


def test_pods_waiting_for_the_nodes_their_request_is_booting_say_for_how_long():
    snap = K.snap_admitted_pods_pending()
    nodes = [booting(K.NODE_A, created=40), booting(K.NODE_B, created=70), booting("no-time"),
             booting("other-request", "99999999-aaaa-4bbb-8ccc-dddddddddddd", created=10),
             booting("going", created=10, deleting=True), K.node("ready-one", K.provreq_uid(1))]
    args = (snap["job"], snap["workload"], snap["provreqs"], snap["pods"], nodes)
    assert phase("Pod scheduling", *args, now=NOW) == \
        ("active", "0/2 scheduled: 3 node(s) booting for 60s (NotReady until their VMs are up)")
    assert phase("Pod scheduling", *args) == ("active", "0/2 scheduled: 3 node(s) booting (NotReady until their VMs are up)")
    only_untimed = [booting("no-time")]
    assert phase("Pod scheduling", *args[:4], only_untimed, now=NOW) == \
        ("active", "0/2 scheduled: 1 node(s) booting (NotReady until their VMs are up)")
    v = derive(Snapshot(*args), now=NOW)
    assert (v.outcome, v.reason) == ("waiting", "0/2 scheduled: 3 node(s) booting for 60s (NotReady until their VMs are up)")


def test_nodes_of_a_request_not_provisioned_are_not_booting_for_this_job():
    snap = K.snap_admitted_pods_pending()
    pending = K.provreq(2, [K.cond("Provisioned", "False", "CapacityIsNotFound", "Capacity is not found")])
    nodes = [booting(K.NODE_A, K.provreq_uid(2), created=40)]
    got = phase("Pod scheduling", snap["job"], snap["workload"], [pending], snap["pods"], nodes, now=NOW)
    assert got[0] == "active" and "booting" not in got[1], got
    provisioned = [booting(K.NODE_A, K.provreq_uid(1), created=40)]
    assert phase("Pod scheduling", snap["job"], snap["workload"], snap["provreqs"], snap["pods"], provisioned, now=NOW) == \
        ("active", "0/2 scheduled: 1 node(s) booting for 60s (NotReady until their VMs are up)")


def test_capacity_booked_on_the_real_autoscalers_nodes_by_their_pool_label():
    """The real Cluster Autoscaler's nodes carry no request uid: the nodes the pods ran on count by their pool."""
    pods = [K.pod(0, "real-1", "Running"), K.pod(1, "real-2", "Running")]
    real = [K.node("real-1"), K.node("real-2", pool="a100pool")]
    snap = K.snap_pods_running()
    assert phase("Capacity provisioning", snap["job"], snap["workload"], [], pods, real) == \
        ("done", "capacity booked on 2 node(s) of a100pool, gpupool")
