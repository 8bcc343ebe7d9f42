"""MultiKueue on one machine: a manager dispatches a 2 × 8-GPU gang to two workers, each of which holds it with its own
ProvisioningRequest check until its own autoscaler has the nodes; the admission deadline runs on the manager.

1. Kueue v0.19.2's two MultiKueue provisioning specs (test/integration/multikueue/provisioning_test.go), end to
   end: worker-1 gets capacity after a stock-out, worker-2 never; every condition is written by an autoscaler.
2. One worker out of stock, the other with capacity: the gang runs where the nodes are (kubernetes-sigs/kueue#8089).
3. Both out of stock: nothing in Kueue ends the wait; the manager's admission deadline does, and nothing is left
   on any worker.
4. The race across clusters: a worker admits while the manager's deadline commits, both ways.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

from demo.deadline import invariants
from fake_ca.conditions import Reason
from demo.jobs.observe import snapshot
from demo.jobs.snapshot import Snapshot
from demo.timeline import svg
from k8s import hooks
from k8s import job as jobs
from k8s import workload as workloads
from k8s.keys import (ACCEPTED, CHECK_NAME, DEACTIVATED, DEADLINE_CLASS_ANNOTATION, DEADLINE_LEASE_PREFIX,
                      DEFAULT_DEADLINE_CLASS, EVICTED, FAILED, MULTIKUEUE_CHECK, MULTIKUEUE_CONTROLLER,
                      MULTIKUEUE_WORKERS, PROVISIONED, CheckState)
from k8s.objects import condition, created_at, is_true, meta, spec
from k8s.paths import shown
from k8s import heartbeat
from k8s.tape import first

from ..kit.controllers import race_controller
from ..kit.harness import NS, Context
from ..kit.scenario import Report, Scenario
from ..kit.recorder import check_commit_bound
from ..kit import toolbox
from ..kit.toolbox import AUTOSCALER_MANAGERS
from . import checks, kit
from .kit import Trio, Worker

W1, W2 = MULTIKUEUE_WORKERS
SOURCE = "test/integration/multikueue/provisioning_test.go"           # at tag v0.19.2
SPEC_1 = "Should create workload on worker and provision resources"
SPEC_2 = "Should wait for admission before deleting non-selected worker workloads"
CAPACITY_BACK = "12s"       # worker-1's stock-out: its request is refused until 12s old, provisioned at its next retry
GONE_WITHIN = 10.0          # seconds: MultiKueue removes a copy this soon after the decision that ends it
WINDOW = 15.0               # seconds the workers are watched for anything coming back
RACE_DEADLINE = 8           # seconds after submission
NEEDS_FAKE = "each worker's stock-out is its fake autoscaler's --stockout"
REPORT_8089 = Report(
    number="kubernetes-sigs/kueue#8089", title="MultiKueue: admission stuck when the chosen worker cannot provision",
    claim="when MultiKueue chooses a worker whose ProvisioningRequest fails (a stock-out), admission is stuck there",
    fixed_in="closed; v0.18 made MultiKueueWaitForWorkloadAdmitted GA (locked on): a worker is chosen only once its "
             "copy is Admitted, i.e. after its own checks")


def _manager_now(ctx: Context, name: str) -> tuple[dict | None, dict | None]:
    """The manager's Job and Workload, read now (not from the recorder)."""
    s = snapshot(ctx.k, NS, name)
    return s.job, s.workload


def _check_writers(ctx: Context, trio: Trio) -> None:
    writers = checks.conditions_written(trio.worker_views())
    wrong = checks.not_written_by(writers, AUTOSCALER_MANAGERS)
    ctx.check(bool(writers) and not wrong,
              f"every ProvisioningRequest condition on the workers was written by their autoscalers "
              f"({', '.join(sorted(writers)) or 'none seen'}){': ' + '; '.join(wrong) if wrong else ''}")


