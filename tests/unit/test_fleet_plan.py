"""The fleet's plan (fleet/spec.py) and its event log (fleet/events.py) to the letter, on plain data: the bounds of
every setting at their edges and the exact refusal, the shapes' parser, the arrivals, the documents the run makes,
the summary's lines; a record of every kind with every field, a request's state, and the fold's first sightings
(records of other gangs, DELETED records, pods not all running)."""

from __future__ import annotations

import random

import pytest

from demo.jobs.preflight import Gang
from fleet import events
from fleet.spec import (FleetError, as_run, FleetSpec, GangPlan, Plan, arrivals, parse_shapes, plan, pools_document,
                        refusals, summary, taucluster, validate, without_check)


# ---------------------------------------------------------------------------- the settings

@pytest.mark.parametrize("spec", [
    FleetSpec(gangs=1), FleetSpec(gangs=5000), FleetSpec(queues=1, pools=1), FleetSpec(queues=50),
    FleetSpec(queues=20, pools=20), FleetSpec(queues=3, pools=3), FleetSpec(arrival="poisson", rate=0.001),
    FleetSpec(arrival="burst", rate=0), FleetSpec(stockout=(0, 1)), FleetSpec(boot=0, run=0),
    FleetSpec(deadline=None), FleetSpec(deadline=0.001), FleetSpec(pool_max=0, gpu_quota=0),
])
def test_settings_at_the_edges_of_their_range_are_valid(spec):
    assert validate(spec) is None


@pytest.mark.parametrize("spec, message", [
    (FleetSpec(gangs=0), "--gangs 0: must be 1..5000"),
    (FleetSpec(gangs=5001), "--gangs 5001: must be 1..5000"),
    (FleetSpec(queues=0, pools=0), "--queues 0: must be 1..50"),
    (FleetSpec(queues=51), "--queues 51: must be 1..50"),
    (FleetSpec(queues=1, pools=0), "--pools 0: must be 1..20"),
    (FleetSpec(queues=21, pools=21), "--pools 21: must be 1..20"),
    (FleetSpec(queues=2, pools=3), "--queues 2 --pools 3: every pool needs a queue that draws on it (queue q draws "
                                   "on pool q mod P), so give at least as many queues as pools"),
    (FleetSpec(arrival="trickle"), "--arrival 'trickle': must be one of burst, poisson"),
    (FleetSpec(arrival="poisson", rate=0), "--rate 0: a Poisson stream needs a rate above 0 gangs a second"),
    (FleetSpec(arrival="poisson", rate=-1.5), "--rate -1.5: a Poisson stream needs a rate above 0 gangs a second"),
    (FleetSpec(stockout=(2,)), "--stockout 2: no such pool (pools are numbered 0..1)"),
    (FleetSpec(stockout=(0, -1)), "--stockout -1: no such pool (pools are numbered 0..1)"),
    (FleetSpec(boot=-0.5), "--boot and --run must be 0 or more seconds, --deadline more than 0"),
    (FleetSpec(run=-0.5), "--boot and --run must be 0 or more seconds, --deadline more than 0"),
    (FleetSpec(deadline=0), "--boot and --run must be 0 or more seconds, --deadline more than 0"),
    (FleetSpec(deadline=-1), "--boot and --run must be 0 or more seconds, --deadline more than 0"),
    (FleetSpec(pool_max=-1), "--pool-max and --gpu-quota must be 0 or more"),
    (FleetSpec(gpu_quota=-1), "--pool-max and --gpu-quota must be 0 or more"),
])
def test_a_setting_out_of_range_is_refused_in_so_many_words(spec, message):
    with pytest.raises(FleetError) as e:
        validate(spec)
    assert str(e.value) == message
    with pytest.raises(FleetError):
        plan(spec)


def test_the_first_setting_out_of_range_is_the_one_named():
    with pytest.raises(FleetError) as e:
        validate(FleetSpec(gangs=0, queues=0, pools=0))
    assert str(e.value) == "--gangs 0: must be 1..5000"


# ---------------------------------------------------------------------------- the shapes

def test_shapes_parse_to_their_canonical_names_and_weights():
    assert parse_shapes(" 2X8 : 3 ,, 1×8, 4x8:") == (("2x8", 3), ("1x8", 1), ("4x8", 1))
    assert parse_shapes("1x8:10,") == (("1x8", 10),)
    assert parse_shapes("1x8:007") == (("1x8", 7),)
    assert parse_shapes("1x8: 2 ") == (("1x8", 2),)


