"""Conformance records, compared (pure): what each autoscaler did in each probe, reduced to the aspects
that can be compared, the differences, and whether each one is a documented deviation.

A probe's record holds, each with the milliseconds since the probe's first action:

- the status writes of its ProvisioningRequests, one per watch event that changed a condition: the
  conditions whose (status, reason, message) changed, and those written again unchanged (a new
  lastTransitionTime only, as the autoscaler's retry writes them);
- the field managers that own each condition at the end (managedFields: manager and operation);
- the pool-node events (created, ready, deleted) with the node's pool;
- the node-group state the autoscaler published in its status ConfigMap, each change of it;
- the probe's own actions ("marks": a request created or deleted, a PodTemplate created).

Seven aspects are compared:

- sequence: per request, its writes in order, e.g. "Accepted=True/Accepted → Provisioned=True/CapacityIsFound"
  (a write that changed two conditions at once shows as "A + B": the number of status writes); requests
  of one probe are compared as a sorted list (their roles may be interchangeable: the real lister's order
  is unspecified);
- order: the writes of all requests in time order, each request named by the order it was first written
  in ("1 Accepted → 1 Provisioned → 2 Accepted ..."): one request per loop, or interleaved;
- messages: every (condition, reason) -> message seen;
- writers: per request, which field manager owns each condition and by which operation (Update or Apply);
- nodes: per pool, how many nodes were created and deleted during the probe;
- groups: per node group the probe's requests name, the scale-up states of the status ConfigMap in the order
  they first appeared, and the last ("NoActivity → Backoff (timeout)"; InProgress, a race, left out);
- timing: the probe's claims about time (`Gap`s: from one event to another), each measured in both and
  equal when the two differ by at most TOLERANCE_SCANS scan intervals plus TOLERANCE_SLACK seconds.

A difference is documented when DEVIATIONS has an entry with the same probe, aspect, fake value and real
value ("*" matches any value: for a timing that differs by design and varies from run to run), and
docs/autoscaler.md has that entry's row (its id in the first column of the table under "The real Cluster
Autoscaler side by side").
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import asdict, dataclass, field
from itertools import zip_longest

from k8s.keys import PROVREQ_CONDITIONS

ASPECTS = ("sequence", "order", "messages", "writers", "nodes", "groups", "timing")
ARROW = " → "
ANY = "*"                     # a deviation's value that matches any value
TOLERANCE_SCANS = 1.0         # timing: how far apart two measurements may be, in scan intervals ...
TOLERANCE_SLACK = 1.0         # ... plus this many seconds (lastTransitionTime has 1 s resolution)


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
class ObservedWrite:
    """One watch event that wrote at least one condition of one request."""
    ms: int                   # since the probe's first action
    request: str              # the request's label in the probe ("a", "b")
    changes: tuple[Change, ...]
    rewritten: tuple[Change, ...] = ()   # written again with the same status, reason and message

    def text(self) -> str:
        return " + ".join([c.short() for c in self.changes] + [f"{c.type} again" for c in self.rewritten])


@dataclass(frozen=True)
class NodeEvent:
    ms: int
    node: str
    what: str                 # created | ready | deleted
    pool: str = ""


@dataclass(frozen=True)
class GroupEvent:
    """The node group's scale-up state in the autoscaler's status ConfigMap changed (ms 0: as listed)."""
    ms: int
    group: str
    state: str                # "NoActivity", "InProgress", "Backoff (timeout)"


@dataclass(frozen=True)
class Mark:
    """Something the probe did: "created a", "deleted a", "template a", "pod a"."""
    ms: int
    what: str


@dataclass(frozen=True)
class Gap:
    """A claim about time: from the event `start` selects to the one `end` selects (see `select`), equal in
    both within `scans` scan intervals plus `slack` seconds (a claim about loops, which no one-second
    timestamp blurs, takes a tighter tolerance than the default)."""
    name: str
    start: str
    end: str
    scans: float = TOLERANCE_SCANS
    slack: float = TOLERANCE_SLACK

    def tolerance(self, scan: float) -> float:
        return self.scans * scan + self.slack


@dataclass
class Record:
    probe: str
    autoscaler: str
    writes: list[ObservedWrite] = field(default_factory=list)
    nodes: list[NodeEvent] = field(default_factory=list)
    error: str = ""
    groups: list[GroupEvent] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    owners: dict[str, dict[str, list[str]]] = field(default_factory=dict)   # request -> condition -> managers
    scan: float = 0.0         # the autoscaler's scan interval in seconds

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Record":
        return cls(d["probe"], d["autoscaler"],
                   [ObservedWrite(w["ms"], w["request"], tuple(Change(**c) for c in w["changes"]),
                                  tuple(Change(**c) for c in w.get("rewritten", ()))) for w in d["writes"]],
                   [NodeEvent(**n) for n in d["nodes"]], d.get("error", ""),
                   [GroupEvent(**g) for g in d.get("groups", ())], [Mark(**m) for m in d.get("marks", ())],
                   {r: {t: list(m) for t, m in c.items()} for r, c in d.get("owners", {}).items()},
                   d.get("scan", 0.0))


def _table(conds: list[dict] | None) -> dict[str, tuple[str, str, str, str]]:
    return {c.get("type"): (c.get("status", ""), c.get("reason", ""), c.get("message", ""),
                            c.get("lastTransitionTime", "")) for c in conds or [] if isinstance(c, dict)}


def _display_order(changes: list[Change]) -> tuple[Change, ...]:
    order = {t: i for i, t in enumerate(PROVREQ_CONDITIONS)}
    return tuple(sorted(changes, key=lambda c: (order.get(c.type, len(order)), c.type)))


def condition_changes(before: list[dict], after: list[dict]) -> tuple[Change, ...]:
    """Conditions whose (status, reason, message) differ between two status.conditions lists, in display
    order.  A rewrite of the same values with a new lastTransitionTime is not a change."""
    old, new = _table(before), _table(after)
    return _display_order([Change(t, *new[t][:3]) for t in new if t not in old or old[t][:3] != new[t][:3]])


def condition_rewrites(before: list[dict], after: list[dict]) -> tuple[Change, ...]:
    """Conditions written again with the same (status, reason, message) and a new lastTransitionTime."""
    old, new = _table(before), _table(after)
    return _display_order([Change(t, *new[t][:3]) for t in new
                           if t in old and old[t][:3] == new[t][:3] and old[t][3] != new[t][3]])


def group_states(status: dict | None) -> dict[str, str]:
    """Node group -> its scale-up state, from the status document of an autoscaler's status ConfigMap (the
    real one's clusterstate/api ClusterAutoscalerStatus, or the fake's subset): "Backoff (timeout)" names a
    backoff's error code."""
    out = {}
    groups = status.get("nodeGroups") if isinstance(status, dict) else None
    for g in groups if isinstance(groups, list) else []:
        if not isinstance(g, dict) or not g.get("name"):
            continue
        up = g.get("scaleUp") if isinstance(g.get("scaleUp"), dict) else {}
        state = str(up.get("status") or "?")
        code = (up.get("backoffInfo") or {}).get("errorCode") if isinstance(up.get("backoffInfo"), dict) else None
        out[str(g["name"])] = f"{state} ({code})" if code else state
    return out


