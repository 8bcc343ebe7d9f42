"""`tau-demo deadline`: run the admission-deadline controller."""

from __future__ import annotations

import click

from . import cluster, kube
from .deadline import BadDeadline, parse_duration
from .deadline_controller import PROTOCOLS, DeadlineController
from .cli_util import run_controller
from .hooks import Hooks

SERVICE_ACCOUNT = "system:serviceaccount:tau-demo-system:deadline"


def duration(ctx, param, value):
    try:
        return parse_duration(value)
    except BadDeadline as e:
        raise click.BadParameter(str(e)) from e


@click.command("deadline")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), help="[default: the demo cluster's]")
@click.option("--context")
@click.option("--namespace", "-n", default=None, help="watch one namespace [default: all]")
@click.option("--protocol", type=click.Choice(PROTOCOLS), default="committed", show_default=True,
              help="committed: decide on the Workload, then mirror, then arm cleanup.  legacy: the reviewed "
                   "design's order (mark owner, deactivate, TTL cleanup) -- reproduces its bug; scenarios only")
@click.option("--cleanup-ttl", default="30s", callback=duration, show_default=True,
              help="how long a timed-out Job stays before cleanup deletes it")
@click.option("--resync", default="5s", callback=duration, show_default=True, help="re-check every Job this often")
@click.option("--as", "as_user", default=None,
              help=f"impersonate this identity (least-privilege check), e.g. {SERVICE_ACCOUNT}")
@click.option("--class", "instance", default="default", show_default=True,
              help="handle only Jobs whose tau-demo.io/deadline-class annotation names this class "
                   "(Jobs without it belong to 'default')")
@click.option("--hook-dir", type=click.Path(file_okay=False), default=None,
              help="scenario-only: pause points that race scenarios arm and release (see demo/hooks.py)")
def deadline_cmd(kubeconfig, context, namespace, protocol, cleanup_ttl, resync, as_user, instance, hook_dir):
    """Admission-deadline controller (layer 3 of the bounded wait).

    A Job annotated tau-demo.io/admission-deadline (e.g. 90s, from `tau-demo submit
    --deadline`) whose Workload is not Admitted when the deadline passes is timed out:
    the decision is committed on the Workload alone (spec.active=false plus
    tau-demo.io/admission-decision=timed-out, guarded by its resourceVersion), then
    mirrored to the Job (tau-demo.io/terminal-reason=AdmissionTimeout), then cleanup is
    armed and deletes the Job after --cleanup-ttl.  Admission always wins a race.
    """
    try:
        k = kube.Kube(kubeconfig or cluster.default_kubeconfig(), context, impersonate=as_user)
    except kube.Unreachable as e:
        raise click.ClickException(str(e))
    ctl = DeadlineController(k, namespace, protocol, cleanup_ttl, resync, Hooks(hook_dir), instance=instance)
    run_controller(ctl, "deadline controller")


def register(main: click.Group) -> None:
    main.add_command(deadline_cmd)
