"""Pause points: an armed point pauses exactly one of the threads that reach it, until released."""

import threading
import time

from k8s import hooks


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
    try:
        assert hooks.wait_reached(tmp_path, "node-created", "demo/pr", timeout=10) == {"node": "n"}, \
            "read whole, never half written"
        deadline = time.monotonic() + 10
        while len(done) < 7 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(done) == 7, "the other threads went on"
        assert hooks.parked(tmp_path, "node-created", "demo/pr")
    finally:
        hooks.release(tmp_path, "node-created", "demo/pr")
        for t in threads:
            t.join(10)
    assert len(done) == 8 and not any(t.is_alive() for t in threads), "the paused thread went on once released"


def test_an_unarmed_point_and_no_hook_dir_pass_at_once(tmp_path):
    hooks.Hooks(tmp_path).reach("node-created", "demo/pr")
    hooks.Hooks(None).reach("node-created", "demo/pr")
    assert not list(tmp_path.iterdir())


def test_a_paused_thread_leaves_only_its_record_behind(tmp_path):
    hooks.arm(tmp_path, "before-commit", "demo/job")
    t = threading.Thread(target=hooks.Hooks(tmp_path, max_pause=10).reach, args=("before-commit", "demo/job"),
                         kwargs={"rv": "7"})
    t.start()
    try:
        assert hooks.wait_reached(tmp_path, "before-commit", "demo/job", timeout=10) == {"rv": "7"}
    finally:
        hooks.release(tmp_path, "before-commit", "demo/job")
        t.join(10)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["before-commit@demo_job.reached"], \
        "no half-written temporary file, the arm and the release consumed"
