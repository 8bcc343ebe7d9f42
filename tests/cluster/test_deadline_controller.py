"""The deadline controller's guarded writes, against the real apiserver and real Kueue v0.19.2.

The controller runs in-process with the real client (as its own ServiceAccount), so that a test can
hold its informer caches at a chosen moment: `informed` gives them the informers' list, and no watch
follows, as when a watch lags.  The test then changes the objects on the apiserver (Kueue admits; or
an annotation that is not the controller's), and drives `reconcile` directly.  Every refusal below is
the real apiserver's: a resourceVersion (or uid) precondition that no longer holds.  Jobs are submitted
like `tau-demo submit` does, and every Workload is the one real Kueue made; no test writes a status.

Covered elsewhere, so not repeated here: a decision held at a pause point while Kueue admits
(409, live read, admission won) is test_scenarios.py's admission-wins race; the controller killed
after each step and converging with one mirror and one arm is its step-boundary kill test; the same
across an apiserver restart is test_faults.py.
"""

from __future__ import annotations

import logging
import re
import threading
import time

import pytest

from demo.deadline import protocol as dl
from demo.deadline import routing
from demo.deadline.controller import DeadlineController
from demo.deadline.invariants import History, violations
from demo.jobs import observe
from k8s import job as jobs
from k8s import workload as workloads
from k8s import hooks
from k8s.client import Kube
from k8s.hooks import Hooks
from k8s.keys import (ADMITTED, CLEANUP_AFTER_ANNOTATION, DEADLINE_ANNOTATION, DEADLINE_CLASS_ANNOTATION,
                           DECISION_ANNOTATION, DECISION_TIME_ANNOTATION, JOB_UID_LABEL, MIRROR_KEYS,
                           PARAM_BOOT_SECONDS, PARAM_STOCKOUT, QUOTA_RESERVED, SERVICE_ACCOUNTS,
                           TERMINAL_TIME_ANNOTATION, TERMINAL_WORKLOAD_ANNOTATION)
from k8s.objects import annotations, is_true, name_of, owned_by, parse_time
from k8s.resources import JOB, PROVREQ, WORKLOAD
from k8s.runtime import WorkQueue
from scenarios.walkthrough import race
from scenarios.kit.harness import NS
from tests.cluster.conftest import relist, wait_for

CLASS = "in-process"                  # no controller process serves this class: only the test's instances
TOUCH = "tau-demo.io/test-touch"      # someone else's write, which the controller's caches have not seen
TTL = 30.0


# ---------------------------------------------------------------------------- helpers

@pytest.fixture(scope="session")
def deadline_kube(kubeconfig) -> Kube:
    """The real client, as the deadline controller's ServiceAccount (its RBAC, as the controller process has)."""
    return Kube(kubeconfig, impersonate=SERVICE_ACCOUNTS["deadline"])


@pytest.fixture
def controller(deadline_kube, tmp_path):
    """make(ttl) -> a DeadlineController of class CLASS whose caches hold the namespace as it is now."""
    made = []

    def make(ttl: float = TTL, queue: WorkQueue | None = None, protocol: str = "committed") -> DeadlineController:
        c = DeadlineController(deadline_kube, namespace=NS, protocol=protocol, cleanup_ttl=ttl, instance=CLASS,
                               hooks=Hooks(tmp_path / f"hooks-{len(made)}"), queue=queue)     # the CLI's retry budget
        informed(c)
        made.append(c)
        return c
    return make


class HeldTimers(WorkQueue):
    """The controller's work queue with its timers held by the test: add(key, after > 0) is recorded in `held`,
    and the key comes into its tier only when the test fires it, as the timer would once due.  What goes first is
    then ordered by the test's steps, not by how long they take (the timers themselves: tests/unit/test_runtime.py)."""

    def __init__(self):
        super().__init__()
        self.held: list[tuple[str, float, bool]] = []     # (key, after, urgent), in the order added

    def add(self, key: str, after: float = 0.0, urgent: bool = False) -> None:
        if after > 0:
            self.held.append((key, after, urgent))
        else:
            super().add(key, urgent=urgent)

    def fire(self, key: str) -> None:
        """The first held timer of `key` is due."""
        i = next(i for i, (k, _, _) in enumerate(self.held) if k == key)
        super().add(key, urgent=self.held.pop(i)[2])


def informed(c: DeadlineController) -> None:
    """What the controller's informers hand its caches after their list (SYNC..., SYNCED); no watch follows,
    so the caches stay as they are now until its own writes and live reads refresh them."""
    for res, store in ((JOB, c.jobs), (WORKLOAD, c.workloads)):
        relist(store, c.k.list(res, NS)[0])


