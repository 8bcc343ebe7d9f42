"""The controller runtime (k8s.runtime) without a cluster: the work queue's rules, the indexed
informer cache, and run_loop's workers."""

from __future__ import annotations

import inspect
import threading
import time

from k8s import runtime
from k8s.runtime import Store, WorkQueue, run_loop

STOP = threading.Event()          # never set: get() returns as soon as a key is ready


def obj(name, rv, uid="u1", owner=None, ns="demo"):
    md = {"name": name, "namespace": ns, "uid": uid, "resourceVersion": str(rv)}
    if owner:
        md["ownerReferences"] = [{"kind": "Job", "name": "j", "uid": owner, "controller": True}]
    return {"metadata": md}


def owners(o):
    return [r["uid"] for r in o["metadata"].get("ownerReferences") or []]


# ---------------------------------------------------------------------------- WorkQueue

class Clock:
    """A WorkQueue's clock that moves only when the test moves it; `look` asks the queue once, without waiting."""

    def __init__(self):
        self.now = 0.0
        self.looking: threading.Event | None = None

    def __call__(self) -> float:
        if self.looking is not None:       # the queue reads the clock once per look: stop after this one
            self.looking.set()
        return self.now

    def look(self, q: WorkQueue) -> str | None:
        """What the queue hands out now (its due timers fired), or None: nothing ready at this time."""
        self.looking = threading.Event()
        try:
            return q.get(self.looking, 0)
        finally:
            self.looking = None


def test_a_key_waits_in_the_queue_once():
    clock = Clock()
    q = WorkQueue(clock)
    for k in ("a", "b", "a", "a"):
        q.add(k)
    assert [clock.look(q), clock.look(q)] == ["a", "b"]
    assert clock.look(q) is None                # nothing else is ready


def test_a_key_is_never_handed_to_two_workers_and_is_handed_out_again_after_done():
    clock = Clock()
    q = WorkQueue(clock)
    q.add("a")
    assert clock.look(q) == "a"
    q.add("a")                                 # an event while a worker holds it
    assert clock.look(q) is None               # not handed to a second worker
    q.done("a")
    assert clock.look(q) == "a"                # but not lost either


def test_urgent_keys_go_first_and_an_urgent_add_overtakes_a_queued_key():
    q = WorkQueue()
    for k in ("a", "b", "c"):
        q.add(k)
    q.add("c", urgent=True)
    q.add("d", urgent=True)
    assert [q.get(STOP) for _ in range(4)] == ["c", "d", "a", "b"]


def test_an_urgent_add_while_processing_comes_back_urgent():
    q = WorkQueue()
    q.add("a")
    assert q.get(STOP) == "a"
    q.add("b")
    q.add("a", urgent=True)
    q.done("a")
    assert [q.get(STOP), q.get(STOP)] == ["a", "b"]


def test_only_the_earliest_timer_of_a_key_is_kept_and_it_fires_once():
    clock = Clock()
    q = WorkQueue(clock)
    q.add("reference", after=0.2)
    q.add("a", after=0.4)
    q.add("a", after=0.05)                     # earlier: replaces the 0.4 s timer
    q.add("a", after=0.3)                      # later: dropped
    clock.now = 0.049
    assert clock.look(q) is None               # not before its time
    clock.now = 0.05
    assert clock.look(q) == "a"
    clock.now = 0.2
    assert clock.look(q) == "reference"
    q.done("a")
    q.done("reference")
    clock.now = 10.0
    assert clock.look(q) is None               # the 0.3 s and 0.4 s timers of "a" are gone


def test_an_urgent_timer_fires_into_the_urgent_tier():
    clock = Clock()
    q = WorkQueue(clock)
    q.add("routine")
    q.add("deadline", after=0.05, urgent=True)
    clock.now = 0.05
    assert clock.look(q) == "deadline"
    assert clock.look(q) == "routine"


def test_a_work_queue_keeps_time_on_the_monotonic_clock_unless_a_test_gives_another():
    assert inspect.signature(WorkQueue).parameters["clock"].default is time.monotonic


# ---------------------------------------------------------------------------- Store

def test_store_keeps_the_newer_version_and_indexes_it():
    s = Store(index=owners)
    s.handle("SYNCED", {})
    s.handle("ADDED", obj("w1", 5, owner="job-1"))
    s.put(obj("w1", 7, owner="job-1"))                     # our own write's response
    s.handle("MODIFIED", obj("w1", 6, owner="job-1"))      # an older event arriving late
    assert s.get("demo/w1")["metadata"]["resourceVersion"] == "7"
    assert [o["metadata"]["name"] for o in s.by_index("job-1")] == ["w1"]
    s.handle("MODIFIED", obj("w1", 8, owner="job-2"))      # re-owned: moves in the index
    assert s.by_index("job-1") == [] and len(s.by_index("job-2")) == 1
    s.handle("DELETED", obj("w1", 9, owner="job-2"))
    assert s.by_index("job-2") == [] and s.get("demo/w1") is None


