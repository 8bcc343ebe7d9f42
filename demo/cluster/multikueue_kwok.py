"""`tau-demo cluster up --multikueue` on the kwok backend: three clusters on one machine, each its own kwokctl
control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, KWOK) with Kueue v0.19.2 as a host
process.  The demo cluster becomes the MultiKueue manager; `<name>-worker-1` and `<name>-worker-2` are its
workers, each with the demo's capacity-aware setup (the ProvisioningRequest check, its own pool table for its own
fake autoscaler).  The objects are rendered by multikueue.py (pure); this module does the I/O.

Order: the manager's control plane and Kueue, then each worker whole (as `cluster up` makes the demo cluster),
then on the manager the demo's Kueue objects with the MultiKueue check, a Secret and a MultiKueueCluster per
worker, and a wait until Kueue says every worker is connected (MultiKueueCluster Active) and the queue is Active.
`down` stops the manager first (no more dispatching), then the workers, each by pid.
"""

from __future__ import annotations

import base64
import sys
import time
from pathlib import Path

import yaml

from k8s import poll
from k8s.client import Kube
from k8s.errors import ApiError, Unreachable
from k8s.keys import MULTIKUEUE_CHECK, MULTIKUEUE_WORKERS
from k8s.paths import POOLS_FILE
from k8s.resources import ADMISSION_CHECK, MULTIKUEUE_CLUSTER
from . import install, kwok
from . import multikueue as mk
from .backend import UpOptions
from .state import ClusterError, State, state_of
from .tools import apply_docs

POOLS_NAME = "node-pools.yaml"       # a worker's own pool table, in its state directory
CONNECT_TIMEOUT = 120.0


def _say(msg: str) -> None:
    print(f"[multikueue] {msg}", file=sys.stderr, flush=True)


def worker_pools_file(st: State) -> Path:
    """The pool table of a worker's fake autoscaler (`tau-demo fake-ca --pools`)."""
    return st.dir / POOLS_NAME


def workers_of(st: State | None) -> list[State]:
    """A manager's worker clusters, as their states (those that exist)."""
    if st is None or st.role != mk.MANAGER:
        return []
    return [w for w in (State.load(n) for n in st.workers) if w is not None]


def is_manager(kubeconfig: str | None) -> bool:
    """The cluster of this kubeconfig is a MultiKueue manager that `cluster up --multikueue` made."""
    st = state_of(kubeconfig)
    return st is not None and st.role == mk.MANAGER


def check_names(name: str, multikueue: bool) -> None:
    """Refuse to turn a plain cluster into a manager or back, or to manage a worker directly (ClusterError)."""
    st = State.load(name)
    if st is not None and st.role == mk.WORKER:
        raise ClusterError(f"cluster {name} is a MultiKueue worker: it comes and goes with its manager "
                           f"(`tau-demo cluster up/down --name {name.rsplit('-worker-', 1)[0]}`)")
    if st is not None and multikueue and st.role != mk.MANAGER:
        raise ClusterError(f"cluster {name} exists without MultiKueue; run `tau-demo cluster down --name {name}` "
                           "first, then `tau-demo cluster up --multikueue`")
    if st is not None and not multikueue and st.role == mk.MANAGER:
        raise ClusterError(f"cluster {name} is a MultiKueue manager with workers {', '.join(st.workers)}: "
                           "`tau-demo cluster up --multikueue` repairs it; `tau-demo cluster down` removes all three")
    if multikueue:
        for w in mk.worker_clusters(name):
            other = State.load(w)
            if other is not None and other.role != mk.WORKER:
                raise ClusterError(f"a cluster named {w} exists that is not a worker of {name}; "
                                   f"run `tau-demo cluster down --name {w}` first")


def _embedded_kubeconfig(worker: str, st: State) -> str:
    """The worker's kubeconfig with its CA, certificate and key as data (Kueue refuses file paths)."""
    creds = mk.credentials(yaml.safe_load(Path(st.kubeconfig).read_text()))

    def data(src: tuple[str, str]) -> bytes:
        kind, value = src
        return Path(value).read_bytes() if kind == "path" else base64.b64decode(value)
    doc = mk.embedded_kubeconfig(worker, creds.server, data(creds.ca), data(creds.cert), data(creds.key))
    return yaml.safe_dump(doc, sort_keys=False)


