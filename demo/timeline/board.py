"""What the live page (`tau-demo ui`) shows of one event log at one moment (pure): the view the server
sends the browser as JSON, which the page only draws.

build(events, at) reads the log's events (demo.timeline.log) as they stood at time `at`: one lane per
object (an object lane replaces the summary lane it details), the five phases of `tau-demo watch`,
markers (the scenario's, the deadline, the committed decision), each controller's log lines beside the
lane of the object they name, and the times the apiserver did not answer.  Replay and the live page
are the same function: the live page is the view at the last event.

The lanes are told as the SVG tells them (lanes.told: the Job unsuspended with its pods pending is not yet
running, an expected BookingExpired and a deletion after completing are not failures), with a legend of
their colours.  While the run is recorded the phases are the last written; once it has ended, the phases
over the run (lanes.run_phases: what it reached, not what its teardown left).
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

from demo.jobs.phases import SYMBOLS
from k8s.objects import Obj

from . import svg
from .lanes import GONE, LANES, lane_for, run_phases, told
from .svg import color_for, legend

NOTED_LATER = ("marker", "deadline", "decision")    # kinds whose "t" need not be when they were written
LOG_KEEP = 30                              # log lines per lane in a view (the log keeps them all)
SAME_MOMENT = 1.0                          # a scenario's "deadline" marker this close to the Job's is the same
LOUD_LEVELS = ("warn", "error", "dpanic", "panic", "fatal")   # zap levels a JSON line is prefixed with
_CLOCK = re.compile(r"^\d\d:\d\d:\d\d(?:[.,]\d+)? ")      # the controllers' "%H:%M:%S " prefix


def _r(t: float | None) -> float | None:
    return None if t is None else round(float(t), 3)


def written_times(events: list[Obj]) -> list[float]:
    """When each event was written: its own time, except for a marker, a deadline or a decision (stamped with
    the moment they concern, which may be past or still to come), written when the event before it was
    (the log is in write order)."""
    out, last = [], None
    for ev in events:
        if not any(k in ev for k in NOTED_LATER) or last is None:
            last = float(ev["t"]) if last is None else max(last, float(ev["t"]))
        out.append(last)
    return out


def upto(events: list[Obj], at: float | None) -> list[Obj]:
    """The events written by time `at` (all of them when `at` is None)."""
    if at is None:
        return list(events)
    return [ev for ev, w in zip(events, written_times(events)) if w <= at]


def brief(text: str) -> str:
    """A log line as the page shows it: without the controllers' clock prefix; a JSON line (Kueue's) as
    its message and the keys that name objects."""
    text = text.strip()
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except ValueError:
            return text
        if isinstance(obj, dict) and "msg" in obj:
            keys = [f"{k}={_plain(obj[k])}" for k in sorted(obj)
                    if k not in ("msg", "ts", "level", "caller", "logger", "stacktrace")]
            level = f"{obj['level']}: " if obj.get("level") in LOUD_LEVELS else ""
            return f"{level}{obj['msg']}" + (f" ({', '.join(keys)})" if keys else "")
        return text
    return _CLOCK.sub("", text)


def _plain(v: Any) -> str:
    """A JSON value in a log line: a {"name", "namespace"} object as namespace/name."""
    if isinstance(v, dict) and set(v) <= {"name", "namespace"} and "name" in v:
        return f"{v['namespace']}/{v['name']}" if v.get("namespace") else str(v["name"])
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)


def _lane_ids(events: list[Obj]) -> tuple[list[str], dict[str, Obj]]:
    """Lanes in order of first appearance, and each object lane's first event (its "of" and "name")."""
    order: list[str] = []
    objects: dict[str, Obj] = {}
    for ev in events:
        lane = ev.get("lane")
        if lane is None or lane in order:
            continue
        order.append(lane)
        if "of" in ev:
            objects[lane] = ev
    return order, objects


def lane_rows(events: list[Obj]) -> list[tuple[str, str | None]]:
    """(lane, the summary lane it details or None) in the order the page shows them: the known summary
    lanes first, each followed by its object lanes (in order of appearance) which then stand in its place,
    then the other lanes.  An object lane whose summary lane is unknown comes last."""
    order, objects = _lane_ids(events)
    children: dict[str, list[str]] = {}
    for lane in order:
        if lane in objects:
            children.setdefault(objects[lane]["of"], []).append(lane)
    summaries = [l for l in LANES if l in order or l in children] + \
        [l for l in order if l not in LANES and l not in objects]
    rows: list[tuple[str, str | None]] = []
    for lane in summaries:
        if lane in children:
            rows += [(c, lane) for c in children.pop(lane)]
        else:
            rows.append((lane, None))
    for parent, kids in children.items():
        rows += [(c, parent) for c in kids]
    return rows


def lane_segments(events: list[Obj], lane: str) -> list[Obj]:
    """The lane's states as segments (svg.segments, the one reading of a lane's states); the last one is
    open (stop None: it lasts until the moment shown) unless the lane ended (its object gone)."""
    out = []
    for start, stop, state, detail in svg.segments([e for e in events if e.get("lane") == lane], None).get(lane, []):
        if state != GONE:
            out.append({"start": _r(start), "stop": _r(stop), "state": state, "detail": detail,
                        "color": color_for(state)})
    return out


