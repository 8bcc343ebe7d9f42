"""A fleet run's report (pure): the lines printed at its end, a markdown table, and one SVG picture of one or more runs
side by side (time to admission as a CDF per run; live nodes and pending requests over time; admitted over time,
whose slope is the drain)."""

from __future__ import annotations

from html import escape

from .measure import QUANTILES

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
W, H, PAD = 900, 260, 48          # each panel's size and margin, pixels


def _s(x: float | None) -> str:
    return "–" if x is None else f"{x:.1f}s"


def lines(label: str, m: dict, verdicts: list) -> list[str]:
    """What the run prints at its end."""
    out = [f"{label}: {m['gangs']} gangs, {m['succeeded']} succeeded, {m['firings']['total']} timed out "
           f"({m['firings']['false']} false: capacity was on its way; {m['firings']['true']} out of stock), "
           f"{m['requests']} requests, run {m['span']:.0f}s"]
    out.append(f"  {'phase (from submit)':24} {'gangs':>6} " + " ".join(f"{'p' + str(q):>8}" for q in QUANTILES))
    for p in m["phases"]:
        out.append(f"  {p['name']:24} {p['count']:>6} " + " ".join(f"{_s(p['p' + str(q)]):>8}" for q in QUANTILES))
    drain, adm = m["drain_rate"], m["admission_rate"]
    out.append(f"  drain: {drain:.2f} requests provisioned a second" if drain else "  drain: –")
    out.append(f"  admission: {adm:.2f} Workloads admitted a second" if adm else "  admission: –")
    if m.get("autoscaler_loops"):
        lp = m["autoscaler_loops"]
        out.append(f"  autoscaler: {lp['loops']:.0f} loops, {lp['mean_loop_seconds'] * 1000:.0f} ms each on average")
    sk = m["skew"]
    out.append(f"  pod start skew over {sk['gangs']} multi-pod gangs: p50 {_s(sk['p50'])}, p95 {_s(sk['p95'])}, "
               f"max {_s(sk['max'])}; {sk['over_2s']} more than 2s apart")
    causes = {k[6:]: v for k, v in m["firings"].items() if k.startswith("cause:")}
    if causes:
        bounds = {k[6:]: v for k, v in m["firings"].items() if k.startswith("bound:")}
        out.append("  deadline firings by the request's state then: "
                   + ", ".join(f"{k} {v}" for k, v in sorted(causes.items()))
                   + (f"; by the bound that fired: {', '.join(f'{k} {v}' for k, v in sorted(bounds.items()))}"
                      if bounds else ""))
    d = m.get("depth") or {}
    if d.get("first_false_timeout") is not None:
        out.append(f"  the first false timeout fired {d['first_false_timeout']:.0f}s into the run, when "
                   f"{d['provisioned_before']} requests had been provisioned: the queue depth the deadline bore")
    c = m.get("caught") or {}
    if c.get("gangs"):
        out.append(f"  out of stock: {c['timed_out']} of {c['gangs']} gangs timed out"
                   + (f", {c['p50']:.0f}s after their submission (p50), {c['max']:.0f}s at most"
                      if c.get("p50") is not None else ""))
    if m.get("cost"):
        out.append("  control plane: " + ", ".join(f"{k} {v['cpu']:.0f} CPU-s / {v['peak_mb']:.0f} MB peak"
                                                   for k, v in sorted(m["cost"].items())))
    for v in verdicts:
        out.append(f"  {'PASS' if v.ok else 'FAIL'}  {v.name}: {v.detail}")
    return out


def _path(points: list[tuple[float, float]], sx, sy) -> str:
    return " ".join(f"{'M' if i == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}" for i, (x, y) in enumerate(points))


