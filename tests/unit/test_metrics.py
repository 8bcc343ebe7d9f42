"""Reading a Prometheus /metrics page (k8s/metrics.py): samples with their labels, one series by name and labels."""

from __future__ import annotations

from k8s import metrics

PAGE = """# HELP kueue_evicted_workloads_total The number of evicted workloads per 'cluster_queue',
# TYPE kueue_evicted_workloads_total counter
kueue_evicted_workloads_total{cluster_queue="cq-a",priority_class="",reason="Deactivated",replica_role="standalone",underlying_cause="AdmissionCheck"} 1
kueue_evicted_workloads_total{cluster_queue="cq-b",priority_class="",reason="Preempted",replica_role="standalone",underlying_cause=""} 2.5e+00
go_goroutines 42
weird{msg="a \\"quoted\\" \\\\ value\\nnext"} 3 1700000000000
broken{x="1"} notanumber
   # indented comment 7
after_broken 5
"""


def test_every_sample_line_with_its_labels_is_read_and_the_rest_skipped():
    got = metrics.samples(PAGE)
    assert [(s.name, s.value) for s in got] == [("kueue_evicted_workloads_total", 1.0),
                                               ("kueue_evicted_workloads_total", 2.5), ("go_goroutines", 42.0),
                                               ("weird", 3.0), ("after_broken", 5.0)]
    assert got[0].labels == {"cluster_queue": "cq-a", "priority_class": "", "reason": "Deactivated",
                             "replica_role": "standalone", "underlying_cause": "AdmissionCheck"}
    assert got[2].labels == {}
    assert got[3].labels == {"msg": 'a "quoted" \\ value\nnext'}


def test_one_series_by_name_and_some_of_its_labels():
    v = metrics.value
    assert v(PAGE, "kueue_evicted_workloads_total", cluster_queue="cq-a", reason="Deactivated",
             underlying_cause="AdmissionCheck") == 1.0
    assert v(PAGE, "kueue_evicted_workloads_total", cluster_queue="cq-b") == 2.5
    assert v(PAGE, "kueue_evicted_workloads_total", cluster_queue="cq-a", underlying_cause="") is None
    assert v(PAGE, "kueue_evicted_workloads_total", cluster_queue="cq-c") is None
    assert v(PAGE, "kueue_evicted_workloads_total") == 1.0                  # the first one
    assert v(PAGE, "go_goroutines") == 42.0 and v(PAGE, "go_threads") is None
    assert v(PAGE, "broken") is None and v("", "go_goroutines") is None