def wait_connected(k: Kube, timeout: float = CONNECT_TIMEOUT) -> list[tuple[str, bool, str]]:
    """Wait until every worker's MultiKueueCluster is Active and the MultiKueue check is Active; the rows."""
    return poll.eventually(lambda: connection_status(k), timeout, 1.0, done=lambda rows: all(ok for _, ok, _ in rows))


def connection_status(k: Kube) -> list[tuple[str, bool, str]]:
    try:
        clusters, _ = k.list(MULTIKUEUE_CLUSTER)
        check = k.get_or_none(ADMISSION_CHECK, MULTIKUEUE_CHECK)
    except (ApiError, Unreachable) as e:
        return [("multikueue", False, f"cannot read the MultiKueue objects: {e}")]
    return mk.connection_rows(clusters, check)


def up_multikueue(name: str, options: UpOptions) -> State:
    check_names(name, True)
    t0 = time.monotonic()
    _say(f"manager {name}: control plane and Kueue")
    manager = kwok._up(name, options, role=mk.MANAGER, demo_objects=False)
    manager.workers = mk.worker_clusters(name)
    manager.save()
    pools = yaml.safe_load(POOLS_FILE.read_text())
    workers: list[State] = []
    for worker, cluster in zip(MULTIKUEUE_WORKERS, manager.workers):
        _say(f"worker {worker} (cluster {cluster}): control plane, Kueue, the demo's objects")
        st = kwok._up(cluster, UpOptions(), role=mk.WORKER)
        worker_pools_file(st).write_text(yaml.safe_dump(mk.worker_pools(pools, worker), sort_keys=False))
        workers.append(st)
    _say(f"manager {name}: the demo's Kueue objects with the MultiKueue check; a Secret and a MultiKueueCluster per worker")
    install.install_demo_objects(manager.kubeconfig, "kwok", kueue_objects=mk.manager_objects, marker=False)
    docs = []
    for worker, st in zip(MULTIKUEUE_WORKERS, workers):
        docs += [mk.worker_secret(worker, _embedded_kubeconfig(worker, st)), mk.multikueue_cluster(worker)]
    apply_docs(manager.kubeconfig, docs, "the MultiKueue Secrets and clusters")
    k = Kube(manager.kubeconfig)
    rows = wait_connected(k)
    bad = [f"{what}: {detail}" for what, ok, detail in rows if not ok]
    if bad:
        raise ClusterError("MultiKueue did not connect the workers within "
                           f"{CONNECT_TIMEOUT:.0f}s: {'; '.join(bad)} (see {kwok.kueue_log(manager)})")
    install.wait_kueue_objects(k, check=MULTIKUEUE_CHECK)
    _say(f"the three clusters are up in {time.monotonic() - t0:.1f}s; both workers connected")
    return manager


def down_multikueue(name: str) -> bool:
    """The manager, then its workers (and any worker whose manager state is gone); False if there was nothing."""
    st = State.load(name)
    names = (st.workers if st is not None and st.workers else []) or mk.worker_clusters(name)
    existed = kwok._down(name)
    for w in names:
        other = State.load(w)
        if other is not None and other.role == mk.WORKER:
            existed = kwok._down(w) or existed
    return existed


class KwokMultiKueueBackend(kwok.KwokBackend):
    """The kwok backend, which also brings a MultiKueue trio up (UpOptions.multikueue) and down (a manager's down
    takes its workers); a plain cluster is exactly kwok.KwokBackend's."""

    def check(self, name: str, options: UpOptions) -> None:
        super().check(name, options)
        check_names(name, options.multikueue)

    def up(self, name: str, options: UpOptions) -> State:
        if not options.multikueue:
            return super().up(name, options)
        self.check(name, options)
        return up_multikueue(name, options)

    def down(self, name: str) -> bool:
        st = State.load(name)
        if st is not None and st.role == mk.MANAGER:
            return down_multikueue(name)
        return super().down(name)


BACKEND = KwokMultiKueueBackend()
