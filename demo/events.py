"""A JSON-lines log of state changes per lane, for the timeline picture.

Each line is either a lane state, `{"t": <epoch s>, "lane": ..., "state": ..., "detail": ...}`,
written only when that lane's state changed, or a marker, `{"t": ..., "marker": "deadline"}`.
`snapshot_states()` turns the objects of one poll into the state string of every lane.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Callable

from demo.objects import annotations, condition, deleting, is_true
from demo.phases import (
    TERMINAL_REASON_ANNOTATION, check_state, job_finished, pod_phase, provreq_attempt, true_provreq_conditions,
    workload_provreqs,
)

Obj = dict[str, Any]

LANES = ("Job", "Workload", "AdmissionCheck", "ProvisioningRequest", "Nodes", "Pods")


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


# ------------------------------------------------------------------ one poll -> lane states

def _job_state(job: Obj | None) -> str:
    if job is None:
        return "deleted"
    finished = job_finished(job)
    if finished:
        state = finished
    elif (job.get("spec") or {}).get("suspend") is True:
        state = "suspended"
    else:
        state = "running"
    reason = annotations(job).get(TERMINAL_REASON_ANNOTATION)
    if reason:
        state += f" · marked {reason}"
    return state


def _workload_state(wl: Obj | None, job: Obj | None) -> str:
    if wl is None:
        # A live, unfinished Job without a Workload is waiting for Kueue to create one;
        # otherwise the Workload went away (garbage-collected with its Job).
        return "none" if job is not None and not job_finished(job) else "deleted"
    if is_true(wl, "Finished"):
        return "finished"
    ev = condition(wl, "Evicted")
    if ev is not None and ev.get("status") == "True":
        return f"evicted: {ev.get('reason') or 'unknown'}"
    if (wl.get("spec") or {}).get("active") is False:
        return "inactive"
    if is_true(wl, "Admitted"):
        return "admitted"
    if is_true(wl, "QuotaReserved"):
        return "quota reserved"
    return "pending"


def _provreq_state(workload: Obj | None, provreqs: list[Obj], check_name: str) -> str:
    mine = workload_provreqs(workload, provreqs, check_name)
    if not mine:
        return "none"
    pr = mine[-1]
    attempt = provreq_attempt(pr, check_name)
    trues = true_provreq_conditions(pr)
    if len(trues) > 1 and "Accepted" in trues:
        trues.remove("Accepted")   # "Provisioned" says more than "Accepted Provisioned"
    label = f"#{attempt}" if attempt is not None else pr.get("metadata", {}).get("name", "?")
    text = f"{label} {'+'.join(trues) if trues else 'created'}"
    prov = condition(pr, "Provisioned")
    if prov is not None and prov.get("status") == "False" and "Failed" not in trues:
        text += f" · {prov.get('reason') or 'not provisioned'}"     # e.g. CapacityIsNotFound
    return text


def _nodes_state(nodes: list[Obj]) -> str:
    live = sum(1 for n in nodes if not deleting(n))
    gone = len(nodes) - live
    return f"{live} ({gone} deleting)" if gone else str(live)


_POD_ORDER = ("terminating", "pending", "running", "succeeded", "failed", "unknown")


def _pods_state(pods: list[Obj]) -> str:
    counts: dict[str, int] = {}
    for p in pods:
        key = "terminating" if deleting(p) else pod_phase(p).lower()
        counts[key] = counts.get(key, 0) + 1
    if not counts:
        return "0"
    order = {k: i for i, k in enumerate(_POD_ORDER)}
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: (order.get(kv[0], 99), kv[0])))


def snapshot_states(job: Obj | None, workload: Obj | None, provreqs: list[Obj], pods: list[Obj],
                    nodes: list[Obj], check_name: str = "gpu-provisioning") -> dict[str, str]:
    """The current state string of every lane, keyed in LANES order."""
    check = check_state(workload, check_name)
    return {
        "Job": _job_state(job),
        "Workload": _workload_state(workload, job),
        "AdmissionCheck": (check or {}).get("state") or "-",
        "ProvisioningRequest": _provreq_state(workload, provreqs or [], check_name),
        "Nodes": _nodes_state(nodes or []),
        "Pods": _pods_state(pods or []),
    }
