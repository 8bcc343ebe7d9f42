"""When the admission deadline falls (demo/deadline/rule.py), on the real cluster: real Kueue v0.19.2, the fake
autoscaler stopped and then started, and the deadline controller in-process with its real informers (Jobs,
Workloads and ProvisioningRequests) under the default rule, taken-up.

Three gangs (1 x 4 GPUs: all three hold the queue's quota at once, so each has its request) are submitted
together while no autoscaler runs, so no request is taken up: exactly what a gang queued behind other requests
sees (the real Cluster Autoscaler takes up one request per loop).

- "waiting" (the default rule): past its submission deadline it is NOT timed out, over the whole window until an
  autoscaler takes its request up; the cloud is out of stock (fakeCAStockout), and the timeout is committed
  within the rule's bound of the take-up (take-up + budget - slack, + COMMIT_TOLERANCE), though the autoscaler
  rewrote the take-up's time when it retried the request in between;
- "old" (its Job asks for the rule submitted): timed out at its submission deadline although its request was only
  waiting;
- "never" (the default rule, admission-max-wait 20s): its request is never taken up; it ends at its outer bound.

Each commit's cause (bound, what the Workload waited for) is asserted, and the protocol's invariants over every
version the Tape saw of each Job and its Workload, cleanup included.

And a restart: a deadline controller process of the test's own records the late take-up on the Workload
(tau-demo.io/admission-taken-up), is killed with SIGKILL, the autoscaler's retry rewrites the take-up's time, and
the controller started again commits at the first take-up + budget - slack (within COMMIT_TOLERANCE), not at the
rewrite's, which is all its requests still show.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timezone

import pytest

from demo.deadline import protocol as dl
from demo.deadline import routing
from demo.deadline import rule as R
from demo.deadline.controller import DEFAULT_WORKERS, DeadlineController
from demo.deadline.invariants import History, violations
from k8s import poll
from k8s.client import Kube
from k8s.keys import (ACCEPTED, DEADLINE_CLASS_ANNOTATION, DEADLINE_LEASE_PREFIX, DEADLINE_RULE_ANNOTATION,
                      DECISION_BOUND_ANNOTATION, DECISION_WAITING_ANNOTATION, DEMO_NAMESPACE as NS,
                      MAX_WAIT_ANNOTATION, PARAM_STOCKOUT, SERVICE_ACCOUNTS, TAKEN_UP_ANNOTATION)
from k8s.objects import annotations, created_at, meta, owned_by, parse_time, revision, transition_time
from k8s.resources import JOB, PROVREQ, WORKLOAD
from k8s.tape import Tape, by_revision
from k8s.watch import Event
from k8s.workload import committed_timeout
from scenarios.kit.controllers import READY_LINE, start_private
from tests.cluster.conftest import in_force, refusing_an_added_annotation, relist, wait_for

CLASS = "rule-test"          # no controller process serves this class: only the test's own instance
BUDGET = 16                  # seconds: every gang's admission deadline; the slack is 8 s (half of it)
MAX_WAIT = 20                # seconds: "never"'s outer bound
NO_AUTOSCALER = 26           # seconds after the submissions during which no autoscaler runs
TTL = 3.0                    # the test controller's cleanup TTL
GANG = "1x4"                 # the three fit the demo queue's 16 GPUs at once: each holds quota and has its request


@pytest.fixture
def rule_controller(kubeconfig, caplog):
    """The deadline controller of class CLASS, in-process, as its ServiceAccount, with the default rule: its
    real informers, ready (caches synced) before the test goes on, having said first how it counts."""
    c = DeadlineController(Kube(kubeconfig, impersonate=SERVICE_ACCOUNTS["deadline"]), namespace=NS,
                           cleanup_ttl=TTL, resync=1.0, instance=CLASS)
    stop, ready = threading.Event(), threading.Event()
    t = threading.Thread(target=c.run, args=(stop, ready), name="deadline-rule-test", daemon=True)
    with caplog.at_level(logging.INFO, logger="deadline"):
        t.start()
        assert ready.wait(60), "the test's deadline controller did not sync its caches"
    said = [r.getMessage() for r in caplog.records if r.name == "deadline"]
    assert said[:1] == [routing.start_line(NS, CLASS, "committed", R.DEFAULT_RULE, R.DEFAULT_OUTER_FACTOR, TTL, 1.0,
                                           DEFAULT_WORKERS)], said
    assert "deadline: caches synced; ready" in said, said
    yield c
    stop.set()
    t.join(10)


def kind_of(obj: dict) -> str:
    return obj.get("kind") or ""


def first_commit(tape: Tape, job_uid: str) -> tuple[float, dict] | None:
    """When the Tape first saw the Job's Workload carry the committed timeout, and that version."""
    return next(((t, o) for t, typ, o in tape.changes
                 if kind_of(o) == "Workload" and owned_by(o, job_uid) and committed_timeout(o)), None)


