"""The live page's view of an event log (demo.timeline.board), on logs shaped like the recorder's."""

from __future__ import annotations

import json
from pathlib import Path

from demo.timeline import board
from demo.timeline.lanes import GONE
from demo.timeline.log import read
from demo.timeline.svg import COLORS, MEANINGS

JOB = "job-train-ab12c"
WL = f"job-{JOB}-1f2e3"
PR1 = f"{WL}-gpu-provisioning-1"
NODE_A, NODE_B = "aks-gpupool-vmss1", "aks-gpupool-vmss2"
POD0 = f"{JOB}-0-x9k2p"


def lane(t, name, state, detail="", of=None, obj=None):
    ev = {"t": t, "lane": name, "state": state, "detail": detail}
    if of:
        ev.update({"of": of, "name": obj or ""})
    return ev


def phases(t, *states, outcome="waiting", workload=WL):
    names = ("Submitted", "Quota reserved", "Capacity provisioning", "Pod scheduling", "Running")
    return {"t": t, "phases": [[n, s, f"{n} is {s}"] for n, s in zip(names, states)], "job": JOB,
            "workload": workload, "outcome": outcome}


def success_log():
    """The success path as the recorder writes it (times from 100)."""
    return [
        {"t": 99.0, "run": "start", "job": JOB, "title": "Success path"},
        lane(100.0, "Job", "suspended"), lane(100.0, "Workload", "none"), lane(100.0, "Nodes", "0"),
        lane(100.0, "Pods", "0"), lane(100.0, "ProvisioningRequest", "none"),
        phases(100.0, "done", "active", "pending", "pending", "pending", workload=""),
        lane(101.0, "Workload", "quota reserved"), lane(101.0, "ProvisioningRequest", "#1 created"),
        lane(101.0, "ProvisioningRequest #1", "created", PR1, "ProvisioningRequest", PR1),
        {"t": 101.5, "log": f'{{"level":"info","msg":"Created ProvisioningRequest","workload":'
                            f'{{"name":"{WL}","namespace":"demo"}},"provisioningRequest":{{"name":"{PR1}",'
                            f'"namespace":"demo"}}}}', "source": "kueue"},
        {"t": 102.0, "log": f"10:00:02 provreq demo/{PR1}: creating {NODE_A}, {NODE_B}", "source": "fake-ca"},
        lane(102.5, "ProvisioningRequest #1", "Provisioned", PR1, "ProvisioningRequest", PR1),
        lane(102.5, "Nodes", "2"),
        lane(102.5, f"Node {NODE_A}", "booting", "pool gpupool", "Nodes", NODE_A),
        lane(102.5, f"Node {NODE_B}", "booting", "pool gpupool", "Nodes", NODE_B),
        phases(103.0, "done", "done", "done", "active", "pending"),
        lane(103.0, "Job", "running"), lane(103.0, "Workload", "admitted"),
        lane(103.5, "Pods", "1 pending"), lane(103.5, f"Pod {POD0}", "pending", "", "Pods", POD0),
        {"t": 106.0, "cluster": "down", "detail": "connection refused"},
        {"t": 106.0, "cluster": "down", "detail": "connection refused again"},
        {"t": 109.0, "cluster": "up", "detail": "the apiserver answers again"},
        lane(117.0, f"Node {NODE_A}", "Ready", "", "Nodes", NODE_A),
        {"t": 117.1, "log": f"10:00:17 node {NODE_A}: Ready", "source": "fake-ca"},
        lane(118.0, "Pods", "1 running"), lane(118.0, f"Pod {POD0}", "running", f"on {NODE_A}", "Pods", POD0),
        {"t": 118.0, "marker": "both pods running"},
        lane(128.0, "Pods", "1 succeeded"), lane(128.0, f"Pod {POD0}", "succeeded", f"on {NODE_A}", "Pods", POD0),
        phases(128.0, "done", "done", "done", "done", "done", outcome="succeeded"),
        lane(128.0, "Job", "succeeded"),
        lane(140.0, f"Node {NODE_B}", "deleting", "", "Nodes", NODE_B),
        lane(141.0, f"Node {NODE_B}", GONE, "", "Nodes", NODE_B),
        {"t": 150.0, "run": "end", "job": JOB},
    ]


def ids(view):
    return [(l["id"], l["of"]) for l in view["lanes"]]


