"""The timeline picture: one horizontal lane per object, one coloured bar per state.

`render_svg()` draws the events of a timeline.log event log by hand as standalone SVG (no
plotting library): the lanes as the readers tell them (lanes.told), a legend of the colours drawn,
and the five phases over the run (lanes.run_phases); `write()` reads a log and writes the picture.
PNG needs an external converter (rsvg-convert or ImageMagick's convert) on PATH.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from k8s.objects import Obj
from demo.jobs.phases import SYMBOLS
from .lanes import AFTER_COMPLETING, AS_EXPECTED, LANES, run_phases, told
from .log import read

# Fill colours by state keyword; the first class with a matching keyword wins ("ended" before "red": a
# BookingExpired told AS_EXPECTED, a deletion AFTER_COMPLETING).
COLORS = {"ended": "#a9c8ee", "red": "#f4a3a3", "green": "#9bd89f", "amber": "#ffd37a", "grey": "#d6d6d6"}
KEYWORDS = (
    ("ended", (AS_EXPECTED.strip(" ()"), AFTER_COMPLETING)),
    ("red", ("fail", "reject", "evict", "inactive", "deleted", "revoked", "expired", "timeout")),
    ("green", ("succeeded", "admitted", "ready", "provisioned", "running")),
    ("amber", ("pending", "suspended", "accepted", "retry", "reserved", "created", "booting", "scheduled")),
)
# What each colour means: the legend of both pictures (the SVG and the live page)
MEANINGS = {
    "ended": "ended as expected: a booking used up once the Job was unsuspended (BookingExpired), "
             "deleted after completing",
    "red": "a failure: failed, rejected, evicted, inactive, expired or deleted before completing, timed out",
    "green": "done or going: succeeded, admitted, Ready, Provisioned, running",
    "amber": "waiting: suspended, unsuspended with pods pending, pending, accepted, retry, booting, scheduled",
    "grey": "no state of note: a count of objects, none, finished, deleting, -",
}
MARKER_COLOR = "#d32f2f"

WIDTH = 1000
LABEL_W = 170          # lane names on the left
RIGHT_PAD = 24
TOP = 64               # title + marker labels
LANE_H = 26
LANE_GAP = 8
FONT = 11
CHAR_W = 6.4           # rough width of one character at FONT px


class UnsupportedOutput(ValueError):
    """The requested picture format cannot be written here."""


def color_class(state: str) -> str:
    """The colour class of a state ("ended", "red", "green", "amber", "grey"), by its keywords."""
    s = state.lower()
    for name, words in KEYWORDS:
        if any(w in s for w in words):
            return name
    return "grey"


def color_for(state: str) -> str:
    return COLORS[color_class(state)]


def fit(label: str, width: float) -> str:
    """The label of a bar `width` wide: whole when it fits, else cut with "…" when 3 characters or more fit
    (the bar's tooltip and the legend say the rest), else none."""
    if len(label) * CHAR_W + 8 <= width:
        return label
    n = int((width - 8) / CHAR_W) - 1
    return label[:n] + "…" if n >= 3 else ""


def legend(states) -> list[tuple[str, str, str]]:
    """(class, fill, meaning) of every colour the states are drawn in, in COLORS order."""
    used = {color_class(s) for s in states}
    return [(name, fill, MEANINGS[name]) for name, fill in COLORS.items() if name in used]


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _text(s: Any) -> str:
    return escape(_CONTROL.sub("", str(s)))


def _num(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def drawn(ev: Obj) -> bool:
    """The events this picture draws: the summary lanes' states and the markers (a log holds more for the
    live page: object lanes, phases, log lines, ...)."""
    return ("lane" in ev and "of" not in ev) or "marker" in ev


def lane_order(events: list[Obj]) -> list[str]:
    """Known lanes first (Job, Workload, AdmissionCheck, ProvisioningRequest, Nodes, Pods),
    then the others in order of first appearance."""
    seen: list[str] = []
    for ev in events:
        lane = ev.get("lane")
        if lane is not None and lane not in seen:
            seen.append(lane)
    return [l for l in LANES if l in seen] + [l for l in seen if l not in LANES]


def segments(events: list[Obj], end: float | None) -> dict[str, list[tuple[float, float | None, str, str]]]:
    """Per lane: (start, stop, state, detail), each state lasting until the lane's next state
    (the last one until `end`; None: still open).  Repeated equal states are merged."""
    by_lane: dict[str, list[tuple[float, str, str]]] = {}
    for ev in sorted((e for e in events if "lane" in e and _has_t(e)), key=lambda e: float(e["t"])):
        steps = by_lane.setdefault(ev["lane"], [])
        state = str(ev.get("state", ""))
        if steps and steps[-1][1] == state:
            continue
        steps.append((float(ev["t"]), state, str(ev.get("detail", "") or "")))
    out = {}
    for lane, steps in by_lane.items():
        out[lane] = [(t, steps[i + 1][0] if i + 1 < len(steps) else end, state, detail)
                     for i, (t, state, detail) in enumerate(steps)]
    return out


def _has_t(ev: Obj) -> bool:
    try:
        float(ev["t"])
        return True
    except (KeyError, TypeError, ValueError):
        return False


def _tick_step(total: float) -> float:
    raw = total / 8
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag  # pragma: no cover


PHASES_H = 16          # one line of the phases over the run, or of the legend


def render_svg(events: list[Obj], title: str) -> str:
    """The picture of a log: its summary lanes (as lanes.told tells them) and markers, the legend of the
    colours drawn, and the phases over the run (lanes.run_phases) when the log has phases."""
    events = [e for e in events if _has_t(e)]
    rows, _ = run_phases(events)
    events = [e for e in told(events) if drawn(e)]
    lanes = lane_order(events)
    times = [float(e["t"]) for e in events]
    t0 = min(times) if times else 0.0
    tmax = max(times) if times else 0.0
    span = tmax - t0
    end = tmax + max(1.0, 0.05 * span)      # room for the last state of every lane
    total = end - t0
    plot_w = WIDTH - LABEL_W - RIGHT_PAD
    axis_y = TOP + max(len(lanes), 1) * (LANE_H + LANE_GAP)
    segs = segments(events, end)
    keys = legend(state for lane in lanes for _, _, state, _ in segs.get(lane, []))
    legend_y = axis_y + 48 + PHASES_H
    phases_y = legend_y + len(keys) * PHASES_H + (PHASES_H if rows else 0)
    height = phases_y + len(rows) * PHASES_H + (PHASES_H + 8 if rows else 0)

    def x(t: float) -> float:
        return LABEL_W + (t - t0) / total * plot_w

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="DejaVu Sans, Arial, sans-serif" font-size="{FONT}">',
        f"<title>{_text(title)}</title>",
        f'<text x="{LABEL_W}" y="22" font-size="15" font-weight="bold">{_text(title)}</text>',
    ]
    if not lanes:
        out.append(f'<text x="{LABEL_W}" y="{TOP + 16}" fill="#666">no events</text>')

    for i, lane in enumerate(lanes):
        y = TOP + i * (LANE_H + LANE_GAP)
        out.append(f'<text x="{LABEL_W - 10}" y="{_num(y + LANE_H / 2 + 4)}" text-anchor="end" '
                   f'font-weight="bold">{_text(lane)}</text>')
        out.append(f'<line x1="{LABEL_W}" y1="{_num(y + LANE_H + LANE_GAP / 2)}" x2="{WIDTH - RIGHT_PAD}" '
                   f'y2="{_num(y + LANE_H + LANE_GAP / 2)}" stroke="#eeeeee"/>')
        for start, stop, state, detail in segs.get(lane, []):
            x1, x2 = x(start), x(stop)
            w = max(x2 - x1, 1.0)
            tip = f"{lane}: {state}" + (f" — {detail}" if detail else "") + \
                f" (t={_num(start - t0)}s..{_num(stop - t0)}s)"
            out.append(f'<rect class="state {color_class(state)}" x="{_num(x1)}" y="{y}" width="{_num(w)}" '
                       f'height="{LANE_H}" fill="{color_for(state)}" stroke="#ffffff" stroke-width="1">'
                       f"<title>{_text(tip)}</title></rect>")
            label = fit(state, w)
            if label:
                out.append(f'<text x="{_num(x1 + 4)}" y="{_num(y + LANE_H / 2 + 4)}">{_text(label)}</text>')

    # time axis
    out.append(f'<line x1="{LABEL_W}" y1="{axis_y}" x2="{WIDTH - RIGHT_PAD}" y2="{axis_y}" stroke="#333"/>')
    step = _tick_step(total)
    k = 0
    while k * step <= total + 1e-9:
        tx = x(t0 + k * step)
        out.append(f'<line x1="{_num(tx)}" y1="{axis_y}" x2="{_num(tx)}" y2="{axis_y + 5}" stroke="#333"/>')
        out.append(f'<text x="{_num(tx)}" y="{axis_y + 18}" text-anchor="middle">{_num(k * step)}</text>')
        k += 1
    out.append(f'<text x="{_num(LABEL_W + plot_w / 2)}" y="{axis_y + 36}" text-anchor="middle" '
               f'fill="#555">seconds since the first event</text>')

    # markers: dashed red verticals labelled at the top; close labels alternate between two rows
    row_end = [float("-inf"), float("-inf")]
    for ev in sorted((e for e in events if "marker" in e), key=lambda e: float(e["t"])):
        mx = x(float(ev["t"]))
        half = 3.6 * len(str(ev["marker"]))            # ~7px per character at this font size
        row = 0 if mx - half > row_end[0] + 6 else (1 if mx - half > row_end[1] + 6 else 0)
        row_end[row] = mx + half
        out.append(f'<line x1="{_num(mx)}" y1="{TOP - 12 - 14 * row}" x2="{_num(mx)}" y2="{axis_y}" '
                   f'stroke="{MARKER_COLOR}" stroke-width="1.5" stroke-dasharray="5,4"/>')
        out.append(f'<text x="{_num(mx)}" y="{TOP - 16 - 14 * row}" text-anchor="middle" fill="{MARKER_COLOR}">'
                   f"{_text(ev['marker'])}</text>")

    # the legend: one line per colour drawn, so that every bar says what it is (narrow ones by their colour)
    for i, (name, fill, meaning) in enumerate(keys):
        ly = legend_y + i * PHASES_H
        out.append(f'<rect class="legend {name}" x="{LABEL_W}" y="{ly - 10}" width="18" height="11" fill="{fill}">'
                   f"<title>{_text(meaning)}</title></rect>")
        out.append(f'<text class="legend" x="{LABEL_W + 24}" y="{ly}">{_text(meaning)}</text>')
    # the five phases over the run: what it reached, not what its teardown left
    if rows:
        out.append(f'<text x="{LABEL_W - 10}" y="{phases_y}" text-anchor="end" font-weight="bold">phases</text>')
        out.append(f'<text class="phases" x="{LABEL_W}" y="{phases_y}" fill="#555">over the run</text>')
    for i, (name, state, detail) in enumerate(rows):
        py = phases_y + (i + 1) * PHASES_H
        line = f"{SYMBOLS.get(state, '?')} {name}" + (f": {detail}" if detail else "")
        out.append(f'<text class="phase {_text(state)}" x="{LABEL_W}" y="{py}">{_text(line)}</text>')

    out.append("</svg>")
    return "\n".join(out) + "\n"


def _converter() -> tuple[str, str] | None:
    """("rsvg-convert" | "convert", executable path) of the first PNG converter on PATH."""
    for name in ("rsvg-convert", "convert"):
        path = shutil.which(name)
        if path:
            return name, path
    return None


def _convert(converter: tuple[str, str], svg_path: Path, png_path: Path) -> None:
    name, exe = converter
    if name == "rsvg-convert":
        argv = [exe, "-f", "png", "-o", str(png_path), str(svg_path)]
    else:
        argv = [exe, f"svg:{svg_path}", f"png:{png_path}"]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0 or not png_path.exists() or png_path.stat().st_size == 0:
        msg = (proc.stderr or proc.stdout or "").strip()
        raise RuntimeError(f"{name} could not convert the SVG to {png_path} (exit {proc.returncode}): "
                           f"{msg or 'no PNG written'}; write a .svg file instead")


def write(path_jsonl: str | os.PathLike[str], out_path: str | os.PathLike[str], title: str) -> Path:
    """Render the log at `path_jsonl` to `out_path` (SVG; PNG only with a converter on PATH)."""
    out = Path(out_path)
    png = out.suffix.lower() == ".png"
    converter = _converter() if png else None
    if png and converter is None:
        raise UnsupportedOutput(
            f"cannot write {out}: only SVG output is supported (give a .svg path), "
            "unless rsvg-convert or ImageMagick's convert is on PATH")
    svg = render_svg(read(path_jsonl), title)
    out.parent.mkdir(parents=True, exist_ok=True)
    if not png:
        out.write_text(svg, encoding="utf-8")
        return out
    with tempfile.TemporaryDirectory() as tmp:
        svg_path = Path(tmp) / "timeline.svg"
        svg_path.write_text(svg, encoding="utf-8")
        _convert(converter, svg_path, out)
    return out