def requests_of(tape: Tape, wl_uids: set[str]) -> list[tuple[float, dict]]:
    return [(t, o) for t, typ, o in tape.changes if kind_of(o) == "ProvisioningRequest" and typ != "DELETED"
            and any(owned_by(o, u, controller=False) for u in wl_uids)]


def history(tape: Tape, name: str, job_uid: str) -> History:
    """Every version of the Job and of its Workloads the Tape saw, in etcd's order, until the Job's deletion
    (after it Kueue marks the orphan Finished, which is no admission), and when the Tape saw it deleted."""
    changes = by_revision(tape.changes)
    gone = next(((t, o) for t, typ, o in changes if typ == "DELETED" and kind_of(o) == "Job"
                 and meta(o).get("uid") == job_uid), None)
    until = revision(gone[1]) if gone else None
    jobs = [o for t, typ, o in changes if typ != "DELETED" and kind_of(o) == "Job" and meta(o).get("uid") == job_uid]
    wls = [o for t, typ, o in changes if typ != "DELETED" and kind_of(o) == "Workload" and owned_by(o, job_uid)
           and (until is None or revision(o) < until)]
    return History(name, jobs, wls, datetime.fromtimestamp(gone[0], timezone.utc) if gone else None)


def test_a_gang_behind_other_requests_is_not_timed_out_a_stockout_is_and_every_wait_ends(clean, k, own_fake_ca,
                                                                                      rule_controller):
    assert rule_controller.rule == R.Rule.TAKEN_UP == R.DEFAULT_RULE, "the default rule is taken-up"
    names = {who: clean.new_name(f"job-rule-{who}") for who in ("waiting", "old", "never")}
    extra = {"waiting": {}, "old": {DEADLINE_RULE_ANNOTATION: R.Rule.SUBMITTED.value},
             "never": {MAX_WAIT_ANNOTATION: f"{MAX_WAIT}s"}}
    jobs: dict[str, dict] = {}
    try:
        with Tape(k, [JOB, WORKLOAD, PROVREQ], NS) as tape:
            for who, name in names.items():
                jobs[who] = clean.submit(name, GANG, duration="5s", deadline=f"{BUDGET}s",
                                         provreq={PARAM_STOCKOUT: "true"},
                                         annotations={DEADLINE_CLASS_ANNOTATION: CLASS, **extra[who]})
            created = {who: created_at(j).timestamp() for who, j in jobs.items()}
            uid = {who: j["metadata"]["uid"] for who, j in jobs.items()}
            off_until = max(created.values()) + NO_AUTOSCALER
            wait_for(lambda: time.time() >= off_until, NO_AUTOSCALER + 10, what="the window without an autoscaler")
            window_end = time.time()
            own_fake_ca()                       # an autoscaler takes the waiting gang's request up at last
            wait_for(lambda: first_commit(tape, uid["waiting"]), 60, what="the waiting gang's commit")
            wait_for(lambda: all(not k.get_or_none(JOB, n, NS) for n in names.values()), 60,
                     what="the controller's cleanup to delete the three Jobs")
            time.sleep(1.0)                     # the Tape sees the deletions
        commits = {who: first_commit(tape, uid[who]) for who in names}
        assert all(commits.values()), f"a gang was never timed out: {[w for w, c in commits.items() if not c]}"

        # "old": the rule submitted times the waiting gang out at its submission deadline
        t_old, wl_old = commits["old"]
        assert 0 <= t_old - (created["old"] + BUDGET) <= dl.COMMIT_TOLERANCE, \
            f"old: committed {t_old - created['old']:.2f}s after submission (deadline {BUDGET}s)"
        assert (annotations(wl_old)[DECISION_BOUND_ANNOTATION], annotations(wl_old)[DECISION_WAITING_ANNOTATION]) \
            == ("submitted", "autoscaler"), annotations(wl_old)

        # "never": no autoscaler took its request up; it ends at its outer bound
        t_never, wl_never = commits["never"]
        assert 0 <= t_never - (created["never"] + MAX_WAIT) <= dl.COMMIT_TOLERANCE, \
            f"never: committed {t_never - created['never']:.2f}s after submission (outer bound {MAX_WAIT}s)"
        assert (annotations(wl_never)[DECISION_BOUND_ANNOTATION], annotations(wl_never)[DECISION_WAITING_ANNOTATION]) \
            == ("outer-bound", "autoscaler"), annotations(wl_never)
        never_wls = {meta(o)["uid"] for _, typ, o in tape.changes if kind_of(o) == "Workload"
                     and owned_by(o, uid["never"])}
        assert not any(transition_time(o, ACCEPTED) for _, o in requests_of(tape, never_wls)), \
            "never: its request was taken up after all"

        # "waiting": not timed out over the whole window without an autoscaler, its submission deadline included
        wl_uids = {meta(o)["uid"] for _, typ, o in tape.changes if kind_of(o) == "Workload"
                   and owned_by(o, uid["waiting"])}
        reqs = requests_of(tape, wl_uids)
        taken = [(t, o) for t, o in reqs if transition_time(o, ACCEPTED)]
        assert taken, "waiting: its request was never taken up"
        seen_taken_at, first_taken = taken[0]
        assert seen_taken_at > window_end, "waiting: taken up while no autoscaler ran"
        t_wait, wl_wait = commits["waiting"]
        assert t_wait > seen_taken_at and revision(wl_wait) > revision(first_taken), \
            f"waiting: timed out {t_wait - created['waiting']:.2f}s after submission, before its request was taken up"
        # a stockout is still caught: within the rule's bound of the take-up (take-up + budget - slack)
        take_up = transition_time(first_taken, ACCEPTED).timestamp()
        due = take_up + BUDGET - R.slack_of(BUDGET)
        assert 0 <= t_wait - due <= dl.COMMIT_TOLERANCE, \
            f"waiting: committed {t_wait - take_up:.2f}s after the take-up (bound {due - take_up:g}s)"
        assert t_wait - take_up <= BUDGET + dl.COMMIT_TOLERANCE
        assert (annotations(wl_wait)[DECISION_BOUND_ANNOTATION], annotations(wl_wait)[DECISION_WAITING_ANNOTATION]) \
            == ("taken-up", "capacity"), annotations(wl_wait)
        # the autoscaler retried the request before the commit, rewriting Accepted's time: the earliest counted
        accepted_times = {transition_time(o, ACCEPTED) for t, o in taken if t < t_wait}
        assert len(accepted_times) >= 2, f"waiting: no retry before the commit ({sorted(accepted_times)})"

        # the committed protocol under either rule: every invariant, cleanup included
        for who, name in names.items():
            h = history(tape, name, uid[who])
            assert violations(h, expect_deleted=True) == [], (who, violations(h, expect_deleted=True))
    finally:
        for name in names.values():
            clean.delete_job(name)
        wait_for(lambda: not clean.leftovers(), 120, what="the test's Jobs and their Workloads to go")