# ----------------------------------------------------------------------------- lanes and their order

def test_object_lanes_stand_in_the_place_of_the_summary_lane_they_detail():
    v = board.build(success_log())
    assert ids(v) == [("Job", None), ("Workload", None),
                      ("ProvisioningRequest #1", "ProvisioningRequest"),
                      (f"Node {NODE_A}", "Nodes"), (f"Node {NODE_B}", "Nodes"), (f"Pod {POD0}", "Pods")]


def test_a_summary_lane_without_object_lanes_stays_and_unknown_lanes_come_after_the_known():
    events = [lane(1.0, "Extra", "x"), lane(1.0, "Pods", "0"), lane(2.0, "Job", "suspended"),
              lane(3.0, "Pod p", "pending", "", "Pods", "p"), lane(3.0, "Nodes", "0"),
              lane(4.0, "Thing t", "on", "", "Things", "t")]
    assert board.lane_rows(events) == [("Job", None), ("Nodes", None), ("Pod p", "Pods"), ("Extra", None),
                                       ("Thing t", "Things")]


def test_object_lanes_keep_their_order_of_appearance_within_their_summary_lane():
    events = [lane(1.0, "Node b", "booting", "", "Nodes", "b"), lane(1.0, "Node a", "booting", "", "Nodes", "a"),
              lane(2.0, "Node b", "Ready", "", "Nodes", "b")]
    assert board.lane_rows(events) == [("Node b", "Nodes"), ("Node a", "Nodes")]


def test_segments_merge_repeats_stay_open_at_the_end_and_take_the_svg_colours():
    v = board.build(success_log())
    job = next(l for l in v["lanes"] if l["id"] == "Job")
    # the Job lane as the SVG tells it: unsuspended with its pod pending until the Pods lane says it runs
    assert job["segments"] == [
        {"start": 100.0, "stop": 103.0, "state": "suspended", "detail": "", "color": COLORS["amber"]},
        {"start": 103.0, "stop": 118.0, "state": "unsuspended · pods pending",
         "detail": "Kueue unsuspended the Job; its pods have not all started", "color": COLORS["amber"]},
        {"start": 118.0, "stop": 128.0, "state": "running", "detail": "", "color": COLORS["green"]},
        {"start": 128.0, "stop": None, "state": "succeeded", "detail": "", "color": COLORS["green"]}]


def test_a_gone_object_ends_its_lane():
    v = board.build(success_log())
    node_b = next(l for l in v["lanes"] if l["id"] == f"Node {NODE_B}")
    assert [(s["state"], s["start"], s["stop"]) for s in node_b["segments"]] == [
        ("booting", 102.5, 140.0), ("deleting", 140.0, 141.0)]


def test_segments_are_in_time_order_whatever_the_write_order():
    events = [lane(5.0, "Job", "running"), lane(1.0, "Job", "suspended"), lane(5.0, "Job", "running")]
    assert [(s["start"], s["stop"], s["state"]) for s in board.lane_segments(events, "Job")] == [
        (1.0, 5.0, "suspended"), (5.0, None, "running")]


def test_a_lane_without_events_has_no_segments():
    assert board.lane_segments([lane(1.0, "Job", "running")], "Node n") == []
    assert board.lane_segments([], "Job") == []


def test_an_object_gone_and_back_under_its_name_starts_its_lane_again():
    events = [lane(1.0, "Node n", "booting", "", "Nodes", "n"), lane(2.0, "Node n", GONE, "", "Nodes", "n"),
              lane(5.0, "Node n", "booting", "", "Nodes", "n"), lane(7.0, "Node n", "Ready", "", "Nodes", "n")]
    assert [(s["start"], s["stop"], s["state"]) for s in board.lane_segments(events, "Node n")] == [
        (1.0, 2.0, "booting"), (5.0, 7.0, "booting"), (7.0, None, "Ready")]


def test_a_segment_keeps_its_first_detail():
    events = [lane(1.0, "Pod p", "pending", "Unschedulable: 0/2", "Pods", "p"), lane(2.0, "Pod p", "pending", "x"),
              lane(3.0, "Pod p", "running", None)]
    assert [(s["state"], s["detail"]) for s in board.lane_segments(events, "Pod p")] == [
        ("pending", "Unschedulable: 0/2"), ("running", "")]


