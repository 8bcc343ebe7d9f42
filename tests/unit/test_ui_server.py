"""The live page's server (demo.ui.server) on 127.0.0.1, over event logs in a temporary runs directory:
server push of the live view, the same view for every browser, replay, bad requests, a port in use.
The page in a real browser against a real cluster: tests/cluster/test_ui.py."""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli import main
from demo.timeline import board
from demo.timeline import log as event_log
from demo.timeline.log import EventLog
from demo.ui import server as ui

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def runs(tmp_path):
    return tmp_path / "runs"


@pytest.fixture
def page(runs):
    s = ui.Server(runs, 0)
    s.start()
    yield s
    s.stop()


def new_log(runs: Path, run: str, label: str = "success") -> EventLog:
    return EventLog(runs / run / f"{label}.jsonl")


def get(page, path: str):
    try:
        with urllib.request.urlopen(page.url.rstrip("/") + path, timeout=5) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read().decode()


def get_json(page, path: str):
    status, _, body = get(page, path)
    return status, json.loads(body)


class Stream:
    """A Server-Sent Events client reading the server's "view" events."""

    def __init__(self, page):
        self.conn = http.client.HTTPConnection("127.0.0.1", page.port, timeout=5)
        self.conn.request("GET", "/api/stream")
        self.resp = self.conn.getresponse()
        assert self.resp.status == 200
        assert self.resp.getheader("Content-Type").startswith("text/event-stream")

    def next_view(self) -> dict:
        event, data = None, []
        while True:
            line = self.resp.fp.readline().decode().rstrip("\r\n")
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:"):
                data.append(line.split(":", 1)[1].lstrip())
            elif line == "" and event == "view":
                return json.loads("\n".join(data))
            elif line == "":
                event, data = None, []

    def close(self):
        self.conn.close()


