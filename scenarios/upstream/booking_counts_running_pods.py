"""kubernetes/autoscaler#9805 (fixed by #9806, on the 1.37 branch only): best-effort-atomic refuses capacity that
exists, because booking counts pods that already run.

The real Cluster Autoscaler 1.36.1 books every pod of a `Provisioned=True` request for 10 minutes
(processors/provreq/processor.go bookCapacity): it places the request's pods into its scheduling snapshot
on every loop, although the Job's real pods, which consume the request, already run there.  The capacity
is counted twice, so another request that would fit what is really free gets `CapacityIsNotFound`
until the booking expires.  1.37 ends a booking once as many consuming pods are scheduled as the request
asked for (`BookingExpired=True/CapacityBookingConsumed`); the fake does that.

The story on the demo pool (2 nodes of 8 GPUs), through Kueue: a 1 × 8-GPU Job fills one node, a 1 × 4-GPU
Job runs on the second, whose other 4 GPUs are free; then a third Job, 1 × 4 GPUs, asks for them.  Under
the real autoscaler (`--autoscaler real`) the report reproduces when the third request stays
`CapacityIsNotFound` while the 4 GPUs are free; under the fake it is admitted at once.
"""

from __future__ import annotations


from k8s import provreq as provreqs_
from k8s.keys import BOOKING_EXPIRED, CONSUME_PROVREQ_ANNOTATION, GPU, PROVISIONED
from k8s.objects import annotations, condition, is_true, meta, spec
from k8s.quantity import parse_quantity
from k8s.poll import eventually
from k8s.resources import POD, PROVREQ

from ..kit.harness import NS, Context
from ..kit.scenario import Report, Scenario
from ..kit import toolbox

REPORT = Report(
    number="kubernetes/autoscaler#9805",
    title="best-effort-atomic reports CapacityIsNotFound while the capacity is free: booking counts running pods",
    claim="a Provisioned request's pods are booked for 10 minutes although its Job's pods already run on that "
          "capacity; counted twice, it is refused to the next request (CapacityIsNotFound) that would fit",
    fixed_in="cluster-autoscaler 1.37 (PR #9806: BookingExpired/CapacityBookingConsumed once the pods are "
             "scheduled); not in 1.36.1",
)
NAME = "upstream-9805"
WATCH = 30          # seconds the third request is watched after its first answer
RUN = "600s"        # the first two Jobs run longer than the scenario
DRAIN_REAL = 5 * 60 + 120   # the real CA's --unremovable-node-recheck-timeout (upstream 5m), then its scale-down


def running_pods(ctx: Context, job: str) -> list[dict]:
    return [p for p in ctx.live.list(POD, NS, selector=f"job-name={job}")
            if (p.get("status") or {}).get("phase") == "Running"]


def request_of(ctx: Context, job: str) -> dict | None:
    wl = toolbox.workload_of(ctx, job)
    mine = provreqs_.of_workload(wl, ctx.live.list(PROVREQ, NS)) if wl else []
    return mine[-1] if mine else None


def free_gpus(ctx: Context) -> dict[str, int]:
    """Per pool node, its allocatable GPUs minus the GPU requests of the live pods bound to it."""
    pods = [p for p in ctx.live.list(POD) if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    out = {}
    for n in ctx.pool_nodes():
        used = sum(parse_quantity(((c.get("resources") or {}).get("requests") or {}).get(GPU, "0"))
                   for p in pods if spec(p).get("nodeName") == meta(n)["name"] for c in spec(p).get("containers") or [])
        out[meta(n)["name"]] = int((parse_quantity(((n.get("status") or {}).get("allocatable") or {}).get(GPU, "0"))
                                    - used) // 1000)
    return out


def run(ctx: Context) -> None:
    toolbox.begin(ctx, REPORT)
    filler, half, third = ctx.new_name("job-fill"), ctx.new_name("job-half"), ctx.new_name("job-third")
    ctx.step("A 1 × 8-GPU Job fills one node of the pool")
    ctx.submit(filler, "1x8", duration=RUN)
    ctx.wait(lambda: running_pods(ctx, filler), 180, f"{filler}'s pod to run")
    ctx.step("A 1 × 4-GPU Job runs on the second node; its pod consumes its ProvisioningRequest")
    ctx.submit(half, "1x4", duration=RUN)
    pod = ctx.wait(lambda: next(iter(running_pods(ctx, half)), None), 180, f"{half}'s pod to run")
    consumed = annotations(pod).get(CONSUME_PROVREQ_ANNOTATION)
    free = free_gpus(ctx)
    ctx.require(len(free) == 2 and sorted(free.values()) == [0, 4],
                f"the pool is at its max of 2 nodes with 4 GPUs free on one (free per node: {free}); {half}'s pod "
                f"runs there and consumes request {consumed}")
    ctx.step(f"A third Job, 1 × 4 GPUs: its request would fit the 4 free GPUs; watch it {WATCH}s")
    ctx.submit(third, "1x4", duration="10s")
    pr = ctx.wait(lambda: (p := request_of(ctx, third)) and condition(p, PROVISIONED) and p, 120,
                  f"{third}'s request to be answered")
    refused_while_free = []
    answers = [pr]

    def sample() -> bool:
        """Note a refusal while 4 GPUs were free; True once the request is Provisioned."""
        now = answers[-1]
        if is_true(now, PROVISIONED):
            return True
        c = condition(now, PROVISIONED) or {}
        free = free_gpus(ctx)
        if c.get("status") == "False" and max(free.values(), default=0) >= 4:
            refused_while_free.append(f"{c.get('reason')} with {max(free.values())} GPUs free")
        answers.append(request_of(ctx, third) or now)
        return False
    eventually(sample, WATCH, 2)
    pr = answers[-1]
    c = condition(pr, PROVISIONED) or {}
    half_pr = ctx.live.get(PROVREQ, consumed, NS) if consumed else None
    booking = condition(half_pr, BOOKING_EXPIRED) or {}
    ctx.say(f"  {meta(pr)['name']}: Provisioned={c.get('status')}/{c.get('reason')}; {consumed}: BookingExpired="
            f"{booking.get('status', '-')}/{booking.get('reason', '-')}")
    reproduced = bool(refused_while_free) and not is_true(pr, PROVISIONED)
    ctx.check(reproduced or is_true(pr, PROVISIONED),
              f"the third request was answered: Provisioned={c.get('status')}/{c.get('reason')}")
    for job in (third, half, filler):
        ctx.delete_job(job)
    # the real CA found the node booked by half's request unremovable while it was booked, and looks at it again
    # only after --unremovable-node-recheck-timeout (upstream 5m): its drain can take that long
    ctx.wait_pool_empty(DRAIN_REAL if ctx.autoscaler == "real" else 240)
    toolbox.verdict(ctx, REPORT, reproduced,
                (f"the third 1 × 4-GPU request stayed Provisioned=False/{c.get('reason')} for "
                 f"{WATCH}s while 4 GPUs were free on a node (the running Job's request was still booked: "
                 f"BookingExpired={booking.get('status', 'absent')})") if reproduced else
                (f"the third request got Provisioned={c.get('status')}/{c.get('reason')} "
                 f"(the running Job's booking: BookingExpired={booking.get('status', 'absent')}/"
                 f"{booking.get('reason', '-')})"),
                "none: the Job waits until the booking expires (10 minutes) or its admission deadline")


SCENARIOS = (Scenario(NAME, "upstream", REPORT.title, run, report=REPORT),)
