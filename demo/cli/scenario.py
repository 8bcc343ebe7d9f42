"""`tau-demo scenario run` and `tau-demo race soak`."""

from __future__ import annotations

import os
import sys

import click

from scenarios import runner, soak
from scenarios.controllers import ensure_controller, stop_started

from ..cluster import backends
from ..cluster.state import State
from ..k8s.keys import FAKE_CA_LEASE
from .options import CONTEXT_SETTINGS, kube_options


def _context(kubeconfig, context, auto, autoscaler="fake"):
    try:
        return runner.make_context(kubeconfig, context, auto, autoscaler)
    except runner.NoCluster as e:
        raise click.ClickException(str(e))


@click.group("scenario", context_settings=CONTEXT_SETTINGS)
def scenario_group():
    """The reviewers' walkthrough (success, timeout and race paths) and known Kueue v0.19.2 defects (upstream)."""


@scenario_group.command("run")
@click.argument("names", nargs=-1)
@kube_options()
@click.option("--auto/--pause", default=None,
              help="never wait for input (default when AUTO=1 or stdin is not a terminal)")
@click.option("--autoscaler", type=click.Choice(runner.AUTOSCALERS), default="fake", show_default=True,
              envvar="TAU_DEMO_AUTOSCALER",
              help="who answers the ProvisioningRequests: the fake autoscaler, or the real Cluster Autoscaler "
                   "1.36.1 (`tau-demo real-ca`; scenarios that need an injected fault are skipped, saying why)")
@click.option("--upstream", "with_upstream", is_flag=True,
              help="also run the known Kueue v0.19.2 defects (the group upstream), after the others")
def run_cmd(names, kube_client, kubeconfig, auto, autoscaler, with_upstream):
    """Run scenarios in order (default: all, the design's walkthrough).  NAMES: a group (all, success,
    timeout, race, beyond, upstream) or scenario names, as `tau-demo scenario list` shows them.
    Exit 1 if any check fails."""
    if auto is None:
        auto = os.environ.get("AUTO") == "1" or not sys.stdin.isatty()
    try:
        chosen = runner.resolve(names, with_upstream)
    except KeyError as e:
        groups = [g for g in runner.GROUPS if g not in runner.SCENARIOS]
        raise click.BadParameter(f"unknown scenario {e.args[0]!r}; choose a group ({', '.join(groups)}) or a "
                                 f"scenario ({', '.join(runner.SCENARIOS)})", param_hint="NAMES")
    ctx = _context(kubeconfig, kube_client.context, auto, autoscaler)
    try:
        try:
            runner.start_controllers(ctx)
        except runner.AutoscalerConflict as e:
            raise click.ClickException(str(e))
        leftovers = ctx.leftovers()
        if leftovers:
            raise click.ClickException(f"the demo namespace is not clean: {', '.join(leftovers)}")
        summary = runner.run_scenarios(ctx, chosen)
        ctx.say()
        ctx.say("Summary")
        for n, ok, detail in summary:
            ctx.say(f"  {'SKIP' if ok is None else 'PASS' if ok else 'FAIL'}  {n:26} {detail}")
        leftovers = ctx.leftovers()
        ctx.say(f"  left behind: {', '.join(leftovers) if leftovers else 'nothing'}")
        if ctx.verdicts:
            ctx.say("\nUpstream reports on Kueue v0.19.2 (the table of docs/upstream.md)")
            for row in runner.verdict_table(ctx):
                ctx.say(row)
    finally:
        stop_started(ctx)
    if leftovers or any(ok is False for _, ok, _ in summary):
        sys.exit(1)


@scenario_group.command("list")
def list_cmd():
    """Every scenario: its name, the upstream report it reproduces (kubernetes-sigs/kueue#N), what it
    shows, and whether it needs the fake autoscaler (an injected fault)."""
    rows = [("NAME", "REPORT", "FAKE-ONLY", "WHAT")] + [
        (n, report.removeprefix("kubernetes-sigs/") or "-", "yes" if fake else "no", what)
        for n, report, what, fake in runner.catalogue()]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r[:3], widths)) + "  " + r[3])


@click.group("race", context_settings=CONTEXT_SETTINGS)
def race_group():
    """Admit-during-deactivate race tools."""


@race_group.command("soak")
@click.option("--runs", type=click.IntRange(1, 1000), default=30, show_default=True)
@click.option("--seed", type=int, default=None)
@click.option("--faults", is_flag=True, help="kill controllers, Kueue and the kube-apiserver at random moments")
@kube_options()
def soak_cmd(runs, seed, faults, kube_client, kubeconfig):
    """Repeat random interleavings of admission and deadline and check the invariants after each:
    the owner is marked exactly when the Workload carries a committed timeout; no admitted Job is
    ever marked or deleted; cleanup deletes only committed timeouts; no pods of a timed-out Job
    keep running; nothing is left behind.  With --faults, about 40% of the runs also get one fault
    at a random moment: the deadline controller or the fake autoscaler killed with SIGKILL and
    restarted, Kueue or the kube-apiserver killed and restarted (the demo cluster's).  Exit 1 on any
    violation or undecided run."""
    ctx = _context(kubeconfig, kube_client.context, True)
    st = State.load()
    if faults and (st is None or kubeconfig != st.kubeconfig):
        raise click.ClickException("--faults restarts Kueue and the kube-apiserver of the demo cluster: run it "
                                   "against the cluster `tau-demo cluster up` made")
    try:
        fake = ensure_controller(ctx, FAKE_CA_LEASE, ["fake-ca"], "fake autoscaler")
        if faults and fake is None:
            raise click.ClickException("--faults kills the fake autoscaler it started; stop the one that runs")
        restart = (lambda component: backends.get(st.backend).restart(st.name, component)) if faults else None
        results = soak.soak(ctx, runs, seed, faults=faults, restart=restart, fake_ca=fake)
    finally:
        stop_started(ctx)
    click.echo(soak.soak_table(results))
    if any(r.violations or r.outcome == "?" for r in results):
        sys.exit(1)
