"""`tau-demo kueue-specs`: Kueue v0.19.2's own provisioning specs under the fake and the real autoscaler, and the
results table docs/kueue-specs.md."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from scenarios.kueue_specs import group, table

from k8s.paths import KUEUE_SPECS_DOC, REPO
from .interrupt import cleaning_on_interrupt
from .options import CONTEXT_SETTINGS, kube_options



@click.command("kueue-specs", context_settings=CONTEXT_SETTINGS)
@kube_options()
@click.option("--autoscaler", type=click.Choice(["fake", "real", "both"]), default="both", show_default=True,
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
    started = time.time()
    with cleaning_on_interrupt("tau-demo kueue-specs", kubeconfig, kube_client.context):
        try:
            summaries, results = group.run_each(kubeconfig, kube_client.context,
                                                 ["fake", "real"] if autoscaler == "both" else [autoscaler], list(only))
        except group.NotRun as e:
            raise click.ClickException(str(e))
    entries = [e for e in group.entries() if not only or e.spec.number in only]
    click.echo("\n".join(table.rows(entries, results)))
    click.echo("\nSummary")
    for a, n, ok, detail in summaries:
        click.echo(f"  {a:4} {'SKIP' if ok is None else 'PASS' if ok else 'FAIL'}  {n:46} {detail}")
    if autoscaler == "both" and not only:
        command = "tau-demo kueue-specs --autoscaler both"
        settings = [group.settings("fake"), group.settings("real"),
                    f"run took {time.time() - started:.0f}s (both autoscalers, the pools drained after each)"]
        out = Path(output) if Path(output).is_absolute() else REPO / output
        out.write_text(table.markdown(command, time.strftime("%Y-%m-%d %H:%M %Z"), settings, entries, results))
        click.echo(f"\nresults table: {out}")
    if any(ok is False for _, _, ok, _ in summaries):
        sys.exit(1)