# ---------------------------------------------------------------------------- aspects

def sequence(rec: Record) -> str:
    """Per request, its writes in order, and "gone" once it was deleted (by the probe or the autoscaler)."""
    per: dict[str, list[str]] = {}
    for ms, req, text in sorted([(w.ms, w.request, " + ".join(c.short() for c in w.changes))
                                 for w in rec.writes if w.changes]
                                + [(m.ms, m.what.removeprefix("gone "), "gone") for m in rec.marks
                                   if m.what.startswith("gone ")]):
        per.setdefault(req, []).append(text)
    if not per:
        return "(no condition written)"
    return " | ".join(sorted(ARROW.join(s) for s in per.values()))


def write_order(rec: Record) -> str:
    """The writes of all requests in time order, each request by the order it was first written in."""
    names: dict[str, int] = {}
    steps = []
    for w in sorted(rec.writes, key=lambda w: w.ms):
        if not w.changes:
            continue
        n = names.setdefault(w.request, len(names) + 1)
        steps.append(f"{n} " + " + ".join(c.type for c in w.changes))
    if len(names) < 2:
        return "(one request)" if names else "(no condition written)"
    return ARROW.join(steps)


def messages(rec: Record) -> str:
    seen = sorted({f"{c.type}/{c.reason}: {c.message}" for w in rec.writes for c in w.changes})
    return " | ".join(seen) if seen else "(none)"


