"""The results of Kueue's provisioning specs, as a table (pure): what each spec showed under the fake and under
the real Cluster Autoscaler, from the SpecResults a run of the group recorded, and docs/kueue-specs.md.

A spec holds under an autoscaler when every check of its scenario passed; one that does not is a finding
against Kueue v0.19.2 (or against this harness), shown with the checks that failed, never hidden.  A spec the
real autoscaler cannot drive says why (its scenario's needs_fake); one that was not run says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..kit.scenario import Spec
from ..kit.runner import AUTOSCALERS

UPSTREAM = "https://github.com/kubernetes-sigs/kueue/blob/v0.19.2/"
SOURCE = "test/integration/singlecluster/controller/admissionchecks/provisioning/provisioning_test.go"


@dataclass
class SpecResult:
    """What one spec showed under one autoscaler."""
    number: int
    autoscaler: str                   # fake | real
    holds: bool                       # every check of the spec passed
    checks: list[tuple[bool, str]]
    drivers: list[str]                # the driving conditions seen, each with who wrote it
    unreached: list[str]              # parts of the spec not checked here, each with why
    error: str = ""                   # the scenario stopped: why


@dataclass(frozen=True)
class Entry:
    """A spec's scenario as the catalogue declares it."""
    scenario: str
    spec: Spec
    needs_fake: str = ""              # why the real CA cannot drive it ("" if it can)


def _md(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def spec_cell(result: SpecResult | None, cannot: str = "") -> str:
    """One autoscaler's cell: holds, FINDING (what failed), cannot (why: `cannot`, the reason it cannot drive the
    spec, when it did not run it), or not run."""
    if result is None:
        return f"cannot: {cannot}" if cannot else "not run"
    if result.holds:
        return f"holds ({len(result.checks)} checks)"
    failed = [what for ok, what in result.checks if not ok]
    seen = "; ".join(failed + ([result.error] if result.error else []))
    return f"**FINDING**: {seen or 'no check ran'}"


def driver(entry: Entry, results: dict[str, SpecResult]) -> str:
    """The driving condition and who wrote it: as declared for each autoscaler, and as seen on the requests."""
    parts = []
    for a, declared in [("fake", entry.spec.fake)] + ([("real", entry.spec.real)] if entry.spec.real else []):
        r = results.get(a)
        seen = f" (seen: {'; '.join(r.drivers)})" if r is not None and r.drivers else ""
        parts.append(f"{a}: {declared}{seen}")
    return "<br>".join(_md(p) for p in parts)


def result_cell(entry: Entry, results: dict[str, SpecResult]) -> str:
    """The spec's verdict over both autoscalers, and what was not reached."""
    ran = {a: r for a, r in results.items() if r is not None}
    if not ran:
        verdict = "not run"
    elif any(not r.holds for r in ran.values()):
        verdict = "**FINDING** under " + " and ".join(a for a in AUTOSCALERS if a in ran and not ran[a].holds)
    elif len(ran) == len(AUTOSCALERS):
        verdict = "holds under both"
    elif "real" not in ran and entry.needs_fake:
        verdict = "holds (fake); the real CA cannot drive it"
    else:
        verdict = f"holds ({next(iter(ran))} only run)"
    notes = sorted({u for r in ran.values() for u in r.unreached} | ({entry.spec.unreachable} - {""}))
    return verdict + ("; partial: " + "; ".join(notes) if notes else "")


def rows(entries: list[Entry], results: dict[str, dict[int, SpecResult]]) -> list[str]:
    """The table: spec | what Kueue v0.19.2 must do | the driving condition and who wrote it | fake | real CA | result."""
    out = ["| spec | what Kueue v0.19.2 must do | the driving condition and who wrote it | fake | real CA | result |",
           "| --- | --- | --- | --- | --- | --- |"]
    for e in sorted(entries, key=lambda e: e.spec.number):
        mine = {a: results.get(a, {}).get(e.spec.number) for a in AUTOSCALERS}
        link = f"{UPSTREAM}{SOURCE}#L{e.spec.line}"
        out.append(f"| {e.spec.number}. [{_md(e.spec.title)}]({link}) (`{e.scenario}`) | {_md(e.spec.must)} | "
                   f"{driver(e, mine)} | {_md(spec_cell(mine['fake']))} | "
                   f"{_md(spec_cell(mine['real'], e.needs_fake))} | {_md(result_cell(e, mine))} |")
    return out


def counts(entries: list[Entry], results: dict[str, dict[int, SpecResult]]) -> dict[str, int]:
    """How many specs hold under each autoscaler, are findings, and cannot be driven by the real one."""
    out = {"specs": len(entries)}
    for a in AUTOSCALERS:
        got = [results.get(a, {}).get(e.spec.number) for e in entries]
        out[f"{a} holds"] = sum(1 for r in got if r is not None and r.holds)
        out[f"{a} findings"] = sum(1 for r in got if r is not None and not r.holds)
    out["real cannot"] = sum(1 for e in entries if e.needs_fake and results.get("real", {}).get(e.spec.number) is None)
    return out


def markdown(command: str, when: str, settings: list[str], entries: list[Entry],
             results: dict[str, dict[int, SpecResult]]) -> str:
    """docs/kueue-specs.md from one run of the group."""
    c = counts(entries, results)
    lines = ["# Kueue v0.19.2's own provisioning specs, end to end", "",
             f"Generated by `{command}` on {when}, from that run (nothing here is edited by hand).", ""]
    lines += [f"- {s}" for s in settings]
    lines += ["", f"Kueue's integration suite for the ProvisioningRequest admission check ([`{SOURCE}`]({UPSTREAM}"
              f"{SOURCE}), {c['specs']} specs) runs in envtest and writes every ProvisioningRequest condition, the quota "
              "reservation and the evictions by hand. Here each spec is a scenario of the group `kueue-specs` "
              "(`scenarios/kueue_specs/`) on a real control plane with real Kueue v0.19.2: the scenario makes Jobs, "
              "Workloads and queue objects, Kueue's scheduler and controllers do the rest, and the autoscaler writes "
              "every condition; each scenario checks, from the requests' managedFields, that no condition was "
              "written by anyone else.", "",
              f"**Result: the fake autoscaler drove {c['fake holds']} of {c['specs']} specs to hold "
              f"({c['fake findings']} finding(s)); the real Cluster Autoscaler 1.36.1 drove {c['real holds']} "
              f"({c['real findings']} finding(s)), and cannot drive {c['real cannot']} on a demo timescale.**", ""]
    lines += rows(entries, results)
    return "\n".join(lines) + "\n"

