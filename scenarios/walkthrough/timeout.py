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

import subprocess
import sys
import time

from demo.jobs.watch import follow
from demo.timeline import svg
from fake_ca.conditions import Reason
from fake_ca.lifecycle import Options
from k8s import job as jobs
from k8s import workload as workloads
from k8s.keys import (CHECK_NAME, DEACTIVATED, DEACTIVATED_DUE_TO_ADMISSION_CHECK, EVICTED, FAILED,
                      PARAM_HONOR_VALID_UNTIL, PARAM_STOCKOUT, PARAM_VALID_UNTIL, PROVISIONED,
                      TERMINAL_WORKLOAD_ANNOTATION)
from k8s.objects import annotations, condition, created_at, is_true, parse_time
from k8s.paths import shown
from k8s.resources import JOB, PROVREQ, PROVREQ_CONFIG, WORKLOAD
from k8s.poll import eventually

from ..kit.harness import Context, ScenarioFailed
from ..kit.scenario import Scenario
from ..kit.recorder import Recorder, check_commit_bound
from ..kit import toolbox

TITLE_PREFLIGHT = "Timeout layer 1: preflight refuses a gang that can never fit"
TITLE_WINDOW = "Timeout layer 2: ValidUntilSeconds (honoured) + Kueue retryStrategy"
TITLE_DEADLINE = "Timeout layer 3: the admission deadline"
VALID_UNTIL = 8                     # seconds: the requests' ValidUntilSeconds
DEADLINE = 20                       # seconds: layer 3's admission deadline
FAKE_LOOP = Options().scan_interval  # the fake autoscaler's loop when idle (its default)
WATCH_SLACK = 1.0                   # seconds a watch event and a loop may lag on a loaded 2-core machine
REQUEUE_SLACK = 4.0                 # seconds from Kueue's requeue time to the next attempt's creation, at most


def _workload(snap) -> dict | None:
    return snap.workload if snap else None


def quota_released_and_clean(ctx: Context, name: str, rec: Recorder) -> None:
    """Shared ending: quota released, no ProvisioningRequest left for the job."""
    def released():
        snap = rec.samples[-1][1] if rec.samples else None
        wl = _workload(snap)
        return wl is None or (not workloads.quota_reserved(wl) and not (wl.get("status") or {}).get("admission"))
    ctx.wait(released, 60, "the quota to be released")
    live = ctx.live.snapshot(ctx.slot.namespace, name, rec.job_uid)
    ctx.check(live.workload is None or (not workloads.quota_reserved(live.workload)
                                        and not (live.workload.get("status") or {}).get("admission")),
              "quota released (QuotaReserved=False, no admission)")
    ctx.wait(lambda: not [p for p in ctx.live.list(PROVREQ, ctx.slot.namespace) if name in p["metadata"]["name"]], 60,
             "Kueue to delete the job's ProvisioningRequests")


def smaller_job_admitted(ctx: Context) -> None:
    ctx.step("A smaller job (1 × 8 GPU) is admitted afterwards: the queue is not wedged")
    small = ctx.new_name("job-small")
    ctx.submit(small, "1x8", duration="3s")
    view = follow(ctx.k, ctx.slot.namespace, small, "running", timeout=90, out=ctx.out, live=False)
    ctx.check(view.outcome in ("running", "succeeded"), f"{small} was admitted and runs")
    ctx.delete_job(small)
    ctx.wait_pool_empty(120)


