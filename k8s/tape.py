"""The one memory of what was seen: a Tape.

A Tape is the watches of one cluster's objects (the one Watch of k8s/watch.py, each filling a Store of
k8s/runtime.py), every change they delivered as (time, type, object), and timed samples of a projection of the
stores (a Snapshot of one Job, a cluster's Objects), taken after every change and every `interval` seconds.
Scenarios, probes and the views read what happened through one query set, the pure functions below, over
recorded data (a unit test feeds them recorded events):

- `first(samples, pred)`: when pred first held (None: never); `first_sample`: that sample; `ever`: whether it did;
- `versions(changes, name)`: every version of one object as the watch delivered it, as samples (time, object);
- `by_revision(changes)`: the changes in etcd's order (resourceVersion, one counter across every kind): two
  watches deliver in an order of arrival that proves nothing about the order of the writes;
- `within_lag(ask, grace)`: `ask()`'s answer, given up to `grace` seconds to come: what a controller has just
  written (its own report, a live read, a hook that paused it right after its patch) reaches the apiserver before
  it reaches a watch.  The watch-lag grace is this one wait, WATCH_LAG by default; `Tape.seen(pred)` is `first`
  given it.

Each name means one thing: `first` when a predicate first held over samples (`first(samples, pred)`, and
`.first(pred)` on a Tape or a Recorder over its own); `seen` that, given the watch lag (`.seen(pred)`); a change
the watch delivered is a `Delivered`.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Generic, Iterable, Sequence

from .client import Kube
from .objects import Obj, meta, revision
from .poll import T, eventually
from .resources import NODE, Resource
from .runtime import Store
from .watch import Event, Watch, start_synced

Delivered = tuple[float, str, Obj]        # a change: (time delivered, ADDED|MODIFIED|DELETED, the object)
Taken = tuple[float, T]                    # a sample: (time taken, what the stores showed)

WATCH_LAG = 10.0            # seconds a query waits for the watches to deliver what a faster channel already showed
LAG_INTERVAL = 0.1          # how often `within_lag` asks again
SETTLE_QUIET = 0.5          # a tape that settles at its stop records on until no change came for this long,
SETTLE_MAX = 2.0            # but no longer than this: what a faster channel just showed reaches it meanwhile


# ---------------------------------------------------------------------------- the query set (pure)

def first_sample(samples: Iterable[Taken[T]], pred: Callable[[T], object]) -> Taken[T] | None:
    """The first sample for which pred holds, or None."""
    return next(((t, x) for t, x in samples if pred(x)), None)


def first(samples: Iterable[Taken[T]], pred: Callable[[T], object]) -> float | None:
    """When pred first held, or None."""
    got = first_sample(samples, pred)
    return got[0] if got else None


def ever(samples: Iterable[Taken[T]], pred: Callable[[T], object]) -> bool:
    """Whether pred held at any sample."""
    return first_sample(samples, pred) is not None


def named(changes: Iterable[Delivered], name: str | None = None, prefix: str | None = None) -> list[Delivered]:
    """The changes of the object `name` (or of every object whose name starts with `prefix`), in arrival order."""
    out = []
    for c in changes:
        n = meta(c[2]).get("name") or ""
        if (name is None or n == name) and (prefix is None or n.startswith(prefix)):
            out.append(c)
    return out


def versions(changes: Iterable[Delivered], name: str) -> list[Taken[Obj]]:
    """Every version of the object `name` the watch delivered (its deletion is no version): (time, object)."""
    return [(t, o) for t, typ, o in named(changes, name) if typ != Event.DELETED]


def by_revision(changes: Iterable[Delivered]) -> list[Delivered]:
    """The changes in the order etcd made them (by resourceVersion; equal ones keep their order of arrival)."""
    return sorted(changes, key=lambda c: revision(c[2]))


def within_lag(ask: Callable[[], T], grace: float = WATCH_LAG, *, clock: Callable[[], float] = time.monotonic,
         sleep: Callable[[float], object] = time.sleep) -> T:
    """ask()'s first truthy answer within `grace` seconds (the watch-lag grace), else its last answer."""
    return eventually(ask, grace, interval=LAG_INTERVAL, clock=clock, sleep=sleep)


# ---------------------------------------------------------------------------- the recording (I/O)