def _panel(top: int, title: str, xmax: float, ymax: float, curves: list[tuple[str, str, list, str]],
           xlabel: str, ylabel: str) -> list[str]:
    """One panel: axes, a title and `curves` (label, colour, points, dash)."""
    xmax, ymax = xmax or 1.0, ymax or 1.0
    sx = lambda x: PAD + (W - 2 * PAD) * x / xmax                     # noqa: E731
    sy = lambda y: top + H - PAD + -(H - 2 * PAD) * y / ymax          # noqa: E731
    out = [f'<text x="{PAD}" y="{top + 20}" font-size="14" font-weight="bold">{escape(title)}</text>',
           f'<line x1="{PAD}" y1="{sy(0)}" x2="{W - PAD}" y2="{sy(0)}" stroke="#444"/>',
           f'<line x1="{PAD}" y1="{sy(0)}" x2="{PAD}" y2="{sy(ymax)}" stroke="#444"/>',
           f'<text x="{W - PAD}" y="{sy(0) + 30}" font-size="11" text-anchor="end">{escape(xlabel)}</text>',
           f'<text x="{PAD - 6}" y="{sy(ymax) - 6}" font-size="11">{escape(ylabel)}</text>']
    for i in range(5):
        x, y = xmax * i / 4, ymax * i / 4
        out.append(f'<text x="{sx(x):.0f}" y="{sy(0) + 14}" font-size="10" text-anchor="middle">{x:.0f}</text>')
        out.append(f'<text x="{PAD - 4}" y="{sy(y) + 3:.0f}" font-size="10" text-anchor="end">{y:.0f}</text>')
    for j, (label, colour, points, dash) in enumerate(curves):
        if points:
            out.append(f'<path d="{_path(points, sx, sy)}" fill="none" stroke="{colour}" stroke-width="1.6"'
                       f'{f" stroke-dasharray={chr(34)}{dash}{chr(34)}" if dash else ""}/>')
        out.append(f'<text x="{W - PAD - 4}" y="{top + 36 + 14 * j}" font-size="11" fill="{colour}" '
                   f'text-anchor="end">{escape(label)}</text>')
    return out


def svg(runs: list[tuple[str, dict]], title: str) -> str:
    """The picture of one or more runs (label, measurements)."""
    body = [f'<text x="{PAD}" y="24" font-size="16" font-weight="bold">{escape(title)}</text>']
    cdf, load, done = [], [], []
    xmax_cdf = max((max(m["admission_cdf"], default=0) for _, m in runs), default=0)
    xmax_t = max((m["span"] for _, m in runs), default=0)
    ymax_load = max((max((max(p[1], p[2]) for p in m["series"]), default=0) for _, m in runs), default=0)
    ymax_done = max((max((p[3] for p in m["series"]), default=0) for _, m in runs), default=0)
    for i, (label, m) in enumerate(runs):
        c = COLOURS[i % len(COLOURS)]
        xs = m["admission_cdf"]
        cdf.append((label, c, [(x, 100 * (k + 1) / m["gangs"]) for k, x in enumerate(xs)], ""))
        load.append((f"{label}: live nodes", c, [(p[0], p[1]) for p in m["series"]], ""))
        load.append((f"{label}: requests pending", c, [(p[0], p[2]) for p in m["series"]], "5,3"))
        drain = m["drain_rate"]
        done.append((f"{label}: admitted (drain {drain:.2f}/s)" if drain else f"{label}: admitted", c,
                     [(p[0], p[3]) for p in m["series"]], ""))
    body += _panel(40, "Time from submit to Admitted (CDF)", xmax_cdf, 100, cdf, "seconds after submit",
                   "% of gangs")
    body += _panel(40 + H, "Live nodes and pending requests over time", xmax_t, ymax_load, load,
                   "seconds into the run", "count")
    body += _panel(40 + 2 * H, "Workloads admitted at once over time", xmax_t, ymax_done, done,
                   "seconds into the run", "admitted")
    height = 40 + 3 * H
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" viewBox="0 0 {W} {height}" '
            f'font-family="sans-serif"><rect width="100%" height="100%" fill="white"/>' + "".join(body) + "</svg>\n")


