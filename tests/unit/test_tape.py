"""The one observation layer (k8s/tape.py): its query set over recorded events (the watch-lag grace, the order by
etcd revision, versions, first/ever), and a Tape fed by hand as its watches would (no watch runs here)."""

from __future__ import annotations

import inspect
import time

import pytest

from k8s import tape
from k8s.resources import JOB, WORKLOAD
from k8s.tape import Tape
from k8s.watch import Event, Watch


def wl(name: str, rv: int, **status) -> dict:
    return {"metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": str(rv)}, "status": dict(status)}


# Recorded as two watches delivered them: the Workload's eviction (rv 120) reached this process after the
# request's deletion (rv 118) had, though etcd made them in the other order of revisions below.
RECORDED = [
    (10.00, Event.ADDED, wl("w1", 100)),
    (10.40, Event.MODIFIED, wl("w1", 110, state="Pending")),
    (10.50, Event.MODIFIED, wl("w2", 105)),
    (10.90, Event.DELETED, wl("w1-check-1", 118)),
    (11.00, Event.MODIFIED, wl("w1", 120, state="Retry")),
    (11.05, Event.MODIFIED, wl("w1", 115, state="Ready")),       # a late delivery of an older version
    (12.00, Event.DELETED, wl("w1", 121, state="Retry")),
]


def state(o: dict) -> str | None:
    return o["status"].get("state")


def test_versions_are_one_objects_deliveries_without_its_deletion():
    got = tape.versions(RECORDED, "w1")
    assert [(t, o["metadata"]["resourceVersion"]) for t, o in got] == [
        (10.00, "100"), (10.40, "110"), (11.00, "120"), (11.05, "115")]
    assert tape.versions(RECORDED, "w") == [] and tape.versions([], "w1") == []


def test_named_picks_by_name_or_by_prefix():
    assert [c[0] for c in tape.named(RECORDED, prefix="w1-")] == [10.90]
    assert [c[0] for c in tape.named(RECORDED, name="w2")] == [10.50]
    assert len(tape.named(RECORDED)) == len(RECORDED)
    assert [c[0] for c in tape.named(RECORDED, name="w1", prefix="w1")] == [10.00, 10.40, 11.00, 11.05, 12.00]


def test_by_revision_is_etcds_order_not_the_order_of_arrival():
    ordered = tape.by_revision(RECORDED)
    assert [o["metadata"]["resourceVersion"] for _, _, o in ordered] == ["100", "105", "110", "115", "118", "120", "121"]
    same = [(1.0, Event.MODIFIED, wl("a", 7)), (0.5, Event.MODIFIED, wl("b", 7)), (2.0, Event.ADDED, wl("c", 3))]
    assert [o["metadata"]["name"] for _, _, o in tape.by_revision(same)] == ["c", "a", "b"], "equal: arrival order"
    unreadable = [(1.0, Event.ADDED, wl("x", 5)), (2.0, Event.ADDED, {"metadata": {"name": "y"}})]
    assert [o["metadata"]["name"] for _, _, o in tape.by_revision(unreadable)] == ["y", "x"]


def test_first_ever_and_first_sample_over_samples():
    samples = tape.versions(RECORDED, "w1")
    assert tape.first(samples, lambda o: state(o) == "Retry") == 11.00
    assert tape.first_sample(samples, lambda o: state(o))[1]["metadata"]["resourceVersion"] == "110"
    assert tape.ever(samples, lambda o: state(o) == "Ready") and not tape.ever(samples, lambda o: state(o) == "Gone")
    assert tape.first(samples, lambda o: False) is None and tape.first_sample([], bool) is None
    assert tape.first([(1.0, 0), (2.0, 5), (3.0, 6)], lambda x: x) == 2.0, "the first sample for which pred holds"


