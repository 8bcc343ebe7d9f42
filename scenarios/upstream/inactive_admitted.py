"""kubernetes-sigs/kueue#6711 (open): an inactive Workload is sometimes admitted, and at once evicted.

The path the report found (a requeue that ignored spec.active) is guarded since v0.15.0 (#7913) and
v0.18.0 (#11014).  What v0.19.2 keeps is the scheduling cycle in flight: the scheduler pops a Workload,
works on a snapshot and reserves quota by a server-side apply without resourceVersion
(scheduler.go:975-1037, the apply at 990-997); nothing in between reads spec.active.  A deactivation
that commits after the pop and before the apply is followed by QuotaReserved=True, and, on a
ClusterQueue without admission checks, Admitted=True, on a Workload with spec.active=false.

Part 1 tries exactly that with plain Workloads (no Job, no pods): a blocker holds the quota; releasing
it makes the scheduler pop the next Workload about a second later (Kueue retries inadmissible
Workloads after a 1 s batch period), and the scenario deactivates that Workload a little before,
trial after trial, and reads the order of the writes from a watch (resourceVersions).

Parts 2 and 3 are the design's neighbouring interleaving: the deadline controller's committed
timeout landing in the same window, on Jobs, first on a ClusterQueue without admission checks, then
on one behind the ProvisioningRequest check as the design has it.  Without a check Kueue's late apply
also writes Admitted=True, and the job reconciler unsuspends a Job whose timeout is committed until
the eviction lands (jobframework/reconciler.go:621-639); behind the check Admitted is written only by
the workload controller, which handles inactive Workloads first (workload_controller.go:671-731).
"""

from __future__ import annotations

import copy
import random
import statistics
import time
from collections import Counter

from k8s import hooks
from k8s import job as jobs
from k8s import workload as workloads
from k8s.keys import (ADMITTED, CHECK_NAME, DEADLINE_CLASS_ANNOTATION, EVICTED, GPU, PARAM_STOCKOUT,
                           PROVREQ_PARAM_PREFIX, QUOTA_RESERVED, UPSTREAM_PREFIX)
from k8s.objects import condition, meta, revision
from k8s.resources import CLUSTER_QUEUE, JOB, WORKLOAD
from demo.timeline import svg
from demo.timeline.log import EventLog

from ..kit.controllers import race_controller
from ..kit.harness import NS, Context
from ..kit.recorder import Recorder
from ..kit.scenario import Report, Scenario
from ..kit import toolbox

REPORT = Report(
    number="kubernetes-sigs/kueue#6711",
    title="an inactive Workload is admitted and at once evicted",
    claim="Workloads with spec.active=false occasionally get QuotaReserved/Admitted and are then evicted at once",
    fixed_in="open; the requeue paths were guarded in v0.15.0 (#7913) and v0.18.0 (#11014)",
)
NAME = "upstream-6711"
QUEUE = f"{UPSTREAM_PREFIX}6711"
ONE = {"cpu": "8", "memory": "64Gi", GPU: "8"}            # the queue's whole quota: one 1 × 8-GPU Job
TRIALS, WANTED_HITS = 12, 2
JOB_TRIALS, JOB_LEAD = 5, 0.06   # Part 2: release the controller this long before the expected reservation, to start
SETTLE = 1.3      # Kueue retries inadmissible Workloads 1s after the first change (inadmissible_workloads.go:38, 256):
                  # let earlier timers run out, so the next pop comes 1s after the release
CLASS = "upstream-6711"
CHECKED = f"{QUEUE}-checked"      # the same quota behind the design's ProvisioningRequest check
JOB_OUTCOMES = {"never reserved": "timeout first", "hit": "Kueue reserved quota after the commit",
                "reserved first": "quota reserved first", "admission won": "admission first"}


