"""`tau-demo submit`, `preflight`, `watch`, `report`: what a researcher and a reviewer type."""

from __future__ import annotations

import sys

import click
import yaml

from ..jobs.preflight import Gang, GangError
from ..jobs.render import job_template, new_name, render_job
from ..jobs.submit import create_job, run_preflight
from ..jobs.watch import JobNotFound, follow
from ..k8s.errors import ApiError, Conflict, Invalid, Unreachable
from ..k8s.keys import DEMO_NAMESPACE, PROFILE
from ..k8s.manifests import ManifestError
from ..timeline import svg
from ..timeline.lanes import snapshot_states
from ..timeline.log import EventLog
from .options import duration, duration_text, fail, kube_options


def _gang_opt(ctx, param, value):
    try:
        return Gang.parse(value)
    except GangError as e:
        raise click.BadParameter(str(e)) from e


def _kv(ctx, param, values):
    out = {}
    for v in values:
        if "=" not in v or not v.split("=", 1)[0]:
            raise click.BadParameter(f"{v!r}: expected KEY=VALUE")
        k, val = v.split("=", 1)
        out[k] = val
    return out


_profile = click.option("--profile", default=PROFILE, show_default=True, help="queue profile (a LocalQueue)")
_namespace = click.option("--namespace", "-n", default=DEMO_NAMESPACE, show_default=True)


@click.command("preflight")
@kube_options()
@_profile
@click.option("--gang", required=True, callback=_gang_opt, help="PODSxGPUS, e.g. 2x8")
@click.option("--name", default=None,
              help="the Job's name: warn when Kueue v0.19.2 would lose its ProvisioningRequest (kueue#12542)")
@_namespace
def preflight_cmd(kube_client, kubeconfig, profile, gang, name, namespace):
    """Layer 1 of the bounded wait: is the profile ProvisioningReady, and can the gang ever fit?

    Exit 0: ready and fits.  Exit 1: the profile is unknown or not ready, or the pool table
    is missing.  Exit 2: the gang can never fit the pool's max (nothing is created).  A warning (exit
    unchanged) when the Job's ProvisioningRequest name is too long for Kueue v0.19.2 to find it again.
    """
    try:
        code, lines = run_preflight(kube_client, profile, gang, namespace, name)
    except (Unreachable, ApiError) as e:
        fail(str(e))
    for line in lines:
        click.echo(line)
    sys.exit(code)


@click.command("submit")
@kube_options()
@_profile
@click.option("--gang", default="2x8", callback=_gang_opt, show_default=True, help="PODSxGPUS")
@click.option("--name", default=None, help="Job name [default: job-train-<5 hex>]")
@_namespace
@click.option("--deadline", default=None, callback=duration_text,
              help="admission deadline, e.g. 90s (annotation tau-demo.io/admission-deadline)")
@click.option("--duration", default="20s", callback=duration_text, show_default=True,
              help="how long each pod runs once started (KWOK stage delay)")
@click.option("--provreq", "provreq", multiple=True, callback=_kv, metavar="KEY=VALUE",
              help="ProvisioningRequest parameter via Kueue's provreq.kueue.x-k8s.io/ pass-through, "
                   "e.g. ValidUntilSeconds=60 (repeatable)")
@click.option("--dry-run", is_flag=True, help="print the Job YAML and create nothing")
@click.option("--no-preflight", is_flag=True, help="skip the submit-time preflight")
def submit_cmd(kube_client, kubeconfig, profile, gang, name, namespace, deadline, duration, provreq, dry_run,
               no_preflight):
    """Render and apply a GPU Job the way the design's researchers get it: suspended, queued,
    with GPU requests, the admission deadline and any provreq annotations."""
    try:
        template = job_template()
    except ManifestError as e:
        fail(str(e))
    name = name or new_name()
    job = render_job(template, name, namespace, profile, gang, duration, deadline, provreq)
    if dry_run:
        click.echo(yaml.safe_dump(job, sort_keys=False), nl=False)
        return
    try:
        if not no_preflight:
            code, lines = run_preflight(kube_client, profile, gang, namespace, name)
            for line in lines:
                click.echo(line)
            if code:
                fail("preflight refused the job; nothing was created", code)
        out = create_job(kube_client, job)
    except Invalid as e:
        fail(f"the cluster refused the Job: {e.message}")
    except Conflict:
        fail(f"a Job named {namespace}/{name} already exists")
    except (Unreachable, ApiError) as e:
        fail(str(e))
    click.echo(f"job {namespace}/{name} submitted (suspended={out['spec'].get('suspend')}, "
               f"{gang.pods} pod(s) x {gang.gpus} GPU{f', deadline {deadline}' if deadline else ''})")


@click.command("watch")
@kube_options()
@click.argument("job")
@_namespace
@click.option("--until", type=click.Choice(["running", "finished"]), default="finished", show_default=True,
              help="exit once the pods run, or once the Job finishes")
@click.option("--timeout", default="10m", callback=duration, show_default=True)
@click.option("--events", "events_path", type=click.Path(dir_okay=False), help="append a JSON-lines event log")
def watch_cmd(kube_client, kubeconfig, job, namespace, until, timeout, events_path):
    """Show a Job's startup phases live: Submitted, Quota reserved, Capacity provisioning,
    Pod scheduling, Running.  Exit 0 when it runs/succeeds, 1 when it fails or times out."""
    log = EventLog(events_path) if events_path else None

    def record(snap):
        if log is not None:
            log.record_all(snapshot_states(snap.job, snap.workload, snap.provreqs, snap.pods, snap.nodes))
    try:
        view = follow(kube_client, namespace, job, until, timeout, on_snapshot=record)
    except (TimeoutError, JobNotFound) as e:
        fail(str(e))
    except (Unreachable, ApiError) as e:
        fail(str(e))
    if view.outcome == "failed":
        fail(view.reason or "the job failed")


@click.command("report")
@click.argument("events", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="SVG (or PNG with rsvg-convert) [default: EVENTS.svg]")
@click.option("--title", default=None)
def report_cmd(events, output, title):
    """Turn a scenario's JSON-lines event log into a timeline picture (one lane per object)."""
    out = output or str(events).rsplit(".", 1)[0] + ".svg"
    try:
        svg.write(events, out, title or events)
    except (ValueError, OSError, RuntimeError) as e:
        fail(str(e))
    click.echo(out)
