"""The fleet's pure parts on plain data: the plan and its refusals, the event log's fold, the measures, the
invariants (each shown failing on a log that breaks it), the report."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

import pytest

from demo.taucluster.profile import objects, parse_all
from fleet import checks, events, measure, report
from fleet.run import autoscaler_argv, ca_log_path, progress_line, real_ca_loops, requests_by_verb
from fleet.spec import (COHORT, FleetError, FleetSpec, parse_shapes, plan, pool_name, pools_document, queue_name,
                        summary, taucluster, without_check)
from k8s.pools import parse_pools


# ---------------------------------------------------------------------------- the plan

def test_plan_is_drawn_from_the_seed_and_routes_queue_q_to_pool_q_mod_p():
    a, b = plan(FleetSpec(gangs=50, queues=3, pools=2, seed=7)), plan(FleetSpec(gangs=50, queues=3, pools=2, seed=7))
    assert a == b
    assert plan(FleetSpec(gangs=50, queues=3, pools=2, seed=8)).gangs != a.gangs
    assert all(g.pool == g.queue % 2 for g in a.gangs)
    assert {g.queue for g in a.gangs} == {0, 1, 2}
    assert {str(g.gang) for g in a.gangs} == {"1x8", "2x8", "4x8"}
    assert [g.name for g in a.gangs] == [f"fleet-{i:04d}" for i in range(50)]


def test_default_pools_and_quotas_hold_every_gang_at_once():
    p = plan(FleetSpec(gangs=40, queues=3, pools=2))
    for j in range(2):
        assert p.pool_max[j] == sum(g.gang.pods for g in p.gangs if g.pool == j)
    for q in range(3):
        assert p.gpu_quota[q] == sum(g.gpus for g in p.gangs if g.queue == q)
    assert p.refused == ()


def test_burst_arrives_at_zero_and_poisson_at_the_given_rate():
    assert {g.at for g in plan(FleetSpec(gangs=10)).gangs} == {0.0}
    at = sorted(g.at for g in plan(FleetSpec(gangs=2000, arrival="poisson", rate=4.0, seed=3)).gangs)
    assert at[0] == 0.0 and at == sorted(at)
    assert 1999 / at[-1] == pytest.approx(4.0, rel=0.1)


def test_a_stockout_pool_has_max_zero_and_is_not_refused():
    p = plan(FleetSpec(gangs=20, queues=2, pools=2, stockout=(1,)))
    assert p.pool_max[1] == 0 and p.pool_max[0] > 0
    assert p.refused == ()


@pytest.mark.parametrize("spec, says", [
    (FleetSpec(gangs=10, pool_max=1, shapes=(("2x8", 1),)), "needs 2 nodes of pool"),
    (FleetSpec(gangs=10, gpu_quota=3, shapes=(("1x8", 1),)), "the whole cohort holds 6"),
    (FleetSpec(gangs=3, shapes=(("1x16", 1),)), "a node of every pool has 8"),
])
def test_a_fleet_that_can_never_fit_is_refused_with_the_reason(spec, says):
    refused = plan(spec).refused
    assert refused and any(says in r for r in refused), refused


def test_a_fleet_that_just_fits_is_not_refused():
    assert plan(FleetSpec(gangs=10, pool_max=4, gpu_quota=16, shapes=(("4x8", 1),), queues=2, pools=1)).refused == ()
    assert plan(FleetSpec(gangs=10, pool_max=1000, shapes=(("1000x8", 1),), queues=1, pools=1,
                          gpu_quota=8000)).refused == ()


@pytest.mark.parametrize("spec, says", [
    (FleetSpec(gangs=0), "--gangs 0"), (FleetSpec(queues=1, pools=2), "at least as many queues"),
    (FleetSpec(arrival="trickle"), "--arrival"), (FleetSpec(arrival="poisson", rate=0), "--rate"),
    (FleetSpec(stockout=(2,)), "--stockout 2"), (FleetSpec(deadline=0), "--deadline"),
    (FleetSpec(pool_max=-1), "--pool-max"),
])
def test_settings_out_of_range_are_errors(spec, says):
    with pytest.raises(FleetError, match=says):
        plan(spec)


def test_shapes_parse_with_weights_and_refuse_nonsense():
    assert parse_shapes("1x8:1, 2x8:3,4x8") == (("1x8", 1), ("2x8", 3), ("4x8", 1))
    for bad, says in (("", "at least one"), ("2y8", "PODSxGPUS"), ("2x8:x", "whole number"), ("2x8:0", "at least 1")):
        with pytest.raises(FleetError, match=says):
            parse_shapes(bad)


def test_the_pools_and_the_taucluster_are_what_the_parsers_accept():
    p = plan(FleetSpec(gangs=30, queues=3, pools=2, boot=7, stockout=(1,)))
    pools = parse_pools(pools_document(p), "fleet")
    assert [x.name for x in pools] == [pool_name(0), pool_name(1)]
    assert [x.max_nodes for x in pools] == list(p.pool_max) and pools[0].boot_seconds == 7
    profiles = parse_all(taucluster(p)["spec"]["profiles"])
    assert [x.name for x in profiles] == [queue_name(q) for q in range(3)]
    assert {x.cohort for x in profiles} == {COHORT}
    cq = next(o for o in objects(profiles[2], "fleet") if o["kind"] == "ClusterQueue")
    assert cq["spec"]["cohortName"] == COHORT
    assert cq["spec"]["resourceGroups"][0]["flavors"][0]["name"] == pool_name(0)
    assert summary(p, "fake")[1].endswith("out of stock: fleet-p1)")


# ---------------------------------------------------------------------------- the event log

def rec(t, kind, name, typ="MODIFIED", **kw):
    return {"t": t, "kind": kind, "type": typ, "name": name, "rv": int(t * 10), "deleting": False, **kw}


def pr(t, name, owner, provisioned=None, accepted=None, failed=None, typ="MODIFIED"):
    conds = {}
    if accepted is not None:
        conds["Accepted"] = [accepted, ""]
    if provisioned is not None:
        conds["Provisioned"] = [provisioned, "Because"]
    if failed is not None:
        conds["Failed"] = [failed, ""]
    return rec(t, events.PROVREQ, name, typ, owner=owner, conditions=conds)


def wl(t, name, owner, **kw):
    base = dict(owner=owner, reserved=False, admitted=False, active=True, finished=False, timed_out=False)
    return rec(t, events.WORKLOAD, name, **{**base, **kw})


def pod(t, name, owner, phase="Running"):
    return rec(t, events.POD, name, owner=owner, phase=phase, node="n")


def node(t, name, pool="fleet-p0", typ="ADDED", created="2026-12-05T10:00:00Z", provreq=""):
    return rec(t, events.NODE, name, typ, owner=pool, ready=True, created=created, provreq=provreq)


def happy(job="g1", t=0.0, pods=2):
    return [rec(t, events.JOB, job, "ADDED", outcome=None, mirrored=False, suspended=True),
            wl(t + 1, f"wl-{job}", job),
            wl(t + 2, f"wl-{job}", job, reserved=True),
            pr(t + 3, f"pr-{job}", f"wl-{job}"),
            pr(t + 4, f"pr-{job}", f"wl-{job}", accepted="True"),
            node(t + 5, f"n-{job}-a", provreq=f"fleet/pr-{job}"), node(t + 5, f"n-{job}-b", provreq=f"fleet/pr-{job}"),
            pr(t + 6, f"pr-{job}", f"wl-{job}", accepted="True", provisioned="True"),
            wl(t + 7, f"wl-{job}", job, reserved=True, admitted=True),
            *[pod(t + 8 + i, f"{job}-p{i}", job) for i in range(pods)],
            rec(t + 20, events.JOB, job, outcome="succeeded", mirrored=False, suspended=False)]


def test_the_record_of_each_kind_keeps_what_the_measures_read():
    obj = {"metadata": {"name": "p", "resourceVersion": "12", "ownerReferences": [{"kind": "Workload", "name": "w"}]},
           "status": {"conditions": [{"type": "Provisioned", "status": "False", "reason": "CapacityIsNotFound"}]}}
    r = events.record(1.23456, events.PROVREQ, "MODIFIED", obj)
    assert r["t"] == 1.235 and r["rv"] == 12 and r["owner"] == "w"
    assert r["conditions"] == {"Provisioned": ["False", "CapacityIsNotFound"]}
    assert events.provreq_state(r) == "refused"
    p = events.record(2, events.POD, "ADDED", {"metadata": {"name": "x", "labels": {
        "batch.kubernetes.io/job-name": "g"}}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}})
    assert (p["owner"], p["phase"], p["node"]) == ("g", "Running", "n1")


@pytest.mark.parametrize("conds, state", [
    ({}, "waiting"), ({"Accepted": ["True", ""]}, "accepted"), ({"Provisioned": ["True", ""]}, "provisioned"),
    ({"Provisioned": ["False", "x"]}, "refused"), ({"Failed": ["True", ""], "Provisioned": ["True", ""]}, "failed"),
])
def test_a_requests_state(conds, state):
    assert events.provreq_state({"conditions": conds}) == state
    assert events.provreq_state(None) == "none"


def test_the_fold_gives_each_phase_its_first_sighting():
    g = events.fold(happy("g1", 10.0), {"g1": 2})["g1"]
    assert (g.submitted, g.reserved, g.requested, g.provisioned, g.admitted, g.running, g.succeeded) == \
           (10.0, 12.0, 13.0, 16.0, 17.0, 19.0, 30.0)
    assert g.timed_out is None and g.requests == {"pr-g1"}
    one_pod = events.fold(happy("g1", 10.0)[:-2], {"g1": 2})["g1"]
    assert one_pod.running is None          # one of its two pods ran: not all of them


def test_a_timeout_keeps_the_state_its_request_was_in():
    log = [rec(0, events.JOB, "g", "ADDED"), wl(1, "w", "g", reserved=True), pr(2, "r", "w"),
           wl(40, "w", "g", reserved=True, timed_out=True, active=False)]
    assert events.fold(log, {"g": 1})["g"].cause == "waiting"
    log[2] = pr(2, "r", "w", provisioned="False")
    assert events.fold(log, {"g": 1})["g"].cause == "refused"
    assert events.fold([log[0], log[1], log[3]], {"g": 1})["g"].cause == "none"


# ---------------------------------------------------------------------------- the measures

def test_percentiles_by_nearest_rank_and_rates_over_the_span():
    xs = list(range(1, 101))
    assert [measure.percentile(xs, q) for q in (50, 95, 99, 100)] == [50, 95, 99, 100]
    assert measure.percentile([], 50) is None and measure.percentile([7], 99) == 7
    assert measure.rate([0, 1, 2, 4]) == 0.75 and measure.rate([3]) is None and measure.rate([2, 2]) is None


def test_the_summary_of_two_gangs():
    log = sorted(happy("a", 0.0) + happy("b", 0.0, pods=1), key=lambda r: r["t"])
    gangs = events.fold(log, {"a": 2, "b": 1})
    m = measure.summary(gangs, log, set(), {"fleet-p0"})
    adm = next(p for p in m["phases"] if p["name"] == "Admitted")
    assert adm == {"name": "Admitted", "count": 2, "p50": 7.0, "p95": 7.0, "p99": 7.0}
    assert m["skew"]["gangs"] == 1 and m["skew"]["max"] == 1.0 and m["succeeded"] == 2
    assert m["peak_nodes"] == {"fleet-p0": 4} and m["firings"]["total"] == 0
    assert m["admission_cdf"] == [7.0, 7.0]


def test_firings_split_false_from_true_by_the_pool_and_by_cause():
    gangs = {"a": events.Gang("a", 1, submitted=0, timed_out=40, cause="waiting"),
             "b": events.Gang("b", 1, submitted=0, timed_out=41, cause="refused"),
             "c": events.Gang("c", 1, submitted=0)}
    assert measure.firings(gangs, {"b"}) == {"total": 2, "false": 1, "true": 1, "cause:waiting": 1,
                                             "cause:refused": 1}


def test_the_series_counts_nodes_pending_requests_and_admitted():
    log = [pr(1, "r", "w"), node(2, "n1"), node(2.5, "x", pool="other"), pr(3, "r", "w", provisioned="True"),
           wl(4, "w", "g", admitted=True), node(5, "n1", typ="DELETED")]
    assert measure.series(log, {"fleet-p0"}) == [(1, 0, 1, 0), (2, 1, 1, 0), (3, 1, 0, 0), (4, 1, 0, 1),
                                                 (5, 0, 0, 1)]
    many = [node(i, f"n{i}") for i in range(1000)]
    thin = measure.series(many, {"fleet-p0"})
    assert len(thin) == measure.SERIES_POINTS + 1 and thin[-1] == (999, 1000, 0, 0)


# ---------------------------------------------------------------------------- the invariants

def verdicts(log, pods, pool_max=None):
    gangs = events.fold(log, pods)
    peaks = {p: measure.peak_nodes(log, p) for p in (pool_max or {"fleet-p0": 10})}
    return {v.name: v for v in checks.all_checks(log, gangs, peaks, pool_max or {"fleet-p0": 10})}


def test_a_clean_run_passes_every_check():
    assert all(v.ok for v in verdicts(happy("a"), {"a": 2}).values())


def test_a_committed_timeout_that_runs_fails():
    log = [rec(0, events.JOB, "g", "ADDED"), wl(1, "w", "g", timed_out=True, active=False), pod(2, "g-p0", "g")]
    assert not verdicts(log, {"g": 1})["a committed timeout never runs"].ok
    log[2] = wl(2, "w", "g", timed_out=True, admitted=True)
    assert not verdicts(log, {"g": 1})["a committed timeout never runs"].ok


@pytest.mark.parametrize("end", [dict(mirrored=True), dict(outcome="failed"), dict(typ="DELETED")])
def test_a_running_job_mirrored_failed_or_deleted_fails(end):
    log = happy("a")[:-1] + [rec(30, events.JOB, "a", **{"outcome": None, "mirrored": False, **end})]
    assert not verdicts(log, {"a": 2})["a running Job is never deleted or reported failed"].ok


def test_a_pool_over_its_max_fails():
    assert not verdicts(happy("a"), {"a": 2}, {"fleet-p0": 1})["a pool never exceeds its maxNodes"].ok


def test_extra_nodes_a_second_provisioning_or_nodes_apart_fail():
    name = "a request is provisioned once and no more nodes are made than its pods need"
    extra = happy("a") + [node(9, "n-extra")]
    assert not verdicts(extra, {"a": 2})[name].ok
    again = happy("a") + [pr(10, "pr-a", "wl-a", provisioned="False"), pr(11, "pr-a", "wl-a", provisioned="True")]
    assert not verdicts(again, {"a": 2})[name].ok
    apart = happy("a")
    apart[6] = node(5, "n-a-b", created="2026-12-05T10:00:03Z", provreq="fleet/pr-a")
    assert not verdicts(apart, {"a": 2})[name].ok


# ---------------------------------------------------------------------------- the report and the shell's pure parts

def test_the_report_draws_well_formed_svg_and_a_table():
    log = happy("a")
    m = measure.summary(events.fold(log, {"a": 2}), log, set(), {"fleet-p0"})
    picture = report.svg([("fake", m), ("real", m)], "t <&>")
    root = ET.fromstring(picture)
    assert root.tag.endswith("svg") and "t &lt;&amp;&gt;" in picture
    assert len([e for e in root.iter() if e.tag.endswith("path")]) == 8
    rows = report.table([("fake", m)])
    assert rows[2].startswith("| fake | 1 | 7.0s |")
    text = "\n".join(report.lines("fake", m, [checks.Verdict("x", False, "why")]))
    assert "FAIL  x: why" in text and "Admitted" in text


def test_progress_and_api_requests_by_verb():
    gangs = events.fold(happy("a"), {"a": 2})
    assert progress_line(12, gangs, 3).endswith("submitted 1/3 · reserved 1 · provisioned 1 · admitted 1 · "
                                                 "running 1 · succeeded 1 · timed out 0")
    text = ('apiserver_request_total{code="200",resource="pods",verb="GET"} 3\n'
            'apiserver_request_total{code="201",resource="jobs",verb="POST"} 2\n'
            'apiserver_request_total{code="200",resource="nodes",verb="GET"} 4\n# HELP x\n')
    assert requests_by_verb(text) == {"GET": 7.0, "POST": 2.0}


def test_the_real_autoscalers_loops_from_its_metrics():
    page = ('cluster_autoscaler_function_duration_seconds_sum{function="main"} 12.5\n'
            'cluster_autoscaler_function_duration_seconds_count{function="main"} 50\n'
            'cluster_autoscaler_function_duration_seconds_count{function="scaleUp"} 7\n')
    asked = []
    got = real_ca_loops("x started cluster-autoscaler pid 9 (scan interval 10s, metrics 127.0.0.1:4242, log y)",
                        lambda url: asked.append(url) or page)
    assert got == {"loops": 50.0, "seconds": 12.5, "mean_loop_seconds": 0.25} and asked == ["http://127.0.0.1:4242/metrics"]
    assert real_ca_loops("no port here", lambda url: page) is None

    def dead(url):
        raise OSError("refused")
    assert real_ca_loops("metrics 127.0.0.1:1", dead) is None
    assert real_ca_loops("metrics 127.0.0.1:1", lambda url: "") is None


def test_loop_samples_pair_each_scrape_interval_with_what_the_loop_looked_at():
    log = [node(1, "n1"), pod(1.5, "p1", "g"), pr(2, "r", "w"), node(3, "n2"), pod(4, "p1", "g", phase="Succeeded"),
           pr(4.5, "r", "w", provisioned="True")]
    assert measure.state_at(log, {"fleet-p0"}) == [(1, 1, 0, 0), (1.5, 1, 1, 0), (2, 1, 1, 1), (3, 2, 1, 1),
                                                   (4, 2, 0, 1), (4.5, 2, 0, 0)]
    scrapes = [(0.5, 10, 1.0), (2.5, 14, 3.0), (3.5, 14, 3.0), (5.0, 15, 4.5)]
    assert measure.loop_samples(scrapes, log, {"fleet-p0"}) == [
        {"nodes": 0, "pods": 0, "requests": 0, "made": 0.25, "deleted": 0.0, "loops": 4, "mean": 0.5},
        {"nodes": 2, "pods": 1, "requests": 1, "made": 0.0, "deleted": 0.0, "loops": 1, "mean": 1.5}]
    log.append(node(4.8, "n2", typ="DELETED"))
    assert measure.loop_samples(scrapes, log, {"fleet-p0"})[1]["deleted"] == 1.0


KLOG = """I1205 10:00:00.000000       1 main.go:1] Cluster Autoscaler 1.36.1
I1205 10:00:01.000000       1 trigger.go:142] Autoscaler loop triggered immediately after a scale up
I1205 10:00:01.100000       1 orchestrator.go:177] Final scale-up plan: [{fleet-p1 6->10 (max: 12)}]
I1205 10:05:00.000000       1 main.go:1] Cluster Autoscaler 1.36.1
I1205 10:05:01.000000       1 trigger.go:142] Autoscaler loop triggered by unschedulable pod appearing
I1205 10:05:01.100000       1 orchestrator.go:177] Final scale-up plan: [{fleet-p1 6->10 (max: 12)} {fleet-p0 1->3 (max: 9)}]
I1205 10:05:01.800000       1 trigger.go:142] Autoscaler loop triggered immediately after a scale up
I1205 10:05:01.900000       1 delete.go:1] Scale-down: removing empty node "fleet-p0-abcde"
I1205 10:05:01.950000       1 taints.go:1] Successfully added DeletionCandidateOfClusterAutoscaler on node x
I1205 10:05:01.960000       1 taints.go:1] Successfully released DeletionCandidateOfClusterAutoscaler on node y
I1205 10:05:01.970000       1 taints.go:1] Releasing taint {Key:DeletionCandidateOfClusterAutoscaler}
I1205 10:05:03.000000       1 trigger.go:142] Autoscaler loop triggered immediately after a scale down
I1205 10:05:13.000000       1 trigger.go:142] Autoscaler loop triggered by a 10s timer
"""


def test_the_real_autoscalers_loops_from_its_log():
    assert measure.ca_loops(KLOG) == [{"made": 6, "deleted": 0, "taints": 0, "seconds": pytest.approx(0.8)},
                                      {"made": 0, "deleted": 1, "taints": 2, "seconds": pytest.approx(1.2)}]
    assert measure.ca_loops("") == [] and measure.ca_loops("no klog here\n") == []


def test_the_bound_that_fired_and_the_queue_depth_the_deadline_bore():
    log = [rec(0, events.JOB, "a", "ADDED"), rec(0, events.JOB, "b", "ADDED"), rec(0, events.JOB, "c", "ADDED"),
           wl(1, "wa", "a"), wl(1, "wb", "b"), wl(1, "wc", "c"),
           pr(2, "ra", "wa"), pr(3, "rb", "wb"), pr(4, "ra", "wa", provisioned="True"), pr(5, "rc", "wc"),
           wl(6, "wa", "a", admitted=True), wl(40, "wc", "c", timed_out=True, active=False, bound="outer-bound"),
           pr(41, "rb", "wb", provisioned="True"), wl(50, "wb", "b", timed_out=True, active=False)]
    gangs = events.fold(log, {"a": 1, "b": 1, "c": 1})
    assert gangs["c"].bound == "outer-bound" and gangs["a"].bound == "" and gangs["b"].bound == ""
    assert measure.firings(gangs, set())["bound:outer-bound"] == 1
    assert measure.depth(gangs, set()) == {"first_false_timeout": 40, "provisioned_before": 1}
    assert measure.depth(gangs, {"c"}) == {"first_false_timeout": 50, "provisioned_before": 2}
    assert measure.depth(gangs, {"b", "c"}) == {"first_false_timeout": None, "provisioned_before": None}
    r = events.record(1, events.WORKLOAD, "MODIFIED", {"metadata": {"name": "w", "annotations": {
        "tau-demo.io/admission-decision-bound": "budget"}}})
    assert r["bound"] == "budget"


def test_without_the_check_the_queues_admit_at_quota_and_the_ratio_is_given():
    p = plan(FleetSpec(gangs=10, queues=3, pools=2))
    objs = [o for prof in parse_all(taucluster(p)["spec"]["profiles"]) for o in objects(prof, "fleet")]
    kept = without_check(objs)
    kinds = sorted(o["kind"] for o in kept)
    assert kinds == ["ClusterQueue"] * 3 + ["LocalQueue"] * 3 + ["ResourceFlavor"] * 2      # one flavor per pool
    assert all("admissionChecksStrategy" not in o["spec"] for o in kept if o["kind"] == "ClusterQueue")
    assert any("admissionChecksStrategy" in o["spec"] for o in objs if o["kind"] == "ClusterQueue")   # untouched
    runs = [("none", {"check": False, "admission_rate": 40.0}), ("real", {"check": True, "admission_rate": 1.0}),
            ("fake", {"admission_rate": 2.0})]
    assert report.throughput_ratios(runs) == [
        "admission throughput without the check (none): 40.00 a second",
        "  real: 1.00 a second, 0.025 of it", "  fake: 2.00 a second, 0.050 of it"]
    assert report.throughput_ratios(runs[1:]) == []


def test_the_real_autoscalers_log_file_from_its_start_line():
    line = ("10:09:13 real-ca: started cluster-autoscaler pid 24409 (scan interval 10s, metrics 127.0.0.1:53329, "
            "log /tmp/s/real-ca/cluster-autoscaler.log)")
    assert str(ca_log_path("x\n" + line + "\n")) == "/tmp/s/real-ca/cluster-autoscaler.log"
    assert ca_log_path("nothing") is None


def test_a_run_is_measured_again_from_its_log_alone(tmp_path):
    from fleet.run import measure_again
    import json as j
    spec = FleetSpec(gangs=1, shapes=(("2x8", 1),), queues=1, pools=1)
    g = plan(spec).gangs[0]
    log = happy(g.name)
    (tmp_path / "events.jsonl").write_text("".join(j.dumps(r) + "\n" for r in log))
    results = {"spec": {k: list(v) if isinstance(v, tuple) else v for k, v in vars(spec).items()},
               "cost": {"etcd": {"cpu": 1.0, "peak_mb": 2.0}}, "autoscaler": "fake", "succeeded": 0}
    results["spec"]["shapes"] = [list(x) for x in spec.shapes]
    (tmp_path / "results.json").write_text(j.dumps(results))
    m, verdicts = measure_again(tmp_path)
    assert m["succeeded"] == 1 and m["cost"] == results["cost"] and m["autoscaler"] == "fake"
    assert [v.ok for v in verdicts] == [True] * 4


def test_the_pace_table_gives_each_figure_of_the_fake_as_a_ratio_of_the_real_ones():
    def run(drain, p50, p95):
        return {"drain_rate": drain, "phases": [{"name": "Provisioned", "p50": p50, "p95": p95}]}
    rows = report.pace_rows([(25, run(1.0, 10.0, 20.0), run(1.2, 9.0, 24.0)),
                             (50, run(1.0, 10.0, 20.0), run(1.3, 10.0, 20.0)),
                             (100, run(1.0, 10.0, None), run(1.0, 10.0, 20.0))])
    assert rows[2] == "| 25 | 1.00 / 1.20 | 1.20 | 10.0 s / 9.0 s | 0.90 | 20.0 s / 24.0 s | 1.20 | yes |"
    assert rows[3].endswith("| 1.30 | 10.0 s / 10.0 s | 1.00 | 20.0 s / 20.0 s | 1.00 | no |")
    assert rows[4].endswith("| – / 20.0 s | – | no |")


def test_a_request_made_again_under_the_same_name_is_another_request():
    name = "a request is provisioned once and no more nodes are made than its pods need"
    log = happy("a")
    for r in log:
        if r["kind"] == events.PROVREQ:
            r["uid"] = "u1"
        if r["kind"] == events.NODE:
            r["provreq"] = "u1"
    again = [{**pr(30, "pr-a", "wl-a", provisioned="False"), "uid": "u1"},
             {**pr(31, "pr-a", "wl-a", typ="DELETED"), "uid": "u1"},
             {**pr(40, "pr-a", "wl-a"), "uid": "u2"}, {**pr(41, "pr-a", "wl-a", provisioned="True"), "uid": "u2"},
             {**node(41, "n-a-c"), "provreq": "u2"}, {**node(41, "n-a-d"), "provreq": "u2"}]
    v = verdicts(log + again, {"a": 2})[name]
    assert v.ok, v.detail                     # Kueue's new request (a requeued gang): provisioned once, its own nodes
    assert events.fold(log + again, {"a": 2})["a"].requests == {"u1", "u2"}
    same = log + [{**pr(30, "pr-a", "wl-a", provisioned="False"), "uid": "u1"},
                  {**pr(31, "pr-a", "wl-a", provisioned="True"), "uid": "u1"}]
    assert not verdicts(same, {"a": 2})[name].ok


def test_the_fleets_fake_runs_with_the_timings_the_real_one_is_given():
    """`tau-demo real-ca` gives the real one a 10 s scan interval, 20 s of unneeded time and of delay after a scale-up,
    and leaves 1.36.1's request retry (1 minute doubling to 10) and booking (10 minutes, not ended by its pods)."""
    fake = autoscaler_argv("fake", Path("/p.yaml"), ("--no-pace",))
    assert fake[:3] == ["fake-ca", "--pools", "/p.yaml"] and fake[-1] == "--no-pace"
    flags = dict(zip(fake[3:-2:2], fake[4:-2:2]))
    assert flags == {"--scan-interval": "10s", "--scale-down-unneeded": "20s", "--scale-down-delay-after-add": "20s",
                     "--initial-backoff": "1m", "--max-backoff": "10m", "--booking": "10m"}
    assert fake[-2] == "--no-booking-consumed"
    assert autoscaler_argv("real", Path("/p.yaml"), ("--v=4",)) == ["real-ca", "--pools", "/p.yaml", "--", "--v=4"]
    assert autoscaler_argv("real", Path("/p.yaml")) == ["real-ca", "--pools", "/p.yaml"]


