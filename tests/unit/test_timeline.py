"""Event log (demo.events) and timeline picture (demo.timeline)."""

from __future__ import annotations

import json
import re
from pathlib import Path
import xml.etree.ElementTree as ET

import pytest

import k8s_objects as K
from demo.timeline import svg as timeline
from demo.timeline import log as events
from demo.timeline.lanes import snapshot_states
from demo.timeline.log import EventLog
from demo.jobs.snapshot import Snapshot

SVG = "{http://www.w3.org/2000/svg}"


def lines(path) -> list[dict]:
    return [json.loads(l) for l in path.read_text().splitlines()]


# ------------------------------------------------------------------------------ EventLog

def test_record_dedupes_consecutive_equal_states_per_lane(tmp_path):
    log = EventLog(tmp_path / "ev.jsonl")
    assert log.record("Job", "suspended", "created", t=100.0) is True
    assert log.record("Job", "suspended", "again", t=101.0) is False
    assert log.record("Workload", "pending", t=101.5) is True
    assert log.record("Job", "running", t=102.0) is True
    assert log.record("Job", "suspended", t=103.0) is True   # back to an earlier state: a change
    assert lines(tmp_path / "ev.jsonl") == [
        {"t": 100.0, "lane": "Job", "state": "suspended", "detail": "created"},
        {"t": 101.5, "lane": "Workload", "state": "pending", "detail": ""},
        {"t": 102.0, "lane": "Job", "state": "running", "detail": ""},
        {"t": 103.0, "lane": "Job", "state": "suspended", "detail": ""},
    ]


def test_default_time_comes_from_the_clock(tmp_path):
    ticks = iter([50.0, 51.25])
    log = EventLog(tmp_path / "ev.jsonl", clock=lambda: next(ticks))
    log.record("Nodes", "0")
    log.mark("deadline")
    assert lines(tmp_path / "ev.jsonl") == [
        {"t": 50.0, "lane": "Nodes", "state": "0", "detail": ""},
        {"t": 51.25, "marker": "deadline"},
    ]


def test_marks_are_never_deduped(tmp_path):
    log = EventLog(tmp_path / "ev.jsonl")
    log.mark("deadline", t=1.0)
    log.mark("deadline", t=2.0)
    assert [e["t"] for e in events.read(tmp_path / "ev.jsonl")] == [1.0, 2.0]


def test_reopened_log_continues_deduping(tmp_path):
    path = tmp_path / "ev.jsonl"
    EventLog(path).record("Pods", "2 running", t=1.0)
    again = EventLog(path)
    assert again.record("Pods", "2 running", t=2.0) is False
    assert again.record("Pods", "2 succeeded", t=3.0) is True
    assert [e["state"] for e in events.read(path)] == ["2 running", "2 succeeded"]


def test_record_all_writes_changed_lanes_at_one_time(tmp_path):
    log = EventLog(tmp_path / "ev.jsonl")
    assert log.record_all({"Job": "suspended", "Nodes": "0"}, t=5.0) == ["Job", "Nodes"]
    assert log.record_all({"Job": "suspended", "Nodes": "2"}, t=9.0) == ["Nodes"]
    assert [(e["t"], e["lane"], e["state"]) for e in events.read(tmp_path / "ev.jsonl")] == [
        (5.0, "Job", "suspended"), (5.0, "Nodes", "0"), (9.0, "Nodes", "2")]


def test_read_tolerates_a_truncated_last_line(tmp_path):
    path = tmp_path / "ev.jsonl"
    path.write_text('{"t": 1, "lane": "Job", "state": "suspended", "detail": ""}\n'
                    '{"t": 2, "marker": "deadline"}\n'
                    '{"t": 3, "lane": "Job", "sta')
    assert EventLog.read(path) == [{"t": 1, "lane": "Job", "state": "suspended", "detail": ""},
                                   {"t": 2, "marker": "deadline"}]


def test_read_rejects_a_corrupt_middle_line(tmp_path):
    path = tmp_path / "ev.jsonl"
    path.write_text('{"t": 1, "marker": "a"}\nnot json\n{"t": 2, "marker": "b"}\n')
    with pytest.raises(ValueError, match=":2:"):
        events.read(path)


# ----------------------------------------------------------------------- snapshot_states