def writers(rec: Record) -> str:
    per = sorted("; ".join(f"{t} by {', '.join(m)}" for t, m in sorted(conds.items()) if m)
                 for conds in rec.owners.values())
    per = [p for p in per if p]
    return " | ".join(per) if per else "(none)"


def nodes(rec: Record) -> str:
    count: dict[str, dict[str, int]] = {}
    for n in rec.nodes:
        if n.what in ("created", "deleted"):
            c = count.setdefault(n.pool or "?", {"created": 0, "deleted": 0})
            c[n.what] += 1
    if not count:
        return "(none)"
    return "; ".join(f"{p}: {c['created']} created, {c['deleted']} deleted" for p, c in sorted(count.items()))


TRANSIENT_STATE = "InProgress"


def groups(rec: Record) -> str:
    """Per node group, the scale-up states it went through, in the order each first appeared, and the one it
    ended in when that is not the last of them ("NoActivity → Backoff (timeout), ends NoActivity").  Left out:
    InProgress, which both publish only while a scale-up's nodes are not yet Ready when the status is written
    (the real one: at the start of its next loop) — a race with KWOK's node stage in both, not a behaviour; and
    how often a group comes back to a state it has already shown."""
    seen: dict[str, list[str]] = {}
    last: dict[str, str] = {}
    for g in sorted(rec.groups, key=lambda g: g.ms):
        if g.state == TRANSIENT_STATE:
            continue
        states = seen.setdefault(g.group, [])
        if g.state not in states:
            states.append(g.state)
        last[g.group] = g.state
    if not seen:
        return "(no status ConfigMap)"
    return "; ".join(f"{name}: {ARROW.join(states)}" + (f", ends {last[name]}" if last[name] != states[-1] else "")
                     for name, states in sorted(seen.items()))


def events(rec: Record) -> list[tuple[int, str]]:
    """Every event of a record as (ms, key), in time order, for `select`: "<request> <Type>=<Status>/<Reason>"
    for each condition a write set (changed or written again), "node <what>" (created, ready, deleted),
    "group <name> <state>", "mark <what>"."""
    out = [(w.ms, f"{w.request} {c.short()}") for w in rec.writes for c in w.changes + w.rewritten]
    out += [(n.ms, f"node {n.what}") for n in rec.nodes]
    out += [(g.ms, f"group {g.group} {g.state}") for g in rec.groups]
    out += [(m.ms, f"mark {m.what}") for m in rec.marks]
    return sorted(out, key=lambda e: e[0])


def select(rec: Record, selector: str) -> int | None:
    """The ms of the event a selector names: a shell pattern over `events` keys ("* Provisioned=False/*"),
    optionally "#n" for the n-th match (1-based, in time order; default the first).  None when there is none."""
    pattern, _, nth = selector.partition("#")
    n = int(nth) if nth else 1
    hits = [ms for ms, key in events(rec) if fnmatch.fnmatchcase(key, pattern.strip())]
    return hits[n - 1] if 0 < n <= len(hits) else None


def measure(rec: Record, gap: Gap) -> float | None:
    """The gap in seconds, None when either end did not happen."""
    start, end = select(rec, gap.start), select(rec, gap.end)
    return None if start is None or end is None else (end - start) / 1000


def _seconds(v: float | None) -> str:
    return "never" if v is None else f"{v:.1f}s"


def timing_value(rec: Record, gaps: tuple[Gap, ...]) -> str:
    if not gaps:
        return "(no claim about time)"
    return "; ".join(f"{g.name} {_seconds(measure(rec, g))}" for g in gaps)