# ----------------------------------------------------------------------------- the moment shown

def test_the_view_at_a_moment_holds_only_what_was_written_by_then():
    v = board.build(success_log(), at=103.0)
    assert ids(v) == [("Job", None), ("Workload", None), ("ProvisioningRequest #1", "ProvisioningRequest"),
                      (f"Node {NODE_A}", "Nodes"), (f"Node {NODE_B}", "Nodes"), ("Pods", None)]
    assert [p["state"] for p in v["phases"]["rows"]] == ["done", "done", "done", "active", "pending"]
    assert (v["at"], v["t0"], v["first"], v["last"]) == (103.0, 100.0, 100.0, 150.0)
    assert v["run"]["live"] is True and v["run"]["ended"] is None
    job = next(l for l in v["lanes"] if l["id"] == "Job")
    assert job["segments"][-1] == {"start": 103.0, "stop": None, "state": "unsuspended · pods pending",
                                   "detail": "Kueue unsuspended the Job; its pods have not all started",
                                   "color": COLORS["amber"]}


def test_the_whole_log_is_the_view_at_its_last_event():
    events = success_log()
    assert board.build(events) == board.build(events, at=150.0)
    assert board.build(events)["at"] == 150.0
    assert board.build(events)["run"] == {"job": JOB, "title": "Success path", "started": 99.0, "ended": 150.0,
                                          "live": False}


def test_before_the_first_event_nothing_is_shown():
    v = board.build(success_log(), at=50.0)
    assert (v["lanes"], v["markers"], v["phases"]["rows"], v["t0"]) == ([], [], [], 100.0)
    assert board.build([], at=None)["lanes"] == []
    assert board.build([])["t0"] is None
    assert board.build([], at=3.0)["t0"] == 3.0
    only_marks = board.build([{"t": 5.0, "marker": "m"}, {"t": 9.0, "cluster": "down"}])
    assert (only_marks["first"], only_marks["t0"], only_marks["last"]) == (5.0, 5.0, 9.0)
    assert board.build(success_log())["label"] == ""


def test_the_first_lane_state_is_the_start_even_when_it_is_written_later():
    events = [lane(5.0, "Job", "suspended"), lane(6.0, "Job", "running"), lane(3.0, "Workload", "pending")]
    assert (board.build(events)["t0"], board.build(events)["first"]) == (3.0, 3.0)
    assert (board.build(events, at=5.0)["t0"], board.build(events, at=5.0)["first"]) == (5.0, 3.0)


def test_a_marker_deadline_or_decision_counts_as_written_with_the_event_before_it():
    events = [lane(10.0, "Job", "suspended"), {"t": 30.0, "deadline": JOB}, {"t": 25.0, "marker": "ahead"},
              {"t": 5.0, "decision": "timed-out"}, lane(11.0, "Job", "running")]
    assert board.written_times(events) == [10.0, 10.0, 10.0, 10.0, 11.0]
    assert [m["label"] for m in board.build(events, at=10.0)["markers"]] == ["committed: timed-out", "ahead",
                                                                              "deadline"]
    assert board.written_times([{"t": 7.0, "marker": "first"}, lane(3.0, "Job", "x"), lane(9.0, "Job", "y")]) == [
        7.0, 7.0, 9.0]
    assert board.upto(events, None) == events and board.upto(events, None) is not events
    assert board.upto(events, 10.5) == events[:4]


def test_a_run_is_live_while_its_last_word_is_a_start():
    events = [{"t": 1.0, "run": "start", "job": JOB}, {"t": 2.0, "run": "end", "job": JOB},
              {"t": 3.0, "run": "start", "job": JOB}]
    assert board.build(events)["run"]["live"] is True
    assert board.build(events[:2])["run"]["live"] is False
    assert board.build(events[:1])["run"]["live"] is True
    same = [{"t": 1.0, "run": "start", "job": JOB}, {"t": 1.0, "run": "end", "job": JOB}]
    assert board.build(same)["run"]["live"] is False
    assert board.build(same[::-1])["run"]["live"] is True
    assert board.build([lane(1.0, "Job", "x")])["run"] == {"job": "", "title": "", "started": None, "ended": None,
                                                          "live": False}


