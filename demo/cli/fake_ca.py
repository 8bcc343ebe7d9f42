"""`tau-demo fake-ca`: run the fake Cluster Autoscaler; `tau-demo fake-ca explain`: plan offline."""

from __future__ import annotations

import logging
import random
import sys

import click

from fake_ca import lifecycle
from fake_ca.controller import FakeCA, NotADemoCluster
from fake_ca.explain import InputError, explain, read_source
from fake_ca.pools import PoolsError, load_pools

from demo.realca import exclusion

from ..k8s.errors import ApiError, Unreachable
from ..k8s.hooks import Hooks
from ..paths import POOLS_FILE, REPO
from .options import CONTEXT_SETTINGS, duration, fail, kube_options, run_controller

DEFAULT_POOLS = str(POOLS_FILE.relative_to(REPO))


def _pools(path: str):
    try:
        return load_pools(path if path != DEFAULT_POOLS else POOLS_FILE)
    except PoolsError as e:
        raise click.ClickException(str(e))


@click.group("fake-ca", invoke_without_command=True, context_settings=CONTEXT_SETTINGS)
@kube_options(impersonation=True)
@click.option("--pools", "pools_file", type=click.Path(dir_okay=False), default=DEFAULT_POOLS, show_default=True,
              help="node pool table (published to kube-system/tau-demo-node-pools for preflight)")
@click.option("--booking", default="60s", callback=duration, show_default=True,
              help="how long Provisioned capacity stays booked (real CA: 10m, hardcoded)")
@click.option("--initial-backoff", default="5s", callback=duration, show_default=True,
              help="retry delay after CapacityIsNotFound, doubling (real CA: 1m)")
@click.option("--max-backoff", default="20s", callback=duration, show_default=True, help="cap of that delay (real CA: 10m)")
@click.option("--scale-down-unneeded", default="10s", callback=duration, show_default=True,
              help="delete a node after it has been unneeded this long (real CA: 10m)")
@click.option("--expiry", default="168h", callback=duration, show_default=True,
              help="Failed/Expired when not provisioned this long after creation (real CA: 7 days)")
@click.option("--honor-valid-until/--ignore-valid-until", default=False, show_default=True,
              help="DIFFERS FROM THE REAL CA when on: parameters.ValidUntilSeconds bounds the wait with "
                   "Failed=True. The real Cluster Autoscaler ignores ValidUntilSeconds.")
@click.option("--delay", default="0s", callback=duration, show_default=True,
              help="INJECTED fault: wait this long before provisioning (per request: parameters.fakeCADelaySeconds)")
@click.option("--stockout", is_flag=True, help="INJECTED fault: never find capacity (per request: "
                                                "parameters.fakeCAStockout=true)")
@click.option("--revoke-after", default=None, callback=duration,
              help="INJECTED fault: CapacityRevoked=True this long after Provisioned, which the real CA never "
                   "writes (per request: parameters.fakeCARevokeAfterSeconds)")
@click.option("--resync", default="2s", callback=duration, show_default=True, help="periodic re-check for timers")
@click.option("--force", is_flag=True, help="run even if the cluster lacks the demo-cluster marker")
@click.option("--seed", type=int, default=None, help="seed node names (tests)")
@click.option("--hook-dir", type=click.Path(file_okay=False), default=None,
              help="tests only: pause point 'node-created' after each node of a scale-up (see demo/k8s/hooks.py)")
@click.pass_context
def fake_ca_group(ctx, kube_client, kubeconfig, pools_file, booking, initial_backoff, max_backoff,
                  scale_down_unneeded, expiry, honor_valid_until, delay, stockout, revoke_after, resync, force, seed,
                  hook_dir):
    """A fake Cluster Autoscaler that answers Kueue's ProvisioningRequests with KWOK GPU nodes.

    It behaves like the real Cluster Autoscaler's best-effort-atomic-scale-up and
    check-capacity classes (same conditions and reason strings, all-or-nothing scale-up,
    booking, backoff), at demo timescales.  Where it deliberately differs it says so:
    --honor-valid-until, truly atomic node creation (partial scale-ups are rolled back),
    and the INJECTED faults.  Run without a subcommand to start the controller.
    Least privilege: --as system:serviceaccount:tau-demo-system:fake-ca.
    """
    if ctx.invoked_subcommand is not None:
        return
    pools = _pools(pools_file)
    try:
        k = kube_client.connect()
    except Unreachable as e:
        raise click.ClickException(str(e))
    opts = lifecycle.Options(booking_seconds=booking, initial_backoff=initial_backoff, max_backoff=max_backoff,
                             expiry_seconds=expiry, honor_valid_until=honor_valid_until, delay_seconds=delay,
                             stockout=stockout, revoke_after=revoke_after)
    ca = FakeCA(k, pools, opts, scale_down_unneeded, resync, rng=random.Random(seed), hooks=Hooks(hook_dir))
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
    if honor_valid_until:
        logging.getLogger("fake-ca").warning(
            "fake-ca: --honor-valid-until is ON: ValidUntilSeconds will fail slow requests. "
            "The real Cluster Autoscaler ignores ValidUntilSeconds.")
    run_controller(ca, "fake-ca")


@fake_ca_group.command("explain", context_settings=CONTEXT_SETTINGS)
@click.option("-f", "--filename", required=True, metavar="FILE",
              help='YAML with one ProvisioningRequest and its PodTemplates ("-" for stdin)')
@click.option("--pools", "pools_file", default=DEFAULT_POOLS, show_default=True, metavar="FILE",
              help="node pools file")
def explain_cmd(filename: str, pools_file: str) -> None:
    """Explain what the fake autoscaler would do with a ProvisioningRequest, on an empty cluster.

    Prints the decision line.  Exit 0 if it fits, 2 if it does not (or its class is not
    handled), 1 on invalid input.
    """
    try:
        text, source = read_source(filename)
        pools = load_pools(pools_file if pools_file != DEFAULT_POOLS else POOLS_FILE)
        code, line = explain(text, source, pools)
    except (InputError, PoolsError) as e:
        fail(str(e))
    click.echo(line)
    sys.exit(code)
