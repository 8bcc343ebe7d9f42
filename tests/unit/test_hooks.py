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


def test_a_key_as_long_as_a_kubernetes_name_may_be_is_paused_and_released_too(tmp_path):
    # upstream-12542's requests have names of 253 characters: the fake reached its pause point with that key and
    # failed its loop (the file name over 255 bytes), with or without the point armed
    key = "demo/" + "x" * 250 + "-1"
    other = "demo/" + "x" * 250 + "-2"
    hooks.Hooks(tmp_path).reach("node-created", key)            # not armed: passes at once
    hooks.arm(tmp_path, "node-created", key)
    h = hooks.Hooks(tmp_path, max_pause=30)
    t = threading.Thread(target=lambda: h.reach("node-created", other))
    t.start()
    t.join(10)
    assert not t.is_alive(), "another long key of the same head is another point: not paused"
    t = threading.Thread(target=lambda: h.reach("node-created", key, node="n"))
    t.start()
    try:
        assert hooks.wait_reached(tmp_path, "node-created", key, timeout=10) == {"node": "n"}
        assert t.is_alive(), "paused"
    finally:
        hooks.release(tmp_path, "node-created", key)
        t.join(10)
    assert not t.is_alive()


def test_a_pause_points_file_name_is_the_key_up_to_its_limit_then_its_head_and_hash():
    at = "p@" + "k" * (hooks.NAME_MAX - 2)
    assert hooks._base("/d", "p", "k" * (hooks.NAME_MAX - 2)) == "/d/" + at, "at the limit: the key itself"
    over = hooks._base("/d", "p", "ns/" + "k" * hooks.NAME_MAX)
    name = over.removeprefix("/d/")
    assert len(name) == hooks.NAME_MAX and name.startswith("p@ns_kkk"), name
    assert name[-hooks.KEY_HASH - 1] == "-" and name[:-hooks.KEY_HASH - 1] == ("p@ns_" + "k" * hooks.NAME_MAX)[
        :hooks.NAME_MAX - hooks.KEY_HASH - 1]
    assert hooks._base("/d", "p", "ns/" + "k" * hooks.NAME_MAX + "x") != over, "the hash is of the whole key"
    assert hooks._base("/d", "p", "ns_" + "k" * hooks.NAME_MAX) != over, "of the key, not of its file name"


def test_a_disarmed_point_pauses_no_one_and_lets_one_that_claimed_it_go_on(tmp_path):
    h = hooks.Hooks(tmp_path, max_pause=30)
    hooks.arm(tmp_path, "paced", "loop")
    hooks.disarm(tmp_path, "paced", "loop")
    h.reach("paced", "loop")                      # no arm to claim: it goes on, and records nothing
    assert not list(tmp_path.glob("paced@loop.reached*")), "a disarmed point was claimed"
    hooks.arm(tmp_path, "paced", "loop")          # armed again: the release the disarm left is gone, it pauses
    t = threading.Thread(target=h.reach, args=("paced", "loop"))
    t.start()
    try:
        hooks.wait_reached(tmp_path, "paced", "loop", timeout=10)
        assert hooks.parked(tmp_path, "paced", "loop"), "armed again after a disarm, the point pauses"
        hooks.disarm(tmp_path, "paced", "loop")  # the one that claimed it goes on
        t.join(10)
        assert not t.is_alive(), "the thread paused at a disarmed point did not go on"
    finally:
        hooks.release(tmp_path, "paced", "loop")
        t.join(10)