@pytest.fixture
def submit(clean):
    """submit(deadline, provreq=None) -> (name, job, workload): a 1 x 8-GPU Job submitted like `tau-demo submit`
    does, for the in-process class (out of stock unless provreq says otherwise), and the Workload real Kueue
    made for it once it reserved quota (its provisioning check pending).  The test's Jobs are deleted at its
    end, passed or failed, so that one failure does not fail the next test's clean start."""
    names: list[str] = []

    def sub(deadline: str, provreq: dict | None = None) -> tuple[str, dict, dict]:
        name = clean.new_name("job-dl")
        names.append(name)
        job = clean.submit(name, "1x8", duration="5s", deadline=deadline, provreq=provreq or {PARAM_STOCKOUT: "true"},
                           annotations={DEADLINE_CLASS_ANNOTATION: CLASS})
        wl = wait_for(lambda: (w := observe.workload_for(clean.k, job)) and is_true(w, QUOTA_RESERVED) and w, 60,
                      what=f"Kueue to reserve quota for {name}'s Workload")
        return name, job, wl
    yield sub
    for name in names:
        clean.delete_job(name)
    wait_for(lambda: not clean.leftovers(), 120, what="the test's Jobs and their Workloads to go")


def past_deadline(job: dict) -> None:
    deadline = dl.deadline_of(job).timestamp()
    wait_for(lambda: time.time() > deadline + 0.2, 60, what=f"{job['metadata']['name']}'s deadline")


def touch(k: Kube, res, name: str, value: str) -> dict:
    """Someone else changes the object (an annotation of their own): a new resourceVersion."""
    return k.patch(res, name, {"metadata": {"annotations": {TOUCH: value}}}, NS)


def rv(obj: dict) -> str:
    return obj["metadata"]["resourceVersion"]


def said(caplog, key: str, thread: str | None = None) -> list[str]:
    """The controller's log lines about `key` (from one thread, when given), in order."""
    return [r.getMessage().removeprefix(f"deadline {key}: ") for r in caplog.records
            if r.name == "deadline" and r.getMessage().startswith(f"deadline {key}: ")
            and (thread is None or r.threadName == thread)]


def history(k: Kube, job: dict, since: str) -> History:
    """The Job as submitted, then every version of it and of its Workload the apiserver has written since
    resourceVersion `since`, replayed by a watch from it, as the project's invariant checker reads them."""
    uid = job["metadata"]["uid"]
    jobs = [job] + [o for typ, o in k.watch(JOB, NS, resource_version=since, timeout_seconds=1)
            if typ != "DELETED" and o["metadata"]["uid"] == uid]
    wls = [o for typ, o in k.watch(WORKLOAD, NS, label_selector=f"{JOB_UID_LABEL}={uid}", resource_version=since,
                                   timeout_seconds=1) if typ != "DELETED"]
    return History(job["metadata"]["name"], jobs, wls)


def written(objs: list[dict], key: str) -> set[str]:
    """The distinct values of one of the controller's annotations over the versions: one per write."""
    return {annotations(o)[key] for o in objs if key in annotations(o)}


def steps(versions: list[dict]) -> list[str]:
    """The Job's versions as the protocol's steps, repeats folded."""
    out: list[str] = []
    for j in versions:
        s = "armed" if jobs.cleanup_after(j) else "mirrored" if jobs.mirrored(j) else "unmarked"
        if not out or out[-1] != s:
            out.append(s)
    return out


MIRRORING = r"Workload \S+ carries a committed timeout; mirroring it to the Job"
JOB_409 = "Job changed under us (409); reading again"
ARMING = "mirror written; arming cleanup"
EXPIRED = r"cleanup TTL expired \d+\.\ds ago and Workload \S+ still carries the committed timeout; deleting the Job"


def match(lines: list[str], patterns: list[str]) -> bool:
    return len(lines) == len(patterns) and all(re.fullmatch(p, line) for p, line in zip(patterns, lines))


def retried(lines: list[str], head: list[str], conflict: str, again: str, tail: list[str], budget: int) -> bool:
    """lines are `head`, then 1 to `budget` rounds of a refused write (`conflict`) and what the controller does on
    its live read (`again`), then `tail` (each a regex).  What the protocol promises of a write another writer can
    race: the test's own write makes the first 409; Kueue or the Job controller may write the object again between
    a live read and the write after it, and each such write costs one more round, within the retry budget (an exact
    count of 409s would be a count of the other writers' timing)."""
    rounds, rest = divmod(len(lines) - len(head) - len(tail), 2)
    return rest == 0 and 1 <= rounds <= budget and match(lines, head + [conflict, again] * rounds + tail)


def past_cleanup_time(k: Kube, name: str) -> None:
    due = jobs.cleanup_after(k.get(JOB, name, NS))
    wait_for(lambda: time.time() > due.timestamp() + 0.2, 30, what="the cleanup time")


def reconcile_parked(c: DeadlineController, key: str, point: str, thread: str = "worker"
                     ) -> tuple[threading.Thread, list, dict]:
    """c.reconcile(key) in a thread of its own, parked at the pause point `point` (armed before):
    (the thread, its result once joined, what the pause point reported)."""
    out: list = []
    worker = threading.Thread(target=lambda: out.append(c.reconcile(key)), name=thread)
    worker.start()
    return worker, out, hooks.wait_reached(c.hooks.dir, point, key, timeout=60)


