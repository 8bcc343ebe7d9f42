"""Following a Job's five startup phases live (the loop behind `tau-demo watch` and the scenarios), from a Tape
(k8s/tape.py): the watches of the namespace's Jobs, Workloads, requests and pods and of the nodes, read again after
every change they deliver (and every `interval` seconds)."""

from __future__ import annotations

import re
import sys
import threading
import time
from datetime import datetime, timezone
from typing import Callable

from k8s.client import Kube
from k8s.resources import JOB, NODE, POD, PROVREQ, WORKLOAD
from k8s.tape import Tape
from . import phases
from .snapshot import Snapshot, assemble

SYMBOL = phases.SYMBOLS
_COUNTING = re.compile(r" for \d+s")


class JobNotFound(LookupError):
    """The Job did not appear within the grace period."""


def follow(k: Kube, namespace: str, name: str, until: str = "finished", timeout: float = 600,
           out=None, interval: float = 0.5, live: bool | None = None,
           on_snapshot: Callable[[Snapshot], None] | None = None,
           appear_within: float | None = None) -> phases.View:
    """Watch the Job's objects and show the phases until the job runs/finishes/fails.

    On a terminal the phase block is redrawn in place; otherwise each phase change is printed
    as one timestamped line, then the final block (that is what sample-output.txt shows).
    With `appear_within`, a Job that does not exist after that many seconds raises JobNotFound; NotSynced
    (k8s/watch.py) when the watches cannot list within 30 s."""
    changed = threading.Event()
    with Tape(k, FOLLOWED, namespace, keep=lambda obj: False, on_change=lambda *_: changed.set()) as tape:
        return _follow(tape, changed, name, until, timeout, out, interval, live, on_snapshot, appear_within)


FOLLOWED = (JOB, WORKLOAD, PROVREQ, POD, NODE)


def _follow(tape: Tape, changed: threading.Event, name: str, until: str, timeout: float, out, interval: float,
            live: bool | None, on_snapshot: Callable[[Snapshot], None] | None,
            appear_within: float | None) -> phases.View:
    namespace = tape.namespace
    out = out or sys.stdout
    live = out.isatty() if live is None else live
    t0 = time.monotonic()
    deadline = t0 + timeout
    last_text = None
    seen: dict[str, tuple[str, str]] = {}
    shown_lines = 0
    job_uid = None
    while True:
        changed.clear()                # a change from now on wakes the wait below
        snap = assemble(name, job_uid, *(tape.stores[r.plural].items() for r in FOLLOWED))
        if snap.job is not None and job_uid is None:
            job_uid = snap.job["metadata"]["uid"]
        if snap.job is None and job_uid is None and appear_within is not None \
                and time.monotonic() - t0 > appear_within:
            raise JobNotFound(f"job {namespace}/{name} does not exist (waited {appear_within:.0f}s)")
        if on_snapshot:
            on_snapshot(snap)
        view = phases.derive(snap,
                             now=datetime.now(timezone.utc))
        done = view.outcome in ("succeeded", "failed") or (until == "running" and view.outcome == "running")
        gone = snap.job is None and job_uid is not None
        if live:
            text = view.render()
            if text != last_text:
                if shown_lines:
                    out.write(f"\x1b[{shown_lines}F\x1b[J")
                out.write(text + "\n")
                shown_lines = text.count("\n") + 1
                last_text = text
        else:
            for ph in view.phases:
                gist = (ph.state, _COUNTING.sub("", ph.detail))      # "booting for 3s" is no news after 2s
                if ph.state != "pending" and seen.get(ph.name) != gist:
                    seen[ph.name] = gist
                    out.write(f"  [{time.monotonic() - t0:5.1f}s] {SYMBOL[ph.state]} {ph.name:22} {ph.detail}\n")
            if done or gone:
                out.write(view.render() + "\n")
        out.flush()
        if done or gone:
            return view
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {namespace}/{name} still {view.outcome} after {timeout:.0f}s: {view.reason}")
        changed.wait(interval)
