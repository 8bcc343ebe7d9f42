"""`tau-demo conformance`: the same probes against the fake and the real autoscaler, side by side (the run and its
report: scenarios/conformance/tool.py)."""

from __future__ import annotations

import sys

import click

from k8s.paths import FIDELITY_DOC, REPO
from k8s.pools import PoolsError
from scenarios.conformance import probes as cf
from scenarios.conformance import tool
from scenarios.kit.harness import ScenarioFailed
from scenarios.kit.runner import AUTOSCALER_CHOICES, NoCluster, make_context

from .interrupt import cleaning_on_interrupt
from .options import CONTEXT_SETTINGS, duration, kube_options


@click.command("conformance", context_settings=CONTEXT_SETTINGS)
@kube_options()
@click.option("--autoscaler", type=click.Choice(AUTOSCALER_CHOICES), default="both", show_default=True,
              help="which autoscaler(s) to probe; both: the fake, then (pool reset) the real one, never together")
@click.option("--scan-interval", default=f"{cf.RunSettings().scan:g}s", callback=duration, show_default=True,
              help="both autoscalers' --scan-interval (the real one's default is 10s)")
@click.option("--probe", "only", multiple=True, type=click.Choice(cf.PROBE_NAMES), metavar="NAME",
              help="run only these probes (repeatable) [default: all short ones; see --list]")
@click.option("--long", "with_long", is_flag=True,
              help="also the long probes (a real timer with no flag: the 10-minute booking)")
@click.option("--list", "list_only", is_flag=True, help="list the probes and exit")
@click.option("--output", type=click.Path(dir_okay=False), default=str(FIDELITY_DOC.relative_to(REPO)),
              show_default=True, help="with --autoscaler both: the report written from this run")
def conformance_cmd(kube_client, kubeconfig, autoscaler, scan_interval, only, with_long, list_only, output):
    """Put the same ProvisioningRequests to the fake and to the real Cluster Autoscaler 1.36.1.

    Each probe is named after the behaviour it probes (--list).  Both autoscalers run with
    the same settings (scan interval, request backoff, node-provision time, node-group
    backoff, unneeded time; the fake's booking at the real one's 10 minutes) and the same
    node pools.  Each is started for the run and stopped after it (none may be running
    already).  Prints both timelines side by side; with both, marks every difference as a
    documented deviation (its row in docs/autoscaler.md) or undocumented, writes the report
    (--output) and exits 1 on an undocumented difference or a probe that could not run.
    """
    if list_only:
        for p in cf.PROBES:
            click.echo(f"{p.name:36} {'(long) ' if p.long else ''}{p.what}")
        return
    asked = tool.Asked(autoscaler, scan_interval, tuple(only), with_long, output)
    try:
        ctx = make_context(kubeconfig, kube_client.context, True)
        pools = tool.load_probe_pools()
    except (NoCluster, PoolsError) as e:
        raise click.ClickException(str(e))
    with cleaning_on_interrupt("tau-demo conformance", kubeconfig, kube_client.context):
        try:
            outcome = tool.conformance(ctx, asked, pools, say=lambda line: click.echo(line, err=True))
        except ScenarioFailed as e:
            raise click.ClickException(str(e))
    click.echo(outcome.text)
    for line in outcome.summary:
        click.echo(line)
    if outcome.errors:
        click.echo(f"{len(outcome.errors)} probe(s) could not run: "
                   + ", ".join(f"{r.autoscaler}/{r.probe}" for r in outcome.errors))
    if outcome.failed:
        sys.exit(1)
