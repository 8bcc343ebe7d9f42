"""procs.machine_lock: one holder at a time across the machine (kwokctl create picks ports by a scan that
two creates at once would both win); the second is told it waits, and gets the lock when the first lets go."""

from __future__ import annotations

import threading
import uuid

from demo.cluster import procs


def test_a_second_holder_waits_says_so_and_gets_the_lock_when_the_first_lets_go():
    name = f"unit-{uuid.uuid4().hex[:8]}"
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


def test_a_free_lock_is_taken_without_waiting():
    told = []
    with procs.machine_lock(f"unit-{uuid.uuid4().hex[:8]}", waiting=lambda: told.append(1)):
        pass
    assert told == []
