"""The fleet's report (fleet/report.py) and its invariants (fleet/checks.py) on small known inputs, each output
whole: every line the run prints, the markdown tables, the SVG's elements with their coordinates, colours, dash
arrays and labels, and every Verdict with its detail."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from fleet import checks, report
from fleet.checks import Verdict
from fleet.events import JOB, NODE, POD, PROVREQ, WORKLOAD, Gang

SVG = "{http://www.w3.org/2000/svg}"


# ---------------------------------------------------------------------------- report.lines

HEADER = "  phase (from submit)" + " " * 7 + "gangs" + " " * 6 + "p50" + " " * 6 + "p95" + " " * 6 + "p99"


def test_the_lines_a_run_prints_at_its_end_every_one():
    m = {"gangs": 3, "succeeded": 2, "requests": 4, "span": 61.6,
         "firings": {"total": 3, "false": 2, "true": 1, "cause:waiting": 2, "cause:accepted": 1,
                     "bound:taken-up": 2, "bound:outer-bound": 1},
         "phases": [{"name": "Provisioned", "count": 3, "p50": 1.0, "p95": 2.0, "p99": 3.0},
                    {"name": "Admitted", "count": 2, "p50": 7.0, "p95": 12.46, "p99": None}],
         "drain_rate": 0.5, "admission_rate": 1.25,
         "autoscaler_loops": {"loops": 12.4, "mean_loop_seconds": 0.9},
         "skew": {"gangs": 2, "p50": 0.5, "p95": 1.0, "max": 2.5, "over_2s": 1},
         "depth": {"first_false_timeout": 40.4, "provisioned_before": 3},
         "cost": {"kube-apiserver": {"cpu": 12.4, "peak_mb": 300.2}, "etcd": {"cpu": 3.0, "peak_mb": 80.0}}}
    assert report.lines("real-200", m, [Verdict("x", True, "fine"), Verdict("y", False, "why")]) == [
        "real-200: 3 gangs, 2 succeeded, 3 timed out (2 false: capacity was on its way; 1 out of stock), "
        "4 requests, run 62s",
        HEADER,
        "  Provisioned" + " " * 13 + "      3     1.0s     2.0s     3.0s",
        "  Admitted" + " " * 16 + "      2     7.0s    12.5s        –",
        "  drain: 0.50 requests provisioned a second",
        "  admission: 1.25 Workloads admitted a second",
        "  autoscaler: 12 loops, 900 ms each on average",
        "  pod start skew over 2 multi-pod gangs: p50 0.5s, p95 1.0s, max 2.5s; 1 more than 2s apart",
        "  deadline firings by the request's state then: accepted 1, waiting 2; "
        "by the bound that fired: outer-bound 1, taken-up 2",
        "  the first false timeout fired 40s into the run, when 3 requests had been provisioned: "
        "the queue depth the deadline bore",
        "  control plane: etcd 3 CPU-s / 80 MB peak, kube-apiserver 12 CPU-s / 300 MB peak",
        "  PASS  x: fine",
        "  FAIL  y: why"]


def test_the_lines_of_a_run_with_nothing_to_rate_no_bound_and_no_false_timeout():
    m = {"gangs": 1, "succeeded": 0, "requests": 0, "span": 0.4,
         "firings": {"total": 1, "false": 0, "true": 1, "cause:none": 1}, "phases": [],
         "drain_rate": None, "admission_rate": 0.0, "autoscaler_loops": None, "cost": {},
         "skew": {"gangs": 0, "p50": None, "p95": None, "max": None, "over_2s": 0},
         "depth": {"first_false_timeout": None, "provisioned_before": None}}
    assert report.lines("solo", m, []) == [
        "solo: 1 gangs, 0 succeeded, 1 timed out (0 false: capacity was on its way; 1 out of stock), "
        "0 requests, run 0s",
        HEADER,
        "  drain: –",
        "  admission: –",
        "  pod start skew over 0 multi-pod gangs: p50 –, p95 –, max –; 0 more than 2s apart",
        "  deadline firings by the request's state then: none 1"]


def test_the_lines_without_firings_depth_or_cost_and_a_false_timeout_at_the_start():
    m = {"gangs": 2, "succeeded": 2, "requests": 2, "span": 9.5,
         "firings": {"total": 0, "false": 0, "true": 0}, "phases": [],
         "drain_rate": 2.0, "admission_rate": 4.0,
         "skew": {"gangs": 1, "p50": 0.0, "p95": 0.0, "max": 0.0, "over_2s": 0}}
    assert report.lines("fake", m, [])[2:] == [
        "  drain: 2.00 requests provisioned a second",
        "  admission: 4.00 Workloads admitted a second",
        "  pod start skew over 1 multi-pod gangs: p50 0.0s, p95 0.0s, max 0.0s; 0 more than 2s apart"]
    m["depth"] = {"first_false_timeout": 0.0, "provisioned_before": 0}
    assert report.lines("fake", m, [])[5:] == [
        "  the first false timeout fired 0s into the run, when 0 requests had been provisioned: "
        "the queue depth the deadline bore"]


# ---------------------------------------------------------------------------- report.table, throughput_ratios

def test_the_table_of_runs_side_by_side():
    fake = {"gangs": 3, "drain_rate": 0.5, "firings": {"false": 2, "true": 1}, "skew": {"p95": 1.0},
            "phases": [{"name": "Provisioned", "p50": 1.0, "p95": 2.0, "p99": 3.0},
                       {"name": "Admitted", "p50": 7.0, "p95": 12.46, "p99": None}]}
    real = {"gangs": 1, "drain_rate": None, "firings": {"false": 0, "true": 0}, "skew": {"p95": None},
            "phases": [{"name": "Admitted", "p50": None, "p95": None, "p99": 30.0}]}
    assert report.table([("fake", fake), ("real", real), ("zero", {**real, "drain_rate": 0.0})]) == [
        "| run | gangs | Admitted p50 | p95 | p99 | drain (req/s) | timeouts false / true | skew p95 |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        "| fake | 3 | 7.0s | 12.5s | – | 0.50 | 2 / 1 | 1.0s |",
        "| real | 1 | – | – | 30.0s | – | 0 / 0 | – |",
        "| zero | 1 | – | – | 30.0s | – | 0 / 0 | – |"]
    assert report.table([]) == report.table([("fake", fake)])[:2]


def test_throughput_ratios_against_the_first_run_without_the_check_that_admitted():
    runs = [("a", {"check": False, "admission_rate": None}), ("b", {"check": True, "admission_rate": 2.0}),
            ("none", {"check": False, "admission_rate": 8.0}), ("none2", {"check": False, "admission_rate": 4.0}),
            ("c", {"admission_rate": 0.0}), ("d", {"check": None, "admission_rate": 1.0})]
    assert report.throughput_ratios(runs) == [
        "admission throughput without the check (none): 8.00 a second",
        "  b: 2.00 a second, 0.250 of it",
        "  d: 1.00 a second, 0.125 of it"]
    assert report.throughput_ratios([("b", {"check": True, "admission_rate": 2.0}),
                                     ("z", {"check": 0, "admission_rate": 3.0}),
                                     ("a", {"check": False, "admission_rate": 0.0})]) == []


# ---------------------------------------------------------------------------- report.pace_rows

def test_the_pace_rows_whole_with_the_tolerance_at_its_edge_and_missing_figures():
    def run(drain, p50, p95):
        return {"drain_rate": drain, "phases": [{"name": "Admitted", "p50": 99.0, "p95": 99.0},
                                                {"name": "Provisioned", "p50": p50, "p95": p95}]}
    assert report.pace_rows([(25, run(1.0, 10.0, 20.0), run(1.25, 12.5, 15.0)),
                             (50, run(2.0, 10.0, 20.0), run(1.0, 10.0, 20.0)),
                             (100, run(None, 0.0, 20.0), run(1.0, None, 20.0)),
                             (200, run(1.0, 10.0, 20.0), run(1.0, None, 20.0)),
                             (400, run(1.0, 10.0, 20.0), run(1.0, 10.0, 25.2))]) == [
        "| gangs | drain real / fake (req/s) | ratio | Provisioned p50 real / fake | ratio | "
        "Provisioned p95 real / fake | ratio | within 25% |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        "| 25 | 1.00 / 1.25 | 1.25 | 10.0 s / 12.5 s | 1.25 | 20.0 s / 15.0 s | 0.75 | yes |",
        "| 50 | 2.00 / 1.00 | 0.50 | 10.0 s / 10.0 s | 1.00 | 20.0 s / 20.0 s | 1.00 | no |",
        "| 100 | – / 1.00 | – | 0.0 s / – | – | 20.0 s / 20.0 s | 1.00 | no |",
        "| 200 | 1.00 / 1.00 | 1.00 | 10.0 s / – | – | 20.0 s / 20.0 s | 1.00 | no |",
        "| 400 | 1.00 / 1.00 | 1.00 | 10.0 s / 10.0 s | 1.00 | 20.0 s / 25.2 s | 1.26 | no |"]
    assert report.PACE_TOLERANCE == 0.25


# ---------------------------------------------------------------------------- report._panel and report.svg

def test_one_panel_its_axes_ticks_curves_and_labels():
    # sx(x) = 48 + 804 x / 4, sy(y) = 0 + 260 - 48 - 164 y / 8
    got = report._panel(0, "T<", 4, 8, [("a&", "#111", [(0, 0), (2, 4), (4, 8)], ""), ("b", "#222", [], "5,3"),
                                        ("c", "#333", [(1, 2)], "5,3")], "x>", "y\"")
    assert got == [
        '<text x="48" y="20" font-size="14" font-weight="bold">T&lt;</text>',
        '<line x1="48" y1="212.0" x2="852" y2="212.0" stroke="#444"/>',
        '<line x1="48" y1="212.0" x2="48" y2="48.0" stroke="#444"/>',
        '<text x="852" y="242.0" font-size="11" text-anchor="end">x&gt;</text>',
        '<text x="42" y="42.0" font-size="11">y&quot;</text>',
        '<text x="48" y="226.0" font-size="10" text-anchor="middle">0</text>',
        '<text x="44" y="215" font-size="10" text-anchor="end">0</text>',
        '<text x="249" y="226.0" font-size="10" text-anchor="middle">1</text>',
        '<text x="44" y="174" font-size="10" text-anchor="end">2</text>',
        '<text x="450" y="226.0" font-size="10" text-anchor="middle">2</text>',
        '<text x="44" y="133" font-size="10" text-anchor="end">4</text>',
        '<text x="651" y="226.0" font-size="10" text-anchor="middle">3</text>',
        '<text x="44" y="92" font-size="10" text-anchor="end">6</text>',
        '<text x="852" y="226.0" font-size="10" text-anchor="middle">4</text>',
        '<text x="44" y="51" font-size="10" text-anchor="end">8</text>',
        '<path d="M48.0,212.0 L450.0,130.0 L852.0,48.0" fill="none" stroke="#111" stroke-width="1.6"/>',
        '<text x="848" y="36" font-size="11" fill="#111" text-anchor="end">a&amp;</text>',
        '<text x="848" y="50" font-size="11" fill="#222" text-anchor="end">b</text>',
        '<path d="M249.0,171.0" fill="none" stroke="#333" stroke-width="1.6" stroke-dasharray="5,3"/>',
        '<text x="848" y="64" font-size="11" fill="#333" text-anchor="end">c</text>']


def test_a_panel_with_nothing_to_scale_scales_to_one():
    got = report._panel(100, "", 0, 0, [("a", "#111", [(1, 1)], "")], "", "")
    # sx(x) = 48 + 804 x, sy(y) = 100 + 212 - 164 y
    assert got[1:3] == ['<line x1="48" y1="312.0" x2="852" y2="312.0" stroke="#444"/>',
                        '<line x1="48" y1="312.0" x2="48" y2="148.0" stroke="#444"/>']
    assert [g.split('"')[1] for g in got[5:15:2]] == ["48", "249", "450", "651", "852"]
    assert [g.split('"')[3] for g in got[6:15:2]] == ["315", "274", "233", "192", "151"]
    assert got[15] == '<path d="M852.0,148.0" fill="none" stroke="#111" stroke-width="1.6"/>'


def _paths_and_labels(root):
    paths = [(p.get("d"), p.get("stroke"), p.get("stroke-dasharray"), p.get("fill"), p.get("stroke-width"))
             for p in root.iter(SVG + "path")]
    labels = [(t.text, t.get("fill"), t.get("x"), t.get("y")) for t in root.iter(SVG + "text") if t.get("fill")]
    return paths, labels


def test_the_picture_of_two_runs_exact_coordinates_colours_dashes_and_labels():
    fake = {"gangs": 2, "admission_cdf": [2.0, 4.0], "span": 10.0, "drain_rate": 0.5,
            "series": [(0, 0, 2, 0), (5, 4, 1, 1), (10, 2, 0, 2)]}
    real = {"gangs": 1, "admission_cdf": [8.0], "span": 20.0, "drain_rate": None,
            "series": [(0, 0, 1, 0), (20, 6, 0, 1)]}
    picture = report.svg([("fake", fake), ("real", real)], "fake & real")
    root = ET.fromstring(picture)
    assert picture.endswith("</svg>\n")
    assert root.text is None and all(e.tail is None for e in root.iter())      # nothing between the elements
    assert root.tag == SVG + "svg"
    assert root.attrib == {"width": "900", "height": "820", "viewBox": "0 0 900 820", "font-family": "sans-serif"}
    assert root[0].tag == SVG + "rect" and root[0].attrib == {"width": "100%", "height": "100%", "fill": "white"}
    assert (root[1].text, root[1].attrib) == ("fake & real", {"x": "48", "y": "24", "font-size": "16",
                                                              "font-weight": "bold"})
    titles = [(t.text, t.get("y")) for t in root.iter(SVG + "text") if t.get("font-size") == "14"]
    assert titles == [("Time from submit to Admitted (CDF)", "60"),
                      ("Live nodes and pending requests over time", "320"),
                      ("Workloads admitted at once over time", "580")]
    axes = [(t.text, t.get("x"), t.get("y")) for t in root.iter(SVG + "text")
            if t.get("font-size") == "11" and not t.get("fill")]
    assert axes == [("seconds after submit", "852", "282.0"), ("% of gangs", "42", "82.0"),
                    ("seconds into the run", "852", "542.0"), ("count", "42", "342.0"),
                    ("seconds into the run", "852", "802.0"), ("admitted", "42", "602.0")]
    ticks = [t.text for t in root.iter(SVG + "text") if t.get("font-size") == "10"]
    assert ticks == ["0", "0", "2", "25", "4", "50", "6", "75", "8", "100",          # CDF: x to 8 s, y to 100%
                     "0", "0", "5", "2", "10", "3", "15", "4", "20", "6",            # load: x to 20 s, y to 6
                     "0", "0", "5", "0", "10", "1", "15", "2", "20", "2"]            # admitted: y to 2
    blue, red = "#1f77b4", "#d62728"
    paths, labels = _paths_and_labels(root)
    # CDF: sx = 48 + 100.5 x, sy = 252 - 1.64 y; load: sx = 48 + 40.2 x, sy = 512 - 164 y / 6;
    # admitted: sx = 48 + 40.2 x, sy = 772 - 82 y
    assert paths == [("M249.0,170.0 L450.0,88.0", blue, None, "none", "1.6"),
                     ("M852.0,88.0", red, None, "none", "1.6"),
                     ("M48.0,512.0 L249.0,402.7 L450.0,457.3", blue, None, "none", "1.6"),
                     ("M48.0,457.3 L249.0,484.7 L450.0,512.0", blue, "5,3", "none", "1.6"),
                     ("M48.0,512.0 L852.0,348.0", red, None, "none", "1.6"),
                     ("M48.0,484.7 L852.0,512.0", red, "5,3", "none", "1.6"),
                     ("M48.0,772.0 L249.0,690.0 L450.0,608.0", blue, None, "none", "1.6"),
                     ("M48.0,772.0 L852.0,690.0", red, None, "none", "1.6")]
    assert labels == [("fake", blue, "848", "76"), ("real", red, "848", "90"),
                      ("fake: live nodes", blue, "848", "336"), ("fake: requests pending", blue, "848", "350"),
                      ("real: live nodes", red, "848", "364"), ("real: requests pending", red, "848", "378"),
                      ("fake: admitted (drain 0.50/s)", blue, "848", "596"), ("real: admitted", red, "848", "610")]


def test_the_colours_of_seven_runs_and_the_picture_of_none():
    one = {"gangs": 1, "admission_cdf": [], "span": 0.0, "drain_rate": None, "series": []}
    root = ET.fromstring(report.svg([(str(i), one) for i in range(7)], "t"))
    assert [t.get("fill") for t in root.iter(SVG + "text") if t.text == "6: admitted"] == ["#1f77b4"]
    assert [t.get("fill") for t in root.iter(SVG + "text") if t.text.endswith(": admitted")] == [
        "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#1f77b4"]
    assert list(root.iter(SVG + "path")) == []
    empty = ET.fromstring(report.svg([], "nothing"))
    ticks = [(t.text, t.get("x"), t.get("y")) for t in empty.iter(SVG + "text") if t.get("font-size") == "10"]
    # nothing measured: every axis scaled to 1 (the CDF's y to 100)
    assert ticks[:4] == [("0", "48", "266.0"), ("0", "44", "255"), ("0", "249", "266.0"), ("25", "44", "214")]
    assert [x for x, _, _ in ticks[10:20]] == ["0", "0", "0", "0", "0", "0", "1", "1", "1", "1"]
    assert [(x, y) for _, x, y in ticks[10:14]] == [("48", "526.0"), ("44", "515"), ("249", "526.0"), ("44", "474")]
    assert [(x, y) for _, x, y in ticks[20:24]] == [("48", "786.0"), ("44", "775"), ("249", "786.0"), ("44", "734")]


# ---------------------------------------------------------------------------- checks

def r(t, kind, name, typ="MODIFIED", **kw):
    return {"t": t, "kind": kind, "type": typ, "name": name, "rv": 1, "uid": "", "deleting": False, **kw}


def test_some_names_at_most_five_sorted_then_how_many_more():
    assert checks._some(["g", "f", "e", "d", "c", "b", "a"]) == "a, b, c, d, e and 2 more"
    assert checks._some({"e", "d", "c", "b", "a"}) == "a, b, c, d, e"
    assert checks._some(["c", "b", "a"], most=2) == "a, b and 1 more"
    assert checks._some([]) == ""


TIMEOUT = "a committed timeout never runs"


def test_a_committed_timeout_is_judged_by_its_own_pods_and_its_workload_after_the_commit():
    gangs = {"t": Gang("t", 1, timed_out=10.0), "u": Gang("u", 1, timed_out=10.0), "ok": Gang("ok", 1)}
    fine = [r(1, POD, "t-p0", owner="t", phase="Pending"),
            r(15, POD, "t-p1", owner="t", phase="Pending", admitted=True),         # a pod is never "admitted"
            r(9.9, WORKLOAD, "wu", owner="u", admitted=True),                      # admitted before the commit
            r(20, WORKLOAD, "wu", owner="u", admitted=False, phase="Running"),
            r(3, POD, "ok-p0", owner="ok", phase="Running"),                      # not timed out
            r(4, WORKLOAD, "wok", owner="ok", admitted=True),
            r(20, JOB, "u", owner="u", phase="Running", admitted=True),           # a Job's record has no owner
            r(20, NODE, "n", owner="t", phase="Running", admitted=True),
            r(20, PROVREQ, "p", owner="u", phase="Running", admitted=True)]
    assert checks.timeout_never_runs(fine, gangs) == Verdict(
        TIMEOUT, True, "2 timed out; ran or admitted after the commit: none")
    ran = fine + [r(2, POD, "t-p0", owner="t", phase="Running")]                  # Running at any time
    assert checks.timeout_never_runs(ran, gangs) == Verdict(
        TIMEOUT, False, "2 timed out; ran or admitted after the commit: t")
    admitted = fine + [r(10.0, WORKLOAD, "wu", owner="u", admitted=True)]          # at the commit's own second
    assert checks.timeout_never_runs(admitted, gangs) == Verdict(
        TIMEOUT, False, "2 timed out; ran or admitted after the commit: u")
    assert checks.timeout_never_runs(ran + admitted, gangs) == Verdict(
        TIMEOUT, False, "2 timed out; ran or admitted after the commit: t, u")
    assert checks.timeout_never_runs([], {"z": Gang("z", 1, timed_out=0.0)}) == Verdict(
        TIMEOUT, True, "1 timed out; ran or admitted after the commit: none")
    assert checks.timeout_never_runs([r(0.0, WORKLOAD, "w", owner="z", admitted=True)],
                                     {"z": Gang("z", 1, timed_out=0.0)}).ok is False


RUNNING = "a running Job is never deleted or reported failed"


def test_a_running_job_is_judged_by_its_jobs_records_alone():
    gangs = {"a": Gang("a", 1, pod_running={"a-p0": 5.0}), "b": Gang("b", 1, pod_running={"b-p0": 5.0}),
             "c": Gang("c", 1)}
    fine = [r(1, JOB, "a", outcome="succeeded", mirrored=False),
            r(2, JOB, "c", "DELETED", outcome="failed", mirrored=True),             # never ran
            r(3, POD, "a", "DELETED", outcome="failed", mirrored=True),             # not the Job
            r(4, WORKLOAD, "b", "DELETED", outcome="failed", mirrored=True),
            r(5, JOB, "b", outcome=None, mirrored=False)]
    assert checks.running_never_failed(fine, gangs) == Verdict(RUNNING, True, "2 ran; mirrored, failed or deleted: none")
    for end, who in ((r(6, JOB, "a", mirrored=True), "a"), (r(6, JOB, "b", outcome="failed"), "b"),
                     (r(6, JOB, "a", "DELETED"), "a")):
        assert checks.running_never_failed(fine + [end], gangs) == Verdict(
            RUNNING, False, f"2 ran; mirrored, failed or deleted: {who}")
    assert checks.running_never_failed(fine + [r(6, JOB, "b", "DELETED"), r(7, JOB, "a", mirrored=True)],
                                       gangs).detail == "2 ran; mirrored, failed or deleted: a, b"


POOLS = "a pool never exceeds its maxNodes"


def test_pools_within_their_max_and_a_pool_without_one_holds_none():
    assert checks.pools_within_max({"p1": 5, "p0": 3, "p2": 1}, {"p0": 3, "p1": 4}) == Verdict(
        POOLS, False, "peaks p0 3/3, p1 5/4, p2 1/None; over: p1 (5 > 4), p2 (1 > 0)")
    assert checks.pools_within_max({"p1": 0, "p0": 3, "p2": 0}, {"p0": 3, "p1": 0}) == Verdict(
        POOLS, True, "peaks p0 3/3, p1 0/0, p2 0/None")
    assert checks.pools_within_max({}, {}) == Verdict(POOLS, True, "peaks ")


ONCE = "a request is provisioned once and no more nodes are made than its pods need"


def pr(t, name, uid="", provisioned=None, typ="MODIFIED", kind=PROVREQ):
    return r(t, kind, name, typ, uid=uid, conditions={} if provisioned is None else {"Provisioned": [provisioned, "x"]})


def nd(name, created, provreq="", pool="p0", typ="ADDED"):
    return r(0, NODE, name, typ, owner=pool, created=created, provreq=provreq)


GANGS = {"g1": Gang("g1", 2, requests={"u1"}), "g2": Gang("g2", 3, requests={"u2", "u3"}),
         "g3": Gang("g3", 1, requests={"r9"})}

CLEAN = [pr(1, "r1", "u1", "True"), pr(2, "r1", "u1", "True"),            # still True: not again
         pr(3, "r1", "u1", "False"),                                       # it left
         pr(4, "r1", "u1", "True", typ="DELETED"),                          # a deletion's record is not read
         pr(5, "r2", "u2", "False"), pr(6, "r2", "u2", "True"),             # False first: provisioned once
         {**pr(7, "r3", "u3"), "conditions": None},
         pr(8, "r3", "u3", "True", kind=WORKLOAD),                          # not a request
         pr(9, "r9", "", "True"),                                           # no uid: its name
         pr(9.5, "rs", "us", "True"),                                       # no gang's: needs no node
         nd("n1", "2026-12-05T10:00:00Z", "u1"), nd("n2", "2026-12-05T10:00:01Z", "u1"),   # 1 s apart: together
         nd("n3", "2026-12-05T10:00:05Z", "u2"), nd("n3", "2026-12-05T10:00:09Z", "u2"),   # its first creation
         nd("n4", "2026-12-05T10:00:05Z", "u2"), nd("n5", "", "u2"), nd("n6", "2026-12-05T10:00:30Z", "r9"),
         nd("x1", "2026-12-05T10:00:30Z", "u2", pool="other"),              # another pool's
         nd("n7", "2026-12-05T10:00:30Z", "u2", typ="DELETED")]             # only its deletion seen


def test_a_clean_run_of_requests_and_their_nodes():
    assert checks.provisioned_once(CLEAN, GANGS, {"p0"}) == Verdict(
        ONCE, True, "4 requests provisioned for 6 pods; 6 nodes made")
    assert checks.provisioned_once(CLEAN, GANGS, {"other"}) == Verdict(
        ONCE, True, "4 requests provisioned for 6 pods; 1 nodes made")
    assert checks.provisioned_once([], {}, {"p0"}) == Verdict(ONCE, True, "0 requests provisioned for 0 pods; "
                                                                          "0 nodes made")


def test_a_request_provisioned_again_after_it_left():
    again = CLEAN + [pr(10, "r1", "u1", "True")]
    assert checks.provisioned_once(again, GANGS, {"p0"}) == Verdict(
        ONCE, False, "4 requests provisioned for 6 pods; 6 nodes made; provisioned again: r1")
    left_twice = CLEAN + [pr(10, "r2", "u2", "False"), pr(11, "r2", "u2"), pr(12, "r2", "u2", "True")]
    assert checks.provisioned_once(left_twice, GANGS, {"p0"}) == Verdict(
        ONCE, False, "4 requests provisioned for 6 pods; 6 nodes made; provisioned again: r2")


def test_one_node_more_than_the_pods_need():
    assert checks.provisioned_once(CLEAN + [nd("n8", "")], GANGS, {"p0"}) == Verdict(
        ONCE, False, "4 requests provisioned for 6 pods; 7 nodes made")


def test_the_nodes_of_one_request_made_more_than_a_second_apart():
    apart = [x if x["name"] != "n2" else nd("n2", "2026-12-05T10:00:02Z", "u1") for x in CLEAN]
    assert checks.provisioned_once(apart, GANGS, {"p0"}) == Verdict(
        ONCE, False, "4 requests provisioned for 6 pods; 6 nodes made; nodes of one request not made together: u1")
    assert checks.NODES_TOGETHER == 1.0


def test_every_failure_at_once_and_all_checks_in_order():
    bad = [x if x["name"] != "n2" else nd("n2", "2026-12-05T10:00:02Z", "u1") for x in CLEAN] + [
        pr(10, "r1", "u1", "True"), nd("n8", "")]
    assert checks.provisioned_once(bad, GANGS, {"p0"}) == Verdict(
        ONCE, False, "4 requests provisioned for 6 pods; 7 nodes made; provisioned again: r1; "
                     "nodes of one request not made together: u1")
    assert checks.all_checks(bad, GANGS, {"p0": 7, "other": 1}, {"p0": 6}) == [
        Verdict(TIMEOUT, True, "0 timed out; ran or admitted after the commit: none"),
        Verdict(RUNNING, True, "0 ran; mirrored, failed or deleted: none"),
        Verdict(POOLS, False, "peaks other 1/None, p0 7/6; over: other (1 > 0), p0 (7 > 6)"),
        checks.provisioned_once(bad, GANGS, {"p0"})]


def test_a_run_admitted_within_a_second_beside_one_never_admitted_scales_the_cdf_to_its_own_span():
    fast = {"gangs": 1, "admission_cdf": [0.5], "span": 1.0, "drain_rate": None, "series": []}
    never = {"gangs": 1, "admission_cdf": [], "span": 1.0, "drain_rate": None, "series": [(0, 1, 1, 3)]}
    root = ET.fromstring(report.svg([("fast", fast), ("never", never)], "t"))
    # the load panel's y axis goes to the most nodes or requests (1), the admitted panel's to the most admitted (3)
    assert [p.get("d") for p in root.iter(SVG + "path")] == ["M852.0,88.0", "M48.0,348.0", "M48.0,348.0",
                                                             "M48.0,608.0"]


def test_several_runs_of_one_size_give_one_row_of_medians_and_each_autoscalers_own_range():
    def run(drain, p50, p95):
        return {"drain_rate": drain, "phases": [{"name": "Provisioned", "p50": p50, "p95": p95}]}
    pairs = [(100, run(0.50, 67.4, 197.7), run(0.53, 48.8, 193.2)),
             (50, run(1.0, 10.0, 20.0), run(1.0, 10.0, 20.0)),
             (100, run(0.50, 46.1, 200.4), run(0.55, 50.0, 190.0)),
             (100, run(0.40, 60.0, None), run(0.60, None, 180.0)),
             (100, run(0.45, 50.0, 210.0), run(0.50, 47.0, 200.0))]
    rows = report.pace_rows(pairs)
    assert rows[2] == ("| 100, median of 4 runs each | 0.47 / 0.54 | 1.14 | 55.0 s / 48.8 s | 0.89 | "
                       "200.4 s / 191.6 s | 0.96 | yes |")     # even counts: the mean of the middle two
    assert rows[3] == "| 50 | 1.00 / 1.00 | 1.00 | 10.0 s / 10.0 s | 1.00 | 20.0 s / 20.0 s | 1.00 | yes |"
    assert len(rows) == 4
    assert report.pace_spread(pairs) == [
        "100 gangs, 4 runs each: real drain 0.40–0.50, Provisioned p50 46.1–67.4 s, p95 197.7–210.0 s; "
        "fake drain 0.50–0.60, Provisioned p50 47.0–50.0 s, p95 180.0–200.0 s"]
    three = pairs[:1] + pairs[2:4]
    assert report.pace_rows(three)[2].startswith(
        "| 100, median of 3 runs each | 0.50 / 0.55 | 1.10 | 60.0 s / 49.4 s |")
    nothing = [(10, run(None, None, None), run(None, None, None))] * 2
    assert report.pace_rows(nothing)[2] == (
        "| 10, median of 2 runs each | – / – | – | – / – | – | – / – | – | no |")
    assert report.pace_spread(nothing) == [
        "10 gangs, 2 runs each: real drain –, Provisioned p50 –, p95 –; "
        "fake drain –, Provisioned p50 –, p95 –"]
    assert report.pace_spread(pairs[1:2]) == []
    assert report.pace_spread(pairs[1:2] + pairs[:1] + pairs[2:3]) == [      # a size run once before one run twice
        "100 gangs, 2 runs each: real drain 0.50–0.50, Provisioned p50 46.1–67.4 s, p95 197.7–200.4 s; "
        "fake drain 0.53–0.55, Provisioned p50 48.8–50.0 s, p95 190.0–193.2 s"]


def test_how_fast_a_stockout_was_caught_is_said_when_a_pool_was_out_of_stock():
    m = {"gangs": 4, "succeeded": 2, "requests": 4, "span": 90.0,
         "firings": {"total": 2, "false": 0, "true": 2}, "phases": [],
         "drain_rate": 2.0, "admission_rate": 4.0,
         "skew": {"gangs": 0, "p50": None, "p95": None, "max": None, "over_2s": 0},
         "caught": {"gangs": 3, "timed_out": 2, "p50": 41.4, "max": 60.6}}
    assert report.lines("fake", m, [])[-1] == (
        "  out of stock: 2 of 3 gangs timed out, 41s after their submission (p50), 61s at most")
    m["caught"] = {"gangs": 3, "timed_out": 0, "p50": None, "max": None}
    assert report.lines("fake", m, [])[-1] == "  out of stock: 0 of 3 gangs timed out"
    m["caught"] = {"gangs": 0, "timed_out": 0, "p50": None, "max": None}
    assert not any("out of stock:" in line for line in report.lines("fake", m, []))
