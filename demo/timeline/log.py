"""A JSON-lines log of state changes per lane, for the timeline picture.

Each line is either a lane state, `{"t": <epoch s>, "lane": ..., "state": ..., "detail": ...}`,
written only when that lane's state changed, or a marker, `{"t": ..., "marker": "deadline"}`.
lanes.snapshot_states() turns the objects of one poll into the state string of every lane.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Callable

Obj = dict[str, Any]


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
        if self.path.exists():               # ValueError if it is not an event log: nothing is appended
            for ev in read(self.path):
                if "lane" in ev:
                    self.last[ev["lane"]] = ev.get("state", "")
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

    def record(self, lane: str, state: str, detail: str = "", t: float | None = None) -> bool:
        """Write the lane's state if it differs from the last one written; True if written."""
        if self.last.get(lane) == state:
            return False
        self._write({"t": self._now(t), "lane": lane, "state": state, "detail": detail})
        self.last[lane] = state
        return True

    def record_all(self, states: dict[str, str], t: float | None = None) -> list[str]:
        """Record every lane of a `snapshot_states()` result at one time; the lanes written."""
        now = self._now(t)
        return [lane for lane, state in states.items() if self.record(lane, state, t=now)]

    def mark(self, label: str, t: float | None = None) -> None:
        """A point in time worth a vertical line in the picture, e.g. "deadline"."""
        self._write({"t": self._now(t), "marker": label})

    @staticmethod
    def read(path: str | os.PathLike[str]) -> list[Obj]:
        return read(path)


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
        return None
    if "marker" in obj:
        return None if isinstance(obj["marker"], str) else '"marker" is not a string'
    return 'neither a lane state ({"t", "lane", "state"}) nor a marker ({"t", "marker"})'


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
