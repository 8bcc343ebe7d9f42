"""`tau-demo deadline`: run the admission-deadline controller."""

from __future__ import annotations

import click

from demo.deadline.controller import DEFAULT_WORKERS, PROTOCOLS, DeadlineController
from k8s.errors import Unreachable
from k8s.hooks import Hooks
from k8s.keys import DEADLINE_CLASS_ANNOTATION, DEFAULT_DEADLINE_CLASS
from .options import CONTEXT_SETTINGS, duration, kube_options, run_controller


@click.command("deadline", context_settings=CONTEXT_SETTINGS)
@kube_options(impersonation=True)
@click.option("--namespace", "-n", default=None, help="watch one namespace [default: all]")
@click.option("--protocol", type=click.Choice(PROTOCOLS), default="committed", show_default=True,
              help="committed: decide on the Workload, then mirror, then arm cleanup.  legacy: the reviewed "
                   "design's order (mark owner, deactivate, TTL cleanup) -- reproduces its bug; scenarios only")
@click.option("--cleanup-ttl", default="30s", callback=duration, show_default=True,
              help="how long a timed-out Job stays before cleanup deletes it")
@click.option("--resync", default="5s", callback=duration, show_default=True, help="re-check every Job this often")
@click.option("--class", "instance", default=DEFAULT_DEADLINE_CLASS, show_default=True,
              help=f"handle only Jobs whose {DEADLINE_CLASS_ANNOTATION} annotation names this class "
                   f"(Jobs without it belong to '{DEFAULT_DEADLINE_CLASS}')")
@click.option("--workers", default=DEFAULT_WORKERS, show_default=True, type=click.IntRange(1, 64),
              help="reconcile this many Jobs at once (never one Job on two workers)")
@click.option("--hook-dir", type=click.Path(file_okay=False), default=None,
              help="scenario-only: pause points that race scenarios arm and release (see k8s/hooks.py)")
def deadline_cmd(kube_client, kubeconfig, namespace, protocol, cleanup_ttl, resync, instance, workers, hook_dir):
    """Admission-deadline controller (layer 3 of the bounded wait).

    A Job annotated tau-demo.io/admission-deadline (e.g. 90s, from `tau-demo submit
    --deadline`) whose Workload is not Admitted when the deadline passes is timed out:
    the decision is committed on the Workload alone (spec.active=false plus
    tau-demo.io/admission-decision=timed-out, guarded by its resourceVersion), then
    mirrored to the Job (tau-demo.io/terminal-reason=AdmissionTimeout), then cleanup is
    armed and deletes the Job after --cleanup-ttl.  Admission always wins a race.
    Least privilege: --as system:serviceaccount:tau-demo-system:deadline.
    """
    try:
        k = kube_client.connect()
        k.raw("/version")          # answer now, not with "caches synced" after a minute of retries
    except Unreachable as e:
        raise click.ClickException(f"cannot reach the cluster: {e}")
    ctl = DeadlineController(k, namespace, protocol, cleanup_ttl, resync, Hooks(hook_dir), instance=instance,
                             workers=workers)
    run_controller(ctl, "deadline controller")