def committed_mirrored_armed(k: Kube, submit, make, ttl: float) -> tuple[DeadlineController, str, str, dict]:
    """A Job past its deadline, out of stock, that an in-process controller has committed, mirrored and armed."""
    name, job, _ = submit("1s")
    past_deadline(job)
    c = make(ttl)
    key = f"{NS}/{name}"
    assert c.reconcile(key) == 0.0
    assert 0 < c.reconcile(key) <= ttl
    live = k.get(JOB, name, NS)
    assert jobs.mirrored(live) and jobs.cleanup_after(live) is not None
    return c, name, key, job


# ---------------------------------------------------------------------------- the commit

def test_a_commit_decided_on_a_stale_cache_is_refused_and_admission_wins_on_the_live_read(submit, k, controller,
                                                                                          caplog):
    # Unlike the admission-wins race (a fresh decision held at a pause point), the cache itself lags here:
    # Kueue admitted before the decision, which is made on the older version the cache still holds.
    name, job, _ = submit("2s", {**race.capacity_back_after(6), PARAM_BOOT_SECONDS: "0"})
    key = f"{NS}/{name}"
    c = controller()
    stale = c.cached(key)[1]
    assert is_true(stale, QUOTA_RESERVED) and not is_true(stale, ADMITTED)
    wait_for(lambda: is_true(observe.workload_for(k, job), ADMITTED), 120,
             what="Kueue to admit the Workload once capacity is back")
    past_deadline(job)
    with caplog.at_level(logging.INFO, logger="deadline"):
        assert c.reconcile(key) is None
        first = said(caplog, key)
        caplog.clear()
        assert c.reconcile(key) is None                  # decided on the caches again, no API call
        again = said(caplog, key)
    assert match(first, [rf"deadline passed \d+\.\ds ago; Workload rv {rv(stale)} not admitted; committing timeout",
                         rf"409 conflict on Workload rv {rv(stale)}; reading again",
                         r"re-read: Admitted=True; Workload rv \d+ is Admitted: admission won, no action"]), first
    # what the live read saw went into the caches: the next decision is made on the admitted version
    seen = re.search(r"Workload rv (\d+) is Admitted", first[-1]).group(1)
    assert again == [f"Workload rv {seen} is Admitted: admission won, no action"], again
    live = observe.snapshot(k, NS, name)
    assert workloads.admission_won(live.workload) and not workloads.committed_timeout(live.workload)
    assert live.workload["spec"].get("active") is not False, "the Workload was not deactivated"
    assert not any(key_ in annotations(live.job) for key_ in MIRROR_KEYS), "the Job carries no mark"
    wait_for(lambda: is_true(k.get(JOB, name, NS), "Complete"), 120, what="the Job to run and complete")


def test_commit_then_mirror_then_arm_each_guarded_by_the_version_it_was_decided_on(submit, k, controller, caplog):
    name, job, wl = submit("1s")
    key, wl_name = f"{NS}/{name}", wl["metadata"]["name"]
    past_deadline(job)
    since = k.list(JOB, NS)[1]
    c = controller()
    decided_on = rv(c.cached(key)[1])
    with caplog.at_level(logging.INFO, logger="deadline"):
        # 1. commit: the Workload changes after the cache saw it; the commit at the cached version is refused
        touched = touch(k, WORKLOAD, wl_name, "1")
        assert c.reconcile(key) == 0.0                   # committed; the owner steps come on the next turn
        lines = said(caplog, key)
        assert retried(lines, [rf"deadline passed \d+\.\ds ago; Workload rv {decided_on} not admitted; committing timeout"],
                       r"409 conflict on Workload rv \d+; reading again",
                       r"re-read: not admitted; deadline passed \d+\.\ds ago; Workload rv \d+ not admitted; "
                       r"committing timeout",
                       [rf"committed timeout on Workload {wl_name} \(spec.active=false; the write took \d+ ms\)"],
                       c.conflict_retries), lines
        assert lines[1] == f"409 conflict on Workload rv {decided_on}; reading again", "refused at the cached version"
        live = observe.snapshot(k, NS, name)
        assert workloads.committed_timeout(live.workload) and live.workload["spec"]["active"] is False
        assert annotations(live.workload)[TOUCH] == "1", "committed onto the version the live read saw"
        assert int(rv(live.workload)) > int(rv(touched))
        assert not jobs.mirrored(live.job)

        # 2. mirror: the Job changes after the cache saw it; the mirror at the cached version is refused
        touch(k, JOB, name, "1")
        hooks.arm(c.hooks.dir, "after-mirror", key)
        caplog.clear()
        worker, out, _ = reconcile_parked(c, key, "after-mirror")
        lines = said(caplog, key)
        assert retried(lines, ["timeout already committed on the Workload", MIRRORING], re.escape(JOB_409), MIRRORING,
                       [], c.conflict_retries), lines
        live_job = k.get(JOB, name, NS)
        assert jobs.mirrored(live_job) and jobs.cleanup_after(live_job) is None

        # 3. arm: the Job changes again between the mirror and the arm; the arm at the mirror's version is refused
        touch(k, JOB, name, "2")
        caplog.clear()
        hooks.release(c.hooks.dir, "after-mirror", key)
        worker.join(60)
        lines = said(caplog, key)
        assert retried(lines, [re.escape(ARMING)], re.escape(JOB_409), re.escape(ARMING), [], c.conflict_retries), lines
        assert out and 0 < out[0] <= TTL                  # the cleanup TTL

        # nothing more to write: the caches hold the controller's own writes
        caplog.clear()
        assert all(0 < c.reconcile(key) <= TTL for _ in range(3))
        assert said(caplog, key) == []
    h = history(k, job, since)
    assert violations(h) == [], violations(h)
    assert len(written(h.workloads, DECISION_TIME_ANNOTATION)) == 1, "one commit"
    assert len(written(h.jobs, TERMINAL_TIME_ANNOTATION)) == 1, "one mirror"
    assert len(written(h.jobs, CLEANUP_AFTER_ANNOTATION)) == 1, "one arm"
    assert steps(h.jobs) == ["unmarked", "mirrored", "armed"]
    assert annotations(h.jobs[-1])[TOUCH] == "2", "the arm went onto the version the live read saw"


