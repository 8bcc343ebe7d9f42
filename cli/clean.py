"""`tau-demo clean`: remove what the harness made on the cluster, and say what."""

from __future__ import annotations

import sys

import click

from scenarios.kit import runner
from scenarios.kit.controllers import stop_orphans
from .interrupt import on_interrupt
from .options import CONTEXT_SETTINGS, duration, kube_options


@click.command("clean", context_settings=CONTEXT_SETTINGS)
@kube_options()
@click.option("--timeout", default="120s", show_default=True, callback=duration,
              help="how long to wait for what is deleted to be gone")
def clean_cmd(kube_client, kubeconfig, timeout):
    """Remove what the harness made, and nothing else: the Jobs, Workloads and ProvisioningRequests of the
    scenarios' namespaces, every autoscaler's nodes, the Kueue objects and TauClusters the scenarios make (by their
    names' prefixes), the conformance tool's probe objects (on a MultiKueue manager, on its workers too); and the
    controllers scenarios started in the background that no run stops any more (an interrupted or killed run's;
    the TauCluster controller of `cluster up` is the cluster's and stays).  The demo's own objects (its profile,
    queues, pools, namespaces) stay.  Run it when no scenario runs.  Prints every object and controller it removed.
    Exit 0 when nothing is left, 1 when something still is after --timeout."""
    try:
        ctx = runner.make_context(kubeconfig, kube_client.context, True)
    except runner.NoCluster as e:
        raise click.ClickException(str(e))
    with on_interrupt("tau-demo clean", None):      # it makes nothing: interrupted, it only says so
        for stopped in stop_orphans():
            click.echo(f"  stopped controller {stopped}")
        removed, left = runner.clean(ctx, timeout, say=click.echo)
    click.echo(f"{len(removed)} object(s) removed; left behind: {', '.join(left) if left else 'nothing'}")
    if left:
        sys.exit(1)
