"""`tau-demo fake-ca`: run the fake Cluster Autoscaler; `tau-demo fake-ca explain`: plan offline."""

from __future__ import annotations

import logging
import random
from pathlib import Path

import click

from demo import cluster, kube
from demo.deadline import BadDeadline, parse_duration

from . import lifecycle
from .pools import PoolsError, load_pools

DEFAULT_POOLS = Path(__file__).resolve().parent.parent / "manifests" / "node-pools.yaml"
SERVICE_ACCOUNT = "system:serviceaccount:tau-demo-system:fake-ca"


def _dur(ctx, param, value):
    if value is None:
        return None
    try:
        return parse_duration(value)
    except BadDeadline as e:
        raise click.BadParameter(str(e)) from e


@click.group("fake-ca", invoke_without_command=True)
@click.option("--kubeconfig", type=click.Path(dir_okay=False), help="[default: the demo cluster's]")
@click.option("--context")
@click.option("--pools", "pools_file", type=click.Path(dir_okay=False), default=str(DEFAULT_POOLS), show_default=True,
              help="node pool table (published to kube-system/tau-demo-node-pools for preflight)")
@click.option("--booking", default="60s", callback=_dur, show_default=True,
              help="how long Provisioned capacity stays booked (real CA: 10m, hardcoded)")
@click.option("--initial-backoff", default="5s", callback=_dur, show_default=True,
              help="retry delay after CapacityIsNotFound, doubling (real CA: 1m)")
@click.option("--max-backoff", default="20s", callback=_dur, show_default=True, help="cap of that delay (real CA: 10m)")
@click.option("--scale-down-unneeded", default="10s", callback=_dur, show_default=True,
              help="delete a node after it has been unneeded this long (real CA: 10m)")
@click.option("--expiry", default="168h", callback=_dur, show_default=True,
              help="Failed/Expired when not provisioned this long after creation (real CA: 7 days)")
@click.option("--honor-valid-until/--ignore-valid-until", default=False, show_default=True,
              help="DIFFERS FROM THE REAL CA when on: parameters.ValidUntilSeconds bounds the wait with "
                   "Failed=True. The real Cluster Autoscaler ignores ValidUntilSeconds.")
@click.option("--delay", default="0s", callback=_dur, show_default=True,
              help="INJECTED fault: wait this long before provisioning (per request: parameters.fakeCADelaySeconds)")
@click.option("--stockout", is_flag=True, help="INJECTED fault: never find capacity (per request: "
                                                "parameters.fakeCAStockout=true)")
@click.option("--revoke-after", default=None, callback=_dur,
              help="INJECTED fault: CapacityRevoked=True this long after Provisioned, which the real CA never "
                   "writes (per request: parameters.fakeCARevokeAfterSeconds)")
@click.option("--resync", default="2s", callback=_dur, show_default=True, help="periodic re-check for timers")
@click.option("--as", "as_user", default=None, help=f"impersonate, e.g. {SERVICE_ACCOUNT} (least-privilege check)")
@click.option("--force", is_flag=True, help="run even if the cluster lacks the demo-cluster marker")
@click.option("--seed", type=int, default=None, help="seed node names (tests)")
@click.option("--hook-dir", type=click.Path(file_okay=False), default=None,
              help="tests only: pause point 'node-created' after each node of a scale-up (see demo/hooks.py)")
@click.pass_context
def fake_ca_group(ctx, kubeconfig, context, pools_file, booking, initial_backoff, max_backoff, scale_down_unneeded,
                  expiry, honor_valid_until, delay, stockout, revoke_after, resync, as_user, force, seed, hook_dir):
    """A fake Cluster Autoscaler that answers Kueue's ProvisioningRequests with KWOK GPU nodes.

    It behaves like the real Cluster Autoscaler's best-effort-atomic-scale-up and
    check-capacity classes (same conditions and reason strings, all-or-nothing scale-up,
    booking, backoff), at demo timescales.  Where it deliberately differs it says so:
    --honor-valid-until, truly atomic node creation (partial scale-ups are rolled back),
    and the INJECTED faults.  Run without a subcommand to start the controller.
    """
    if ctx.invoked_subcommand is not None:
        return
    from .controller import FakeCA, NotADemoCluster
    from demo.cli_util import run_controller

    try:
        pools = load_pools(pools_file)
    except PoolsError as e:
        raise click.ClickException(str(e))
    try:
        k = kube.Kube(kubeconfig or cluster.default_kubeconfig(), context, impersonate=as_user)
    except kube.Unreachable as e:
        raise click.ClickException(str(e))
    opts = lifecycle.Options(booking_seconds=booking, initial_backoff=initial_backoff, max_backoff=max_backoff,
                             expiry_seconds=expiry, honor_valid_until=honor_valid_until, delay_seconds=delay,
                             stockout=stockout, revoke_after=revoke_after)
    from demo.hooks import Hooks
    ca = FakeCA(k, pools, opts, scale_down_unneeded, resync, rng=random.Random(seed), hooks=Hooks(hook_dir))
    try:
        if not force:
            ca.check_demo_cluster()
    except NotADemoCluster as e:
        raise click.ClickException(str(e))
    except (kube.Unreachable, kube.ApiError) as e:
        raise click.ClickException(f"cannot reach the cluster: {e}")
    if honor_valid_until:
        logging.getLogger("fake-ca").warning(
            "fake-ca: --honor-valid-until is ON: ValidUntilSeconds will fail slow requests. "
            "The real Cluster Autoscaler ignores ValidUntilSeconds.")
    run_controller(ca, "fake-ca")


def register(main: click.Group) -> None:
    from .explain import explain
    fake_ca_group.add_command(explain)
    main.add_command(fake_ca_group)
