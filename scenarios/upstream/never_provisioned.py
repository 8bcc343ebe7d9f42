"""kubernetes-sigs/kueue#3245: a ProvisioningRequest accepted but never provisioned waits without bound.

Kueue v0.19.2 has no timer on the provisioning check: Accepted=True with Provisioned=False only copies
the message and stays Pending (provisioning/controller.go:668-673); retryStrategy reacts to Failed
alone (618-633), which the autoscaler never writes for best-effort-atomic.  The three layers in order.
"""

from __future__ import annotations

import time

from demo.jobs.preflight import Gang
from demo.jobs.submit import run_preflight
from demo.jobs.watch import follow
from k8s import workload as workloads
from k8s.keys import ACCEPTED, CHECK_NAME, FAILED, PARAM_STOCKOUT, PARAM_VALID_UNTIL, PROFILE, PROVISIONED, CheckState
from k8s.objects import condition, is_true
from k8s.tape import ever
from demo.timeline import svg

from ..kit.harness import NS, Context
from ..kit.recorder import Recorder
from ..kit.scenario import Report, Scenario
from ..kit import toolbox

REPORT = Report(number="kubernetes-sigs/kueue#3245", title="requests accepted but not provisioned for more than a day",
                claim="a ProvisioningRequest can stay Accepted and not Provisioned indefinitely; Kueue has no timeout "
                      "to end the wait or try again",
                fixed_in="open (a feature request); the suggested autoscaler noRetry applies to check-capacity only")
NAME = "upstream-3245"
NEEDS_FAKE = "it needs a stock-out that does not end (fakeCAStockout=true) on a gang that fits the pool"
WAIT, DEADLINE = 25, 35        # seconds after submission: how long we watch layer 2, when layer 3 acts


def run(ctx: Context) -> None:
    toolbox.begin(ctx, REPORT)
    name = ctx.new_name()
    log, log_path = ctx.event_log(NAME)
    ctx.step("Layer 1, preflight: the gang fits the pool, so the Job goes in (a stock-out is not known at submit)")
    code, lines = run_preflight(ctx.k, PROFILE, Gang(2, 8), NS, job_name=name)
    ctx.check(code == 0, " / ".join(line.removeprefix("preflight: ") for line in lines))
    with Recorder(ctx, name, log) as rec:
        ctx.step(f"Submit with --deadline {DEADLINE}s; the cloud is out of stock (injected); ValidUntilSeconds=8")
        ctx.submit(name, "2x8", deadline=f"{DEADLINE}s", provreq={PARAM_STOCKOUT: "true", PARAM_VALID_UNTIL: "8"})
        ctx.step(f"Layer 2, the autoscaler and Kueue's retryStrategy: watch for {WAIT}s")
        ctx.wait(lambda: rec.samples and rec.samples[-1][1].provreqs, 30, "the ProvisioningRequest")
        end = rec.samples[0][0] + WAIT
        ctx.wait(lambda: time.time() >= end, WAIT + 5, f"{WAIT}s of watching")
        window = [(t, s) for t, s in rec.samples if t <= end]      # judged over the whole window, not at its end
        stuck = [p for p in window[-1][1].provreqs if is_true(p, ACCEPTED) and not is_true(p, PROVISIONED)]
        reason = (condition(stuck[0], PROVISIONED) or {}).get("reason") if stuck else None
        answered = ever(window, lambda s: any(is_true(p, PROVISIONED) or is_true(p, FAILED) for p in s.provreqs))
        moved = ever(window, lambda s: workloads.check_state(s.workload, CHECK_NAME) not in (None, CheckState.PENDING))
        attempts = {p["metadata"]["name"] for _, s in window for p in s.provreqs}
        stuck = stuck if not answered and not moved and len(attempts) == 1 else []
        ctx.check(bool(stuck), f"for {WAIT}s {len(attempts)} request(s), ever Provisioned or Failed: {answered}, Kueue's "
                  f"check ever not Pending: {moved}; Provisioned=False/{reason} at the end: nothing in layer 2 ends it")
        ctx.step("Layer 3, the admission deadline")
        rec.mark("deadline", t=rec.samples[0][0] + DEADLINE)
        view = follow(ctx.k, NS, name, "finished", timeout=90, out=ctx.out, live=False)
        wl = ctx.wait(lambda: (w := rec.samples[-1][1].workload) and workloads.committed_timeout(w) and w, 30, "the commit")
        ctx.check(view.outcome == "failed" and not workloads.active(wl), f"ended: {view.reason}")
    ctx.delete_job(name)
    picture = svg.write(log_path, log_path.with_suffix(".svg"), f"{REPORT.number}: accepted, never provisioned")
    toolbox.verdict(ctx, REPORT, bool(stuck), f"the request stayed Accepted=True, Provisioned=False/{reason} for {WAIT}s "
                f"(past ValidUntilSeconds=8) with Kueue's check Pending and no second attempt",
                f"layer 3, the admission deadline ({DEADLINE}s); layer 1 cannot know, layer 2 never fires",
                str(picture))


SCENARIOS = (Scenario(NAME, "upstream", REPORT.title, run, needs_fake=NEEDS_FAKE, report=REPORT),)