def _check_undisturbed(ctx: Context, trio: Trio) -> None:
    broken = checks.disturbed(trio.manager_views(), trio.worker_views())
    ctx.check(not broken, "the Job that ran on a worker was never reported failed or timed out, nor deleted there "
                          f"before it finished{': ' + '; '.join(broken) if broken else ''}")


def _present(v: Snapshot) -> bool:
    return v.workload is not None or bool(v.provreqs) or v.job is not None


def _gone_for_good(ctx: Context, worker: str, vs: checks.Snapshots, decided: float | None, window: float) -> None:
    """After the manager's commit: the worker's copy, its request and any Job went within GONE_WITHIN and nothing
    came back for `window` seconds.  A copy MultiKueue re-creates meanwhile is said, and must be inactive and hold
    no quota (Kueue v0.19.2 deletes the copies as out of sync with the now inactive manager Workload, dispatches
    it again, inactive, until the manager's eviction releases its quota, then deletes them for good)."""
    removed, back = checks.settled(vs, decided, _present)
    ok, seen = checks.throughout(vs, removed, removed + window, lambda v: not _present(v)) if removed else (False, "")
    harmless = all(v.workload is None or (not workloads.active(v.workload) and not workloads.holds_quota(v.workload))
                   for v in back)
    again = (f"; meanwhile MultiKueue re-created the copy ({len(back)} sample(s)), inactive and holding no quota, and "
             "deleted it again" if back else "")
    ctx.check(decided is not None and removed is not None and removed - decided <= GONE_WITHIN and ok and harmless,
              f"{worker}: its Workload and request were gone for good "
              f"{removed - decided if removed and decided else float('nan'):.2f}s after the commit{again}; nothing "
              f"came back in the {window:.0f}s after ({seen})")


def _picture(ctx: Context, path: Path, title: str) -> None:
    picture = svg.write(path, path.with_suffix(".svg"), title)
    ctx.say(f"  timeline: {shown(picture)}")


# ---------------------------------------------------------------------------- 1. Kueue's two specs