@pytest.mark.parametrize("text, message", [
    ("", "--shapes '': give at least one shape, e.g. 1x8:1,2x8:2,4x8:1"),
    (" , ,", "--shapes ' , ,': give at least one shape, e.g. 1x8:1,2x8:2,4x8:1"),
    ("2y8", "--shapes '2y8': '2y8': expected PODSxGPUS, e.g. 2x8"),
    ("1x8,0x8:2", "--shapes '1x8,0x8:2': '0x8': a gang of 0 pods runs nothing; give 1..1000 pods, e.g. 2x8"),
    ("2x8:x", "--shapes '2x8:x': the weight after '2x8' must be a whole number"),
    (" 2x8 :-1", "--shapes ' 2x8 :-1': the weight after '2x8' must be a whole number"),
    ("2x8:1.5", "--shapes '2x8:1.5': the weight after '2x8' must be a whole number"),
    ("2x8 :0", "--shapes '2x8 :0': the weight of '2x8' must be at least 1"),
])
def test_shapes_that_make_no_sense_are_refused_in_so_many_words(text, message):
    with pytest.raises(FleetError) as e:
        parse_shapes(text)
    assert str(e.value) == message
    assert e.value.__cause__ is None


# ---------------------------------------------------------------------------- the arrivals and the plan

def test_a_burst_arrives_at_zero_and_a_poisson_stream_at_the_seeded_gaps():
    assert arrivals(FleetSpec(gangs=3), random.Random(5)) == [0.0, 0.0, 0.0]
    spec = FleetSpec(gangs=4, arrival="poisson", rate=3.0)
    expect, rng, t = [], random.Random(5), 0.0
    for _ in range(4):
        expect.append(round(t, 3))
        t += rng.expovariate(3.0)
    assert arrivals(spec, random.Random(5)) == expect == [0.0, 0.325, 0.776, 1.305]
    assert arrivals(FleetSpec(gangs=1, arrival="poisson"), random.Random(5)) == [0.0]


def test_the_plan_is_drawn_from_the_seed_to_the_letter():
    p = plan(FleetSpec(gangs=6, queues=3, pools=2, seed=1))
    one, two, four = Gang(1, 8), Gang(2, 8), Gang(4, 8)
    assert p.gangs == (GangPlan("fleet-0000", one, 0, 0, 0.0), GangPlan("fleet-0001", two, 1, 1, 0.0),
                       GangPlan("fleet-0002", four, 1, 1, 0.0), GangPlan("fleet-0003", two, 0, 0, 0.0),
                       GangPlan("fleet-0004", one, 0, 0, 0.0), GangPlan("fleet-0005", four, 1, 1, 0.0))
    assert p.pool_max == (4, 10) and p.gpu_quota == (32, 80, 0) and p.refused == ()
    assert [g.gpus for g in p.gangs] == [8, 16, 32, 16, 8, 32]
    assert [p.pool_of_queue(q) for q in range(5)] == [0, 1, 0, 1, 0]
    poisson = plan(FleetSpec(gangs=4, queues=2, pools=2, arrival="poisson", rate=2.5, seed=1))
    assert [g.at for g in poisson.gangs] == [0.0, 0.058, 0.81, 1.387]


def test_the_settings_override_what_the_gangs_need_and_a_stockout_pool_holds_nothing():
    p = plan(FleetSpec(gangs=6, queues=3, pools=2, seed=1, pool_max=7, gpu_quota=40, stockout=(1,)))
    assert p.pool_max == (7, 0) and p.gpu_quota == (40, 40, 40)
    p = plan(FleetSpec(gangs=6, queues=3, pools=2, seed=1, stockout=(0,)))
    assert p.pool_max == (0, 10) and p.refused == ()
    assert plan(FleetSpec(gangs=6, queues=3, pools=2, seed=1, pool_max=0)).pool_max == (0, 0)


def test_the_refusals_to_the_letter_each_kind_once_and_sorted():
    p = plan(FleetSpec(gangs=6, queues=3, pools=2, seed=1, pool_max=3, gpu_quota=9))
    assert p.refused == ("a 4x8 gang asks for 32 GPUs; the whole cohort holds 27 (--gpu-quota)",
                         "a 4x8 gang of queue 1 needs 4 nodes of pool 1, which holds at most 3 (--pool-max)")
    wide = plan(FleetSpec(gangs=2, queues=1, pools=1, shapes=(("1x16", 1),)))
    assert wide.refused == ("a 1x16 gang's pods ask for 16 GPUs each; a node of every pool has 8",)


