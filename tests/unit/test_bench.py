"""The benchmarks' pure parts.  bench/fleet.py: its figures, the limits by Kueue's rule and the gate, the cost per
gang.  bench/provreq_latency.py: the pool table it puts back, which autoscaler it starts,
the apiserver's own time per request read from /metrics (the figures docs/benchmarks.md uses to say where a loop's
time goes), and what it reads from its tapes; bench/real_vs_fake.py and bench/deadline_latency.py: what they read
from theirs."""

import copy
from pathlib import Path

import pytest

from bench import deadline_latency, fleet as bench_fleet, provreq_latency as bench, real_vs_fake
from k8s.keys import DECISION_ANNOTATION, TIMED_OUT
from k8s.paths import POOLS_FILE
from k8s.pools import load_pools, pools_to_configmap


def test_the_benchmark_puts_back_the_pool_table_it_found():
    """The issue: bench/provreq_latency.py left its 200-node benchpool table; preflight then planned
    against it."""
    demo_table = pools_to_configmap(load_pools(POOLS_FILE))
    assert bench.table_to_restore(None) == demo_table
    found = copy.deepcopy(demo_table)
    found["data"]["pools.yaml"] = found["data"]["pools.yaml"].replace("maxNodes: 2", "maxNodes: 3")
    found["metadata"]["resourceVersion"] = "42"
    restored = bench.table_to_restore(found)
    assert restored["data"] == found["data"] and "resourceVersion" not in restored["metadata"]

METRICS = """\
# HELP apiserver_request_duration_seconds [STABLE] Response latency distribution in seconds
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="nodes",scope="resource",subresource="",verb="POST",version="v1",le="0.005"} 90
apiserver_request_duration_seconds_sum{component="apiserver",dry_run="",group="",resource="nodes",scope="resource",subresource="",verb="POST",version="v1"} 0.35
apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="",resource="nodes",scope="resource",subresource="",verb="POST",version="v1"} 100
apiserver_request_duration_seconds_sum{component="apiserver",dry_run="",group="autoscaling.x-k8s.io",resource="provisioningrequests",scope="resource",subresource="status",verb="PUT",version="v1"} 0.625
apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="autoscaling.x-k8s.io",resource="provisioningrequests",scope="resource",subresource="status",verb="PUT",version="v1"} 100
apiserver_request_duration_seconds_sum{component="apiserver",dry_run="",group="",resource="nodes",scope="cluster",subresource="",verb="LIST",version="v1"} 0.2
apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="",resource="nodes",scope="cluster",subresource="",verb="LIST",version="v1"} 5
apiserver_request_duration_seconds_sum{component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="PUT",version="v1"} 9
apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="PUT",version="v1"} 3
"""


def test_apiserver_time_per_write_of_a_scale_up_from_metrics_text():
    times = bench.apiserver_times(METRICS)
    assert times == {("POST", "nodes"): (0.35, 100.0), ("PUT", "provisioningrequests/status"): (0.625, 100.0)}, \
        "writes of the scale-up's resources only: no LIST/WATCH, no other resource, buckets ignored"


def test_the_delta_between_two_readings_is_per_request_and_busiest_first():
    before = {("POST", "nodes"): (0.05, 10.0), ("GET", "leases"): (1.0, 100.0)}
    after = {("POST", "nodes"): (0.35, 100.0), ("PUT", "provisioningrequests/status"): (0.625, 100.0),
             ("GET", "leases"): (1.0, 100.0)}
    rows = bench.apiserver_delta(before, after)
    assert [(v, r, n) for v, r, n, _ in rows] == [("PUT", "provisioningrequests/status", 100),
                                                   ("POST", "nodes", 90)], "nothing for idle verbs"
    assert round(rows[0][3], 3) == 6.25 and round(rows[1][3], 3) == 3.333