def run_specs(ctx: Context) -> None:
    ws = kit.workers(ctx)
    kit.open_scenario(ctx, ws, "MultiKueue with ProvisioningRequest: Kueue v0.19.2's two specs, end to end",
                      {W1: CAPACITY_BACK, W2: "forever"})
    ctx.say(f"  upstream: {SOURCE} (envtest: quota on every cluster and the request's Provisioned condition set by "
            "hand)")
    ctx.say("  here:     real schedulers on all three clusters, each worker's own autoscaler writes the conditions")
    name = ctx.new_name("job-mk")
    log, path = ctx.event_log("multikueue-kueue-specs")
    try:
        with Trio(ctx, ws, name, log) as trio:
            ctx.step("Submit a 2 × 8-GPU gang to the manager's queue")
            trio.submitted(ctx.submit(name, "2x8", duration="5s"))
            job, _ = _manager_now(ctx, name)
            ctx.check(spec(job).get("managedBy") == MULTIKUEUE_CONTROLLER,
                      f"Kueue's webhook set the manager Job's spec.managedBy={MULTIKUEUE_CONTROLLER}: the manager's "
                      "own Job controller runs no pod of it")
            ctx.wait(lambda: all(trio.now(w.name).workload for w in ws), 30, "a copy of the Workload on each worker")
            dispatched = time.time()
            trio.mark("dispatched to both")
            ctx.wait(lambda: all(trio.now(w.name).provreqs for w in ws), 30, "a ProvisioningRequest on each worker")
            ctx.check(all(workloads.quota_reserved(trio.now(w.name).workload) for w in ws),
                      "the manager reserved quota and dispatched to both workers (AllAtOnce); each worker's scheduler "
                      "reserved quota and its provisioning check made a request")
            ctx.step(f"spec 2 ({SPEC_2!r}): worker-1's request is provisioned only after its stock-out; worker-2's copy "
                     "must stay until worker-1 is admitted")
            ctx.wait(lambda: workloads.admitted(trio.now(W1).workload), 60, "worker-1 to admit its copy")
            by = trio.worker_views()
            admitted_at = first(by[W1], lambda v: workloads.admitted(v.workload))
            trio.mark(f"{W1} admitted")
            ok, seen = checks.throughout(by[W2], dispatched, admitted_at - 0.05, lambda v: v.workload is not None)
            ctx.check(ok, f"spec 2: worker-2's Workload existed all the {admitted_at - dispatched:.1f}s worker-1 was "
                          f"not admitted ({seen})")
            pr1 = next((v.provreqs[-1] for _, v in by[W1] if v.provreqs and is_true(v.provreqs[-1], PROVISIONED)), None)
            before = [(condition(v.provreqs[-1], PROVISIONED) or {}).get("reason") for _, v in by[W1] if v.provreqs]
            ctx.check(pr1 is not None and Reason.NOT_FOUND in before,
                      f"spec 1: worker-1's request {meta(pr1).get('name', '?')} went Provisioned=True after "
                      f"CapacityIsNotFound (its autoscaler's stock-out), written by that autoscaler")
            ctx.check(workloads.check_state(trio.now(W1).workload, CHECK_NAME) == CheckState.READY
                      and bool(trio.now(W1).workload.get("status", {}).get("admission")),
                      "spec 1: the provisioning check is Ready on worker-1 and its Workload has an admission")
            wl = ctx.wait(lambda: (w := _manager_now(ctx, name)[1]) and workloads.admitted(w) and w, 30,
                          "the manager's Workload to be admitted")
            entry = workloads.admission_check(wl, MULTIKUEUE_CHECK) or {}
            ctx.check(entry.get("state") == CheckState.READY and workloads.cluster_name(wl) == W1
                      and bool(wl.get("status", {}).get("admission")),
                      f"spec 1: the multikueue check is Ready on the manager ({entry.get('message')!r}) and the "
                      "manager's Workload is admitted")
            ctx.wait(lambda: trio.now(W2).workload is None, GONE_WITHIN, "worker-2's copy to be deleted")
            by = trio.worker_views()
            gone = first(checks.after(by[W2], admitted_at), lambda v: v.workload is None)
            ctx.check(gone is not None and 0 <= gone - admitted_at <= GONE_WITHIN,
                      f"spec 2: worker-2's Workload was deleted {gone - admitted_at:.2f}s after worker-1 admitted "
                      "(bound: 0 to 10s), and the multikueue check on the manager is Ready")
            ctx.step("The gang runs on worker-1; its status comes back to the manager's Job")
            ctx.wait(lambda: jobs.outcome(_manager_now(ctx, name)[0]) == "succeeded", 90, "the manager's Job to succeed")
            _recorded_success(ctx, trio)
        by = trio.worker_views()
        made = checks.nodes_for(by[W1])
        ctx.check(len(checks.pods_on(by[W1])) == 2 and checks.pods_on(by[W1]) <= made and not checks.job_uids(by[W2])
                  and not checks.nodes_for(by[W2]),
                  f"both pods ran on the nodes worker-1's autoscaler made for its request "
                  f"({', '.join(sorted(checks.pods_on(by[W1])))}); worker-2 never had the Job and made no node")
        _check_writers(ctx, trio)
        _check_undisturbed(ctx, trio)
        _picture(ctx, path, "MultiKueue: Kueue's two provisioning specs, end to end")
    finally:
        kit.finish(ctx, ws, name)


# ---------------------------------------------------------------------------- 2. one worker out of stock

def _recorded_success(ctx: Context, trio: Trio) -> None:
    """Wait until the manager's recorder has seen what a live read just showed, the Job succeeded (its watch can
    be a moment behind the apiserver's answer)."""
    ctx.wait(lambda: trio.manager.first(lambda s: jobs.outcome(s.job) == "succeeded") is not None, 10,
             "the manager's recorder to see the Job succeed")


