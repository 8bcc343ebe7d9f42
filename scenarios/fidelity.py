"""Conformance records, compared (pure): what each autoscaler did in each probe, reduced to the aspects
that can be compared, the differences, and whether each one is a documented deviation.

A probe's record is the list of condition transitions of its ProvisioningRequests (type, status, reason,
message; one group per write the client-side watch saw) and the node events, each with the
milliseconds since the probe's first request was created.  Three aspects are compared:

- sequence: per request, the writes in order, e.g. "Accepted=True/Accepted → Provisioned=True/CapacityIsFound"
  (a write that changed two conditions at once shows as "A + B"); requests of one probe whose roles are
  interchangeable (two equal requests racing for one node) are compared as a sorted list;
- messages: every (condition, reason) -> message seen;
- nodes: how many pool nodes were created during the probe.

A difference is documented when DEVIATIONS has an entry with the same probe, aspect, fake value and real
value, and the README has that entry's row (its id in the first column of the table under
"The real Cluster Autoscaler side by side").  Timings are shown, never compared.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from itertools import zip_longest

from demo.k8s.keys import PROVREQ_CONDITIONS

ASPECTS = ("sequence", "messages", "nodes")
ARROW = " → "


# ---------------------------------------------------------------------------- records

@dataclass(frozen=True)
class Change:
    type: str
    status: str
    reason: str
    message: str

    def short(self) -> str:
        return f"{self.type}={self.status}/{self.reason}"


@dataclass(frozen=True)
class Write:
    """One watch event that changed at least one condition of one request."""
    ms: int                   # since the probe's first request was created
    request: str              # the request's label in the probe ("a", "b")
    changes: tuple[Change, ...]


@dataclass(frozen=True)
class NodeEvent:
    ms: int
    node: str
    what: str                 # created | ready | deleted


@dataclass
class Record:
    probe: str
    autoscaler: str
    writes: list[Write] = field(default_factory=list)
    nodes: list[NodeEvent] = field(default_factory=list)
    error: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Record":
        return cls(d["probe"], d["autoscaler"],
                   [Write(w["ms"], w["request"], tuple(Change(**c) for c in w["changes"])) for w in d["writes"]],
                   [NodeEvent(**n) for n in d["nodes"]], d.get("error", ""))


def condition_changes(before: list[dict], after: list[dict]) -> tuple[Change, ...]:
    """Conditions whose (status, reason, message) differ between two status.conditions lists, in display
    order.  A rewrite of the same values with a new lastTransitionTime is not a change."""
    def table(conds):
        return {c.get("type"): (c.get("status", ""), c.get("reason", ""), c.get("message", ""))
                for c in conds or [] if isinstance(c, dict)}
    old, new = table(before), table(after)
    order = {t: i for i, t in enumerate(PROVREQ_CONDITIONS)}
    out = [Change(t, *new[t]) for t in new if old.get(t) != new[t]]
    return tuple(sorted(out, key=lambda c: (order.get(c.type, len(order)), c.type)))


# ---------------------------------------------------------------------------- aspects

def sequence(rec: Record) -> str:
    per: dict[str, list[str]] = {}
    for w in rec.writes:
        per.setdefault(w.request, []).append(" + ".join(c.short() for c in w.changes))
    if not per:
        return "(no condition written)"
    return " | ".join(sorted(ARROW.join(s) for s in per.values()))


def messages(rec: Record) -> str:
    seen = sorted({f"{c.type}/{c.reason}: {c.message}" for w in rec.writes for c in w.changes})
    return " | ".join(seen) if seen else "(none)"


def nodes_created(rec: Record) -> str:
    return str(sum(1 for n in rec.nodes if n.what == "created"))


def aspect(rec: Record, name: str) -> str:
    return {"sequence": sequence, "messages": messages, "nodes": nodes_created}[name](rec)


# ---------------------------------------------------------------------------- deviations

@dataclass(frozen=True)
class Deviation:
    id: str                   # the README row, e.g. "R3"
    probe: str
    aspect: str
    fake: str
    real: str


@dataclass(frozen=True)
class Difference:
    probe: str
    aspect: str
    fake: str
    real: str
    documented: str = ""      # the deviation id, or "" when undocumented
    readme_row: str = ""      # the README row's text when documented


def readme_rows(readme_text: str) -> dict[str, str]:
    """id -> row text of every table row whose first cell is a deviation id like R1, R12."""
    rows = {}
    for line in readme_text.splitlines():
        m = re.match(r"^\|\s*(R\d+)\s*\|", line)
        if m:
            rows[m.group(1)] = line.strip()
    return rows


def compare(fake: list[Record], real: list[Record], deviations: list[Deviation],
            readme_text: str) -> list[Difference]:
    rows = readme_rows(readme_text)
    by_probe = {r.probe: r for r in real}
    out = []
    for f in fake:
        r = by_probe.get(f.probe)
        if r is None:
            continue
        for a in ASPECTS:
            fv, rv = aspect(f, a), aspect(r, a)
            if fv == rv:
                continue
            dev = next((d for d in deviations if (d.probe, d.aspect, d.fake, d.real) == (f.probe, a, fv, rv)), None)
            if dev is not None and dev.id in rows:
                out.append(Difference(f.probe, a, fv, rv, dev.id, rows[dev.id]))
            else:
                out.append(Difference(f.probe, a, fv, rv))
    return out


def undocumented(diffs: list[Difference]) -> list[Difference]:
    return [d for d in diffs if not d.documented]


def unobserved(deviations: list[Deviation], diffs: list[Difference], probes: list[str]) -> list[Deviation]:
    """Documented deviations of probes that ran but did not show: the README row may be stale."""
    seen = {d.documented for d in diffs}
    return [d for d in deviations if d.probe in probes and d.id not in seen]


# ---------------------------------------------------------------------------- rendering

def timeline(rec: Record, wrap: bool = False) -> list[str]:
    """One line per write and node event, in time order: "+1234 ms a: Accepted=True/Accepted"; with wrap, a
    write that changed several conditions continues on indented lines ("+ Provisioned=...")."""
    items: list[tuple[int, list[str]]] = []
    for w in rec.writes:
        parts = [c.short() for c in w.changes]
        items.append((w.ms, [f"{w.request}: {parts[0]}"] + [f"   + {p}" for p in parts[1:]] if wrap
                      else [f"{w.request}: " + " + ".join(parts)]))
    for n in rec.nodes:
        items.append((n.ms, [f"node {n.what} {n.node}"]))
    lines = []
    for ms, texts in sorted(items, key=lambda x: x[0]):
        lines.append(f"+{ms:>6} ms {texts[0]}")
        lines += [" " * 11 + t for t in texts[1:]]
    if rec.error:
        lines.append(f"ERROR: {rec.error}")
    return lines or ["(nothing: no condition, no node)"]


def verdict(diffs: list[Difference], probe: str, a: str) -> str:
    d = next((x for x in diffs if x.probe == probe and x.aspect == a), None)
    if d is None:
        return "same"
    return f"differs: documented ({d.documented})" if d.documented else "differs: UNDOCUMENTED"


def side_by_side(left: list[str], right: list[str], width: int = 58) -> list[str]:
    return [f"  {a[:width]:{width}} | {b}" for a, b in zip_longest(left, right, fillvalue="")]


def report_text(probes: list[tuple[str, str]], fake: list[Record], real: list[Record], real_label: str,
                diffs: list[Difference]) -> str:
    """The terminal table: per probe, both timelines side by side, then a verdict per aspect."""
    f_by, r_by = {r.probe: r for r in fake}, {r.probe: r for r in real}
    out = []
    for probe, what in probes:
        out.append(f"\n{probe}: {what}")
        out += side_by_side(["fake"] + timeline(f_by[probe], wrap=True) if probe in f_by else ["fake: not run"],
                            [real_label] + timeline(r_by[probe], wrap=True) if probe in r_by
                            else [f"{real_label}: not run"])
        if probe in f_by and probe in r_by:
            out.append("  " + "; ".join(f"{a}: {verdict(diffs, probe, a)}" for a in ASPECTS))
    return "\n".join(out)


def row_text(row: str) -> str:
    """A README table row as prose: its cells after the id, joined by " · "."""
    cells = [c.strip() for c in row.strip().strip("|").split("|")]
    return " · ".join(c for c in cells[1:] if c)


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def report_markdown(command: str, when: str, settings: list[str], probes: list[tuple[str, str]],
                    fake: list[Record], real: list[Record], real_label: str, diffs: list[Difference],
                    stale: list[Deviation]) -> str:
    """docs/fidelity.md: what ran, the verdicts, every timeline, every difference and its README row."""
    f_by, r_by = {r.probe: r for r in fake}, {r.probe: r for r in real}
    bad = undocumented(diffs)
    lines = [
        "# Fidelity: the fake autoscaler against the real Cluster Autoscaler 1.36.1",
        "",
        f"Generated by `{command}` on {when}, from that run (nothing here is edited by hand).",
        "",
        *[f"- {s}" for s in settings],
        "",
        "Every probe puts the same ProvisioningRequests (made by hand in their own namespace, no Kueue) to each "
        "autoscaler in turn, on an empty pool, and records every condition transition (type, status, reason, "
        "message) and pool-node event from a client-side watch, in milliseconds since the first request was "
        "created. Compared: the sequence of condition writes per request, the messages, the number of nodes "
        "created. Timings are shown, not compared.",
        "",
        f"**Result: {len(diffs)} difference(s), {len(diffs) - len(bad)} documented, {len(bad)} undocumented.**",
        "",
        "| probe | what | sequence | messages | nodes |",
        "| --- | --- | --- | --- | --- |",
    ]
    for probe, what in probes:
        cells = [verdict(diffs, probe, a) if probe in f_by and probe in r_by else "not run" for a in ASPECTS]
        lines.append(f"| {probe} | {_md(what)} | " + " | ".join(cells) + " |")
    for probe, what in probes:
        lines += ["", f"## {probe}: {what}", "", f"| fake | {real_label} |", "| --- | --- |"]
        left = timeline(f_by[probe]) if probe in f_by else ["not run"]
        right = timeline(r_by[probe]) if probe in r_by else ["not run"]
        for a, b in zip_longest(left, right, fillvalue=""):
            lines.append(f"| {_md(a)} | {_md(b)} |")
        for d in (x for x in diffs if x.probe == probe):
            lines += ["", f"- **{d.aspect}** differs — "
                      + (f"documented deviation {d.documented} (README): {_md(row_text(d.readme_row))}"
                         if d.documented else "**UNDOCUMENTED**"),
                      f"  - fake: `{d.fake}`", f"  - real: `{d.real}`"]
    if stale:
        lines += ["", "## Documented deviations not observed in this run", ""]
        lines += [f"- {d.id} ({d.probe}, {d.aspect}): the README row may be stale" for d in stale]
    return "\n".join(lines) + "\n"
