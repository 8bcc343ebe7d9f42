"""Phase derivation over realistic snapshots of one Job's life (demo.phases)."""

from __future__ import annotations

import copy

import pytest

import k8s_objects as K
from demo.jobs.phases import PHASES, View, derive, over_run, pool_line, quota_summary
from k8s.quantity import parse_quantity_exact as parse_quantity
from demo.jobs.snapshot import Snapshot

SUCCESS_SAMPLE = """\
  ✓ Submitted              Job applied (suspended)
  ✓ Quota reserved         16 nvidia.com/gpu on ClusterQueue gpu-a100 (flavor a100-scale)
  ✓ Capacity provisioning  capacity booked on 2 node(s) of gpupool
  ✓ Pod scheduling         2/2 on aks-gpupool-vmss438424, aks-gpupool-vmss913705
  ✓ Running                Succeeded (2/2 completions)"""

QUOTA = "16 nvidia.com/gpu on ClusterQueue gpu-a100 (flavor a100-scale)"
BOOKED = "capacity booked on 2 node(s) of gpupool"


def states(view: View) -> list[str]:
    return [p.state for p in view.phases]


def details(view: View) -> dict[str, str]:
    return {p.name: p.detail for p in view.phases}


# ------------------------------------------------------------------------ the happy path

def test_no_job_yet():
    v = derive(Snapshot(None, None, [], [], []))
    assert states(v) == ["active", "pending", "pending", "pending", "pending"]
    assert v.phases[0].detail == "waiting for the Job"
    assert (v.outcome, v.reason) == ("waiting", "waiting for the Job")


def test_fresh_suspended_job_without_workload():
    v = derive(Snapshot(**K.snap_fresh()))
    assert [p.name for p in v.phases] == list(PHASES)
    assert states(v) == ["done", "active", "pending", "pending", "pending"]
    assert details(v)["Submitted"] == "Job applied (suspended)"
    assert details(v)["Quota reserved"] == "waiting for Kueue to create the Workload"
    assert (v.outcome, v.reason) == ("waiting", "waiting for Kueue to create the Workload")


def test_unmanaged_running_job_is_just_applied():
    j = K.job(suspend=False, queue=False)
    assert details(derive(Snapshot(j, None, [], [], [])))["Submitted"] == "Job applied"


def test_workload_pending_shows_the_quota_message():
    v = derive(Snapshot(**K.snap_pending()))
    assert states(v) == ["done", "active", "pending", "pending", "pending"]
    assert details(v)["Quota reserved"] == K.PENDING_MSG
    assert v.reason.startswith("couldn't assign flavors")
    assert v.outcome == "waiting"


def test_quota_reserved_check_pending_shows_the_check_message():
    v = derive(Snapshot(**K.snap_reserved_check_pending()))
    assert states(v) == ["done", "done", "active", "pending", "pending"]
    assert details(v)["Quota reserved"] == QUOTA
    assert details(v)["Capacity provisioning"] == K.NOT_FOUND_MSG
    assert (v.outcome, v.reason) == ("waiting", K.NOT_FOUND_MSG)


def test_check_pending_without_message_falls_back_to_provreq_then_autoscaler():
    snap = K.snap_reserved_check_pending()
    snap["workload"]["status"]["admissionChecks"] = [K.check("Pending", "", at=12)]
    # the newest ProvReq's Provisioned message
    assert details(derive(Snapshot(**snap)))["Capacity provisioning"] == "Capacity is not found"
    # no ProvReq of this workload (the only one given belongs to another workload)
    snap["provreqs"] = [K.provreq(1, [K.cond("Provisioned", "False", "X", "not mine")],
                                  wl_name="job-other-00000", wl_uid="other-uid")]
    assert details(derive(Snapshot(**snap)))["Capacity provisioning"] == "waiting for the autoscaler"