def timing_same(fake: Record, real: Record, gaps: tuple[Gap, ...]) -> bool:
    """Every gap happened in both or in neither, and where both, within its tolerance at the larger scan interval."""
    scan = max(fake.scan, real.scan)
    for g in gaps:
        f, r = measure(fake, g), measure(real, g)
        if (f is None) != (r is None) or (f is not None and r is not None and abs(f - r) > g.tolerance(scan)):
            return False
    return True


def aspect(rec: Record, name: str, gaps: tuple[Gap, ...] = ()) -> str:
    if name == "timing":
        return timing_value(rec, gaps)
    return {"sequence": sequence, "order": write_order, "messages": messages, "writers": writers, "nodes": nodes,
            "groups": groups}[name](rec)


# ---------------------------------------------------------------------------- deviations

@dataclass(frozen=True)
class Deviation:
    id: str                   # the row in docs/autoscaler.md, e.g. "D9" or "R3"
    probe: str
    aspect: str
    fake: str                 # the exact value, or ANY
    real: str

    def matches(self, probe: str, aspect: str, fake: str, real: str) -> bool:
        return ((self.probe, self.aspect) == (probe, aspect) and self.fake in (ANY, fake)
                and self.real in (ANY, real))


@dataclass(frozen=True)
class Difference:
    probe: str
    aspect: str
    fake: str
    real: str
    documented: str = ""      # the deviation id, or "" when undocumented
    row: str = ""      # the row in docs/autoscaler.md's text when documented


def deviation_rows(table_text: str) -> dict[str, str]:
    """id -> row text of every table row whose first cell is a deviation id: D1, D12 (the deliberate
    differences) or R1, R12 (the differences the probes see)."""
    rows = {}
    for line in table_text.splitlines():
        m = re.match(r"^\|\s*([DR]\d+)\s*\|", line)
        if m:
            rows[m.group(1)] = line.strip()
    return rows


def compare(fake: list[Record], real: list[Record], deviations: list[Deviation], table_text: str,
            timings: dict[str, tuple[Gap, ...]] | None = None) -> list[Difference]:
    """Every aspect of every probe both ran; `timings`: each probe's claims about time."""
    rows = deviation_rows(table_text)
    by_probe = {r.probe: r for r in real}
    out = []
    for f in fake:
        r = by_probe.get(f.probe)
        if r is None:
            continue
        gaps = (timings or {}).get(f.probe, ())
        for a in ASPECTS:
            fv, rv = aspect(f, a, gaps), aspect(r, a, gaps)
            if (timing_same(f, r, gaps) if a == "timing" else fv == rv):
                continue
            dev = next((d for d in deviations if d.matches(f.probe, a, fv, rv)), None)
            if dev is not None and dev.id in rows:
                out.append(Difference(f.probe, a, fv, rv, dev.id, rows[dev.id]))
            else:
                out.append(Difference(f.probe, a, fv, rv))
    return out


def undocumented(diffs: list[Difference]) -> list[Difference]:
    return [d for d in diffs if not d.documented]


def unobserved(deviations: list[Deviation], diffs: list[Difference], probes: list[str]) -> list[Deviation]:
    """Documented deviations of probes that ran but did not show: the row in docs/autoscaler.md may be stale."""
    seen = {(d.documented, d.probe, d.aspect) for d in diffs}
    return [d for d in deviations if d.probe in probes and (d.id, d.probe, d.aspect) not in seen]


# ---------------------------------------------------------------------------- rendering

