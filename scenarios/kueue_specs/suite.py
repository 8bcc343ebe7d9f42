"""`tau-demo kueue-specs`, the suite and its results table: the group kueue-specs run under each autoscaler asked
for (the fake, then the real Cluster Autoscaler, never both at once: `run_each`), each run its scenarios in the
catalogue's order, then the pools drained (`run`); the table (`table`, pure) and, with both autoscalers and every
spec, docs/kueue-specs.md written.  `kueue_specs()` reads as its steps; cli/kueue_specs.py keeps only the arguments
and the printing; the cluster tests run `run` too."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from demo.toolchain import versions
from k8s import heartbeat
from k8s.keys import FAKE_CA_LEASE, REAL_CA_LEASE
from k8s.paths import REPO

from ..kit import catalogue, runner
from ..kit.controllers import stop_started
from ..kit.harness import Context, ScenarioFailed
from . import GROUPS, table
from .table import Entry, SpecResult

GROUP = GROUPS[0].name
# The real CA at a demo timescale, by its own flags: a loop a second, CapacityIsNotFound retried after 5s
# (upstream 1m, doubling to 10m), a node found unremovable (a booked one) looked at again after 20s (upstream
# 5m); the rest as `tau-demo real-ca` sets it (demo/realca/process.py).
REAL_CA_ARGS = ("--scan-interval", "1s", "--", "--provisioning-request-initial-backoff-time=5s",
                "--provisioning-request-max-backoff-time=20s", "--unremovable-node-recheck-timeout=20s")
DRAIN_TIMEOUT = 180.0      # the real CA: 20s unneeded, and no scale-down within 20s of a scale-up


def entries() -> list[Entry]:
    return [Entry(s.name, s.spec, s.needs_fake) for s in catalogue.scenarios() if s.group == GROUP and s.spec]


def names(only: tuple[int, ...] | list[int] = ()) -> list[str]:
    """The group's scenarios (of the specs numbered `only`, if given), in the catalogue's order."""
    return [e.scenario for e in entries() if not only or e.spec.number in only]


def settings(autoscaler: str) -> str:
    if autoscaler == "real":
        return (f"real: cluster-autoscaler {versions.CLUSTER_AUTOSCALER} (kwok provider) via `tau-demo real-ca "
                f"{' '.join(REAL_CA_ARGS)}` (other flags in demo/realca/process.py)")
    return ("fake: `tau-demo fake-ca --no-pace` (the scenarios' fake: its defaults, unpaced; each spec's faults are "
            "request parameters, shown in its row)")


def configure(ctx: Context) -> None:
    """The autoscaler's settings for the specs (ctx.extra_args), before the runner starts it."""
    if ctx.autoscaler == "real":
        ctx.extra_args.setdefault("real-ca", list(REAL_CA_ARGS))


def run(ctx: Context, only: tuple[int, ...] | list[int] = ()) -> tuple[list, dict[int, SpecResult]]:
    """Run the specs on ctx, whose autoscaler runs; wait for the pools to drain.  (the runner's summary, the
    SpecResults by spec number)."""
    ctx.spec_results.clear()
    summary = runner.run_scenarios(ctx, names(only))
    try:
        ctx.wait_pool_empty(DRAIN_TIMEOUT)
    except ScenarioFailed as e:
        ctx.say(f"  the pools did not drain: {e}")
    return summary, {r.number: r for r in ctx.spec_results}


class NotRun(RuntimeError):
    """The specs could not start under an autoscaler (no cluster, an autoscaler already running, a cluster that
    is not clean) or it did not stop after them: what the user is told, nothing else was run."""


AUTOSCALER_STOP_TIMEOUT = 60.0


def run_each(kubeconfig: str | None, context: str | None, autoscalers: list[str],
             only: tuple[int, ...] | list[int] = ()) -> tuple[list[tuple], dict[str, dict[int, SpecResult]]]:
    """Run the specs under each autoscaler in turn (each started for its run, stopped after it, and waited for
    to be gone before the next; none may be running already).  (summary rows (autoscaler, name, ok, detail),
    the SpecResults by autoscaler and spec number); NotRun says why a run could not start or end."""
    results: dict[str, dict[int, SpecResult]] = {}
    summaries: list[tuple] = []
    for a in autoscalers:
        try:
            ctx = runner.make_context(kubeconfig, context, True, a)
        except runner.NoCluster as e:
            raise NotRun(str(e)) from e
        if heartbeat.alive(ctx.k, FAKE_CA_LEASE) or heartbeat.alive(ctx.k, REAL_CA_LEASE):
            raise NotRun("an autoscaler is already running; `tau-demo kueue-specs` starts its own: stop it")
        configure(ctx)
        try:
            try:
                runner.start_clean(ctx)
            except (runner.AutoscalerConflict, runner.NotClean) as e:
                raise NotRun(str(e)) from e
            summary, results[a] = run(ctx, only)
            summaries += [(a, *row) for row in summary]
        finally:
            stop_started(ctx)
        lease = REAL_CA_LEASE if a == "real" else FAKE_CA_LEASE
        try:
            ctx.wait(lambda: not heartbeat.alive(ctx.k, lease), AUTOSCALER_STOP_TIMEOUT, f"the {a} autoscaler to stop")
        except ScenarioFailed as e:
            raise NotRun(str(e)) from e
    return summaries, results


@dataclass
class SuiteRun:
    """What the suite found: the results table's rows, the summary (autoscaler, scenario, passed, detail) and the
    table written, if it was (with both autoscalers and every spec)."""
    rows: list[str]
    summaries: list[tuple]
    written: Path | None = None

    @property
    def failed(self) -> bool:
        return any(ok is False for _, _, ok, _ in self.summaries)


def kueue_specs(kubeconfig: str | None, context: str | None, autoscaler: str, only: tuple[int, ...] | list[int],
                output: str) -> SuiteRun:
    """Run the specs (`only`, or all) under the autoscaler(s) asked for (fake, real or both), tabulate them and, with
    both and every spec, write the table to `output`.  NotRun says why a run could not start or end."""
    started = time.time()
    summaries, results = run_each(kubeconfig, context, runner.autoscalers_of(autoscaler), list(only))
    chosen = [e for e in entries() if not only or e.spec.number in only]
    outcome = SuiteRun(table.rows(chosen, results), summaries)
    if autoscaler == runner.BOTH and not only:
        outcome.written = write_table(output, chosen, results, time.time() - started)
    return outcome


def write_table(output: str, chosen: list[Entry], results: dict[str, dict[int, SpecResult]], took: float) -> Path:
    """docs/kueue-specs.md (or `output`) from this run: the command, when, both autoscalers' settings, the table."""
    settings_lines = [settings("fake"), settings("real"),
                      f"run took {took:.0f}s (both autoscalers, the pools drained after each)"]
    out = Path(output) if Path(output).is_absolute() else REPO / output
    out.write_text(table.markdown("tau-demo kueue-specs --autoscaler both", time.strftime("%Y-%m-%d %H:%M %Z"),
                                  settings_lines, chosen, results))
    return out