def plain_workload(name: str, queue: str = QUEUE, annotations: dict | None = None) -> dict:
    return WORKLOAD.new(name, NS, annotations=annotations or {},
                        spec={"queueName": queue, "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "c", "image": "none", "resources": {"requests": dict(ONE)}}]}}}]})


def blocker(ctx: Context, i: int, queue: str = QUEUE) -> str:
    """A plain Workload that takes the queue's whole quota (never provisioned: it only holds it)."""
    name = f"{QUEUE}-blocker-{i}"
    params = ctx.injected({PARAM_STOCKOUT: "true"}) if queue == CHECKED else {}
    ctx.k.create(WORKLOAD, plain_workload(name, queue, {PROVREQ_PARAM_PREFIX + k: v for k, v in params.items()}), NS)
    ctx.wait(lambda: workloads.quota_reserved(ctx.live.must(WORKLOAD, name, NS)), 20, f"{name} to hold the quota")
    return name


def order(w: toolbox.Changes, name: str, at_rv: int) -> tuple[str, dict | None, float | None]:
    """'hit' when the first QuotaReserved=True of `name` came after the write at `at_rv`."""
    reserved = [(t, o) for t, typ, o in w.of(name) if workloads.quota_reserved(o)]
    if not reserved:
        return "never reserved", None, None
    t, first = min(reserved, key=lambda x: revision(x[1]))
    return ("hit" if revision(first) > at_rv else "reserved first"), first, t


def lanes(wl: dict) -> dict[str, str]:
    ev = condition(wl, EVICTED) or {}
    return {"Workload": "inactive" if not workloads.active(wl) else "active",
            QUOTA_RESERVED: {"True": "reserved", "False": "pending"}.get((condition(wl, QUOTA_RESERVED) or {}).get(
                "status"), "-"),
            ADMITTED: "admitted" if workloads.admitted(wl) else "-",
            EVICTED: f"evicted: {ev.get('reason')}" if ev.get("status") == "True" else "-"}


def picture(log: EventLog, events: list, since: float) -> None:
    """The first hit, from the moment the quota was released: one lane per condition."""
    before = [o for t, _, o in events if t < since]
    log.mark("quota released", t=since)
    if before:
        log.record_all(lanes(before[-1]), t=since)
    for t, _, o in events:
        if t >= since:
            if not workloads.active(o) and log.last.get("Workload") == "active":
                log.mark("spec.active=false", t=t)
            log.record_all(lanes(o), t=t)


def admission_sequence(events: list, since: float) -> str:
    """The Workload's writes after `since`: '+993 ms rv 1 inactive; +1030 ms rv 2 reserved, admitted; ...'."""
    out, last = [], None
    for t, _, o in events:
        state = lanes(o)
        if t < since or state == last:
            continue
        changed = [v if v != "-" else f"{k} gone" for k, v in state.items() if (last or {}).get(k, "-") != v]
        out.append(f"+{(t - since) * 1000:.0f} ms rv {revision(o)}: {', '.join(changed)}")
        last = state
    return "; ".join(out)


def plain_trials(ctx: Context, log: EventLog) -> tuple[list[dict], float]:
    lat, results = [1.04], []
    with toolbox.changes(ctx, WORKLOAD, keep=lambda o: meta(o)["name"].startswith(QUEUE)) as w:
        held = blocker(ctx, 0)
        for i in range(TRIALS):
            target = f"{QUEUE}-{i}"
            ctx.k.create(WORKLOAD, plain_workload(target), NS)
            ctx.wait(lambda: condition(ctx.live.must(WORKLOAD, target, NS), QUOTA_RESERVED), 10, "pending")
            ctx.hold(SETTLE, "the scheduler settles on the pending Workload")
            delay = max(0.0, statistics.median(lat) - random.uniform(0.035, 0.07))
            t0 = time.time()
            ctx.k.patch(WORKLOAD, held, {"spec": {"active": False}}, NS)           # releases the quota
            ctx.hold(delay, "the aim: deactivate this long after the release")
            at = revision(ctx.k.patch(WORKLOAD, target, {"spec": {"active": False}}, NS))
            ctx.hold(1.5, "the window for Kueue's answer to the release")
            outcome, first, t = order(w, target, at)
            if t is not None:
                lat.append(t - t0)
            final = ctx.live.must(WORKLOAD, target, NS)
            results.append({"trial": i, "delay": delay, "outcome": outcome, "first": first, "final": final})
            ctx.say(f"  trial {i + 1:2}: deactivated {delay * 1000:4.0f} ms after the release: {outcome}"
                    + (f" (rv {revision(first)} > {at}): {toolbox.conditions_line(final)}" if outcome == "hit" else ""))
            if outcome == "hit" and not any(r["outcome"] == "hit" for r in results[:-1]):
                picture(log, w.of(target), t0)
                ctx.say(f"    after the release: {admission_sequence(w.of(target), t0)}")
                cq = ctx.live.must(CLUSTER_QUEUE, QUEUE)
                events = sorted(toolbox.workload_events(ctx, target))
                ctx.say(f"    Kueue's events on it: {', '.join(events)}; ClusterQueue {QUEUE} counts "
                        f"reservingWorkloads={cq['status'].get('reservingWorkloads')} "
                        f"admittedWorkloads={cq['status'].get('admittedWorkloads')}")
            ctx.k.delete(WORKLOAD, target, NS)
            ctx.k.delete(WORKLOAD, held, NS)
            if sum(r["outcome"] == "hit" for r in results) >= WANTED_HITS or i == TRIALS - 1:
                break
            held = blocker(ctx, i + 1)
    return results, statistics.median(lat)


def job_trials(ctx: Context, latency: float, queue: str) -> list[dict]:
    """The deadline controller's commit released just before the scheduler reserves, on Jobs in `queue`,
    aiming closer at the window after each trial.  Facts per trial, for the invariants."""
    ctl = race_controller(ctx, CLASS, "committed", hooks=True)
    hook_dir = ctl.scratch
    out, lead = [], JOB_LEAD
    try:
        for i in range(JOB_TRIALS):
            held, name = blocker(ctx, 100 + i, queue), ctx.new_name("job-6711")
            key = f"{NS}/{name}"
            hooks.arm(hook_dir, "before-commit", key)
            with toolbox.changes(ctx, WORKLOAD, keep=lambda o: meta(o)["name"].startswith(f"job-{name}")) as w, \
                    toolbox.changes(ctx, JOB, keep=lambda o: meta(o)["name"] == name) as jw, \
                    Recorder(ctx, name, None, interval=0.05) as rec:
                ctx.submit(name, "1x8", deadline="3s", profile=queue, annotations={DEADLINE_CLASS_ANNOTATION: CLASS},
                           provreq=ctx.injected({PARAM_STOCKOUT: "true"}))
                hooks.wait_reached(hook_dir, "before-commit", key, timeout=30)
                ctx.hold(SETTLE, "the scheduler settles on the pending Workload")
                delay = max(0.0, latency - lead)
                t0 = time.time()
                ctx.k.patch(WORKLOAD, held, {"spec": {"active": False}}, NS)
                ctx.hold(delay, "the aim: commit this long after the release")
                hooks.release(hook_dir, "before-commit", key)
                ctx.hold(4, "the window for the commit and Kueue's answer to land")
            commits = [(t, o) for t, _, o in w.changes if workloads.committed_timeout(o)]
            at = min((revision(o) for _, o in commits), default=None)
            outcome = order(w, meta(commits[0][1])["name"], at)[0] if commits else "admission won"
            after = [s for t, s in rec.samples if commits and t >= commits[0][0]]
            started = [t for t, _, j in jw.changes if commits and t >= commits[0][0] and jobs.started(j)] \
                + [t for t, s in rec.samples if commits and t >= commits[0][0] and s.pods]
            flips = [(t, jobs.started(j)) for t, _, j in jw.changes if commits and t >= commits[0][0]]
            off = next((t for t, on in flips if on), None)
            back = next((t for t, on in flips if off and t > off and not on), None)
            fact = {"outcome": outcome, "committed": bool(commits), "ran_after": bool(started),
                    "unsuspended_ms": round(((back or time.time()) - off) * 1000) if off else 0,
                    "pods_after": max((len(s.pods) for s in after), default=0),
                    "running_after": any(p.get("status", {}).get("phase") == "Running" for s in after for p in s.pods),
                    "marked_admitted": rec.ever(lambda s: workloads.admitted(s.workload) and jobs.mirrored(s.job)
                                                and not workloads.committed_timeout(s.workload))}
            out.append(fact)
            if outcome == "hit":
                ctx.say(f"    the Workload after the release: {admission_sequence(w.of(meta(commits[0][1])['name']), t0)}")
            ctx.say(f"  job trial {i + 1}: {JOB_OUTCOMES[outcome]}; " + (
                f"the Job was unsuspended after the committed timeout, for {fact['unsuspended_ms']} ms "
                f"({fact['pods_after']} pod(s) seen, {'some' if fact['running_after'] else 'none'} Running), "
                "until Kueue's eviction suspended it again"
                if started else "the Job never started after the commit" if commits else
                "the controller saw Admitted=True and backed off; the Job was not marked"))
            ctx.delete_job(name)
            ctx.k.delete(WORKLOAD, held, NS)
            # aim at the window: a commit that came first goes later next time, one that came too late earlier
            lead += {"never reserved": -0.01, "admission won": 0.01, "reserved first": 0.01}.get(outcome, 0.0)
            if outcome == "hit" and i >= 1:
                break
    finally:
        ctl.stop()
    return out


def run(ctx: Context) -> None:
    toolbox.begin(ctx, REPORT)
    log, log_path = ctx.event_log(NAME)
    groups = [{"coveredResources": list(ONE), "flavors": [
        {"name": "a100-scale", "resources": [{"name": r, "nominalQuota": q} for r, q in ONE.items()]}]}]
    with toolbox.KueueObjects(ctx) as objs:
        objs.cluster_queue(QUEUE, [], resource_groups=groups)
        objs.cluster_queue(CHECKED, [CHECK_NAME], resource_groups=copy.deepcopy(groups))
        objs.local_queue(QUEUE, QUEUE)
        objs.local_queue(CHECKED, CHECKED)
        objs.wait_active(QUEUE)
        objs.wait_active(CHECKED)
        ctx.step(f"Part 1: plain Workloads on ClusterQueue {QUEUE} (no admission checks, quota for one); release "
                 "the quota, deactivate the next Workload just before the scheduler reserves it")
        results, latency = plain_trials(ctx, log)
        hits = [r for r in results if r["outcome"] == "hit"]
        ctx.say(f"  the scheduler reserved {latency * 1000:.0f} ms after a release (median)")
        ctx.step(f"Part 2: the deadline controller's commit at that moment, on Jobs in {QUEUE} (no admission check); "
                 "it is paused before its commit and released just before the scheduler reserves")
        bare = job_trials(ctx, latency, QUEUE)
        ctx.check(not any(j["marked_admitted"] for j in bare),
                  "invariant: a Job whose Workload was admitted was never marked failed or deleted")
        broken = [j for j in bare if j["ran_after"]]
        ctx.say(f"  {'SHOWN BROKEN' if broken else 'held'} without an admission check: a timed-out Job never runs"
                + (f" ({len(broken)} trial(s): Kueue admitted the committed Workload and its job reconciler started "
                   "the Job before the eviction)" if broken else ""))
        ctx.step(f"Part 3: the same on ClusterQueue {CHECKED}, the design's: behind the ProvisioningRequest check")
        design = job_trials(ctx, latency, CHECKED)
        ctx.check(not any(j["marked_admitted"] for j in design),
                  "invariant: a Job whose Workload was admitted was never marked failed or deleted")
        held = ctx.check(not any(j["ran_after"] for j in design),
                         "invariant: a Job whose timeout was committed never ran (never unsuspended, no pod)")
        ctx.wait(lambda: not [w for w in ctx.live.list(WORKLOAD, NS) if meta(w)["name"].startswith(QUEUE)], 30,
                 "the plain Workloads to go")
    picture = svg.write(log_path, log_path.with_suffix(".svg"), f"{REPORT.number}: inactive, then admitted") \
        if hits else None
    first = hits[0]["final"] if hits else None

    def outcomes(jobs):
        return ", ".join(f"{n}× {o}" for o, n in sorted(Counter(JOB_OUTCOMES[j["outcome"]] for j in jobs).items()))
    toolbox.verdict(ctx, REPORT, bool(hits) or any(j["outcome"] == "hit" for j in bare + design),
                (f"{len(hits)} of {len(results)} plain trials: spec.active=false committed first, then Kueue's scheduler "
                 f"wrote QuotaReserved=True and Admitted=True on the inactive Workload, then evicted it "
                 f"({toolbox.conditions_line(first)})" if hits else
                 f"no plain trial of {len(results)} had the reservation land after the deactivation")
                + f"; the deadline controller's commit at that moment on Jobs without a check: {outcomes(bare)}"
                + f"; behind the ProvisioningRequest check: {outcomes(design)}",
                "the ProvisioningRequest check (the design's queue): Kueue may still reserve quota after the committed "
                "timeout, but Admitted needs the check and the Job never starts"
                + ("" if held else " (BROKEN here, see the checks)")
                + "; without a check the deadline protocol alone "
                + ("did not stop Kueue from starting the timed-out Job" if broken else "held in the trials seen"),
                str(picture) if picture else None)


SCENARIOS = (Scenario(NAME, "upstream", REPORT.title, run, report=REPORT),)