def table(runs: list[tuple[str, dict]]) -> list[str]:
    """A markdown table of runs side by side: admission p50/p95/p99, drain, timeouts (false / true), skew p95."""
    out = ["| run | gangs | Admitted p50 | p95 | p99 | drain (req/s) | timeouts false / true | skew p95 |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for label, m in runs:
        adm = next(p for p in m["phases"] if p["name"] == "Admitted")
        drain = f"{m['drain_rate']:.2f}" if m["drain_rate"] else "–"
        out.append(f"| {label} | {m['gangs']} | {_s(adm['p50'])} | {_s(adm['p95'])} | {_s(adm['p99'])} | {drain} | "
                   f"{m['firings']['false']} / {m['firings']['true']} | {_s(m['skew']['p95'])} |")
    return out


def throughput_ratios(runs: list[tuple[str, dict]]) -> list[str]:
    """Kueue's admission throughput of each run with the check as a ratio to a run without it, if one is given."""
    base = next(((label, m) for label, m in runs if m.get("check") is False and m.get("admission_rate")), None)
    if base is None:
        return []
    out = [f"admission throughput without the check ({base[0]}): {base[1]['admission_rate']:.2f} a second"]
    for label, m in runs:
        if m.get("check") is not False and m.get("admission_rate"):
            out.append(f"  {label}: {m['admission_rate']:.2f} a second, {m['admission_rate'] / base[1]['admission_rate']:.3f}"
                       " of it")
    return out


PACE_TOLERANCE = 0.25      # the fake keeps the real one's pace: each figure within 25% of the real one's


def _pace_figures(run: dict) -> list[float | None]:
    """A run's drain rate and its time to Provisioned p50 and p95 (pure)."""
    prov = next(p for p in run["phases"] if p["name"] == "Provisioned")
    return [run["drain_rate"], prov["p50"], prov["p95"]]


def _pace_number(i: int, x: float) -> str:
    """A pace figure's number: the drain (i 0) with two decimals, a time with one."""
    return f"{x:.2f}" if i == 0 else f"{x:.1f}"


def _pace_cell(i: int, x: float | None) -> str:
    """A pace figure as the table shows it: its number, and a time's unit."""
    return "–" if x is None else _pace_number(i, x) + ("" if i == 0 else " s")


def _median(xs: list[float | None]) -> float | None:
    got = sorted(x for x in xs if x is not None)
    if not got:
        return None
    mid = len(got) // 2
    return got[mid] if len(got) % 2 else (got[mid - 1] + got[mid]) / 2


def _by_size(pairs: list[tuple[int, dict, dict]]) -> list[tuple[int, list[dict], list[dict]]]:
    """The pairs grouped by fleet size, in the order the sizes first come (pure)."""
    groups: dict[int, tuple[list[dict], list[dict]]] = {}
    for n, real, fake in pairs:
        reals, fakes = groups.setdefault(n, ([], []))
        reals.append(real)
        fakes.append(fake)
    return [(n, reals, fakes) for n, (reals, fakes) in groups.items()]


def pace_rows(pairs: list[tuple[int, dict, dict]]) -> list[str]:
    """Fake against real at the same load, one row per fleet size (gangs, real run, fake run; several pairs of one
    size: the median of each figure over that size's real runs and over its fake runs): the drain rate and the time to
    Provisioned p50 and p95 of each, the fake's as a ratio of the real one's, and whether all three are within
    PACE_TOLERANCE."""
    out = ["| gangs | drain real / fake (req/s) | ratio | Provisioned p50 real / fake | ratio | "
           "Provisioned p95 real / fake | ratio | within 25% |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for n, reals, fakes in _by_size(pairs):
        rf = [_pace_figures(r) for r in reals]
        ff = [_pace_figures(f) for f in fakes]
        figures = [(_median([x[i] for x in rf]), _median([x[i] for x in ff])) for i in range(3)]
        ratios = [f / r if r and f is not None else None for r, f in figures]
        ok = all(x is not None and abs(x - 1) <= PACE_TOLERANCE for x in ratios)
        cells = []
        for i, ((r, f), x) in enumerate(zip(figures, ratios)):
            cells += [f"{_pace_cell(i, r)} / {_pace_cell(i, f)}", f"{x:.2f}" if x is not None else "–"]
        size = f"{n}" if len(reals) == 1 else f"{n}, median of {len(reals)} runs each"
        out.append(f"| {size} | " + " | ".join(cells) + f" | {'yes' if ok else 'no'} |")
    return out


def pace_spread(pairs: list[tuple[int, dict, dict]]) -> list[str]:
    """For each fleet size run more than once: each autoscaler's own range of each figure over its runs (pure), so
    that a ratio can be read beside how much one autoscaler differs from itself."""
    out = []
    for n, reals, fakes in _by_size(pairs):
        if len(reals) < 2:
            continue
        parts = []
        for label, runs in (("real", reals), ("fake", fakes)):
            figs = [_pace_figures(r) for r in runs]
            ranges = []
            for i, name in enumerate(("drain", "Provisioned p50", "p95")):
                xs = [x[i] for x in figs if x[i] is not None]
                ranges.append(f"{name} {_pace_number(i, min(xs))}–{_pace_cell(i, max(xs))}" if xs
                              else f"{name} –")
            parts.append(f"{label} " + ", ".join(ranges))
        out.append(f"{n} gangs, {len(reals)} runs each: " + "; ".join(parts))
    return out
