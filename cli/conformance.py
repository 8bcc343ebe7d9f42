"""`tau-demo conformance`: the same probes against the fake and the real autoscaler, side by side."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import click

from k8s.pools import PoolsError, load_pools
from scenarios.conformance import probes as cf
from scenarios.conformance import fidelity
from scenarios.kit.controllers import stop_started
from scenarios.conformance.deviations import DEVIATIONS
from scenarios.kit.harness import ScenarioFailed
from scenarios.kit.runner import NoCluster, make_context

from k8s.keys import GPU
from k8s.paths import DEVIATIONS_DOC, FIDELITY_DOC, POOLS_FILE, REPO
from demo.toolchain import versions
from .interrupt import cleaning_on_interrupt
from .options import CONTEXT_SETTINGS, duration, kube_options


@click.command("conformance", context_settings=CONTEXT_SETTINGS)
@kube_options()
@click.option("--autoscaler", type=click.Choice(["fake", "real", "both"]), default="both", show_default=True,
              help="which autoscaler(s) to probe; both: the fake, then (pool reset) the real one, never together")
@click.option("--scan-interval", default=f"{cf.RunSettings().scan:g}s", callback=duration, show_default=True,
              help="both autoscalers' --scan-interval (the real one's default is 10s)")
@click.option("--probe", "only", multiple=True, type=click.Choice(cf.PROBE_NAMES), metavar="NAME",
              help="run only these probes (repeatable) [default: all short ones; see --list]")
@click.option("--long", "with_long", is_flag=True,
              help="also the long probes (a real timer with no flag: the 10-minute booking)")
@click.option("--list", "list_only", is_flag=True, help="list the probes and exit")
@click.option("--output", type=click.Path(dir_okay=False), default=str(FIDELITY_DOC.relative_to(REPO)),
              show_default=True, help="with --autoscaler both: the report written from this run")
def conformance_cmd(kube_client, kubeconfig, autoscaler, scan_interval, only, with_long, list_only, output):
    """Put the same ProvisioningRequests to the fake and to the real Cluster Autoscaler 1.36.1.

    Each probe is named after the behaviour it probes (--list).  Both autoscalers run with
    the same settings (scan interval, request backoff, node-provision time, node-group
    backoff, unneeded time; the fake's booking at the real one's 10 minutes) and the same
    node pools.  Each is started for the run and stopped after it (none may be running
    already).  Prints both timelines side by side; with both, marks every difference as a
    documented deviation (its row in docs/autoscaler.md) or undocumented, writes the report
    (--output) and exits 1 on an undocumented difference or a probe that could not run.
    """
    chosen = [p for p in cf.PROBES if p.name in only] if only else [p for p in cf.PROBES if not p.long or with_long]
    if list_only:
        for p in cf.PROBES:
            click.echo(f"{p.name:36} {'(long) ' if p.long else ''}{p.what}")
        return
    try:
        ctx = make_context(kubeconfig, kube_client.context, True)
        pools = cf.probe_pools(load_pools(POOLS_FILE))
    except (NoCluster, PoolsError) as e:
        raise click.ClickException(str(e))
    settings = dataclasses.replace(cf.RunSettings(), scan=scan_interval)
    runs = REPO / "runs" / time.strftime("%Y%m%d-%H%M%S")
    pools_file = cf.write_pools(pools, runs)
    unders = {"fake": [cf.Under("fake", settings, pools_file)],
              "real": [cf.Under("real", settings, pools_file)],
              "both": [cf.Under("fake", settings, pools_file), cf.Under("real", settings, pools_file)]}[autoscaler]
    results: dict[str, list[fidelity.Record]] = {}
    started = time.time()

    def say(line: str) -> None:
        click.echo(line, err=True)
    with cleaning_on_interrupt("tau-demo conformance", kubeconfig, kube_client.context):
        try:
            for u in unders:
                results[u.kind] = cf.run_under(ctx, u, chosen, pools, say)
        except ScenarioFailed as e:
            raise click.ClickException(str(e))
        finally:
            stop_started(ctx)
    took = time.time() - started
    fake, real = results.get("fake", []), results.get("real", [])
    real_label = cf.Under("real", settings).label
    names = [(p.name, p.what) for p in cf.PROBES]
    not_run = {p.name: ("long: run with --long" if p.long else "not chosen (--probe)") for p in cf.PROBES
               if p not in chosen}
    table = DEVIATIONS_DOC.read_text()
    diffs = fidelity.compare(fake, real, DEVIATIONS, table, cf.TIMINGS) if fake and real else []
    click.echo(fidelity.report_text([n for n in names if n[0] not in not_run], fake, real, real_label, diffs,
                                    cf.TIMINGS, cf.KNOBS, cf.UNTIMED))
    records = json.dumps({k: [r.to_dict() for r in v] for k, v in results.items()}, indent=1)
    (runs / "conformance.json").write_text(records)
    errors = [r for rs in results.values() for r in rs if r.error]
    bad = fidelity.undocumented(diffs)
    if fake and real:
        stale = fidelity.unobserved(DEVIATIONS, diffs, [p.name for p in chosen])
        command = "tau-demo conformance --autoscaler both" + (
            f" --scan-interval {scan_interval:g}s" if scan_interval != cf.RunSettings().scan else "") + (
            " --long" if with_long else "") + "".join(f" --probe {p}" for p in only)
        out = Path(output) if Path(output).is_absolute() else REPO / output
        raw = out.with_suffix(".json")             # the raw records, committed beside the report they back
        s = settings
        fake_cmd = " ".join(["tau-demo", *cf.Under("fake", settings, "<pools>").args()])
        real_cmd = " ".join(["tau-demo", *cf.Under("real", settings, "<pools>").args()])
        settings_lines = [
            f"both: scan interval {s.scan:g}s, request backoff {s.initial_backoff:g}s doubling to {s.max_backoff:g}s, "
            f"max node provision time {s.max_node_provision_time:g}s, node-group backoff {s.node_group_backoff:g}s "
            f"(max {s.max_node_group_backoff:g}s), scale-down after {s.unneeded:g}s unneeded, booking "
            f"{s.booking:g}s (the real one's hardcoded 10 minutes)",
            f"fake: `{fake_cmd}`",
            f"real: cluster-autoscaler {versions.CLUSTER_AUTOSCALER} (kwok provider) via `{real_cmd}` "
            "(other flags in demo/realca/process.py)",
            "pools (`<pools>`, written by the run): " + "; ".join(
                f"{p.name} {p.min_nodes}..{p.max_nodes} nodes of {p.allocatable.get(GPU, '0')} GPUs"
                + (", never Ready" if p.boot_seconds == cf.FOREVER else "") for p in pools)
            + " (manifests/node-pools.yaml without boot times, and a copy of the first whose nodes never boot)",
            f"run took {took:.0f}s; raw records: [{raw.name}]({raw.name})"]
        raw.write_text(records)
        out.write_text(fidelity.report_markdown(command, time.strftime("%Y-%m-%d %H:%M %Z"), settings_lines, names,
                                                fake, real, real_label, diffs, stale, cf.TIMINGS, not_run,
                                                cf.KNOBS, cf.UNTIMED))
        likeness, injected = fidelity.split(names, cf.KNOBS)
        click.echo(f"\nlikeness probes: {fidelity.tally(diffs, likeness)}; fault-injection probes (knobs only the "
                   f"fake reads): {fidelity.tally(diffs, injected)}; report {out} (run took {took:.0f}s)")
        for d in bad:
            click.echo(f"  UNDOCUMENTED {d.probe} {d.aspect}:\n    fake: {d.fake}\n    real: {d.real}")
        for d in stale:
            click.echo(f"  documented deviation {d.id} ({d.probe} {d.aspect}) was not observed")
    if errors:
        click.echo(f"{len(errors)} probe(s) could not run: " + ", ".join(f"{r.autoscaler}/{r.probe}" for r in errors))
    if bad or errors:
        sys.exit(1)
