"""Helpers shared by the controller commands."""

from __future__ import annotations

import functools
import signal
import sys
import threading

import click

from . import cluster, kube


def run_controller(controller, what: str) -> None:
    """Run controller.run(stop) until SIGINT/SIGTERM."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    controller.run(stop)
    click.echo(f"{what} stopped", err=True)


def fail(msg: str, code: int = 1):
    click.secho(f"error: {msg}", fg="red", err=True)
    sys.exit(code)


def kube_options(f):
    """--kubeconfig/--context on every command that talks to a cluster; defaults to the demo cluster."""
    @click.option("--kubeconfig", envvar="TAU_DEMO_KUBECONFIG", type=click.Path(dir_okay=False),
                  help="kubeconfig file [default: the one `tau-demo cluster up` wrote, else $KUBECONFIG]")
    @click.option("--context", help="kubeconfig context [default: current]")
    @functools.wraps(f)
    def wrapper(*args, kubeconfig=None, context=None, **kw):
        kc = kubeconfig or cluster.default_kubeconfig()
        return f(*args, kube_client=LazyKube(kc, context), kubeconfig=kc, **kw)
    return wrapper


class LazyKube:
    """Connects on first use, so commands that need no cluster (submit --dry-run) work without one.
    A kubeconfig that cannot be loaded raises kube.Unreachable at that first use."""

    def __init__(self, kubeconfig: str | None, context: str | None):
        self._args = (kubeconfig, context)
        self._k: kube.Kube | None = None

    def __getattr__(self, name):
        if self._k is None:
            self._k = kube.Kube(*self._args)
        return getattr(self._k, name)
