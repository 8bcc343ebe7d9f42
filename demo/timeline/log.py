"""A JSON-lines log of one recorded Job: the one source of the timeline picture (svg) and the live
page (board, `tau-demo ui`).

Every line is a JSON object with "t" (seconds since the epoch) and one of these kinds:

    lane      {"lane": "Nodes", "state": "2", "detail": ""}: a lane's state, written only when it changed
              (lanes.snapshot_states).  With "of" and "name" it is one object's own lane that details a
              summary lane, e.g. {"lane": "Node aks-gpupool-x", "of": "Nodes", "name": "aks-gpupool-x",
              "state": "booting"} (lanes.object_lanes); the SVG draws only the summary lanes.
    marker    {"marker": "deadline"}: a moment a scenario names, a vertical line in both pictures
    phases    {"phases": [[name, state, detail] x 5], "job": ..., "workload": ..., "outcome": ...}:
              the five phases of `tau-demo watch`, written when they changed
    log       {"log": "<line>", "source": "fake-ca"}: a controller's log line about this Job's objects
    deadline  {"deadline": "<job>", "detail": ...}: the Job's admission deadline ("t" is the deadline)
    decision  {"decision": "timed-out", "detail": ...}: a committed decision on the Workload
    cluster   {"cluster": "down" | "up", "detail": ...}: the apiserver stopped or started answering
    run       {"run": "start" | "end", "job": ..., "title": ...}: the recorder started or stopped
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Callable

from k8s.objects import Obj


class EventLog:
    """Appends lane states and markers to `path`, one JSON object per line.

    Consecutive equal states of a lane are written once.  If `path` already holds a log,
    the last state of every lane is taken from it, so a restarted recorder does not repeat
    itself.
    """

    def __init__(self, path: str | os.PathLike[str], clock: Callable[[], float] = time.time):
        self.path = Path(path)
        self.clock = clock
        self.last: dict[str, str] = {}
        self.last_of: dict[str, Any] = {}    # per kind (phases, cluster, deadline, decision): the last written
        if self.path.exists():               # ValueError if it is not an event log: nothing is appended
            for ev in read(self.path):
                if "lane" in ev:
                    self.last[ev["lane"]] = ev.get("state", "")
                for kind in ONCE_KINDS:
                    if kind in ev:
                        self.last_of[kind] = _gist(kind, ev)
            self._drop_truncated_tail()

    def _drop_truncated_tail(self) -> None:
        """A writer killed mid-line left a partial last line (read() skipped it): cut it off, or the
        next event would be appended to it and corrupt the log."""
        data = self.path.read_bytes()
        if not data or data.endswith(b"\n"):
            return
        cut = data.rfind(b"\n") + 1
        try:
            json.loads(data[cut:])
        except ValueError:
            with open(self.path, "r+b") as f:
                f.truncate(cut)
            return
        with open(self.path, "ab") as f:     # a complete last line without its newline
            f.write(b"\n")

    def _write(self, obj: Obj) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(obj, ensure_ascii=False) + "\n")

    def _now(self, t: float | None) -> float:
        return round(float(self.clock() if t is None else t), 3)

    def record(self, lane: str, state: str, detail: str = "", t: float | None = None,
               of: str | None = None, name: str | None = None) -> bool:
        """Write the lane's state if it differs from the last one written; True if written.  `of` and
        `name`: the lane is one object's (named `name`), detailing the summary lane `of`."""
        if self.last.get(lane) == state:
            return False
        ev: Obj = {"t": self._now(t), "lane": lane, "state": state, "detail": detail}
        if of is not None:
            ev.update({"of": of, "name": name or ""})
        self._write(ev)
        self.last[lane] = state
        return True

    def record_all(self, states: dict[str, str], t: float | None = None) -> list[str]:
        """Record every lane of a `snapshot_states()` result at one time; the lanes written."""
        now = self._now(t)
        return [lane for lane, state in states.items() if self.record(lane, state, t=now)]

    def mark(self, label: str, t: float | None = None) -> None:
        """A point in time worth a vertical line in the picture, e.g. "deadline"."""
        self._write({"t": self._now(t), "marker": label})

    def note(self, kind: str, value: Any, t: float | None = None, **fields: Any) -> bool:
        """Write a phases, cluster, deadline or decision event unless it repeats the last one of its kind
        (for phases and cluster: the same value; for deadline and decision: the same value and time);
        True if written."""
        ev: Obj = {"t": self._now(t), kind: value, **fields}
        gist = _gist(kind, ev)
        if self.last_of.get(kind) == gist:
            return False
        self._write(ev)
        self.last_of[kind] = gist
        return True

    def log_line(self, source: str, text: str, t: float | None = None) -> None:
        """A controller's log line (never deduped: a controller may say the same thing twice)."""
        self._write({"t": self._now(t), "log": text, "source": source})

    def run(self, what: str, job: str, t: float | None = None, title: str = "") -> None:
        """The recorder of `job` started ("start", with the scenario's title) or stopped ("end")."""
        ev: Obj = {"t": self._now(t), "run": what, "job": job}
        if title:
            ev["title"] = title
        self._write(ev)

    @staticmethod
    def read(path: str | os.PathLike[str]) -> list[Obj]:
        return read(path)


