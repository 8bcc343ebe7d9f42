"""The recorder (scenarios/kit/recorder.py) over plain samples and caches filled by hand (no watch runs): its cleanup
fact (a Job's versions and the samples that found no Job), and what it writes for the live page (object lanes, phases, deadline, decision, the
apiserver going away, the controllers' log lines)."""

from __future__ import annotations

import inspect
import io
import json
import time
from datetime import datetime, timezone
from types import SimpleNamespace

import pytest

import k8s_objects as K
from demo.jobs.snapshot import Snapshot
from demo.timeline import log as event_log
from demo.timeline.log import EventLog
from demo.deadline import protocol as dl
from k8s.keys import CLEANUP_AFTER_ANNOTATION, DECISION_ANNOTATION, TIMED_OUT
from k8s.resources import JOB, NODE, POD, PROVREQ, WORKLOAD
from k8s.watch import Event, Watch
from k8s.poll import eventually, pause
from scenarios.kit import recorder as recorder_mod
from scenarios.kit.harness import Context
from scenarios.kit.recorder import COMMIT_SIGHTING_MARGIN, LogFollower, Recorder, check_commit_bound, log_sources

DUE = datetime(2026, 11, 29, 12, 0, 10, tzinfo=timezone.utc)


def armed_job() -> dict:
    return {"metadata": {"name": "train", "uid": "u1",
                         "annotations": {CLEANUP_AFTER_ANNOTATION: "2026-11-29T12:00:10.000000Z"}}}


def ctx_titled(title: str) -> SimpleNamespace:
    """What a Recorder reads of its scenario's context: no client (no watch runs here), the slot's namespace."""
    return SimpleNamespace(k=None, kubeconfig=None, title=title,
                           slot=SimpleNamespace(namespace="tau-demo", node_selector=None))


CTX = ctx_titled("")


def recorded(*samples: tuple[float, dict | None]) -> Recorder:
    rec = Recorder(CTX, "train", None)          # not entered: no polling thread
    rec.tape.samples = [(DUE.timestamp() + dt, Snapshot(job, None, [], [], [])) for dt, job in samples]
    rec.job_uid = "u1"
    return rec


def test_polls_from_before_the_job_was_created_are_not_its_deletion():
    rec = recorded((-15.0, None), (-14.0, armed_job()), (0.5, None))
    assert rec.cleaned_up_after_ttl() == (True, "deleted +0.5s after the cleanup time it was armed with")


def test_a_deletion_before_the_cleanup_time_is_reported():
    rec = recorded((-15.0, None), (-14.0, armed_job()), (-3.0, None))
    assert rec.cleaned_up_after_ttl() == (False, "deleted -3.0s after the cleanup time it was armed with")


def test_a_job_never_seen_gone_is_not_cleaned_up():
    rec = recorded((-15.0, None), (-14.0, armed_job()), (1.0, armed_job()))
    assert rec.cleaned_up_after_ttl() == (False, "cleanup armed: True, Job deleted: False")


# ---------------------------------------------------------------------------- what it writes for the live page



def snapshot(kw: dict) -> Snapshot:
    return Snapshot(kw["job"], kw["workload"], kw["provreqs"], kw["pods"], kw["nodes"])


@pytest.fixture
def rec(tmp_path):
    r = Recorder(ctx_titled("T"), K.JOB_NAME, EventLog(tmp_path / "ev.jsonl"))
    r.path = tmp_path / "ev.jsonl"
    return r


def kinds(path) -> list[str]:
    return [next(k for k in ("lane", "phases", "deadline", "decision", "cluster", "log", "run", "marker") if k in e)
            for e in event_log.read(path)]


