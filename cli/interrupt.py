"""An interrupted command leaves nothing behind: Ctrl-C (SIGINT), SIGTERM (what `timeout`, a CI cancel or
`kill` send) and SIGHUP (a closed terminal) each end every wait of the run at once (k8s/poll.cancel), stop the
controllers the run started, remove what the harness made (scenarios/kit/runner.clean) and exit 128 + the signal's
number: 130, 143, 129.  During that cleanup SIGTERM and SIGHUP are ignored and a second Ctrl-C abandons it,
saying which command removes what is left.  A signal the command was started ignoring stays ignored for its whole
run, as the Unix tools do: `nohup` ignores SIGHUP, a non-interactive shell's background job SIGINT (`cmd &` in a
script); before the command could handle it, Python ignored it already.

    with cleaning_on_interrupt("scenario run", kubeconfig, context):
        ... the command's work ...
"""

from __future__ import annotations

import contextlib
import signal
import sys
from typing import Callable, Iterator

import click

from demo.cluster.procs import INTERRUPT_SIGNALS
from k8s import poll
from scenarios.kit import runner
from scenarios.kit.controllers import stop_every_started


class Interrupted(KeyboardInterrupt):
    """A signal ended the run (a KeyboardInterrupt, so it unwinds like Ctrl-C: no `except Exception` stops it)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def exit_code(signum: int) -> int:
    """The shell's convention for a process ended by a signal: 128 + its number."""
    return 128 + signum


_received: list[int] = []          # the signals that interrupted the run, in order


def handled(dispositions: dict[int, object]) -> list[int]:
    """Of INTERRUPT_SIGNALS, those whose disposition (signal.getsignal's answer) is not SIG_IGN: the ones it
    handles.  A signal ignored when the command starts (nohup, a background job of a script) stays ignored."""
    return [s for s in INTERRUPT_SIGNALS if dispositions.get(s) != signal.SIG_IGN]


def _raise(signum, frame) -> None:
    _received.append(signum)
    poll.cancel()                     # every wait of every thread ends now; this thread unwinds from here
    raise Interrupted(signum)


@contextlib.contextmanager
def on_interrupt(command: str, undo: Callable[[str, int], None] | None, cleans: str = "") -> Iterator[None]:
    """Run the block; on SIGINT, SIGTERM or SIGHUP call undo(command, signal) (None: the command made nothing, so
    it only says it was interrupted) and exit 128 + the signal's number.  `cleans`: the command that removes what
    is left when a second Ctrl-C abandons the undo."""
    before = {s: signal.getsignal(s) for s in INTERRUPT_SIGNALS}
    _received.clear()
    for s in handled(before):
        signal.signal(s, _raise)
    try:
        yield
    except KeyboardInterrupt:         # Interrupted, or poll.Cancelled raised by a wait it unwound through
        signum = _received[0] if _received else signal.SIGINT
        if undo is not None:
            _undoing(command, signum, undo, cleans)
        else:
            click.echo(f"\n{command}: interrupted ({signal.Signals(signum).name}); it made nothing", err=True)
        sys.exit(exit_code(signum))
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def cleaning_on_interrupt(command: str, kubeconfig: str | None, context: str | None, makes: bool = True):
    """on_interrupt for a command that runs scenarios or probes: stop the controllers it started and remove what
    the harness made on the cluster (kubeconfig, context).  A command that `makes` nothing (it only reads, as
    `tau-demo watch`) only says it was interrupted."""
    return on_interrupt(command, (lambda c, s: _clean_up(c, kubeconfig, context, s)) if makes else None)


def _undoing(command: str, signum: int, undo: Callable[[str, int], None], cleans: str = "") -> None:
    """undo(), with SIGTERM and SIGHUP ignored meanwhile and a second Ctrl-C abandoning it, and every wait
    waiting again.  (A Ctrl-C ignored from the start stays ignored.)"""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    if signal.getsignal(signal.SIGINT) != signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    poll.resume()                     # the cleanup's own waits wait
    try:
        undo(command, signum)
    except KeyboardInterrupt:
        click.echo(f"  {command}: cleanup abandoned" + (f": `{cleans}` removes what is left" if cleans else ""),
                   err=True)


def _clean_up(command: str, kubeconfig: str | None, context: str | None, signum: int) -> None:
    say = lambda line: click.echo(line, err=True)      # noqa: E731
    say(f"\n{command}: interrupted ({signal.Signals(signum).name}); stopping the controllers it started and "
        "removing what the harness made (Ctrl-C again abandons this)")
    try:
        stopped = stop_every_started()
        if stopped:
            say(f"  stopped: {', '.join(stopped)}")
        ctx = runner.make_context(kubeconfig, context, True)
        removed, left = runner.clean(ctx, say=say)
        say(f"  {len(removed)} object(s) removed; left behind: {', '.join(left) if left else 'nothing'}")
    except KeyboardInterrupt:
        say(f"  cleanup abandoned: `{runner.CLEAN_COMMAND}` removes what is left")
    except Exception as e:            # a dead apiserver (NoCluster, ApiError): say so, exit as interrupted all the same
        say(f"  cleanup failed ({type(e).__name__}: {e}): `{runner.CLEAN_COMMAND}` removes what is left")
