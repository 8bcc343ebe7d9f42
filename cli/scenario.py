"""`tau-demo scenario run` and `tau-demo race soak`."""

from __future__ import annotations

import os
import shutil
import sys

import click

from scenarios.kit import catalogue, runner
from scenarios.walkthrough import soak
from scenarios.kueue_specs import suite as kueue_suite, table as kueue_table
from scenarios.kit.controllers import DEMO_FAKE_CA, ensure_controller, stop_started

from demo.cluster import backends
from demo.cluster.state import State
from k8s.keys import FAKE_CA_LEASE
from k8s import poll
from .interrupt import cleaning_on_interrupt
from .options import CONTEXT_SETTINGS, kube_options
from .ui import start_server as start_ui


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
              help="also run the group upstream after the others: the known defects, four of Kueue v0.19.2 and two of "
                   "the Cluster Autoscaler 1.36.1")
@click.option("--ui", "with_ui", is_flag=True,
              help="also serve the live page (`tau-demo ui`) on 127.0.0.1 while the scenarios run, and print its address")
@click.option("--ui-port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="the live page's port (0: a free one; a port in use is an error)")
@click.option("--serial", is_flag=True,
              help="one scenario after another, every one on the demo's profile, as a presenter tells it (the default "
                   "without --auto; with it the walkthrough's scenarios run side by side, each in a slot of its own, "
                   "their output shown whole in the same order)")
def run_cmd(names, kube_client, kubeconfig, auto, autoscaler, with_upstream, with_ui, ui_port, serial):
    """Run scenarios (default: all, the design's walkthrough).  NAMES: a group or scenario names, as `tau-demo
    scenario list` shows them.  With --auto the walkthrough's scenarios run side by side, each in a namespace,
    queue and node pool of its own (the demo cluster's TauCluster sets them up), and each one's output is shown
    whole, in order, as it finishes; the other groups run one after another.  Exit 1 if any check fails."""
    if auto is None:
        auto = os.environ.get("AUTO") == "1" or not sys.stdin.isatty()
    try:
        chosen = catalogue.resolve(names, with_upstream)
    except KeyError as e:
        raise click.BadParameter(f"unknown scenario {e.args[0]!r}; choose a group ({', '.join(catalogue.group_names())}) "
                                 f"or a scenario ({', '.join(catalogue.by_name())})", param_hint="NAMES")
    ctx = _context(kubeconfig, kube_client.context, auto, autoscaler)
    try:
        runner.check_cluster(ctx, chosen)
    except runner.NoCluster as e:
        raise click.ClickException(str(e))
    if any(catalogue.by_name()[n].group == kueue_suite.GROUP for n in chosen):
        kueue_suite.configure(ctx)          # the real CA at the specs' demo timescale
    page = start_ui(ctx.runs_dir, ui_port) if with_ui else None
    if page is not None:
        ctx.say(f"Live page: {page.start()}  (tau-demo ui: each scenario as it runs; replay of runs/ from the page)")
    with cleaning_on_interrupt("tau-demo scenario run", kubeconfig, kube_client.context):
        summary, leftovers = _run_and_report(ctx, chosen, auto, serial, page)
    if leftovers or any(ok is False for _, ok, _ in summary):
        sys.exit(1)


def _run_and_report(ctx, chosen, auto, serial, page):
    """The run itself, its summary and what it left behind; the controllers it started stopped, the page too."""
    try:
        try:
            runner.start_clean(ctx)
        except (runner.AutoscalerConflict, runner.NotClean) as e:
            raise click.ClickException(str(e))
        summary = runner.run_chosen(ctx, chosen, side_by_side=auto and not serial,
                                    progress=_status_line() if sys.stdout.isatty() else None)
        ctx.say()
        ctx.say("Summary")
        for n, ok, detail in summary:
            ctx.say(f"  {'SKIP' if ok is None else 'PASS' if ok else 'FAIL'}  {n:26} {detail}")
        leftovers = runner.left_behind(ctx)
        ctx.say(f"  left behind: {', '.join(leftovers) if leftovers else 'nothing'}")
        if ctx.verdicts:
            ctx.say("\nUpstream reports (the table of docs/upstream.md)")
            for row in runner.verdict_table(ctx):
                ctx.say(row)
        if ctx.spec_results:
            ctx.say(f"\nKueue v0.19.2's provisioning specs under the {ctx.autoscaler} autoscaler "
                    "(`tau-demo kueue-specs` runs both and writes docs/kueue-specs.md)")
            done = {r.number for r in ctx.spec_results}
            for row in kueue_table.rows([e for e in kueue_suite.entries() if e.spec.number in done],
                                        {ctx.autoscaler: {r.number: r for r in ctx.spec_results}}):
                ctx.say(row)
    finally:
        stop_started(ctx)
        if page is not None:
            if not auto and sys.stdin.isatty() and not poll.cancelled():
                input(f"  (the live page stays at {page.url} for replay: press Enter to stop it) ")
            page.stop()
    return summary, leftovers


def _status_line():
    """A terminal's one-line progress: written in place, cleared with ''."""
    width = shutil.get_terminal_size((100, 20)).columns - 1

    def show(text: str) -> None:
        sys.stdout.write("\r\033[K" + text[:width])
        sys.stdout.flush()
    return show


def markdown_list() -> str:
    """The catalogue as the Markdown table docs/scenarios.md carries (a unit test keeps the two equal)."""
    lines = ["| group | scenario | upstream report | fake only | what it shows |", "| --- | --- | --- | --- | --- |"]
    for s in catalogue.scenarios():
        report = s.report.number.removeprefix("kubernetes-sigs/") if s.report else ""
        lines.append(f"| {s.group} | `{s.name}` | {report} | {'yes: ' + s.needs_fake if s.needs_fake else ''} | "
                     f"{s.about} |")
    lines += ["", "| group | in the walkthrough (`all`) | what it is |", "| --- | --- | --- |"]
    lines += [f"| `{g.name}` | {'yes' if g.walkthrough else 'no'} | {g.about} |" for g in catalogue.all_groups()]
    return "\n".join(lines)


@scenario_group.command("list")
@click.option("--markdown", is_flag=True, help="the Markdown tables docs/scenarios.md carries")
def list_cmd(markdown):
    """Every scenario: its group, its name, the upstream report it reproduces (kubernetes-sigs/kueue#N),
    whether it needs the fake autoscaler (an injected fault), and what it shows.  "all" is the walkthrough:
    the groups marked so."""
    if markdown:
        click.echo(markdown_list())
        return
    rows = [("GROUP", "NAME", "REPORT", "FAKE-ONLY", "WHAT")] + [
        (s.group, s.name, s.report.number.removeprefix("kubernetes-sigs/") if s.report else "-",
         "yes" if s.needs_fake else "no", s.about) for s in catalogue.scenarios()]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + "  " + r[4])
    click.echo("\nGroups (`./scenario.sh <group>`; all = the walkthrough groups, in this order):")
    width = max(len(g.name) for g in catalogue.all_groups())
    for g in catalogue.all_groups():
        click.echo(f"  {g.name.ljust(width)}  {'walkthrough' if g.walkthrough else 'opt-in     '}  {g.about}")


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
    with cleaning_on_interrupt("tau-demo race soak", kubeconfig, kube_client.context):
        try:
            fake = ensure_controller(ctx, FAKE_CA_LEASE, DEMO_FAKE_CA, "fake autoscaler")
            if faults and fake is None:
                raise click.ClickException("--faults kills the fake autoscaler it started; stop the one that runs")
            restart = (lambda component: backends.get(st.backend).restart(st.name, component)) if faults else None
            results = soak.soak(ctx, runs, seed, faults=faults, restart=restart, fake_ca=fake)
        finally:
            stop_started(ctx)
    click.echo(soak.soak_table(results))
    if any(r.violations or r.outcome == "?" for r in results):
        sys.exit(1)