def timeline(rec: Record, wrap: bool = False) -> list[str]:
    """One line per write, node event, node-group change and probe action, in time order:
    "+1234 ms a: Accepted=True/Accepted"; with wrap, a write that set several conditions continues on
    indented lines ("+ Provisioned=...")."""
    items: list[tuple[int, list[str]]] = []
    for w in rec.writes:
        parts = [c.short() for c in w.changes] + [f"{c.short()} again" for c in w.rewritten]
        items.append((w.ms, [f"{w.request}: {parts[0]}"] + [f"   + {p}" for p in parts[1:]] if wrap
                      else [f"{w.request}: " + " + ".join(parts)]))
    for n in rec.nodes:
        items.append((n.ms, [f"node {n.what} {n.node}"]))
    for g in rec.groups:
        items.append((g.ms, [f"group {g.group}: {g.state}"]))
    for m in rec.marks:
        items.append((m.ms, [f"probe: {m.what}"]))
    lines = []
    for ms, texts in sorted(items, key=lambda x: x[0]):
        lines.append(f"+{ms:>6} ms {texts[0]}")
        lines += [" " * 11 + t for t in texts[1:]]
    if rec.error:
        lines.append(f"ERROR: {rec.error}")
    return lines or ["(nothing: no condition, no node)"]


# the tables of docs/autoscaler.md, from docs/fidelity.md: D rows (deliberate), R rows (seen by the probes)
ROWS_LINKS = {"D": "autoscaler.md#what-it-does-like-the-real-one-and-where-it-differs",
              "R": "autoscaler.md#the-real-cluster-autoscaler-side-by-side"}


def probe_verdict(diffs: list[Difference], probe: str, a: str, link: bool = False) -> str:
    d = next((x for x in diffs if x.probe == probe and x.aspect == a), None)
    if d is None:
        return "same"
    if not d.documented:
        return "differs: UNDOCUMENTED"
    return f"differs: documented ({_linked(d.documented) if link else d.documented})"


# an aspect whose value, the same in both, says nothing was there to compare: what the cell says instead of "same"
VACUOUS = {"order": {"(one request)": "one request", "(no condition written)": "nothing written"},
           "messages": {"(none)": "nothing written"},
           "writers": {"(none)": "no field manager recorded"},
           "groups": {"(no status ConfigMap)": "no status ConfigMap"}}


def cell(diffs: list[Difference], fake: Record, real: Record, probe: str, a: str, gaps: tuple[Gap, ...] | None = (),
         link: bool = False, untimed: str | None = "") -> str:
    """The verdict of one aspect as a table shows it: "same" only where something was compared; "— (why)" where
    both have nothing to compare (one request has no order across requests) and for the timing of a probe with
    no claim about time (`untimed`: why it makes none)."""
    verdict = probe_verdict(diffs, probe, a, link)
    if verdict != "same":
        return verdict
    if a == "timing":
        return verdict if gaps else f"— (no claim: {untimed})" if untimed else "— (no claim)"
    value = aspect(fake, a)
    why = VACUOUS.get(a, {}).get(value)
    return f"— ({why})" if why is not None and aspect(real, a) == value else verdict


def split(probes: list[tuple[str, str]], knobs: dict[str, tuple[str, str]]) -> tuple[list, list]:
    """The likeness probes (the same behaviour put to both) and the fault-injection ones (a knob only the fake
    reads), each in the given order."""
    return [p for p in probes if p[0] not in knobs], [p for p in probes if p[0] in knobs]


def tally(diffs: list[Difference], probes: list[tuple[str, str]]) -> str:
    names = {p for p, _ in probes}
    mine = [d for d in diffs if d.probe in names]
    bad = undocumented(mine)
    return f"{len(mine)} difference(s), {len(mine) - len(bad)} documented, {len(bad)} undocumented"


def _linked(row: str) -> str:
    return f"[{row}]({ROWS_LINKS[row[0]]})"


def timing_lines(fake: Record, real: Record, gaps: tuple[Gap, ...]) -> list[str]:
    """Each claim about time, measured in both: "retry 1: fake 5.2s, real 5.9s (± 3.0s)"."""
    scan = max(fake.scan, real.scan)
    return [f"{g.name}: fake {_seconds(measure(fake, g))}, real {_seconds(measure(real, g))} "
            f"(± {g.tolerance(scan):.1f}s)" for g in gaps]


def side_by_side(left: list[str], right: list[str], width: int = 58) -> list[str]:
    return [f"  {a[:width]:{width}} | {b}" for a, b in zip_longest(left, right, fillvalue="")]