def accepted_times(tape: Tape, wl_uid: str) -> list[datetime]:
    """The Accepted times of every version of the Workload's requests the Tape saw (a retry rewrites it)."""
    return [t for _, typ, o in tape.changes
            if owned_by(o, wl_uid, controller=False) and (t := transition_time(o, ACCEPTED)) is not None]


REFUSED_BUDGET = 40              # seconds: the refused-record test's deadline (its commit, 30 s after the take-up,
                                 # comes after the record is made; the test ends before it)


def take_up_refusal(unique: str, what: str) -> tuple[dict, dict]:
    """A real refusal of the controller's record of the take-up on a Workload, for as long as the policy exists."""
    return refusing_an_added_annotation(f"refuse-{what}-{unique}", WORKLOAD.group, "workloads", TAKEN_UP_ANNOTATION,
                                        "test: the take-up may not be recorded", NS)


def submitted_while_refused(clean, k, loaded, name: str) -> dict:
    """A gang of CLASS (out of stock, its deadline REFUSED_BUDGET) submitted while the refusal is loaded: its
    Workload, once the refusal is seen to refuse a record on it."""
    job = clean.submit(name, GANG, duration="5s", deadline=f"{REFUSED_BUDGET}s", provreq={PARAM_STOCKOUT: "true"},
                       annotations={DEADLINE_CLASS_ANNOTATION: CLASS})
    uid = job["metadata"]["uid"]
    wl = wait_for(lambda: next((w for w in k.list(WORKLOAD, NS)[0] if owned_by(w, uid)), None), 30,
                  what="the Job's Workload")
    loaded(lambda: k.patch(WORKLOAD, meta(wl)["name"], {"metadata": {"annotations": {TAKEN_UP_ANNOTATION: "probe"}}},
                           NS, dry_run=True))
    return wl