def preflight_refusal(ctx: Context) -> None:
    ctx.header(TITLE_PREFLIGHT)
    name = ctx.new_name()
    args = [*ctx.slot_args(), "--gang", "3x8", "--name", name]
    ctx.step(f"tau-demo submit {' '.join(args)} on a pool of at most 2 nodes")
    ns = ctx.slot.namespace
    with toolbox.changes(ctx, JOB, namespace=ns) as jobs_, toolbox.changes(ctx, WORKLOAD, namespace=ns) as workloads_:
        r = subprocess.run([sys.executable, "-m", "cli", "submit", *args, "--kubeconfig", ctx.kubeconfig],
                           capture_output=True, text=True, timeout=60)
        for line in r.stdout.splitlines() + r.stderr.splitlines():
            ctx.say(line)
        ctx.hold(1.0, "the window after submit returned: a late create would show")
    ctx.check(r.returncode == 2 and "preflight refused the job; nothing was created" in r.stderr,
              "refused at submit time with exit status 2, before creating anything")
    made = [f"{typ} {res}" for res, w in (("Job", jobs_), ("Workload", workloads_)) for _, typ, _ in w.changes]
    ctx.check(not made, f"no Job and no Workload was created or changed in namespace {ns}, watched from before the "
                        f"submit until 1s after it returned ({len(made)} events: {', '.join(made) or 'none'})")
    smaller_job_admitted(ctx)


