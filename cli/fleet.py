"""`tau-demo fleet`: the design at fleet scale (fleet/): run a fleet, remove what one left, draw runs side by side."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from fleet import report
from fleet.checks import Verdict
from fleet.run import Fleet, FleetRefused, clean, left_behind, measure_again
from fleet.spec import ARRIVALS, FleetError, FleetSpec, as_run, parse_shapes, plan, summary
from k8s import poll
from k8s.errors import ApiError, Unreachable
from k8s.paths import FLEET_RUNS, shown
from .interrupt import on_interrupt
from .options import CONTEXT_SETTINGS, duration, fail, kube_options

FLEET_TIMEOUT = "30m"


@click.group("fleet", context_settings=CONTEXT_SETTINGS)
def fleet_group():
    """The design at fleet scale: many gang Jobs through ProvisioningRequests, measured from the objects."""


def _spec(gangs, shapes, queues, pools, arrival, rate, boot, stockout, pool_max, gpu_quota, run_s, deadline, seed):
    try:
        return FleetSpec(gangs=gangs, shapes=parse_shapes(shapes), queues=queues, pools=pools, arrival=arrival,
                         rate=rate, boot=boot, stockout=tuple(stockout), pool_max=pool_max, gpu_quota=gpu_quota,
                         run=run_s, deadline=deadline or None, seed=seed)
    except FleetError as e:
        raise click.BadParameter(str(e)) from None


@fleet_group.command("run", context_settings=CONTEXT_SETTINGS)
@kube_options()
@click.option("--gangs", default=20, show_default=True, help="how many gang Jobs")
@click.option("--shapes", default="1x8:1,2x8:2,4x8:1", show_default=True,
              help="the gangs' shapes PODSxGPUS with a weight each")
@click.option("--queues", default=2, show_default=True, help="ClusterQueues in the fleet's cohort (one profile each)")
@click.option("--pools", default=2, show_default=True, help="node pools of 8-GPU nodes; queue q draws on pool q mod P")
@click.option("--arrival", type=click.Choice(ARRIVALS), default="burst", show_default=True,
              help="all gangs at once, or a Poisson stream of --rate gangs a second")
@click.option("--rate", default=2.0, show_default=True, help="gangs a second of a Poisson stream")
@click.option("--boot", default="15s", callback=duration, show_default=True,
              help="how long a new node boots (the fake autoscaler's; the real one's kwok nodes are Ready at once)")
@click.option("--stockout", type=int, multiple=True,
              help="a pool (by number) out of stock: its maxNodes is 0, so every scale-up on it is refused "
                   "(repeatable)")
@click.option("--pool-max", type=int, default=None,
              help="every pool's maxNodes [default: what the gangs routed to it need at once]")
@click.option("--gpu-quota", type=int, default=None,
              help="every queue's GPU quota [default: what the gangs routed to it need at once]")
@click.option("--run", "run_s", default="20s", callback=duration, show_default=True,
              help="how long each pod runs once started")
@click.option("--deadline", default="300s", callback=duration, show_default=True,
              help="each Job's admission deadline (0: none)")
@click.option("--seed", default=1, show_default=True, help="the seed of the shapes, queues and arrivals")
@click.option("--autoscaler", type=click.Choice(["fake", "real"]), default="fake", show_default=True,
              help="the fake autoscaler, or the real Cluster Autoscaler 1.36.1 (`tau-demo toolchain ensure "
                   "--with-real-ca`)")
@click.option("--deadline-rule", type=click.Choice(["taken-up", "submitted"]), default="taken-up", show_default=True,
              help="the deadline controller's rule: count each deadline from when an autoscaler took the gang's "
                   "request up (bounded after submission), or from submission (the old rule)")
@click.option("--autoscaler-flag", multiple=True, metavar="FLAG",
              help="an extra flag for the autoscaler (repeatable): the fake's own, or the real Cluster Autoscaler's "
                   "(e.g. --autoscaler-flag=--kube-client-qps=1000)")
@click.option("--deadline-flag", multiple=True, metavar="FLAG",
              help="an extra flag for the fleet's deadline controller (repeatable), e.g. --max-wait-factor=2")
@click.option("--timeout", default=FLEET_TIMEOUT, callback=duration, show_default=True,
              help="how long to wait for every gang to end")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="where the run's event log, results.json and report.svg go [default: runs/fleet/<time>-<autoscaler>, which `tau-demo ui` shows at /fleet]")
@click.option("--no-check", is_flag=True,
              help="the same fleet without the ProvisioningRequest check: its ClusterQueues admit at quota, no "
                   "autoscaler, no node, nothing runs; ends when every gang is admitted (the baseline of Kueue's "
                   "admission throughput, `fleet report` gives the ratio)")
@click.option("--plan-only", is_flag=True, help="print the fleet and why it would be refused; make nothing")
def fleet_run_cmd(kube_client, kubeconfig, gangs, shapes, queues, pools, arrival, rate, boot, stockout, pool_max, gpu_quota,
            run_s, deadline, seed, autoscaler, deadline_rule, autoscaler_flag, deadline_flag, timeout, out, no_check, plan_only):
    """Run a fleet: its namespace `fleet`, a TauCluster `fleet` with a profile per queue (one cohort), an autoscaler
    with the fleet's pools and a deadline controller of its own; submit every gang on its schedule, record every
    change of their objects, wait until each succeeded or timed out, measure (phases p50/p95/p99, drain rate, start
    skew, deadline firings by cause, control-plane cost), check the design's invariants over the whole run, then
    remove everything it made.  Ctrl-C or SIGTERM removes it too.  Exit 0 when every check passed, 1 when one
    failed, 2 when the fleet was refused before anything was made."""
    try:
        p = plan(_spec(gangs, shapes, queues, pools, arrival, rate, boot, stockout, pool_max, gpu_quota, run_s,
                       deadline, seed))
    except FleetError as e:
        raise click.UsageError(str(e)) from None
    for line in summary(p, autoscaler):
        click.echo(line)
    if p.refused:
        fail("the fleet cannot run, so nothing was made:\n" + "\n".join(f"  - {r}" for r in p.refused), 2)
    if plan_only:
        return
    label = "no-check" if no_check else f"{autoscaler}-{deadline_rule}"
    out_dir = Path(out) if out else FLEET_RUNS / f"{time.strftime('%Y%m%d-%H%M%S')}-{label}"
    try:
        f = Fleet(kube_client.connect(), kubeconfig, p, autoscaler, out_dir, say=click.echo,
                  deadline_flags=("--rule", deadline_rule, *deadline_flag), autoscaler_flags=tuple(autoscaler_flag),
                  check=not no_check)
        f.refuse()
    except FleetRefused as e:
        fail(f"the fleet cannot start on this cluster, so nothing was made:\n{e}", 2)
    except (Unreachable, ApiError) as e:
        fail(f"the cluster does not answer ({e}), so nothing was made; `tau-demo cluster up` starts one")

    def undo(command: str, signum: int) -> None:
        click.echo(f"\n{command}: interrupted; removing everything the run made (Ctrl-C again abandons this)", err=True)
        left = f.cleanup()
        click.echo(f"  left behind: {', '.join(left) or 'nothing'}", err=True)

    with on_interrupt("tau-demo fleet run", undo, cleans="tau-demo fleet clean"):
        try:
            f.start()
            f.submit_all()
            unfinished = f.wait_done(timeout)
            m, verdicts = f.finish(unfinished)
        except (FleetRefused, poll.WaitTimedOut, Unreachable, ApiError) as e:
            try:
                left = ", ".join(f.cleanup()) or "nothing"
            except (Unreachable, ApiError, poll.WaitTimedOut) as again:
                left = f"unknown, the cleanup failed too ({again}): `tau-demo fleet clean` removes what is left"
            fail(f"the fleet run stopped: {e}\n  left behind: {left}")
        click.echo("  removing everything the run made")
        left = f.cleanup()
    verdicts.append(Verdict("nothing is left at the end", not left, f"left: {', '.join(left) or 'nothing'}"))
    for line in report.lines("without the check" if no_check else f"{autoscaler} autoscaler", m, verdicts):
        click.echo(line)
    click.echo(f"  event log, results and picture: {shown(out_dir)}")
    sys.exit(0 if all(v.ok for v in verdicts) else 1)


@fleet_group.command("clean", context_settings=CONTEXT_SETTINGS)
@kube_options()
def fleet_clean_cmd(kube_client, kubeconfig):
    """Remove what a fleet run left (an interrupted or killed one): its controllers, namespace, TauCluster and the
    nodes of its pools.  Exit 0 when nothing is left."""
    try:
        k = kube_client.connect()
        with on_interrupt("tau-demo fleet clean", None):
            clean(k, say=click.echo)
        left = left_behind(k)
    except (Unreachable, ApiError, poll.WaitTimedOut) as e:
        fail(f"tau-demo fleet clean: {e}")
    click.echo(f"left behind: {', '.join(left) or 'nothing'}")
    sys.exit(1 if left else 0)


@fleet_group.command("report", context_settings=CONTEXT_SETTINGS)
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="the picture [default: beside the first]")
def fleet_report_cmd(runs, out):
    """Draw fleet runs side by side (each a directory `fleet run` wrote): one SVG and a markdown table."""
    loaded = []
    for d in runs:
        try:
            m = json.loads((Path(d) / "results.json").read_text())
        except (OSError, ValueError) as e:
            fail(f"{d}: no readable results.json ({e})")
        loaded.append((f"{m.get('autoscaler', '?')} {Path(d).name}", m))
    target = Path(out) if out else Path(runs[0]) / "side-by-side.svg"
    target.write_text(report.svg(loaded, "Fleet runs side by side"))
    for line in report.table(loaded):
        click.echo(line)
    for line in report.throughput_ratios(loaded):
        click.echo(line)
    click.echo(f"picture: {shown(target)}")


@fleet_group.command("pace", context_settings=CONTEXT_SETTINGS)
@click.argument("pairs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
def fleet_pace_cmd(pairs):
    """The fake against the real autoscaler at the same loads: PAIRS are run directories, a real one then a fake one
    of the same fleet, pair after pair.  Prints the drain rate and the time to Provisioned (p50, p95) of each and the
    fake's ratio to the real one's, one row per fleet size (several pairs of one size: the medians over its runs, and
    each autoscaler's own range); exit 1 when one is off by more than 25%."""
    if len(pairs) % 2:
        fail("give the runs in pairs: a real one, then a fake one of the same fleet")
    loaded = []
    for real_dir, fake_dir in zip(pairs[::2], pairs[1::2]):
        real, fake = (json.loads((Path(d) / "results.json").read_text()) for d in (real_dir, fake_dir))
        if (real.get("autoscaler"), fake.get("autoscaler")) != ("real", "fake"):
            fail(f"{real_dir} and {fake_dir}: not a real and a fake run")
        if as_run(real["spec"], "real") != as_run(fake["spec"], "fake"):
            fail(f"{real_dir} and {fake_dir}: not runs of the same fleet (the real autoscaler's nodes are Ready at "
                 "once: its fake is run with --boot 0s)")
        loaded.append((real["gangs"], real, fake))
    rows = report.pace_rows(loaded)
    for line in rows + report.pace_spread(loaded):
        click.echo(line)
    sys.exit(0 if all(r.endswith("| yes |") for r in rows[2:]) else 1)


@fleet_group.command("measure", context_settings=CONTEXT_SETTINGS)
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
def fleet_measure_cmd(run_dir):
    """Measure a fleet run again from its event log, with this code, without a cluster: its phases, drain, skew,
    deadline firings and invariants (a run's directory as `fleet run` wrote it).  Exit 1 when a check fails."""
    try:
        m, verdicts = measure_again(Path(run_dir))
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail(f"{run_dir}: not a fleet run's directory ({type(e).__name__}: {e})")
    for line in report.lines(f"{m.get('autoscaler', '?')} autoscaler", m, verdicts):
        click.echo(line)
    sys.exit(0 if all(v.ok for v in verdicts) else 1)