def _stocked_out(v: Snapshot) -> bool:
    """The worker's latest request was answered Provisioned=False/CapacityIsNotFound by its autoscaler."""
    return bool(v.provreqs) and (condition(v.provreqs[-1], PROVISIONED) or {}).get("reason") == Reason.NOT_FOUND


def _since(t: float | None, t0: float) -> str:
    return f"{t - t0:.2f}s" if t is not None else "never"


def run_one_stocked_out(ctx: Context) -> None:
    ws = kit.workers(ctx)
    kit.open_scenario(ctx, ws, "MultiKueue: worker-1 out of stock, worker-2 with capacity", {W1: "forever"})
    ctx.say(f"  {REPORT_8089.number}: {REPORT_8089.claim}")
    name = ctx.new_name("job-mk")
    log, path = ctx.event_log("multikueue-one-worker-stocked-out")
    worker_2 = next(w for w in ws if w.name == W2)
    try:
        with Trio(ctx, ws, name, log) as trio:
            ctx.step("Submit the 2 × 8 gang to the manager while worker-2's ClusterQueue is on hold: the stocked-out "
                     "worker-1 reserves quota and hears from its autoscaler first, the case kueue#8089 describes")
            with kit.held(ctx, worker_2):
                job = ctx.submit(name, "2x8", duration="5s")
                trio.submitted(job)
                ctx.wait(lambda: _stocked_out(trio.now(W1)), 30, "worker-1's autoscaler to answer its request")
                trio.mark(f"{W1} out of stock")
            ctx.step("Release worker-2's ClusterQueue: it reserves quota, its autoscaler provisions, it admits")
            ctx.wait(lambda: workloads.admitted(trio.now(W2).workload), 60, "worker-2 to admit its copy")
            trio.mark(f"{W2} admitted")
            ctx.wait(lambda: jobs.outcome(_manager_now(ctx, name)[0]) == "succeeded", 90, "the manager's Job to succeed")
            _recorded_success(ctx, trio)
        by, manager = trio.worker_views(), trio.manager_views()
        ctx.check(len(checks.pods_on(by[W2])) == 2 and checks.pods_on(by[W2]) <= checks.nodes_for(by[W2])
                  and not checks.nodes_for(by[W1]) and not checks.job_uids(by[W1]),
                  f"the gang ran on the nodes worker-2's autoscaler made for its request "
                  f"({', '.join(sorted(checks.pods_on(by[W2])))}); worker-1 made no node and never had the Job")
        chosen = next((workloads.cluster_name(v.workload) for _, v in reversed(manager)
                       if workloads.cluster_name(v.workload)), "")
        ctx.check(chosen == W2, f"the manager's Workload records clusterName={chosen!r}")
        ctx.step("Meanwhile, what Kueue v0.19.2 did with worker-1's copy and its request")
        reserved = checks.holds_quota_since(by[W1])
        asked = first(by[W1], lambda v: bool(v.provreqs))
        refused = [(condition(v.provreqs[-1], PROVISIONED) or {}) for _, v in by[W1] if v.provreqs]
        reasons = sorted({c.get("reason") for c in refused if c.get("reason")})
        admitted_at = first(by[W2], lambda v: workloads.admitted(v.workload))
        gone = first(checks.after(by[W1], admitted_at), lambda v: v.workload is None)
        pr_gone = first(checks.after(by[W1], admitted_at), lambda v: not v.provreqs)
        pending = all(workloads.check_state(v.workload, CHECK_NAME) in (None, CheckState.PENDING)
                      for _, v in by[W1])
        ctx.check(reserved is not None and asked is not None and Reason.NOT_FOUND in reasons and pending,
                  f"worker-1 reserved quota for its copy and made a request, which its autoscaler answered "
                  f"Provisioned=False ({', '.join(reasons) or 'nothing'}); its check stayed Pending, never Retry or "
                  "Rejected (a stock-out is not Failed)")
        answered = first(by[W1], _stocked_out)
        reserved_2 = checks.holds_quota_since(by[W2])
        t0 = created_at(job).timestamp()
        ctx.check(reserved is not None and answered is not None and reserved_2 is not None
                  and reserved < answered < reserved_2,
                  f"worker-1 was first in every way: quota at {_since(reserved, t0)}, its autoscaler's CapacityIsNotFound "
                  f"at {_since(answered, t0)}, worker-2's quota only at {_since(reserved_2, t0)} (after its release)")
        ctx.check(gone is not None and pr_gone is not None and gone - admitted_at <= GONE_WITHIN,
                  f"MultiKueue deleted worker-1's Workload {gone - admitted_at if gone else float('nan'):.2f}s after "
                  f"worker-2 admitted, and its request went with it "
                  f"({pr_gone - admitted_at if pr_gone else float('nan'):.2f}s)")
        d = checks.stuck_dispatch(manager, by, W1, created_at(job).timestamp())
        _check_writers(ctx, trio)
        _check_undisturbed(ctx, trio)
        picture = svg.write(path, path.with_suffix(".svg"), "MultiKueue: one worker out of stock")
        toolbox.verdict(ctx, REPORT_8089, d.reproduced, d.evidence,
                         "none needed: MultiKueue waits for a worker's admission (its own provisioning check) before "
                         "it chooses; the admission deadline on the manager bounds it if no worker ever can",
                         shown(picture))
    finally:
        kit.finish(ctx, ws, name)