def test_snapshot_fresh_job():
    assert snapshot_states(Snapshot(**K.snap_fresh())) == {
        "Job": "suspended", "Workload": "none", "AdmissionCheck": "-",
        "ProvisioningRequest": "none", "Nodes": "0", "Pods": "0"}


def test_snapshot_while_provisioning():
    s = snapshot_states(Snapshot(**K.snap_reserved_check_pending()))
    # the autoscaler's Provisioned=False reason shows beside the attempt
    assert (s["Workload"], s["AdmissionCheck"], s["ProvisioningRequest"]) == (
        "quota reserved", "Pending", "#1 Accepted · CapacityIsNotFound")


def test_snapshot_retry():
    s = snapshot_states(Snapshot(**K.snap_check_retry()))
    assert (s["AdmissionCheck"], s["ProvisioningRequest"]) == ("Retry", "#1 Failed")


def test_snapshot_admitted_pods_pending():
    assert snapshot_states(Snapshot(**K.snap_admitted_pods_pending())) == {
        "Job": "running", "Workload": "admitted", "AdmissionCheck": "Ready",
        "ProvisioningRequest": "#1 Provisioned", "Nodes": "3", "Pods": "2 pending"}


def test_snapshot_mixed_pods_and_deleting_nodes():
    snap = K.snap_pods_running()
    snap["pods"][1] = K.pod(1, K.NODE_A, "Succeeded")
    snap["nodes"] = [K.node(K.NODE_A, "u"), K.node(K.NODE_B, "u", deleting=True)]
    s = snapshot_states(Snapshot(**snap))
    assert (s["Pods"], s["Nodes"]) == ("1 running, 1 succeeded", "1 (1 deleting)")


def test_snapshot_complete():
    s = snapshot_states(Snapshot(**K.snap_job_complete()))
    assert (s["Job"], s["Workload"], s["Pods"]) == ("succeeded", "finished", "2 succeeded")


def test_snapshot_deadline():
    s = snapshot_states(Snapshot(**K.snap_deadline()))
    assert s["Job"] == "suspended · marked AdmissionTimeout"
    assert s["Workload"] == "evicted: Deactivated"
    assert s["ProvisioningRequest"] == "none"


def test_snapshot_inactive_before_eviction_and_deleted():
    snap = K.snap_reserved_check_pending()
    snap["workload"]["spec"]["active"] = False
    assert snapshot_states(Snapshot(**snap))["Workload"] == "inactive"
    assert snapshot_states(Snapshot(None, None, [], [], []))["Job"] == "deleted"
    assert snapshot_states(Snapshot(None, None, [], [], []))["Workload"] == "deleted"


def test_snapshot_rejected():
    s = snapshot_states(Snapshot(**K.snap_rejected()))
    assert (s["Workload"], s["AdmissionCheck"], s["ProvisioningRequest"]) == (
        "evicted: DeactivatedDueToAdmissionCheck", "Rejected", "#3 Failed")


# ---------------------------------------------------------------------------- timeline

EVENTS = [
    {"t": 1000.0, "lane": "Workload", "state": "pending", "detail": ""},
    {"t": 1000.0, "lane": "Job", "state": "suspended", "detail": "created"},
    {"t": 1000.0, "lane": "Extra", "state": "x", "detail": ""},
    {"t": 1005.0, "lane": "Workload", "state": "quota reserved", "detail": ""},
    {"t": 1005.0, "lane": "AdmissionCheck", "state": "Pending", "detail": ""},
    {"t": 1010.0, "lane": "ProvisioningRequest", "state": "#1 Accepted", "detail": ""},
    {"t": 1060.0, "marker": "deadline"},
    {"t": 1060.0, "lane": "Workload", "state": "evicted: Deactivated", "detail": ""},
    {"t": 1061.0, "lane": "Job", "state": "suspended · marked AdmissionTimeout", "detail": ""},
]


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return root


def rects(root: ET.Element) -> list[ET.Element]:
    """The lanes' bars (not the legend's swatches)."""
    return [r for r in root.findall(f".//{SVG}rect") if r.get("class", "").startswith("state ")]


def texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text")]


def test_svg_has_one_rect_per_segment():
    root = parse(timeline.render_svg(EVENTS, "deadline demo"))
    # Workload 3 + Job 2 + Extra 1 + AdmissionCheck 1 + ProvisioningRequest 1
    assert len(rects(root)) == 8


