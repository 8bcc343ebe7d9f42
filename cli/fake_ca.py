"""`tau-demo fake-ca`: run the fake Cluster Autoscaler; `tau-demo fake-ca explain`: plan offline."""

from __future__ import annotations

import dataclasses
import logging
import random
import sys

import click

from fake_ca import lifecycle
from fake_ca.controller import FakeCA, NotADemoCluster
from fake_ca.explain import InputError, explain, read_source
from k8s.duration import FOREVER
from k8s.pools import PoolsError, load_pools

from demo.realca import exclusion

from k8s.errors import ApiError, Unreachable
from k8s.hooks import Hooks
from k8s.duration import go_duration
from .options import CONTEXT_SETTINGS, duration, duration_or, fail, kube_options, pools_option, run_controller

def settings_options(f):
    """One flag per fake autoscaler setting, made from fake_ca.lifecycle.Options (its field's name, default, help
    and the real autoscaler's value), so flag, option and field have one name and one default."""
    for fld in reversed(dataclasses.fields(lifecycle.Options)):
        m = fld.metadata
        if not m:
            continue                                 # not a setting (no flag)
        flag = "--" + fld.name.replace("_", "-")
        real = f" (real CA: {m['real']})" if m["real"] else ""
        if isinstance(fld.default, bool):
            f = click.option(f"{flag}/--{m['off']}", fld.name, default=fld.default, show_default=True,
                             help=m["help"] + real)(f)
            continue
        callback = duration_or(m["never"], FOREVER) if m["never"] else duration
        default = None if fld.default is None else go_duration(fld.default)
        f = click.option(flag, fld.name, default=default, callback=callback, show_default=default is not None,
                         metavar=m["metavar"], help=m["help"] + real)(f)
    return f


def _pools(path):
    try:
        return load_pools(path)
    except PoolsError as e:
        raise click.ClickException(str(e))


@click.group("fake-ca", invoke_without_command=True, context_settings=CONTEXT_SETTINGS)
@kube_options(impersonation=True)
@pools_option("node pool table (published to tau-demo-system/tau-demo-node-pools for preflight)")
@settings_options
@click.option("--force", is_flag=True, help="run even if the cluster lacks the demo-cluster marker")
@click.option("--seed", type=int, default=None, help="seed node names (tests)")
@click.option("--hook-dir", type=click.Path(file_okay=False), default=None,
              help="tests only: pause points 'node-created' (after each node) and 'nodes-created' (after all, "
                   "before Provisioned is written) of a scale-up (see k8s/hooks.py)")
@click.pass_context
def fake_ca_group(ctx, kube_client, kubeconfig, pools_file, force, seed, hook_dir, **settings):
    """A fake Cluster Autoscaler that answers Kueue's ProvisioningRequests with KWOK GPU nodes.

    It behaves like the real Cluster Autoscaler 1.36.1's best-effort-atomic-scale-up and
    check-capacity classes, at demo timescales: one request per loop; Accepted, then
    Provisioned=True as soon as the nodes are requested (the nodes then boot, NotReady, for the
    pool's bootSeconds); CapacityIsNotFound with a doubling retry; node-group backoff after a
    failed scale-up; pod-sized booking.  Where it deliberately differs it says so:
    --honor-valid-until, truly atomic node creation (partial scale-ups are rolled back), and
    the INJECTED faults.  Run without a subcommand to start the controller.
    Least privilege: --as system:serviceaccount:tau-demo-system:fake-ca.
    """
    if ctx.invoked_subcommand is not None:
        return
    pools = _pools(pools_file)
    try:
        k = kube_client.connect()
    except Unreachable as e:
        raise click.ClickException(str(e))
    opts = lifecycle.Options(**settings)
    ca = FakeCA(k, pools, opts, rng=random.Random(seed), hooks=Hooks(hook_dir))
    try:
        if not force:
            ca.check_demo_cluster()
    except NotADemoCluster as e:
        raise click.ClickException(str(e))
    except (Unreachable, ApiError) as e:
        raise click.ClickException(f"cannot reach the cluster: {e}")
    try:   # never together with the real Cluster Autoscaler (`tau-demo real-ca`): see demo/realca/exclusion.py
        why = exclusion.real_running(k)
    except (Unreachable, ApiError) as e:
        raise click.ClickException(f"cannot reach the cluster: {e}")
    if why:
        raise click.ClickException(f"fake-ca: {why}")
    if opts.honor_valid_until:
        logging.getLogger("fake-ca").warning(
            "fake-ca: --honor-valid-until is ON: ValidUntilSeconds will fail slow requests. "
            "The real Cluster Autoscaler ignores ValidUntilSeconds.")
    run_controller(ca, "fake-ca")


@fake_ca_group.command("explain", context_settings=CONTEXT_SETTINGS)
@click.option("-f", "--filename", required=True, metavar="FILE",
              help='YAML with one ProvisioningRequest and its PodTemplates ("-" for stdin)')
@pools_option("node pools file")
def explain_cmd(filename: str, pools_file: str) -> None:
    """Explain what the fake autoscaler would do with a ProvisioningRequest, on an empty cluster.

    Prints the decision line.  Exit 0 if it fits, 2 if it does not (or its class is not
    handled), 1 on invalid input.
    """
    try:
        text, source = read_source(filename)
        pools = load_pools(pools_file)
        code, line = explain(text, source, pools)
    except (InputError, PoolsError) as e:
        fail(str(e))
    click.echo(line)
    sys.exit(code)
