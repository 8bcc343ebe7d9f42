"""A tiny controller runtime: informers feed a keyed work queue with delayed requeues.

Controllers are small loops: observe (informer events enqueue keys) → decide (a pure
function) → apply (k8s.client).  The queue de-duplicates keys, honours "check again after N
seconds" (timers fire on time, the earliest per key), hands a key to one worker at a time, and a
periodic resync re-enqueues every known key so timers survive missed events.  Store is an
informer's cache (optionally indexed) for controllers that decide on cached state.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections import deque
from typing import Callable, Iterable

from .client import Kube
from .errors import Unreachable
from .objects import name_of, revision, uid as uid_of
from .resources import Resource
from .watch import Event, Watch

log = logging.getLogger(__name__)


class WorkQueue:
    """Keys to reconcile, like client-go's work queue: a key waits in the queue at most once; a key
    being processed is never handed to a second worker (added meanwhile, it is handed out again when
    the first worker calls done); add(key, after) keeps only the earliest pending timer of a key.

    Two tiers: keys added with urgent=True (directly or by their timer) are handed out before all
    others, so time-critical work is not queued behind routine work.  `clock` (seconds, monotonic) says when a
    timer is due: a test's fake time."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._cv = threading.Condition()
        self._tiers: tuple[deque[str], deque[str]] = (deque(), deque())   # urgent, normal
        self._queued: dict[str, bool] = {}          # key waiting in a tier -> urgent?
        self._processing: set[str] = set()          # handed out, done() not called yet
        self._dirty: dict[str, bool] = {}           # added while processing -> urgent?; queued at done()
        self._timers: list[tuple[float, str]] = []  # heap of (due, key); entries not in _due are stale
        self._due: dict[str, tuple[float, bool]] = {}   # key -> its earliest pending timer, urgent?

    def add(self, key: str, after: float = 0.0, urgent: bool = False) -> None:
        with self._cv:
            if after > 0:
                due = self._clock() + after
                old = self._due.get(key)
                if old is not None and (old[0] < due or (old[0] == due and (old[1] or not urgent))):
                    return
                self._due[key] = (due, urgent)
                heapq.heappush(self._timers, (due, key))
                self._cv.notify()
            else:
                self._enqueue(key, urgent)

    def _enqueue(self, key: str, urgent: bool) -> None:
        if key in self._processing:
            self._dirty[key] = self._dirty.get(key, False) or urgent
        elif key not in self._queued or (urgent and not self._queued[key]):
            self._queued[key] = urgent                  # an entry left in the normal tier is now stale
            self._tiers[0 if urgent else 1].append(key)
            self._cv.notify()

    def _pop(self) -> str | None:
        for urgent, tier in zip((True, False), self._tiers):
            while tier:
                key = tier.popleft()
                if self._queued.get(key) is urgent:
                    del self._queued[key]
                    return key
        return None

    def get(self, stop: threading.Event, max_wait: float = 0.5) -> str | None:
        """The next key, urgent ones first (the caller must call done(key) when finished with it), or
        None once stop is set."""
        with self._cv:
            while not stop.is_set():
                now = self._clock()
                while self._timers and self._timers[0][0] <= now:
                    due, key = heapq.heappop(self._timers)
                    pending = self._due.get(key)
                    if pending is not None and pending[0] == due:
                        del self._due[key]
                        self._enqueue(key, pending[1])
                key = self._pop()
                if key is not None:
                    self._processing.add(key)
                    return key
                wait = max_wait
                if self._timers:
                    wait = min(wait, max(0.0, self._timers[0][0] - now))
                self._cv.wait(wait)
        return None

    def done(self, key: str) -> None:
        with self._cv:
            self._processing.discard(key)
            if key in self._dirty:
                self._enqueue(key, self._dirty.pop(key))


# a reconcile that raised an exception of its own (not the apiserver unreachable): said, with its traceback, and retried
RECONCILE_FAILED = "reconcile failed; retrying in 2s"


def run_loop(queue: WorkQueue, reconcile: Callable[[str], float | None], stop: threading.Event,
             resync: float, keys: Callable[[], Iterable[str]], workers: int = 1, min_requeue: float = 0.05) -> None:
    """Process keys with `workers` threads until stop is set; never one key on two threads at once.
    reconcile returns seconds until the key wants another look (at least min_requeue), or None."""
    def work() -> None:
        while not stop.is_set():
            key = queue.get(stop, max_wait=min(0.5, resync))
            if key is None:
                continue
            try:
                after = reconcile(key)
            except Unreachable as e:
                log.warning("%s: apiserver unreachable (%s); retrying in 2s", key, e)
                after = 2.0
            except Exception:
                log.exception("%s: %s", key, RECONCILE_FAILED)
                after = 2.0
            finally:
                queue.done(key)
            if after is not None:
                queue.add(key, after=max(after, min_requeue))

    threads = [threading.Thread(target=work, name=f"worker-{i}", daemon=True) for i in range(max(1, workers))]
    for t in threads:
        t.start()
    while not stop.wait(resync):
        for key in keys():
            queue.add(key)
    end = time.monotonic() + 5              # a worker parked at a pause point is left behind (daemon)
    for t in threads:
        t.join(max(0.0, end - time.monotonic()))