class Tape(Generic[T]):
    """The watches of `kinds` (namespaced ones in `namespace`; nodes by `node_selector`) as stores, every change
    they deliver once listed (`keep(obj)` chooses which are kept), and, with `project(stores)`, a sample after
    every change and every `interval` seconds.  `on_sample(t, value)` is called with each sample and `on_tick()`
    after each timed one, both holding `lock` (which a caller writing the same log takes too).  A reader that
    folds changes as they come (a probe's record) gives `on_change(res, type, obj)`, called for every change on
    the watch's thread, and `on_list(res, objects)`, called after every (re)list with what it listed.  As a context
    manager: started and synced on enter (NotSynced names what did not list); on exit (with `settle`, once its
    watches have been quiet a moment: what the caller just saw on a faster channel reaches it first) one last
    sample, then nothing more is recorded (or handed to the hooks) and the watches are told to stop without
    waiting for them."""

    def __init__(self, k: Kube, kinds: Sequence[Resource], namespace: str | None = None, *,
                 node_selector: str | None = None, project: Callable[[dict[str, Store]], T] | None = None,
                 interval: float = 0.2, keep: Callable[[Obj], bool] = lambda obj: True,
                 on_sample: Callable[[float, T], None] | None = None, on_tick: Callable[[], None] | None = None,
                 on_change: Callable[[Resource, str, Obj], None] | None = None,
                 on_list: Callable[[Resource, list[Obj]], None] | None = None, settle: bool = False,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], object] | None = None):
        self.k, self.kinds, self.namespace, self.node_selector = k, tuple(kinds), namespace, node_selector
        self.project, self.interval, self.keep = project, interval, keep
        self.on_sample, self.on_tick, self.on_change, self.on_list = on_sample, on_tick, on_change, on_list
        self.stores: dict[str, Store] = {r.plural: self._store(r) for r in self.kinds}
        self.changes: list[Delivered] = []
        self.samples: list[Taken[T]] = []
        self.watches: list[Watch] = []
        self.settle = settle         # at the stop, record on until the watches are quiet (SETTLE_QUIET, SETTLE_MAX)
        self.clock, self.sleep = clock, sleep     # the settling's time (monotonic; sleep None: the wait's own)
        self.last_change = 0.0       # self.clock()'s time of the last change delivered
        self.lock = threading.RLock()
        self.closed = False          # the tape has stopped: what its watches still deliver is not recorded
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, name="tape", daemon=True)

    # ------------------------------------------------------------------ recording
    def __enter__(self) -> Tape[T]:
        self.watches = [self.stores[r.plural].watch(
            self.k, r, self.namespace if r.namespaced else None,
            label_selector=self.node_selector if r is NODE else None) for r in self.kinds]
        start_synced(self.watches)
        if self.project is not None:
            self.sample()
            self._ticker.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.settle and self.watches:
            eventually(lambda: self.clock() - self.last_change >= SETTLE_QUIET, SETTLE_MAX, LAG_INTERVAL,
                       clock=self.clock, **({} if self.sleep is None else {"sleep": self.sleep}))
        self._stop.set()
        if self._ticker.is_alive():
            self._ticker.join(5)
        with self.lock:              # the last sample is the tape's last record
            if self.project is not None:
                self.sample()
            self.closed = True
        for w in self.watches:       # not joined: a watch blocked in its request ends at its next event or timeout
            w.stop(0)                # (a daemon thread); what it delivers meanwhile is not recorded

    def synced(self) -> bool:
        return bool(self.watches) and all(w.synced.is_set() for w in self.watches)

    def errors(self) -> list[str]:
        """Why a watch has lost the apiserver (and not listed again since); empty while all answer."""
        return [w.last_error for w in self.watches if w.last_error]

    def _store(self, res: Resource) -> Store:
        store = Store(on_change=lambda typ, obj: self._changed(res, typ, obj),
                      on_sync=lambda: self.on_list(res, store.items()) if self.on_list is not None else None)
        return store

    def _changed(self, res: Resource, typ: str, obj: Obj) -> None:
        if self.closed:
            return
        self.last_change = self.clock()
        if self.on_change is not None:
            self.on_change(res, typ, obj)
        if self.keep(obj):
            with self.lock:
                if not self.closed:
                    self.changes.append((time.time(), typ, obj))
        if self.project is not None and self.synced():
            self.sample()

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()
            if self.on_tick is not None:
                with self.lock:
                    self.on_tick()

    def sample(self) -> None:
        """Take a sample now (with `project`)."""
        if self.project is None:
            return
        with self.lock:
            if self.closed:
                return
            value = self.project(self.stores)
            now = time.time()
            self.samples.append((now, value))
            if self.on_sample is not None:
                self.on_sample(now, value)

    # ------------------------------------------------------------------ reading (the query set, on this tape)
    def latest(self, default: Any = None) -> T:
        with self.lock:
            return self.samples[-1][1] if self.samples else default

    def first(self, pred: Callable[[T], object]) -> float | None:
        return first(list(self.samples), pred)

    def ever(self, pred: Callable[[T], object]) -> bool:
        return ever(list(self.samples), pred)

    def seen(self, pred: Callable[[T], object], grace: float = WATCH_LAG, *,
             clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], object] = time.sleep) -> float | None:
        """When pred first held, given up to `grace` seconds for the watches to deliver it; None if still not."""
        return within_lag(lambda: self.first(pred), grace, clock=clock, sleep=sleep)

    def of(self, name: str | None = None, prefix: str | None = None) -> list[Delivered]:
        return named(list(self.changes), name, prefix)

    def versions(self, name: str) -> list[Taken[Obj]]:
        return versions(list(self.changes), name)

    def uids(self, typ: str, since: float = 0.0) -> list[str]:
        """The uids of the objects of every change of type `typ` from `since` on."""
        return [meta(o).get("uid") for t, ty, o in list(self.changes) if ty == typ and t >= since]