def test_the_bench_starts_the_fake_or_the_real_autoscaler_with_the_bench_pools():
    fake = bench.autoscaler_argv("fake", "/kc", "100ms")
    assert fake[0] == "fake-ca" and fake[fake.index("--pools") + 1].endswith("pools-bench.yaml")
    assert fake[fake.index("--scan-interval") + 1] == "100ms" and "--booking" in fake
    real = bench.autoscaler_argv("real", "/kc", "1s", ("--kube-client-qps=1000",))
    assert real[0] == "real-ca" and real[real.index("--scan-interval") + 1] == "1s"
    assert real[-2:] == ["--", "--kube-client-qps=1000"], "the CA's own flags after --"
    assert "--" not in bench.autoscaler_argv("real", "/kc", "1s")
    ideal = bench.autoscaler_argv("ideal", "/kc", "1s")
    assert ideal[:2] == ["-m", "bench.ideal_autoscaler"], "a module of the bench package, run from the root"


def test_the_real_ca_pid_is_read_from_the_wrapper_log():
    log = ("16:03:49 real-ca: published pool table\n"
           "16:03:49 real-ca: started cluster-autoscaler pid 10304 (scan interval 100ms, metrics 127.0.0.1:1)\n")
    assert bench.real_ca_pid(log) == 10304
    assert bench.real_ca_pid("nothing yet\n") is None


def pod(name: str, phase: str, rv: int) -> dict:
    return {"metadata": {"name": name, "resourceVersion": str(rv)}, "status": {"phase": phase}}


def test_the_last_pod_running_is_read_from_the_tape_changes():
    seen = [(1.0, "ADDED", pod("a", "Pending", 1)), (2.0, "MODIFIED", pod("a", "Running", 2)),
            (2.5, "MODIFIED", pod("a", "Running", 3)), (3.0, "ADDED", pod("b", "Pending", 4))]
    assert real_vs_fake.all_running_at(seen, 2) is None, "one of two pods running"
    seen.append((4.0, "MODIFIED", pod("b", "Running", 5)))
    assert real_vs_fake.all_running_at(seen, 2) == 4.0, "the last pod's first Running change"
    assert real_vs_fake.all_running_at([(5.0, "DELETED", pod("c", "Running", 6))], 1) is None, "a deletion is no run"


def test_a_requests_provisioned_time_and_the_nodes_added_are_read_from_the_tape_changes():
    def pr(name, provisioned):
        conds = [{"type": "Provisioned", "status": "True" if provisioned else "False"}]
        return {"metadata": {"name": name}, "status": {"conditions": conds}}
    seen = [(1.0, "ADDED", pr("r1", False)), (2.0, "MODIFIED", pr("r1", True)), (3.0, "MODIFIED", pr("r1", True)),
            (3.5, "DELETED", pr("r2", True))]
    assert bench.provisioned_at(seen) == {"r1": 2.0}
    nodes = [(2.0, "ADDED", pod("n2", "", 1)), (1.0, "ADDED", pod("n1", "", 2)), (4.0, "MODIFIED", pod("n3", "", 3)),
             (5.0, "ADDED", pod("n1", "", 4))]
    assert bench.added_at(nodes) == [1.0, 2.0], "first ADDED per node, in time order"


def test_the_deadline_bench_reads_each_jobs_workload_and_its_first_commit_from_the_tape():
    def wl(name, owner, committed, controller=True):
        ann = {DECISION_ANNOTATION: TIMED_OUT} if committed else {}
        return {"metadata": {"name": name, "annotations": ann,
                             "ownerReferences": [{"kind": "Job", "uid": owner, "controller": controller}]},
                "spec": {"active": not committed}}
    seen = [(1.0, "ADDED", wl("w1", "u1", False)), (2.0, "ADDED", wl("w2", "u2", False)),
            (3.0, "MODIFIED", wl("w1", "u1", True)), (4.0, "MODIFIED", wl("w1", "u1", True)),
            (5.0, "ADDED", wl("w3", "u3", True, controller=False))]
    owners = deadline_latency.by_owner(seen)
    assert sorted(owners) == ["u1", "u2"], "only a Workload a Job controls"
    assert [t for t, _, _ in owners["u1"]] == [1.0, 3.0, 4.0]
    assert deadline_latency.first_committed(owners["u1"]) == 3.0
    assert deadline_latency.first_committed(owners["u2"]) is None


