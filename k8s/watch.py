"""Watching, once for every consumer: the list+watch stream (`informer`) and the background `Watch` that
runs it on a thread for the controllers' caches, the recorder, the conformance run, the scenarios' kits
and the benchmarks (like kopf's one `watching.py`).

A Watch lists, then watches and resumes; it tells its consumer every event (`on_event(type, obj)`), and,
after every (re)list, `on_sync()`.  `wait_synced()` fails loudly (NotSynced, saying why) when the initial
list did not arrive in time; `wait_for_caches()` is the controllers' form: it waits as long as it takes
and says what it waits for, so no controller decides on a cache that was never filled.
"""

from __future__ import annotations

import logging
import threading
import time
from enum import StrEnum
from typing import Callable, Iterable, Iterator

from .client import Kube
from .errors import ApiError, Gone, Unreachable
from .objects import Obj, name_of
from .resources import Resource

log = logging.getLogger(__name__)


class Event(StrEnum):
    """What a list+watch stream yields (a StrEnum: equal to the apiserver's own strings)."""
    LISTED = "SYNC"            # one object of a (re)list: the state, not a change
    SYNCED = "SYNCED"          # the (re)list is complete (object: {})
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


CHANGES = (Event.ADDED, Event.MODIFIED, Event.DELETED)


class NotSynced(RuntimeError):
    """The initial list of a watch did not arrive in time; the message says what was last seen."""


def informer(kube: Kube, res: Resource, namespace: str | None = None, label_selector: str | None = None,
             stop: threading.Event | None = None, timeout_seconds: int = 60, retry_delay: float = 1.0,
             on_error: Callable[[str], None] | None = None) -> Iterator[tuple[Event, Obj]]:
    """List, then watch forever: yields (LISTED, obj) for every object after each (re)list, then (SYNCED, {}),
    then ADDED/MODIFIED/DELETED events.  Resumes from the last resourceVersion after a normal close;
    relists after 410 Gone; retries with backoff while the apiserver is unreachable or refuses (a restarted
    apiserver answers 403 until its authorizer has caught up, 500/503 while it starts), telling on_error why."""
    rv = None
    delay = retry_delay
    while not (stop and stop.is_set()):
        try:
            if rv is None:
                items, rv = kube.list(res, namespace, label_selector)
                for item in items:
                    yield Event.LISTED, item
                yield Event.SYNCED, {}
            for typ, obj in kube.watch(res, namespace, label_selector, rv, timeout_seconds):
                rv = obj.get("metadata", {}).get("resourceVersion", rv)
                if typ in CHANGES:                  # BOOKMARK carries only a resourceVersion
                    yield Event(typ), obj
                if stop and stop.is_set():
                    return
            delay = retry_delay
        except Gone:
            log.info("watch %s: resourceVersion %s expired (410 Gone); relisting", res.plural, rv)
            rv = None
        except (Unreachable, ApiError) as e:
            if stop and stop.is_set():
                return              # stopped meanwhile (its cluster may be going away): nothing to say or retry
            log.warning("list/watch %s: %s; retrying in %.0fs", res.plural, e, delay)
            if on_error:
                on_error(str(e))
            rv = None
            if stop:
                stop.wait(delay)
            else:
                time.sleep(delay)
            delay = min(delay * 2, 15.0)


class Watch:
    """One resource, listed and watched on a thread of its own until stop().

    on_event(type, obj) gets every ADDED/MODIFIED/DELETED event and, with listed=True, every LISTED object of
    each (re)list too (a cache needs them; a recorder of changes does not).  on_sync() is called after every
    (re)list.  A handler that raises is logged and the watch goes on.  As a context manager it starts, waits
    for the initial list (NotSynced after sync_timeout) and stops on exit."""

    def __init__(self, k: Kube, res: Resource, on_event: Callable[[Event, Obj], None] | None = None, *,
                 namespace: str | None = None, label_selector: str | None = None, listed: bool = False,
                 on_sync: Callable[[], None] | None = None, timeout_seconds: int = 50, sync_timeout: float = 30.0):
        self.k, self.res, self.namespace, self.label_selector = k, res, namespace, label_selector
        self.on_event, self.on_sync, self.listed = on_event, on_sync, listed
        self.timeout_seconds, self.sync_timeout = timeout_seconds, sync_timeout
        self.synced = threading.Event()
        self.last_error = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"watch-{res.plural}", daemon=True)

    @property
    def what(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        sel = f" ({self.label_selector})" if self.label_selector else ""
        return f"{self.res.plural}{where}{sel}"

    def start(self) -> Watch:
        self._thread.start()
        return self

    def wait_synced(self, timeout: float | None = None) -> None:
        """Return once the initial list arrived; NotSynced after `timeout` seconds (default sync_timeout)."""
        timeout = self.sync_timeout if timeout is None else timeout
        if not self.synced.wait(timeout):
            raise NotSynced(f"the initial list of {self.what} did not arrive within {timeout:.0f}s"
                            + (f" (last error: {self.last_error})" if self.last_error else " (no answer)"))

    def stop(self, join: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(join)

    def __enter__(self) -> Watch:
        self.start()
        try:
            self.wait_synced()
        except NotSynced:
            self.stop(0)
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _error(self, why: str) -> None:
        self.last_error = why

    def _loop(self) -> None:
        for typ, obj in informer(self.k, self.res, self.namespace, self.label_selector, stop=self._stop,
                                 timeout_seconds=self.timeout_seconds, on_error=self._error):
            try:
                if typ is Event.SYNCED:
                    self.last_error = ""
                    if self.on_sync:
                        self.on_sync()
                    self.synced.set()
                elif self.on_event and (typ is not Event.LISTED or self.listed):
                    self.on_event(typ, obj)
            except Exception:   # a bad object or handler must never kill the watch
                log.exception("watch %s: handling %s %s", self.res.plural, typ, name_of(obj) if obj else "")


def start_synced(watches: list[Watch], timeout: float = 30.0) -> list[Watch]:
    """Start every watch and wait until each has listed once; NotSynced, with every one stopped, if one did not
    within `timeout` seconds."""
    for w in watches:
        w.start()
    try:
        for w in watches:
            w.wait_synced(timeout)
    except NotSynced:
        for w in watches:
            w.stop(0)
        raise
    return watches


def wait_for_caches(watches: Iterable[Watch], stop: threading.Event, logger: logging.Logger,
                    say_first: float = 2.0, say_every: float = 10.0) -> bool:
    """Wait until every watch has listed once, saying in the controller's logger (after `say_first` seconds, then
    every `say_every`; each line begins with the logger's name, the controller's) which are still waiting and why;
    True once all synced, False if stop was set first.  Controllers decide only after True."""
    pending = list(watches)
    started = time.monotonic()
    next_say = started + say_first
    while pending and not stop.is_set():
        pending[0].synced.wait(min(0.2, say_every))
        pending = [w for w in pending if not w.synced.is_set()]
        now = time.monotonic()
        if pending and now >= next_say:
            logger.warning("%s: waiting for caches to sync (%.0fs so far): %s; not deciding anything until then",
                           logger.name, now - started, "; ".join(f"{w.what}: {w.last_error or 'no answer yet'}"
                                                         for w in pending))
            next_say = now + say_every
    return not pending