def test_repeated_states_merge_into_one_segment():
    evs = [{"t": 0, "lane": "Job", "state": "suspended"}, {"t": 3, "lane": "Job", "state": "suspended"},
           {"t": 6, "lane": "Job", "state": "running"}]
    assert len(rects(parse(timeline.render_svg(evs, "t")))) == 2


def test_lanes_known_first_then_in_order_of_appearance():
    root = parse(timeline.render_svg(EVENTS, "t"))
    labels = [t.text for t in root.iter(f"{SVG}text") if t.get("text-anchor") == "end"]
    assert labels == ["Job", "Workload", "AdmissionCheck", "ProvisioningRequest", "Extra"]


def test_segment_geometry_follows_time():
    evs = [{"t": 10, "lane": "Job", "state": "a"}, {"t": 20, "lane": "Job", "state": "b"},
           {"t": 25, "lane": "Job", "state": "c"}, {"t": 40, "lane": "Nodes", "state": "2"}]
    r = rects(parse(timeline.render_svg(evs, "t")))
    job = [x for x in r if x.get("y") == r[0].get("y")]
    w = [float(x.get("width")) for x in job]
    assert w[0] == pytest.approx(2 * w[1], rel=0.01)          # 10 s vs 5 s
    xs = [float(x.get("x")) for x in job]
    assert xs[1] == pytest.approx(xs[0] + w[0], abs=0.2)       # contiguous
    assert xs == sorted(xs)


def test_colors_by_state_keyword():
    assert timeline.color_for("2 running") == timeline.COLORS["green"]
    assert timeline.color_for("Ready") == timeline.COLORS["green"]
    assert timeline.color_for("#1 Provisioned") == timeline.COLORS["green"]
    assert timeline.color_for("suspended") == timeline.COLORS["amber"]
    assert timeline.color_for("#1 Accepted") == timeline.COLORS["amber"]
    assert timeline.color_for("#2 Failed") == timeline.COLORS["red"]
    assert timeline.color_for("Rejected") == timeline.COLORS["red"]
    assert timeline.color_for("evicted: Deactivated") == timeline.COLORS["red"]
    assert timeline.color_for("suspended · marked AdmissionTimeout") == timeline.COLORS["red"]
    assert timeline.color_for("2") == timeline.COLORS["grey"]
    root = parse(timeline.render_svg(EVENTS, "t"))
    fills = {r.find(f"{SVG}title").text.split(" (t=")[0]: r.get("fill") for r in rects(root)}
    assert fills["Workload: evicted: Deactivated"] == timeline.COLORS["red"]
    assert fills["AdmissionCheck: Pending"] == timeline.COLORS["amber"]


def test_marker_is_a_dashed_red_line_with_a_label():
    root = parse(timeline.render_svg(EVENTS, "t"))
    dashed = [l for l in root.iter(f"{SVG}line") if l.get("stroke-dasharray")]
    assert len(dashed) == 1
    assert dashed[0].get("stroke") == timeline.MARKER_COLOR
    assert dashed[0].get("x1") == dashed[0].get("x2")
    label = [t for t in root.iter(f"{SVG}text") if t.text == "deadline"]
    assert len(label) == 1 and float(label[0].get("y")) < float(dashed[0].get("y2"))
    # the marker sits where the Workload's eviction starts (same t)
    evicted = [r for r in rects(root) if "evicted" in r.find(f"{SVG}title").text]
    assert float(evicted[0].get("x")) == pytest.approx(float(dashed[0].get("x1")), abs=0.2)


def test_state_text_only_when_it_fits():
    evs = [{"t": 0, "lane": "Job", "state": "a-very-long-state-name-that-cannot-fit"},
           {"t": 0.1, "lane": "Job", "state": "ok"}, {"t": 100, "lane": "Nodes", "state": "2"}]
    root = parse(timeline.render_svg(evs, "t"))
    shown = texts(root)
    assert "ok" in shown
    assert "a-very-long-state-name-that-cannot-fit" not in shown
    # still available as the bar's tooltip
    assert any("a-very-long-state-name" in (r.find(f"{SVG}title").text or "") for r in rects(root))