def test_a_take_up_record_the_apiserver_refuses_is_said_and_made_at_a_later_look(clean, k, own_fake_ca,
                                                                                  rule_controller, caplog, unique):
    """While a ValidatingAdmissionPolicy refuses the controller's record of the take-up on the Workload, the
    controller says so and tries again at later looks; meanwhile the first take-up lives in its memory alone, once the
    fake's retry has rewritten Accepted's time, and the record made once the policy is gone is that first take-up.
    (Reading a draw of the controller's mutants found `_remember__mutmut_6`, the memory never read: no test could
    tell, as the record was always made before any retry.)"""
    caplog.set_level(logging.INFO, logger="deadline")

    def said() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == "deadline"]
    name = clean.new_name("job-rule-refused")
    try:
        with Tape(k, [PROVREQ], NS) as tape:    # every version of the requests: the first take-up, whatever retried
            with in_force(k, take_up_refusal(unique, "take-up")) as loaded:
                wl = submitted_while_refused(clean, k, loaded, name)
                wl_name = meta(wl)["name"]
                own_fake_ca()                   # takes the request up, out of stock: the controller would record it
                could_not = f"deadline {NS}/{name}: could not record the take-up on Workload {wl_name} ("
                wait_for(lambda: [m for m in said() if m.startswith(could_not)], 30,
                         what="the controller to say it could not record the take-up")
                line = next(m for m in said() if m.startswith(could_not))
                assert "the take-up may not be recorded" in line and line.endswith("; will try again"), line
                # refused until the fake's retry (--initial-backoff 5s) rewrote Accepted's time: from then on the
                # first take-up is held only in the controller's memory
                wait_for(lambda: len(set(accepted_times(tape, meta(wl)["uid"]))) >= 2, 30,
                         what="the fake's retry to rewrite the take-up's time")
                assert TAKEN_UP_ANNOTATION not in annotations(k.get(WORKLOAD, wl_name, NS))
            # a later look (its resync is 1 s) records it, the first take-up's time, and says so
            recorded = wait_for(lambda: annotations(k.get(WORKLOAD, wl_name, NS)).get(TAKEN_UP_ANNOTATION), 30,
                                what="the take-up recorded once the policy is gone")
            taken = accepted_times(tape, meta(wl)["uid"])
        assert taken and parse_time(recorded) == min(taken), (recorded, sorted(set(taken)))
        # said once its write returned, which the test may see first (the sample at 115509d, at nice 19, looked between)
        made = routing.take_up_line(f"{NS}/{name}", wl_name, {"metadata": {"annotations": {
            TAKEN_UP_ANNOTATION: recorded}}}, None)
        wait_for(lambda: made in said(), 10, what=f"the controller to say: {made}")
        assert not committed_timeout(k.get(WORKLOAD, wl_name, NS)), "committed before the record: the test was late"
    finally:
        clean.delete_job(name)
        wait_for(lambda: not clean.leftovers(), 120, what="the test's Job and its Workload to go")


