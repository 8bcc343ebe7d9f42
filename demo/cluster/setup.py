"""The design's once-per-cluster setup, as `cluster up` (and `cluster attach`) run it: the TauCluster controller
(`tau-demo taucluster`) as a host process of the cluster, under the cluster's state directory, as its
least-privilege ServiceAccount where the cluster has it; and the wait until a TauCluster's every profile reads
ProvisioningReady=True (or a clear error with the status's reason, and the controller's log)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from k8s import poll
from k8s import taucluster as tauclusters_
from k8s.client import Kube
from k8s.errors import ApiError, Unreachable
from k8s.keys import DEMO_TAUCLUSTER, SERVICE_ACCOUNTS, TAUCLUSTER_LEASE
from k8s.objects import spec
from k8s.paths import REPO, shown
from k8s.resources import TAUCLUSTER
from . import procs
from .state import ClusterError, State

CONTROLLER = "taucluster"          # its pid and log files: <cluster state>/controllers/taucluster.{pid,log}
READY_TIMEOUT = 120.0


def controller_files(st: State) -> tuple[Path, Path]:
    d = st.dir / "controllers"
    return d / f"{TAUCLUSTER_LEASE}.pid", d / f"{TAUCLUSTER_LEASE}.log"


def controller_argv(kubeconfig: str, impersonate: bool) -> list[str]:
    """`tau-demo taucluster` against the cluster; as its ServiceAccount (manifests/rbac.yaml) when impersonating."""
    return [sys.executable, "-m", "cli", CONTROLLER, "--kubeconfig", kubeconfig,
            *(["--as", SERVICE_ACCOUNTS[CONTROLLER]] if impersonate else [])]


def start_controller(st: State, impersonate: bool = True) -> bool:
    """Start the controller unless it runs already (its pid file names a live process).  True if started."""
    pidfile, logfile = controller_files(st)
    if procs.read_pid(pidfile) is not None:
        return False
    procs.spawn(controller_argv(st.kubeconfig, impersonate), pidfile, logfile,
                env=dict(os.environ, PYTHONUNBUFFERED="1"), cwd=REPO)
    return True


def stop_controller(st: State) -> bool:
    return procs.stop(controller_files(st)[0])


def controller_row(st: State) -> tuple[str, bool, str]:
    """`cluster status`'s row for the controller."""
    pidfile, logfile = controller_files(st)
    pid = procs.read_pid(pidfile)
    return ("taucluster", pid is not None, f"pid {pid}, log {shown(logfile)}" if pid else
            f"not running (log {shown(logfile)}); `tau-demo cluster up` starts it again")


def not_ready(tc: dict | None, name: str) -> str:
    """'' when every profile of TauCluster `name` reads ProvisioningReady=True for its present spec, else what its
    status says (pure)."""
    if tc is None:
        return f"TauCluster {name} does not exist"
    out = []
    for p in spec(tc).get("profiles") or []:
        profile = p.get("name") if isinstance(p, dict) else None
        r = tauclusters_.reading(tc, str(profile), True)
        if r.stale or not r.ready:
            out.append(f"profile {profile}: " + (r.stale if r.stale else f"ProvisioningReady=False ({r.reason}): "
                                                                          f"{r.message}"))
    return "; ".join(out)


def wait_ready(k: Kube, st: State, name: str, timeout: float = READY_TIMEOUT) -> None:
    """Until TauCluster `name` reads ProvisioningReady=True for every profile; ClusterError with what it says."""
    def look() -> str:
        try:
            return not_ready(k.get_or_none(TAUCLUSTER, name), name)
        except (ApiError, Unreachable) as e:
            return f"cannot read TauCluster {name}: {e}"
    pidfile, logfile = controller_files(st)
    last = poll.eventually(look, timeout, 0.5, done=lambda said: said == "" or procs.read_pid(pidfile) is None)
    if procs.read_pid(pidfile) is None:
        tail = logfile.read_text(errors="replace")[-1500:] if logfile.exists() else ""
        raise ClusterError(f"the TauCluster controller exited (log {shown(logfile)}):\n{tail}")
    if last:
        raise ClusterError(f"TauCluster {name} is not ready after {timeout:.0f}s: {last} "
                           f"(the controller's log: {shown(logfile)})")


def set_up(st: State, name: str = DEMO_TAUCLUSTER, impersonate: bool = True, say=lambda _msg: None) -> None:
    """The controller running (started if it is not), then TauCluster `name` ready."""
    if start_controller(st, impersonate):
        say(f"started the TauCluster controller (log {shown(controller_files(st)[1])})")
    wait_ready(Kube(st.kubeconfig), st, name)