def test_a_sample_writes_object_lanes_phases_deadline_and_decision(rec):
    rec._write_details(snapshot(K.snap_pods_running()), 100.0)
    evs = event_log.read(rec.path)
    lanes = [(e["lane"], e["of"], e["name"], e["state"]) for e in evs if "lane" in e]
    assert lanes == [("ProvisioningRequest #1", "ProvisioningRequest", f"{K.WL_NAME}-{K.CHECK}-1", "Provisioned"),
                     (f"Node {K.NODE_B}", "Nodes", K.NODE_B, "Ready"), (f"Node {K.NODE_A}", "Nodes", K.NODE_A, "Ready"),
                     (f"Pod {K.JOB_NAME}-0-x0k9q", "Pods", f"{K.JOB_NAME}-0-x0k9q", "running"),
                     (f"Pod {K.JOB_NAME}-1-x1k9q", "Pods", f"{K.JOB_NAME}-1-x1k9q", "running")]
    phases = next(e for e in evs if "phases" in e)
    assert (phases["t"], phases["job"], phases["workload"], phases["outcome"]) == (100.0, K.JOB_NAME, K.WL_NAME, "running")
    assert [r[1] for r in phases["phases"]] == ["done", "done", "done", "done", "active"]
    assert rec.names[K.WL_NAME] == "Workload" and rec.names[K.NODE_A] == f"Node {K.NODE_A}"
    assert not any("deadline" in e or "decision" in e for e in evs)
    rec._write_details(snapshot(K.snap_fresh()), 101.0)       # everything but the Job gone
    gone = [e["lane"] for e in event_log.read(rec.path) if e.get("state") == "gone"]
    assert len(gone) == 5
    rec._write_details(Snapshot(None, None, [], [], []), 102.0)  # the Job gone too: its last phases stand
    assert [e["t"] for e in event_log.read(rec.path) if "phases" in e] == [100.0, 101.0]


def test_a_committed_timeout_writes_the_deadline_and_the_decision_once(rec):
    snap = snapshot(K.snap_deadline())
    rec._write_details(snap, 100.0)
    rec._write_details(snap, 100.2)
    evs = event_log.read(rec.path)
    deadline = [e for e in evs if "deadline" in e]
    decision = [e for e in evs if "decision" in e]
    assert deadline == [{"t": K.epoch(60), "deadline": K.JOB_NAME, "detail": "admission deadline 60s after submission"}]
    assert decision == [{"t": K.epoch(61), "decision": "timed-out",
                         "detail": f"committed on Workload {K.WL_NAME} by the deadline controller"}]
    wl = snap.workload
    del wl["metadata"]["annotations"]["tau-demo.io/admission-decision-time"]
    other = Recorder(rec.ctx, K.JOB_NAME, EventLog(rec.path.with_name("b.jsonl")))
    other._write_details(snap, 123.0)
    assert [e["t"] for e in event_log.read(rec.path.with_name("b.jsonl")) if "decision" in e] == [123.0]



def fill(rec, snap: dict) -> None:
    """Put a snapshot's objects into the recorder's caches, as its watches' lists would."""
    for res, objs in ((JOB, [snap["job"]] if snap["job"] else []), (WORKLOAD, [snap["workload"]] if snap["workload"] else []),
                      (PROVREQ, snap["provreqs"]), (POD, snap["pods"]), (NODE, snap["nodes"])):
        store = rec.tape.stores[res.plural]
        for o in objs:
            store.handle(Event.LISTED, o)
        store.handle(Event.SYNCED, {})


def watches(*errors: str) -> list[Watch]:
    out = []
    for e in errors:
        w = Watch(None, JOB)              # never started: the test sets what its loop would
        w.last_error = e
        out.append(w)
    return out


def test_an_apiserver_that_stops_answering_is_written_down_and_back_up(rec):
    for errors in (("refused", ""), ("refused", "refused"), ("", ""), ("", "x")):
        rec.tape.watches = watches(*errors)
        rec._note_cluster()
    evs = [e for e in event_log.read(rec.path) if "cluster" in e]
    assert [(e["cluster"], e["detail"]) for e in evs] == [("down", "refused"), ("up", "the apiserver answers again"),
                                                         ("down", "x")]
    assert rec.down is True


def test_the_first_answer_of_a_healthy_apiserver_writes_no_cluster_event(rec):
    rec.tape.watches = watches("", "")
    rec._note_cluster()
    assert not rec.path.exists() and rec.down is False


def test_a_sample_is_the_jobs_objects_from_the_caches(rec):
    fill(rec, K.snap_pending())
    rec.tape.sample()
    assert rec.job_uid == K.JOB_UID and len(rec.samples) == 1
    snap = rec.samples[0][1]
    assert snap.job["metadata"]["name"] == K.JOB_NAME and snap.workload["metadata"]["name"] == K.WL_NAME
    assert "lane" in kinds(rec.path)


def test_no_lanes_before_the_job_exists(rec):
    rec.tape.sample()
    assert not rec.path.exists() and rec.job_uid is None and len(rec.samples) == 1