def test_times_are_rounded_to_milliseconds():
    v = board.build([lane(1.23456, "Job", "x"), {"t": 2.00049, "marker": "m"}])
    assert (v["t0"], v["lanes"][0]["segments"][0]["start"], v["markers"][0]["t"]) == (1.235, 1.235, 2.0)


# ----------------------------------------------------------------------------- phases, markers, the cluster

def test_the_phases_are_the_last_written_while_the_run_goes_on():
    v = board.build(success_log(), at=149.0)
    assert v["phases"]["rows"][4] == {"name": "Running", "state": "done", "detail": "Running is done", "symbol": "✓"}
    assert (v["phases"]["outcome"], v["phases"]["job"], v["phases"]["workload"], v["phases"]["over"]) == (
        "succeeded", JOB, WL, "now")
    at_103 = board.build(success_log(), at=103.0)["phases"]
    assert [r["symbol"] for r in at_103["rows"]] == ["✓", "✓", "✓", "…", "·"]
    assert [r["detail"] for r in at_103["rows"]][2:4] == ["Capacity provisioning is done", "Pod scheduling is active"]
    assert board.build(success_log())["phases"]["over"] == "run"
    failed = board.build([phases(1.0, "done", "failed", "pending", "pending", "unknown", outcome=None)])
    assert [r["symbol"] for r in failed["phases"]["rows"]][1:] == ["✗", "·", "·", "?"]
    assert failed["phases"]["outcome"] == ""
    bare = board.build([{"t": 1.0, "phases": [["Submitted", "active", ""]]}])["phases"]
    assert (bare["job"], bare["workload"], bare["outcome"]) == ("", "", "")
    assert board.build([lane(1.0, "Job", "x")])["phases"] == {"rows": [], "outcome": "", "job": "", "workload": "",
                                                             "over": "now"}


def test_the_workload_named_is_the_last_phases_while_the_run_goes_on_and_the_last_named_once_it_ended():
    start = {"t": 0.5, "run": "start", "job": JOB, "title": "t"}
    named, gone = phases(1.0, "done", "active"), phases(2.0, "done", "done", workload="")
    assert board.build([start, named, gone])["phases"]["workload"] == ""          # live: the Workload is gone now
    end = {"t": 3.0, "run": "end", "job": JOB}
    assert board.build([start, named, gone, end])["phases"]["workload"] == WL     # ended: the one the run had
    never = [start, phases(1.0, "done", "active", workload=""), end]
    assert board.build(never)["phases"]["workload"] == ""


def test_the_legend_lists_each_colour_drawn_with_its_class_and_meaning():
    v = board.build([lane(1.0, "Job", "suspended"), lane(2.0, "Job", "running"), lane(2.0, "Nodes", "2")])
    assert v["legend"] == [{"class": c, "color": COLORS[c], "meaning": MEANINGS[c]} for c in ("green", "amber", "grey")]


def test_markers_the_deadline_and_the_decision_in_time_order():
    events = [lane(1.0, "Job", "suspended"), {"t": 21.0, "deadline": JOB, "detail": "20s after submission"},
              {"t": 21.5, "marker": "deadline"}, {"t": 12.0, "marker": "ValidUntilSeconds (ignored)"},
              {"t": 21.2, "decision": "timed-out", "detail": "on Workload w"}, {"t": 40.0, "marker": "deadline"}]
    assert board.markers(events) == [
        {"t": 12.0, "label": "ValidUntilSeconds (ignored)", "kind": "marker", "detail": ""},
        {"t": 21.0, "label": "deadline", "kind": "deadline", "detail": "20s after submission"},
        {"t": 21.2, "label": "committed: timed-out", "kind": "decision", "detail": "on Workload w"},
        {"t": 40.0, "label": "deadline", "kind": "marker", "detail": ""}]


def test_a_scenarios_deadline_marker_is_the_jobs_deadline_within_a_second():
    near = [{"t": 20.0, "deadline": JOB}, {"t": 21.0, "marker": "deadline"}, {"t": 19.0, "marker": "deadline"}]
    assert [m["kind"] for m in board.markers(near)] == ["deadline"]
    far = [{"t": 20.0, "deadline": JOB}, {"t": 21.01, "marker": "deadline"}, {"t": 21.0, "marker": "other"}]
    assert [m["kind"] for m in board.markers(far)] == ["deadline", "marker", "marker"]
    assert board.markers([{"t": 3.0, "deadline": JOB}, {"t": 4.0, "decision": "timed-out"}]) == [
        {"t": 3.0, "label": "deadline", "kind": "deadline", "detail": ""},
        {"t": 4.0, "label": "committed: timed-out", "kind": "decision", "detail": ""}]


