"""Race path: Kueue admits at the very moment the admission deadline fires.

The interleavings are made deterministic with the deadline controller's pause points
(k8s/hooks.py), not with sleeps: the scenario arms a point, waits until the controller
is parked there, changes the world, then releases it (or kills it with SIGKILL).

1. Admission wins: the controller has read the Workload (quota reserved, check pending)
   and is paused before its commit; the autoscaler provisions and Kueue admits; the
   controller's patch gets 409, it reads again, sees Admitted=True and backs off.
2. Timeout wins: the controller commits first; Kueue evicts (Deactivated), deletes the
   ProvisioningRequest; the Job is never unsuspended; mirror, cleanup, pool back to 0.
3. Legacy protocol: interleaving 1 under the reviewed design's order marks a running Job
   failed and deletes it -- the bug, reproduced on real Kueue; then 1 again, fixed.
4. Interrupted mirror: SIGKILL right after the commit; on restart the controller mirrors
   and arms cleanup exactly once.
"""

from __future__ import annotations

import time

from demo.deadline.routing import LEGACY_WARNING
from demo.timeline import svg
from k8s import hooks
from k8s import job as jobs
from k8s import workload as workloads
from k8s.keys import (CLEANUP_AFTER_ANNOTATION, DEACTIVATED, DEADLINE_CLASS_ANNOTATION, EVICTED, PARAM_STOCKOUT,
                           PROVISIONED, TERMINAL_TIME_ANNOTATION)
from k8s.objects import annotations, condition, created_at, is_true
from k8s.paths import shown
from k8s.resources import PROVREQ

from ..kit.controllers import race_controller
from ..kit.harness import Context
from ..kit.scenario import Scenario
from ..kit.recorder import Recorder, check_commit_bound

CLASS_ANNOTATION = DEADLINE_CLASS_ANNOTATION

DEADLINE = 8            # seconds after submission


def capacity_back_after(seconds: float) -> dict[str, str]:
    """The request's parameters for a cloud that is out of stock until the request is `seconds` old:
    the autoscaler gets CapacityIsNotFound and provisions at its first retry after that."""
    return {PARAM_STOCKOUT: f"{seconds:g}"}


def admitted_now(ctx: Context, rec: Recorder) -> bool:
    s = rec.samples[-1][1] if rec.samples else None
    return bool(s and s.workload and workloads.admitted(s.workload))


# ---------------------------------------------------------------------------- 1 and 3