def test_a_gang_that_just_fits_its_pool_and_its_cohort_is_not_refused():
    gangs = (GangPlan("a", Gang(4, 8), 0, 0, 0.0), GangPlan("b", Gang(3, 8), 1, 1, 0.0))
    fits = Plan(FleetSpec(gangs=2, pools=2), gangs, (4, 3), (16, 16))
    assert refusals(fits) == []
    assert refusals(Plan(FleetSpec(gangs=2, pools=2), gangs, (4, 2), (16, 16))) == [
        "a 3x8 gang of queue 1 needs 3 nodes of pool 1, which holds at most 2 (--pool-max)"]
    assert refusals(Plan(FleetSpec(gangs=2, pools=2, stockout=(1,)), gangs, (4, 0), (16, 16))) == []
    assert refusals(Plan(FleetSpec(gangs=2, pools=2), gangs, (4, 3), (16, 15))) == [
        "a 4x8 gang asks for 32 GPUs; the whole cohort holds 31 (--gpu-quota)"]


# ---------------------------------------------------------------------------- what the run makes

def _pool(j, most, boot):
    return {"name": f"fleet-p{j}", "minNodes": 0, "maxNodes": most, "namePrefix": f"kwok-fleet-p{j}-vmss",
            "labels": {"agentpool": f"fleet-p{j}", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
            "taints": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}],
            "capacity": {"cpu": "96", "memory": "900Gi", "nvidia.com/gpu": "8", "pods": "110"},
            "allocatable": {"cpu": "94", "memory": "880Gi", "nvidia.com/gpu": "8", "pods": "110"},
            "bootSeconds": boot}


def _profile(q, pool, quota):
    return {"name": f"fleet-q{q}", "namespaces": ["fleet"], "clusterQueue": f"fleet-q{q}", "cohort": "fleet",
            "admissionCheck": "fleet-provisioning", "gpuQuota": quota,
            "provisioningClass": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
            "flavor": {"name": f"fleet-p{pool}", "nodeLabels": {"agentpool": f"fleet-p{pool}"},
                       "tolerations": [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]},
            "retryStrategy": {"backoffLimitCount": 2, "backoffBaseSeconds": 5, "backoffMaxSeconds": 20}}


def test_the_pools_document_and_the_taucluster_to_the_letter():
    p = plan(FleetSpec(gangs=6, queues=3, pools=2, seed=1, boot=7.5, stockout=(1,)))
    assert pools_document(p) == {"apiVersion": "tau-demo.io/v1", "kind": "NodePoolList",
                                 "pools": [_pool(0, 4, 7.5), _pool(1, 0, 7.5)]}
    assert taucluster(p) == {"apiVersion": "tau-demo.io/v1alpha1", "kind": "TauCluster",
                             "metadata": {"name": "fleet"},
                             "spec": {"mode": "Manage", "profiles": [_profile(0, 0, 32), _profile(1, 1, 80),
                                                                     _profile(2, 0, 0)]}}


def test_without_the_check_drops_the_check_its_config_and_duplicates_and_keeps_the_rest():
    cq = {"kind": "ClusterQueue", "metadata": {"name": "q"},
          "spec": {"cohortName": "fleet", "admissionChecksStrategy": {"x": 1}, "resourceGroups": []}}
    lq0 = {"kind": "LocalQueue", "metadata": {"name": "q", "namespace": "a"}, "spec": {}}
    lq1 = {"kind": "LocalQueue", "metadata": {"name": "q", "namespace": "b"}, "spec": {}}
    flavor = {"kind": "ResourceFlavor", "metadata": {"name": "q"}, "spec": {"admissionChecksStrategy": "kept"}}
    check = {"kind": "AdmissionCheck", "metadata": {"name": "c"}, "spec": {}}
    config = {"kind": "ProvisioningRequestConfig", "metadata": {"name": "c"}, "spec": {}}
    out = without_check([check, cq, config, lq0, flavor, lq1, dict(lq0), dict(cq), flavor])
    assert out == [{"kind": "ClusterQueue", "metadata": {"name": "q"},
                    "spec": {"cohortName": "fleet", "resourceGroups": []}}, lq0, flavor, lq1]
    assert "admissionChecksStrategy" in cq["spec"]          # the caller's object is not changed
    assert without_check([]) == []