def test_text_is_escaped():
    evs = [{"t": 0, "lane": "Job<&>", "state": "<b>&\"x\"", "detail": "a < b"},
           {"t": 1, "marker": "dead&line"}]
    svg = timeline.render_svg(evs, 'title <&> "q"')
    assert "<b>" not in svg and "&lt;b&gt;&amp;" in svg
    root = parse(svg)
    assert root.find(f"{SVG}title").text == 'title <&> "q"'
    assert "<b>&\"x\"" in texts(root)
    assert "dead&line" in texts(root)
    assert "Job<&>" in texts(root)


def test_empty_log_is_still_valid_svg():
    root = parse(timeline.render_svg([], "nothing"))
    assert rects(root) == []
    assert "no events" in texts(root)


def test_write_svg_from_a_log(tmp_path):
    log = EventLog(tmp_path / "ev.jsonl")
    for ev in EVENTS:
        if "marker" in ev:
            log.mark(ev["marker"], t=ev["t"])
        else:
            log.record(ev["lane"], ev["state"], ev["detail"], t=ev["t"])
    out = timeline.write(tmp_path / "ev.jsonl", tmp_path / "pics" / "timeline.svg", "from log")
    root = parse(out.read_text())
    assert len(rects(root)) == 8
    assert "from log" in texts(root)


def test_write_png_without_converter_is_a_clear_error(tmp_path, monkeypatch):
    log = EventLog(tmp_path / "ev.jsonl")
    log.record("Job", "suspended", t=0)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(timeline.UnsupportedOutput, match="only SVG"):
        timeline.write(tmp_path / "ev.jsonl", tmp_path / "timeline.png", "t")
    assert not (tmp_path / "timeline.png").exists()


# ------------------------------------------------------------------------------ what the live page reads

def test_object_lanes_carry_their_summary_lane_and_name(tmp_path):
    log = EventLog(tmp_path / "ev.jsonl")
    assert log.record("Node n1", "booting", "pool gpupool", t=1.0, of="Nodes", name="n1") is True
    assert log.record("Node n1", "booting", t=2.0, of="Nodes", name="n1") is False
    log.record("Node n2", "Ready", t=3.0, of="Nodes")
    assert lines(tmp_path / "ev.jsonl") == [
        {"t": 1.0, "lane": "Node n1", "state": "booting", "detail": "pool gpupool", "of": "Nodes", "name": "n1"},
        {"t": 3.0, "lane": "Node n2", "state": "Ready", "detail": "", "of": "Nodes", "name": ""}]


def test_notes_are_written_once_per_change_and_remembered_across_a_reopen(tmp_path):
    path = tmp_path / "ev.jsonl"
    log = EventLog(path)
    rows = [["Submitted", "done", "Job applied"]]
    assert log.note("phases", rows, t=1.0, job="j", outcome="waiting") is True
    assert log.note("phases", [list(r) for r in rows], t=2.0, job="j", outcome="other") is False
    assert log.note("cluster", "down", t=3.0, detail="refused") is True
    assert log.note("cluster", "down", t=3.5, detail="refused again") is False
    assert log.note("cluster", "up", t=4.0) is True
    assert log.note("deadline", "j", t=20.0) is True
    assert log.note("deadline", "j", t=20.0) is False
    assert log.note("deadline", "j", t=25.0) is True            # the annotation changed: a new deadline
    log.log_line("fake-ca", "a line", t=5.0)
    log.log_line("fake-ca", "a line", t=5.0)
    log.run("start", "j", t=0.5, title="Success")
    log.run("end", "j", t=9.0)
    assert lines(path) == [
        {"t": 1.0, "phases": rows, "job": "j", "outcome": "waiting"},
        {"t": 3.0, "cluster": "down", "detail": "refused"},
        {"t": 4.0, "cluster": "up"},
        {"t": 20.0, "deadline": "j"}, {"t": 25.0, "deadline": "j"},
        {"t": 5.0, "log": "a line", "source": "fake-ca"}, {"t": 5.0, "log": "a line", "source": "fake-ca"},
        {"t": 0.5, "run": "start", "job": "j", "title": "Success"}, {"t": 9.0, "run": "end", "job": "j"}]
    again = EventLog(path)
    assert again.note("phases", rows, t=10.0) is False
    assert again.note("cluster", "up", t=10.0) is False
    assert again.note("deadline", "j", t=25.0) is False
    assert again.note("decision", "timed-out", t=30.0) is True
    assert again.note("decision", "timed-out", t=30.0) is False