def admission_wins(ctx: Context, protocol: str = "committed") -> dict:
    """Pause the controller before its Workload patch; let Kueue admit; release it.
    Returns the facts; the caller decides whether they show the bug (legacy) or not."""
    cls = ctx.slot.private(f"race-{protocol}")
    ctl = race_controller(ctx, cls, protocol, hooks=True)
    hook_dir = ctl.scratch
    log, log_path = ctx.event_log(f"race-admission-wins-{protocol}")
    name = None
    try:
        name = ctx.new_name("job-race")
        key = f"{ctx.slot.namespace}/{name}"
        hooks.arm(hook_dir, "before-commit", key)
        with Recorder(ctx, name, log) as rec:
            ctx.step(f"Submit with --deadline {DEADLINE}s; the cloud is out of stock until {DEADLINE + 2}s: "
                     "CapacityIsNotFound, then capacity comes back on a retry")
            ctx.submit(name, "2x8", duration="15s", deadline=f"{DEADLINE}s",
                       provreq=capacity_back_after(DEADLINE + 2), annotations={CLASS_ANNOTATION: cls})
            ctx.step("The deadline passes: the controller reads the Workload and is paused before its patch")
            info = hooks.wait_reached(hook_dir, "before-commit", key, timeout=60)
            rec.mark("deadline: controller paused")
            snap = ctx.live.snapshot(ctx.slot.namespace, name)
            ctx.check(snap.workload is not None and workloads.quota_reserved(snap.workload)
                      and not workloads.admitted(snap.workload),
                      f"it read rv {info.get('resource_version')}: quota reserved, check pending, not admitted")
            ctx.step("Meanwhile capacity comes back: the autoscaler's retry provisions and Kueue admits")
            ctx.wait(lambda: admitted_now(ctx, rec), 60, "Kueue to admit the Workload")
            rec.mark("Kueue admitted")
            parked = hooks.parked(hook_dir, "before-commit", key)
            ctx.check(parked and "committed timeout" not in ctl.log_text(),
                      "Kueue admitted the Workload while the controller was still parked before its patch")
            ctx.step("Release the controller")
            hooks.release(hook_dir, "before-commit", key)
            rec.mark("controller released")
            ctx.wait(lambda: "409" in ctl.log_text() and name in ctl.log_text(), 30, "the controller's 409")
            # the story ends when the Job is gone (legacy: its stale mark's TTL cleanup) or has succeeded
            ctx.wait(lambda: (s := rec.samples[-1][1]).job is None
                     or (s.job.get("status") or {}).get("succeeded") == 2, 90, "the Job to succeed or be deleted")
            seen = len(rec.samples)
            ctx.wait(lambda: len(rec.samples) >= seen + 3, 10, "the recorder to see the end")
        job_seen = [s.job for _, s in rec.samples if s.job is not None]
        views = rec.views()
        failed_views = [(t, v) for t, v in views if v.outcome == "failed"]
        facts = {
            "views": len(views),
            "watch_failed": failed_views[0][1].reason if failed_views else "",
            "name": name,
            "log": ctl.log_text(),
            "marked": any(jobs.mirrored(j) for j in job_seen),
            "cleanup_armed": any(jobs.cleanup_after(j) for j in job_seen),
            "deleted_by_controller": rec.samples[-1][1].job is None,
            "started": rec.ever(lambda s: jobs.started(s.job) and s.pods),
            "admitted": rec.ever(lambda s: s.workload is not None and workloads.admitted(s.workload)),
            "committed": rec.ever(lambda s: s.workload is not None and workloads.committed_timeout(s.workload)),
            "succeeded": any(((j.get("status") or {}).get("succeeded") or 0) >= 2 for j in job_seen),
            "svg": str(log_path.with_suffix(".svg")),
        }
        svg.write(log_path, log_path.with_suffix(".svg"), f"Race: admission wins ({protocol} protocol)")
        return facts
    finally:
        ctl.stop()
        if name:
            ctx.delete_job(name)
        ctx.wait_pool_empty(120)


def scenario_admission_wins(ctx: Context) -> None:
    ctx.header("Race 1: admission wins (committed protocol)")
    f = admission_wins(ctx, "committed")
    ctx.check("409 conflict" in f["log"] and "admission won" in f["log"],
              "the controller's patch got 409, it read again, saw Admitted=True and backed off")
    ctx.check(f["succeeded"], "the Job ran and succeeded")
    ctx.check(not f["marked"], "the Job was never marked terminal")
    ctx.check(not f["cleanup_armed"], "no cleanup was armed")
    ctx.check(not f["committed"], "the Workload never carried a timeout decision")
    ctx.check(not f["watch_failed"], f"what `tau-demo watch` shows, derived at each of the {f['views']} changes the "
                                     "watch saw during the race, never called the Job failed or timed out")
    ctx.say(f"  timeline: {shown(f['svg'])}")


def scenario_legacy(ctx: Context) -> None:
    ctx.header("Race 3: the same interleaving under the reviewed design's protocol (legacy), then fixed")
    ctx.step("LEGACY: mark the owner terminal, then deactivate, then TTL cleanup")
    f = admission_wins(ctx, "legacy")
    ctx.check(LEGACY_WARNING in f["log"], "the controller said at its start that it runs the LEGACY protocol, "
                                          "only to reproduce this bug")
    ctx.check(f["admitted"] and f["started"], "Kueue admitted the Workload and unsuspended the Job: its pods were "
                                             "created and waited for the nodes to boot")
    ctx.check(f["marked"], "BUG REPRODUCED: the admitted, running Job was marked AdmissionTimeout")
    ctx.check(f["deleted_by_controller"], "BUG REPRODUCED: TTL cleanup deleted the admitted Job")
    ctx.check(bool(f["watch_failed"]), f"BUG REPRODUCED: `tau-demo watch` showed the running Job as failed "
                                       f"({f['watch_failed']})")
    ctx.say(f"  timeline: {shown(f['svg'])}")
    ctx.step("The same interleaving under the committed protocol")
    g = admission_wins(ctx, "committed")
    ctx.check(not g["marked"] and not g["deleted_by_controller"] and g["succeeded"],
              "FIXED: the Job is not marked, not deleted, and succeeds")
    ctx.check(not g["watch_failed"], f"FIXED: `tau-demo watch` never showed it failed ({g['views']} changes derived)")