def test_the_summary_to_the_letter():
    p = plan(FleetSpec(gangs=6, queues=3, pools=2, seed=1))
    assert summary(p, "fake") == [
        "6 gangs (2 × 1x8, 2 × 2x8, 2 × 4x8; 14 pods, 112 GPUs), submitted all at once",
        "3 ClusterQueues in cohort fleet (GPU quota 32, 80, 0), 2 pools of 8-GPU nodes (maxNodes 4, 10)",
        "each pod runs 20s; nodes boot in 15s; admission deadline 300s"]
    p = plan(FleetSpec(gangs=4, queues=2, pools=2, arrival="poisson", rate=2.5, boot=7.5, run=0, deadline=None,
                       stockout=(0, 1)))
    assert summary(p, "fake") == [
        "4 gangs (3 × 2x8, 1 × 4x8; 10 pods, 80 GPUs), submitted a Poisson stream of 2.5 a second",
        "2 ClusterQueues in cohort fleet (GPU quota 32, 48), 2 pools of 8-GPU nodes (maxNodes 0, 0; out of stock: "
        "fleet-p0, fleet-p1)",
        "each pod runs 0s; nodes boot in 7.5s; no admission deadline"]
    odd = Plan(FleetSpec(gangs=2, run=1.25, deadline=0.5), (GangPlan("a", Gang(3, 2), 0, 0, 0.0),
                                                            GangPlan("b", Gang(1, 8), 1, 1, 0.0)), (3, 1), (6, 8))
    assert summary(odd, "fake") == [
        "2 gangs (1 × 1x8, 1 × 3x2; 4 pods, 14 GPUs), submitted all at once",
        "2 ClusterQueues in cohort fleet (GPU quota 6, 8), 2 pools of 8-GPU nodes (maxNodes 3, 1)",
        "each pod runs 1.25s; nodes boot in 15s; admission deadline 0.5s"]
    assert summary(odd, "real")[2] == ("each pod runs 1.25s; nodes Ready at once (the real autoscaler's kwok nodes; "
                                       "--boot 15s is the fake's); admission deadline 0.5s")


def test_a_real_run_s_nodes_boot_at_once_so_it_matches_a_fake_run_of_boot_0():
    spec = {"gangs": 25, "boot": 15.0, "run": 20.0}
    assert as_run(spec, "real") == {"gangs": 25, "boot": 0.0, "run": 20.0}
    assert as_run(spec, "fake") == spec and as_run(spec, "fake") is not spec
    assert spec == {"gangs": 25, "boot": 15.0, "run": 20.0}          # the caller's spec is not changed
    assert as_run(spec, "real") == as_run({**spec, "boot": 0.0}, "fake")
    assert as_run(spec, "real") != as_run(spec, "fake")


# ---------------------------------------------------------------------------- a record of every kind

def _meta(name, **more):
    return {"name": name, "uid": f"uid-{name}", "resourceVersion": "41", **more}


def _cond(ctype, status, reason=None):
    c = {"type": ctype, "status": status}
    return {**c, "reason": reason} if reason is not None else c


BASE = {"t": 1.235, "type": "MODIFIED", "rv": 41, "deleting": False}


def test_a_job_record_to_the_letter():
    job = {"metadata": _meta("j", deletionTimestamp="2026-12-05T10:00:00Z",
                             annotations={"tau-demo.io/terminal-reason": "AdmissionTimeout"}),
           "spec": {"suspend": True}, "status": {"conditions": [_cond("Complete", "True")]}}
    assert events.record(1.23456, "Job", "MODIFIED", job) == {
        **BASE, "kind": "Job", "name": "j", "uid": "uid-j", "deleting": True,
        "outcome": "succeeded", "mirrored": True, "suspended": True}
    assert events.record(0.0004, "Job", "ADDED", {"metadata": {}}) == {
        "t": 0.0, "kind": "Job", "type": "ADDED", "name": "", "rv": 0, "uid": "", "deleting": False,
        "outcome": None, "mirrored": False, "suspended": False}


