"""`tau-demo fake-ca`: run the fake Cluster Autoscaler; `tau-demo fake-ca explain`: plan offline."""

from __future__ import annotations

import logging
import random
import sys

import click

from fake_ca import lifecycle
from fake_ca.controller import FakeCA, NotADemoCluster
from fake_ca.explain import InputError, explain, read_source
from fake_ca.params import FOREVER
from fake_ca.pools import PoolsError, load_pools

from demo.realca import exclusion

from ..k8s.errors import ApiError, Unreachable
from ..k8s.hooks import Hooks
from ..k8s.keys import NEVER_BOOTS
from .options import CONTEXT_SETTINGS, duration, duration_or, fail, kube_options, pools_option, run_controller

def _pools(path):
    try:
        return load_pools(path)
    except PoolsError as e:
        raise click.ClickException(str(e))


@click.group("fake-ca", invoke_without_command=True, context_settings=CONTEXT_SETTINGS)
@kube_options(impersonation=True)
@pools_option("node pool table (published to kube-system/tau-demo-node-pools for preflight)")
@click.option("--scan-interval", default="1s", callback=duration, show_default=True,
              help="loops run this far apart when the last one processed no request (real CA: 10s)")
@click.option("--booking", default="60s", callback=duration, show_default=True,
              help="how long Provisioned capacity stays booked (real CA: 10m, hardcoded)")
@click.option("--initial-backoff", default="5s", callback=duration, show_default=True,
              help="retry time of a request after CapacityIsNotFound, doubling at each retry "
                   "(real CA: 1m, --provisioning-request-initial-backoff-time)")
@click.option("--max-backoff", default="20s", callback=duration, show_default=True,
              help="cap of that retry time (real CA: 10m, --provisioning-request-max-backoff-time)")
@click.option("--max-node-provision-time", "max_provision", default="20s", callback=duration, show_default=True,
              help="nodes not Ready this long after creation are removed and their pool backs off (real CA: 15m)")
@click.option("--initial-node-group-backoff", "group_backoff", default="60s", callback=duration, show_default=True,
              help="a pool whose scale-up failed takes no scale-ups this long, doubling per failure "
                   "(real CA: 5m, --initial-node-group-backoff-duration)")
@click.option("--max-node-group-backoff", "max_group_backoff", default="300s", callback=duration,
              show_default=True, help="cap of that backoff (real CA: 30m, --max-node-group-backoff-duration)")
@click.option("--scale-down-unneeded", default="10s", callback=duration, show_default=True,
              help="delete a node after it has been unneeded this long (real CA: 10m)")
@click.option("--expiry", default="168h", callback=duration, show_default=True,
              help="Failed/Expired when not provisioned this long after creation (real CA: 7 days)")
@click.option("--boot", default=None, callback=duration_or(NEVER_BOOTS, FOREVER),
              help="how long every new node stays NotReady while its VM boots, or 'never' [default: the pool's "
                   "bootSeconds] (per request: parameters.fakeCABootSeconds).  The kwok provider's nodes are Ready "
                   "at once; a real cloud's VMs boot after Provisioned=True")
@click.option("--honor-valid-until/--ignore-valid-until", default=False, show_default=True,
              help="DIFFERS FROM THE REAL CA when on: parameters.ValidUntilSeconds bounds the wait with "
                   "Failed=True. The real Cluster Autoscaler ignores ValidUntilSeconds.")
@click.option("--stockout", default=None, callback=duration_or("forever", FOREVER), metavar="DURATION|forever",
              help="INJECTED fault: the cloud refuses scale-ups of requests younger than DURATION: "
                   "CapacityIsNotFound, retried (a real IncreaseSize error would also back the pool off) "
                   "(per request: parameters.fakeCAStockout=true|SECONDS)")
@click.option("--revoke-after", default=None, callback=duration,
              help="INJECTED fault: CapacityRevoked=True this long after Provisioned, which the real CA never "
                   "writes (per request: parameters.fakeCARevokeAfterSeconds)")
@click.option("--force", is_flag=True, help="run even if the cluster lacks the demo-cluster marker")
@click.option("--seed", type=int, default=None, help="seed node names (tests)")
@click.option("--hook-dir", type=click.Path(file_okay=False), default=None,
              help="tests only: pause points 'node-created' (after each node) and 'nodes-created' (after all, "
                   "before Provisioned is written) of a scale-up (see demo/k8s/hooks.py)")
@click.pass_context
def fake_ca_group(ctx, kube_client, kubeconfig, pools_file, scan_interval, booking, initial_backoff, max_backoff,
                  max_provision, group_backoff, max_group_backoff, scale_down_unneeded, expiry, boot,
                  honor_valid_until, stockout, revoke_after, force, seed, hook_dir):
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
    opts = lifecycle.Options(scan_interval=scan_interval, booking_seconds=booking, initial_backoff=initial_backoff,
                             max_backoff=max_backoff, expiry_seconds=expiry, max_node_provision_seconds=max_provision,
                             initial_group_backoff=group_backoff, max_group_backoff=max_group_backoff,
                             honor_valid_until=honor_valid_until, boot_seconds=boot, stockout_seconds=stockout,
                             revoke_after=revoke_after)
    ca = FakeCA(k, pools, opts, scale_down_unneeded, rng=random.Random(seed), hooks=Hooks(hook_dir))
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
