"""demo.jobs.snapshot.assemble: which of a cluster's objects are one Job's (plain objects, no cluster)."""

from __future__ import annotations

import copy

from demo.jobs.snapshot import Snapshot, assemble
from k8s.keys import JOB_CONTROLLER_UID_LABEL

import k8s_objects as K


def labelled_pod(index: int, job_uid: str = K.JOB_UID) -> dict:
    p = K.pod(index)
    p["metadata"]["labels"][JOB_CONTROLLER_UID_LABEL] = job_uid
    return p


def recreated_job() -> dict:
    """The same name, another incarnation."""
    j = K.job()
    j["metadata"]["uid"] = "another-uid"
    return j


def other_workload() -> dict:
    """A Workload of another Job."""
    w = K.workload()
    w["metadata"].update(name="job-other-1a2b3", uid="wl-other")
    w["metadata"]["ownerReferences"][0].update(name="other", uid="other-job-uid")
    return w


def test_a_job_with_its_workload_requests_pods_and_every_node():
    wl, mine, theirs = K.workload(), K.provreq(1), K.provreq(1, wl_name="job-other-1a2b3", wl_uid="wl-other")
    nodes = [K.node("n1"), K.node("n2")]
    pods = [labelled_pod(0), labelled_pod(1, "other-job-uid"), K.pod(2)]
    snap = assemble(K.JOB_NAME, None, [K.job()], [other_workload(), wl], [theirs, mine], pods, nodes)
    assert snap == Snapshot(K.job(), wl, [mine], [pods[0]], nodes)
    assert snap.nodes is not nodes                      # a copy: the caller's list may change under it


def test_only_the_job_of_the_given_uid_counts():
    seen = [recreated_job(), K.job()]
    assert assemble(K.JOB_NAME, K.JOB_UID, seen, [], [], [], []).job == K.job()
    assert assemble(K.JOB_NAME, K.JOB_UID, [recreated_job()], [K.workload()], [K.provreq(1)], [], []) == Snapshot()
    assert assemble(K.JOB_NAME, None, [recreated_job()], [], [], [], []).job == recreated_job()
    other = K.job()
    other["metadata"]["name"] = "other"
    assert assemble(K.JOB_NAME, None, [other], [], [], [], []).job is None


def test_without_the_job_there_is_no_workload_nor_request_but_its_pods_and_the_nodes_stay():
    pods, nodes = [labelled_pod(0)], [K.node("n1")]
    snap = assemble(K.JOB_NAME, K.JOB_UID, [], [K.workload()], [K.provreq(1)], pods, nodes)
    assert snap == Snapshot(None, None, [], pods, nodes)
    assert assemble(K.JOB_NAME, None, [], [K.workload()], [K.provreq(1)], pods, nodes) == Snapshot(nodes=nodes)


def test_a_job_without_a_workload_has_no_requests():
    snap = assemble(K.JOB_NAME, None, [K.job()], [other_workload()], [K.provreq(1)], [], [])
    assert (snap.workload, snap.provreqs) == (None, [])


def test_the_newest_workload_and_the_requests_oldest_attempt_first():
    old, new = K.workload(), copy.deepcopy(K.workload())
    new["metadata"].update(name="job-train-llm-newer", uid="wl-newer", creationTimestamp=K.ts(50))
    first, second = (K.provreq(n, wl_name="job-train-llm-newer", wl_uid="wl-newer") for n in (1, 2))
    snap = assemble(K.JOB_NAME, None, [K.job()], [new, old], [second, K.provreq(1), first], [], [])
    assert snap.workload == new
    assert snap.provreqs == [first, second]


def test_a_request_is_the_workloads_by_its_owner_or_by_its_name_for_the_demo_check():
    by_name = K.provreq(1)
    del by_name["metadata"]["ownerReferences"]
    other_check = K.provreq(5)
    other_check["metadata"]["name"] = f"{K.WL_NAME}-other-check-5"
    snap = assemble(K.JOB_NAME, None, [K.job()], [K.workload()], [K.provreq(2), by_name, other_check], [], [])
    assert snap.provreqs == [other_check, by_name, K.provreq(2)]      # the other check's has no attempt number


def test_pods_need_the_job_uid_label():
    unlabelled = K.pod(0)
    empty_uid_job = K.job()
    empty_uid_job["metadata"]["uid"] = ""
    blank = labelled_pod(1, "")
    assert assemble(K.JOB_NAME, None, [empty_uid_job], [], [], [unlabelled, blank], []).pods == []
    assert assemble(K.JOB_NAME, None, [K.job()], [], [], [unlabelled], []).pods == []
