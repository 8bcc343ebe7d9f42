"""`tau-demo submit`, `preflight`, `watch`, `report`: what a researcher and a reviewer type."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click
import yaml

from k8s.pools import is_dns1123_label, is_dns1123_subdomain, is_qualified_name

from demo.jobs import observe
from demo.jobs.preflight import Gang, GangError
from demo.jobs.render import job_template, new_name, render_job
from demo.jobs.submit import create_job, create_refused, refusal, run_preflight
from demo.jobs.watch import JobNotFound, follow
from k8s.errors import ApiError, Unreachable
from k8s.keys import DEMO_NAMESPACE, PROFILE, PROVREQ_PARAM_PREFIX
from k8s.manifests import ManifestError
from k8s.watch import NotSynced
from demo.timeline import log as event_log
from demo.timeline import svg
from demo.timeline.lanes import snapshot_states
from demo.timeline.log import EventLog
from .interrupt import cleaning_on_interrupt
from .options import deadline_text, duration, duration_text, fail, kube_options

WATCH_GRACE = "10s"      # how long `watch` waits for a Job that does not exist before saying so


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
        if not is_qualified_name(PROVREQ_PARAM_PREFIX + k):
            raise click.BadParameter(f"{v!r}: {k!r} cannot be a ProvisioningRequest parameter (it becomes the "
                                     f"annotation {PROVREQ_PARAM_PREFIX}{k}): up to 63 letters, digits, '-', '_' "
                                     "or '.', starting and ending with a letter or digit")
        out[k] = val
    return out


def _object_name(what: str):
    """click callback: a name the API would refuse (a Job's name is also a label value: DNS-1123 label)
    is refused before anything is sent."""
    def check(ctx, param, value):
        if value is not None and not is_dns1123_label(value):
            raise click.BadParameter(f"{value!r} is not a valid {what}: at most 63 lowercase letters, digits and "
                                     "'-', starting and ending with a letter or digit")
        return value
    return check


def _profile_name(ctx, param, value):
    """A LocalQueue name that is also the queue-name label's value: a DNS-1123 subdomain of <= 63 characters."""
    if not (is_dns1123_subdomain(value) and len(value) <= 63):
        raise click.BadParameter(f"{value!r} is not a valid profile name (a LocalQueue): at most 63 lowercase "
                                 "letters, digits, '-' and '.', starting and ending with a letter or digit")
    return value


# preflight and submit share these, so they check the same profile by default
_profile = click.option("--profile", default=PROFILE, show_default=True, callback=_profile_name,
                        help="queue profile (a LocalQueue)")
_namespace = click.option("--namespace", "-n", default=DEMO_NAMESPACE, show_default=True,
                          callback=_object_name("namespace name"))


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
        code, lines = run_preflight(kube_client, profile, gang, namespace, job_name=name)
    except (Unreachable, ApiError) as e:
        fail(str(e))
    for line in lines:
        click.echo(line)
    sys.exit(code)


@click.command("submit")
@kube_options()
@_profile
@click.option("--gang", default="2x8", callback=_gang_opt, show_default=True, help="PODSxGPUS")
@click.option("--name", default=None, callback=_object_name("Job name"),
              help="Job name [default: job-train-<5 hex>]")
@_namespace
@click.option("--deadline", default=None, callback=deadline_text,
              help="admission deadline, a positive duration from submission, e.g. 90s "
                   "(annotation tau-demo.io/admission-deadline)")
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
        why = refusal(namespace, name, observe.namespace_exists(kube_client, namespace),
                      observe.job_exists(kube_client, namespace, name))
        if why:
            fail(why)
        if not no_preflight:
            code, lines = run_preflight(kube_client, profile, gang, namespace, job_name=name)
            for line in lines:
                click.echo(line)
            if code:
                fail("preflight refused the job; nothing was created", code)
    except (Unreachable, ApiError) as e:
        fail(str(e))
    try:
        out = create_job(kube_client, job)
    except ApiError as e:
        fail(create_refused(e, namespace, name))
    except Unreachable as e:
        fail(str(e))
    click.echo(f"job {namespace}/{name} submitted (suspended={out['spec'].get('suspend')}, "
               f"{gang.pods} pod(s) x {gang.gpus} GPU{f', deadline {deadline}' if deadline else ''})")


@click.command("watch")
@kube_options()
@click.argument("job", callback=_object_name("Job name"))
@_namespace
@click.option("--until", type=click.Choice(["running", "finished"]), default="finished", show_default=True,
              help="exit once the pods run, or once the Job finishes")
@click.option("--timeout", default="10m", callback=duration, show_default=True)
@click.option("--grace", default=WATCH_GRACE, callback=duration, show_default=True,
              help="give up (exit 1) when the Job still does not exist after this long")
@click.option("--wait", is_flag=True, help="wait for a Job that does not exist yet (up to --timeout)")
@click.option("--events", "events_path", type=click.Path(dir_okay=False), help="append a JSON-lines event log")
def watch_cmd(kube_client, kubeconfig, job, namespace, until, timeout, grace, wait, events_path):
    """Show a Job's startup phases live: Submitted, Quota reserved, Capacity provisioning,
    Pod scheduling, Running.  Exit 0 when it runs/succeeds, 1 when it fails, times out, or does
    not exist (after --grace, unless --wait)."""
    try:
        log = EventLog(events_path) if events_path else None
    except (ValueError, OSError) as e:
        fail(f"--events {events_path}: {e}; not appending to a file that is not a tau-demo event log")

    def record(snap):
        if log is not None:
            log.record_all(snapshot_states(snap))
    try:
        if not wait and observe.namespace_exists(kube_client, namespace) is False:
            fail(f"namespace {namespace!r} does not exist, so job {namespace}/{job} does not either "
                 f"(pass --wait to wait for it)")
        with cleaning_on_interrupt("tau-demo watch", kubeconfig, kube_client.context, makes=False):
            view = follow(kube_client, namespace, job, until, timeout, on_snapshot=record,
                          appear_within=None if wait else grace)
    except JobNotFound as e:
        fail(f"{e}; list the Jobs with `kubectl get jobs -n {namespace}`, or pass --wait to wait until it "
             "is created")
    except TimeoutError as e:
        fail(str(e))
    except (Unreachable, ApiError, NotSynced) as e:
        fail(str(e))
    if view.outcome == "failed":
        fail(view.reason or "the job failed")


@click.command("report")
@click.argument("events", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="SVG (or PNG with rsvg-convert) [default: EVENTS.svg]; its directory must exist")
@click.option("--title", default=None)
def report_cmd(events, output, title):
    """Turn a scenario's JSON-lines event log into a timeline picture (one lane per object).

    Exit 1, writing nothing, when EVENTS is not an event log; 2 when the output cannot be written there."""
    out = Path(output) if output else Path(events).with_suffix(".svg")
    if not out.parent.is_dir():
        raise click.BadParameter(f"directory {str(out.parent)!r} does not exist; create it first",
                                 param_hint="'-o' / '--output'")
    if out.exists() and os.path.samefile(out, events):
        raise click.BadParameter(f"{str(out)!r} is the event log itself; choose another output",
                                 param_hint="'-o' / '--output'")
    try:
        evs = event_log.read(events)
    except (ValueError, OSError) as e:
        fail(f"{e}; {events} is not a tau-demo event log (one JSON object per line, written by "
             "`tau-demo watch --events` or a scenario run); nothing was written")
    if not evs:
        fail(f"{events} holds no events, so there is nothing to draw; nothing was written")
    try:
        svg.write(events, out, title or events)
    except (ValueError, OSError, RuntimeError) as e:
        fail(str(e))
    click.echo(str(out))
