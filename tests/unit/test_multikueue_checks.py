"""The multikueue scenarios' cross-cluster decisions (scenarios/multikueue/checks.py) on plain objects: one Job's
objects in one cluster, over time; which worker admitted first; a whole window held or not; a Job that ran on a
worker reported failed or deleted; who wrote the requests' conditions; kubernetes-sigs/kueue#8089's verdict."""

from __future__ import annotations

import pytest

from k8s.keys import (ADMISSION_TIMEOUT, ADMITTED, DECISION_ANNOTATION, DECISION_TIME_ANNOTATION, EVICTED,
                      FAKE_CA_FIELD_MANAGER, JOB_COMPLETE, JOB_CONTROLLER_UID_LABEL, JOB_NAME_LABEL,
                      PROVREQ_UID_ANNOTATION, QUOTA_RESERVED, TERMINAL_REASON_ANNOTATION)
from scenarios.multikueue import checks as C
from demo.jobs.snapshot import Snapshot
from scenarios.multikueue.checks import Objects
from k8s.tape import first

JOB, WL = "train", "job-train-abc12"


def cond(ctype, status="True", reason="R"):
    return {"type": ctype, "status": status, "reason": reason}


def job(uid="j1", suspend=False, done=False, marked=False, deleting=False):
    md = {"name": JOB, "uid": uid, "annotations": {TERMINAL_REASON_ANNOTATION: ADMISSION_TIMEOUT} if marked else {}}
    if deleting:
        md["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": md, "spec": {"suspend": suspend},
            "status": {"conditions": [cond(JOB_COMPLETE)] if done else []}}


def failed_job():
    return {"metadata": {"name": JOB, "uid": "j1"}, "spec": {"suspend": False},
            "status": {"conditions": [cond("Failed")]}}


def wl(name=WL, quota=False, admitted=False, cluster="", nominated=(), active=True, evicted=""):
    conditions = ([cond(QUOTA_RESERVED)] if quota else []) + ([cond(ADMITTED)] if admitted else []) + \
        ([cond(EVICTED, reason=evicted)] if evicted else [])
    status = {"conditions": conditions}
    if cluster:
        status["clusterName"] = cluster
    if nominated:
        status["nominatedClusterNames"] = list(nominated)
    return {"metadata": {"name": name, "uid": "w1"}, "spec": {"active": active}, "status": status}


def pr(attempt=1, uid="p1", conditions=(), writers=None, workload=WL):
    fields = [{"manager": m, "fieldsV1": {"f:status": {"f:conditions": {f'k:{{"type":"{c}"}}': {}}}}}
              for c, m in (writers or {}).items()]
    return {"metadata": {"name": f"{workload}-gpu-provisioning-{attempt}", "uid": uid, "managedFields": fields},
            "status": {"conditions": [cond(c) for c in conditions]}}


def pod(name, uid="j1", phase="Running", node=None):
    return {"metadata": {"name": name, "labels": {JOB_CONTROLLER_UID_LABEL: uid, JOB_NAME_LABEL: JOB}},
            "spec": {"nodeName": node} if node else {}, "status": {"phase": phase}}


def node(name, for_uid=None):
    return {"metadata": {"name": name, "annotations": {PROVREQ_UID_ANNOTATION: for_uid} if for_uid else {}}}


def vs(*views, start=0.0, step=0.5):
    return [(start + i * step, v) for i, v in enumerate(views)]


# ---------------------------------------------------------------------------- one Job's objects in one cluster

def test_a_view_picks_the_jobs_objects_by_name_and_its_pods_by_the_jobs_uid():
    objs = Objects(jobs=(job(uid="other") | {"metadata": {"name": "x", "uid": "o"}}, job()),
                   workloads=(wl("another"), wl()),
                   provreqs=(pr(2, "p2"), pr(1), pr(1, "px", workload="another")),
                   pods=(pod("a"), pod("b", uid="else")), nodes=(node("n1"),))
    v = C.job_view(objs, JOB, WL)
    assert v.job["metadata"]["uid"] == "j1" and v.workload["metadata"]["name"] == WL
    assert [p["metadata"]["uid"] for p in v.provreqs] == ["p1", "p2"]       # its own, oldest attempt first
    assert [p["metadata"]["name"] for p in v.pods] == ["a"] and v.nodes == [node("n1")]


