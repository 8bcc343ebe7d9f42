"""A tiny controller runtime: informers feed a keyed work queue with delayed requeues.

Controllers are small loops: observe (informer events enqueue keys) → decide (a pure
function) → apply (demo.k8s.client).  The queue de-duplicates keys, honours "check again after N
seconds", and a periodic resync re-enqueues every known key so timers survive missed events.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from typing import Callable, Iterable

from .client import Kube, informer
from .errors import Unreachable
from .objects import name_of
from .resources import Resource

log = logging.getLogger(__name__)


class WorkQueue:
    def __init__(self):
        self._cv = threading.Condition()
        self._ready: list[str] = []
        self._queued: set[str] = set()
        self._timers: list[tuple[float, str]] = []

    def add(self, key: str, after: float = 0.0) -> None:
        with self._cv:
            if after > 0:
                heapq.heappush(self._timers, (time.monotonic() + after, key))
            elif key not in self._queued:
                self._queued.add(key)
                self._ready.append(key)
            self._cv.notify()

    def get(self, stop: threading.Event, max_wait: float = 0.5) -> str | None:
        with self._cv:
            while not stop.is_set():
                now = time.monotonic()
                while self._timers and self._timers[0][0] <= now:
                    _, key = heapq.heappop(self._timers)
                    if key not in self._queued:
                        self._queued.add(key)
                        self._ready.append(key)
                if self._ready:
                    key = self._ready.pop(0)
                    self._queued.discard(key)
                    return key
                wait = max_wait
                if self._timers:
                    wait = min(wait, max(0.0, self._timers[0][0] - now))
                self._cv.wait(wait)
        return None


def start_informer(k: Kube, res: Resource, on_event: Callable[[str, dict], None],
                   stop: threading.Event, namespace: str | None = None, label_selector: str | None = None,
                   synced: threading.Event | None = None) -> threading.Thread:
    def loop():
        for typ, obj in informer(k, res, namespace, label_selector, stop=stop, timeout_seconds=50):
            if typ == "SYNCED":
                if synced:
                    synced.set()
                continue
            try:
                on_event(typ, obj)
            except Exception:   # a bad object must never kill the informer
                log.exception("handling %s %s", typ, name_of(obj))
    t = threading.Thread(target=loop, name=f"informer-{res.plural}", daemon=True)
    t.start()
    return t


def run_loop(queue: WorkQueue, reconcile: Callable[[str], float | None], stop: threading.Event,
             resync: float, keys: Callable[[], Iterable[str]]) -> None:
    """Process keys until stop is set.  reconcile returns seconds until the key wants another look."""
    next_resync = time.monotonic() + resync
    while not stop.is_set():
        if time.monotonic() >= next_resync:
            for key in keys():
                queue.add(key)
            next_resync = time.monotonic() + resync
        key = queue.get(stop, max_wait=min(0.5, resync))
        if key is None:
            continue
        try:
            after = reconcile(key)
        except Unreachable as e:
            log.warning("%s: apiserver unreachable (%s); retrying in 2s", key, e)
            after = 2.0
        except Exception:
            log.exception("%s: reconcile failed; retrying in 2s", key)
            after = 2.0
        if after is not None:
            queue.add(key, after=max(after, 0.05))


class Store:
    """An informer's cache of one resource: the objects by "namespace/name", replaced whole after
    every (re)list so that objects deleted while the watch was down do not linger."""

    def __init__(self, on_change: Callable[[str, dict], None] | None = None):
        self._items: dict[str, dict] = {}
        self._relist: dict[str, dict] | None = None
        self._lock = threading.Lock()
        self.synced = threading.Event()
        self.on_change = on_change

    def handle(self, typ: str, obj: dict) -> None:
        with self._lock:
            if typ == "SYNC":
                if self._relist is None:
                    self._relist = {}
                self._relist[name_of(obj)] = obj
                return
            if typ == "SYNCED":
                self._items, self._relist = self._relist or {}, None
                self.synced.set()
                return
            if typ == "DELETED":
                self._items.pop(name_of(obj), None)
            else:
                self._keep_newer(obj)
        if self.on_change:
            self.on_change(typ, obj)

    def _keep_newer(self, obj: dict) -> None:
        old = self._items.get(name_of(obj))
        if old is None or old["metadata"].get("uid") != obj["metadata"].get("uid") or \
                _rv(old) <= _rv(obj):
            self._items[name_of(obj)] = obj

    def put(self, obj: dict) -> None:
        """Our own write's response, which may be newer than what the watch has delivered so far."""
        with self._lock:
            self._keep_newer(obj)

    def discard(self, key: str) -> None:
        """Our own delete went through: do not wait for the watch to forget the object."""
        with self._lock:
            self._items.pop(key, None)

    def items(self) -> list[dict]:
        with self._lock:
            return list(self._items.values())

    def get(self, key: str) -> dict | None:
        with self._lock:
            return self._items.get(key)


def _rv(obj: dict) -> int:
    """resourceVersions are opaque, but etcd's are increasing integers; unreadable ones sort first."""
    try:
        return int(obj["metadata"].get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


def start_store(k: Kube, res: Resource, stop: threading.Event, store: Store,
                namespace: str | None = None) -> threading.Thread:
    def loop():
        for typ, obj in informer(k, res, namespace, stop=stop, timeout_seconds=50):
            try:
                store.handle(typ, obj)
            except Exception:   # a bad object must never kill the informer
                log.exception("handling %s %s", typ, name_of(obj))
    t = threading.Thread(target=loop, name=f"store-{res.plural}", daemon=True)
    t.start()
    return t
