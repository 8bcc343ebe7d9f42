"""Samples one Job's objects in the background: the event log for the timeline, and facts for checks."""

from __future__ import annotations

import threading
import time

from demo.jobs import observe
from demo.k8s.errors import ApiError, Unreachable
from demo.k8s.keys import CLEANUP_AFTER_ANNOTATION
from demo.k8s.objects import annotations, parse_time
from demo.timeline.lanes import snapshot_states
from demo.timeline.log import EventLog

from .harness import NS, Context


class Recorder:
    """Samples one Job's objects in the background: the event log, and facts for checks."""

    def __init__(self, ctx: Context, name: str, log: EventLog | None, interval: float = 0.2, lanes=None):
        """`lanes(snapshot)` gives the lane states to log (default: the standard lanes)."""
        self.ctx, self.name, self.log, self.interval = ctx, name, log, interval
        self.lanes = lanes or (lambda s: snapshot_states(s.job, s.workload, s.provreqs, s.pods, s.nodes))
        self.stop_ev = threading.Event()
        self.samples: list[tuple[float, observe.Snapshot]] = []
        self.job_uid: str | None = None
        self.t = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stop_ev.set()
        self.t.join(5)

    def _loop(self):
        while not self.stop_ev.is_set():
            try:
                snap = observe.snapshot(self.ctx.k, NS, self.name, self.job_uid)
            except (ApiError, Unreachable):
                time.sleep(self.interval)
                continue
            if snap.job is not None and self.job_uid is None:
                self.job_uid = snap.job["metadata"]["uid"]
            self.samples.append((time.time(), snap))
            if self.log is not None and self.job_uid is not None:   # the story starts when the Job exists
                self.log.record_all(self.lanes(snap))
            self.stop_ev.wait(self.interval)

    def mark(self, label: str, t: float | None = None) -> None:
        if self.log is not None:
            self.log.mark(label, t=t)

    # facts over the samples
    def ever(self, pred) -> bool:
        return any(pred(s) for _, s in self.samples)

    def first(self, pred) -> float | None:
        return next((t for t, s in self.samples if pred(s)), None)

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