def test_controllers_log_lines_about_the_jobs_objects_are_written(rec, tmp_path):
    fake = tmp_path / "fake-ca.log"
    fake.write_text(f"10:00:00 provreq demo/{K.JOB_NAME}-old: before the recorder started\n")
    follower = LogFollower(lambda: {fake: "fake-ca"})
    rec.names[K.NODE_A] = f"Node {K.NODE_A}"
    with open(fake, "a") as f:
        f.write(f"10:00:01 provreq demo/job-{K.JOB_NAME}-1f2e3-gpu-provisioning-1: creating {K.NODE_A}\n"
                "10:00:02 provreq demo/job-other-1: creating x\n\n"
                f"10:00:03 scale-down: deleting {K.NODE_A}\r\n" + f"10:00:04 {K.JOB_NAME} " + "x" * 3000 + "\n")
    rec.follower = follower
    rec._log_lines()
    got = [(e["source"], e["log"]) for e in event_log.read(rec.path) if "log" in e]
    assert got[:2] == [("fake-ca", f"10:00:01 provreq demo/job-{K.JOB_NAME}-1f2e3-gpu-provisioning-1: creating {K.NODE_A}"),
                       ("fake-ca", f"10:00:03 scale-down: deleting {K.NODE_A}")]
    assert len(got) == 3 and len(got[2][1]) == recorder_mod.LOG_LINE_MAX


def test_a_log_file_that_appears_later_is_read_from_its_start(tmp_path):
    files: dict = {}
    now = [100.0]
    follower = LogFollower(lambda: dict(files), clock=lambda: now[0])
    late = tmp_path / "deadline-race.log"
    late.write_text("10:00:00 deadline: caches synced; ready\n")
    files[late] = "deadline"
    now[0] = 101.0
    assert follower.new_lines() == []                          # looked again only after more than a second
    now[0] = 101.01
    assert follower.new_lines() == [("deadline", "10:00:00 deadline: caches synced; ready")]


def test_log_sources_are_the_controllers_logs_and_the_clusters_kueue(tmp_path, monkeypatch):
    monkeypatch.setenv("TAU_DEMO_STATE", str(tmp_path))
    ctl = tmp_path / "controllers"
    ctl.mkdir()
    for name in ("fake-ca.log", "deadline-default.log", "deadline-race-committed.log", "fake-ca.pid"):
        (ctl / name).write_text("")
    cluster = tmp_path / "clusters" / "tau-test"
    cluster.mkdir(parents=True)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("")
    (cluster / "cluster.json").write_text(json.dumps({"name": "tau-test", "backend": "kwok",
                                                      "kubeconfig": str(kubeconfig)}))
    expected = {ctl / "deadline-default.log": "deadline", ctl / "deadline-race-committed.log": "deadline",
                ctl / "fake-ca.log": "fake-ca"}
    assert log_sources(None) == expected
    assert log_sources(str(kubeconfig)) == {**expected, cluster / "kueue" / "kueue.log": "kueue"}
    (cluster / "cluster.json").write_text(json.dumps({"name": "tau-test", "backend": "kind",
                                                      "kubeconfig": str(kubeconfig)}))
    assert log_sources(str(kubeconfig)) == expected         # kind: Kueue logs inside the cluster
    assert log_sources(str(tmp_path / "other")) == expected


def test_a_recorder_samples_once_more_when_stopped_and_ends_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("TAU_DEMO_STATE", str(tmp_path / "state"))    # no controller has written a log there
    r = Recorder(ctx_titled("Success path"), K.JOB_NAME,
                 EventLog(tmp_path / "ev.jsonl"), interval=30)
    fill(r, K.snap_fresh())
    r.tape.sample()
    r.tape.stores[JOB.plural].handle(Event.MODIFIED, K.snap_job_complete()["job"])
    r.__exit__(None, None, None)           # the watches never ran; the stop still samples and ends the run
    evs = event_log.read(tmp_path / "ev.jsonl")
    assert evs[-1]["run"] == "end" and len(r.samples) == 2
    assert [e["state"] for e in evs if e.get("lane") == "Job"] == ["suspended", "succeeded"]


def test_a_recorder_without_a_log_samples_once_more_at_the_stop_and_writes_nothing():
    r = Recorder(ctx_titled(""), "j", None, interval=30)
    r.__exit__(None, None, None)
    assert [s for _, s in r.samples] == [Snapshot(None, None, [], [], [])] and r.job_uid is None


# ---------------------------------------------------------------- the bound on layer 3's commit

def committed_workload() -> dict:
    return {"metadata": {"name": "job-train-abc12", "annotations": {DECISION_ANNOTATION: TIMED_OUT}},
            "spec": {"active": False}, "status": {}}