def test_a_view_finds_the_requests_of_a_workload_that_is_gone_and_the_pods_of_a_job_that_is_gone():
    v = C.job_view(Objects(provreqs=(pr(1),), pods=(pod("a", uid="gone"), {"metadata": {"name": "b"}})), JOB, WL)
    assert v.job is None and v.workload is None
    assert [p["metadata"]["uid"] for p in v.provreqs] == ["p1"]
    assert [p["metadata"]["name"] for p in v.pods] == ["a"]
    assert C.job_view(Objects(), JOB, WL) == Snapshot()


def test_views_over_samples_keep_their_times():
    samples = [(1.0, Objects()), (2.0, Objects(jobs=(job(),), workloads=(wl(),)))]
    out = C.job_views(samples, JOB, WL)
    assert [t for t, _ in out] == [1.0, 2.0] and out[0][1].workload is None and out[1][1].workload is not None
    assert out[1][1].job == job()


def test_a_request_the_workload_owns_counts_whatever_its_name():
    hashed = {"metadata": {"name": "job-train-cut-9f8e7-1", "uid": "ph",
                           "ownerReferences": [{"kind": "Workload", "uid": "w1", "controller": True}]}}
    v = C.job_view(Objects(workloads=(wl(),), provreqs=(hashed,)), JOB, WL)
    assert v.provreqs == [hashed]
    assert C.job_view(Objects(provreqs=(hashed,)), JOB, WL).provreqs == []


# ---------------------------------------------------------------------------- over time

def test_first_and_after():
    seen = vs(Snapshot(), Snapshot(workload=wl()), Snapshot(workload=wl(admitted=True)), Snapshot(workload=wl()))
    assert first(seen, lambda v: v.workload is not None) == 0.5
    assert first(seen, lambda v: False) is None
    assert [t for t, _ in C.after(seen, 1.0)] == [1.0, 1.5]
    assert C.after(seen, None) == []


def test_span_is_the_first_and_last_sample_a_thing_was_seen():
    seen = vs(Snapshot(), Snapshot(job=job(suspend=True)), Snapshot(), Snapshot(job=job(suspend=True)), Snapshot())
    assert C.span(seen, lambda v: v.job is not None) == (0.5, 1.5)
    assert C.span(seen[:3], lambda v: v.job is not None) == (0.5, 0.5)
    assert C.span(seen, lambda v: False) is None


def test_the_commit_is_dated_by_its_own_time_not_by_the_sample_that_first_shows_it():
    def committed(at, decision="timed-out"):
        w = wl()
        w["metadata"]["annotations"] = {DECISION_ANNOTATION: decision, DECISION_TIME_ANNOTATION: at}
        return Snapshot(workload=w)
    # the manager's watch shows the commit 1.5s after it was written: the commit is dated 10.25
    seen = [(1.0, Snapshot(workload=wl())), (11.75, committed("1970-01-01T00:00:10.250000Z")),
            (12.0, committed("1970-01-01T00:00:10.250000Z"))]
    assert C.committed_at(seen) == 10.25
    assert C.committed_at(seen[:1]) is None and C.committed_at([]) is None
    assert C.committed_at([(2.0, committed("1970-01-01T00:00:10Z", decision="admitted"))]) is None
    assert C.committed_at([(2.0, committed("not a time")), (3.0, committed("1970-01-01T00:00:03Z"))]) == 3.0


