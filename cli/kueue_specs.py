"""`tau-demo kueue-specs`: Kueue v0.19.2's own provisioning specs under the fake and the real autoscaler, and the
results table docs/kueue-specs.md (the run and the table: scenarios/kueue_specs/suite.py)."""

from __future__ import annotations

import sys

import click

from scenarios.kit.runner import AUTOSCALER_CHOICES
from scenarios.kueue_specs import suite

from k8s.paths import KUEUE_SPECS_DOC, REPO
from .interrupt import cleaning_on_interrupt
from .options import CONTEXT_SETTINGS, kube_options


@click.command("kueue-specs", context_settings=CONTEXT_SETTINGS)
@kube_options()
@click.option("--autoscaler", type=click.Choice(AUTOSCALER_CHOICES), default="both", show_default=True,
              help="who writes the conditions; both: the fake, then the real Cluster Autoscaler 1.36.1 (never together)")
@click.option("--spec", "only", multiple=True, type=click.IntRange(1, 21),
              help="run only the spec with this number (repeatable) [default: all 21]")
@click.option("--output", type=click.Path(dir_okay=False), default=str(KUEUE_SPECS_DOC.relative_to(REPO)),
              show_default=True, help="with --autoscaler both and every spec: the results table written from this run")
def kueue_specs_cmd(kube_client, kubeconfig, autoscaler, only, output):
    """Run Kueue v0.19.2's own provisioning specs end to end (the group kueue-specs).

    Each of the 21 specs of Kueue's provisioning_test.go becomes a scenario on the real cluster, where an
    autoscaler writes every ProvisioningRequest condition the spec sets by hand.  Each autoscaler is
    started for its run and stopped after it (none may be running already); specs the real one cannot
    drive on a demo timescale are skipped under it, saying why.  Prints the table; with both and every
    spec, writes it (--output).  Exit 1 if a spec did not hold or could not run.
    """
    with cleaning_on_interrupt("tau-demo kueue-specs", kubeconfig, kube_client.context):
        try:
            outcome = suite.kueue_specs(kubeconfig, kube_client.context, autoscaler, list(only), output)
        except suite.NotRun as e:
            raise click.ClickException(str(e))
    click.echo("\n".join(outcome.rows))
    click.echo("\nSummary")
    for a, n, ok, detail in outcome.summaries:
        click.echo(f"  {a:4} {'SKIP' if ok is None else 'PASS' if ok else 'FAIL'}  {n:46} {detail}")
    if outcome.written is not None:
        click.echo(f"\nresults table: {outcome.written}")
    if outcome.failed:
        sys.exit(1)
