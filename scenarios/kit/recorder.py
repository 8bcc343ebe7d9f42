"""Records one Job's objects in the background, from watches: the event log for the timeline and the live
page, and facts for checks."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from demo.cluster import kwok
from demo.cluster.multikueue import worker_of
from demo.cluster.multikueue_kwok import workers_of
from demo.cluster.state import state_of
from demo.deadline import protocol as dl
from demo.jobs import phases
from demo.jobs.snapshot import Snapshot, assemble
from demo.timeline.lanes import ObjectLane, deadline_at, decision, lane_for, object_lanes, phase_rows, snapshot_states
from demo.timeline.log import EventLog, Lines
from k8s import provreq as provreqs_
from k8s import workload as workloads_
from k8s.keys import (CHECK_NAME, CLEANUP_AFTER_ANNOTATION, DEADLINE_ANNOTATION, DEADLINE_LEASE_PREFIX, FAILED,
                      PROVISIONED, PROVREQ_UID_ANNOTATION, CheckState)
from k8s.objects import annotations, condition, created_at, is_true, parse_time, uid
from k8s.objects import name as name_of
from k8s.resources import JOB, NODE, POD, PROVREQ, WORKLOAD
from k8s.tape import WATCH_LAG, Tape
from k8s.watch import NotSynced

from .controllers import controllers_dir
from .harness import Context, ScenarioFailed

RECORDED = (JOB, WORKLOAD, PROVREQ, POD, NODE)
LOG_LINE_MAX = 2000        # characters of a controller's log line kept in the event log


def log_sources(kubeconfig: str | None) -> dict[Path, str]:
    """The controllers' log files a scenario's objects show up in, and who writes each: the controllers
    scenarios start (fake-ca, real-ca, deadline; a MultiKueue worker's carry its name) and the cluster's Kueue
    (kwok backend: a host process), and a MultiKueue manager's workers' Kueues."""
    out = {p: "deadline" if p.stem.startswith(DEADLINE_LEASE_PREFIX) else p.stem
           for p in sorted(controllers_dir().glob("*.log"))}
    st = state_of(kubeconfig)
    if st is not None and st.backend == "kwok":
        out[kwok.kueue_log(st)] = "kueue"
        for w in workers_of(st):
            out[kwok.kueue_log(w)] = f"{worker_of(st.name, w.name)} kueue"
    return out


class LogFollower:
    """The lines the controllers log from now on (files that appear later are read from their start, looked for
    once a second by `clock`: a test's fake time)."""

    def __init__(self, sources, clock=time.monotonic):
        self.sources = sources          # () -> {path: source}
        self.clock = clock
        self.files: dict[Path, tuple[Lines, str]] = {}
        self._scan(from_end=True)
        self._scanned = clock()

    def _scan(self, from_end: bool) -> None:
        for path, source in self.sources().items():
            if path not in self.files:
                self.files[path] = (Lines(path, from_end=from_end), source)

    def new_lines(self) -> list[tuple[str, str]]:
        """(source, line) for every line logged since the last call."""
        if self.clock() - self._scanned > 1.0:
            self._scan(from_end=False)
            self._scanned = self.clock()
        out = []
        for lines, source in self.files.values():
            got, _ = lines.new()
            out += [(source, raw.decode("utf-8", "replace").rstrip("\r")[:LOG_LINE_MAX]) for raw in got if raw.strip()]
        return out


class Recorder:
    """One Job's objects on a Tape (k8s/tape.py: the watches into stores, sampled), in the background: a
    Snapshot of the Job, its Workload, its ProvisioningRequests, its pods and the nodes after every change
    (and every `interval` seconds), the lane states and details in the event log (what the SVG and the live
    page draw), the controllers' log lines about its objects, and facts for checks (the tape's query set)."""

    def __init__(self, ctx: Context, name: str, log: EventLog | None, interval: float = 0.2, lanes=None):
        """`lanes(snapshot)` gives the lane states to log (default: the standard lanes)."""
        self.ctx, self.name, self.log = ctx, name, log
        self.lanes = lanes or snapshot_states
        self.job_uid: str | None = None
        self.objects: dict[str, ObjectLane] = {}        # the object lanes of the last sample
        self.names: dict[str, str] = {name: "Job"}      # object name -> lane, for the controllers' log lines
        self.down = False                               # a watch lost the apiserver and has not listed again
        self.follower: LogFollower | None = None
        slot = ctx.slot          # its namespace, and in a scoped slot only its pool's nodes
        self.tape: Tape[Snapshot] = Tape(ctx.k, RECORDED, slot.namespace, node_selector=slot.node_selector,
                                         project=self._assemble, interval=interval, on_sample=self._logged,
                                         on_tick=self._ticked, settle=True)

    @property
    def samples(self) -> list[tuple[float, Snapshot]]:
        return self.tape.samples

    def __enter__(self):
        if self.log is not None:      # the log's run starts before its first sample
            self.log.run("start", self.name, title=self.ctx.title)
            self.follower = LogFollower(lambda: log_sources(self.ctx.kubeconfig))
        try:
            self.tape.__enter__()
        except NotSynced as e:
            if self.log is not None:
                self.log.run("end", self.name)
            raise ScenarioFailed(f"the recorder of {self.name}: {e}") from e
        return self

    def __exit__(self, *exc):
        self.tape.__exit__(*exc)      # its last sample is what the scenario saw when it stopped recording
        if self.log is not None:
            with self.tape.lock:
                self._log_lines()
            self.log.run("end", self.name)

    def _assemble(self, stores) -> Snapshot:
        snap = assemble(self.name, self.job_uid, stores[JOB.plural].items(), stores[WORKLOAD.plural].items(),
                        stores[PROVREQ.plural].items(), stores[POD.plural].items(), stores[NODE.plural].items())
        if snap.job is not None and self.job_uid is None:
            self.job_uid = snap.job["metadata"]["uid"]
        return snap

    def _ticked(self) -> None:
        self._note_cluster()
        self._log_lines()

    def _note_cluster(self) -> None:
        """The apiserver went away (a watch lost it) or came back (every watch listed again)."""
        errors = self.tape.errors()
        if errors and not self.down and self.log is not None:
            self.log.note("cluster", "down", detail=errors[0])
        if not errors and self.down and self.log is not None:
            self.log.note("cluster", "up", detail="the apiserver answers again")
        self.down = bool(errors)

    def _logged(self, now: float, snap: Snapshot) -> None:
        if self.log is not None and self.job_uid is not None:
            self.log.record_all(self.lanes(snap), t=now)   # the story starts when the Job exists
            self._write_details(snap, now)

    def _write_details(self, snap: Snapshot, now: float) -> None:
        """What the live page shows beyond the summary lanes: one lane per object, the five phases, the
        deadline and the committed decision."""
        log = self.log
        self.objects = object_lanes(snap, self.objects)
        for lane, o in self.objects.items():
            log.record(lane, o.state, o.detail, t=now, of=o.of, name=o.name)
            self.names[o.name] = lane
        wl_name = name_of(snap.workload)
        if wl_name:
            self.names[wl_name] = "Workload"
        if snap.job is not None:         # once the Job is gone its last phases stand (the Job lane says deleted)
            rows, outcome = phase_rows(snap)
            log.note("phases", rows, t=now, job=self.name, workload=wl_name, outcome=outcome)
        due = deadline_at(snap.job)
        if due is not None:
            log.note("deadline", self.name, t=due,
                     detail=f"admission deadline {annotations(snap.job).get(DEADLINE_ANNOTATION)} after submission")
        decided = decision(snap.workload)
        if decided is not None:
            log.note("decision", decided[0], t=decided[1] if decided[1] is not None else now,
                     detail=f"committed on Workload {wl_name} by the deadline controller")

    def _log_lines(self) -> None:
        """The controllers' lines about this Job's objects (by the names they carry)."""
        if self.follower is None:
            return
        for source, line in self.follower.new_lines():    # under the tape's lock: the watches' threads log too
            if lane_for(line, self.names) is not None:
                self.log.log_line(source, line)

    def mark(self, label: str, t: float | None = None) -> None:
        if self.log is not None:
            self.log.mark(label, t=t)

    # facts over the samples: the tape's query set
    def ever(self, pred) -> bool:
        return self.tape.ever(pred)

    def first(self, pred) -> float | None:
        return self.tape.first(pred)

    def seen(self, pred, grace: float = WATCH_LAG, clock=time.monotonic, sleep=time.sleep) -> float | None:
        """`first(pred)`, given up to `grace` seconds for the watches to deliver it (k8s/tape.py seen)."""
        return self.tape.seen(pred, grace, clock=clock, sleep=sleep)

    def cleaned_up_after_ttl(self) -> tuple[bool, str]:
        """Did the Job disappear only once its armed cleanup time had passed?  (ok, what was seen)"""
        armed = [parse_time(annotations(s.job).get(CLEANUP_AFTER_ANNOTATION)) for _, s in self.samples if s.job]
        armed = [t for t in armed if t is not None]
        gone = self.gone_at()
        if not armed or gone is None:
            return False, f"cleanup armed: {bool(armed)}, Job deleted: {gone is not None}"
        late = gone - armed[-1].timestamp()
        return late >= -0.5, f"deleted {late:+.1f}s after the cleanup time it was armed with"

    def gone_at(self) -> float | None:
        """When the Job was first sampled absent after having been seen (samples taken before it was
        created do not count: the recorder starts before the submission)."""
        seen = False
        for t, s in self.samples:
            if s.job is not None:
                seen = True
            elif seen:
                return t
        return None

    def provreq_names(self) -> set[str]:
        return {p["metadata"]["name"] for _, s in self.samples for p in s.provreqs}

    def job_created_at(self) -> float | None:
        """The Job's creationTimestamp (whole seconds, as the controllers count deadlines from it)."""
        job = next((s.job for _, s in self.samples if s.job is not None), None)
        created = created_at(job)
        return created.timestamp() if created else None

    def attempts(self) -> list[Attempt]:
        """Every ProvisioningRequest of the Job's Workload that was seen, by uid (a name can come back: Kueue
        deletes and makes a request of the same attempt again), in the order they appeared, with the times
        (client-side, from the watch) each was first seen, first seen Failed / Provisioned, and last seen."""
        out: dict[str, Attempt] = {}
        for t, snap in self.samples:
            for pr in snap.provreqs:
                created = created_at(pr)
                a = out.setdefault(uid(pr), Attempt(pr["metadata"]["name"], provreqs_.attempt(pr), uid(pr), t,
                                                    created=created.timestamp() if created else None))
                a.last_seen = t
                if a.failed_at is None and is_true(pr, FAILED):
                    a.failed_at, a.failed = t, condition(pr, FAILED)
                if a.provisioned_at is None and is_true(pr, PROVISIONED):
                    a.provisioned_at = t
        return sorted(out.values(), key=lambda a: a.seen_at)

    def retries(self, check: str = CHECK_NAME) -> list[Retry]:
        """Every time the Workload's admission check `check` was seen entering Retry: when, and the time Kueue will
        requeue it (the check's lastTransitionTime + requeueAfterSeconds, pkg/workload/admissionchecks.go)."""
        out: list[Retry] = []
        previous = None
        for t, snap in self.samples:
            entry = workloads_.admission_check(snap.workload, check) or {}
            state = entry.get("state")
            if state == CheckState.RETRY and previous != CheckState.RETRY:
                since = parse_time(entry.get("lastTransitionTime"))
                after = entry.get("requeueAfterSeconds") or 0
                out.append(Retry(t, since.timestamp() if since else None, after,
                                 since.timestamp() + after if since else None))
            previous = state
        return out

    def nodes_made_for_it(self) -> set[str]:
        """Every node seen, over the whole window, that an autoscaler made for one of the Job's requests (the
        fake's nodes carry the request's uid)."""
        uids = {a.uid for a in self.attempts()}
        return {n["metadata"]["name"] for _, s in self.samples for n in s.nodes
                if annotations(n).get(PROVREQ_UID_ANNOTATION) in uids}

    def views(self) -> list[tuple[float, phases.View]]:
        """What `tau-demo watch` would have printed at every sample (the same derivation)."""
        return [(t, phases.derive(s)) for t, s in self.samples
                if s.job is not None]


COMMIT_SIGHTING_MARGIN = 5.0     # seconds beyond the bound a late sighting is still waited for (then reported)


def check_commit_bound(ctx: Context, rec: Recorder, deadline_at: float, now=time.time, clock=time.monotonic,
                       sleep=time.sleep) -> None:
    """The design's bound on layer 3: the timeout is committed no earlier than the deadline and no later than
    COMMIT_TOLERANCE after it (the commit's time as the watch first saw it: a watch that lags only makes the
    bound harder to meet).  The caller may come straight from the controller's own report of its commit, so
    the watch is given until the bound's end plus a margin to deliver it; not seen by then is a failure.
    `now` (wall clock, as the samples' times), `clock` and `sleep` (the wait's): a test's fake time."""
    seen_by = deadline_at + dl.COMMIT_TOLERANCE + COMMIT_SIGHTING_MARGIN
    committed = rec.seen(lambda s: workloads_.committed_timeout(s.workload),
                         grace=max(seen_by - now(), 0.0), clock=clock, sleep=sleep)
    if committed is None:
        ctx.check(False, f"the timeout was committed within {dl.COMMIT_TOLERANCE:g}s of the deadline: the "
                         f"recorder's watch had not seen it {seen_by - deadline_at:g}s after the deadline")
        return
    late = committed - deadline_at
    ctx.check(0 <= late <= dl.COMMIT_TOLERANCE,
              f"the timeout was committed {late:.2f}s after the deadline (bound: 0 to {dl.COMMIT_TOLERANCE:g}s)")


@dataclass
class Retry:
    seen_at: float
    transition_at: float | None       # the check's lastTransitionTime while in Retry (whole seconds)
    requeue_after: int                # its requeueAfterSeconds (the retryStrategy's backoff)
    requeue_at: float | None          # what Kueue waits for: transition_at + requeue_after


@dataclass
class Attempt:
    name: str
    number: int | None
    uid: str
    seen_at: float
    failed_at: float | None = None
    failed: dict | None = None            # the Failed condition when first seen True
    provisioned_at: float | None = None
    last_seen: float = 0.0
    created: float | None = None          # its creationTimestamp (the apiserver's, whole seconds)

    @property
    def answered(self) -> bool:
        """The autoscaler said something final about it (Failed or Provisioned), as opposed to a request Kueue
        deleted before any answer."""
        return self.failed_at is not None or self.provisioned_at is not None