def test_settled_says_when_something_went_for_good_and_what_came_back_meanwhile():
    here, gone = Snapshot(workload=wl()), Snapshot()
    inactive = Snapshot(workload=wl(active=False))
    seen = vs(here, here, gone, inactive, gone, gone)
    at, back = C.settled(seen, 0.5, lambda v: v.workload is not None)
    assert at == 2.0 and back == [inactive]
    assert C.settled(seen, 2.1, lambda v: v.workload is not None) == (2.5, [])
    assert C.settled(vs(here, gone, here), 0.0, lambda v: v.workload is not None) == (None, [here])
    assert C.settled(vs(gone, gone), 0.0, lambda v: v.workload is not None) == (0.0, [])
    assert C.settled(seen, None, lambda v: True) == (None, [])


def test_throughout_needs_every_sample_of_a_covered_window():
    ok = vs(*[Snapshot()] * 11, step=0.5)                       # 0 .. 5s
    assert C.throughout(ok, 0.0, 5.0, lambda v: v.workload is None) == (True, "held at all 11 samples of the 5.0s window")
    assert C.throughout(ok, 0.5, 4.5, lambda v: True)[0]
    assert C.throughout(ok, 0.0, 5.0, lambda v: v.workload is None, max_gap=0.4) == (
        False, "the samples leave a gap of 0.5s (more than 0.4s) in the window")
    late = vs(*[Snapshot()] * 3, start=2.0)
    assert C.throughout(late, 0.0, 3.0, lambda v: True) == (
        False, "the samples leave a gap of 2.0s (more than 1s) in the window")
    assert C.throughout(ok, 0.0, 7.0, lambda v: True)[1] == "the samples leave a gap of 2.0s (more than 1s) in the window"
    broken = vs(Snapshot(), Snapshot(), Snapshot(workload=wl()), Snapshot())
    assert C.throughout(broken, 0.0, 1.5, lambda v: v.workload is None) == (False, "it did not hold 1.0s into the 1.5s window")
    assert C.throughout(ok, 9.0, 10.0, lambda v: True) == (False, "no sample between 9.0 and 10.0")
    assert C.throughout(ok, 3.0, 2.0, lambda v: True) == (False, "no sample between 3.0 and 2.0")
    assert C.throughout(vs(Snapshot()), 0.0, 0.0, lambda v: True) == (True, "held at all 1 samples of the 0.0s window")
    assert C.throughout(ok, 0.0, 5.0, lambda v: True, max_gap=0.5)[0], "a gap of exactly max_gap is covered"
    later = vs(Snapshot(), Snapshot(), Snapshot(workload=wl()), Snapshot(), start=10.0)
    assert C.throughout(later, 10.0, 11.5, lambda v: v.workload is None) == (
        False, "it did not hold 1.0s into the 1.5s window")
    assert C.throughout(later, 10.0, 11.0, lambda v: True) == (True, "held at all 3 samples of the 1.0s window")


def test_the_worker_that_admitted_first():
    by = {"worker-1": vs(Snapshot(), Snapshot(), Snapshot(workload=wl(admitted=True))),
          "worker-2": vs(Snapshot(), Snapshot(workload=wl(admitted=True)))}
    assert C.admitted_first(by) == ("worker-2", 0.5)
    assert C.admitted_first({"w": vs(Snapshot())}) is None
    assert C.admitted_first({}) is None


def test_quota_since():
    assert C.holds_quota_since(vs(Snapshot(workload=wl()), Snapshot(workload=wl(quota=True)))) == 0.5
    assert C.holds_quota_since(vs(Snapshot())) is None


# ---------------------------------------------------------------------------- a Job that ran on a worker

def test_a_job_ran_when_unsuspended_with_a_pod_running_or_done():
    assert C.ran(Snapshot(job=job(), pods=[pod("a")]))
    assert C.ran(Snapshot(job=job(), pods=[pod("a", phase="Succeeded")]))
    assert not C.ran(Snapshot(job=job(), pods=[pod("a", phase="Pending")]))
    assert not C.ran(Snapshot(job=job(suspend=True), pods=[pod("a")]))
    assert not C.ran(Snapshot(job=None, pods=[pod("a")]))
    assert not C.ran(Snapshot(job=job()))