def test_the_deadline_bench_reads_each_commits_round_trip_from_the_log():
    log = ("job-dlbench-001: committed timeout on Workload job-job-dlbench-001-1a2b3 (spec.active=false; the write "
           "took 12 ms)\njob-dlbench-002: 409 conflict\n")
    assert deadline_latency.commit_times(log) == {"job-dlbench-001": 0.012}


# ---------------------------------------------------------------------------- bench.fleet

def fleet_results(p50=10.0, p95=20.0, prov95=18.0, span=100.0, drain=1.5, apiserver=40.0):
    phases = [{"name": n, "count": 1, "p50": p50, "p95": p95 if n == "Admitted" else prov95, "p99": None}
              for n in ("Provisioned", "Admitted")]
    return {"phases": phases, "span": span, "drain_rate": drain, "api_requests": {"GET": 100.0, "POST": 50.0},
            "cost": {"kube-apiserver": {"cpu": apiserver}, "etcd": {"cpu": 5.0}, "kueue": {"cpu": 3.0},
                     "autoscaler": {"cpu": 2.0}, "kube-scheduler": {"cpu": 99.0}}}


def test_the_fleet_benchmarks_figures_limits_and_gate():
    bf = bench_fleet
    fig = bf.figures(fleet_results())
    assert fig == {"admitted_p50": 10.0, "admitted_p95": 20.0, "provisioned_p95": 18.0, "span": 100.0, "drain": 1.5,
                   "apiserver_cpu": 40.0, "control_plane_cpu": 50.0, "api_requests": 150.0}
    trials = [bf.figures(fleet_results(p50=x)) for x in (10.0, 10.5, 11.0, 9.5, 9.0)]
    lim = bf.limits(trials)
    assert lim["admitted_p50"] == 12.0            # mean 10 × 1.2, a time rounded up to the whole second
    assert lim["span"] == 120.0 and lim["apiserver_cpu"] == pytest.approx(48.0)
    assert bf.limit("admitted_p95", 10.01) == 13.0 and bf.limit("api_requests", 10.0) == pytest.approx(12.0)
    assert bf.over(trials, lim) == []
    slower = [bf.figures(fleet_results(p50=13.0)) for _ in range(5)]
    assert bf.over(slower, lim) == ["admitted_p50: mean 13.00 above its limit 12.00"]
    assert bf.per_gang(10, fig) == {"control_plane_cpu": 5.0, "apiserver_cpu": 4.0, "api_requests": 15.0}


def test_a_fleet_limits_file_judges_only_its_own_fleet_and_runs_are_kept_where_asked():
    from argparse import Namespace
    bf = bench_fleet
    a = Namespace(gangs=50, autoscaler="real", extra=["--run", "20s", "--boot", "15s"], keep=None)
    written = {"gangs": 50, "autoscaler": "real", "flags": ["--run", "20s", "--boot", "15s"], "trials": 5}
    assert bf.fleet_of(a) == {"gangs": 50, "autoscaler": "real", "flags": ["--run", "20s", "--boot", "15s"]}
    assert bf.gate_mismatch(a, written) is None
    assert bf.gate_mismatch(a, {**written, "autoscaler": "fake"}) == (
        "the limits are for another fleet: autoscaler 'fake' there, 'real' here")
    assert bf.gate_mismatch(Namespace(**{**vars(a), "gangs": 100}), written) == (
        "the limits are for another fleet: gangs 50 there, 100 here")
    assert "flags" in bf.gate_mismatch(a, {**written, "flags": ["--boot", "0s"]})
    assert bf.kept(a, "real-50-1") is None
    assert bf.kept(Namespace(keep="/tmp/k"), "real-50-1") == Path("/tmp/k/real-50-1")
