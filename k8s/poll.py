"""The one wait: call a function until its answer will do or a time has passed.

Every bounded wait of the project is one of these two: `eventually()` gives the last answer (the caller says
what a late one means: a check that fails, an error of its own), `until()` raises when no answer would do.
`clock` and `sleep` are a test's fake time, or a stop event's `wait` so that a wait ends when its caller stops.
"""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


class WaitTimedOut(AssertionError):
    """No answer would do within the time given (an AssertionError: a scenario's wait is one of its checks)."""


def eventually(ask: Callable[[], T], timeout: float, interval: float = 0.25, *, done: Callable[[T], object] = bool,
               clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], object] = time.sleep) -> T:
    """ask() every `interval` seconds until done(its answer) (by default: the answer is truthy) or `timeout`
    seconds have passed; the last answer.  ask() is called at least once, and once more when the time is up."""
    deadline = clock() + timeout
    while True:
        got = ask()
        if done(got) or clock() >= deadline:
            return got
        sleep(interval)


def until(ask: Callable[[], T], timeout: float, what: str, interval: float = 0.25, *,
          clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], object] = time.sleep) -> T:
    """ask()'s first truthy answer; TimedOut, naming `what` and the last answer, when none came in `timeout`."""
    got = eventually(ask, timeout, interval, clock=clock, sleep=sleep)
    if not got:
        raise WaitTimedOut(f"timed out after {timeout:.0f}s waiting for {what} (last: {got!r})")
    return got