def wait_view(stream: Stream, pred, timeout: float = 5.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = stream.next_view()
        if pred(v):
            return v
    raise AssertionError("no such view pushed")


class Polls:
    """The live view's wait between two polls (Server(between_polls=...)), stepped by the test: the server polls
    once for each step(), and step() returns once that poll and the push it made are done.  Nothing is timed: the
    waits on the server are hang guards."""

    def __init__(self):
        self.waiting = threading.Event()          # the server has polled (and pushed) and waits for a step
        self.count = 0                            # polls done
        self._loop: asyncio.AbstractEventLoop | None = None
        self._go: asyncio.Event | None = None

    async def __call__(self, stop: asyncio.Event) -> None:
        self._loop, self._go = asyncio.get_running_loop(), asyncio.Event()
        self.count += 1
        self.waiting.set()
        waits = {asyncio.ensure_future(self._go.wait()), asyncio.ensure_future(stop.wait())}
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()

    def idle(self) -> None:
        assert self.waiting.wait(10), "the server never got to wait between two polls"

    def step(self) -> None:
        self.idle()
        self.waiting.clear()
        self._loop.call_soon_threadsafe(self._go.set)
        self.idle()


def test_the_live_view_is_pushed_by_the_first_poll_after_an_event(runs):
    # The promise is "within a second": the first look at the log after a line is appended pushes the view with
    # it, and the looks are POLL apart.  Asserted as that causal fact, one stepped poll, not as a time.
    assert ui.POLL < 1.0
    log = new_log(runs, "20260101-120000")
    log.run("start", "job-a", title="Success path")
    log.record("Job", "suspended")
    polls = Polls()
    page = ui.Server(runs, 0, between_polls=polls)
    page.start()
    try:
        polls.idle()                                        # its first poll read the log as it is
        s = Stream(page)
        try:
            first = s.next_view()                           # what a browser is sent as it connects
            assert first["label"] == "20260101-120000/success"
            assert first["mode"] == "live" and first["run"]["live"] is True
            assert [l["id"] for l in first["lanes"]] == ["Job"]
            log.record("Node n1", "booting", of="Nodes", name="n1")
            polls.step()                                    # one poll after the line was appended
            v = s.next_view()                               # the next view pushed (a missing push: timeout 5 s)
            assert polls.count == 2
            assert [l["id"] for l in v["lanes"]] == ["Job", "Node n1"]
            assert v["lanes"][-1]["segments"][0]["state"] == "booting"
        finally:
            s.close()
    finally:
        page.stop()


def test_a_browser_still_connected_is_sent_the_end_of_its_stream_as_the_server_stops(runs):
    # Without the end pushed to it, the stream's handler waits for its next view and the server's stop waits
    # SHUTDOWN_TIMEOUT for it before cancelling it (a second per stop, for every browser still there).
    page = ui.Server(runs, 0)
    page.start()
    s = Stream(page)
    try:
        s.next_view()
        t0 = time.monotonic()
        page.stop()
        took = time.monotonic() - t0
        rest = s.resp.fp.read()                              # raw, to the end of the connection
        assert b"data:" not in rest and rest.endswith(b"0\r\n\r\n"), rest      # chunked: its last chunk
        assert took < ui.SHUTDOWN_TIMEOUT / 2, f"stopping took {took:.2f}s: the stream was cancelled, not ended"
    finally:
        s.close()


def test_every_browser_and_a_reload_get_the_same_view(runs, page):
    log = new_log(runs, "20260101-120000")
    log.record("Job", "suspended")
    log.note("phases", [["Submitted", "done", "Job applied"]], job="job-a", workload="", outcome="waiting")
    a, b = Stream(page), Stream(page)
    try:
        va = wait_view(a, lambda v: bool(v["lanes"]))
        vb = wait_view(b, lambda v: bool(v["lanes"]))
        assert va == vb
        assert get_json(page, "/api/view") == (200, va)          # what a reloaded page starts from
        log.record("Job", "running")
        va = wait_view(a, lambda v: v["lanes"][0]["segments"][-1]["state"] == "running")
        vb = wait_view(b, lambda v: v["lanes"][0]["segments"][-1]["state"] == "running")
        assert va == vb
    finally:
        a.close()
        b.close()


def test_the_live_view_follows_the_newest_log(runs, page):
    old = new_log(runs, "20260101-120000", "success")
    old.record("Job", "succeeded")
    s = Stream(page)
    try:
        wait_view(s, lambda v: v.get("label") == "20260101-120000/success")
        time.sleep(0.05)
        new = new_log(runs, "20260101-120500", "timeout-layer2")
        new.record("Job", "suspended")
        v = wait_view(s, lambda v: v.get("label") == "20260101-120500/timeout-layer2")
        assert [seg["state"] for seg in v["lanes"][0]["segments"]] == ["suspended"]
    finally:
        s.close()


def test_no_log_yet_is_an_empty_view_that_says_where_it_looks(runs, page):
    status, v = get_json(page, "/api/view")
    assert status == 200 and v["empty"] is True and v["runs_dir"] == str(runs) and v["lanes"] == []


def test_a_line_that_is_not_an_event_is_reported_in_the_live_view_and_the_rest_shown(runs, page):
    log = new_log(runs, "20260101-120000")
    log.record("Job", "suspended")
    with open(log.path, "a") as f:
        f.write("garbage\n")
    log.record("Job", "running")
    s = Stream(page)
    try:
        v = wait_view(s, lambda v: len(v["lanes"]) == 1 and len(v["lanes"][0]["segments"]) == 2)
        assert len(v["problems"]) == 1 and v["problems"][0].startswith(f"{log.path}:2: not a JSON line")
    finally:
        s.close()


def test_replay_gives_the_view_at_the_time_asked(runs, page):
    log = new_log(runs, "20260101-120000")
    log.record("Job", "suspended", t=100.0)
    log.record("Job", "running", t=110.0)
    log.mark("both pods running", t=111.0)
    status, v = get_json(page, "/api/view?run=20260101-120000/success&at=105")
    events = event_log.read(log.path)
    assert status == 200
    assert v == {**board.build(events, at=105.0, label="20260101-120000/success"), "mode": "replay"}
    assert [s["state"] for s in v["lanes"][0]["segments"]] == ["suspended"]
    status, whole = get_json(page, "/api/view?run=20260101-120000/success")
    assert whole["at"] == 110.0 and [s["state"] for s in whole["lanes"][0]["segments"]] == ["suspended", "running"]
    log.record("Job", "succeeded", t=120.0)                  # the file changed: read again
    assert get_json(page, "/api/view?run=20260101-120000/success")[1]["at"] == 120.0


@pytest.mark.parametrize("query, status, message", [
    ("run=../../etc/passwd", 404, "is not a run: expected <run>/<label>"),
    ("run=20260101-120000", 404, "is not a run"),
    ("run=.hidden/x", 404, "is not a run"),
    ("run=20260101-120000/nothing", 404, "no event log '20260101-120000/nothing'"),
    ("run=20260101-120000/success&at=soon", 400, "at='soon' is not a time"),
    ("run=20260101-120000/broken", 422, "broken.jsonl:2: not an event"),
])
def test_bad_requests_get_a_clear_error(runs, page, query, status, message):
    new_log(runs, "20260101-120000").record("Job", "suspended", t=1.0)
    (runs / "20260101-120000" / "broken.jsonl").write_text('{"t": 1, "marker": "a"}\n{"t": "x"}\n{"t": 2, "marker": "b"}\n')
    got, body = get_json(page, f"/api/view?{query}")
    assert got == status and message in body["error"]


def test_runs_are_listed_newest_first(runs, page):
    new_log(runs, "20260101-120000").record("Job", "x")
    time.sleep(0.02)
    new_log(runs, "20260101-120500", "race-legacy").record("Job", "x")
    (runs / "20260101-120500" / "notes.txt").write_text("not a log")
    (runs / "stray.jsonl").write_text("")
    status, listing = get_json(page, "/api/runs")
    assert status == 200
    assert [r["id"] for r in listing] == ["20260101-120500/race-legacy", "20260101-120000/success"]
    assert listing[0]["run"] == "20260101-120500" and listing[0]["label"] == "race-legacy" and listing[0]["bytes"] > 0


def test_the_page_and_its_scripts_are_served_from_the_project(page):
    status, ctype, body = get(page, "/")
    assert status == 200 and ctype.startswith("text/html") and '<script src="/static/app.js">' in body
    for path, kind in (("/static/app.js", "javascript"), ("/static/style.css", "text/css")):
        status, ctype, body = get(page, path)
        assert status == 200 and kind in ctype and body
    text = "".join((ui.STATIC / f).read_text() for f in ("index.html", "app.js", "style.css"))
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "") and "https://" not in text, \
        "the page loads nothing from outside the project (it works offline)"


