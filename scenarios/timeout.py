"""Timeout paths: every wait is bounded, one layer at a time.

1. Preflight refuses a gang that can never fit, before anything is created.
2. The autoscaler's window plus Kueue's retryStrategy: with ValidUntilSeconds honoured the
   autoscaler reports Failed; Kueue retries with new attempts, then rejects and deactivates.
3. The admission deadline: the cloud is out of stock, and the faithful autoscaler ignores
   ValidUntilSeconds, so it retries CapacityIsNotFound with no end and nothing bounds the wait
   at layer 2; the deadline controller commits the timeout on the Workload, mirrors it to the
   Job, and cleanup removes the Job after its TTL.

Each path ends with quota released, no orphaned ProvisioningRequests, and a smaller job
admitted afterwards: the queue is not wedged.
"""

from __future__ import annotations

import time

from demo.deadline import protocol as dl
from demo.jobs.preflight import Gang
from demo.jobs.submit import run_preflight
from demo.jobs.watch import follow
from demo.k8s.keys import (DEACTIVATED, DEACTIVATED_DUE_TO_ADMISSION_CHECK, EVICTED, FAILED, PARAM_HONOR_VALID_UNTIL,
                           PARAM_STOCKOUT, PARAM_VALID_UNTIL, PROFILE, PROVISIONED, QUOTA_RESERVED,
                           TERMINAL_WORKLOAD_ANNOTATION)
from fake_ca.conditions import R_NOT_FOUND
from demo.jobs import observe
from demo.k8s.objects import annotations, condition, created_at, is_true
from demo.k8s.resources import JOB, PROVREQ
from demo.paths import shown
from demo.timeline import svg

from .harness import NS, Context, ScenarioFailed
from .recorder import Recorder

TITLE_PREFLIGHT = "Timeout layer 1: preflight refuses a gang that can never fit"
TITLE_WINDOW = "Timeout layer 2: ValidUntilSeconds (honoured) + Kueue retryStrategy"
TITLE_DEADLINE = "Timeout layer 3: the admission deadline"


def _workload(snap) -> dict | None:
    return snap.workload if snap else None


def quota_released_and_clean(ctx: Context, name: str, rec: Recorder) -> None:
    """Shared ending: quota released, no ProvisioningRequest left for the job."""
    def released():
        snap = rec.samples[-1][1] if rec.samples else None
        wl = _workload(snap)
        return wl is None or (not is_true(wl, QUOTA_RESERVED) and not (wl.get("status") or {}).get("admission"))
    ctx.wait(released, 60, "the quota to be released")
    live = observe.snapshot(ctx.k, NS, name, rec.job_uid)
    ctx.check(live.workload is None or (not is_true(live.workload, QUOTA_RESERVED)
                                        and not (live.workload.get("status") or {}).get("admission")),
              "quota released (QuotaReserved=False, no admission)")
    ctx.wait(lambda: not [p for p in ctx.k.list(PROVREQ, NS)[0] if name in p["metadata"]["name"]], 60,
             "Kueue to delete the job's ProvisioningRequests")


def smaller_job_admitted(ctx: Context) -> None:
    ctx.step("A smaller job (1 × 8 GPU) is admitted afterwards: the queue is not wedged")
    small = ctx.new_name("job-small")
    ctx.submit(small, "1x8", duration="3s")
    view = follow(ctx.k, NS, small, "running", timeout=90, out=ctx.out, live=False)
    ctx.check(view.outcome in ("running", "succeeded"), f"{small} was admitted and runs")
    ctx.delete_job(small)
    ctx.wait_pool_empty(120)


def preflight_refusal(ctx: Context) -> None:
    ctx.header(TITLE_PREFLIGHT)
    ctx.step("tau-demo submit --gang 3x8 on a pool of at most 2 nodes")
    before = {j["metadata"]["name"] for j in ctx.k.list(JOB, NS)[0]}
    code, lines = run_preflight(ctx.k, PROFILE, Gang(3, 8), NS)
    for line in lines:
        ctx.say(line)
    ctx.check(code == 2, "refused at submit time with exit status 2")
    after = {j["metadata"]["name"] for j in ctx.k.list(JOB, NS)[0]}
    ctx.check(after == before, "nothing was created")
    smaller_job_admitted(ctx)


def autoscaler_window(ctx: Context) -> None:
    ctx.header(TITLE_WINDOW)
    name = ctx.new_name()
    log, log_path = ctx.event_log("timeout-layer2")
    with Recorder(ctx, name, log) as rec:
        ctx.step("Submit a 2 × 8-GPU Job; the cloud is out of stock; ValidUntilSeconds=8 is honoured "
                 "(fake-ca --honor-valid-until, per request); retryStrategy allows 2 retries")
        ctx.submit(name, "2x8", provreq={PARAM_VALID_UNTIL: "8", PARAM_STOCKOUT: "true",
                                         PARAM_HONOR_VALID_UNTIL: "true"})
        ctx.step(f"tau-demo watch {name}")
        view = follow(ctx.k, NS, name, "finished", timeout=180, out=ctx.out, live=False)
        ctx.step("What happened, checked on the objects")
        cap = view.phase("Capacity provisioning")
        ctx.check(view.outcome == "failed" and cap.state == "failed",
                  f"the watch ends failed at Capacity provisioning: {cap.detail}")
        attempts = sorted(n.rsplit("-", 1)[-1] for n in rec.provreq_names())
        ctx.check(attempts == ["1", "2", "3"], f"Kueue made 3 attempts, each a new ProvisioningRequest ({attempts})")
        def deactivated():   # judge the final state: Kueue's eviction lands shortly after Rejected
            wl = rec.samples[-1][1].workload
            ev = condition(wl, EVICTED) or {}
            return (wl or {}).get("spec", {}).get("active") is False and ev.get("status") == "True" \
                and ev.get("reason") == DEACTIVATED_DUE_TO_ADMISSION_CHECK and ev
        try:
            ev = ctx.wait(deactivated, 30, "Kueue to deactivate the Workload")
        except ScenarioFailed:
            ev = {}
        ctx.check(bool(ev), f"Kueue rejected and deactivated the Workload (Evicted: {ev.get('reason')})")
        quota_released_and_clean(ctx, name, rec)
        ctx.check(not rec.ever(lambda s: s.job is not None and s.job["spec"].get("suspend") is False),
                  "the Job was never unsuspended")
    ctx.delete_job(name)
    svg.write(log_path, log_path.with_suffix(".svg"), TITLE_WINDOW)
    ctx.say(f"  timeline: {shown(log_path.with_suffix('.svg'))}")
    smaller_job_admitted(ctx)