# ---------------------------------------------------------------------------- 3. both out of stock

DEADLINE = 20       # seconds after submission


def run_both_stocked_out(ctx: Context) -> None:
    ws = kit.workers(ctx)
    kit.open_scenario(ctx, ws, "MultiKueue: both workers out of stock; only the manager's admission deadline ends the "
                      "wait", {W1: "forever", W2: "forever"})
    ctx.require(heartbeat.alive(ctx.k, DEADLINE_LEASE_PREFIX + DEFAULT_DEADLINE_CLASS),
                "the admission-deadline controller runs against the manager")
    ctx.check(kit.no_deadline_on_workers(ws), "no deadline controller runs on a worker (the remote Jobs carry the "
                                              "manager Job's deadline annotation; only the manager's decides)")
    name = ctx.new_name("job-mk")
    log, path = ctx.event_log("multikueue-both-workers-stocked-out")
    try:
        with Trio(ctx, ws, name, log) as trio:
            ctx.step(f"Submit the gang to the manager with --deadline {DEADLINE}s")
            job = ctx.submit(name, "2x8", duration="5s", deadline=f"{DEADLINE}s")
            trio.submitted(job)
            created = created_at(job).timestamp()
            trio.mark("deadline", t=created + DEADLINE)
            ctx.wait(lambda: all(trio.now(w.name).provreqs for w in ws), 30, "a request on each worker")
            ctx.step("Nothing in Kueue ends this: the manager's multikueue check stays Pending (kubernetes-sigs/kueue#8602,"
                     " open: 'a mechanism to give up at some point')")
            ctx.wait(lambda: time.time() >= created + DEADLINE - 2, DEADLINE + 5, "just before the deadline")
            _, wl = _manager_now(ctx, name)
            now = {w.name: trio.now(w.name) for w in ws}
            ctx.check(workloads.check_state(wl, MULTIKUEUE_CHECK) == CheckState.PENDING and not workloads.admitted(wl)
                      and all(workloads.check_state(v.workload, CHECK_NAME) == CheckState.PENDING
                              and v.provreqs and is_true(v.provreqs[-1], ACCEPTED)
                              and not is_true(v.provreqs[-1], PROVISIONED) and not is_true(v.provreqs[-1], FAILED)
                              for v in now.values())
                      and not any(checks.nodes_for(vs) for vs in trio.worker_views().values()),
                      f"{DEADLINE - 2}s in: the manager's check Pending, on each worker the check Pending and the "
                      "request Accepted, not Provisioned, not Failed; no node anywhere")
            ctx.step("The admission deadline, on the manager")
            committed = ctx.wait(lambda: (w := _manager_now(ctx, name)[1]) and workloads.committed_timeout(w) and w,
                                 DEADLINE + 10, "the deadline's commit on the manager's Workload")
            check_commit_bound(ctx, trio.manager, deadline_at=created + DEADLINE)
            ctx.wait(lambda: all(trio.now(w.name).workload is None and not trio.now(w.name).provreqs for w in ws),
                     GONE_WITHIN, "MultiKueue to remove the workers' copies")
            gone = time.time()
            trio.mark("copies removed")
            ctx.step(f"Watch the workers for {WINDOW:.0f}s: nothing may come back")
            ctx.wait(lambda: time.time() >= gone + WINDOW, WINDOW + 5, "the window to pass")
            ctx.wait(lambda: _manager_now(ctx, name)[0] is None, 60, "the deadline's cleanup to delete the manager's Job")
            ctx.wait(lambda: trio.manager.gone_at() is not None, 10, "the manager's recorder to see the Job go")
        by, manager = trio.worker_views(), trio.manager_views()
        decided = checks.committed_at(manager)
        for w in ws:
            _gone_for_good(ctx, w.name, by[w.name], decided, WINDOW)
            ctx.check(not checks.nodes_for(by[w.name]), f"{w.name}: no node was ever made for the Job")
        ctx.check(any((condition(v.workload, EVICTED) or {}).get("reason") == DEACTIVATED for _, v in manager)
                  and not any(workloads.admitted(v.workload) for _, v in manager),
                  "the manager's Workload was evicted (Deactivated) and never admitted")
        ok, seen = trio.manager.cleaned_up_after_ttl()
        ctx.check(any(jobs.mirrored(v.job) for _, v in manager) and ok,
                  f"the manager's Job was marked AdmissionTimeout, and cleanup deleted it after its TTL ({seen})")
        history = invariants.History(name, [v.job for _, v in manager if v.job], [v.workload for _, v in manager if v.workload])
        broken = invariants.violations(history)
        ctx.check(not broken and bool(committed), f"the protocol's invariants hold on the manager"
                                                  f"{': ' + '; '.join(broken) if broken else ''}")
        _check_writers(ctx, trio)
        _picture(ctx, path, "MultiKueue: both workers out of stock, the manager's deadline ends it")
    finally:
        kit.finish(ctx, ws, name)


