"""`tau-demo cluster up / down / status`."""

from __future__ import annotations

import json
import sys
import time

import click

from demo.cluster import backends
from demo.cluster.backend import UpOptions
from demo.cluster.install import webhook_answers
from demo.cluster.multikueue_kwok import connection_status, worker_pools_file, workers_of
from demo.cluster.state import DEFAULT_NAME, ClusterError, State
from k8s.client import Kube
from k8s.errors import ApiError, Unreachable
from k8s.manifests import ManifestError
from demo.toolchain import components
from demo.toolchain.components import BACKEND_NAMES
from demo.toolchain.gobuild import ToolchainError
from .options import CONTEXT_SETTINGS, fail


@click.group("cluster", context_settings=CONTEXT_SETTINGS)
def cluster_group() -> None:
    """Bring the demo cluster (control plane + real Kueue + KWOK) up and down."""


@cluster_group.command("up")
@click.option("--backend", type=click.Choice(["auto", *BACKEND_NAMES]), default="auto", show_default=True,
              help="auto: kind when a Docker engine answers, else kwokctl's binary runtime")
@click.option("--name", default=DEFAULT_NAME, show_default=True)
@click.option("--apiserver-port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="kwok backend: fixed apiserver port (0 = any free port); with --multikueue, the manager's")
@click.option("--multikueue", is_flag=True,
              help="the cluster becomes a MultiKueue manager and two worker clusters NAME-worker-1 and NAME-worker-2 "
                   "are added, each with its own control plane, Kueue and pool table (kwok backend only; "
                   "docs/multikueue.md)")
def cluster_up(backend: str, name: str, apiserver_port: int, multikueue: bool) -> None:
    """Create the cluster (idempotent: repairs what is missing) and print how to use it."""
    t0 = time.monotonic()
    existing = State.load(name)
    chosen = "kwok" if multikueue and backend == "auto" and existing is None else backends.choose(backend, existing)
    impl = backends.get(chosen)
    options = UpOptions(apiserver_port=apiserver_port, multikueue=multikueue)
    try:
        impl.check(name, options)      # cheap checks before any build
        components.ensure(impl.toolchain)
        st = impl.up(name, options)
    except (ToolchainError, ClusterError, ManifestError, Unreachable, ApiError) as e:
        fail(str(e))
    what = "a MultiKueue manager and its two workers" if multikueue else "Kueue and the demo objects"
    click.echo(f"cluster {name} ({chosen}) ready in {time.monotonic() - t0:.1f}s with {what}.")
    click.echo(f"  kubeconfig: {st.kubeconfig}")
    for w in workers_of(st):
        click.echo(f"  worker:     {w.name}  kubeconfig {w.kubeconfig}")
        click.echo(f"              its autoscaler: tau-demo fake-ca --kubeconfig {w.kubeconfig} "
                   f"--pools {worker_pools_file(w)}")
    click.echo(f"  use it:     export KUBECONFIG={st.kubeconfig}   (tau-demo commands find it by themselves)")
    click.echo(f"  kubectl:    {components.bin_path('kubectl')}")
    click.echo(f"  tear down:  tau-demo cluster down{'' if name == DEFAULT_NAME else f' --name {name}'}"
               f"{'   (all three)' if multikueue else ''}")


@cluster_group.command("down")
@click.option("--name", default=DEFAULT_NAME, show_default=True)
def cluster_down(name: str) -> None:
    """Stop every process the demo started, by pid, and remove the cluster state (a MultiKueue manager's: its
    workers' too)."""
    st = State.load(name)
    t0 = time.monotonic()
    try:
        existed = backends.get(st.backend).down(name) if st else False
    except ClusterError as e:
        fail(str(e))
    click.echo(f"cluster {name} removed in {time.monotonic() - t0:.1f}s" if existed else f"no cluster {name}: nothing to do")


@cluster_group.command("status")
@click.option("--name", default=DEFAULT_NAME, show_default=True)
def cluster_status(name: str) -> None:
    """What runs, and whether Kueue's webhooks answer.  Exit 1 if anything is down."""
    st = State.load(name)
    if st is None:
        fail(f"no cluster {name}; run `tau-demo cluster up`")
    workers = workers_of(st)
    ok_all = True
    for one in [st, *workers]:
        if workers:
            click.echo(f"{one.name} (MultiKueue {one.role})")
        rows = _health(one)
        if one is st and workers:
            rows += connection_status(Kube(st.kubeconfig))
        missing = len(st.workers) - len(workers) if one is st else 0
        if missing:
            rows.append(("workers", False, f"{missing} of {len(st.workers)} worker clusters have no state"))
        ok_all &= all(ok for _, ok, _ in rows)
        for comp, ok, detail in rows:
            click.echo(f"{'  ' if workers else ''}{'✓' if ok else '✗'} {comp:24} {detail}")
        click.echo(f"{'  ' if workers else ''}kubeconfig: {one.kubeconfig}")
    if not ok_all:
        sys.exit(1)


def _health(st: State) -> list[tuple[str, bool, str]]:
    """One cluster's processes, its apiserver and a live probe of Kueue's webhooks."""
    rows = backends.get(st.backend).status(st.name)
    try:
        k = Kube(st.kubeconfig)
        ver = k.raw("/version")
        rows.append(("apiserver", True, f"{json.loads(ver)['gitVersion']} at {k.host}"))
        ok, msg = webhook_answers(k)
        rows.append(("kueue webhooks", ok, msg))
    except (Unreachable, ApiError) as e:
        rows.append(("apiserver", False, str(e)))
    return rows