def test_a_take_up_learned_from_a_relist_is_remembered_at_the_look_that_reads_it(clean, k, kubeconfig, own_fake_ca,
                                                                                   caplog, unique):
    """A take-up the controller learns from a relist alone (which calls no event handler) is remembered by the look
    that reads it: while the record is refused (a policy), the fake's retry rewrites every answer's time, and that is
    all the next relist shows; the record made once the policy is gone must still be the first take-up.  In process,
    its caches filled by relists only, no watch running.  (The eleventh sample drew `counting__mutmut_28`, a look that
    remembered the take-up under no Workload's key, and it survived: every test delivered the requests' events, and the
    retry's first write still carries the first take-up's time.)"""
    caplog.set_level(logging.INFO, logger="deadline")
    name = clean.new_name("job-rule-relisted")
    key = f"{NS}/{name}"
    c = DeadlineController(Kube(kubeconfig, impersonate=SERVICE_ACCOUNTS["deadline"]), namespace=NS,
                           cleanup_ttl=TTL, resync=1.0, instance=CLASS)
    caches = ((JOB, c.jobs), (WORKLOAD, c.workloads), (PROVREQ, c.provreqs))

    def said() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == "deadline"]
    try:
        with Tape(k, [PROVREQ], NS) as tape:
            with in_force(k, take_up_refusal(unique, "relisted")) as loaded:
                wl = submitted_while_refused(clean, k, loaded, name)
                wl_name, wl_uid = meta(wl)["name"], meta(wl)["uid"]

                def requests() -> list[dict]:
                    return [pr for pr in k.list(PROVREQ, NS)[0] if owned_by(pr, wl_uid, controller=False)]
                own_fake_ca()                   # takes the request up, out of stock; retries it 5 s later
                first = wait_for(lambda: R.taken_up_at(requests()), 30, what="the fake to take the request up")
                for res, store in caches:       # filled by relists only: no event handler runs
                    relist(store, k.list(res, NS)[0])
                c.reconcile(key)                # its look reads the take-up; the record is refused
                could_not = f"deadline {key}: could not record the take-up on Workload {wl_name} ("
                assert [m for m in said() if m.startswith(could_not)], said()
                wait_for(lambda: (t := R.taken_up_at(requests())) is not None and t > first, 30,
                         what="the fake's retry to rewrite every answer's time")
                relist(c.provreqs, k.list(PROVREQ, NS)[0])      # all a relist shows now: the retry's times

            def looked() -> str | None:         # the policy gone (its removal reaches the apiserver soon after)
                c.reconcile(key)
                return annotations(k.get(WORKLOAD, wl_name, NS)).get(TAKEN_UP_ANNOTATION)
            recorded = wait_for(looked, 30, what="the take-up recorded at a look once the policy is gone")
            taken = accepted_times(tape, wl_uid)
        assert recorded is not None and parse_time(recorded) == min(taken) == first, (recorded, first, sorted(set(taken)))
        assert not committed_timeout(k.get(WORKLOAD, wl_name, NS)), "committed before the record: the test was late"
    finally:
        clean.delete_job(name)
        wait_for(lambda: not clean.leftovers(), 120, what="the test's Job and its Workload to go")


FORGOTTEN_WINDOW = 3             # seconds after the gangs' deletion over which no take-up of theirs may be kept
APART = 3                        # seconds between the first gang's recorded take-up and the second gang's submission


