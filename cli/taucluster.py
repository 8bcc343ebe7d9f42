"""`tau-demo taucluster`: run the TauCluster controller (the design's once-per-cluster setup)."""

from __future__ import annotations

import click

from demo.taucluster.controller import RESYNC, TauClusterController
from k8s.errors import ApiError, NotFound, Unreachable
from k8s.resources import TAUCLUSTER
from .options import CONTEXT_SETTINGS, duration, kube_options, run_controller


@click.command("taucluster", context_settings=CONTEXT_SETTINGS)
@kube_options(impersonation=True)
@click.option("--resync", default=f"{RESYNC:.0f}s", callback=duration, show_default=True,
              help="look at every TauCluster again this often")
@click.option("--workers", default=2, show_default=True, type=click.IntRange(1, 16),
              help="reconcile this many TauClusters at once (never one on two workers)")
def taucluster_cmd(kube_client, kubeconfig, resync, workers):
    """TauCluster controller: sets each TauCluster's profiles up in Kueue.

    Manage: makes each profile's ResourceFlavor, ProvisioningRequestConfig, AdmissionCheck,
    ClusterQueue and LocalQueues, puts back a field someone changed, deletes them when the
    profile or the TauCluster goes, and never touches an object it did not make.  Adopt:
    takes over compatible objects an administrator made (adds its labels only) and reports
    incompatible ones with the fields that differ.  External: writes only the TauCluster's
    status.  Each profile's status says ProvisioningReady with a reason (docs/taucluster.md).
    A profile naming an object that another TauCluster holds (the one whose label it carries,
    else the oldest) is refused, reason Conflict, and writes nothing.
    """
    try:
        k = kube_client.connect()
        k.raw("/version")
        k.list(TAUCLUSTER)              # what it may do as its ServiceAccount (not read the CRD itself)
    except Unreachable as e:
        raise click.ClickException(f"cannot reach the cluster: {e}")
    except NotFound:
        raise click.ClickException(f"the TauCluster CRD ({TAUCLUSTER.crd_name}) is not installed in this cluster: "
                                   "`tau-demo cluster up` installs it on a cluster it builds, `tau-demo cluster attach` "
                                   "on one it does not (kubectl apply -f manifests/taucluster-crd.yaml does too)")
    except ApiError as e:
        raise click.ClickException(f"cannot list the TauClusters: {e}")
    run_controller(TauClusterController(k, workers=workers, resync=resync), "TauCluster controller")