def test_the_legacy_protocol_unraced_marks_the_job_then_deactivates_the_workload_and_says_so(submit, no_autoscaler, k,
                                                                                           controller, caplog):
    """The legacy protocol (the reviewed design's order, kept to reproduce its bug) with nothing racing it: past the
    deadline it marks the owner Job terminal, then deactivates the Workload at the version it read, says so, and arms
    the Job's TTL cleanup.  No autoscaler runs, so Kueue has nothing to write meanwhile.  The race scenario only ever
    shows its 409: a coverage run at 2163cb1 found the line of a deactivation that went through never said."""
    name, job, wl = submit("1s")
    key = f"{NS}/{name}"
    past_deadline(job)
    c = controller(protocol="legacy")
    with caplog.at_level(logging.INFO, logger="deadline"):
        after = c.reconcile(key)
    lines = said(caplog, key)
    assert routing.legacy_commit_line(key, False).removeprefix(f"deadline {key}: ") in lines, lines
    assert 0 < after <= TTL, after                    # the TTL cleanup armed, waiting
    live = observe.snapshot(k, NS, name)
    assert live.workload["spec"]["active"] is False and workloads.committed_timeout(live.workload)
    assert jobs.mirrored(live.job) and jobs.cleanup_after(live.job) is not None
    # the mark names the Workload it mirrors (the twelfth sample's `_reconcile_legacy__mutmut_41` wrote None there)
    assert annotations(live.job).get(TERMINAL_WORKLOAD_ANNOTATION) == wl["metadata"]["name"], annotations(live.job)


def test_the_legacy_protocol_deactivates_only_at_the_version_it_read_and_a_write_between_refuses_it(
        submit, no_autoscaler, k, controller, caplog):
    """The legacy protocol marks the Job, then deactivates the Workload at the version it read, and no other: parked
    between the two (the pause point `before-commit`, which reports that version), a write to the Workload makes the
    deactivation refused (409) and said, and the Workload stays active: the reviewed design's bug, a Job marked
    terminal whose Workload may still be admitted.  (The fourteenth sample's `_reconcile_legacy__mutmut_54` reported
    no version at that pause point, and no test read it.)"""
    name, job, wl = submit("1s")
    key, wl_name = f"{NS}/{name}", wl["metadata"]["name"]
    past_deadline(job)
    c = controller(protocol="legacy")
    decided_on = rv(c.cached(key)[1])
    hooks.arm(c.hooks.dir, "before-commit", key)
    with caplog.at_level(logging.INFO, logger="deadline"):
        worker, out, info = reconcile_parked(c, key, "before-commit")
        try:
            assert info == {"resource_version": decided_on}
            assert jobs.mirrored(k.get(JOB, name, NS)), "the Job is marked before the Workload is deactivated"
            touch(k, WORKLOAD, wl_name, "between")        # after the decision, before its deactivation
        finally:            # released whatever failed above: no reconcile left parked for the tests after this one
            hooks.release(c.hooks.dir, "before-commit", key)
            worker.join(60)
    lines = said(caplog, key)
    assert routing.legacy_commit_line(key, True).removeprefix(f"deadline {key}: ") in lines, lines
    assert routing.legacy_commit_line(key, False).removeprefix(f"deadline {key}: ") not in lines, lines
    live = observe.snapshot(k, NS, name)
    assert live.workload["spec"].get("active") is not False and not workloads.committed_timeout(live.workload), \
        "the deactivation went onto a version it never read"
    assert jobs.mirrored(live.job) and jobs.cleanup_after(live.job) is not None, "the Job marked and its cleanup armed"


def test_the_legacy_protocols_cleanup_never_deletes_a_job_resubmitted_under_the_same_name(clean, submit, no_autoscaler,
                                                                                          k, controller, caplog):
    """The legacy protocol deletes a marked Job once its TTL is over, as the reviewed design did, but only the Job it
    read (its uid): one the user submitted again under the name meanwhile is refused (409), said, and read again.
    (The thirteenth sample's `_reconcile_legacy__mutmut_115` dropped the uid, and the new Job went.)"""
    name, job, _ = submit("1s")
    key = f"{NS}/{name}"
    past_deadline(job)
    c = controller(3.0, protocol="legacy")
    assert 0 < c.reconcile(key) <= 3.0                   # marked, deactivated, its cleanup armed
    past_cleanup_time(k, name)
    caplog.clear()                                       # the legacy protocol's marking said at WARNING, above
    with caplog.at_level(logging.INFO, logger="deadline"):
        out = resubmitted_while_it_deletes(clean, k, c, key, job, workload=True)
    lines = said(caplog, key)
    assert match(lines, [r"LEGACY: TTL expired; deleting the Job \(its Workload is not admitted\)",
                         re.escape(JOB_409)]), lines
    after = out[0] if out else None
    assert after is not None and 0 < after <= 600, f"read again: the new Job's deadline is ahead ({out})"


