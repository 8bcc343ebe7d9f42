"""`tau-demo conformance`: the same probes against the fake and the real autoscaler, side by side."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from fake_ca.pools import PoolsError, load_pools
from scenarios import conformance as cf
from scenarios import fidelity
from scenarios.controllers import stop_started
from scenarios.deviations import DEVIATIONS
from scenarios.harness import ScenarioFailed
from scenarios.runner import NoCluster, make_context

from ..paths import POOLS_FILE, REPO
from ..toolchain import versions
from .options import CONTEXT_SETTINGS, duration, kube_options

DEFAULT_OUTPUT = REPO / "docs" / "fidelity.md"


@click.command("conformance", context_settings=CONTEXT_SETTINGS)
@kube_options()
@click.option("--autoscaler", type=click.Choice(["fake", "real", "both"]), default="both", show_default=True,
              help="which autoscaler(s) to probe; both: the fake, then (pool reset) the real one, never together")
@click.option("--scan-interval", default="10s", callback=duration, show_default=True,
              help="the real CA's --scan-interval (its default is 10s)")
@click.option("--probe", "only", multiple=True, type=click.Choice(cf.PROBE_NAMES),
              help="run only these probes (repeatable) [default: all]")
@click.option("--output", type=click.Path(dir_okay=False), default=str(DEFAULT_OUTPUT.relative_to(REPO)),
              show_default=True, help="with --autoscaler both: the report written from this run")
@click.option("--fake-arg", "fake_args", multiple=True, help="extra flag for the fake autoscaler (repeatable)")
def conformance_cmd(kube_client, kubeconfig, autoscaler, scan_interval, only, output, fake_args):
    """Put a fixed set of ProvisioningRequests to the fake and to the real Cluster Autoscaler 1.36.1.

    Probes: a gang that fits (scale-up), a gang over the pool max, a request that fits
    capacity that already exists, two requests competing for one free node (booking), a
    missing PodTemplate, an unknown class, check-capacity that fits and one that does not.
    Each autoscaler is started for the run and stopped after it (none may be running
    already).  Prints both timelines side by side; with both, marks every difference as a
    documented deviation (its README row) or undocumented, writes the report (--output) and
    exits 1 on an undocumented difference or a probe that could not run.
    """
    try:
        ctx = make_context(kubeconfig, kube_client.context, True)
        pools = load_pools(POOLS_FILE)
    except (NoCluster, PoolsError) as e:
        raise click.ClickException(str(e))
    pool = pools[0]
    probes = [p for p in cf.PROBES if not only or p.name in only]
    unders = {"fake": [cf.Under("fake", extra_args=tuple(fake_args))],
              "real": [cf.Under("real", scan_interval)],
              "both": [cf.Under("fake", extra_args=tuple(fake_args)), cf.Under("real", scan_interval)]}[autoscaler]
    results: dict[str, list[fidelity.Record]] = {}
    started = time.time()

    def say(line: str) -> None:
        click.echo(line, err=True)
    try:
        for u in unders:
            results[u.kind] = cf.run_under(ctx, u, probes, pool, say)
    except ScenarioFailed as e:
        raise click.ClickException(str(e))
    finally:
        stop_started(ctx)
    fake, real = results.get("fake", []), results.get("real", [])
    real_label = cf.Under("real", scan_interval).label
    names = [(p.name, p.what) for p in probes]
    readme = (REPO / "README.md").read_text()
    diffs = fidelity.compare(fake, real, DEVIATIONS, readme) if fake and real else []
    click.echo(fidelity.report_text(names, fake, real, real_label, diffs))
    runs = REPO / "runs" / time.strftime("%Y%m%d-%H%M%S")
    runs.mkdir(parents=True, exist_ok=True)
    (runs / "conformance.json").write_text(json.dumps({k: [r.to_dict() for r in v] for k, v in results.items()},
                                                      indent=1))
    errors = [r for rs in results.values() for r in rs if r.error]
    bad = fidelity.undocumented(diffs)
    if fake and real:
        stale = fidelity.unobserved(DEVIATIONS, diffs, [p.name for p in probes])
        command = "tau-demo conformance --autoscaler both" + (
            f" --scan-interval {scan_interval:g}s" if scan_interval != 10 else "") + "".join(
            f" --probe {p}" for p in only)
        settings = [f"fake: `{' '.join(['tau-demo fake-ca', *fake_args])}` (its defaults otherwise)",
                    f"real: cluster-autoscaler {versions.CLUSTER_AUTOSCALER} (kwok provider) via `tau-demo real-ca "
                    f"--scan-interval {scan_interval:g}s` (other flags in demo/realca/process.py)",
                    f"pool: {pool.name}, {pool.min_nodes}..{pool.max_nodes} nodes of "
                    f"{pool.allocatable.get('nvidia.com/gpu', '?')} GPUs (manifests/node-pools.yaml)",
                    f"run took {time.time() - started:.0f}s; raw records: runs/{runs.name}/conformance.json"]
        out = Path(output) if Path(output).is_absolute() else REPO / output
        out.write_text(fidelity.report_markdown(command, time.strftime("%Y-%m-%d %H:%M %Z"), settings, names, fake,
                                                real, real_label, diffs, stale))
        click.echo(f"\n{len(diffs)} difference(s): {len(diffs) - len(bad)} documented, {len(bad)} undocumented; "
                   f"report {out}")
        for d in bad:
            click.echo(f"  UNDOCUMENTED {d.probe} {d.aspect}:\n    fake: {d.fake}\n    real: {d.real}")
        for d in stale:
            click.echo(f"  documented deviation {d.id} ({d.probe} {d.aspect}) was not observed")
    if errors:
        click.echo(f"{len(errors)} probe(s) could not run: " + ", ".join(f"{r.autoscaler}/{r.probe}" for r in errors))
    if bad or errors:
        sys.exit(1)
