"""The checks on each kind of object, in their one home (k8s/workload.py, provreq.py, job.py, node.py), on plain
objects shaped like the real cluster's: what each answers, and that a malformed object reads as empty."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from k8s import job as jobs
from k8s import node as nodes
from k8s import provreq as provreqs
from k8s import workload as workloads
from k8s.keys import NOT_READY_TAINT, POOL_LABEL


def cond(ctype, status="True", reason="R"):
    return {"type": ctype, "status": status, "reason": reason, "lastTransitionTime": "2026-12-01T10:00:00Z"}


def wl(name="job-a-1", owner="uid-job", created="2026-12-01T10:00:00Z", controller=True, conditions=(), active=None,
       checks=(), admission=None, annotations=None):
    w = {"metadata": {"name": name, "uid": f"uid-{name}", "creationTimestamp": created,
                      "annotations": annotations or {},
                      "ownerReferences": [{"kind": "Job", "uid": owner, "controller": controller}]},
         "spec": {}, "status": {"conditions": list(conditions), "admissionChecks": list(checks)}}
    if active is not None:
        w["spec"]["active"] = active
    if admission is not None:
        w["status"]["admission"] = admission
    return w


def test_the_jobs_workload_is_the_newest_it_controls():
    old, new = wl("w-old", created="2026-12-01T10:00:00Z"), wl("w-new", created="2026-12-01T10:00:05Z")
    stranger, not_controller = wl("w-x", owner="other"), wl("w-nc", controller=False, created="2026-12-01T11:00:00Z")
    assert workloads.of_job([new, stranger, old, not_controller], "uid-job")["metadata"]["name"] == "w-new"
    assert workloads.of_job([stranger], "uid-job") is None and workloads.of_job([], "uid-job") is None
    undated = wl("w-undated", created=None)        # never from the API: counts as the oldest
    assert workloads.of_job([old, undated], "uid-job")["metadata"]["name"] == "w-old"
    assert workloads.job_selector("u1") == "kueue.x-k8s.io/job-uid=u1"


def test_a_workload_without_a_creation_time_counts_as_the_oldest():
    dated, undated = wl("w-dated", created="2026-12-01T10:00:00Z"), wl("w-undated")
    del undated["metadata"]["creationTimestamp"]
    assert workloads.of_job([dated, undated], "uid-job")["metadata"]["name"] == "w-dated"
    assert workloads.of_job([undated, dated], "uid-job")["metadata"]["name"] == "w-dated"


def test_admission_check_entries_and_states():
    w = wl(checks=[{"name": "a", "state": "Pending"}, {"name": "b", "state": "Retry"}, "junk"])
    assert workloads.admission_check(w, "b") == {"name": "b", "state": "Retry"}
    assert workloads.check_state(w, "a") == "Pending" and workloads.check_state(w, "c") is None
    assert workloads.admission_check(None, "a") is None and workloads.check_state({"status": None}, "a") is None


def test_quota_admission_and_the_end_of_a_workload():
    assert workloads.quota_reserved(wl(conditions=[cond("QuotaReserved")]))
    assert not workloads.quota_reserved(wl(conditions=[cond("QuotaReserved", "False")]))
    assert workloads.holds_quota(wl(admission={"clusterQueue": "q"})) and not workloads.holds_quota(wl())
    assert workloads.has_admission(wl(admission={"clusterQueue": "q"})) and not workloads.has_admission(wl())
    assert workloads.holds_quota(wl(conditions=[cond("QuotaReserved")]))
    admitted, finished = wl(conditions=[cond("Admitted")]), wl(conditions=[cond("Finished")])
    assert workloads.admitted(admitted) and not workloads.admitted(finished)
    assert workloads.finished(finished) and not workloads.finished(admitted)
    assert workloads.admission_won(admitted) and workloads.admission_won(finished)
    assert not workloads.admission_won(wl(conditions=[cond("QuotaReserved")]))


def test_active_eviction_and_deactivation():
    assert workloads.active(wl()) and workloads.active(wl(active=True)) and not workloads.active(wl(active=False))
    evicted = wl(conditions=[cond("Evicted", reason="AdmissionCheck")])
    assert workloads.evicted(evicted)["reason"] == "AdmissionCheck"
    assert workloads.evicted(wl(conditions=[cond("Evicted", "False")])) is None
    assert workloads.evicted_for(evicted, "AdmissionCheck") and not workloads.evicted_for(evicted, "Deactivated")
    assert workloads.deactivated(wl(active=False))
    assert workloads.deactivated(wl(conditions=[cond("Evicted", reason="DeactivatedDueToAdmissionCheck")]))
    assert workloads.deactivated(wl(conditions=[cond("Evicted", reason="Deactivated")]))
    assert not workloads.deactivated(evicted) and not workloads.deactivated(wl())
    assert not workloads.deactivated(wl(conditions=[{"type": "Evicted", "status": "True"}]))     # no reason
    assert not workloads.deactivated(wl(conditions=[cond("Evicted", reason=7)]))               # not a string


def test_the_committed_timeout_is_the_decision_annotation():
    assert workloads.committed_timeout(wl(annotations={"tau-demo.io/admission-decision": "timed-out"}))
    assert not workloads.committed_timeout(wl(annotations={"tau-demo.io/admission-decision": "admitted"}))
    assert not workloads.committed_timeout(wl()) and not workloads.committed_timeout(None)


def test_the_commit_is_dated_by_its_decision_time_annotation():
    at = "2026-12-01T10:00:07.123456Z"
    done = wl(annotations={"tau-demo.io/admission-decision": "timed-out", "tau-demo.io/admission-decision-time": at})
    assert workloads.decided_at(done) == datetime(2026, 12, 1, 10, 0, 7, 123456, tzinfo=timezone.utc)
    other = wl(annotations={"tau-demo.io/admission-decision": "admitted", "tau-demo.io/admission-decision-time": at})
    assert workloads.decided_at(other) is None                  # a time without the committed timeout says nothing
    assert workloads.decided_at(wl(annotations={"tau-demo.io/admission-decision": "timed-out"})) is None
    assert workloads.decided_at(None) is None


@pytest.mark.parametrize("retry, want", [(1, 5), (2, 10), (3, 20), (4, 20), (0, 5)])
def test_kueues_retry_backoff(retry, want):
    assert workloads.check_retry_backoff(5, 20, retry) == want


def test_kueues_retry_backoff_without_a_cap_and_truncated():
    assert workloads.check_retry_backoff(60, 0, 3) == 240
    assert workloads.check_retry_backoff(60, 1800, 6) == 1800


def pr(name, uid="u", owner=None, created="2026-12-01T10:00:00Z", conditions=()):
    refs = [{"kind": "Workload", "uid": owner}] if owner else []
    return {"metadata": {"name": name, "uid": uid, "creationTimestamp": created, "ownerReferences": refs},
            "status": {"conditions": list(conditions)}}


def test_a_requests_attempt_comes_from_kueues_name():
    assert provreqs.attempt(pr("job-a-gpu-provisioning-3")) == 3
    assert provreqs.attempt(pr("job-a-other-12"), "other") == 12 and provreqs.attempt(pr("job-a-other-12")) is None
    assert provreqs.attempt(pr("job-a-gpu-provisioning-3-x")) is None and provreqs.attempt(None) is None


def test_the_workloads_requests_by_owner_or_name_oldest_attempt_first():
    w = wl("job-a-1")
    by_name2 = pr("job-a-1-gpu-provisioning-2", "u2")
    by_owner = pr("cut-and-hashed", "u3", owner="uid-job-a-1")
    first = pr("job-a-1-gpu-provisioning-1", "u1")
    foreign = pr("job-b-1-gpu-provisioning-1", "u4")
    mine = provreqs.of_workload(w, [by_name2, foreign, by_owner, first])
    assert [p["metadata"]["name"] for p in mine] == ["cut-and-hashed", "job-a-1-gpu-provisioning-1",
                                                     "job-a-1-gpu-provisioning-2"]
    assert provreqs.belongs_to(by_owner, w, "gpu-provisioning") and not provreqs.belongs_to(foreign, w, "x")
    assert len(provreqs.of_workload(None, [first, foreign])) == 2
    # an owned request whose name ends in a number of another check counts as no attempt: first
    other_check = pr("cut-and-hashed-other-7", "u5", owner="uid-job-a-1")
    assert [p["metadata"]["name"] for p in provreqs.of_workload(w, [by_name2, other_check])] == [
        "cut-and-hashed-other-7", "job-a-1-gpu-provisioning-2"]


def test_a_requests_true_conditions_in_display_order():
    p = pr("x", conditions=[cond("Provisioned"), cond("Accepted"), cond("Failed", "False")])
    assert provreqs.true_conditions(p) == ["Accepted", "Provisioned"] and provreqs.true_conditions(None) == []


def _owner(manager, *types, operation="Update", subresource="status"):
    """A managedFields entry as the apiserver writes it: `manager` owns the conditions of these types."""
    return {"manager": manager, "operation": operation, "subresource": subresource, "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {"f:conditions": {'k:{"type":"%s"}' % t: {".": {}, "f:status": {}}
                                                       for t in types}}}}


def test_who_wrote_a_condition_is_read_from_the_managed_fields():
    p = pr("x", conditions=[cond("Accepted"), cond("Provisioned")])
    p["metadata"]["managedFields"] = [
        {"manager": "kueue", "operation": "Update", "fieldsV1": {"f:spec": {"f:parameters": {}}}},
        _owner("cluster-autoscaler", "Provisioned", operation="Apply"),
        _owner("fake-ca", "Accepted", "Provisioned"),
        _owner("", "Accepted"),                                   # a manager without a name reads as "?"
        "not a field entry",
    ]
    assert provreqs.condition_writers(p, "Provisioned") == ["cluster-autoscaler", "fake-ca"]
    assert provreqs.condition_writers(p, "Accepted") == ["?", "fake-ca"]
    assert provreqs.condition_writers(p, "Failed") == [], "nobody owns a condition no one wrote"
    assert provreqs.condition_writers(p, "type") == [], "the key is the whole k:{\"type\":...} entry"
    assert provreqs.condition_writers(None, "Accepted") == []
    assert provreqs.condition_writers(pr("y"), "Accepted") == [], "an object without managedFields"
    assert provreqs.condition_owners(p, "Provisioned") == ["cluster-autoscaler/Apply", "fake-ca/Update"]
    assert provreqs.condition_owners(p, "Accepted") == ["?/Update", "fake-ca/Update"]
    no_op = {**_owner("x", "Failed"), "operation": None}
    p["metadata"]["managedFields"].append(no_op)
    assert provreqs.condition_owners(p, "Failed") == ["x/?"]
    assert provreqs.condition_owners(None, "Accepted") == []


def test_a_jobs_outcome_suspension_and_parallelism():
    assert jobs.outcome({"status": {"conditions": [cond("Complete")]}}) == "succeeded"
    assert jobs.outcome({"status": {"conditions": [cond("Failed")]}}) == "failed"
    assert jobs.outcome({"status": {"conditions": [cond("Failed", "False")]}}) is None and jobs.outcome(None) is None
    assert jobs.suspended({"spec": {"suspend": True}}) and not jobs.suspended({"spec": {}})
    assert jobs.started({"spec": {"suspend": False}}) and not jobs.started({"spec": {}}) and not jobs.started(None)
    assert jobs.parallelism({"spec": {"parallelism": 4, "completions": 2}}) == 2
    assert jobs.parallelism({"spec": {"parallelism": 3}}) == 3 and jobs.parallelism(None) == 1
    assert jobs.parallelism({"spec": {"parallelism": 0}}) == 1


def test_the_deadlines_marks_on_a_job():
    marked = {"metadata": {"annotations": {"tau-demo.io/terminal-reason": "AdmissionTimeout",
                                           "tau-demo.io/cleanup-after": "2026-12-01T10:00:30Z"}}}
    assert jobs.mirrored(marked) and not jobs.mirrored({"metadata": {"annotations": {
        "tau-demo.io/terminal-reason": "Other"}}})
    assert jobs.cleanup_after(marked).isoformat() == "2026-12-01T10:00:30+00:00"
    assert jobs.cleanup_after({}) is None


def node(name, pool="gpupool", ready=True, deleting=False, taints=()):
    n = {"metadata": {"name": name, "labels": {POOL_LABEL: pool} if pool else {}},
         "spec": {"taints": list(taints)}, "status": {"conditions": [cond("Ready", "True" if ready else "False")]}}
    if deleting:
        n["metadata"]["deletionTimestamp"] = "2026-12-01T10:00:00Z"
    return n


def test_a_pools_live_nodes_and_a_usable_node():
    ns = [node("a"), node("b", deleting=True), node("c", pool="cpu"), node("d", pool=None), "junk"]
    assert [n["metadata"]["name"] for n in nodes.of_pool(ns, "gpupool")] == ["a"]
    assert nodes.pool_of(node("c", pool="cpu")) == "cpu" and nodes.pool_of(node("d", pool=None)) is None
    assert nodes.ready(node("a")) and not nodes.ready(node("a", ready=False))
    assert nodes.usable(node("a")) and not nodes.usable(node("a", taints=[{"key": NOT_READY_TAINT}]))
    assert not nodes.usable(node("a", ready=False)) and nodes.usable(node("a", taints=[{"key": "sku"}]))
    assert nodes.live(node("a")) and not nodes.live(node("b", deleting=True)) and not nodes.live(None)