def markers(events: list[Obj]) -> list[Obj]:
    """The scenario's markers, the Job's deadline and the committed decision, in time order.  A scenario's
    "deadline" marker within SAME_MOMENT of the deadline the recorder read from the Job is that one."""
    deadlines = [float(e["t"]) for e in events if "deadline" in e]
    out = []
    for ev in events:
        t = float(ev["t"])
        if "marker" in ev:
            if ev["marker"] == "deadline" and any(abs(t - d) <= SAME_MOMENT for d in deadlines):
                continue
            out.append({"t": _r(t), "label": ev["marker"], "kind": "marker", "detail": ""})
        elif "deadline" in ev:
            out.append({"t": _r(t), "label": "deadline", "kind": "deadline", "detail": str(ev.get("detail") or "")})
        elif "decision" in ev:
            out.append({"t": _r(t), "label": f"committed: {ev['decision']}", "kind": "decision",
                        "detail": str(ev.get("detail") or "")})
    return sorted(out, key=lambda m: m["t"])


def outages(events: list[Obj]) -> list[Obj]:
    """The spans the apiserver did not answer the recorder (stop None: it still does not)."""
    out: list[Obj] = []
    for ev in events:
        if ev.get("cluster") == "down" and (not out or out[-1]["stop"] is not None):
            out.append({"start": _r(ev["t"]), "stop": None, "detail": str(ev.get("detail") or "")})
        elif ev.get("cluster") == "up" and out and out[-1]["stop"] is None:
            out[-1]["stop"] = _r(ev["t"])
    return out


def _names(events: list[Obj]) -> dict[str, str]:
    """Object name -> lane, from what the log says: the Job, its Workload, the object lanes."""
    names: dict[str, str] = {}
    for ev in events:
        for key, lane in (("job", "Job"), ("workload", "Workload")):
            if isinstance(ev.get(key), str) and ("run" in ev or "phases" in ev) and ev[key]:
                names[ev[key]] = lane
        if "of" in ev and ev.get("name"):
            names[ev["name"]] = ev["lane"]
    return names


def log_lines(events: list[Obj], shown: Iterable[str]) -> dict[str, list[Obj]]:
    """Per lane shown: the controllers' log lines that name its object (the longest name wins; a line
    naming no lane shown goes beside the Job), oldest first."""
    shown = list(shown)
    names = {n: lane for n, lane in _names(events).items() if lane in shown}
    fallback = "Job" if "Job" in shown else (shown[0] if shown else None)
    out: dict[str, list[Obj]] = {}
    for ev in events:
        if "log" not in ev:
            continue
        lane = lane_for(ev["log"], names) or fallback
        if lane is not None:
            out.setdefault(lane, []).append({"t": _r(ev["t"]), "source": ev["source"],
                                             "text": brief(ev["log"])})
    return out


def _phases(events: list[Obj], ended: bool) -> Obj:
    """The five phases: the last written while the run goes on ("over": "now"); once it has ended, over the
    run ("over": "run"), and the Workload the last one named."""
    written = [e for e in events if "phases" in e]
    if not written:
        return {"rows": [], "outcome": "", "job": "", "workload": "", "over": "now"}
    last = written[-1]
    rows, outcome = run_phases(events) if ended else (last["phases"], str(last.get("outcome") or ""))
    workload = next((str(e["workload"]) for e in reversed(written) if e.get("workload")), "") if ended else \
        str(last.get("workload") or "")
    return {"rows": [{"name": n, "state": s, "detail": d, "symbol": SYMBOLS.get(s, "?")} for n, s, d in rows],
            "outcome": outcome, "job": str(last.get("job") or ""), "workload": workload,
            "over": "run" if ended else "now"}


def _run(events: list[Obj]) -> Obj:
    """Who was recorded, and whether the recorder still runs: its last word (in write order) is a start."""
    runs = [e for e in events if "run" in e]
    starts = [e for e in runs if e["run"] == "start"]
    ends = [e for e in runs if e["run"] == "end"]
    first = starts[0] if starts else {}
    return {"job": str(first.get("job") or ""), "title": str(first.get("title") or ""),
            "started": _r(first.get("t")), "ended": _r(ends[-1]["t"]) if ends else None,
            "live": bool(runs) and runs[-1]["run"] == "start"}


def build(events: list[Obj], at: float | None = None, label: str = "", problems: Iterable[str] = ()) -> Obj:
    """The page's view of the log `events` (in write order) as it stood at `at` (None: at its end)."""
    written = written_times(events)
    first = min((float(e["t"]) for e in events if "lane" in e), default=written[0] if written else None)
    last = written[-1] if written else None
    if at is None:
        at = last
    seen = upto(events, at)
    t0 = min((float(e["t"]) for e in seen if "lane" in e), default=first if first is not None else at)
    shown = told(seen)
    rows = lane_rows(shown)
    logs = log_lines(shown, [lane for lane, _ in rows])
    lanes = []
    for lane, parent in rows:
        mine = logs.get(lane, [])
        lanes.append({"id": lane, "of": parent, "segments": lane_segments(shown, lane),
                      "logs": mine[-LOG_KEEP:], "log_count": len(mine)})
    down = outages(seen)
    run = _run(seen)
    states = [s["state"] for lane in lanes for s in lane["segments"]]
    return {
        "label": label, "run": run, "t0": _r(t0), "at": _r(at), "first": _r(first), "last": _r(last),
        "phases": _phases(seen, run["ended"] is not None and not run["live"]), "lanes": lanes,
        "legend": [{"class": name, "color": fill, "meaning": meaning} for name, fill, meaning in legend(states)],
        "markers": markers(seen), "outages": down,
        "cluster": "down" if down and down[-1]["stop"] is None else "up",
        "problems": list(problems),
    }