def test_each_workload_counts_from_its_own_take_up_not_from_another_gangs(clean, k, own_fake_ca, rule_controller,
                                                                         caplog):
    """One controller, two gangs taken up seconds apart (the fake running, the cloud out of stock): the take-up each
    Workload records (its admission-taken-up annotation, where its deadline counts from) is the earliest Accepted of
    its own requests, the second gang's later than the first's.  No test had two gangs taken up apart: the sample at
    9ba656e drew `counting__mutmut_22`, the controller's memory of each Workload's earliest take-up kept under one key
    for all of them, so that the second gang counted from the first gang's take-up, and it survived.

    While they wait (resyncs 1 s apart, the fake rewriting the requests), each gang's wait is said once, not at every
    look; and once the gangs are deleted, the controller keeps nothing of theirs (take-up, last words said), over a
    window in which their requests' last events come and each is looked at once more.  (The sample at 2163cb1 drew
    `on_workload__mutmut_9`, a deleted Workload never forgotten, which survived; the check then found that a look
    after a Job's deletion kept its last words again, "owner Job is gone", for good.  The draw of seed 8 at 4e0423d
    held `on_job__mutmut_4`, a deleted Job's words not forgotten by its deletion, which the look this test made
    afterwards forgot: the deletions alone must now forget them, before that look.  Checking it showed a request's
    event after its Workload's deletion remembering the Workload's take-up again, for good: the test now delivers
    each gang's last request event once more after the deletions.)"""
    caplog.set_level(logging.INFO, logger="deadline")
    names = [clean.new_name("job-rule-first"), clean.new_name("job-rule-second")]
    own_fake_ca()                                   # takes each request up as it comes, out of stock
    recorded: list[str] = []
    wls: list[dict] = []
    try:
        with Tape(k, [PROVREQ], NS) as tape:
            for name in names:
                if recorded:                        # the second comes once the first's take-up is seconds old
                    after = parse_time(recorded[-1]).timestamp() + APART
                    wait_for(lambda: time.time() >= after, APART + 30, what="the gap between the take-ups")
                uid = clean.submit(name, GANG, duration="5s", deadline=f"{REFUSED_BUDGET}s",
                                   provreq={PARAM_STOCKOUT: "true"},
                                   annotations={DEADLINE_CLASS_ANNOTATION: CLASS})["metadata"]["uid"]
                wl = wait_for(lambda: next((w for w in k.list(WORKLOAD, NS)[0] if owned_by(w, uid)), None), 30,
                              what=f"{name}'s Workload")
                wls.append(wl)
                recorded.append(wait_for(lambda: annotations(k.get(WORKLOAD, meta(wl)["name"], NS)).get(
                    TAKEN_UP_ANNOTATION), 30, what=f"the take-up recorded on {name}'s Workload"))
            time.sleep(1.0)                         # the Tape sees the last request's versions
        for name, wl, rec in zip(names, wls, recorded):
            own = accepted_times(tape, meta(wl)["uid"])
            assert own and parse_time(rec) == min(own), (name, rec, sorted(set(own)))
            assert not committed_timeout(k.get(WORKLOAD, meta(wl)["name"], NS)), f"{name}: committed: the test was late"
        assert parse_time(recorded[1]) > parse_time(recorded[0]), recorded
        said = [r.getMessage() for r in caplog.records if r.name == "deadline"]
        for name in names:
            waits = [m for m in said if m.startswith(routing.no_op_line(f"{NS}/{name}", "not admitted yet; "))]
            assert len(waits) == 1, f"{name}'s wait said {len(waits)} times: {waits[:4]}"
        theirs = {meta(wl)["uid"] for wl in wls} | {f"{NS}/{name}" for name in names}
        assert theirs <= rule_controller.remembered(), (theirs, rule_controller.remembered())
    finally:
        for name in names:
            clean.delete_job(name)
        wait_for(lambda: not clean.leftovers(), 120, what="the test's Jobs and their Workloads to go")
    # the deletions alone (on_job, on_workload) forget them, before any look at the gangs: their waits' timers are
    # still tens of seconds away
    forgot = poll.eventually(lambda: not theirs & rule_controller.remembered(), 5)
    assert forgot, f"kept after the gangs' deletion: {theirs & rule_controller.remembered()}"
    for name in names:      # a look at each after its Job's deletion (a resync's, queued before it): nothing kept
        rule_controller.queue.add(f"{NS}/{name}")
    for wl in wls:          # nor by a request's last event delivered after its Workload's deletion (the watches of the
        last = [o for _, typ, o in tape.changes if owned_by(o, meta(wl)["uid"], controller=False)][-1]
        rule_controller.on_provreq(Event.DELETED, last)     # two kinds deliver in no order), its take-up in it
    window = time.monotonic() + FORGOTTEN_WINDOW
    while time.monotonic() < window:
        assert not theirs & rule_controller.remembered(), "a deleted gang was remembered again"
        time.sleep(0.1)


RESTART_CLASS = "rule-restart"   # served only by the restart test's own controller process
RESTART_BUDGET = 30              # seconds: the restart test's deadline; its slack is 10 s (R.TAKE_UP_SLACK)
RESTART_WINDOW = 14              # seconds after the submission without an autoscaler: the take-up comes late


def records(tape: Tape, job_uid: str) -> list[tuple[float, str]]:
    """Every take-up recorded on the Job's Workloads the Tape saw: (when seen, the annotation's value)."""
    return [(t, annotations(o)[TAKEN_UP_ANNOTATION]) for t, typ, o in tape.changes
            if kind_of(o) == "Workload" and owned_by(o, job_uid) and TAKEN_UP_ANNOTATION in annotations(o)]


