"""`tau-demo deadline`: run the admission-deadline controller."""

from __future__ import annotations

import click

from demo.deadline.controller import CLEANUP_TTL, DEFAULT_WORKERS, JOB_RESYNC, PROTOCOLS, DeadlineController
from demo.deadline.rule import DEFAULT_OUTER_FACTOR, DEFAULT_RULE, Rule
from k8s.errors import Unreachable
from k8s.hooks import Hooks
from k8s.keys import DEADLINE_CLASS_ANNOTATION, DEADLINE_RULE_ANNOTATION, DEFAULT_DEADLINE_CLASS, MAX_WAIT_ANNOTATION
from .options import CONTEXT_SETTINGS, duration, kube_options, run_controller


@click.command("deadline", context_settings=CONTEXT_SETTINGS)
@kube_options(impersonation=True)
@click.option("--namespace", "-n", default=None, help="watch one namespace [default: all]")
@click.option("--protocol", type=click.Choice(PROTOCOLS), default="committed", show_default=True,
              help="committed: decide on the Workload, then mirror, then arm cleanup.  legacy: the reviewed "
                   "design's order (mark owner, deactivate, TTL cleanup) -- reproduces its bug; scenarios only")
@click.option("--rule", type=click.Choice([r.value for r in Rule]), default=DEFAULT_RULE.value, show_default=True,
              help="count a Job's deadline from when an autoscaler took up its request (taken-up; at most the outer "
                   f"bound after submission), or from submission (submitted); a Job's {DEADLINE_RULE_ANNOTATION} "
                   "annotation overrides it")
@click.option("--max-wait-factor", default=DEFAULT_OUTER_FACTOR, show_default=True,
              type=click.FloatRange(1.0, 1000.0),
              help=f"the rule taken-up's outer bound: a Job without {MAX_WAIT_ANNOTATION} ends at most this many "
                   "deadlines after submission")
@click.option("--cleanup-ttl", default=f"{CLEANUP_TTL:g}s", callback=duration, show_default=True,
              help="how long a timed-out Job stays before cleanup deletes it")
@click.option("--resync", default=f"{JOB_RESYNC:g}s", callback=duration, show_default=True,
              help="re-check every Job this often")
@click.option("--class", "instance", default=DEFAULT_DEADLINE_CLASS, show_default=True,
              help=f"handle only Jobs whose {DEADLINE_CLASS_ANNOTATION} annotation names this class "
                   f"(Jobs without it belong to '{DEFAULT_DEADLINE_CLASS}')")
@click.option("--workers", default=DEFAULT_WORKERS, show_default=True, type=click.IntRange(1, 64),
              help="reconcile this many Jobs at once (never one Job on two workers)")
@click.option("--hook-dir", type=click.Path(file_okay=False), default=None,
              help="scenario-only: pause points that race scenarios arm and release (see k8s/hooks.py)")
def deadline_cmd(kube_client, kubeconfig, namespace, protocol, rule, max_wait_factor, cleanup_ttl, resync, instance,
                 workers, hook_dir):
    """Admission-deadline controller (layer 3 of the bounded wait).

    A Job annotated tau-demo.io/admission-deadline (e.g. 90s, from `tau-demo submit
    --deadline`) whose Workload is not Admitted when the deadline passes is timed out.
    The deadline counts from when an autoscaler first took up the Workload's
    ProvisioningRequest (--rule taken-up), never later than --max-wait-factor deadlines
    after submission, or from submission (--rule submitted).  The timeout:
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
                             workers=workers, rule=rule, outer_factor=max_wait_factor)
    run_controller(ctl, "deadline controller")
