"""`tau-demo cluster up / down / status`."""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

import click

from demo.cluster import attach as attach_
from demo.cluster import backends
from demo.cluster.backend import UpOptions
from demo.cluster.install import webhook_answers
from demo.cluster.multikueue_kwok import connection_status, worker_pools_file, workers_of
from demo.cluster.state import DEFAULT_NAME, ClusterError, State
from k8s.client import Kube
from k8s.errors import ApiError, Unreachable
from k8s.manifests import ManifestError
from k8s.paths import REPO
from demo.toolchain import components
from demo.toolchain.components import BACKEND_NAMES
from demo.toolchain.gobuild import ToolchainError
from .interrupt import on_interrupt
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
@click.option("--bare", is_flag=True,
              help="only the control plane, the ProvisioningRequest CRD, Kueue v0.19.2 and KWOK: no demo objects, no "
                   "TauCluster (a cluster to set up as its administrator would, then `tau-demo cluster attach`)")
def cluster_up(backend: str, name: str, apiserver_port: int, multikueue: bool, bare: bool) -> None:
    """Create the cluster (idempotent: repairs what is missing) and print how to use it.

    It sets the demo's profile up through a TauCluster in Manage mode (manifests/taucluster-demo.yaml) and runs
    its controller, `tau-demo taucluster`, as a process of the cluster (`cluster down` stops it)."""
    t0 = time.monotonic()
    if bare and multikueue:
        raise click.BadParameter("a MultiKueue manager brings its own objects; give --bare or --multikueue, not both",
                                 param_hint="'--bare'")
    existing = State.load(name)
    chosen = "kwok" if multikueue and backend == "auto" and existing is None else backends.choose(backend, existing)
    impl = backends.get(chosen)
    options = UpOptions(apiserver_port=apiserver_port, multikueue=multikueue, bare=bare)
    def undo(command: str, signum: int) -> None:
        """An interrupted `cluster up` removes the cluster it was making; one that was there before it stays."""
        say = lambda line: click.echo(line, err=True)      # noqa: E731
        if existing is not None:
            say(f"\n{command}: interrupted ({signal.Signals(signum).name}); cluster {name} was there before, so it "
                "stays as it is: `tau-demo cluster up` repairs it, `tau-demo cluster down` removes it")
            return
        say(f"\n{command}: interrupted ({signal.Signals(signum).name}); removing cluster {name}, which it was making")
        try:
            removed = impl.down(name)
            say(f"  cluster {name} {'removed' if removed else 'had not been made yet: nothing to remove'}")
        except ClusterError as e:
            say(f"  could not remove it ({e}): `tau-demo cluster down{'' if name == DEFAULT_NAME else f' --name {name}'}`")
    try:
        with on_interrupt("tau-demo cluster up", undo):
            impl.check(name, options)      # cheap checks before any build
            components.ensure(impl.toolchain)
            st = impl.up(name, options)
    except (ToolchainError, ClusterError, ManifestError, Unreachable, ApiError) as e:
        fail(str(e))
    what = ("a MultiKueue manager and its two workers" if multikueue else
            "Kueue, bare (no demo objects: set it up as its administrator would, then `tau-demo cluster attach`)" if bare
            else "Kueue and the demo's profile, set up by TauCluster demo (Manage mode)")
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


@cluster_group.command("attach")
@click.option("--kubeconfig", required=True, type=click.Path(dir_okay=False),
              help="the kubeconfig of the cluster to take on (read once; a copy of the one context is kept)")
@click.option("--context", default=None, help="its context [default: the kubeconfig's current-context]")
@click.option("--mode", "mode_text", required=True, metavar="adopt|external",
              help="adopt: take over the profiles' compatible Kueue objects an administrator made (labels only); "
                   "external: write nothing but the TauCluster's status")
@click.option("--taucluster", "tc_file", type=click.Path(dir_okay=False),
              default=str(attach_.DEFAULT_TAUCLUSTER.relative_to(REPO)), show_default=True,
              callback=lambda _c, _p, v: str(REPO / v) if not Path(v).is_absolute() and (REPO / v).is_file() else v,
              help="the TauCluster to write (its profiles; --mode sets its mode)")
@click.option("--autoscaler", type=click.Choice(attach_.ATTACH_AUTOSCALERS), default="none", show_default=True,
              help="fake: let the fake autoscaler create KWOK nodes here (a KWOK cluster only; never where a real "
                   "Cluster Autoscaler makes real nodes); none: the cluster's own autoscaler answers")
@click.option("--name", default=DEFAULT_NAME, show_default=True,
              help="the name the harness knows it by (`./scenario.sh` uses tau-demo)")
@click.option("--dry-run", is_flag=True, help="say what would be written, and write nothing")
def cluster_attach(kubeconfig, context, mode_text, tc_file, autoscaler, name, dry_run) -> None:
    """Take on a cluster the harness did not build: set its profiles up through a TauCluster in Adopt or External
    mode, after saying exactly what will and will not be written.

    The cluster must already run Kueue v0.19.2 and have the ProvisioningRequest CRD (its administrator installs
    them); in these modes the profiles' Kueue objects are the administrator's too (manifests/kueue-objects.yaml).
    Exit 0 attached (each profile's readiness printed; a profile not ready is refused at submit with its reason),
    1 when the cluster cannot be attached (nothing more written).  `tau-demo cluster down` gives it back: the
    TauCluster deleted (adopted objects released as they were) and only what attach created removed."""
    try:
        mode = attach_.parse_mode(mode_text)
        _, tc, plan = attach_.look(kubeconfig, context, Path(tc_file), mode, autoscaler == "fake")
    except ClusterError as e:
        fail(str(e))
    click.echo(f"attaching {kubeconfig}{f' (context {context})' if context else ''} as cluster {name}, "
               f"{mode} mode. It will:")
    for line in plan.will:
        click.echo(f"  + {line}")
    click.echo("It will not:")
    for line in plan.wont:
        click.echo(f"  - {line}")
    if dry_run:
        click.echo("--dry-run: nothing was written")
        return
    try:
        st = attach_.attach(name, kubeconfig, context, Path(tc_file), mode, autoscaler == "fake",
                            lambda msg: click.echo(f"  {msg}"))
    except ClusterError as e:
        fail(str(e))
    for comp, ok, detail in backends.get(st.backend).status(name):
        click.echo(f"{'✓' if ok else '✗'} {comp:12} {detail}")
    runs = ("./scenario.sh runs on it" if name == DEFAULT_NAME else
            f"./scenario.sh --kubeconfig {st.kubeconfig} runs on it")
    click.echo(f"cluster {name} attached.  {runs}; `tau-demo cluster down{'' if name == DEFAULT_NAME else f' --name {name}'}` "
               "gives it back.")


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
