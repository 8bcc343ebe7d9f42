"""`tau-demo conformance`, the run and its report: the chosen probes put to each autoscaler in turn (`probes`), their
records compared with the documented deviations (`fidelity`, `deviations`), the raw records kept under runs/, and,
with both autoscalers, the report written (docs/fidelity.md).  `conformance()` reads as its steps; cli/conformance.py
keeps only the arguments and the printing."""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from demo.toolchain import versions
from k8s.keys import GPU
from k8s.paths import DEVIATIONS_DOC, POOLS_FILE, REPO
from k8s.pools import Pool, load_pools

from ..kit.controllers import stop_started
from ..kit.harness import Context
from ..kit.runner import BOTH, autoscalers_of
from . import fidelity
from . import probes as cf
from .deviations import DEVIATIONS

@dataclass(frozen=True)
class Asked:
    """What the user asked for: which autoscalers (fake, real or both), their scan interval, the probes by name
    (none: every short one), the long ones too, and where the report goes."""
    autoscaler: str = BOTH
    scan: float = cf.RunSettings().scan
    only: tuple[str, ...] = ()
    with_long: bool = False
    output: str = ""


@dataclass
class Findings:
    """What a run found: the side-by-side text, the lines said after it (the tally, every undocumented difference,
    every documented deviation not observed), the probes that could not run and the undocumented differences."""
    text: str
    summary: list[str] = field(default_factory=list)
    errors: list[fidelity.Record] = field(default_factory=list)
    undocumented: list = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.undocumented or self.errors)


def chosen_probes(asked: Asked) -> list[cf.Probe]:
    """The probes named (--probe), else every short one, with the long ones too when asked."""
    if asked.only:
        return [p for p in cf.PROBES if p.name in asked.only]
    return [p for p in cf.PROBES if not p.long or asked.with_long]


def load_probe_pools() -> list[Pool]:
    """The probes' node pools, from manifests/node-pools.yaml (PoolsError when it cannot be read)."""
    return cf.probe_pools(load_pools(POOLS_FILE))


def conformance(ctx: Context, asked: Asked, pools: list[Pool], say) -> Findings:
    """Probe each autoscaler asked for, one after the other (each started for its run, stopped after it), compare
    and report; `say(line)` hears the progress.  ScenarioFailed when an autoscaler cannot run."""
    chosen = chosen_probes(asked)
    settings = dataclasses.replace(cf.RunSettings(), scan=asked.scan)
    runs = REPO / "runs" / time.strftime("%Y%m%d-%H%M%S")
    pools_file = cf.write_pools(pools, runs)
    started = time.time()
    results = probe_each(ctx, [cf.Under(kind, settings, pools_file) for kind in autoscalers_of(asked.autoscaler)],
                         chosen, pools, say)
    took = time.time() - started
    fake, real = results.get("fake", []), results.get("real", [])
    diffs = fidelity.compare(fake, real, DEVIATIONS, DEVIATIONS_DOC.read_text(), cf.TIMINGS) if fake and real else []
    not_run = not_run_why(chosen)
    outcome = Findings(fidelity.report_text([(p.name, p.what) for p in cf.PROBES if p.name not in not_run], fake, real,
                                           cf.Under("real", settings).label, diffs, cf.TIMINGS, cf.KNOBS, cf.UNTIMED),
                      errors=[r for rs in results.values() for r in rs if r.error], undocumented=fidelity.undocumented(diffs))
    records = keep_records(results, runs)
    if fake and real:
        stale = fidelity.unobserved(DEVIATIONS, diffs, [p.name for p in chosen])
        out = write_report(asked, settings, pools, not_run, fake, real, diffs, stale, records, took)
        outcome.summary = summary_lines(diffs, stale, out, took)
    return outcome


def probe_each(ctx: Context, unders: list[cf.Under], chosen: list[cf.Probe], pools: list[Pool],
               say) -> dict[str, list[fidelity.Record]]:
    """Each autoscaler's records, by kind; the controllers the run started are stopped, whatever happens."""
    results: dict[str, list[fidelity.Record]] = {}
    try:
        for u in unders:
            results[u.kind] = cf.run_under(ctx, u, chosen, pools, say)
    finally:
        stop_started(ctx)
    return results