def test_outages_span_from_the_first_down_to_the_next_up():
    v = board.build(success_log())
    assert v["outages"] == [{"start": 106.0, "stop": 109.0, "detail": "connection refused"}]
    assert v["cluster"] == "up"
    during = board.build(success_log(), at=107.0)
    assert during["outages"] == [{"start": 106.0, "stop": None, "detail": "connection refused"}]
    assert during["cluster"] == "down"
    twice = [{"t": 1.0, "cluster": "up"}, {"t": 2.0, "cluster": "down"}, {"t": 3.0, "cluster": "up"},
             {"t": 4.0, "cluster": "up"}, {"t": 5.0, "cluster": "down", "detail": None}]
    assert board.outages(twice) == [{"start": 2.0, "stop": 3.0, "detail": ""}, {"start": 5.0, "stop": None, "detail": ""}]


# ----------------------------------------------------------------------------- the controllers' log lines

def test_log_lines_go_beside_the_lane_of_the_longest_name_they_carry():
    v = board.build(success_log())
    by_lane = {l["id"]: [(x["source"], x["text"]) for x in l["logs"]] for l in v["lanes"]}
    assert by_lane["ProvisioningRequest #1"] == [
        ("kueue", f"Created ProvisioningRequest (provisioningRequest=demo/{PR1}, workload=demo/{WL})"),
        ("fake-ca", f"provreq demo/{PR1}: creating {NODE_A}, {NODE_B}")]
    assert by_lane[f"Node {NODE_A}"] == [("fake-ca", f"node {NODE_A}: Ready")]
    assert by_lane["Job"] == by_lane["Workload"] == by_lane[f"Node {NODE_B}"] == []
    counts = {l["id"]: l["log_count"] for l in v["lanes"]}
    assert (counts["ProvisioningRequest #1"], counts[f"Node {NODE_A}"], counts["Job"]) == (2, 1, 0)


def test_a_line_naming_no_lane_shown_goes_beside_the_job_and_lanes_not_shown_take_none():
    events = [{"t": 1.0, "run": "start", "job": JOB}, lane(1.0, "Job", "suspended"), lane(1.0, "Workload", "none"),
              phases(1.0, "active", "pending", "pending", "pending", "pending"),
              {"t": 2.0, "log": "something about nothing", "source": "deadline"},
              {"t": 3.0, "log": f"deadline demo/{JOB}: not admitted yet", "source": "deadline"},
              {"t": 4.0, "log": f"workload demo/{WL} pending", "source": "kueue"},
              {"t": 5.0, "log": f"{PR1} made", "source": "kueue"}]
    got = board.log_lines(events, ["Job", "Workload"])
    # the request's name holds the Workload's: without its own lane, the line goes beside the Workload
    assert {k: [x["t"] for x in v] for k, v in got.items()} == {"Job": [2.0, 3.0], "Workload": [4.0, 5.0]}
    assert board.log_lines(events, ["Workload"])["Workload"][0]["t"] == 2.0
    assert [x["t"] for x in board.log_lines(events, ["Workload", "Job"])["Job"]] == [2.0, 3.0]
    assert board.log_lines(events, []) == {}
    assert board.log_lines(events, ["Pods"]) == {"Pods": [{"t": t, "source": s, "text": x} for t, s, x in (
        (2.0, "deadline", "something about nothing"), (3.0, "deadline", f"deadline demo/{JOB}: not admitted yet"),
        (4.0, "kueue", f"workload demo/{WL} pending"), (5.0, "kueue", f"{PR1} made"))]}


def test_names_come_from_the_run_the_phases_and_the_object_lanes_only():
    events = [{"t": 1.0, "run": "start", "job": "j1"}, {"t": 1.0, "phases": [["a", "b", "c"]], "workload": "w1"},
              {"t": 1.0, "lane": "Job", "state": "x", "job": "not-a-name"},
              {"t": 2.0, "phases": [["a", "b", "c"]], "job": "j2", "workload": ""},
              lane(2.0, "Node n1", "booting", "", "Nodes", "n1"), lane(2.0, "Node n2", "booting", "", "Nodes", ""),
              {"t": 3.0, "log": "x", "source": "s", "job": "j3", "workload": "w3"}]
    assert board._names(events) == {"j1": "Job", "w1": "Workload", "j2": "Job", "n1": "Node n1"}