def test_a_workload_record_to_the_letter():
    wl = {"metadata": _meta("w", ownerReferences=[{"kind": "Pod", "name": "not-me"}, {"kind": "Job", "name": "j"}],
                            annotations={"tau-demo.io/admission-decision": "timed-out",
                                         "tau-demo.io/admission-decision-time": "2026-12-05T10:00:05Z",
                                         "tau-demo.io/admission-decision-bound": "budget"}),
          "spec": {"active": False},
          "status": {"conditions": [_cond("QuotaReserved", "True"), _cond("Admitted", "True"),
                                    _cond("Finished", "True")]}}
    assert events.record(1.23456, "Workload", "MODIFIED", wl) == {
        **BASE, "kind": "Workload", "name": "w", "uid": "uid-w", "owner": "j", "reserved": True, "admitted": True,
        "active": False, "finished": True, "timed_out": True, "decision": "timed-out",
        "decided_at": "2026-12-05T10:00:05Z", "bound": "budget"}
    bare = {"metadata": {"name": "w", "ownerReferences": [{"kind": "Job"}], "annotations": None}}
    assert events.record(2, "Workload", "ADDED", bare) == {
        "t": 2, "kind": "Workload", "type": "ADDED", "name": "w", "rv": 0, "uid": "", "deleting": False,
        "owner": "", "reserved": False, "admitted": False, "active": True, "finished": False, "timed_out": False,
        "decision": "", "decided_at": "", "bound": ""}
    assert events.record(2, "Workload", "ADDED", {"metadata": {"ownerReferences": None}})["owner"] == ""


def test_a_request_record_keeps_each_condition_it_knows_with_its_reason():
    obj = {"metadata": _meta("r", ownerReferences=[{"kind": "Job", "name": "j"}, {"kind": "Workload", "name": "w"}]),
           "status": {"conditions": [_cond("Other", "True", "x"), _cond("Provisioned", "False", "CapacityIsNotFound"),
                                     _cond("Accepted", "True"), _cond("BookingExpired", "True", ""),
                                     _cond("CapacityRevoked", "False", "r")]}}
    assert events.record(1.23456, "ProvisioningRequest", "MODIFIED", obj) == {
        **BASE, "kind": "ProvisioningRequest", "name": "r", "uid": "uid-r", "owner": "w",
        "conditions": {"Accepted": ["True", ""], "Provisioned": ["False", "CapacityIsNotFound"],
                       "BookingExpired": ["True", ""], "CapacityRevoked": ["False", "r"]}}
    assert events.record(1, "ProvisioningRequest", "DELETED", {"metadata": {"name": "r"}}) == {
        "t": 1, "kind": "ProvisioningRequest", "type": "DELETED", "name": "r", "rv": 0, "uid": "",
        "deleting": False, "owner": "", "conditions": {}}
    failed = {"metadata": {}, "status": {"conditions": [_cond("Failed", "True", "Nope")]}}
    assert events.record(1, "ProvisioningRequest", "MODIFIED", failed)["conditions"] == {"Failed": ["True", "Nope"]}


def test_a_pod_record_and_a_node_record_to_the_letter():
    pod = {"metadata": _meta("p", labels={"batch.kubernetes.io/job-name": "j"}), "spec": {"nodeName": "n1"},
           "status": {"phase": "Running"}}
    assert events.record(1.23456, "Pod", "MODIFIED", pod) == {
        **BASE, "kind": "Pod", "name": "p", "uid": "uid-p", "owner": "j", "phase": "Running", "node": "n1"}
    assert events.record(1, "Pod", "ADDED", {"metadata": {"name": "p"}, "spec": None}) == {
        "t": 1, "kind": "Pod", "type": "ADDED", "name": "p", "rv": 0, "uid": "", "deleting": False,
        "owner": "", "phase": "", "node": ""}
    node = {"metadata": _meta("n", labels={"cluster-autoscaler.kwok.nodegroup/name": "fleet-p1"},
                              creationTimestamp="2026-12-05T10:00:00Z",
                              annotations={"fake-ca.tau-demo.io/provreq-uid": "u1"}),
            "status": {"conditions": [_cond("Ready", "True")]}}
    assert events.record(1.23456, "Node", "MODIFIED", node) == {
        **BASE, "kind": "Node", "name": "n", "uid": "uid-n", "owner": "fleet-p1", "ready": True,
        "created": "2026-12-05T10:00:00Z", "provreq": "u1"}
    assert events.record(1, "Node", "DELETED", {"metadata": {"name": "n"}}) == {
        "t": 1, "kind": "Node", "type": "DELETED", "name": "n", "rv": 0, "uid": "", "deleting": False,
        "owner": "", "ready": False, "created": "", "provreq": ""}
    assert events.record(1, "Other", "ADDED", pod) == {
        "t": 1, "kind": "Other", "type": "ADDED", "name": "p", "rv": 41, "uid": "uid-p", "deleting": False}