def admission_deadline(ctx: Context, cleanup_ttl_hint: str = "the controller's --cleanup-ttl") -> None:
    ctx.header(TITLE_DEADLINE)
    name = ctx.new_name()
    log, log_path = ctx.event_log("timeout-layer3")
    with Recorder(ctx, name, log) as rec:
        if ctx.autoscaler == "real":   # no injected fault: a pod no node of the pool can hold waits forever
            ctx.step("Submit a 1 × 16-GPU Job with --deadline 20s; no node of the pool has 16 GPUs, so the real "
                     "autoscaler answers CapacityIsNotFound (and retries after 1m, 2m, ...); it ignores "
                     "ValidUntilSeconds=8")
            ctx.submit(name, "1x16", deadline="20s", provreq={PARAM_VALID_UNTIL: "8"})
        else:
            ctx.step("Submit with --deadline 20s; the cloud is out of stock (injected) and the autoscaler is "
                     "faithful: it ignores ValidUntilSeconds=8 and retries CapacityIsNotFound")
            ctx.submit(name, "2x8", deadline="20s", provreq={PARAM_VALID_UNTIL: "8", PARAM_STOCKOUT: "true"})
        ctx.step("At 12s, ValidUntilSeconds has passed and the request still waits: nothing bounds layer 2")
        ctx.wait(lambda: rec.first(lambda s: s.provreqs) is not None, 30, "the ProvisioningRequest")
        submitted = created_at(rec.samples[-1][1].job).timestamp()
        ctx.wait(lambda: time.time() >= submitted + 12, 30, "12s after submission")
        snap = observe.snapshot(ctx.k, NS, name, rec.job_uid)
        ctx.check(bool(snap.provreqs) and not any(is_true(p, FAILED) for p in snap.provreqs)
                  and all((condition(p, PROVISIONED) or {}).get("reason") == R_NOT_FOUND for p in snap.provreqs),
                  "the ProvisioningRequest is past ValidUntilSeconds, not Failed: Provisioned=False/CapacityIsNotFound")
        ctx.step(f"tau-demo watch {name}: the deadline controller acts at 20s")
        created = created_at(snap.job).timestamp()
        rec.mark("ValidUntilSeconds (ignored)", t=created + 8)
        rec.mark("deadline", t=created + 20)
        view = follow(ctx.k, NS, name, "finished", timeout=90, out=ctx.out, live=False)
        cap = view.phase("Capacity provisioning")
        ctx.check(view.outcome == "failed" and cap.state == "failed",
                  f"the watch ends failed at Capacity provisioning: {cap.detail}")
        wl = ctx.wait(lambda: (w := rec.samples[-1][1].workload) and dl.committed_timeout(w)
                      and condition(w, EVICTED) and w, 30, "the committed timeout and Kueue's eviction")
        ctx.check(wl["spec"].get("active") is False and dl.committed_timeout(wl),
                  "the timeout is committed on the Workload (spec.active=false, admission-decision=timed-out)")
        ctx.check((condition(wl, EVICTED) or {}).get("reason") == DEACTIVATED,
                  "Kueue evicted the Workload with reason Deactivated")
        quota_released_and_clean(ctx, name, rec)
        mirrored = ctx.wait(lambda: next((s.job for _, s in rec.samples if dl.mirrored(s.job)), None), 30,
                            "the mirror on the Job")
        ctx.check(annotations(mirrored).get(TERMINAL_WORKLOAD_ANNOTATION) == wl["metadata"]["name"],
                  "the timeout is mirrored on the Job (terminal-reason=AdmissionTimeout, naming the Workload)")
        ctx.step(f"Cleanup deletes the Job after {cleanup_ttl_hint}")
        ctx.wait(lambda: rec.gone_at() is not None, 120, "cleanup (the recorder sees the Job gone)")
        ok, seen = rec.cleaned_up_after_ttl()
        ctx.check(ok, f"cleanup deleted the timed-out Job after its TTL ({seen})")
        ctx.check(not rec.ever(lambda s: s.job is not None and s.job["spec"].get("suspend") is False),
                  "the Job was never unsuspended")
        ctx.check(not ctx.pool_nodes(), "no node was created for it")
    svg.write(log_path, log_path.with_suffix(".svg"), TITLE_DEADLINE)
    ctx.say(f"  timeline: {shown(log_path.with_suffix('.svg'))}")
    smaller_job_admitted(ctx)
