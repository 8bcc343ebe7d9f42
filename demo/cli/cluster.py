"""`tau-demo cluster up / down / status`."""

from __future__ import annotations

import json
import sys
import time

import click

from ..cluster import backends
from ..cluster.backend import BACKEND_NAMES, UpOptions
from ..cluster.install import webhook_answers
from ..cluster.state import DEFAULT_NAME, ClusterError, State
from ..k8s.client import Kube
from ..k8s.errors import ApiError, Unreachable
from ..k8s.manifests import ManifestError
from ..toolchain import components
from ..toolchain.gobuild import ToolchainError
from .options import CONTEXT_SETTINGS, fail


@click.group("cluster", context_settings=CONTEXT_SETTINGS)
def cluster_group() -> None:
    """Bring the demo cluster (control plane + real Kueue + KWOK) up and down."""


@cluster_group.command("up")
@click.option("--backend", type=click.Choice(["auto", *BACKEND_NAMES]), default="auto", show_default=True,
              help="auto: kind when a Docker engine answers, else kwokctl's binary runtime")
@click.option("--name", default=DEFAULT_NAME, show_default=True)
@click.option("--apiserver-port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="kwok backend: fixed apiserver port (0 = any free port)")
def cluster_up(backend: str, name: str, apiserver_port: int) -> None:
    """Create the cluster (idempotent: repairs what is missing) and print how to use it."""
    t0 = time.monotonic()
    chosen = backends.choose(backend, State.load(name))
    impl = backends.get(chosen)
    try:
        impl.check(name, UpOptions(apiserver_port=apiserver_port))      # cheap checks before any build
        components.ensure(impl.toolchain)
        st = impl.up(name, UpOptions(apiserver_port=apiserver_port))
    except (ToolchainError, ClusterError, ManifestError, Unreachable, ApiError) as e:
        fail(str(e))
    click.echo(f"cluster {name} ({chosen}) ready in {time.monotonic() - t0:.1f}s with Kueue and the demo objects.")
    click.echo(f"  kubeconfig: {st.kubeconfig}")
    click.echo(f"  use it:     export KUBECONFIG={st.kubeconfig}   (tau-demo commands find it by themselves)")
    click.echo(f"  kubectl:    {components.bin_path('kubectl')}")
    click.echo("  tear down:  tau-demo cluster down")


@cluster_group.command("down")
@click.option("--name", default=DEFAULT_NAME, show_default=True)
def cluster_down(name: str) -> None:
    """Stop every process the demo started, by pid, and remove the cluster state."""
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
    rows = backends.get(st.backend).status(name)
    ok_all = all(ok for _, ok, _ in rows)
    try:
        k = Kube(st.kubeconfig)
        ver = k.raw("/version")
        rows.append(("apiserver", True, f"{json.loads(ver)['gitVersion']} at {k.host}"))
        ok, msg = webhook_answers(k)
        rows.append(("kueue webhooks", ok, msg))
        ok_all &= ok
    except (Unreachable, ApiError) as e:
        rows.append(("apiserver", False, str(e)))
        ok_all = False
    for comp, ok, detail in rows:
        click.echo(f"{'✓' if ok else '✗'} {comp:24} {detail}")
    click.echo(f"kubeconfig: {st.kubeconfig}")
    if not ok_all:
        sys.exit(1)