def test_it_listens_on_127_0_0_1_only_and_a_port_in_use_is_a_clear_error(page):
    assert page.sock.getsockname()[0] == "127.0.0.1"
    with pytest.raises(ui.PortInUse, match=f"port {page.port} on 127.0.0.1 is in use; choose another with --port"):
        ui.bind(page.port)


@pytest.mark.subprocess
def test_tau_demo_ui_on_a_port_in_use_exits_1_saying_so(tmp_path):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        r = subprocess.run([sys.executable, "-m", "cli", "ui", "--port", str(port), "--runs", str(tmp_path)],
                           capture_output=True, text=True, cwd=REPO, timeout=60)
    finally:
        taken.close()
    assert r.returncode == 1
    assert f"error: port {port} on 127.0.0.1 is in use" in r.stderr


@pytest.mark.subprocess
def test_tau_demo_ui_serves_a_free_port_and_stops_on_sigterm(tmp_path):
    p = subprocess.Popen([sys.executable, "-m", "cli", "ui", "--runs", str(tmp_path / "runs")], cwd=REPO,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        assert line.startswith("tau-demo ui: http://127.0.0.1:")
        url = line.split()[2]
        with urllib.request.urlopen(url + "api/view", timeout=5) as r:
            assert json.loads(r.read())["empty"] is True
    finally:
        p.terminate()
        assert p.wait(15) == 0


@pytest.mark.parametrize("make, message", [
    (lambda d: d, "no event logs (*.jsonl) in it"),
    (lambda d: (d / "x.txt", (d / "x.txt").write_text(""))[0], "neither a run directory"),
    (lambda d: (d / "bad.jsonl", (d / "bad.jsonl").write_text("{}\n{}\n"))[0], "bad.jsonl:1: not an event"),
    (lambda d: (d / "empty.jsonl", (d / "empty.jsonl").write_text(""))[0], "holds no events"),
])
def test_tau_demo_ui_replay_of_something_that_is_no_run_exits_1_saying_why(tmp_path, make, message):
    target = make(tmp_path)
    r = CliRunner().invoke(main, ["ui", "--replay", str(target)])
    assert r.exit_code == 1 and message in r.output and "Traceback" not in r.output


@pytest.mark.subprocess
def test_tau_demo_ui_replay_prints_the_address_of_the_run(tmp_path):
    log = new_log(tmp_path / "runs", "20260101-120000")
    log.record("Job", "suspended", t=1.0)
    p = subprocess.Popen([sys.executable, "-m", "cli", "ui", "--replay", str(log.path.parent)], cwd=REPO,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        url = line.split()[2]
        assert url.endswith("/?run=20260101-120000/success")
        with urllib.request.urlopen(url.replace("/?run=", "/api/view?run="), timeout=5) as r:
            assert json.loads(r.read())["mode"] == "replay"
    finally:
        p.terminate()
        p.wait(15)


def test_the_fleet_page_lists_each_fleet_runs_picture_and_serves_it(runs, page):
    status, _, body = get(page, "/fleet")
    assert status == 200 and "No fleet run yet" in body
    for run in ("20261205-100000-fake", "20261205-100500-real"):
        (runs / "fleet" / run).mkdir(parents=True)
        (runs / "fleet" / run / "report.svg").write_text(f"<svg>{run}</svg>")
    (runs / "fleet" / "no-picture").mkdir()
    status, _, body = get(page, "/fleet")
    assert status == 200 and body.count("<img") == 2 and "no-picture" not in body
    status, kind, svg = get(page, "/fleet/20261205-100500-real.svg")
    assert (status, kind, svg) == (200, "image/svg+xml", "<svg>20261205-100500-real</svg>")
    assert get(page, "/fleet/no-picture.svg")[0] == 404
    assert get(page, "/fleet/..%2Fx.svg")[0] == 404
    status, listing = get_json(page, "/api/runs")
    assert listing == []                    # a fleet run's event log is not a scenario's