# ---------------------------------------------------------------------------- 2

def scenario_timeout_wins(ctx: Context) -> None:
    ctx.header("Race 2: timeout wins")
    cls = ctx.slot.private("race-committed")
    ctl = race_controller(ctx, cls, "committed", hooks=True)
    hook_dir = ctl.scratch
    log, log_path = ctx.event_log("race-timeout-wins")
    name = ctx.new_name("job-race")
    key = f"{ctx.slot.namespace}/{name}"
    hooks.arm(hook_dir, "after-commit", key)
    try:
        with Recorder(ctx, name, log) as rec:
            ctx.step(f"Submit with --deadline {DEADLINE}s; the cloud is out of stock until {DEADLINE + 1}s")
            ctx.submit(name, "2x8", duration="15s", deadline=f"{DEADLINE}s",
                       provreq=capacity_back_after(DEADLINE + 1), annotations={CLASS_ANNOTATION: cls})
            hooks.wait_reached(hook_dir, "after-commit", key, timeout=60)
            rec.mark("timeout committed")
            check_commit_bound(ctx, rec, deadline_at=rec.job_created_at() + DEADLINE)
            live = ctx.live.snapshot(ctx.slot.namespace, name)
            ctx.check(workloads.committed_timeout(live.workload) and not workloads.admitted(live.workload)
                      and not jobs.mirrored(live.job),
                      "the controller committed the timeout first, on the Workload only (paused right after)")
            ctx.step("Capacity comes back; Kueue has already evicted and deleted the request")
            back = created_at(live.job).timestamp() + DEADLINE + 1
            ctx.wait(lambda: time.time() >= back + 1, 30, "the moment capacity comes back")
            hooks.release(hook_dir, "after-commit", key)
            ctx.wait(lambda: rec.samples[-1][1].job is None, 60, "mirror, cleanup TTL and deletion")
            rec.mark("Job deleted by cleanup")
        wls = [s.workload for _, s in rec.samples if s.workload]
        ctx.check(any((condition(w, EVICTED) or {}).get("reason") == DEACTIVATED for w in wls),
                  "Kueue evicted the Workload with reason Deactivated")
        ctx.check(not rec.ever(lambda s: jobs.started(s.job)),
                  "the Job's spec.suspend stayed true throughout")
        ctx.check(not rec.ever(lambda s: s.workload is not None and workloads.admitted(s.workload)),
                  "the Workload was never Admitted")
        ctx.check(rec.ever(lambda s: jobs.mirrored(s.job)), "the owner Job was mirrored (AdmissionTimeout)")
        ok, seen = rec.cleaned_up_after_ttl()
        ctx.check(ok, f"cleanup deleted the Job after its TTL ({seen})")
        made = rec.nodes_made_for_it()
        ctx.check(not rec.ever(lambda s: any(is_true(p, PROVISIONED) for p in s.provreqs)) and not made,
                  "over the whole window, from before the submission to the Job's deletion, no request of it was "
                  f"ever Provisioned and no node was made for it, though capacity came back at {DEADLINE + 1}s "
                  f"({', '.join(sorted(made)) or 'no node'})")
        ctx.check(not any(v.outcome == "running" for _, v in rec.views()),
                  "what `tau-demo watch` shows never had the Job running")
        ctx.wait(lambda: not [p for p in ctx.live.list(PROVREQ, ctx.slot.namespace) if name in p["metadata"]["name"]], 60,
                 "the ProvisioningRequest to be gone")
        ctx.wait_pool_empty(120)
        ctx.check(not ctx.pool_nodes(), "the pool is back to 0")
    finally:
        ctl.stop()
        ctx.delete_job(name)
    svg.write(log_path, log_path.with_suffix(".svg"), "Race: timeout wins")
    ctx.say(f"  timeline: {shown(log_path.with_suffix('.svg'))}")


