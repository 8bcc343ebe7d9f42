"""The one watch helper's waiting rules (k8s/watch.py), on Watch objects that are never started: what a
controller says while its caches do not sync, and that it says ready only once every one did."""

from __future__ import annotations

import logging
import threading

import pytest

from k8s.resources import JOB, WORKLOAD
from k8s.watch import Event, NotSynced, Watch, wait_for_caches


def unstarted(res, namespace="demo") -> Watch:
    return Watch(None, res, namespace=namespace)          # no thread: its synced event is set by the test


def test_the_events_are_the_apiservers_own_strings():
    assert [str(e) for e in Event] == ["SYNC", "SYNCED", "ADDED", "MODIFIED", "DELETED"]
    assert Event("MODIFIED") is Event.MODIFIED and Event.LISTED == "SYNC"


def test_a_watch_whose_list_does_not_arrive_fails_loudly_with_the_last_error():
    w = unstarted(WORKLOAD)
    w.last_error = "apiserver https://127.0.0.1:1 did not answer GET /apis/...: connection refused"
    with pytest.raises(NotSynced, match=r"^the initial list of workloads in demo did not arrive within 0s "
                                        r"\(last error: apiserver .* connection refused\)$"):
        w.wait_synced(0.01)
    with pytest.raises(NotSynced, match=r"\(no answer\)$"):
        unstarted(JOB, None).wait_synced(0.01)


def test_wait_for_caches_says_which_caches_wait_and_why_until_all_synced(caplog):
    jobs, wls = unstarted(JOB), unstarted(WORKLOAD)
    wls.last_error = "connection refused"
    stop = threading.Event()
    timer = threading.Timer(0.5, jobs.synced.set)
    timer2 = threading.Timer(0.9, wls.synced.set)
    timer.start(), timer2.start()
    with caplog.at_level(logging.WARNING):
        assert wait_for_caches([jobs, wls], stop, logging.getLogger("deadline"), say_first=0.2, say_every=0.3)
    waiting = [r.getMessage() for r in caplog.records]
    assert waiting and all(m.startswith("deadline: waiting for caches to sync (") and "not deciding anything" in m
                           for m in waiting), waiting
    assert "jobs in demo: no answer yet" in waiting[0] and "workloads in demo: connection refused" in waiting[0]
    assert "jobs in demo" not in waiting[-1] and "workloads in demo" in waiting[-1]     # only those still waiting


def test_wait_for_caches_gives_up_without_deciding_when_stopped():
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    assert wait_for_caches([unstarted(JOB)], stop, logging.getLogger("fake-ca"), say_first=5) is False
    assert wait_for_caches([], threading.Event(), logging.getLogger("x")) is True