@pytest.mark.parametrize("line, why", [
    ('{"t": 1, "lane": "Node a", "state": "x", "of": "Nodes"}', '"of" and "name" must be strings'),
    ('{"t": 1, "lane": "Node a", "state": "x", "of": "", "name": "a"}', '"of" and "name" must be strings'),
    ('{"t": 1, "lane": "Node a", "state": "x", "of": 3, "name": "a"}', '"of" and "name" must be strings'),
    ('{"t": 1, "phases": []}', '"phases" is not a non-empty list'),
    ('{"t": 1, "phases": "done"}', '"phases" is not a non-empty list'),
    ('{"t": 1, "phases": [["a", "b"]]}', "is not [name, state, detail]"),
    ('{"t": 1, "phases": [["a", "b", 3]]}', "is not [name, state, detail]"),
    ('{"t": 1, "phases": ["abc"]}', "is not [name, state, detail]"),
    ('{"t": 1, "log": "x"}', 'a log line needs "log" and "source" strings'),
    ('{"t": 1, "log": 3, "source": "kueue"}', 'a log line needs "log" and "source" strings'),
    ('{"t": 1, "cluster": "sideways"}', '"cluster" is not one of down, up'),
    ('{"t": 1, "run": "paused"}', '"run" is not one of start, end'),
    ('{"t": 1, "deadline": 20}', '"deadline" is not a string'),
    ('{"t": 1, "decision": null}', '"decision" is not a string'),
    ('{"t": 1, "other": "x"}', "neither a lane state"),
])
def test_every_kind_of_event_is_checked(tmp_path, line, why):
    path = tmp_path / "ev.jsonl"
    path.write_text(f'{{"t": 0, "marker": "a"}}\n{line}\n{{"t": 2, "marker": "b"}}\n')
    with pytest.raises(ValueError, match=":2: not an event: .*" + re.escape(why)):
        events.read(path)


def test_every_kind_of_event_reads_back(tmp_path):
    path = tmp_path / "ev.jsonl"
    good = [{"t": 1, "lane": "Node a", "state": "x", "of": "Nodes", "name": "a"},
            {"t": 1, "phases": [["a", "b", "c"]]}, {"t": 1, "log": "x", "source": "kueue"},
            {"t": 1, "cluster": "down"}, {"t": 1, "cluster": "up"}, {"t": 1, "run": "start"}, {"t": 1, "run": "end"},
            {"t": 1, "deadline": "j"}, {"t": 1, "decision": "timed-out"}]
    path.write_text("".join(json.dumps(e) + "\n" for e in good))
    assert events.read(path) == good


def test_the_svg_draws_only_summary_lanes_and_markers_and_the_phases_over_the_run():
    extra = [{"t": 1003.0, "lane": "Node n1", "state": "booting", "detail": "", "of": "Nodes", "name": "n1"},
             {"t": 1200.0, "deadline": "j"}, {"t": 900.0, "run": "start", "job": "j"},
             {"t": 1004.0, "log": "x", "source": "kueue"},
             {"t": 1005.0, "cluster": "down"}, {"t": 1300.0, "decision": "timed-out"}]
    assert timeline.render_svg(EVENTS + extra, "t") == timeline.render_svg(EVENTS, "t")
    phases = {"t": 1003.0, "phases": [["Submitted", "done", "Job applied"], ["Quota reserved", "active", "wait"]]}
    with_phases = parse(timeline.render_svg(EVENTS + [phases], "t"))
    assert [(r.get("x"), r.get("y"), r.get("fill")) for r in rects(with_phases)] == \
        [(r.get("x"), r.get("y"), r.get("fill")) for r in rects(parse(timeline.render_svg(EVENTS, "t")))]
    assert texts(with_phases)[-3:] == ["over the run", "✓ Submitted: Job applied", "… Quota reserved: wait"]
    assert "over the run" not in texts(parse(timeline.render_svg(EVENTS, "t")))


def test_booting_and_scheduled_are_waiting_colours():
    assert timeline.color_for("booting") == timeline.color_for("scheduled") == timeline.COLORS["amber"]


# ------------------------------------------------------------------------------ following a log being written