def test_before_the_deadline_nothing_is_written_and_the_deadline_fires_into_the_urgent_tier(submit, k, controller,
                                                                                           caplog):
    name, job, wl = submit("20s")
    key = f"{NS}/{name}"
    since = k.list(JOB, NS)[1]
    c = controller()
    stop = threading.Event()
    assert c.queue.get(stop) == key                      # the informers' list queued it; a worker takes it
    with caplog.at_level(logging.INFO, logger="deadline"):
        assert c.reconcile(key) is None
    c.queue.done(key)
    lines = said(caplog, key)
    assert match(lines, [r"not admitted yet; deadline in \d+\.\ds"]), lines
    live = observe.snapshot(k, NS, name)
    h = history(k, job, since)
    for w in [live.workload, *h.workloads]:
        assert DECISION_ANNOTATION not in annotations(w) and w["spec"].get("active") is not False, w["metadata"]
    for j in [live.job, *h.jobs]:
        assert not any(k_ in annotations(j) for k_ in MIRROR_KEYS), j["metadata"]
    # routine work queued before the deadline does not hold up the deadline's timer: it fires into the urgent tier
    c.queue.add("demo/routine")
    past_deadline(job)
    assert c.queue.get(stop) == key
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="deadline"):
        assert c.reconcile(key) == 0.0
    c.queue.done(key)
    assert said(caplog, key)[-1].startswith(f"committed timeout on Workload {wl['metadata']['name']}")
    committed = k.get(WORKLOAD, wl["metadata"]["name"], NS)
    decided_at = parse_time(annotations(committed)[DECISION_TIME_ANNOTATION])
    assert decided_at >= dl.deadline_of(job), "the decision was not made before the deadline"


def test_a_commit_whose_workload_is_gone_reads_live_and_stops(submit, k, controller, caplog):
    # The user deletes the Job while the controller is committing its timeout: the garbage collector takes the
    # Workload with it, the commit patch meets no object (404), and the live read finds the owner gone.
    name, job, wl = submit("1s")
    key, wl_name = f"{NS}/{name}", wl["metadata"]["name"]
    past_deadline(job)
    c = controller()
    decided_on = rv(c.cached(key)[1])
    hooks.arm(c.hooks.dir, "before-commit", key)
    with caplog.at_level(logging.INFO, logger="deadline"):
        worker, out, info = reconcile_parked(c, key, "before-commit")
        assert info == {"resource_version": decided_on}
        k.delete(JOB, name, NS, propagation="Background")
        wait_for(lambda: k.get_or_none(WORKLOAD, wl_name, NS) is None, 60,
                 what=f"the garbage collector (and Kueue's finalizer) to remove Workload {wl_name}")
        hooks.release(c.hooks.dir, "before-commit", key)
        worker.join(60)
    lines = said(caplog, key)
    assert match(lines, [rf"deadline passed \d+\.\ds ago; Workload rv {decided_on} not admitted; committing timeout",
                         rf"Workload {wl_name} is gone \(404\); reading again",
                         r"re-read: not admitted; owner Job is gone"]), lines
    assert out == [None], "nothing more to do for a Job that is gone"
    assert k.get_or_none(JOB, name, NS) is None and k.get_or_none(WORKLOAD, wl_name, NS) is None, "nothing recreated"


COMMIT_TRIES = 6     # a commit refused again and again is tried this many times, then queued again (bounded-waits.md)


