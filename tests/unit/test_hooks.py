"""Pause points: an armed point pauses exactly one of the threads that reach it, until released."""

import threading
import time

from demo.k8s import hooks


def test_an_armed_point_pauses_one_of_several_threads_reaching_it_together(tmp_path):
    hooks.arm(tmp_path, "node-created", "demo/pr")
    h = hooks.Hooks(tmp_path, max_pause=30)
    start = threading.Barrier(8)
    done: list[float] = []

    def reach():
        start.wait()
        h.reach("node-created", "demo/pr", node="n")
        done.append(time.monotonic())

    threads = [threading.Thread(target=reach) for _ in range(8)]
    for t in threads:
        t.start()
    assert hooks.wait_reached(tmp_path, "node-created", "demo/pr", timeout=10) == {"node": "n"}
    deadline = time.monotonic() + 10
    while len(done) < 7 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(done) == 7, "the other threads went on"
    assert hooks.parked(tmp_path, "node-created", "demo/pr")
    hooks.release(tmp_path, "node-created", "demo/pr")
    for t in threads:
        t.join(10)
    assert len(done) == 8 and not any(t.is_alive() for t in threads), "the paused thread went on once released"


def test_an_unarmed_point_and_no_hook_dir_pass_at_once(tmp_path):
    hooks.Hooks(tmp_path).reach("node-created", "demo/pr")
    hooks.Hooks(None).reach("node-created", "demo/pr")
    assert not list(tmp_path.iterdir())