def test_newest_attempt_wins():
    snap = K.snap_reserved_check_pending()
    snap["workload"]["status"]["admissionChecks"] = [K.check("Pending", "", at=50, retryCount=1)]
    old = K.provreq(1, [K.cond("Failed", "True", "CapacityNotFound", "attempt one failed")])
    new = K.provreq(2, [K.cond("Accepted", "True", "Accepted"),
                        K.cond("Provisioned", "False", "CapacityIsNotFound", "attempt two waits")])
    snap["provreqs"] = [new, old]
    assert details(derive(Snapshot(**snap)))["Capacity provisioning"] == "attempt two waits"


def test_check_retry():
    v = derive(Snapshot(**K.snap_check_retry()))
    assert states(v) == ["done", "done", "active", "pending", "pending"]
    d = details(v)["Capacity provisioning"]
    assert d == "retry after attempt 1: ValidUntilSeconds passed: capacity not found"
    assert v.outcome == "waiting"


def test_retry_backoff_quota_released():
    v = derive(Snapshot(**K.snap_retry_backoff()))
    assert states(v) == ["done", "active", "pending", "pending", "pending"]
    assert details(v)["Quota reserved"].startswith("retry after attempt 1: ")
    assert "2025-06-01T10:00:45Z" in details(v)["Quota reserved"]


def test_admitted_and_provisioned_pods_pending():
    v = derive(Snapshot(**K.snap_admitted_pods_pending()))
    assert states(v) == ["done", "done", "done", "active", "pending"]
    # only the two nodes annotated with the provisioned ProvReq's uid count, not other_node()
    assert details(v)["Capacity provisioning"] == BOOKED
    sched = details(v)["Pod scheduling"]
    assert sched.startswith("0/2 scheduled")
    assert "untolerated taint" in sched
    assert v.outcome == "waiting"


def test_one_of_two_pods_bound():
    snap = K.snap_admitted_pods_pending()
    snap["pods"][0] = K.pod(0, K.NODE_A, "Pending")
    v = derive(Snapshot(**snap))
    assert v.phases[3].state == "active"
    assert v.phases[3].detail.startswith("1/2 scheduled")


def test_admitted_but_not_yet_unsuspended():
    v = derive(Snapshot(**K.snap_admitted_job_still_suspended()))
    assert states(v) == ["done", "done", "done", "active", "pending"]
    assert v.reason == "waiting for Kueue to unsuspend the Job"


def test_provisioned_without_new_nodes():
    snap = K.snap_admitted_pods_pending()
    snap["nodes"] = [K.other_node()]
    assert details(derive(Snapshot(**snap)))["Capacity provisioning"] == "capacity found on existing nodes"


def test_pods_running():
    v = derive(Snapshot(**K.snap_pods_running()))
    assert states(v) == ["done", "done", "done", "done", "active"]
    assert details(v)["Pod scheduling"] == f"2/2 on {K.NODE_A}, {K.NODE_B}"
    assert details(v)["Running"] == "Running (2/2 pods)"
    assert (v.outcome, v.reason) == ("running", "Running (2/2 pods)")


def test_one_pod_running_is_still_waiting():
    snap = K.snap_pods_running()
    snap["pods"][1] = K.pod(1, K.NODE_A, "Pending")
    v = derive(Snapshot(**snap))
    assert details(v)["Running"] == "Running (1/2 pods)"
    assert v.outcome == "waiting"


def test_job_complete():
    v = derive(Snapshot(**K.snap_job_complete()))
    assert states(v) == ["done"] * 5
    assert (v.outcome, v.reason) == ("succeeded", "")
    assert v.render() == SUCCESS_SAMPLE


def test_render_exact_for_stored_fixture():
    v = derive(Snapshot(**K.load_fixture("succeeded.yaml")))
    assert v.render() == SUCCESS_SAMPLE
    assert v.outcome == "succeeded"