def test_a_job_that_ran_and_finished_then_went_is_undisturbed():
    manager = vs(Snapshot(job=job(suspend=True)), Snapshot(job=job()), Snapshot(job=job(done=True)))
    worker = vs(Snapshot(job=job(), pods=[pod("a")]), Snapshot(job=job(done=True)), Snapshot(job=None))
    assert C.disturbed(manager, {"worker-1": worker, "worker-2": vs(Snapshot())}) == []


def test_a_job_that_never_ran_is_not_judged():
    marked = vs(Snapshot(job=job(marked=True)))
    pending = Snapshot(job=job(), pods=[pod("a", phase="Pending")])
    assert C.disturbed(marked, {"worker-1": vs(pending, Snapshot())}) == []


@pytest.mark.parametrize("manager_job, says", [(job(marked=True), "reported failed or timed out"),
                                               (failed_job(), "reported failed or timed out")])
def test_a_job_that_ran_on_a_worker_is_never_reported_failed_on_the_manager(manager_job, says):
    worker = vs(Snapshot(job=job(), pods=[pod("a")]), Snapshot(job=job(done=True)))
    out = C.disturbed(vs(Snapshot(job=job()), Snapshot(job=manager_job)), {"worker-2": worker})
    assert out == [f"the Job ran on worker-2, yet the manager's Job was {says}"]


def test_a_job_that_ran_on_a_worker_is_never_deleted_there_before_it_finished():
    worker = vs(Snapshot(job=job(), pods=[pod("a")]), Snapshot(job=None), Snapshot(job=None))
    assert C.disturbed(vs(Snapshot(job=job())), {"worker-1": worker}) == [
        "the Job ran on worker-1 and was deleted there before it finished"]
    deleting = vs(Snapshot(job=job(), pods=[pod("a")]), Snapshot(job=job(deleting=True)))
    assert C.disturbed(vs(Snapshot(job=job())), {"worker-1": deleting}) == [
        "the Job ran on worker-1 and was being deleted there before it finished"]
    done_then_deleted = vs(Snapshot(job=job(), pods=[pod("a")]), Snapshot(job=job(done=True, deleting=True)))
    assert C.disturbed(vs(Snapshot(job=job())), {"worker-1": done_then_deleted}) == []
    not_there_yet = vs(Snapshot(job=None), Snapshot(job=None), Snapshot(job=job(), pods=[pod("a")]),
                       Snapshot(job=job(done=True)))
    assert C.disturbed(vs(Snapshot(job=job())), {"worker-1": not_there_yet}) == []


def test_every_worker_the_job_ran_on_is_judged():
    ran_and_deleted = vs(Snapshot(job=job(), pods=[pod("a")]), Snapshot(job=None))
    assert C.disturbed(vs(Snapshot(job=job())), {"worker-1": vs(Snapshot()), "worker-2": ran_and_deleted}) == [
        "the Job ran on worker-2 and was deleted there before it finished"]


# ---------------------------------------------------------------------------- who wrote the conditions

def test_conditions_written_per_worker_and_condition():
    a = pr(1, conditions=("Accepted", "Provisioned"), writers={"Accepted": FAKE_CA_FIELD_MANAGER,
                                                               "Provisioned": FAKE_CA_FIELD_MANAGER})
    b = pr(1, conditions=("Provisioned",), writers={"Provisioned": "kubectl-edit"})
    by = {"worker-1": vs(Snapshot(provreqs=[a]), Snapshot(provreqs=[a])), "worker-2": vs(Snapshot(provreqs=[b, pr(2)]))}
    writers = C.conditions_written(by)
    assert writers == {"worker-1 Accepted": {FAKE_CA_FIELD_MANAGER}, "worker-1 Provisioned": {FAKE_CA_FIELD_MANAGER},
                       "worker-2 Provisioned": {"kubectl-edit"}}
    assert C.not_written_by(writers, {FAKE_CA_FIELD_MANAGER}) == ["worker-2 Provisioned by kubectl-edit"]
    assert C.not_written_by({"w Failed": set()}, {FAKE_CA_FIELD_MANAGER}) == ["w Failed by nobody known"]
    assert C.not_written_by({"w Failed": {FAKE_CA_FIELD_MANAGER, "x"}}, [FAKE_CA_FIELD_MANAGER]) == [
        "w Failed by fake-ca, x"]
    assert C.not_written_by(writers, {FAKE_CA_FIELD_MANAGER, "kubectl-edit"}) == []