# ---------------------------------------------------------------------------- 4. the race, across clusters

def _race(ctx: Context, ws: list[Worker], point: str) -> dict:
    """One interleaving: the manager's deadline controller (a race instance of its own) paused at `point` for the
    Job; worker-1 gets capacity at CAPACITY_BACK, worker-2 never."""
    cls = "race-multikueue"
    ctl = race_controller(ctx, cls, "committed", hooks=True)
    hook_dir = ctl.scratch
    name = ctx.new_name("job-mkrace")
    key = f"{NS}/{name}"
    hooks.arm(hook_dir, point, key)
    label = "admission-wins" if point == "before-commit" else "timeout-wins"
    log, path = ctx.event_log(f"multikueue-race-{label}")
    facts: dict = {"name": name}
    try:
        with Trio(ctx, ws, name, log) as trio:
            ctx.step(f"Submit with --deadline {RACE_DEADLINE}s; worker-1's cloud is out of stock until its request is "
                     f"{CAPACITY_BACK} old, worker-2's for good")
            job = ctx.submit(name, "2x8", duration="5s", deadline=f"{RACE_DEADLINE}s",
                             annotations={DEADLINE_CLASS_ANNOTATION: cls})
            trio.submitted(job)
            created = created_at(job).timestamp()
            info = hooks.wait_reached(hook_dir, point, key, timeout=60)
            if point == "before-commit":
                trio.mark("deadline: controller paused")
                job, wl = _manager_now(ctx, name)
                ctx.check(workloads.quota_reserved(wl) and not workloads.admitted(wl),
                          f"the controller read the manager's Workload at rv {info.get('resource_version')}: quota "
                          "reserved, multikueue check Pending, not admitted; it is paused before its commit")
                ctx.step("Meanwhile capacity comes back on worker-1: its autoscaler provisions, worker-1 admits, "
                         "MultiKueue marks the manager's check Ready and the manager admits")
                ctx.wait(lambda: workloads.admitted(_manager_now(ctx, name)[1]), 60, "the manager to admit")
                trio.mark("manager admitted")
                ctx.check(hooks.parked(hook_dir, point, key) and "committed timeout" not in ctl.log_text(),
                          "worker-1 admitted and the manager followed while the controller was still parked")
                hooks.release(hook_dir, point, key)
                trio.mark("controller released")
                ctx.wait(lambda: "409" in ctl.log_text() and name in ctl.log_text(), 30, "the controller's 409")
                ctx.wait(lambda: jobs.outcome(_manager_now(ctx, name)[0]) == "succeeded", 90,
                         "the manager's Job to succeed")
            else:
                trio.mark("timeout committed")
                check_commit_bound(ctx, trio.manager, deadline_at=created + RACE_DEADLINE)
                job, wl = _manager_now(ctx, name)
                ctx.check(workloads.committed_timeout(wl) and not workloads.admitted(wl) and not jobs.mirrored(job),
                          "the controller committed the timeout first, on the manager's Workload only (paused right "
                          "after)")
                ctx.step("Kueue evicts the manager's Workload; MultiKueue removes the copies before worker-1's "
                         "capacity comes back")
                ctx.wait(lambda: all(trio.now(w.name).workload is None for w in ws), GONE_WITHIN,
                         "the workers' copies to go")
                back = created + RACE_DEADLINE + 8
                ctx.wait(lambda: time.time() >= back, 30, "past the moment worker-1's capacity comes back")
                hooks.release(hook_dir, point, key)
                ctx.wait(lambda: _manager_now(ctx, name)[0] is None, 60, "mirror, cleanup TTL and deletion")
                ctx.wait(lambda: time.time() >= back + WINDOW / 3, 30, "the workers to be watched a while longer")
            if point == "before-commit":
                _recorded_success(ctx, trio)
            else:
                ctx.wait(lambda: trio.manager.gone_at() is not None, 10, "the manager's recorder to see the Job go")
        facts.update(log=ctl.log_text(), manager=trio.manager_views(), workers=trio.worker_views(),
                     gone=trio.manager.gone_at())
        _picture(ctx, path, f"MultiKueue race: {label.replace('-', ' ')}")
        return facts
    finally:
        ctl.stop()
        kit.finish(ctx, ws, name)


