"""kubernetes-sigs/kueue#10807 (fixed by #14309): a Rejected check that arrives during an eviction is ignored.

Kueue v0.19.2's workload controller deactivates a Workload whose check is Rejected
(workload_controller.go:979-991), but returns before that branch when the Workload is already
evicted (workload_controller.go:974, `if IsEvicted(wl) || ...`), and looks at checks only while quota is
reserved (833).  A rejection written between the Evicted=True write and the job reconciler's
release of the quota is therefore never acted on: Admitted=True stays until the quota goes, the
Workload is never deactivated, and afterwards it waits forever ("The workload has failed admission
checks").

The ProvisioningRequest check cannot write that rejection itself (it does nothing for evicted
Workloads), so, as in the report, the rejection comes from a second, external check: a small
controller of the scenario's own that sets only its own check's state.  It asks for a retry (Kueue
evicts, reason AdmissionCheck) and, seeing Evicted=True with the quota still reserved, rejects.
"""

from __future__ import annotations

import time

from demo.jobs.watch import follow
from k8s import job as jobs
from k8s import workload as workloads
from k8s.keys import (CHECK_NAME, DEACTIVATED_DUE_TO_ADMISSION_CHECK, DEACTIVATION_TARGET, EVENT_CHECK_REJECTED,
                           EVICTED, EXTERNAL_CHECK_CONTROLLER, QUOTA_RESERVED, UPSTREAM_PREFIX, CheckState)
from k8s.objects import condition, created_at, is_true, meta, revision
from k8s.poll import eventually
from demo.timeline import svg
from demo.timeline.lanes import snapshot_states

from ..kit.harness import NS, Context
from ..kit.recorder import Recorder
from ..kit.scenario import Report, Scenario
from ..kit import toolbox

REPORT = Report(
    number="kubernetes-sigs/kueue#10807",
    title="a Rejected admission check that arrives while an eviction is in flight is ignored",
    claim="the Workload is not deactivated and keeps Admitted=True; afterwards it stays pending with the "
          "rejected check forever (fixed by #14309)",
    fixed_in="v0.19.3 (PR #14309), per Kueue's changelog as the issue cites it",
)
NAME = "upstream-10807"
QUEUE = f"{UPSTREAM_PREFIX}10807"
CHECK = f"{UPSTREAM_PREFIX}10807-external-check"
DEADLINE = 45


def running(snap) -> bool:
    return any((p.get("status") or {}).get("phase") == "Running" for p in snap.pods)


def deactivated_by_kueue(wl: dict | None) -> bool:
    ev = condition(wl, EVICTED) or {}
    return is_true(wl, DEACTIVATION_TARGET) or ev.get("reason") == DEACTIVATED_DUE_TO_ADMISSION_CHECK or (
        not workloads.active(wl) and not workloads.committed_timeout(wl))


def control(ctx: Context, ext: toolbox.ExternalCheck) -> float:
    ctx.step("Control: the external check rejects an admitted Workload that is not being evicted")
    name = ctx.new_name("job-ctrl")
    ext.policy = lambda wl, me: (CheckState.READY, "passes") if workloads.quota_reserved(wl) else None
    ctx.submit(name, "1x8", deadline="90s", profile=QUEUE)
    wl = ctx.wait(lambda: (w := toolbox.workload_of(ctx, name)) and workloads.admitted(w) and w, 60, "Kueue to admit")
    ext.policy = lambda wl, me: (CheckState.REJECTED, "rejected by the external check") if workloads.admitted(wl) else None
    ext.poke(meta(wl)["name"])
    t0 = time.time()
    wl = ctx.wait(lambda: (w := toolbox.workload_of(ctx, name)) and deactivated_by_kueue(w) and w, 30, "Kueue to deactivate")
    took = time.time() - t0
    # Kueue records its events asynchronously (client-go's broadcaster), after the write that deactivates
    events = eventually(lambda: toolbox.workload_events(ctx, meta(wl)["name"]).get(EVENT_CHECK_REJECTED, []), 15)
    ctx.check(bool(events), f"Kueue deactivated it within {took:.1f}s: {toolbox.conditions_line(wl)}; event "
                            f"{EVENT_CHECK_REJECTED}: {(events or ['none'])[0][:70]}")
    ctx.delete_job(name)
    return took


