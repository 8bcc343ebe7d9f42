"""`tau-demo submit`, `preflight`, `watch`, `report`: what a researcher and a reviewer type."""

from __future__ import annotations

import copy
import secrets
import sys
import time

import click
import yaml

from . import cluster, kube, observe, phases
from .cli_util import fail, kube_options
from .deadline import DEADLINE_ANNOTATION, BadDeadline, parse_duration
from .paths import MANIFESTS
from .preflight import POOL_TABLE, Gang, GangError, check_gang, check_profile

PROVREQ_PREFIX = "provreq.kueue.x-k8s.io/"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
DELAY_ANNOTATION = "pod-complete.stage.kwok.x-k8s.io/delay"


# ---------------------------------------------------------------------------- rendering the Job

def render_job(template: dict, name: str, namespace: str, profile: str, gang: Gang, duration: str | None,
               deadline: str | None, provreq: dict[str, str]) -> dict:
    job = copy.deepcopy(template)
    md = job["metadata"]
    md.update(name=name, namespace=namespace)
    md.setdefault("labels", {})[QUEUE_LABEL] = profile
    ann = md.get("annotations") or {}
    if deadline:
        ann[DEADLINE_ANNOTATION] = deadline
    for k, v in provreq.items():
        ann[PROVREQ_PREFIX + k] = v
    md["annotations"] = ann
    spec = job["spec"]
    spec["suspend"] = True
    spec["parallelism"] = spec["completions"] = gang.pods
    pod = spec["template"]
    if duration:
        pod.setdefault("metadata", {}).setdefault("annotations", {})[DELAY_ANNOTATION] = duration
    for c in pod["spec"]["containers"]:
        c["resources"]["requests"]["nvidia.com/gpu"] = str(gang.gpus)
        c["resources"].setdefault("limits", {})["nvidia.com/gpu"] = str(gang.gpus)
    return job


def _duration_opt(ctx, param, value):
    if value is None:
        return None
    try:
        parse_duration(value)
    except BadDeadline as e:
        raise click.BadParameter(str(e)) from e
    return value


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


# ---------------------------------------------------------------------------- preflight

def run_preflight(k: kube.Kube, profile: str, gang: Gang, namespace: str) -> tuple[int, list[str]]:
    lq = k.get_or_none(kube.LOCAL_QUEUE, profile, namespace)
    cq = k.get_or_none(kube.CLUSTER_QUEUE, (lq or {}).get("spec", {}).get("clusterQueue", "")) if lq else None
    acs = {a["metadata"]["name"]: a for a in k.list(kube.ADMISSION_CHECK)[0]}
    prcs = {p["metadata"]["name"]: p for p in k.list(kube.PROVREQ_CONFIG)[0]}
    res = check_profile(profile, lq, cq, acs, prcs)
    if res.code:
        return res.code, res.lines
    lines = list(res.lines)
    cm = k.get_or_none(kube.CONFIG_MAP, POOL_TABLE[1], POOL_TABLE[0])
    if cm is None:
        return 1, lines + [f"preflight: the autoscaler has not published its pool table ({POOL_TABLE[0]}/{POOL_TABLE[1]}); "
                           "start it with `tau-demo fake-ca`"]
    from fake_ca.pools import PoolsError, pools_from_configmap
    try:
        pools = pools_from_configmap(cm)
    except PoolsError as e:
        return 1, lines + [f"preflight: the published pool table is malformed: {e}"]
    flavor_names = (res.flavor or {}).get("names") or []
    flavor = k.get_or_none(kube.RESOURCE_FLAVOR, flavor_names[0]) if flavor_names else None
    gres = check_gang(gang, pools, flavor, namespace)
    return gres.code, lines + gres.lines


@click.command("preflight")
@kube_options
@click.option("--profile", required=True, help="the queue profile (a LocalQueue), e.g. gpu-a100-8")
@click.option("--gang", required=True, callback=_gang_opt, help="PODSxGPUS, e.g. 2x8")
@click.option("--namespace", "-n", default=cluster.DEMO_NAMESPACE, show_default=True)
def preflight_cmd(kube_client, kubeconfig, profile, gang, namespace):
    """Layer 1 of the bounded wait: is the profile ProvisioningReady, and can the gang ever fit?

    Exit 0: ready and fits.  Exit 1: the profile is unknown or not ready, or the pool table
    is missing.  Exit 2: the gang can never fit the pool's max (nothing is created).
    """
    try:
        code, lines = run_preflight(kube_client, profile, gang, namespace)
    except (kube.Unreachable, kube.ApiError) as e:
        fail(str(e))
    for line in lines:
        click.echo(line)
    sys.exit(code)


# ---------------------------------------------------------------------------- submit

@click.command("submit")
@kube_options
@click.option("--profile", default="gpu-a100-8", show_default=True, help="queue profile (a LocalQueue)")
@click.option("--gang", default="2x8", callback=_gang_opt, show_default=True, help="PODSxGPUS")
@click.option("--name", default=None, help="Job name [default: job-train-<5 hex>]")
@click.option("--namespace", "-n", default=cluster.DEMO_NAMESPACE, show_default=True)
@click.option("--deadline", default=None, callback=_duration_opt,
              help="admission deadline, e.g. 90s (annotation tau-demo.io/admission-deadline)")
@click.option("--duration", default="20s", callback=_duration_opt, show_default=True,
              help="how long each pod runs once started (KWOK stage delay)")
@click.option("--provreq", "provreq", multiple=True, callback=_kv, metavar="KEY=VALUE",
              help="ProvisioningRequest parameter via Kueue's provreq.kueue.x-k8s.io/ pass-through, "
                   "e.g. ValidUntilSeconds=60 or fakeCADelaySeconds=30 (repeatable)")