def test_render_symbols_and_padding():
    v = derive(Snapshot(**K.snap_rejected()))
    lines = v.render().splitlines()
    assert lines[0] == "  ✓ Submitted              Job applied (suspended)"
    assert lines[2].startswith("  ✗ Capacity provisioning  rejected by admission check: ")
    assert lines[3] == "  · Pod scheduling"
    active = derive(Snapshot(**K.snap_pending())).render().splitlines()[1]
    assert active.startswith("  … Quota reserved         couldn't")


# ---------------------------------------------------------------------------- failures

def test_deadline_deactivated_after_quota():
    v = derive(Snapshot(**K.snap_deadline()))
    assert states(v) == ["done", "done", "failed", "pending", "pending"]
    assert details(v)["Capacity provisioning"] == "admission deadline passed: workload deactivated"
    assert (v.outcome, v.reason) == ("failed", "admission deadline passed: workload deactivated")


def test_deadline_in_the_race_window_before_eviction():
    """spec.active=false written while quota is still reserved and the check pending."""
    snap = K.snap_reserved_check_pending()
    snap["workload"]["spec"]["active"] = False
    snap["workload"]["metadata"]["annotations"]["tau-demo.io/admission-decision"] = "timed-out"
    v = derive(Snapshot(**snap))
    assert states(v) == ["done", "done", "failed", "pending", "pending"]
    assert details(v)["Quota reserved"] == QUOTA
    assert v.reason == "admission deadline passed: workload deactivated"


def test_deadline_while_queued_fails_quota_phase():
    v = derive(Snapshot(**K.snap_deadline_while_queued()))
    assert states(v) == ["done", "failed", "pending", "pending", "pending"]
    assert v.reason == "admission deadline passed: workload deactivated"


def test_rejected_by_admission_check():
    v = derive(Snapshot(**K.snap_rejected()))
    assert states(v) == ["done", "done", "failed", "pending", "pending"]
    assert v.reason == f"rejected by admission check: {K.REJECT_MSG}"
    assert v.outcome == "failed"


def test_rejected_after_check_reset_uses_eviction_message():
    snap = K.snap_rejected()
    wl = snap["workload"]
    wl["status"]["admissionChecks"] = [K.check("Pending", "Reset to Pending after eviction. Previously: Rejected")]
    del wl["status"]["admission"]
    wl["status"]["conditions"][0] = K.cond("QuotaReserved", "False", "Pending", "The workload is deactivated")
    wl["status"]["conditions"].append(K.cond("Requeued", "False", "DeactivatedDueToAdmissionCheck", ""))
    v = derive(Snapshot(**snap))
    assert states(v) == ["done", "done", "failed", "pending", "pending"]
    assert v.reason == ("rejected by admission check: The workload is deactivated due to rejected "
                        "admission check(s): gpu-provisioning")


def test_manual_deactivation_names_the_eviction():
    snap = K.snap_deadline()
    del snap["workload"]["metadata"]["annotations"]["tau-demo.io/admission-decision"]
    snap["job"]["metadata"]["annotations"] = {}
    assert derive(Snapshot(**snap)).reason == "The workload is deactivated"


def test_terminal_mirror_without_workload_fails_the_open_phase():
    j = K.job(annotations=K.mirror_annotations())
    v = derive(Snapshot(j, None, [], [], []))
    assert states(v) == ["done", "failed", "pending", "pending", "pending"]
    assert v.reason == ("AdmissionTimeout: admission deadline passed at 2025-06-01T10:01:01.250000Z "
                        f"(Workload {K.WL_NAME} deactivated)")


def test_terminal_mirror_on_a_running_job_fails_running():
    """The legacy order (mark the owner first) can leave the mark on an admitted, running Job."""
    snap = K.snap_pods_running()
    snap["job"]["metadata"]["annotations"] = {"tau-demo.io/terminal-reason": "AdmissionTimeout"}
    v = derive(Snapshot(**snap))
    assert states(v) == ["done", "done", "done", "done", "failed"]
    assert v.reason == "AdmissionTimeout: admission deadline passed"