# ---------------------------------------------------------------------------- 4

def interrupted(ctx: Context, point: str) -> dict:
    """Kill -9 the controller at `point` (after-commit, after-mirror, after-arm), restart it,
    and check it converges: mirror and cleanup armed exactly once, the Job cleaned up."""
    cls = ctx.slot.private("race-committed")
    ctl = race_controller(ctx, cls, "committed", hooks=True)
    hook_dir = ctl.scratch
    name = ctx.new_name("job-kill")
    key = f"{ctx.slot.namespace}/{name}"
    hooks.arm(hook_dir, point, key)
    try:
        with Recorder(ctx, name, None, interval=0.1) as rec:
            ctx.submit(name, "2x8", deadline=f"{DEADLINE}s", provreq={PARAM_STOCKOUT: "true"},
                       annotations={CLASS_ANNOTATION: cls})
            hooks.wait_reached(hook_dir, point, key, timeout=60)
            ctl.kill9()
            live = ctx.live.snapshot(ctx.slot.namespace, name)          # read now, not the recorder's last sample
            job, wl = live.job, live.workload
            at_kill = {"committed": workloads.committed_timeout(wl), "mirrored": jobs.mirrored(job),
                       "armed": jobs.cleanup_after(job) is not None}
            ctx.say(f"  killed with SIGKILL {point}: {at_kill}")
            ctl2 = race_controller(ctx, cls, "committed")
            ctx.wait(lambda: rec.samples[-1][1].job is None, 60, "the restarted controller to converge")
            ctl2.stop()
        seen = [s.job for _, s in rec.samples if s.job is not None]
        mirror_times = {annotations(j).get(TERMINAL_TIME_ANNOTATION) for j in seen} - {None}
        cleanup_times = {annotations(j).get(CLEANUP_AFTER_ANNOTATION) for j in seen} - {None}
        return {"at_kill": at_kill, "mirror_writes": len(mirror_times), "arm_writes": len(cleanup_times),
                "unsuspended": rec.ever(lambda s: jobs.started(s.job))}
    finally:
        ctl.stop()
        ctx.delete_job(name)


def scenario_interrupted_mirror(ctx: Context) -> None:
    ctx.header("Race 4: the controller is killed (SIGKILL) right after the commit, before the mirror")
    r = interrupted(ctx, "after-commit")
    ctx.check(r["at_kill"] == {"committed": True, "mirrored": False, "armed": False},
              "at the kill: committed on the Workload, nothing on the Job")
    ctx.check(r["mirror_writes"] == 1, "on restart the mirror was written exactly once")
    ctx.check(r["arm_writes"] == 1, "cleanup was armed exactly once, and the Job was cleaned up")
    ctx.check(not r["unsuspended"], "the Job was never unsuspended")


_INJECTED_STOCKOUT = ("it times Kueue's admission against the deadline with an injected stock-out that ends "
                      "(fakeCAStockout=SECONDS), which the real autoscaler has no knob for")
SCENARIOS = (
    Scenario("race-admission-wins", "race",
             "Kueue admits while the deadline controller is about to commit: 409, it backs off",
             scenario_admission_wins, needs_fake=_INJECTED_STOCKOUT, slot=True),
    Scenario("race-timeout-wins", "race", "the timeout is committed first: Kueue evicts, the Job never runs",
             scenario_timeout_wins, needs_fake=_INJECTED_STOCKOUT, slot=True),
    Scenario("race-legacy", "race",
             "the reviewed design's order marks and deletes a running Job; the committed protocol does not",
             scenario_legacy, needs_fake=_INJECTED_STOCKOUT, slot=True),
    Scenario("race-interrupted-mirror", "race", "the controller killed after its commit converges on restart",
             scenario_interrupted_mirror,
             needs_fake="it pauses the deadline controller while an injected stockout (fakeCAStockout) keeps the "
                        "Job pending", slot=True),
)