def bound_checked(rec: Recorder, deadline_at: float) -> list:
    ctx = Context(k=None, kubeconfig="", out=io.StringIO())
    check_commit_bound(ctx, rec, deadline_at)
    return ctx.checks


class FakeTime:
    """Wall clock, monotonic clock and sleep for check_commit_bound that move only when it sleeps; `at(t, action)`
    runs action once the clock has reached t seconds (as the watch delivering a sample by then would)."""

    def __init__(self, wall: float):
        self.wall0, self.t = wall, 0.0
        self.slept: list[float] = []
        self.due: list[tuple[float, object]] = []

    def time(self) -> float:
        return self.wall0 + self.t

    def monotonic(self) -> float:
        return self.t

    def sleep(self, dt: float) -> None:
        self.slept.append(dt)
        self.t += dt
        for due in [d for d in self.due if d[0] <= self.t]:
            self.due.remove(due)
            due[1]()

    def at(self, t: float, action) -> None:
        self.due.append((t, action))


def bound_checked_in(fake: FakeTime, rec: Recorder, deadline_at: float) -> list:
    ctx = Context(k=None, kubeconfig="", out=io.StringIO())
    check_commit_bound(ctx, rec, deadline_at, now=fake.time, clock=fake.monotonic, sleep=fake.sleep)
    return ctx.checks


def test_a_commit_the_watch_has_not_delivered_yet_is_waited_for():
    """The race scenario comes straight from the controller's hook (paused right after its patch) to the bound:
    the commit can be on the apiserver before the recorder's watch has delivered it (CI on 2026-12-02 printed
    "committed nans after the deadline")."""
    fake = FakeTime(wall=1000.0)
    rec = Recorder(CTX, "train", None)               # interval 0.2: it looks every 0.1 s
    rec.tape.samples = [(999.0, Snapshot(armed_job(), None, [], [], []))]
    fake.at(0.25, lambda: rec.tape.samples.append((1000.25, Snapshot(armed_job(), committed_workload(), [], [], []))))
    checks = bound_checked_in(fake, rec, deadline_at=999.5)
    assert fake.slept == [0.1, 0.1, 0.1], "looked until the watch had delivered it (at the look 0.3 s in), no longer"
    assert [(c.ok, c.what) for c in checks] == [
        (True, "the timeout was committed 0.75s after the deadline (bound: 0 to 2s)")]   # when the watch saw it


def test_a_commit_never_seen_fails_with_what_was_waited_for_not_nan():
    fake = FakeTime(wall=1000.0)
    rec = Recorder(CTX, "train", None)
    rec.tape.samples = [(999.0, Snapshot(armed_job(), None, [], [], []))]
    seen_by = 1000.25                                  # the bound's end plus the margin: 0.25 s from now
    checks = bound_checked_in(fake, rec, deadline_at=seen_by - dl.COMMIT_TOLERANCE - COMMIT_SIGHTING_MARGIN)
    assert fake.slept == [0.1, 0.1, 0.1], "waited until the first look at or after the margin's end, not longer"
    assert [(c.ok, c.what) for c in checks] == [
        (False, "the timeout was committed within 2s of the deadline: the recorder's watch had not seen it 7s after "
                "the deadline")]


def test_the_waits_are_on_the_real_clocks_unless_a_test_gives_others():
    for f, clocks in ((check_commit_bound, ("now", "clock", "sleep")), (Recorder.seen, ("clock", "sleep")),
                      (eventually, ("clock", "sleep")), (LogFollower, ("clock",))):
        # poll's own waits sleep with poll.pause: time.sleep's real clock, which an interrupt ends (k8s/poll.py)
        defaults = {"now": time.time, "clock": time.monotonic, "sleep": pause if f is eventually else time.sleep}
        assert [inspect.signature(f).parameters[p].default for p in clocks] == [defaults[p] for p in clocks], f


@pytest.mark.parametrize("late, ok", [(-0.1, False), (0.0, True), (1.99, True), (2.01, False)])
def test_the_commit_is_judged_against_the_bound_by_when_the_watch_saw_it(late, ok):
    rec = recorded((-15.0, None), (late, armed_job()))
    rec.samples[-1] = (rec.samples[-1][0], Snapshot(armed_job(), committed_workload(), [], [], []))
    checks = bound_checked(rec, deadline_at=DUE.timestamp())
    assert [c.ok for c in checks] == [ok]
    assert f"committed {late:.2f}s after" in checks[0].what