def test_job_failed_while_running():
    snap = K.snap_pods_running()
    snap["job"]["status"]["conditions"] = [
        K.cond("FailureTarget", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
        K.cond("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit")]
    snap["pods"] = [K.pod(0, K.NODE_B, "Failed"), K.pod(1, K.NODE_A, "Succeeded")]
    v = derive(Snapshot(**snap))
    assert states(v) == ["done", "done", "done", "done", "failed"]
    assert v.reason == "BackoffLimitExceeded: Job has reached the specified backoff limit"
    assert v.outcome == "failed"


def test_inputs_are_not_modified():
    snap = K.snap_deadline()
    before = copy.deepcopy(snap)
    derive(Snapshot(**snap))
    assert snap == before


# ---------------------------------------------------------------------- helpers

def test_pool_line_counts_live_nodes_of_the_pool():
    nodes = [K.node(K.NODE_A, "u1"), K.node(K.NODE_B, "u1", deleting=True),
             K.node("aks-cpupool-vmss1", pool="cpupool")]
    assert pool_line("gpupool", nodes, 2) == "Node pool gpupool: 1/2 nodes"
    assert pool_line("gpupool", [], 2) == "Node pool gpupool: 0/2 nodes"


def test_quota_summary_without_gpu_and_with_several_podsets():
    wl = K.workload(admitted={
        "clusterQueue": "cpu-q",
        "podSetAssignments": [
            {"name": "driver", "count": 1, "flavors": {"cpu": "std", "memory": "std"},
             "resourceUsage": {"cpu": "500m", "memory": "512Mi"}},
            {"name": "workers", "count": 2, "flavors": {"cpu": "std", "memory": "big"},
             "resourceUsage": {"cpu": "2", "memory": "1536Mi"}},
        ]})
    assert quota_summary(wl) == "cpu 2500m, memory 2Gi on ClusterQueue cpu-q (flavors big, std)"


@pytest.mark.parametrize("q,expected", [("16", 16), ("500m", 0.5), ("2Gi", 2 * 1024**3), ("1e3", 1000), ("1k", 1000)])
def test_parse_quantity(q, expected):
    assert float(parse_quantity(q)) == expected


def test_parse_quantity_rejects_garbage():
    with pytest.raises(ValueError):
        parse_quantity("lots")


# ------------------------------------------------------------------------- over a whole run (over_run)

def rows(*phases_):
    """[[name, state, detail] x 5] from (state, detail) pairs, in PHASES order."""
    return [[n, s, d] for n, (s, d) in zip(PHASES, phases_)]


DONE5 = rows(("done", "applied"), ("done", QUOTA), ("done", BOOKED), ("done", "2/2 on a, b"), ("done", "Succeeded"))


def test_over_a_run_each_phase_is_as_it_was_first_done_not_as_its_teardown_left_it():
    teardown = rows(("done", "applied"), ("done", "quota was reserved (gone)"), ("done", "capacity booked on 1 node(s)"),
                    ("done", "1/2 on b"), ("done", "Succeeded"))
    early = rows(("done", "applied"), ("active", "waiting"), ("pending", ""), ("pending", ""), ("pending", ""))
    assert over_run([early, DONE5, teardown], "succeeded") == (DONE5, "succeeded")
    assert over_run([early, DONE5, teardown], "") == (DONE5, "succeeded")      # all done: succeeded


def test_over_a_run_each_phase_is_as_it_was_when_the_next_was_first_done_not_before_its_facts_came():
    # the cold CI at 0e65839: the request's Provisioned came to the recorder before the nodes made for it, so the first
    # row with the capacity done said no node was booked; the run moved on with both nodes booked
    found = rows(("done", "applied"), ("done", QUOTA), ("done", "capacity found on existing nodes"),
                 ("active", "waiting for Kueue to unsuspend the Job"), ("pending", ""))
    booked = rows(("done", "applied"), ("done", QUOTA), ("done", BOOKED), ("active", "0/2 scheduled"), ("pending", ""))
    scheduled = rows(("done", "applied"), ("done", QUOTA), ("done", BOOKED), ("done", "2/2 scheduled"),
                     ("active", "Running (2/2 pods)"))       # the same for the pods: as they were once the run went on
    teardown = rows(("done", "applied"), ("done", "quota was reserved (gone)"),
                    ("done", "capacity found on existing nodes"), ("done", "1/2 on b"), ("done", "Succeeded"))
    assert over_run([found, booked, scheduled, DONE5, teardown], "succeeded") == (DONE5, "succeeded")
    # the row where the next phase was first done is the one read: not the row before it, nor the one after
    assert over_run([found, scheduled, teardown, DONE5], "succeeded")[0][2] == ["Capacity provisioning", "done", BOOKED]
    # the next phase never done (the nodes never booted): the phase as it was first done
    gone = rows(("done", "applied"), ("done", QUOTA), ("done", "capacity found on existing nodes"),
                ("failed", "the nodes never became Ready"), ("pending", ""))
    assert over_run([booked, gone], "failed")[0][2] == ["Capacity provisioning", "done", BOOKED]


def test_over_a_run_a_phase_failed_at_its_end_stays_failed_and_the_rest_are_pending():
    admitted = rows(("done", "applied"), ("done", QUOTA), ("done", BOOKED), ("active", "0/2"), ("pending", ""))
    rejected = rows(("done", "applied"), ("done", "quota was reserved (released on eviction)"),
                    ("failed", "rejected by admission check"), ("pending", ""), ("pending", ""))
    assert over_run([admitted, rejected], "failed") == (
        rows(("done", "applied"), ("done", QUOTA), ("failed", "rejected by admission check"), ("pending", ""),
             ("pending", "")), "failed")
    assert over_run([admitted, rejected], "waiting")[1] == "failed"


def test_over_a_run_a_phase_never_done_is_as_last_open():
    first = rows(("done", "applied"), ("active", "waiting for Kueue"), ("pending", ""), ("pending", ""), ("pending", ""))
    later = rows(("done", "applied"), ("active", "retry after attempt 1"), ("pending", ""), ("pending", ""),
                 ("pending", ""))
    assert over_run([first, later], "waiting") == (later, "waiting")
    third = rows(("done", "applied"), ("active", "retry after attempt 2"), ("pending", ""), ("pending", ""),
                 ("pending", ""))
    assert over_run([first, later, third], "waiting") == (third, "waiting")       # the last open, not the second
    # an open phase that went back to pending (the phase before it went back): as it was last open
    opened = rows(("done", "applied"), ("done", QUOTA), ("active", "waiting for the autoscaler"), ("pending", ""),
                  ("pending", ""))
    opened2 = rows(("done", "applied"), ("done", QUOTA), ("active", "retry: no capacity"), ("pending", ""),
                   ("pending", ""))
    back = rows(("done", "applied"), ("active", "requeued"), ("pending", ""), ("pending", ""), ("pending", ""))
    assert over_run([opened, opened2, back], "waiting") == (
        rows(("done", "applied"), ("done", QUOTA), ("active", "retry: no capacity"), ("pending", ""), ("pending", "")),
        "waiting")
    opened3 = rows(("done", "applied"), ("done", QUOTA), ("active", "retry: still no capacity"), ("pending", ""),
                   ("pending", ""))
    assert over_run([opened, opened2, opened3, back], "waiting")[0][2] == [      # the last open, not the second
        "Capacity provisioning", "active", "retry: still no capacity"]
    never = rows(("done", "applied"), ("done", QUOTA), ("pending", ""), ("pending", ""), ("pending", ""))
    assert over_run([never], "waiting") == (never, "waiting")


def test_over_a_run_of_nothing_is_nothing_and_the_rows_given_are_not_changed():
    assert over_run([], "waiting") == ([], "waiting")
    assert over_run([]) == ([], "")
    history = [copy.deepcopy(DONE5)]
    got, _ = over_run(history)
    got[0][2] = "changed"
    assert history == [DONE5]