def test_only_the_last_lines_of_a_lane_are_in_the_view():
    events = [lane(0.0, "Job", "suspended"), {"t": 0.0, "run": "start", "job": JOB}] + [
        {"t": float(i), "log": f"{JOB} line {i}", "source": "deadline"} for i in range(1, board.LOG_KEEP + 6)]
    job = board.build(events)["lanes"][0]
    assert job["log_count"] == board.LOG_KEEP + 5
    assert [x["text"] for x in job["logs"]] == [f"{JOB} line {i}" for i in range(6, board.LOG_KEEP + 6)]


def test_brief_drops_the_clock_and_shortens_kueues_json_lines():
    assert board.brief("12:00:01 provreq demo/x: ok 12:00:02 ") == "provreq demo/x: ok 12:00:02"
    assert board.brief("12:00:01.250 a") == "a"
    assert board.brief("12:00:01,250 a") == "a"
    assert board.brief("  12:00 no clock") == "12:00 no clock"
    line = json.dumps({"level": "info", "ts": "2026-01-01T00:00:00Z", "caller": "x.go:1", "logger": "l",
                       "msg": "Workload admitted", "workload": {"name": "w", "namespace": "demo"},
                       "clusterQueue": {"name": "gpu-a100"}, "attempt": 2, "stacktrace": "...", "controller": "wl"})
    assert board.brief(line) == "Workload admitted (attempt=2, clusterQueue=gpu-a100, controller=wl, workload=demo/w)"
    assert board.brief(json.dumps({"level": "error", "msg": "boom"})) == "error: boom"
    assert board.brief(json.dumps({"level": "warn", "msg": "hm"})) == "warn: hm"
    assert board.brief(json.dumps({"level": "Level(-3)", "msg": "Reconciler error"})) == "Reconciler error"
    assert board.brief(json.dumps({"msg": "plain"})) == "plain"
    assert board.brief(json.dumps({"msg": "m", "obj": {"name": "n", "kind": "K"}})) == \
        'm (obj={"kind": "K", "name": "n"})'
    assert board.brief(json.dumps({"msg": "m", "o": {"namespace": "ns"}})) == 'm (o={"namespace": "ns"})'
    assert board.brief('{"no": "msg"}') == '{"no": "msg"}'
    assert board.brief('["msg"]') == '["msg"]'
    assert board.brief("{not json") == "{not json"


# ----------------------------------------------------------------------------- the view as a whole

def test_the_view_carries_the_label_and_the_problems_and_is_json():
    v = board.build(success_log(), label="20260101-120000/success", problems=("x.jsonl:3: not an event",))
    assert (v["label"], v["problems"]) == ("20260101-120000/success", ["x.jsonl:3: not an event"])
    assert json.loads(json.dumps(v)) == v
    assert set(v) == {"label", "run", "t0", "at", "first", "last", "phases", "lanes", "legend", "markers",
                      "outages", "cluster", "problems"}
    assert v["markers"] == [{"t": 118.0, "label": "both pods running", "kind": "marker", "detail": ""}]


# ----------------------------------------------------------------------------- a recorded success run

RECORDED = Path(__file__).parent / "recorded" / "success-run.jsonl"


def recorded():
    """`AUTO=1 ./scenario.sh success` on the kwok cluster (fake autoscaler), the log as the recorder wrote it: both
    nodes booked, both pods scheduled and run, the Job Succeeded; then the scale-down and the Job's deletion
    (which the recorder's watches still wrote after its "end")."""
    return read(RECORDED)


def test_the_recorded_run_is_a_success_whose_last_phases_are_its_teardown():
    """What the page showed before: the last phases written, after the run, from the objects being deleted."""
    events = recorded()
    last = [e for e in events if "phases" in e][-1]["phases"]
    assert [r[1] for r in last] == ["done"] * 5
    assert dict((n, d) for n, _, d in last) == {
        "Submitted": "Job applied (suspended)",
        "Quota reserved": "quota was reserved (the Workload no longer exists)",
        "Capacity provisioning": "capacity booked on 1 node(s) of gpupool",
        "Pod scheduling": "1/2 on aks-gpupool-vmss900714",
        "Running": "Succeeded (2/2 completions)"}