# ---------------------------------------------------------------------------- kubernetes-sigs/kueue#8089

def test_the_dispatch_followed_the_worker_that_admitted_first():
    manager = vs(Snapshot(workload=wl(quota=True, nominated=("worker-1", "worker-2"))),
                 Snapshot(workload=wl(quota=True, admitted=True, cluster="worker-2")))
    by = {"worker-1": vs(Snapshot(workload=wl(quota=True)), Snapshot(workload=None), start=10.0),
          "worker-2": vs(Snapshot(workload=wl()), Snapshot(workload=wl(quota=True)),
                         Snapshot(workload=wl(admitted=True)), start=10.0)}
    d = C.stuck_dispatch(manager, by, "worker-1", t0=9.0)
    assert d == C.Dispatch(False, "the manager followed worker-2, the worker that admitted first (0.50s after its "
                                  "quota), not the stocked-out worker-1 (quota reserved: worker-1 at 1.00s, worker-2 "
                                  "at 1.50s)")


def test_the_dispatch_stuck_on_the_stocked_out_worker_reproduces_the_report():
    manager = vs(Snapshot(workload=wl(quota=True, cluster="worker-1")), Snapshot(workload=wl(quota=True)))
    by = {"worker-1": vs(Snapshot(workload=wl(quota=True))), "worker-2": vs(Snapshot())}
    assert C.stuck_dispatch(manager, by, "worker-1") == C.Dispatch(
        True, "the manager placed the Workload on worker-1, which could not provision (quota reserved: worker-1 at "
              "0.00s, worker-2 never)")


def test_a_worker_admitted_but_the_manager_never_did_reproduces_the_report():
    by = {"worker-2": vs(Snapshot(workload=wl(quota=True, admitted=True)))}
    assert C.stuck_dispatch(vs(Snapshot(workload=wl(quota=True))), by, "worker-1") == C.Dispatch(
        True, "worker-2 admitted its copy but the manager's Workload was never admitted (quota reserved: worker-2 at "
              "0.00s)")


def test_no_worker_admitted_tells_nothing():
    d = C.stuck_dispatch(vs(Snapshot(workload=wl(quota=True))), {"worker-1": vs(Snapshot())}, "worker-1")
    assert d == C.Dispatch(False, "no worker admitted the Workload (quota reserved: worker-1 never): nothing to tell")


def test_an_admitted_manager_without_a_cluster_name_is_said():
    manager = vs(Snapshot(workload=wl(admitted=True)))
    by = {"worker-2": vs(Snapshot(workload=wl(admitted=True)))}
    assert "the manager followed ?, the worker that admitted first (0.00s after its quota)" in \
        C.stuck_dispatch(manager, by, "worker-1").evidence


# ---------------------------------------------------------------------------- what ran where

def test_job_uids_nodes_made_for_its_requests_and_where_its_pods_ran():
    mine = pr(1, uid="p1")
    seen = vs(Snapshot(job=job(uid="j1"), provreqs=[mine], nodes=[node("n1", "p1"), node("n2", "other"), node("n3")]),
              Snapshot(job=job(uid="j2"), pods=[pod("a", node="n1"), pod("b")]), Snapshot())
    assert C.job_uids(seen) == {"j1", "j2"}
    assert C.nodes_for(seen) == {"n1"}
    assert C.pods_on(seen) == {"n1"}
    assert C.nodes_for(vs(Snapshot(nodes=[node("n1", "p1")]))) == set()