def test_a_configmap_the_run_found_is_put_back_by_the_manager_that_wrote_it_last():
    from demo.realca import coexist
    from fleet.run import MANAGER, restoring_manager
    from k8s.keys import FAKE_CA_FIELD_MANAGER
    fake_left = {"metadata": {"managedFields": [{"manager": FAKE_CA_FIELD_MANAGER, "time": "2026-12-05T18:00:00Z"}]}}
    assert restoring_manager(fake_left) == FAKE_CA_FIELD_MANAGER
    put_back = {"metadata": {"managedFields": [{"manager": restoring_manager(fake_left),
                                                "time": "2026-12-05T18:05:00Z"}]}}
    now = datetime(2026, 12, 5, 18, 5, 1, tzinfo=timezone.utc)
    assert coexist.status_age(put_back, now) is None                      # still the fake's: no real CA running
    mixed = {"metadata": {"managedFields": [{"manager": "cluster-autoscaler", "time": "2026-12-05T18:01:00Z"},
                                            {"manager": FAKE_CA_FIELD_MANAGER, "time": "2026-12-05T17:00:00Z"},
                                            {"time": "2026-12-05T19:00:00Z"}]}}
    assert restoring_manager(mixed) == "cluster-autoscaler"
    assert restoring_manager({"metadata": {}}) == MANAGER
    assert restoring_manager({"metadata": {"managedFields": [{"manager": "", "time": "t"}]}}) == MANAGER
