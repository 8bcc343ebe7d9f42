"""What every command shares: --kubeconfig/--context (and --as), duration options, errors, controllers."""

from __future__ import annotations

import functools
import re
import signal
import sys
import threading

import click

from demo.cluster.state import default_kubeconfig
from k8s.client import Kube
from k8s.duration import BadDuration, parse_duration
from k8s.paths import POOLS_FILE, REPO

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 110}


def fail(msg: str, code: int = 1):
    click.secho(f"error: {msg}", fg="red", err=True)
    sys.exit(code)


def duration(ctx, param, value):
    """click callback: a duration option as seconds (None stays None)."""
    if value is None:
        return None
    try:
        return parse_duration(value)
    except BadDuration as e:
        raise click.BadParameter(str(e)) from e


def duration_or(word: str, meaning: float):
    """click callback factory: a duration, or `word` (e.g. "never", "forever") meaning `meaning`."""
    def callback(ctx, param, value):
        if value is not None and value.strip().lower() == word:
            return meaning
        return duration(ctx, param, value)
    return callback


DEFAULT_POOLS = str(POOLS_FILE.relative_to(REPO))


def pools_option(help: str):
    """--pools FILE [default: manifests/node-pools.yaml]; the command gets the path to read."""
    def resolve(ctx, param, value):
        return POOLS_FILE if value == DEFAULT_POOLS else value
    return click.option("--pools", "pools_file", type=click.Path(dir_okay=False), default=DEFAULT_POOLS,
                        show_default=True, callback=resolve, help=help)


def duration_text(ctx, param, value):
    """click callback: validate a duration but keep its text (it is written into an annotation)."""
    if value is not None:
        duration(ctx, param, value)
    return value


def deadline_text(ctx, param, value):
    """click callback: an admission deadline, a positive duration counted from submission (text kept)."""
    if value is None:
        return None
    t = value.strip()
    if t.startswith("-"):
        raise click.BadParameter(f"{value!r} is negative: a deadline in the past would time the job out before "
                                 "it is submitted; give a positive duration such as 90s")
    if re.fullmatch(r"\d{4}-\d\d-\d\d([T ].*)?", t):
        raise click.BadParameter(f"{value!r} is a time; the admission deadline is a duration counted from "
                                 "submission, such as 90s or 5m")
    seconds = duration(ctx, param, value)
    if seconds <= 0:
        raise click.BadParameter(f"{value!r} is a deadline that has already passed: the job would time out before "
                                 "Kueue could admit it; give a positive duration such as 90s")
    return value


def kube_options(impersonation: bool = False):
    """--kubeconfig/--context on every command that talks to a cluster (default: the kubeconfig
    `tau-demo cluster up` wrote, else $KUBECONFIG); with impersonation, also --as.
    The command receives kube_client (a LazyKube) and kubeconfig (the path, or None)."""
    def decorate(f):
        @click.option("--kubeconfig", envvar="TAU_DEMO_KUBECONFIG", type=click.Path(dir_okay=False),
                      help="kubeconfig file [default: the one `tau-demo cluster up` wrote, else $KUBECONFIG]")
        @click.option("--context", help="kubeconfig context [default: current]")
        @functools.wraps(f)
        def wrapper(*args, kubeconfig=None, context=None, as_user=None, **kw):
            kc = kubeconfig or default_kubeconfig()
            return f(*args, kube_client=LazyKube(kc, context, as_user), kubeconfig=kc, **kw)
        if impersonation:
            wrapper = click.option("--as", "as_user", default=None,
                                   help="impersonate this identity, e.g. a controller's ServiceAccount "
                                        "(least-privilege check)")(wrapper)
        return wrapper
    return decorate


class LazyKube:
    """Connects on first use, so commands that need no cluster (submit --dry-run) work without one.
    A kubeconfig that cannot be loaded raises Unreachable at that first use."""

    def __init__(self, kubeconfig: str | None, context: str | None, impersonate: str | None = None):
        self.kubeconfig, self.context, self.impersonate = kubeconfig, context, impersonate
        self._k: Kube | None = None

    def connect(self) -> Kube:
        if self._k is None:
            self._k = Kube(self.kubeconfig, self.context, impersonate=self.impersonate)
        return self._k

    def __getattr__(self, name):
        return getattr(self.connect(), name)


def run_controller(controller, what: str) -> None:
    """Run controller.run(stop) until SIGINT, SIGTERM or SIGHUP (a closed terminal)."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.set())
    controller.run(stop)
    click.echo(f"{what} stopped", err=True)