def test_store_relist_replaces_everything_and_calls_on_sync():
    synced, changes = [], []
    s = Store(on_change=lambda t, o: changes.append(t), index=owners, on_sync=lambda: synced.append(1))
    s.handle("SYNC", obj("w1", 1, owner="job-1"))
    s.handle("SYNCED", {})
    s.handle("ADDED", obj("w2", 2, uid="u2", owner="job-1"))
    s.handle("SYNC", obj("w2", 3, uid="u2", owner="job-1"))  # a relist: w1 was deleted while the watch was down
    s.handle("SYNCED", {})
    assert [o["metadata"]["name"] for o in s.items()] == ["w2"]
    assert [o["metadata"]["name"] for o in s.by_index("job-1")] == ["w2"]
    assert synced == [1, 1] and changes == ["ADDED"]


def test_a_write_response_that_raced_the_objects_deletion_does_not_bring_it_back():
    s = Store(index=owners)
    s.handle("SYNCED", {})
    s.handle("ADDED", obj("w1", 5, owner="job-1"))
    s.handle("DELETED", obj("w1", 6, owner="job-1"))
    s.put(obj("w1", 5, owner="job-1"))                     # our patch's response, read before the delete
    assert s.get("demo/w1") is None and s.by_index("job-1") == []
    s.put(obj("w1", 1, uid="u2", owner="job-1"))           # a new object under the same name is not a ghost
    assert s.get("demo/w1")["metadata"]["uid"] == "u2"


def test_an_object_a_relist_left_out_is_not_put_back_by_a_late_write_response():
    s = Store()
    s.handle("SYNC", obj("w1", 1))
    s.handle("SYNC", obj("w2", 2, uid="u2"))
    s.handle("SYNCED", {})
    s.handle("SYNC", obj("w2", 3, uid="u2"))               # w1 was deleted while the watch was down
    s.handle("SYNCED", {})
    s.put(obj("w1", 2))
    s.put(obj("w2", 4, uid="u2"))
    assert [(o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in s.items()] == [("w2", "4")]


def test_our_own_delete_forgets_the_object_in_the_index_too_and_keeps_it_gone():
    s = Store(index=owners)
    s.handle("SYNCED", {})
    s.handle("ADDED", obj("w1", 5, owner="job-1"))
    s.discard("demo/w1")
    assert s.by_index("job-1") == [] and s.get("demo/w1") is None
    s.put(obj("w1", 6, owner="job-1"))
    s.handle("MODIFIED", obj("w1", 7, owner="job-1"))      # the watch's own events still count
    assert s.get("demo/w1")["metadata"]["resourceVersion"] == "7"
    s.discard("demo/nothing")                              # nothing there: nothing to remember
    s.put({"metadata": {"name": "w9", "namespace": "demo", "resourceVersion": "1"}})      # (not even an empty uid)
    assert s.get("demo/w9") is not None


def test_a_store_remembers_a_bounded_number_of_gone_objects_the_oldest_forgotten_first(monkeypatch):
    monkeypatch.setattr(runtime, "GONE_KEPT", 2)
    s = Store()
    s.handle("SYNCED", {})
    for i in range(3):
        s.handle("ADDED", obj(f"w{i}", i, uid=f"u{i}"))
        s.handle("DELETED", obj(f"w{i}", i, uid=f"u{i}"))
    for i in range(3):
        s.put(obj(f"w{i}", i, uid=f"u{i}"))
    assert [o["metadata"]["name"] for o in s.items()] == ["w0"]      # only the oldest was forgotten


# ---------------------------------------------------------------------------- run_loop

def test_run_loop_workers_never_hold_one_key_twice_and_requeue_on_request():
    q, stop = WorkQueue(), threading.Event()
    lock = threading.Lock()
    holding: set[str] = set()
    overlaps, runs = [], {}

    def reconcile(key):
        with lock:
            if key in holding:
                overlaps.append(key)
            holding.add(key)
            runs[key] = runs.get(key, 0) + 1
            n = runs[key]
        time.sleep(0.01)
        q.add(key)                             # an event for the same key while it is processed
        with lock:
            holding.discard(key)
        return 0.01 if n < 3 else None

    for k in "abcdef":
        q.add(k)
    t = threading.Thread(target=run_loop, args=(q, reconcile, stop, 0.05, lambda: []),
                         kwargs={"workers": 4, "min_requeue": 0.001})
    t.start()
    end = time.monotonic() + 10
    while time.monotonic() < end and not all(runs.get(k, 0) >= 3 for k in "abcdef"):
        time.sleep(0.02)
    stop.set()
    t.join(5)
    assert not overlaps
    assert all(runs[k] >= 3 for k in "abcdef")


def test_run_loop_resyncs_known_keys_and_survives_a_failing_reconcile():
    q, stop = WorkQueue(), threading.Event()
    seen = []

    def reconcile(key):
        seen.append(key)
        raise RuntimeError("boom")             # logged; retried in 2 s

    t = threading.Thread(target=run_loop, args=(q, reconcile, stop, 0.05, lambda: ["k"]), kwargs={"workers": 2})
    t.start()
    end = time.monotonic() + 10
    while time.monotonic() < end and not seen:
        time.sleep(0.02)
    stop.set()
    t.join(5)
    assert seen and set(seen) == {"k"}