def test_a_commit_that_keeps_conflicting_gives_up_after_its_retries_and_comes_back_urgently(submit, k, controller,
                                                                                          caplog):
    # Someone else writes the Workload between every decision and its commit, `conflict_retries` times running:
    # every commit is refused (409) at the version its live read saw; the controller stops trying for now and
    # queues the key in the urgent tier, and once the writes stop, the commit lands, once.  The controller's own
    # budget, as `tau-demo deadline` runs it (docs/bounded-waits.md): the test gave it 3 until the twelfth sample's
    # `__init____mutmut_3` (a budget of 7) survived.
    retries = COMMIT_TRIES
    name, job, wl = submit("1s")
    key, wl_name = f"{NS}/{name}", wl["metadata"]["name"]
    past_deadline(job)
    since = k.list(JOB, NS)[1]
    c = controller(queue=HeldTimers())
    stop = threading.Event()
    assert c.queue.get(stop) == key                      # the informers' list queued it; this test is its worker
    hooks.arm(c.hooks.dir, "before-commit", key)
    refused: list[str] = []                              # the version each commit was decided on
    touched: list[str] = []                              # the version each touch wrote
    with caplog.at_level(logging.INFO, logger="deadline"):
        worker, out, info = reconcile_parked(c, key, "before-commit")
        for attempt in range(retries):
            refused.append(info["resource_version"])
            touched.append(rv(touch(k, WORKLOAD, wl_name, str(attempt))))  # after the decision, before its commit
            if attempt + 1 < retries:
                hooks.arm(c.hooks.dir, "before-commit", key)     # before the release: the next attempt parks too
            hooks.release(c.hooks.dir, "before-commit", key)
            if attempt + 1 < retries:
                info = hooks.wait_reached(c.hooks.dir, "before-commit", key, timeout=60)
        worker.join(60)
        c.queue.done(key)
        lines = said(caplog, key)
        # the retry is a timer (0.5 s) into the urgent tier: routine work queued before it is due goes first,
        # and routine work queued before it fires still goes after it
        assert c.queue.held == [(key, 0.5, True)], "the give-up retries on a timer, into the urgent tier"
        c.queue.add("demo/routine")
        assert c.queue.get(stop) == "demo/routine", "the retry waits for its timer"
        c.queue.done("demo/routine")
        c.queue.add("demo/routine")
        c.queue.fire(key)                                # the timer is due
        assert c.queue.get(stop) == key, "the key comes back in the urgent tier"
        caplog.clear()
        assert c.reconcile(key) == 0.0                   # nobody writes in between now: committed
        after = said(caplog, key)
        assert 0 < c.reconcile(key) <= TTL               # and then, as ever, mirrored and armed
        c.queue.done(key)
    committing = r"deadline passed \d+\.\ds ago; Workload rv (\d+) not admitted; committing timeout"
    conflict = "409 conflict on Workload rv {}; reading again"
    expected = [committing]
    for i in range(retries):
        expected += [conflict.format(refused[i])] + (["re-read: not admitted; " + committing] if i + 1 < retries else [])
    assert match(lines, expected + [f"still conflicting after {retries} attempts; will retry"]), lines
    # the first decision was made on the cache; each one after it on what its live read saw: the last touch
    # (or a later write of Kueue's)
    assert [re.search(r"Workload rv (\d+) not", line).group(1) for line in lines if "committing" in line] == refused
    assert all(int(r) >= int(t) for r, t in zip(refused[1:], touched)), (refused, touched)
    assert out == [None], "no commit, and nothing for the owner steps yet"
    # back on the cache, which holds the last live read, older than the last touch: a 409 on that version, then
    # the commit lands on a live read within the retry budget.  What the protocol promises, not one timing of it:
    # Kueue may write the Workload itself between a live read and its commit (its status), so a further 409 is
    # allowed, each on a version newer than the one before (none of them the test's: its touches were all before)
    again = [re.fullmatch(r"409 conflict on Workload rv (\d+); reading again", line) for line in after]
    conflicts = [m.group(1) for m in again if m]
    assert conflicts[:1] == [refused[-1]], ("the first commit on the cache is refused at the last live read", after)
    assert all(int(b) > int(a) for a, b in zip(conflicts, conflicts[1:])), ("each 409 on a newer version", after)
    assert retried(after, [committing], r"409 conflict on Workload rv \d+; reading again",
                   "re-read: not admitted; " + committing,
                   [rf"committed timeout on Workload {wl_name} \(spec.active=false; the write took \d+ ms\)"], retries), after
    h = history(k, job, since)
    assert violations(h) == [], violations(h)
    assert len(written(h.workloads, DECISION_TIME_ANNOTATION)) == 1, "one commit, after the conflicts"
    assert steps(h.jobs) == ["unmarked", "mirrored", "armed"]
    committed = [w for w in h.workloads if dl.committed_timeout(w)]
    assert committed and annotations(committed[0])[TOUCH] == str(retries - 1), "onto the last touch's version"


# ---------------------------------------------------------------------------- cleanup

def test_cleanup_deletes_only_when_a_live_read_agrees(submit, k, controller, caplog):
    c, name, key, job = committed_mirrored_armed(k, submit, controller, 3.0)
    uid = job["metadata"]["uid"]
    wl = observe.workload_for(k, job)
    # an operator takes the timeout back after the controller's caches saw it committed: drops the Job's
    # deadline, clears the decision and reactivates the Workload (spec, not Kueue's status)
    k.patch(JOB, name, {"metadata": {"annotations": {DEADLINE_ANNOTATION: None}}}, NS)
    k.patch(WORKLOAD, wl["metadata"]["name"], {"metadata": {"annotations": {DECISION_ANNOTATION: None,
                                                                           DECISION_TIME_ANNOTATION: None}},
                                               "spec": {"active": True}}, NS)
    past_cleanup_time(k, name)
    assert workloads.committed_timeout(c.cached(key)[1]), "the cache still says committed"
    with caplog.at_level(logging.INFO, logger="deadline"):
        assert c.reconcile(key) is None
    lines = said(caplog, key)
    assert lines == ["stale terminal mark on the Job (Workload carries no committed timeout); "
                     "removing it and disarming cleanup"], lines
    live = k.get(JOB, name, NS)
    assert live["metadata"]["uid"] == uid, "the Job was not deleted"
    assert not any(k_ in annotations(live) for k_ in MIRROR_KEYS), "its mark was removed, cleanup disarmed"