def test_after_the_recorded_run_the_cards_say_what_it_reached_not_its_teardown():
    v = board.build(recorded())
    assert v["run"]["live"] is False
    p = v["phases"]
    assert (p["over"], p["outcome"], p["job"], p["workload"]) == (
        "run", "succeeded", "job-train-d5400", "job-job-train-d5400-10749")
    assert {r["name"]: (r["state"], r["detail"]) for r in p["rows"]} == {
        "Submitted": ("done", "Job applied (suspended)"),
        "Quota reserved": ("done", "16 nvidia.com/gpu on ClusterQueue gpu-a100 (flavor a100-scale); "
                                   "the Workload was deleted after the Job completed"),
        "Capacity provisioning": ("done", "capacity booked on 2 node(s) of gpupool"),
        "Pod scheduling": ("done", "2/2 on aks-gpupool-vmss164189, aks-gpupool-vmss900714"),
        "Running": ("done", "Succeeded (2/2 completions)")}
    assert not any("no longer exists" in r["detail"] for r in p["rows"])
    # replayed to the moment its recorder said "end" (before the teardown was written): the same summary
    end = next(e["t"] for e in recorded() if e.get("run") == "end")
    assert [r["detail"] for r in board.build(recorded(), at=end)["phases"]["rows"]][2:4] == [
        "capacity booked on 2 node(s) of gpupool", "2/2 on aks-gpupool-vmss164189, aks-gpupool-vmss900714"]


def test_while_the_recorded_run_goes_on_the_cards_are_its_current_state():
    events = recorded()
    both_pending = next(e["t"] for e in events if e.get("lane") == "Pods" and e["state"] == "2 pending")
    p = board.build(events, at=both_pending)["phases"]
    assert p["over"] == "now" and p["outcome"] == "waiting"
    assert [(r["name"], r["state"]) for r in p["rows"]][2:] == [
        ("Capacity provisioning", "done"), ("Pod scheduling", "active"), ("Running", "pending")]
    assert p["rows"][3]["detail"] == "0/2 scheduled: 2 node(s) booting (NotReady until their VMs are up)"


def _segments(view, lane_id):
    return next(l["segments"] for l in view["lanes"] if l["id"] == lane_id)


def test_on_the_recorded_run_the_job_lane_runs_only_once_its_pods_do():
    events = recorded()
    unsuspended = next(e["t"] for e in events if e.get("lane") == "Job" and e["state"] == "running")
    pods = {e["lane"] for e in events if e.get("of") == "Pods"}
    assert len(pods) == 2
    all_running = max(next(e["t"] for e in events if e.get("lane") == p and e["state"] == "running") for p in pods)
    job = _segments(board.build(events), "Job")
    assert [s["state"] for s in job] == ["suspended", "unsuspended · pods pending", "unsuspended · 1/2 pods started",
                                         "running", "succeeded"]
    pending = job[1]
    assert (pending["start"], pending["color"]) == (unsuspended, COLORS["amber"])
    assert pending["stop"] > unsuspended + 10          # the 14 s the two nodes booted
    running = next(s for s in job if s["state"] == "running")
    assert running["start"] == all_running and running["color"] == COLORS["green"]


def test_on_the_recorded_run_the_bookings_end_is_no_failure_and_every_colour_has_a_legend():
    v = board.build(recorded())
    request = _segments(v, "ProvisioningRequest #1")
    expired = [s for s in request if "BookingExpired" in s["state"]]
    assert [s["state"] for s in expired] == ["Provisioned+BookingExpired (as expected)"]
    assert expired[0]["color"] == COLORS["ended"] != COLORS["red"]
    assert "its pods hold the capacity" in expired[0]["detail"]
    workload = _segments(v, "Workload")
    assert (workload[-1]["state"], workload[-1]["color"]) == ("deleted after completing", COLORS["ended"])
    colours = {s["color"] for lane in v["lanes"] for s in lane["segments"]}
    assert COLORS["red"] not in colours                 # nothing failed in this run
    assert {k["color"] for k in v["legend"]} == colours
    assert all(k["meaning"] for k in v["legend"])
