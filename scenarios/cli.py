"""`tau-demo scenario run` and `tau-demo race soak`."""

from __future__ import annotations

import os
import sys
import time
import traceback

import click

from demo import cluster, kube

from . import race, success, timeout
from .harness import Context, ScenarioFailed, ensure_controller, stop_started

SCENARIOS = {
    "success": success.run,
    "timeout-preflight": timeout.preflight_refusal,
    "timeout-window": timeout.autoscaler_window,
    "timeout-deadline": timeout.admission_deadline,
    "race-admission-wins": race.scenario_admission_wins,
    "race-timeout-wins": race.scenario_timeout_wins,
    "race-legacy": race.scenario_legacy,
    "race-interrupted-mirror": race.scenario_interrupted_mirror,
}
GROUPS = {"all": list(SCENARIOS), "success": ["success"],
          "timeout": [n for n in SCENARIOS if n.startswith("timeout")],
          "race": [n for n in SCENARIOS if n.startswith("race")]}


def make_context(kubeconfig: str | None, context: str | None, auto: bool) -> Context:
    kc = kubeconfig or cluster.default_kubeconfig()
    if kc is None and not os.environ.get("KUBECONFIG"):
        raise click.ClickException("no demo cluster: run ./setup.sh (or `tau-demo cluster up`) first")
    k = kube.Kube(kc, context)
    try:
        k.raw("/readyz")
    except (kube.Unreachable, kube.ApiError) as e:
        raise click.ClickException(f"the cluster does not answer ({e}); run `tau-demo cluster up`")
    return Context(k, kc or os.environ["KUBECONFIG"], auto=auto)


def start_controllers(ctx: Context) -> None:
    ctx.say("Controllers:")
    ensure_controller(ctx, "fake-ca", ["fake-ca"], "fake autoscaler")
    ensure_controller(ctx, "deadline-default", ["deadline", "--cleanup-ttl", "10s"], "deadline controller")


def run_scenarios(ctx: Context, names: list[str]) -> list[tuple[str, bool, str]]:
    summary = []
    for n in names:
        ctx.checks.clear()
        t0 = time.monotonic()
        err = ""
        try:
            SCENARIOS[n](ctx)
        except ScenarioFailed as e:
            err = str(e)
        except Exception as e:   # report and go on to the next scenario
            err = f"{type(e).__name__}: {e}"
            traceback.print_exc(file=ctx.out)
        failed = [c.what for c in ctx.checks if not c.ok]
        ok = not err and not failed and bool(ctx.checks)
        detail = err or ("; ".join(failed) if failed else f"{len(ctx.checks)} checks passed")
        summary.append((n, ok, f"{detail} ({time.monotonic() - t0:.0f}s)"))
    return summary


@click.group("scenario")
def scenario_group():
    """The reviewers' walkthrough: success, timeout and race paths on the real cluster."""


@scenario_group.command("run")
@click.argument("names", nargs=-1)
@click.option("--kubeconfig", type=click.Path(dir_okay=False))
@click.option("--context")
@click.option("--auto/--pause", default=None,
              help="never wait for input (default when AUTO=1 or stdin is not a terminal)")
def run_cmd(names, kubeconfig, context, auto):
    """Run scenarios in order (default: all).  NAMES: all, success, timeout, race, or one of
    success, timeout-preflight, timeout-window, timeout-deadline, race-admission-wins,
    race-timeout-wins, race-legacy, race-interrupted-mirror.  Exit 1 if any check fails."""
    if auto is None:
        auto = os.environ.get("AUTO") == "1" or not sys.stdin.isatty()
    chosen: list[str] = []
    for n in names or ("all",):
        if n in GROUPS:
            chosen += GROUPS[n]
        elif n in SCENARIOS:
            chosen.append(n)
        else:
            raise click.BadParameter(f"unknown scenario {n!r}; choose from {', '.join(list(GROUPS) + list(SCENARIOS))}")
    ctx = make_context(kubeconfig, context, auto)
    try:
        start_controllers(ctx)
        leftovers = ctx.leftovers()
        if leftovers:
            raise click.ClickException(f"the demo namespace is not clean: {', '.join(leftovers)}")
        summary = run_scenarios(ctx, chosen)
        ctx.say()
        ctx.say("Summary")
        for n, ok, detail in summary:
            ctx.say(f"  {'PASS' if ok else 'FAIL'}  {n:26} {detail}")
        leftovers = ctx.leftovers()
        ctx.say(f"  left behind: {', '.join(leftovers) if leftovers else 'nothing'}")
    finally:
        stop_started(ctx)
    if leftovers or not all(ok for _, ok, _ in summary):
        sys.exit(1)


@click.group("race")
def race_group():
    """Admit-during-deactivate race tools."""


@race_group.command("soak")
@click.option("--runs", type=click.IntRange(1, 1000), default=30, show_default=True)
@click.option("--seed", type=int, default=None)
@click.option("--kubeconfig", type=click.Path(dir_okay=False))
@click.option("--context")
def soak_cmd(runs, seed, kubeconfig, context):
    """Repeat random interleavings of admission and deadline and check the invariants after each:
    the owner is marked exactly when the Workload carries a committed timeout; no admitted Job is
    ever marked or deleted; cleanup deletes only committed timeouts; no pods of a timed-out Job
    keep running; nothing is left behind.  Exit 1 on any violation."""
    ctx = make_context(kubeconfig, context, True)
    try:
        ensure_controller(ctx, "fake-ca", ["fake-ca"], "fake autoscaler")
        results = race.soak(ctx, runs, seed)
    finally:
        stop_started(ctx)
    table = race.soak_table(results)
    click.echo(table)
    if any(r.violations for r in results):
        sys.exit(1)


def register(main: click.Group) -> None:
    main.add_command(scenario_group)
    main.add_command(race_group)