def test_cleanup_deletes_with_the_resource_version_it_decided_on(submit, k, controller, caplog):
    c, name, key, job = committed_mirrored_armed(k, submit, controller, 3.0)
    past_cleanup_time(k, name)
    hooks.arm(c.hooks.dir, "before-delete", key)
    with caplog.at_level(logging.INFO, logger="deadline"):
        worker, out, info = reconcile_parked(c, key, "before-delete")
        before = k.get(JOB, name, NS)
        assert info == {"uid": job["metadata"]["uid"], "resource_version": rv(before)}, "decided on a live read"
        touched = touch(k, JOB, name, "1")              # the Job changes after that read
        hooks.release(c.hooks.dir, "before-delete", key)
        worker.join(60)
    lines = said(caplog, key)
    assert retried(lines, [EXPIRED], re.escape(JOB_409), EXPIRED, [], c.conflict_retries), lines
    assert out == [None]
    assert k.get_or_none(JOB, name, NS) is None, "deleted once a live read of the new version agreed"
    assert int(rv(touched)) > int(info["resource_version"])


def resubmitted_while_it_deletes(clean, k: Kube, c: DeadlineController, key: str, job: dict,
                                 workload: bool = False) -> list:
    """c.reconcile(key) held before its delete of `job`; meanwhile the user deletes the Job and submits it again under
    the same name, with a longer deadline (and, with `workload`, Kueue has made its Workload); then the delete goes on.
    The new Job must be kept, unmarked.  Returns the reconcile's result (empty: it raised)."""
    name = job["metadata"]["name"]
    hooks.arm(c.hooks.dir, "before-delete", key)
    worker, out, info = reconcile_parked(c, key, "before-delete")
    assert info["uid"] == job["metadata"]["uid"]
    k.delete(JOB, name, NS)
    wait_for(lambda: k.get_or_none(JOB, name, NS) is None, 60, what="the first Job to go")
    again = clean.submit(name, "1x8", duration="5s", deadline="10m", provreq={PARAM_STOCKOUT: "true"},
                         annotations={DEADLINE_CLASS_ANNOTATION: CLASS})
    if workload:
        wait_for(lambda: observe.workload_for(k, again), 60, what="the new Job's Workload")
    hooks.release(c.hooks.dir, "before-delete", key)
    worker.join(60)
    live = k.get(JOB, name, NS)
    assert live["metadata"]["uid"] == again["metadata"]["uid"] != job["metadata"]["uid"], "the new Job is kept"
    assert not any(k_ in annotations(live) for k_ in MIRROR_KEYS)
    return out


def test_cleanup_never_deletes_a_job_resubmitted_under_the_same_name(clean, submit, k, controller, caplog):
    c, name, key, job = committed_mirrored_armed(k, submit, controller, 3.0)
    past_cleanup_time(k, name)
    with caplog.at_level(logging.INFO, logger="deadline"):
        out = resubmitted_while_it_deletes(clean, k, c, key, job)
    lines = said(caplog, key)
    assert match(lines, [EXPIRED, re.escape(JOB_409)]), lines
    assert out == [None]


# ---------------------------------------------------------------------------- two writers

def test_a_job_write_that_conflicts_reads_live_and_does_not_write_twice(submit, k, controller, caplog):
    # Two instances of one class on the same Job (a second one started by mistake, or a rollout's overlap):
    # the first commits and mirrors; the second decided to mirror on its cache, from before the mirror.
    name, job, wl = submit("1s")
    key, wl_name = f"{NS}/{name}", wl["metadata"]["name"]
    past_deadline(job)
    since = k.list(JOB, NS)[1]
    first = controller()
    assert first.reconcile(key) == 0.0
    second = controller()                                # its caches: the committed Workload, the Job unmarked
    hooks.arm(first.hooks.dir, "after-mirror", key)
    with caplog.at_level(logging.INFO, logger="deadline"):
        worker, out, _ = reconcile_parked(first, key, "after-mirror", "first")
        assert 0 < second.reconcile(key) <= TTL
        hooks.release(first.hooks.dir, "after-mirror", key)
        worker.join(60)
    one, two = said(caplog, key, "first"), said(caplog, key, "MainThread")
    # the second: its mirror refused, it reads live, finds the mirror written, and only arms cleanup
    assert match(two, ["timeout already committed on the Workload", MIRRORING, re.escape(JOB_409),
                       re.escape(ARMING)]), two
    # the first, released: its arm refused, it reads live, finds cleanup armed, and writes nothing more
    assert match(one, ["timeout already committed on the Workload", MIRRORING, re.escape(ARMING),
                       re.escape(JOB_409)]), one
    assert out and 0 < out[0] <= TTL
    h = history(k, job, since)
    assert violations(h) == [], violations(h)
    assert len(written(h.jobs, TERMINAL_TIME_ANNOTATION)) == 1, "one mirror"
    assert len(written(h.jobs, CLEANUP_AFTER_ANNOTATION)) == 1, "one arm"
    assert steps(h.jobs) == ["unmarked", "mirrored", "armed"]
    assert annotations(h.jobs[-1])[TERMINAL_WORKLOAD_ANNOTATION] == wl_name


