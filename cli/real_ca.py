"""`tau-demo real-ca`: run the real cluster-autoscaler 1.36.1 (kwok provider) against the demo cluster."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import click

from demo.realca.process import RealCA, RealCAError, Settings, kubeconfig_target

from demo.cluster.state import State
from k8s.errors import ApiError, Unreachable
from demo.toolchain.components import CLUSTER_AUTOSCALER_BINARY
from k8s.pools import PoolsError, load_pools

from k8s.paths import state_root
from .options import CONTEXT_SETTINGS, duration, kube_options, pools_option



def default_log() -> Path:
    st = State.load()
    return (st.dir if st else state_root()) / "real-ca" / "cluster-autoscaler.log"


@click.command("real-ca", context_settings=CONTEXT_SETTINGS)
@kube_options()
@pools_option("node pools file: the kwok provider's node groups and the published pool table come from it")
@click.option("--scan-interval", default="10s", callback=duration, show_default=True,
              help="the CA's --scan-interval (upstream default 10s; a new ProvisioningRequest waits for the next loop)")
@click.option("--scale-down-unneeded-time", default="20s", callback=duration, show_default=True,
              help="the CA's --scale-down-unneeded-time and --scale-down-delay-after-add (upstream 10m)")
@click.option("--max-node-provision-time", default="120s", callback=duration, show_default=True,
              help="the CA's --max-node-provision-time and --max-node-startup-time (upstream 15m each)")
@click.option("--ready-timeout", default="120s", callback=duration, show_default=True,
              help="give up when the CA has run no main loop this long after start")
@click.option("--v", "verbosity", type=click.IntRange(0, 10), default=2, show_default=True, help="the CA's klog level")
@click.option("--binary", type=click.Path(dir_okay=False), default=None,
              help="cluster-autoscaler binary [default: the one `toolchain ensure --with-real-ca` built]")
@click.option("--log", "log_file", type=click.Path(dir_okay=False), default=None,
              help="the CA's own log [default: <state>/real-ca/cluster-autoscaler.log]")
@click.argument("ca_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- CA_FLAG...]")
def real_ca_cmd(kube_client, kubeconfig, pools_file, scan_interval, scale_down_unneeded_time,
                max_node_provision_time, ready_timeout, verbosity, binary, log_file, ca_args):
    """Run the real Cluster Autoscaler 1.36.1 (kwok cloud provider) out of cluster against the demo cluster.

    Its node groups are the pools of the node pools file (same labels, taints, capacity,
    min/max as the fake's nodes); it answers Kueue's ProvisioningRequests
    (--enable-provisioning-requests) and creates and deletes KWOK nodes.  It refuses to start
    while the fake autoscaler runs (and `tau-demo fake-ca` refuses while this runs).  Ctrl-C
    stops it; its clean-up deletes its nodes.  Extra CA flags go after `--`.
    """
    try:
        pools = load_pools(pools_file)
    except PoolsError as e:
        raise click.ClickException(str(e))
    try:
        kc, _server = kubeconfig_target(kubeconfig, kube_client.context)
        k = kube_client.connect()
    except (RealCAError, Unreachable) as e:
        raise click.ClickException(str(e))
    if k.host.rstrip("/") != _server.rstrip("/"):
        raise click.ClickException(f"the kubeconfig's current context points at {_server}, but this command "
                                   f"talks to {k.host}: pass the kubeconfig whose current context is the demo cluster")
    settings = Settings(scan_interval=scan_interval, scale_down_unneeded_time=scale_down_unneeded_time,
                        scale_down_delay_after_add=scale_down_unneeded_time,
                        max_node_provision_time=max_node_provision_time, verbosity=verbosity,
                        extra_args=tuple(ca_args))
    ca = RealCA(k, kc, pools, settings, Path(binary) if binary else CLUSTER_AUTOSCALER_BINARY.bin_dir / "cluster-autoscaler",
                Path(log_file) if log_file else default_log())
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.set())
    try:
        ca.run(stop, ready_timeout)
    except RealCAError as e:
        raise click.ClickException(str(e))
    except (Unreachable, ApiError) as e:
        raise click.ClickException(f"cannot reach the cluster: {e}")
    click.echo("real-ca stopped", err=True)