def _invariants(ctx: Context, f: dict, what: str) -> None:
    manager = f["manager"]
    history = invariants.History(f["name"], [v.job for _, v in manager if v.job],
                                 [v.workload for _, v in manager if v.workload])
    if f["gone"] is not None:
        history.deleted_at = datetime.fromtimestamp(f["gone"], timezone.utc)
    broken = invariants.violations(history)
    ctx.check(not broken, f"{what}: the single-cluster race's invariants hold on the manager's Job and Workload"
                          f"{': ' + '; '.join(broken) if broken else ''}")


def run_race(ctx: Context) -> None:
    ws = kit.workers(ctx)
    kit.open_scenario(ctx, ws, "MultiKueue race: a worker admits while the manager's deadline commits",
                      {W1: CAPACITY_BACK, W2: "forever"})
    ctx.step("1. Admission wins: the controller is paused before its commit while worker-1 admits")
    a = _race(ctx, ws, "before-commit")
    manager, by = a["manager"], a["workers"]
    ctx.check("409 conflict" in a["log"] and "admission won" in a["log"],
              "admission wins: the controller's patch got 409, it read again, saw Admitted=True and backed off")
    ctx.check(not any(workloads.committed_timeout(v.workload) for _, v in manager)
              and not any(jobs.mirrored(v.job) for _, v in manager),
              "admission wins: the manager's Workload never carried a timeout, its Job was never marked")
    ctx.check(any(checks.ran(v) for _, v in by[W1]) and any(jobs.outcome(v.job) == "succeeded" for _, v in manager),
              "admission wins: the Job ran on worker-1 and the manager's Job succeeded")
    broken = checks.disturbed(manager, by)
    ctx.check(not broken, "admission wins: the Job that ran on worker-1 was never reported failed nor deleted before "
                          f"it finished{': ' + '; '.join(broken) if broken else ''}")
    _invariants(ctx, a, "admission wins")
    ctx.step("2. Timeout wins: the controller commits first, worker-1's capacity comes back after")
    b = _race(ctx, ws, "after-commit")
    manager, by = b["manager"], b["workers"]
    ctx.check(any((condition(v.workload, EVICTED) or {}).get("reason") == DEACTIVATED for _, v in manager)
              and not any(workloads.admitted(v.workload) for _, v in manager),
              "timeout wins: Kueue evicted the manager's Workload (Deactivated); it was never admitted")
    decided = checks.committed_at(manager)
    admitted_on = [w for w in by if any(workloads.admitted(v.workload) for _, v in by[w])]
    ctx.check(not admitted_on, "timeout wins: no worker ever admitted its copy"
                               f"{': ' + ', '.join(admitted_on) + ' did' if admitted_on else ''}")
    ctx.check(not any(checks.nodes_for(by[w]) for w in by),
              "timeout wins: no node was made on either worker, though worker-1's capacity came back after the commit")
    started_on = [w for w in by if any(jobs.started(v.job) or v.pods for _, v in by[w])]
    copies = {w: s for w in by if (s := checks.span(by[w], lambda v: v.job is not None))}
    ctx.check(not started_on and (not copies or decided is not None and min(a for a, _ in copies.values()) >= decided),
              "timeout wins: no worker ever started the Job (no copy of it unsuspended, no pod)"
              f"{': ' + ', '.join(started_on) + ' did' if started_on else ''}"
              + "".join(f"; MultiKueue created a suspended copy of the Job on {w} "
                        f"{a - decided if decided else float('nan'):.2f}s after the commit and deleted it "
                        f"{b - a:.2f}s later (it syncs the Job to a worker whose copy is Evicted while the manager's "
                        "Workload is evicted and still holds quota: Kueue v0.19.2 multikueue/workload.go, step 4)"
                        for w, (a, b) in copies.items()))
    for w in by:
        _gone_for_good(ctx, f"timeout wins: {w}", by[w], decided, WINDOW / 2)
    ctx.check(any(jobs.mirrored(v.job) for _, v in manager) and b["gone"] is not None,
              "timeout wins: the manager's Job was mirrored, then cleaned up")
    _invariants(ctx, b, "timeout wins")


SCENARIOS = (
    Scenario("multikueue-kueue-specs", "multikueue",
             "Kueue's 2 MultiKueue provisioning specs: dispatched to both, kept until worker-1 admits",
             run_specs, needs_fake=NEEDS_FAKE),
    Scenario("multikueue-one-worker-stocked-out", "multikueue",
             "one worker out of stock: the gang runs on the one that provisions", run_one_stocked_out,
             needs_fake=NEEDS_FAKE, report=REPORT_8089),
    Scenario("multikueue-both-workers-stocked-out", "multikueue",
             "both out of stock: the manager's deadline ends it; nothing left on any worker", run_both_stocked_out,
             needs_fake=NEEDS_FAKE),
    Scenario("multikueue-race", "multikueue",
             "a worker admits while the manager's deadline commits: 409 and back off; or commit, copies removed",
             run_race, needs_fake=NEEDS_FAKE),
)