# ---------------------------------------------------------------------------- the informers

class Routed(WorkQueue):
    """The controller's work queue, noting every key put in at once (an informer's event, the caches' sync, a
    resync): its timers go in by themselves and are not noted."""

    def __init__(self):
        super().__init__()
        self.routed: list[tuple[float, str]] = []

    def add(self, key: str, after: float = 0.0, urgent: bool = False) -> None:
        if after <= 0:
            self.routed.append((time.monotonic(), key))
        super().add(key, after, urgent)


ELSEWHERE = "default"        # a namespace the namespaced controller must not see


def elsewhere(k: Kube, name: str) -> None:
    """A Job of the test's class and a ProvisioningRequest in ELSEWHERE (suspended, no queue: Kueue and the
    autoscalers leave them be)."""
    k.create(JOB, {"apiVersion": "batch/v1", "kind": "Job",
                   "metadata": {"name": name, "annotations": {DEADLINE_CLASS_ANNOTATION: CLASS}},
                   "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never",
                                                                   "containers": [{"name": "c", "image": "none"}]}}}},
             ELSEWHERE)
    k.create(PROVREQ, {"apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
                       "metadata": {"name": name},
                       "spec": {"provisioningClassName": "handled-by-nobody.tau-demo.io",
                                "podSets": [{"count": 1, "podTemplateRef": {"name": name}}]}}, ELSEWHERE)


def test_each_watch_routes_a_change_and_a_relist_to_its_jobs_key_and_sees_only_its_namespace(submit, no_autoscaler,
                                                                                              k, deadline_kube):
    # The controller with its real informers and no resync: only a watch event can put a key in its queue. Each of
    # the three watches is judged by a change to its kind alone (someone else's annotation), with nothing else
    # writing (no autoscaler runs, the Job's deadline is far): the Job's key comes in within seconds. And a
    # namespaced controller lists and watches its namespace only: another namespace's Job of its class and request
    # are never cached, nor their keys queued.
    name, job, wl = submit("600s")
    key = f"{NS}/{name}"
    alien = f"{name}-elsewhere"
    try:
        elsewhere(k, alien)
        pr = wait_for(lambda: next((p for p in k.list(PROVREQ, NS)[0]
                                    if owned_by(p, wl["metadata"]["uid"], controller=False)), None), 60,
                      what=f"Kueue to create {name}'s ProvisioningRequest")
        queue = Routed()
        c = DeadlineController(deadline_kube, namespace=NS, instance=CLASS, resync=3600.0, queue=queue)
        stop, ready = threading.Event(), threading.Event()
        t = threading.Thread(target=c.run, args=(stop, ready), name="deadline-routed-test", daemon=True)
        t.start()
        try:
            assert ready.wait(60), "the test's deadline controller did not sync its caches"
            def cached() -> dict[str, set[str]]:
                return {store: {name_of(o) for o in getattr(c, store).items()}
                        for store in ("jobs", "workloads", "provreqs")}
            first = cached()
            assert key in first["jobs"] and name_of(wl) in first["workloads"] and name_of(pr) in first["provreqs"], \
                first
            for res, obj in ((JOB, job), (WORKLOAD, wl), (PROVREQ, pr)):
                # quiet first: nothing queued for 2 s (the sync's keys and any write before this one are done)
                wait_for(lambda: not queue.routed or time.monotonic() - queue.routed[-1][0] > 2.0, 30,
                         what="the controller's queue to be quiet")
                since = time.monotonic()
                touch(k, res, obj["metadata"]["name"], res.kind)
                wait_for(lambda: any(t_ >= since and k_ == key for t_, k_ in queue.routed), 10,
                         what=f"a change to the {res.kind} alone to queue its Job's key {key}")
            for store in ("jobs", "workloads", "provreqs"):
                # a relist of one watch alone, as its Watch delivers it (every object LISTED, then SYNCED: a watch
                # that cannot resume lists again, and what changed meanwhile comes with no event of its own) queues
                # every key.  The tenth sample's `__init____mutmut_35` (the requests' cache with no on_sync)
                # survived: every test relisted the three watches together, or had a resync
                wait_for(lambda: not queue.routed or time.monotonic() - queue.routed[-1][0] > 2.0, 30,
                         what="the controller's queue to be quiet")
                since = time.monotonic()
                relisted = getattr(c, store)
                relist(relisted, relisted.items())
                wait_for(lambda: any(t_ >= since and k_ == key for t_, k_ in queue.routed), 10,
                         what=f"a relist of the {store} alone to queue every key, {key} among them")
            last = cached()
            assert all(n.startswith(f"{NS}/") for names in last.values() for n in names), last
            assert all(k_.startswith(f"{NS}/") for _, k_ in queue.routed), queue.routed
        finally:
            stop.set()
            t.join(10)
    finally:
        k.delete(PROVREQ, alien, ELSEWHERE)
        k.delete(JOB, alien, ELSEWHERE, propagation="Background")