# how many deleted objects (their uids) a Store remembers, so that a late write's response cannot bring one back
GONE_KEPT = 4096


class Store:
    """An informer's cache of one resource: the objects by "namespace/name", replaced whole after
    every (re)list so that objects deleted while the watch was down do not linger.

    An object seen gone (a watch's DELETED, a relist without it, our own delete) is never put back by the response
    of a write that raced its deletion: put() refuses its uid (the last GONE_KEPT of them are remembered).

    on_change(type, obj) is called for every watch event, on_sync() after every (re)list; with
    index(obj) -> values, by_index(value) returns the objects that have that value."""

    def __init__(self, on_change: Callable[[str, dict], None] | None = None,
                 index: Callable[[dict], Iterable[str]] | None = None,
                 on_sync: Callable[[], None] | None = None):
        self._items: dict[str, dict] = {}
        self._relist: dict[str, dict] | None = None
        self._lock = threading.Lock()
        self.synced = threading.Event()
        self.on_change = on_change
        self.on_sync = on_sync
        self._index_of = index
        self._index: dict[str, set[str]] = {}
        self._gone: dict[str, None] = {}          # the uids of objects seen gone, oldest first

    def watch(self, k: Kube, res: Resource, namespace: str | None = None,
              label_selector: str | None = None) -> Watch:
        """The Watch that fills this cache (not started)."""
        return Watch(k, res, self.handle, namespace=namespace, label_selector=label_selector, listed=True,
                     on_sync=lambda: self.handle(Event.SYNCED, {}))

    def handle(self, typ: Event, obj: dict) -> None:
        with self._lock:
            if typ == Event.LISTED:
                if self._relist is None:
                    self._relist = {}
                self._relist[name_of(obj)] = obj
                return
            if typ == Event.SYNCED:
                relisted = self._relist or {}
                kept = {uid_of(o) for o in relisted.values()}
                self._went([uid_of(o) for o in self._items.values() if uid_of(o) not in kept])
                self._items, self._relist = relisted, None
                self._reindex()
                self.synced.set()
            elif typ == Event.DELETED:
                self._drop(name_of(obj))
                self._went([uid_of(obj)])
            else:
                self._keep_newer(obj)
        if typ == Event.SYNCED:
            if self.on_sync:
                self.on_sync()
        elif self.on_change:
            self.on_change(typ, obj)

    def _keep_newer(self, obj: dict) -> None:
        key = name_of(obj)
        old = self._items.get(key)
        if old is None or old["metadata"].get("uid") != obj["metadata"].get("uid") or \
                revision(old) <= revision(obj):
            if self._index_of:
                self._unindex(key, old)
                for v in self._index_of(obj):
                    self._index.setdefault(v, set()).add(key)
            self._items[key] = obj

    def _drop(self, key: str) -> None:
        self._unindex(key, self._items.pop(key, None))

    def _went(self, uids: Iterable[str]) -> None:
        for uid in uids:
            self._gone[uid] = None
        while len(self._gone) > GONE_KEPT:
            del self._gone[next(iter(self._gone))]

    def _unindex(self, key: str, old: dict | None) -> None:
        if old is None or not self._index_of:
            return
        for v in self._index_of(old):
            keys = self._index.get(v)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._index[v]

    def _reindex(self) -> None:
        self._index = {}
        if self._index_of:
            for key, obj in self._items.items():
                for v in self._index_of(obj):
                    self._index.setdefault(v, set()).add(key)

    def put(self, obj: dict) -> None:
        """Our own write's response, which may be newer than what the watch has delivered so far; never an object
        already seen gone (its write raced its deletion)."""
        with self._lock:
            if uid_of(obj) not in self._gone:
                self._keep_newer(obj)

    def discard(self, key: str) -> None:
        """Our own delete went through: do not wait for the watch to forget the object."""
        with self._lock:
            old = self._items.get(key)
            self._drop(key)
            if old is not None:
                self._went([uid_of(old)])

    def items(self) -> list[dict]:
        with self._lock:
            return list(self._items.values())

    def get(self, key: str) -> dict | None:
        with self._lock:
            return self._items.get(key)

    def by_index(self, value: str) -> list[dict]:
        with self._lock:
            return [self._items[k] for k in self._index.get(value, ())]