def not_run_why(chosen: list[cf.Probe]) -> dict[str, str]:
    """Why each probe left out was not run."""
    return {p.name: ("long: run with --long" if p.long else "not chosen (--probe)") for p in cf.PROBES
            if p not in chosen}


def keep_records(results: dict[str, list[fidelity.Record]], runs: Path) -> str:
    """The raw records as JSON, kept in the run's directory (and returned, for the report's copy)."""
    records = json.dumps({k: [r.to_dict() for r in v] for k, v in results.items()}, indent=1)
    (runs / "conformance.json").write_text(records)
    return records


def command_of(asked: Asked) -> str:
    """The command that makes this report again."""
    return "tau-demo conformance --autoscaler both" + (
        f" --scan-interval {asked.scan:g}s" if asked.scan != cf.RunSettings().scan else "") + (
        " --long" if asked.with_long else "") + "".join(f" --probe {p}" for p in asked.only)


def settings_lines(settings: cf.RunSettings, pools: list[Pool], raw: Path, took: float) -> list[str]:
    """The report's settings: both autoscalers', each one's command, the pools, the run's time and its records."""
    s = settings
    fake_cmd = " ".join(["tau-demo", *cf.Under("fake", settings, "<pools>").args()])
    real_cmd = " ".join(["tau-demo", *cf.Under("real", settings, "<pools>").args()])
    return [
        f"both: scan interval {s.scan:g}s, request backoff {s.initial_backoff:g}s doubling to {s.max_backoff:g}s, "
        f"max node provision time {s.max_node_provision_time:g}s, node-group backoff {s.node_group_backoff:g}s "
        f"(max {s.max_node_group_backoff:g}s), scale-down after {s.unneeded:g}s unneeded, booking "
        f"{s.booking:g}s (the real one's hardcoded 10 minutes)",
        f"fake: `{fake_cmd}`",
        f"real: cluster-autoscaler {versions.CLUSTER_AUTOSCALER} (kwok provider) via `{real_cmd}` "
        "(other flags in demo/realca/process.py)",
        "pools (`<pools>`, written by the run): " + "; ".join(
            f"{p.name} {p.min_nodes}..{p.max_nodes} nodes of {p.allocatable.get(GPU, '0')} GPUs"
            + (", never Ready" if p.boot_seconds == cf.FOREVER else "") for p in pools)
        + " (manifests/node-pools.yaml without boot times, and a copy of the first whose nodes never boot)",
        f"run took {took:.0f}s; raw records: [{raw.name}]({raw.name})"]


def write_report(asked: Asked, settings: cf.RunSettings, pools: list[Pool], not_run: dict[str, str], fake, real,
                 diffs, stale, records: str, took: float) -> Path:
    """The report (--output, docs/fidelity.md by default) and its raw records beside it."""
    out = Path(asked.output) if Path(asked.output).is_absolute() else REPO / asked.output
    raw = out.with_suffix(".json")             # the raw records, committed beside the report they back
    raw.write_text(records)
    out.write_text(fidelity.report_markdown(
        command_of(asked), time.strftime("%Y-%m-%d %H:%M %Z"), settings_lines(settings, pools, raw, took),
        [(p.name, p.what) for p in cf.PROBES], fake, real, cf.Under("real", settings).label, diffs, stale, cf.TIMINGS,
        not_run, cf.KNOBS, cf.UNTIMED))
    return out


def summary_lines(diffs, stale, out: Path, took: float) -> list[str]:
    """What is said after the report: the tally of each kind of probe, every undocumented difference, every
    documented deviation that was not observed."""
    likeness, injected = fidelity.split([(p.name, p.what) for p in cf.PROBES], cf.KNOBS)
    lines = [f"\nlikeness probes: {fidelity.tally(diffs, likeness)}; fault-injection probes (knobs only the "
             f"fake reads): {fidelity.tally(diffs, injected)}; report {out} (run took {took:.0f}s)"]
    lines += [f"  UNDOCUMENTED {d.probe} {d.aspect}:\n    fake: {d.fake}\n    real: {d.real}"
              for d in fidelity.undocumented(diffs)]
    lines += [f"  documented deviation {d.id} ({d.probe} {d.aspect}) was not observed" for d in stale]
    return lines