def report_text(probes: list[tuple[str, str]], fake: list[Record], real: list[Record], real_label: str,
                diffs: list[Difference], timings: dict[str, tuple[Gap, ...]] | None = None,
                knobs: dict[str, tuple[str, str]] | None = None, untimed: dict[str, str] | None = None) -> str:
    """The terminal table: per probe, both timelines side by side, the claims about time, then a verdict
    per aspect (a fault-injection probe says which knob only the fake reads)."""
    f_by, r_by = {r.probe: r for r in fake}, {r.probe: r for r in real}
    knobs, untimed = knobs or {}, untimed or {}
    out = []
    for probe, what in probes:
        out.append(f"\n{probe}: {what}")
        if probe in knobs:
            out.append(f"  fault injection: {knobs[probe][0]}, a knob only the fake reads ({knobs[probe][1]})")
        out += side_by_side(["fake"] + timeline(f_by[probe], wrap=True) if probe in f_by else ["fake: not run"],
                            [real_label] + timeline(r_by[probe], wrap=True) if probe in r_by
                            else [f"{real_label}: not run"])
        if probe in f_by and probe in r_by:
            out += ["  " + line for line in timing_lines(f_by[probe], r_by[probe], (timings or {}).get(probe, ()))]
            gaps = (timings or {}).get(probe)
            why = untimed.get(probe)
            out.append("  " + "; ".join(f"{a}: {cell(diffs, f_by[probe], r_by[probe], probe, a, gaps, untimed=why)}"
                                        for a in ASPECTS))
    return "\n".join(out)