class FakeTime:
    """The clock and sleep of the grace: time passes only when slept; `at(t, f)` delivers at time t."""

    def __init__(self):
        self.now, self.slept, self.due = 0.0, [], []

    def at(self, t: float, f) -> None:
        self.due.append((t, f))

    def clock(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.now = round(self.now + s, 6)
        for t, f in [d for d in self.due if d[0] <= self.now]:
            self.due.remove((t, f))
            f()


def test_seen_waits_the_grace_for_a_late_delivery_and_no_longer():
    fake = FakeTime()
    delivered: list = list(RECORDED[:2])
    fake.at(0.35, lambda: delivered.append(RECORDED[4]))        # the watch delivers the Retry 0.35 s late
    got = tape.within_lag(lambda: tape.first(tape.versions(delivered, "w1"), lambda o: state(o) == "Retry"), 2.0,
                    clock=fake.clock, sleep=fake.sleep)
    assert got == 11.00 and fake.slept == [tape.LAG_INTERVAL] * 4, "looked every 0.1 s until it came"
    fake = FakeTime()
    never = tape.within_lag(lambda: tape.first(tape.versions(delivered, "w2"), bool), 0.5, clock=fake.clock,
                      sleep=fake.sleep)
    assert never is None and fake.now == pytest.approx(0.5), "given up when the grace ended, not before"
    fake = FakeTime()
    assert tape.within_lag(lambda: 7, 5.0, clock=fake.clock, sleep=fake.sleep) == 7 and fake.slept == [], "no wait"


def test_the_default_grace_is_the_watch_lag():
    import inspect
    assert inspect.signature(tape.within_lag).parameters["grace"].default == tape.WATCH_LAG
    assert inspect.signature(Tape.seen).parameters["grace"].default == tape.WATCH_LAG


# ---------------------------------------------------------------------------- a Tape fed by hand

def fed(project=None, keep=lambda o: True) -> Tape:
    t = Tape(None, (JOB, WORKLOAD), "ns", project=project, keep=keep)
    for res in (JOB, WORKLOAD):
        t.stores[res.plural].handle(Event.LISTED, wl(f"{res.plural}-old", 1))
        t.stores[res.plural].handle(Event.SYNCED, {})
    return t


def synced(t: Tape) -> Tape:
    """Watches that have listed once (never started: the test sets what their loops would)."""
    t.watches = [Watch(None, r) for r in t.kinds]
    for w in t.watches:
        w.synced.set()
    return t


def test_a_tape_keeps_the_changes_after_the_list_and_samples_after_each_once_synced():
    seen_samples = []
    t = fed(project=lambda stores: sorted(o["metadata"]["name"] for s in stores.values() for o in s.items()),
            keep=lambda o: o["metadata"]["name"] != "noise")
    t.on_sample = lambda now, v: seen_samples.append(v)
    t.stores[WORKLOAD.plural].handle(Event.ADDED, wl("w1", 5))       # not synced yet: kept, not sampled
    assert [c[1] for c in t.changes] == [Event.ADDED] and t.samples == []
    synced(t)
    t.stores[WORKLOAD.plural].handle(Event.ADDED, wl("noise", 6))
    t.stores[JOB.plural].handle(Event.DELETED, wl("jobs-old", 7))
    assert [(typ, o["metadata"]["name"]) for _, typ, o in t.changes] == [(Event.ADDED, "w1"), (Event.DELETED, "jobs-old")]
    assert [v for _, v in t.samples] == [["jobs-old", "noise", "w1", "workloads-old"], ["noise", "w1", "workloads-old"]]
    assert seen_samples == [v for _, v in t.samples]
    assert t.latest() == ["noise", "w1", "workloads-old"] and Tape(None, (JOB,)).latest("none") == "none"
    assert t.uids(Event.DELETED) == ["uid-jobs-old"] and t.uids(Event.ADDED, since=t.changes[-1][0] + 1) == []
    assert [o["metadata"]["resourceVersion"] for _, o in t.versions("w1")] == ["5"] and len(t.of(prefix="w")) == 1


def test_a_tape_without_a_projection_takes_no_samples_and_its_stop_takes_one_more_with_one():
    t = synced(fed())
    t.stores[JOB.plural].handle(Event.MODIFIED, wl("j", 2))
    t.__exit__(None, None, None)
    assert t.samples == [] and len(t.changes) == 1
    t = fed(project=lambda stores: len(stores[JOB.plural].items()))
    t.__exit__(None, None, None)
    assert [v for _, v in t.samples] == [1]


def test_errors_name_the_watches_that_lost_the_apiserver():
    t = synced(fed())
    assert t.errors() == [] and t.synced()
    t.watches[1].last_error = "connection refused"
    assert t.errors() == ["connection refused"]
    assert not Tape(None, (JOB,)).synced(), "no watch: not synced"


def test_the_queries_on_a_tape_are_the_pure_ones_over_its_samples():
    t = fed(project=lambda stores: len(stores[WORKLOAD.plural].items()))
    t.samples = [(1.0, 1), (2.0, 2), (3.0, 3)]
    assert t.first(lambda n: n >= 2) == 2.0 and t.ever(lambda n: n == 3) and not t.ever(lambda n: n > 3)
    fake = FakeTime()
    fake.at(0.2, lambda: t.samples.append((4.0, 4)))
    assert t.seen(lambda n: n == 4, 1.0, clock=fake.clock, sleep=fake.sleep) == 4.0


def test_a_folding_reader_gets_every_change_and_what_each_list_showed():
    got = []
    t = Tape(None, (JOB, WORKLOAD), "ns", keep=lambda o: False,
             on_change=lambda res, typ, obj: got.append((res.plural, typ, obj["metadata"]["name"])),
             on_list=lambda res, objs: got.append((res.plural, "listed", sorted(o["metadata"]["name"] for o in objs))))
    store = t.stores[WORKLOAD.plural]
    for o in (wl("a", 1), wl("b", 2)):
        store.handle(Event.LISTED, o)
    assert got == [], "a list is told once it is whole"
    store.handle(Event.SYNCED, {})
    store.handle(Event.MODIFIED, wl("a", 3))
    store.handle(Event.LISTED, wl("c", 4))
    store.handle(Event.SYNCED, {})                       # a relist: b went while the watch was down
    assert got == [("workloads", "listed", ["a", "b"]), ("workloads", Event.MODIFIED, "a"),
                   ("workloads", "listed", ["c"])]
    assert t.changes == [], "keep chose none"


def test_nothing_is_recorded_after_the_stop_not_even_what_the_watches_still_deliver():
    folded, logged = [], []
    t = fed(project=lambda stores: len(stores[JOB.plural].items()))
    t.on_change = lambda res, typ, obj: folded.append(typ)
    t.on_sample = lambda now, v: logged.append(v)
    synced(t)
    t.stores[JOB.plural].handle(Event.ADDED, wl("j1", 2))
    t.__exit__(None, None, None)
    assert t.closed and [v for _, v in t.samples] == [2, 2] and logged == [2, 2] and folded == [Event.ADDED]
    t.stores[JOB.plural].handle(Event.ADDED, wl("j2", 3))          # a watch not yet ended delivers one more
    t.sample()
    assert [v for _, v in t.samples] == [2, 2] and logged == [2, 2] and folded == [Event.ADDED]
    assert [c[2]["metadata"]["name"] for c in t.changes] == ["j1"]


class SettleTime:
    """A tape's clock and sleep that move only when it sleeps; `at(t, action)` runs action once time reaches t
    (what a watch delivers meanwhile)."""

    def __init__(self, now: float = 100.0):
        self.now, self.start, self.slept, self.pending = now, now, [], []

    def clock(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.now += s
        for due, action in list(self.pending):
            if self.now >= due:
                self.pending.remove((due, action))
                action()

    def at(self, t: float, action) -> None:
        self.pending.append((self.start + t, action))


def settling(fake: SettleTime, project) -> Tape:
    t = synced(Tape(None, (JOB, WORKLOAD), "ns", project=project, settle=True, clock=fake.clock, sleep=fake.sleep))
    for res in (JOB, WORKLOAD):
        t.stores[res.plural].handle(Event.SYNCED, {})
    return t


def test_a_settling_tape_records_what_comes_while_its_watches_are_still_busy_then_stops():
    fake = SettleTime()
    t = settling(fake, lambda stores: sorted(o["metadata"]["name"] for o in stores[JOB.plural].items()))
    t.stores[JOB.plural].handle(Event.ADDED, wl("j1", 2))
    # what a faster channel already showed, delivered 0.3 s into the stop
    fake.at(0.3, lambda: t.stores[JOB.plural].handle(Event.MODIFIED, wl("j1", 3)))
    t.__exit__(None, None, None)
    assert [o["metadata"]["resourceVersion"] for _, _, o in t.changes] == ["2", "3"], "the late change recorded"
    took = fake.now - fake.start
    # quiet for SETTLE_QUIET after the late change, which came at the first look at or after 0.3 s
    assert tape.SETTLE_QUIET + 0.3 <= took <= tape.SETTLE_QUIET + 0.3 + 2 * tape.LAG_INTERVAL + 1e-6, took
    assert t.stores[JOB.plural].handle(Event.MODIFIED, wl("j1", 4)) is None and len(t.changes) == 2, "then it stopped"
    busy = SettleTime()
    b = settling(busy, lambda stores: 0)
    for i in range(40):                 # a change every 0.1 s for 4 s: it stops at SETTLE_MAX all the same
        busy.at(0.1 * i, lambda i=i: b.stores[JOB.plural].handle(Event.MODIFIED, wl("j1", 10 + i)))
    b.last_change = busy.now
    b.__exit__(None, None, None)
    assert tape.SETTLE_MAX - 1e-6 <= busy.now - busy.start <= tape.SETTLE_MAX + tape.LAG_INTERVAL + 1e-6
    quiet_time = SettleTime()
    quiet = settling(quiet_time, lambda stores: 0)
    quiet.__exit__(None, None, None)
    assert quiet_time.slept == [], "no change for long: nothing to wait for"


def test_a_tape_settles_on_the_monotonic_clock_unless_a_test_gives_another():
    assert inspect.signature(Tape).parameters["clock"].default is time.monotonic