def autoscaler_window(ctx: Context) -> None:
    ctx.header(TITLE_WINDOW)
    name = ctx.new_name()
    log, log_path = ctx.event_log("timeout-layer2")
    with Recorder(ctx, name, log) as rec:
        ctx.step("Submit a 2 × 8-GPU Job; the cloud is out of stock; ValidUntilSeconds=8 is honoured "
                 "(fake-ca --honor-valid-until, per request); retryStrategy allows 2 retries")
        ctx.submit(name, "2x8", provreq={PARAM_VALID_UNTIL: str(VALID_UNTIL), PARAM_STOCKOUT: "true",
                                         PARAM_HONOR_VALID_UNTIL: "true"})
        ctx.step(f"tau-demo watch {name}")
        view = follow(ctx.k, ctx.slot.namespace, name, "finished", timeout=180, out=ctx.out, live=False)
        ctx.step("What happened, checked on the objects")
        cap = view.phase("Capacity provisioning")
        ctx.check(view.outcome == "failed" and cap.state == "failed",
                  f"the watch ends failed at Capacity provisioning: {cap.detail}")
        # the watch ended at Kueue's Rejected, which follows attempt 3's Failed; the recorder's own watch of the
        # requests may be a moment behind it
        eventually(lambda: sum(1 for a in rec.attempts() if a.answered) >= 3, 10)
        seen = rec.attempts()
        tries = [a for a in seen if a.answered]
        numbers = [a.number for a in tries]
        ctx.check(numbers == [1, 2, 3], f"Kueue made 3 attempts, each a new ProvisioningRequest ({numbers})")
        for a in seen:
            if not a.answered:         # said, not judged: what Kueue v0.19.2 does besides the attempts
                ctx.say(f"  observed: Kueue also made {a.name} (uid {a.uid[:8]}) {a.seen_at - seen[0].seen_at:.1f}s "
                        f"into the run and deleted it {a.last_seen - a.seen_at:.1f}s later, before any answer")
        ctx.step("Why each attempt ended, and when (times from the watch)")
        hi = VALID_UNTIL + FAKE_LOOP + WATCH_SLACK
        for a in tries:
            reason, message = (a.failed or {}).get("reason"), (a.failed or {}).get("message") or ""
            lived = a.failed_at - a.seen_at if a.failed_at is not None else float("nan")
            # not too early, by the apiserver's own times (whole seconds; the watch's may deliver the creation late)
            since = parse_time((a.failed or {}).get("lastTransitionTime"))
            by_server = since.timestamp() - a.created if since and a.created is not None else float("nan")
            ctx.check(reason == Reason.VALID_UNTIL_EXPIRED and "ValidUntilSeconds" in message
                      and by_server >= VALID_UNTIL and lived <= hi,
                      f"attempt {a.number} failed with {reason} {lived:.1f}s after it was created (ValidUntilSeconds="
                      f"{VALID_UNTIL}: {by_server:.0f}s by the apiserver's whole-second times, at least "
                      f"{VALID_UNTIL}s; by the watch at most {hi}s, one loop of the autoscaler and {WATCH_SLACK}s "
                      "slack)")
        strategy = ctx.live.must(PROVREQ_CONFIG, CHECK_NAME)["spec"]["retryStrategy"]
        base, cap_ = int(strategy["backoffBaseSeconds"]), int(strategy["backoffMaxSeconds"])
        retries = rec.retries()
        ctx.check(len(retries) == 2, f"Kueue put its check in Retry twice, once after each of the first two failures "
                                     f"({len(retries)} times)")
        skipped = []
        for n, (a, b, r) in enumerate(zip(tries, tries[1:], retries), 1):
            want = workloads.check_retry_backoff(base, cap_, n)
            gap = b.seen_at - a.failed_at if a.failed_at is not None else float("nan")
            due = max(r.requeue_at or 0.0, a.failed_at or 0.0)   # Kueue requeues at requeue_at, never before the failure
            ctx.check(r.requeue_after == want and due - 1 <= b.seen_at <= due + REQUEUE_SLACK,
                      f"attempt {b.number} came {gap:.1f}s after attempt {a.number} failed, when Kueue requeued it: "
                      f"backoff {r.requeue_after}s (the retryStrategy's {want}s: base {base}s x 2^{n - 1}, max {cap_}s) "
                      f"counted from the check's lastTransitionTime, {(a.failed_at or 0) - (r.transition_at or 0):.1f}s "
                      f"before the failure (within -1s, the times being whole seconds, and +{REQUEUE_SLACK:g}s for the "
                      "requeue and the new reservation)")
            if gap < want - 1:
                skipped.append(f"retry {n}: {gap:.1f}s instead of {want}s")
        if skipped:     # a finding against Kueue v0.19.2, said as such (docs/upstream.md)
            ctx.say(f"  FINDING (Kueue v0.19.2): the retryStrategy's backoff was not waited ({'; '.join(skipped)}). "
                    "The provisioning check keeps its old lastTransitionTime when it goes Retry "
                    "(provisioning/controller.go syncCheckStates copies the check; patching.SetAdmissionCheckState "
                    "keeps a time it is given), so the backoff is counted from the check's previous transition: an "
                    "attempt that takes longer than its backoff to fail is retried at once")
        def deactivated():   # judge the final state: Kueue's eviction lands shortly after Rejected
            wl = rec.samples[-1][1].workload
            ev = condition(wl, EVICTED) or {}
            return not workloads.active(wl) and ev.get("status") == "True" \
                and ev.get("reason") == DEACTIVATED_DUE_TO_ADMISSION_CHECK and ev
        try:
            ev = ctx.wait(deactivated, 30, "Kueue to deactivate the Workload")
        except ScenarioFailed:
            ev = {}
        ctx.check(bool(ev), f"Kueue rejected and deactivated the Workload (Evicted: {ev.get('reason')})")
        quota_released_and_clean(ctx, name, rec)
        ctx.check(not rec.ever(lambda s: jobs.started(s.job)),
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
            ctx.step(f"Submit a 1 × 16-GPU Job with --deadline {DEADLINE}s; no node of the pool has 16 GPUs, so the "
                     "real autoscaler answers CapacityIsNotFound (and retries after 1m, 2m, ...); it ignores "
                     f"ValidUntilSeconds={VALID_UNTIL}")
            ctx.submit(name, "1x16", deadline=f"{DEADLINE}s", provreq={PARAM_VALID_UNTIL: str(VALID_UNTIL)})
        else:
            ctx.step(f"Submit with --deadline {DEADLINE}s; the cloud is out of stock (injected) and the autoscaler "
                     f"is faithful: it ignores ValidUntilSeconds={VALID_UNTIL} and retries CapacityIsNotFound")
            ctx.submit(name, "2x8", deadline=f"{DEADLINE}s",
                       provreq={PARAM_VALID_UNTIL: str(VALID_UNTIL), PARAM_STOCKOUT: "true"})
        ctx.step("At 12s, ValidUntilSeconds has passed and the request still waits: nothing bounds layer 2")
        ctx.wait(lambda: rec.first(lambda s: s.provreqs) is not None, 30, "the ProvisioningRequest")
        submitted = created_at(rec.samples[-1][1].job).timestamp()
        ctx.wait(lambda: time.time() >= submitted + 12, 30, "12s after submission")
        snap = ctx.live.snapshot(ctx.slot.namespace, name, rec.job_uid)
        ctx.check(bool(snap.provreqs) and all((condition(p, PROVISIONED) or {}).get("reason") == Reason.NOT_FOUND
                                              for p in snap.provreqs),
                  "the ProvisioningRequest is past ValidUntilSeconds and still Provisioned=False/CapacityIsNotFound")
        ctx.step(f"tau-demo watch {name}: the deadline controller acts at {DEADLINE}s")
        created = created_at(snap.job).timestamp()
        rec.mark("ValidUntilSeconds (ignored)", t=created + VALID_UNTIL)
        rec.mark("deadline", t=created + DEADLINE)
        view = follow(ctx.k, ctx.slot.namespace, name, "finished", timeout=90, out=ctx.out, live=False)
        cap = view.phase("Capacity provisioning")
        ctx.check(view.outcome == "failed" and cap.state == "failed",
                  f"the watch ends failed at Capacity provisioning: {cap.detail}")
        wl = ctx.wait(lambda: (w := rec.samples[-1][1].workload) and workloads.committed_timeout(w)
                      and condition(w, EVICTED) and w, 30, "the committed timeout and Kueue's eviction")
        ctx.check(not workloads.active(wl) and workloads.committed_timeout(wl),
                  "the timeout is committed on the Workload (spec.active=false, admission-decision=timed-out)")
        check_commit_bound(ctx, rec, deadline_at=created + DEADLINE)
        ctx.check(not rec.ever(lambda s: any(is_true(p, FAILED) for p in s.provreqs)),
                  f"over the whole wait no attempt ever went Failed, though ValidUntilSeconds={VALID_UNTIL} passed at "
                  f"{VALID_UNTIL}s: nothing in layer 2 ends it")
        ctx.check((condition(wl, EVICTED) or {}).get("reason") == DEACTIVATED,
                  "Kueue evicted the Workload with reason Deactivated")
        quota_released_and_clean(ctx, name, rec)
        mirrored = ctx.wait(lambda: next((s.job for _, s in rec.samples if jobs.mirrored(s.job)), None), 30,
                            "the mirror on the Job")
        ctx.check(annotations(mirrored).get(TERMINAL_WORKLOAD_ANNOTATION) == wl["metadata"]["name"],
                  "the timeout is mirrored on the Job (terminal-reason=AdmissionTimeout, naming the Workload)")
        ctx.step(f"Cleanup deletes the Job after {cleanup_ttl_hint}")
        ctx.wait(lambda: rec.gone_at() is not None, 120, "cleanup (the recorder sees the Job gone)")
        ok, seen = rec.cleaned_up_after_ttl()
        ctx.check(ok, f"cleanup deleted the timed-out Job after its TTL ({seen})")
        ctx.check(not rec.ever(lambda s: jobs.started(s.job)),
                  "the Job was never unsuspended")
        made = rec.nodes_made_for_it()
        ctx.check(not made, "no node was made for any of its requests, watched from before the submission to the end "
                            f"({', '.join(sorted(made)) or 'none'})")
    svg.write(log_path, log_path.with_suffix(".svg"), TITLE_DEADLINE)
    ctx.say(f"  timeline: {shown(log_path.with_suffix('.svg'))}")
    smaller_job_admitted(ctx)


SCENARIOS = (
    Scenario("timeout-preflight", "timeout", "layer 1: a gang that can never fit is refused at submit",
             preflight_refusal, slot=True),
    Scenario("timeout-window", "timeout", "layer 2: ValidUntilSeconds honoured + Kueue's retryStrategy end the wait",
             autoscaler_window,
             needs_fake="it needs the fake's --honor-valid-until and an injected stockout: the real autoscaler "
                        "ignores ValidUntilSeconds and never reports Failed for best-effort-atomic", slot=True),
    Scenario("timeout-deadline", "timeout", "layer 3: the admission deadline ends a wait nothing else bounds",
             admission_deadline, slot=True),
)