@click.option("--dry-run", is_flag=True, help="print the Job YAML and create nothing")
@click.option("--no-preflight", is_flag=True, help="skip the submit-time preflight")
def submit_cmd(kube_client, kubeconfig, profile, gang, name, namespace, deadline, duration, provreq, dry_run,
               no_preflight):
    """Render and apply a GPU Job the way the design's researchers get it: suspended, queued,
    with GPU requests, the admission deadline and any provreq annotations."""
    template = cluster.load_manifest(MANIFESTS / "gpu-job.yaml")[0]
    name = name or f"job-train-{secrets.token_hex(3)[:5]}"
    job = render_job(template, name, namespace, profile, gang, duration, deadline, provreq)
    if dry_run:
        click.echo(yaml.safe_dump(job, sort_keys=False), nl=False)
        return
    try:
        if not no_preflight:
            code, lines = run_preflight(kube_client, profile, gang, namespace)
            for line in lines:
                click.echo(line)
            if code:
                fail("preflight refused the job; nothing was created", code)
        out = kube_client.create(kube.JOB, job, namespace)
    except kube.Invalid as e:
        fail(f"the cluster refused the Job: {e.message}")
    except kube.Conflict:
        fail(f"a Job named {namespace}/{name} already exists")
    except (kube.Unreachable, kube.ApiError) as e:
        fail(str(e))
    click.echo(f"job {namespace}/{name} submitted (suspended={out['spec'].get('suspend')}, "
               f"{gang.pods} pod(s) x {gang.gpus} GPU{f', deadline {deadline}' if deadline else ''})")


# ---------------------------------------------------------------------------- watch

SYMBOL = {"done": "✓", "active": "…", "failed": "✗", "pending": "·"}


def follow(k: kube.Kube, namespace: str, name: str, until: str = "finished", timeout: float = 600,
           out=None, interval: float = 0.5, event_log=None, live: bool | None = None,
           on_snapshot=None) -> phases.View:
    """Poll the Job's objects and show the phases until the job runs/finishes/fails.

    On a terminal the phase block is redrawn in place; otherwise each phase change is printed
    as one timestamped line, then the final block (that is what sample-output.txt shows)."""
    out = out or sys.stdout
    live = out.isatty() if live is None else live
    t0 = time.monotonic()
    deadline = t0 + timeout
    last_text = None
    seen: dict[str, tuple[str, str]] = {}
    shown_lines = 0
    job_uid = None
    while True:
        snap = observe.snapshot(k, namespace, name, job_uid)
        if snap.job is not None and job_uid is None:
            job_uid = snap.job["metadata"]["uid"]
        if on_snapshot:
            on_snapshot(snap)
        view = phases.derive(snap.job, snap.workload, snap.provreqs, snap.pods, snap.nodes)
        if event_log is not None:
            from .events import snapshot_states
            event_log.record_all(snapshot_states(snap.job, snap.workload, snap.provreqs, snap.pods, snap.nodes))
        done = view.outcome in ("succeeded", "failed") or (until == "running" and view.outcome == "running")
        gone = snap.job is None and job_uid is not None
        if live:
            text = view.render()
            if text != last_text:
                if shown_lines:
                    out.write(f"\x1b[{shown_lines}F\x1b[J")
                out.write(text + "\n")
                shown_lines = text.count("\n") + 1
                last_text = text
        else:
            for ph in view.phases:
                if ph.state != "pending" and seen.get(ph.name) != (ph.state, ph.detail):
                    seen[ph.name] = (ph.state, ph.detail)
                    out.write(f"  [{time.monotonic() - t0:5.1f}s] {SYMBOL[ph.state]} {ph.name:22} {ph.detail}\n")
            if done or gone:
                out.write(view.render() + "\n")
        out.flush()
        if done or gone:
            return view
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {namespace}/{name} still {view.outcome} after {timeout:.0f}s: {view.reason}")
        time.sleep(interval)


@click.command("watch")
@kube_options
@click.argument("job")
@click.option("--namespace", "-n", default=cluster.DEMO_NAMESPACE, show_default=True)
@click.option("--until", type=click.Choice(["running", "finished"]), default="finished", show_default=True,
              help="exit once the pods run, or once the Job finishes")
@click.option("--timeout", default="10m", callback=_duration_opt, show_default=True)
@click.option("--events", "events_path", type=click.Path(dir_okay=False), help="append a JSON-lines event log")
def watch_cmd(kube_client, kubeconfig, job, namespace, until, timeout, events_path):
    """Show a Job's startup phases live: Submitted, Quota reserved, Capacity provisioning,
    Pod scheduling, Running.  Exit 0 when it runs/succeeds, 1 when it fails or times out."""
    log = None
    if events_path:
        from .events import EventLog
        log = EventLog(events_path)
    try:
        view = follow(kube_client, namespace, job, until, parse_duration(timeout), event_log=log)
    except TimeoutError as e:
        fail(str(e))
    except (kube.Unreachable, kube.ApiError) as e:
        fail(str(e))
    if view.outcome == "failed":
        fail(view.reason or "the job failed")


@click.command("report")
@click.argument("events", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="SVG (or PNG with rsvg-convert) [default: EVENTS.svg]")
@click.option("--title", default=None)
def report_cmd(events, output, title):
    """Turn a scenario's JSON-lines event log into a timeline picture (one lane per object)."""
    from . import timeline
    out = output or str(events).rsplit(".", 1)[0] + ".svg"
    try:
        timeline.write(events, out, title or events)
    except (ValueError, OSError, RuntimeError) as e:
        fail(str(e))
    click.echo(out)


def register(main: click.Group) -> None:
    for c in (submit_cmd, preflight_cmd, watch_cmd, report_cmd):
        main.add_command(c)
