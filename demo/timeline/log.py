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
        if self.path.exists():
            for ev in read(self.path):
                if "lane" in ev:
                    self.last[ev["lane"]] = ev.get("state", "")

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


def read(path: str | os.PathLike[str]) -> list[Obj]:
    """The events of a log.  A truncated last line (a writer killed mid-line) is skipped;
    a malformed line elsewhere raises ValueError."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    events = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            if i == len(lines) - 1:
                break
            raise ValueError(f"{path}:{i + 1}: not a JSON line: {e}") from e
        if isinstance(obj, dict):
            events.append(obj)
    return events