ONCE_KINDS = ("phases", "cluster", "deadline", "decision")      # EventLog.note() kinds
CLUSTER_STATES = ("down", "up")
RUN_STATES = ("start", "end")


def _gist(kind: str, ev: Obj) -> Any:
    """What makes an event of a note() kind news: its value, and for deadline and decision its time."""
    value = json.dumps(ev.get(kind), sort_keys=True)
    return (value, ev.get("t")) if kind in ("deadline", "decision") else value


def _phases_problem(rows: Any) -> str | None:
    if not isinstance(rows, list) or not rows:
        return '"phases" is not a non-empty list'
    for row in rows:
        if not (isinstance(row, list) and len(row) == 3 and all(isinstance(c, str) for c in row)):
            return f'"phases" row {row!r} is not [name, state, detail] (three strings)'
    return None


def event_problem(obj: Any) -> str | None:
    """Why a parsed JSON line is not an event of this log (None: it is one)."""
    if not isinstance(obj, dict):
        return f"expected a JSON object, got {type(obj).__name__}"
    t = obj.get("t")
    if isinstance(t, bool) or not isinstance(t, (int, float)):
        return 'no numeric "t" (seconds since the epoch)'
    if "lane" in obj:
        if not isinstance(obj["lane"], str) or not obj["lane"]:
            return '"lane" is not a non-empty string'
        if not isinstance(obj.get("state"), str):
            return f'lane {obj["lane"]!r} has no "state" string'
        if "of" in obj and not (isinstance(obj["of"], str) and obj["of"] and isinstance(obj.get("name"), str)):
            return f'lane {obj["lane"]!r}: "of" and "name" must be strings (the summary lane and the object)'
        return None
    if "marker" in obj:
        return None if isinstance(obj["marker"], str) else '"marker" is not a string'
    if "phases" in obj:
        return _phases_problem(obj["phases"])
    if "log" in obj:
        if not isinstance(obj["log"], str) or not isinstance(obj.get("source"), str):
            return 'a log line needs "log" and "source" strings'
        return None
    for kind, allowed in (("cluster", CLUSTER_STATES), ("run", RUN_STATES)):
        if kind in obj:
            return None if obj[kind] in allowed else f'"{kind}" is not one of {", ".join(allowed)}'
    for kind in ("deadline", "decision"):
        if kind in obj:
            return None if isinstance(obj[kind], str) else f'"{kind}" is not a string'
    return ('neither a lane state ({"t", "lane", "state"}) nor a marker ({"t", "marker"}), nor phases, log, '
            'deadline, decision, cluster or run')


def read(path: str | os.PathLike[str]) -> list[Obj]:
    """The events of a log.  A truncated last line (a writer killed mid-line) is skipped, unless it is
    the only line; any other line that is not JSON, or not an event, raises ValueError naming it."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not a text file ({e.reason} at byte {e.start})") from e
    while lines and not lines[-1].strip():
        lines.pop()
    events = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            if i == len(lines) - 1 and events:
                break
            raise ValueError(f"{path}:{i + 1}: not a JSON line: {e}") from e
        why = event_problem(obj)
        if why:
            raise ValueError(f"{path}:{i + 1}: not an event: {why}")
        events.append(obj)
    return events


class Lines:
    """Follows a growing text file: each new() returns the complete lines appended since the last call
    (a line not yet ended by a newline waits for its end).  A file replaced or truncated is read again
    from its start.  from_end: what the file holds now is skipped (a file that does not exist yet is read
    from its start once it does)."""

    def __init__(self, path: str | os.PathLike[str], from_end: bool = False):
        self.path = Path(path)
        self.number = 0                       # lines returned so far (the next line's number - 1)
        self._offset = 0
        self._partial = b""
        self._ident: tuple[int, int] | None = None
        if from_end:
            try:
                st = self.path.stat()
            except FileNotFoundError:
                return
            self._ident, self._offset = (st.st_dev, st.st_ino), st.st_size

    def new(self) -> tuple[list[bytes], bool]:
        """(new lines, reset): reset when the file was replaced or truncated since the last call."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return [], False
        ident = (st.st_dev, st.st_ino)
        reset = self._ident is not None and (ident != self._ident or st.st_size < self._offset)
        if reset or self._ident is None:
            self._ident, self._offset, self._partial, self.number = ident, 0, b"", 0
        if st.st_size == self._offset:
            return [], reset
        with open(self.path, "rb") as f:
            f.seek(self._offset)
            data = f.read()
        self._offset += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        self.number += len(lines)
        return lines, reset


class Tail:
    """Follows an event log being written: each read_new() returns the events appended since the last call.

    A line that is not an event is reported (path:line: why) and skipped, so a live reader goes on;
    read() is the strict reader."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self._lines = Lines(path)

    def read_new(self) -> tuple[list[Obj], list[str], bool]:
        """(new events, problems, reset).  reset: the file was replaced or truncated, and the events
        returned are all of it (the caller drops what it had)."""
        lines, reset = self._lines.new()
        first = self._lines.number - len(lines) + 1
        events, problems = [], []
        for number, raw in enumerate(lines, first):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                problems.append(f"{self.path}:{number}: not a JSON line: {e}")
                continue
            why = event_problem(obj)
            if why:
                problems.append(f"{self.path}:{number}: not an event: {why}")
                continue
            events.append(obj)
        return events, problems, reset