def test_lines_follow_a_growing_file_and_wait_for_a_line_to_end(tmp_path):
    path = tmp_path / "x.log"
    lines_ = events.Lines(path)
    assert lines_.new() == ([], False)                        # not there yet
    path.write_bytes(b"one\ntw")
    assert lines_.new() == ([b"one"], False)
    assert lines_.new() == ([], False)
    with open(path, "ab") as f:
        f.write(b"o\nthree\n")
    assert lines_.new() == ([b"two", b"three"], False)
    assert lines_.number == 3


def test_lines_from_the_end_skip_what_was_there_and_a_replaced_file_is_read_from_its_start(tmp_path):
    path = tmp_path / "x.log"
    path.write_bytes(b"old\n")
    lines_ = events.Lines(path, from_end=True)
    assert lines_.new() == ([], False)
    with open(path, "ab") as f:
        f.write(b"new\n")
    assert lines_.new() == ([b"new"], False)
    path.unlink()
    path.write_bytes(b"fresh\n")                              # a restarted controller's new log
    assert lines_.new() == ([b"fresh"], True)
    path.write_bytes(b"")                                     # truncated
    assert lines_.new() == ([], True)
    path.write_bytes(b"again\n")
    assert lines_.new() == ([b"again"], False)


def test_tail_returns_new_events_and_reports_bad_lines_without_stopping(tmp_path):
    path = tmp_path / "ev.jsonl"
    tail = events.Tail(path)
    assert tail.read_new() == ([], [], False)
    path.write_text('{"t": 1, "marker": "a"}\nnot json\n\n{"t": 2}\n{"t": 3, "marker": "b"}\n{"t": 4, "mar')
    got, problems, reset = tail.read_new()
    assert got == [{"t": 1, "marker": "a"}, {"t": 3, "marker": "b"}] and reset is False
    assert len(problems) == 2
    assert problems[0].startswith(f"{path}:2: not a JSON line: Expecting value")
    assert problems[1].startswith(f"{path}:4: not an event: neither a lane state")
    with open(path, "a") as f:
        f.write('ker": "c"}\nnope\n')
    got, problems, _ = tail.read_new()
    assert got == [{"t": 4, "marker": "c"}]
    assert len(problems) == 1 and problems[0].startswith(f"{path}:7: not a JSON line: ")
    path.write_text('{"t": 9, "marker": "z"}\n')
    assert tail.read_new() == ([{"t": 9, "marker": "z"}], [], True)


def test_tail_reports_bytes_that_are_not_utf8(tmp_path):
    path = tmp_path / "ev.jsonl"
    path.write_bytes(b'\xff\xfe\n{"t": 1, "marker": "a"}\n')
    got, problems, _ = events.Tail(path).read_new()
    assert got == [{"t": 1, "marker": "a"}]
    assert problems[0].startswith(f"{path}:1: not a JSON line: ")


def test_lines_from_the_end_of_a_file_that_does_not_exist_yet_read_it_from_its_start(tmp_path):
    path = tmp_path / "x.log"
    lines_ = events.Lines(path, from_end=True)
    path.write_bytes(b"first\n")
    assert lines_.new() == ([b"first"], False)


# ------------------------------------------------------------------------------ the SVG of a recorded success run

RECORDED = Path(__file__).parent / "recorded" / "success-run.jsonl"       # see tests/unit/test_board.py
TITLE = "Success path: a 2 × 8-GPU gang starts only when both nodes exist"


def bars(root: ET.Element) -> dict[str, list[ET.Element]]:
    """lane -> its bars, by their tooltips ("<lane>: <state> ... (t=..)")."""
    out: dict[str, list[ET.Element]] = {}
    for r in rects(root):
        out.setdefault(r.find(f"{SVG}title").text.split(": ")[0], []).append(r)
    return out


def state_of(bar: ET.Element) -> str:
    return bar.find(f"{SVG}title").text.split(": ", 1)[1].split(" (t=")[0].split(" — ")[0]


def test_the_svg_of_the_recorded_run_shows_what_it_reached():
    root = parse(timeline.render_svg(events.read(RECORDED), TITLE))
    phases = [t.text for t in root.iter(f"{SVG}text") if (t.get("class") or "").startswith("phase ")]
    assert phases == [
        "✓ Submitted: Job applied (suspended)",
        "✓ Quota reserved: 16 nvidia.com/gpu on ClusterQueue gpu-a100 (flavor a100-scale); the Workload was deleted "
        "after the Job completed",
        "✓ Capacity provisioning: capacity booked on 2 node(s) of gpupool",
        "✓ Pod scheduling: 2/2 on aks-gpupool-vmss164189, aks-gpupool-vmss900714",
        "✓ Running: Succeeded (2/2 completions)"]