def test_a_controller_killed_after_the_take_up_keeps_its_deadline_across_the_retry(clean, k, own_fake_ca):
    name = clean.new_name("job-rule-restart")
    ctl = start_private(clean, DEADLINE_LEASE_PREFIX + RESTART_CLASS,
                        ["deadline", "--class", RESTART_CLASS, "--namespace", NS, "--cleanup-ttl", f"{TTL:g}s",
                         "--resync", "1s"], "deadline controller (restart test)")
    slack = R.slack_of(RESTART_BUDGET)
    try:
        with Tape(k, [JOB, WORKLOAD, PROVREQ], NS) as tape:
            job = clean.submit(name, GANG, duration="5s", deadline=f"{RESTART_BUDGET}s",
                               provreq={PARAM_STOCKOUT: "true"}, annotations={DEADLINE_CLASS_ANNOTATION: RESTART_CLASS})
            created, uid = created_at(job).timestamp(), job["metadata"]["uid"]
            wait_for(lambda: time.time() >= created + RESTART_WINDOW, RESTART_WINDOW + 10,
                     what="the window without an autoscaler")
            own_fake_ca()                       # takes the request up at last, out of stock
            recorded = wait_for(lambda: records(tape, uid), 30, what="the controller to record the take-up")
            ctl.kill9()
            killed_at = time.time()
            first = parse_time(recorded[0][1])

            def rewritten() -> bool:
                wl_uids = {meta(o)["uid"] for _, typ, o in tape.changes if kind_of(o) == "Workload"
                           and owned_by(o, uid)}
                return any((transition_time(o, ACCEPTED) or first) > first for _, o in requests_of(tape, wl_uids))
            wait_for(rewritten, 30, what="the autoscaler's retry to rewrite the take-up's time")
            restarted_at = time.time()
            ctl.start(clean.kubeconfig)         # its memory is gone; the requests show only the rewrite now
            wait_for(lambda: ctl.messages().count(f"deadline: {READY_LINE}") == 2, 30,
                     what="the restarted controller's caches")
            ready_at = time.time()
            wait_for(lambda: first_commit(tape, uid), 60, what="the restarted controller's commit")
            wait_for(lambda: not k.get_or_none(JOB, name, NS), 60, what="the restarted controller's cleanup")
            time.sleep(1.0)                     # the Tape sees the deletion

        wl_uids = {meta(o)["uid"] for _, typ, o in tape.changes if kind_of(o) == "Workload" and owned_by(o, uid)}
        taken = [(t, o) for t, o in requests_of(tape, wl_uids) if transition_time(o, ACCEPTED)]
        take_up = transition_time(taken[0][1], ACCEPTED)
        # the record is the first take-up, late (past the slack), written before the kill and never moved
        assert first == take_up, f"recorded {recorded[0][1]}, the first take-up was {take_up}"
        assert take_up.timestamp() - created > slack, "the take-up was not late: the restart could not move it"
        assert recorded[0][0] < killed_at
        assert {v for _, v in records(tape, uid)} == {recorded[0][1]}, "the record changed"
        # the retry rewrote Accepted before the restart: what the requests showed the restarted controller was later
        rewrites = sorted({transition_time(o, ACCEPTED) for t, o in taken if t < restarted_at} - {take_up})
        assert rewrites and min(rewrites) > take_up, rewrites
        # the deadline is the first take-up's, not the rewrite's; the restart came before it
        due = take_up.timestamp() + RESTART_BUDGET - slack
        from_rewrite = min(rewrites).timestamp() + RESTART_BUDGET - slack
        assert from_rewrite > due + dl.COMMIT_TOLERANCE, "the rewrite's deadline would fall within the tolerance"
        assert ready_at < due, f"the controller was ready {ready_at - due:.2f}s after the deadline"
        t_commit, wl = first_commit(tape, uid)
        assert 0 <= t_commit - due <= dl.COMMIT_TOLERANCE, \
            f"committed {t_commit - take_up.timestamp():.2f}s after the first take-up (bound {due - take_up.timestamp():g}s)"
        assert (annotations(wl)[DECISION_BOUND_ANNOTATION], annotations(wl)[DECISION_WAITING_ANNOTATION]) \
            == ("taken-up", "capacity"), annotations(wl)
        h = history(tape, name, uid)
        assert violations(h, expect_deleted=True) == [], violations(h, expect_deleted=True)
    finally:
        ctl.stop()
        if ctl in clean.started:
            clean.started.remove(ctl)
        clean.delete_job(name)
        wait_for(lambda: not clean.leftovers(), 120, what="the test's Job and its Workload to go")