@pytest.mark.parametrize("conds, state", [
    (None, "waiting"), ({}, "waiting"), ({"Accepted": ["False", "x"]}, "waiting"),
    ({"Accepted": ["True", ""]}, "accepted"),
    ({"Accepted": ["True", ""], "Provisioned": ["Unknown", ""]}, "accepted"),
    ({"Accepted": ["True", ""], "Provisioned": ["True", ""]}, "provisioned"),
    ({"Accepted": ["True", ""], "Provisioned": ["False", "x"]}, "refused"),
    ({"Provisioned": ["True", ""], "Failed": ["False", ""]}, "provisioned"),
    ({"Provisioned": ["False", ""], "Failed": ["True", ""]}, "failed"),
    ({"Failed": ["True", "x"]}, "failed"), ({"Failed": ["False", "x"]}, "waiting"),
    ({"Accepted": [], "Provisioned": [], "Failed": []}, "waiting"),
])
def test_where_a_request_stood(conds, state):
    assert events.provreq_state({"conditions": conds}) == state


def test_no_record_is_no_request():
    assert events.provreq_state(None) == "none"
    assert events.provreq_state({}) == "waiting"


# ---------------------------------------------------------------------------- the fold

def _r(t, kind, name, typ="MODIFIED", **kw):
    return {"t": t, "kind": kind, "type": typ, "name": name, **kw}


def test_a_gang_without_records_has_no_sightings():
    assert events.fold([], {"g": 3}) == {"g": events.Gang("g", 3)}
    g = events.fold([], {"g": 3})["g"]
    assert (g.submitted, g.reserved, g.requested, g.provisioned, g.admitted, g.running, g.succeeded, g.timed_out,
            g.cause, g.bound, g.workload, g.requests, g.pod_running) == \
           (None,) * 8 + ("", "", "", set(), {})
    assert events.fold([], {}) == {}


def test_each_phase_is_its_first_sighting_and_later_records_do_not_move_it():
    log = [_r(1, "Job", "g", "ADDED", outcome=None),
           _r(2, "Job", "g", outcome="failed"),
           _r(3, "Workload", "w", owner="g", reserved=False, admitted=False),
           _r(4, "Workload", "w", owner="g", reserved=True, admitted=False),
           _r(5, "ProvisioningRequest", "r", owner="w", uid="u1", conditions={"Accepted": ["True", ""]}),
           _r(6, "ProvisioningRequest", "r", owner="w", uid="u1", conditions={"Provisioned": ["True", ""]}),
           _r(7, "ProvisioningRequest", "r", owner="w", uid="u1", conditions={"Provisioned": ["True", ""]}),
           _r(8, "Workload", "w", owner="g", reserved=True, admitted=True),
           _r(9, "Workload", "w", owner="g", reserved=True, admitted=True),
           _r(10, "Pod", "p0", owner="g", phase="Running"),
           _r(11, "Pod", "p0", owner="g", phase="Running"),
           _r(12, "Pod", "p1", owner="g", phase="Running"),
           _r(13, "Pod", "p1", owner="g", phase="Running"),
           _r(14, "Job", "g", outcome="succeeded"),
           _r(15, "Job", "g", outcome="succeeded")]
    g = events.fold(log, {"g": 2})["g"]
    assert (g.submitted, g.reserved, g.requested, g.provisioned, g.admitted, g.running, g.succeeded) == \
           (1, 4, 5, 6, 8, 12, 14)
    assert g.pod_running == {"p0": 10, "p1": 12} and g.workload == "w" and g.requests == {"u1"}
    assert (g.timed_out, g.cause, g.bound) == (None, "", "")


