"""Decisions and phases on Workloads and Jobs recorded from the real cluster."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from demo.deadline import protocol as dl
from demo.deadline.rule import DEFAULT_OUTER_FACTOR, DEFAULT_RULE, Bound, Cause, Waiting
from demo.jobs import phases
from k8s.objects import parse_time
from demo.jobs.snapshot import Snapshot

REC = {x["state"]: x for x in yaml.safe_load((Path(__file__).parent / "recorded" / "workloads.yaml").read_text())}


NO_REQUEST = dl.Counting(DEFAULT_RULE, DEFAULT_OUTER_FACTOR)     # the default rule; the deadline from submission


def with_deadline(job, seconds=20):
    job = yaml.safe_load(yaml.safe_dump(job))
    job["metadata"].setdefault("annotations", {})[dl.DEADLINE_ANNOTATION] = f"{seconds}s"
    return job


def created(job):
    return parse_time(job["metadata"]["creationTimestamp"])


@pytest.mark.parametrize("state", ["pending", "quota-reserved"])
def test_recorded_unadmitted_workload_is_committed_after_its_deadline(state):
    r = REC[state]
    job = with_deadline(r["job"])
    rv = r["workload"]["metadata"]["resourceVersion"]
    before = dl.decide_workload(job, r["workload"], created(job) + timedelta(seconds=5), NO_REQUEST)
    assert before == dl.Decision("wait", "deadline in 15.0s", after=15.0)
    after = dl.decide_workload(job, r["workload"], created(job) + timedelta(seconds=25), NO_REQUEST)
    assert after == dl.Decision("commit", f"deadline passed 5.0s ago; Workload rv {rv} not admitted; committing timeout",
                                resource_version=rv, cause=Cause(Bound.SUBMITTED, Waiting.QUOTA))


@pytest.mark.parametrize("state", ["admitted", "finished"])
def test_recorded_admitted_workload_is_never_timed_out(state):
    r = REC[state]
    job = with_deadline(r["job"], 1)
    for later in (5, 3600):
        now = created(job) + timedelta(seconds=later)
        rv = r["workload"]["metadata"]["resourceVersion"]
        assert dl.decide_workload(job, r["workload"], now, NO_REQUEST) == dl.Decision(
            "none", f"Workload rv {rv} is Admitted: admission won, no action")
        assert dl.decide_owner(job, r["workload"], now) == dl.Decision("none", "nothing to mirror")


def test_recorded_commit_with_kueues_loose_quota_write_still_counts_as_timeout():
    # Kueue's scheduler applied QuotaReserved=True after the commit (a loose SSA): judge the final state
    r = REC["committed-timeout"]
    wl = r["workload"]
    assert wl["spec"]["active"] is False and any(c["type"] == "QuotaReserved" and c["status"] == "True"
                                                 for c in wl["status"]["conditions"])
    # the reason pins the branch: the Workload is also inactive, which alone would give "none" too
    d = dl.decide_workload(r["job"], wl, created(r["job"]) + timedelta(hours=1), NO_REQUEST)
    assert d == dl.Decision("none", "timeout already committed on the Workload")


@pytest.mark.parametrize("state", ["committed-timeout", "committed-timeout-evicted"])
def test_recorded_committed_timeout_is_mirrored_to_its_job(state):
    r = REC[state]
    job = yaml.safe_load(yaml.safe_dump(r["job"]))
    for k in dl.MIRROR_KEYS:
        job["metadata"].get("annotations", {}).pop(k, None)
    wl_name = r["workload"]["metadata"]["name"]
    assert dl.decide_owner(job, r["workload"], created(job) + timedelta(minutes=1)) == dl.Decision(
        "mirror", f"Workload {wl_name} carries a committed timeout; mirroring it to the Job")


def test_recorded_deactivated_workload_fails_the_capacity_phase():
    r = REC["committed-timeout-evicted"]
    v = phases.derive(Snapshot(r["job"], r["workload"], [], [], []))
    assert v.outcome == "failed"
    assert v.phase("Capacity provisioning").state == "failed"
    assert "admission deadline passed" in v.phase("Capacity provisioning").detail


def test_recorded_quota_reserved_workload_waits_for_capacity():
    r = REC["quota-reserved"]
    v = phases.derive(Snapshot(r["job"], r["workload"], [], [], []))
    assert v.phase("Quota reserved").state == "done"
    assert v.phase("Quota reserved").detail == "16 nvidia.com/gpu on ClusterQueue gpu-a100 (flavor a100-scale)"
    assert v.phase("Capacity provisioning").state == "active"
    assert v.outcome == "waiting"


def test_recorded_finished_workload_is_done_through_capacity():
    r = REC["finished"]
    v = phases.derive(Snapshot(r["job"], r["workload"], [], [], []))
    assert [p.state for p in v.phases[:3]] == ["done", "done", "done"]