def row_text(row: str) -> str:
    """A table row of docs/autoscaler.md as prose: its cells after the id, joined by " · "."""
    cells = [c.strip() for c in row.strip().strip("|").split("|")]
    return " · ".join(c for c in cells[1:] if c)


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def report_markdown(command: str, when: str, settings: list[str], probes: list[tuple[str, str]],
                    fake: list[Record], real: list[Record], real_label: str, diffs: list[Difference],
                    stale: list[Deviation], timings: dict[str, tuple[Gap, ...]] | None = None,
                    not_run: dict[str, str] | None = None, knobs: dict[str, tuple[str, str]] | None = None,
                    untimed: dict[str, str] | None = None) -> str:
    """docs/fidelity.md: what ran, the verdicts of the likeness probes, the fault-injection probes apart
    (`knobs`: probe -> the parameter only the fake reads and what it does), every timeline, every difference
    and its row in docs/autoscaler.md; `not_run`: probe -> why it did not run (a long probe without --long);
    `untimed`: a likeness probe with no claim about time -> why."""
    f_by, r_by = {r.probe: r for r in fake}, {r.probe: r for r in real}
    timings, not_run, knobs, untimed = timings or {}, not_run or {}, knobs or {}, untimed or {}
    likeness, injected = split(probes, knobs)
    ran_likeness = [p for p, _ in likeness if p in f_by and p in r_by]
    timed = [p for p in ran_likeness if timings.get(p)]
    lines = [
        "# Fidelity: the fake autoscaler against the real Cluster Autoscaler 1.36.1",
        "",
        f"Generated by `{command}` on {when}, from that run (nothing here is edited by hand).",
        "",
        *[f"- {s}" for s in settings],
        "",
        "Every probe puts the same ProvisioningRequests (made by hand in their own namespace, no Kueue) to each "
        "autoscaler in turn, on the same cluster, and records from client-side watches, in milliseconds since the "
        "probe's first action: every condition write (type, status, reason, message; a condition written again "
        "unchanged, as a retry does, too), the field managers of each condition, every pool-node event, every "
        "change of the node groups' scale-up state in the autoscaler's status ConfigMap, and the probe's own "
        "actions. Compared: the sequence of condition writes per request and their order across requests, the "
        "messages, the writers, the nodes created and deleted per pool, the node-group states, and each claim "
        f"about time within {TOLERANCE_SCANS:g} scan interval(s) + {TOLERANCE_SLACK:g}s (a claim about loops: tighter, "
        "as it says).",
        "",
        f"Two kinds of probe. **Likeness** ({len(likeness)} probes): the same behaviour put to both, so a cell "
        "\"same\" is a claim that the fake behaves like the real one; \"—\" marks an aspect with nothing to "
        "compare (one request has no order across requests; a probe that makes no claim about time says why). "
        f"{len(timed)} of the {len(ran_likeness)} likeness probes that ran make a claim about time."
        + (f" **Fault injection** ({len(injected)} probes, [below](#fault-injection-knobs-only-the-fake-reads)): "
           "a request parameter only the fake reads; they show what each knob does, not a likeness."
           if injected else ""),
        "",
        f"**Likeness: {tally(diffs, likeness)}.**"
        + (f" Fault injection: {tally(diffs, injected)} (each the knob's own effect)." if injected else ""),
        "",
        "| probe | what | " + " | ".join(ASPECTS) + " |",
        "| --- | --- | " + " | ".join("---" for _ in ASPECTS) + " |",
    ]
    for probe, what in likeness:
        cells = [cell(diffs, f_by[probe], r_by[probe], probe, a, timings.get(probe), True, untimed.get(probe))
                 if probe in f_by and probe in r_by else not_run.get(probe, "not run") for a in ASPECTS]
        lines.append(f"| {probe} | {_md(what)} | " + " | ".join(cells) + " |")
    if injected:
        lines += ["", "## Fault injection: knobs only the fake reads", "",
                  "Each of these probes sets a request parameter that only the fake reads (the fake's way to inject "
                  "a fault or a timer a scenario needs). The real autoscaler ignores parameters it does not know, so "
                  "it answers the same request as it would without the knob: its writes below are what it did. A "
                  "difference here is the knob's effect, documented in docs/autoscaler.md; it is not counted as a "
                  "likeness.", "",
                  "| probe | knob: what the fake does | fake's writes | the real one's writes (it ignores the knob) "
                  "| differences |",
                  "| --- | --- | --- | --- | --- |"]
        for probe, what in injected:
            param, does = knobs[probe]
            if probe in f_by and probe in r_by:
                found = [d for d in diffs if d.probe == probe]
                said = "; ".join(f"{d.aspect}: " + (f"documented ({_linked(d.documented)})" if d.documented
                                                    else "UNDOCUMENTED") for d in found) or "none"
                lines.append(f"| {probe} | `{param}`: {_md(does)} | `{_md(sequence(f_by[probe]))}` "
                             f"| `{_md(sequence(r_by[probe]))}` | {said} |")
            else:
                lines.append(f"| {probe} | `{param}`: {_md(does)} | {not_run.get(probe, 'not run')} | | |")
    for probe, what in probes:
        lines += ["", f"## {probe}: {what}", ""]
        if probe in not_run and probe not in f_by and probe not in r_by:
            lines.append(f"Not run: {not_run[probe]}.")
            continue
        lines += [f"| fake | {real_label} |", "| --- | --- |"]
        left = timeline(f_by[probe]) if probe in f_by else ["not run"]
        right = timeline(r_by[probe]) if probe in r_by else ["not run"]
        for a, b in zip_longest(left, right, fillvalue=""):
            lines.append(f"| {_md(a)} | {_md(b)} |")
        if probe in f_by and probe in r_by and timings.get(probe):
            lines += [""] + [f"- timing: {_md(t)}" for t in timing_lines(f_by[probe], r_by[probe], timings[probe])]
        for d in (x for x in diffs if x.probe == probe):
            lines += ["", f"- **{d.aspect}** differs — "
                      + (f"documented deviation {_linked(d.documented)}: {_md(row_text(d.row))}"
                         if d.documented else "**UNDOCUMENTED**"),
                      f"  - fake: `{d.fake}`", f"  - real: `{d.real}`"]
    if stale:
        lines += ["", "## Documented deviations not observed in this run", ""]
        lines += [f"- {d.id} ({d.probe}, {d.aspect}): the row in docs/autoscaler.md may be stale" for d in stale]
    return "\n".join(lines) + "\n"