def test_the_svg_of_the_recorded_run_tells_unsuspended_from_running_and_colours_nothing_red():
    root = parse(timeline.render_svg(events.read(RECORDED), TITLE))
    lanes = bars(root)
    assert [state_of(b) for b in lanes["Job"]] == ["suspended", "unsuspended · pods pending",
                                                   "unsuspended · 1/2 pods started", "running", "succeeded"]
    assert lanes["Job"][1].get("fill") == timeline.COLORS["amber"]
    # the 14 s the nodes booted: the Job waits with its pods pending as long as the Pods lane shows them pending
    pods = lanes["Pods"]
    pending = next(b for b in pods if state_of(b) == "2 pending")
    assert float(lanes["Job"][1].get("x")) + float(lanes["Job"][1].get("width")) == pytest.approx(
        float(pending.get("x")) + float(pending.get("width")), abs=0.2)
    booking = [b for b in lanes["ProvisioningRequest"] if "BookingExpired" in state_of(b)]
    assert [state_of(b) for b in booking] == ["#1 Provisioned+BookingExpired (as expected)"]
    assert booking[0].get("fill") == timeline.COLORS["ended"]
    assert [state_of(b) for b in lanes["Workload"]][-1] == "deleted after completing"
    assert lanes["Workload"][-1].get("fill") == timeline.COLORS["ended"]
    assert timeline.COLORS["red"] not in {r.get("fill") for r in rects(root)}


def test_every_colour_of_the_recorded_runs_svg_is_in_its_legend_and_every_bar_has_a_tooltip():
    root = parse(timeline.render_svg(events.read(RECORDED), TITLE))
    swatches = {r.get("fill"): r.find(f"{SVG}title").text for r in root.iter(f"{SVG}rect")
                if (r.get("class") or "").startswith("legend ")}
    assert set(swatches) == {r.get("fill") for r in rects(root)}
    assert set(swatches.values()) <= set(texts(root))      # each meaning written beside its swatch
    assert swatches[timeline.COLORS["ended"]].startswith("ended as expected")
    assert all(state_of(r) for r in rects(root))


def test_the_ends_as_expected_are_not_failures():
    assert timeline.color_class("#1 Provisioned+BookingExpired (as expected)") == "ended"
    assert timeline.color_for("deleted after completing") == timeline.COLORS["ended"]
    assert timeline.color_class("#1 Provisioned+BookingExpired") == "red"       # before the Job was unsuspended
    assert timeline.color_class("deleted") == "red"
    assert timeline.color_class("unsuspended · pods pending") == "amber"
    assert timeline.color_class("unsuspended · 1/2 pods started") == "amber"
    assert timeline.color_class("2") == "grey"


def test_the_legend_names_the_colours_drawn_in_their_order():
    assert timeline.legend(["2", "running", "suspended", "ready"]) == [
        ("green", timeline.COLORS["green"], timeline.MEANINGS["green"]),
        ("amber", timeline.COLORS["amber"], timeline.MEANINGS["amber"]),
        ("grey", timeline.COLORS["grey"], timeline.MEANINGS["grey"])]
    assert timeline.legend([]) == []
    assert set(timeline.MEANINGS) == set(timeline.COLORS)


def test_a_label_too_long_for_its_bar_is_cut_when_three_characters_fit():
    assert timeline.fit("abc", 3 * timeline.CHAR_W + 8) == "abc"
    assert timeline.fit("abcdefgh", 5 * timeline.CHAR_W + 8) == "abcd…"
    assert timeline.fit("abcdefgh", 4 * timeline.CHAR_W + 8) == "abc…"
    assert timeline.fit("abcdefgh", 4 * timeline.CHAR_W + 7) == ""
    root = parse(timeline.render_svg([{"t": 0, "lane": "Job", "state": "x" * 200}, {"t": 100, "lane": "Nodes",
                                                                                    "state": "2"}], "t"))
    cut = [t for t in texts(root) if t.startswith("xxx")]
    assert len(cut) == 1 and cut[0].endswith("…") and len(cut[0]) < 200
