"""bench/provreq_latency.py's pure parts: the pool table it puts back, which autoscaler it starts, and
the apiserver's own time per request read from /metrics (the figures docs/benchmarks.md uses to say
where a loop's time goes)."""

import copy
import importlib.util
import sys
from pathlib import Path

from k8s.paths import POOLS_FILE
from k8s.pools import load_pools, pools_to_configmap

REPO = Path(__file__).resolve().parents[2]


def load_bench():
    spec = importlib.util.spec_from_file_location("provreq_latency", REPO / "bench" / "provreq_latency.py")
    sys.path.insert(0, str(REPO / "bench"))
    try:
        bench = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(bench)          # main() only runs as a script
    finally:
        sys.path.remove(str(REPO / "bench"))
    return bench


bench = load_bench()


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


def test_the_real_ca_pid_is_read_from_the_wrapper_log():
    log = ("16:03:49 real-ca: published pool table\n"
           "16:03:49 real-ca: started cluster-autoscaler pid 10304 (scan interval 100ms, metrics 127.0.0.1:1)\n")
    assert bench.real_ca_pid(log) == 10304
    assert bench.real_ca_pid("nothing yet\n") is None