def test_records_of_other_gangs_and_of_no_gang_are_not_folded():
    log = [_r(1, "Job", "other", "ADDED", outcome="succeeded"),
           _r(2, "Workload", "w-other", owner="other", reserved=True, admitted=True, timed_out=True, bound="b"),
           _r(3, "ProvisioningRequest", "r-early", owner="w", conditions={"Provisioned": ["True", ""]}),
           _r(4, "ProvisioningRequest", "r-other", owner="w-other", conditions={"Provisioned": ["True", ""]}),
           _r(5, "Pod", "p-other", owner="other", phase="Running"),
           _r(6, "Pod", "p-none", phase="Running"),
           _r(7, "Workload", "w-none", reserved=True),
           _r(8, "Node", "g", owner="g"),
           _r(9, "Workload", "w", owner="g"),
           _r(10, "ProvisioningRequest", "r", owner="w", conditions={})]
    out = events.fold(log, {"g": 1})
    assert list(out) == ["g"]
    g = out["g"]
    assert (g.submitted, g.reserved, g.admitted, g.succeeded, g.timed_out, g.running) == (None,) * 6
    assert (g.requested, g.provisioned, g.requests, g.workload, g.bound) == (10, None, {"r"}, "w", "")


def test_a_pod_counts_once_when_running_and_not_when_pending_or_deleted():
    log = [_r(1, "Pod", "p0", owner="g", phase="Pending"),
           _r(2, "Pod", "p0", "DELETED", owner="g", phase="Running"),
           _r(3, "Pod", "p1", owner="g", phase="Running"),
           _r(4, "Pod", "p1", owner="g", phase="Running"),
           _r(5, "Pod", "p2", owner="g", phase="Succeeded")]
    g = events.fold(log, {"g": 2})["g"]
    assert g.pod_running == {"p1": 3} and g.running is None
    g = events.fold(log + [_r(6, "Pod", "p0", owner="g", phase="Running"),
                           _r(7, "Pod", "p3", owner="g", phase="Running")], {"g": 2})["g"]
    assert g.pod_running == {"p1": 3, "p0": 6, "p3": 7} and g.running == 6
    assert events.fold([_r(1, "Pod", "p", owner="g", phase="Running")], {"g": 0})["g"].running == 1


def test_a_timeout_is_its_first_sighting_with_the_state_of_the_latest_live_request():
    log = [_r(1, "Workload", "w", owner="g", timed_out=False, bound="ignored"),
           _r(2, "ProvisioningRequest", "r", owner="w", uid="u1", conditions={"Accepted": ["True", ""]}),
           _r(3, "ProvisioningRequest", "r", "DELETED", owner="w", uid="u1",
              conditions={"Provisioned": ["False", "x"]}),
           _r(4, "Workload", "w", owner="g", timed_out=True, bound=""),
           _r(5, "ProvisioningRequest", "r", owner="w", uid="u2", conditions={"Provisioned": ["False", "x"]}),
           _r(6, "Workload", "w", owner="g", timed_out=True, bound="budget")]
    g = events.fold(log, {"g": 1})["g"]
    assert (g.timed_out, g.cause, g.bound) == (4, "accepted", "budget")
    assert g.requests == {"u1", "u2"} and g.requested == 2 and g.provisioned is None
    assert events.fold(log[:5], {"g": 1})["g"].bound == ""
    g = events.fold(log + [_r(7, "Workload", "w", owner="g", timed_out=True, bound="queue"),
                           _r(8, "Workload", "w", owner="g", timed_out=False, bound="late")], {"g": 1})["g"]
    assert (g.timed_out, g.cause, g.bound) == (4, "accepted", "queue")


def test_the_cause_is_the_request_of_the_gangs_own_workload():
    log = [_r(1, "Workload", "w1", owner="g"),
           _r(2, "ProvisioningRequest", "r1", owner="w1", conditions={"Provisioned": ["True", ""]}),
           _r(3, "Workload", "w2", owner="g"),
           _r(4, "Workload", "w2", owner="g", timed_out=True)]
    g = events.fold(log, {"g": 1})["g"]
    assert (g.timed_out, g.cause, g.workload, g.provisioned) == (4, "none", "w2", 2)
    g = events.fold(log[:2] + [_r(4, "Workload", "w1", owner="g", timed_out=True)], {"g": 1})["g"]
    assert (g.cause, g.workload) == ("provisioned", "w1")


def test_a_request_deleted_provisioned_still_counts_as_requested_and_provisioned():
    log = [_r(1, "Workload", "w", owner="g"),
           _r(2, "ProvisioningRequest", "r", "DELETED", owner="w", uid="",
              conditions={"Provisioned": ["True", ""]})]
    g = events.fold(log, {"g": 1})["g"]
    assert (g.requested, g.provisioned, g.requests) == (2, 2, {"r"})
