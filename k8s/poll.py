"""The one wait: call a function until its answer will do or a time has passed.

Every bounded wait of the project is one of these two: `eventually()` gives the last answer (the caller says
what a late one means: a check that fails, an error of its own), `until()` raises when no answer would do.
`clock` and `sleep` are a test's fake time, or a stop event's `wait` so that a wait ends when its caller stops.
By default a wait sleeps with `pause`, which ends every wait of every thread at once when the process is
interrupted (`cancel()`, called by the command's signal handler: cli/interrupt.py), raising Cancelled.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, TypeVar

T = TypeVar("T")


class WaitTimedOut(AssertionError):
    """No answer would do within the time given (an AssertionError: a scenario's wait is one of its checks)."""


class Cancelled(KeyboardInterrupt):
    """The process is being interrupted (Ctrl-C, SIGTERM, SIGHUP): the wait ended without an answer.  A
    KeyboardInterrupt, so that no `except Exception` takes it for a failed check and goes on, and so that where it
    reaches the command (raised by a wait in a cleanup the signal's own exception was unwinding through, or in a
    thread whose result the command reads) it is handled as the interrupt it is."""


_CANCEL = threading.Event()


def cancel() -> None:
    """End every default wait, in every thread, now and until resume(): each raises Cancelled."""
    _CANCEL.set()


def resume() -> None:
    """Waits wait again (the interrupted command's own cleanup waits for what it deletes)."""
    _CANCEL.clear()


def cancelled() -> bool:
    return _CANCEL.is_set()


def pause(seconds: float) -> None:
    """time.sleep(seconds), but Cancelled as soon as the process is interrupted (at once if it already is)."""
    if _CANCEL.wait(seconds):
        raise Cancelled("interrupted")


def eventually(ask: Callable[[], T], timeout: float, interval: float = 0.25, *, done: Callable[[T], object] = bool,
               clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], object] = pause) -> T:
    """ask() every `interval` seconds until done(its answer) (by default: the answer is truthy) or `timeout`
    seconds have passed; the last answer.  ask() is called at least once, and once more when the time is up."""
    deadline = clock() + timeout
    while True:
        got = ask()
        if done(got) or clock() >= deadline:
            return got
        sleep(interval)


def until(ask: Callable[[], T], timeout: float, what: str, interval: float = 0.25, *,
          clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], object] = pause) -> T:
    """ask()'s first truthy answer; TimedOut, naming `what` and the last answer, when none came in `timeout`."""
    got = eventually(ask, timeout, interval, clock=clock, sleep=sleep)
    if not got:
        raise WaitTimedOut(f"timed out after {timeout:.0f}s waiting for {what} (last: {got!r})")
    return got