def run(ctx: Context) -> None:
    toolbox.begin(ctx, REPORT)
    log, log_path = ctx.event_log(NAME)
    with toolbox.KueueObjects(ctx) as objs:
        objs.admission_check(CHECK, controller=EXTERNAL_CHECK_CONTROLLER, config=None)
        objs.cluster_queue(QUEUE, [CHECK_NAME, CHECK])
        objs.local_queue(QUEUE, QUEUE)
        with toolbox.ExternalCheck(ctx, CHECK) as ext:
            objs.wait_active(QUEUE)
            took = control(ctx, ext)
            name = ctx.new_name()
            phase = {"now": "admit"}

            def policy(wl, me):
                if phase["now"] == "admit" and workloads.quota_reserved(wl) and not is_true(wl, EVICTED):
                    return CheckState.READY, "passes"
                if phase["now"] == "retry" and me.get("state") == CheckState.READY and workloads.admitted(wl):
                    return CheckState.RETRY, "the external check asks for a retry"
                if phase["now"] == "retry" and is_true(wl, EVICTED) and workloads.quota_reserved(wl):
                    return CheckState.REJECTED, "rejected while the eviction is in flight"
                return None
            ext.policy = policy

            def lanes(s):
                return {**snapshot_states(s),
                        "External check": workloads.check_state(s.workload, CHECK) or "-"}
            with Recorder(ctx, name, log, lanes=lanes) as rec:
                ctx.step(f"Submit a 1 × 8-GPU Job with --deadline {DEADLINE}s; both checks pass; Kueue admits; "
                         "the pod runs")
                created = ctx.submit(name, "1x8", duration="300s", deadline=f"{DEADLINE}s", profile=QUEUE)
                rec.mark("deadline", t=created_at(created).timestamp() + DEADLINE)
                ctx.wait(lambda: rec.samples and running(rec.samples[-1][1]), 40, "the pod to run")
                wl = rec.samples[-1][1].workload
                ctx.check(workloads.admitted(wl), f"running: {toolbox.conditions_line(wl)}")
                ctx.step("The external check asks for a retry: Kueue evicts (AdmissionCheck); while the eviction "
                         "is in flight it rejects")
                phase["now"] = "retry"
                ext.poke(meta(wl)["name"])
                def rejection():
                    return next((w for w in ext.writes if w.state == CheckState.REJECTED
                                 and meta(w.read)["name"] == meta(wl)["name"]), None)
                try:
                    ctx.wait(rejection, 20, "the rejection")
                except AssertionError:
                    pass
                rej = rejection()
                at = rej.read if rej else None
                if rej:
                    rec.mark("Retry, then Rejected", t=rej.t)
                in_window = bool(at) and is_true(at, EVICTED) and workloads.quota_reserved(at)
                ctx.say(f"  Rejected written on rv {revision(at) if at else '-'}: {toolbox.conditions_line(at)}"
                        if rej else f"  no rejection landed in the window ({ext.conflicts} conflicts)")
                ctx.step("What Kueue does with it: the control was deactivated within "
                         f"{took:.1f}s; watch for {max(3 * took, 5):.0f}s after the quota is released")
                ctx.wait(lambda: not workloads.quota_reserved(rec.samples[-1][1].workload), 30, "the quota release")
                ctx.hold(max(3 * took, 5), "the window after the release: does Kueue act on the rejection")
                wl = rec.samples[-1][1].workload
                kueue_acted = rec.ever(lambda s: deactivated_by_kueue(s.workload))
                events = toolbox.workload_events(ctx, meta(wl)["name"]).get(EVENT_CHECK_REJECTED, [])
                ignored = in_window and not kueue_acted and not events
                ctx.say(f"  now: {toolbox.conditions_line(wl)}; {CHECK}: "
                        f"{workloads.check_state(wl, CHECK)}; QuotaReserved: "
                        f"{(condition(wl, QUOTA_RESERVED) or {}).get('message')}")
                ctx.step(f"Layer 3: the admission deadline ({DEADLINE}s after submission)")
                view = follow(ctx.k, NS, name, "finished", timeout=90, out=ctx.out, live=False)
                ctx.wait(lambda: rec.samples[-1][1].job is None, 60, "cleanup to delete the Job")
            committed = rec.first(lambda s: workloads.committed_timeout(s.workload))
            ctx.check(view.outcome == "failed" and committed is not None, f"layer 3 ended it: {view.reason}")
            held = [ctx.check(not rec.ever(lambda s: (running(s) or workloads.admitted(s.workload))
                                           and (workloads.committed_timeout(s.workload) or jobs.mirrored(s.job))),
                              "invariant: while the Job ran (or its Workload was Admitted) it was never reported failed"),
                    ctx.check(not any(s.job is not None and (running(s) or jobs.started(s.job))
                                      for t, s in rec.samples if committed and t >= committed),
                              "invariant: once the timeout was committed the Job never ran again; cleanup deleted it")]
    ctx.wait_pool_empty(120)
    picture = svg.write(log_path, log_path.with_suffix(".svg"), f"{REPORT.number}: rejected during eviction")
    evidence = (f"the external check's Rejected landed on rv {revision(at)} ({toolbox.conditions_line(at)}); Kueue "
                f"neither deactivated the Workload nor recorded {EVENT_CHECK_REJECTED}, released the quota and left "
                f"it active and pending with the rejected check (the control was deactivated in {took:.1f}s)"
                if ignored else
                "Kueue deactivated the Workload (the fixed behaviour)" if kueue_acted else
                f"the rejection did not land while the eviction was in flight ({ext.conflicts} conflicts)")
    toolbox.verdict(ctx, REPORT, ignored, evidence,
                "layer 3, the admission deadline: it committed the timeout once the Workload was no longer admitted; "
                + ("the invariants held" if all(held) else "an invariant was BROKEN (see the checks)"), str(picture))


SCENARIOS = (Scenario(NAME, "upstream", REPORT.title, run, report=REPORT),)
