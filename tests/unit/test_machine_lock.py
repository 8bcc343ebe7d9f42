"""procs.machine_lock: one holder at a time across the machine (kwokctl create picks ports by a scan that
two creates at once would both win); the second is told it waits, and gets the lock when the first lets go.  Each
test's lock file is in its own temp dir: a unit run leaves none in /tmp."""

from __future__ import annotations

import tempfile
import threading
import uuid

import pytest

from demo.cluster import procs


@pytest.fixture
def name(tmp_path, monkeypatch):
    """A lock of the test's own, its file in the test's temp dir."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    name = f"unit-{uuid.uuid4().hex[:8]}"
    yield name
    assert [f.name for f in tmp_path.iterdir()] == [f"tau-demo-{name}.lock"]


def test_a_second_holder_waits_says_so_and_gets_the_lock_when_the_first_lets_go(name):
    told, order = threading.Event(), []

    def second():
        with procs.machine_lock(name, waiting=told.set):
            order.append("second")

    with procs.machine_lock(name):
        t = threading.Thread(target=second)
        t.start()
        assert told.wait(5), "the second holder was not told that it waits"
        t.join(0.3)
        assert t.is_alive() and order == [], "the second holder got the lock while the first held it"
        order.append("first")
    t.join(5)
    assert order == ["first", "second"]


def test_a_free_lock_is_taken_without_waiting(name):
    told = []
    with procs.machine_lock(name, waiting=lambda: told.append(1)):
        pass
    assert told == []
