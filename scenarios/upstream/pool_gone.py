"""kubernetes/autoscaler#9490 (open): ProvisioningRequests for a node pool that was deleted stay Accepted
forever, never Failed, so Kueue's retryStrategy never engages.

The report is GKE's: requests of class queued-provisioning.gke.io, queued against a node pool that node
auto-provisioning (NAP) made, which the autoscaler later deleted as idle.  Neither exists in the open-source
Cluster Autoscaler 1.36.1 with the kwok provider: that class is not handled at all (a request of it is left
untouched, never Accepted: the conformance probe `unknown-class`), and the kwok provider's node groups are
fixed when it starts.  Its analogue is: a best-effort-atomic request whose node group is gone, here a
ResourceFlavor whose nodeLabels name a pool that no longer exists.  Kueue puts those labels into the
request's PodTemplate; no node group has them, so the autoscaler answers `CapacityIsNotFound`, retries on its
backoff, and never writes `Failed` (only after 7 days, `Expired`): Kueue's check stays Pending, no second
attempt is made, and only the admission deadline ends the wait.
"""

from __future__ import annotations

import copy
import time

from demo.jobs.watch import follow
from k8s import workload as workloads
from k8s.keys import ACCEPTED, CHECK_NAME, DEMO_CLUSTER_QUEUE, FAILED, PROVISIONED, UPSTREAM_PREFIX
from k8s.objects import condition, is_true, meta
from k8s.resources import CLUSTER_QUEUE, RESOURCE_FLAVOR
from k8s.tape import ever

from ..kit.harness import NS, Context
from ..kit.scenario import Report, Scenario
from ..kit.recorder import Recorder
from ..kit import toolbox

REPORT = Report(
    number="kubernetes/autoscaler#9490",
    title="ProvisioningRequests for a node pool that was deleted stay Accepted, never Failed",
    claim="queued-provisioning.gke.io requests assigned to a NAP node pool that the autoscaler then deletes stay "
          "Accepted forever; never Failed, so Kueue's retryStrategy never engages",
    fixed_in="open (GKE's queued provisioning and node auto-provisioning; neither is in the open-source autoscaler)",
)
NAME = "upstream-9490"
QUEUE = f"{UPSTREAM_PREFIX}9490"
GONE_POOL = f"{UPSTREAM_PREFIX}9490-deleted-pool"
WATCH, DEADLINE = 30, 40           # seconds after submission: how long the wait is watched, when layer 3 acts


def run(ctx: Context) -> None:
    toolbox.begin(ctx, REPORT)
    with toolbox.KueueObjects(ctx) as objs:
        groups = copy.deepcopy(ctx.live.must(CLUSTER_QUEUE, DEMO_CLUSTER_QUEUE)["spec"]["resourceGroups"])
        demo = ctx.live.must(RESOURCE_FLAVOR, groups[0]["flavors"][0]["name"])
        ctx.step(f"A flavor whose nodeLabels name a node pool that is gone (agentpool={GONE_POOL}), behind the "
                 "ProvisioningRequest check")
        objs.flavor(QUEUE, {"agentpool": GONE_POOL}, (demo.get("spec") or {}).get("tolerations"))
        mine = [{**g, "flavors": [{**f, "name": QUEUE} for f in g["flavors"]]} for g in groups]
        objs.cluster_queue(QUEUE, [CHECK_NAME], resource_groups=mine)
        objs.local_queue(QUEUE, QUEUE)
        objs.wait_active(QUEUE)
        name = ctx.new_name()
        ctx.step(f"Submit a 1 × 8-GPU Job with --deadline {DEADLINE}s; watch its request for {WATCH}s")
        with Recorder(ctx, name, None) as rec:      # every version of its objects over the whole window
            t0 = time.monotonic()
            ctx.submit(name, "1x8", deadline=f"{DEADLINE}s", profile=QUEUE)
            ctx.wait(lambda: time.monotonic() - t0 >= WATCH, WATCH + 5, f"{WATCH}s of watching")
            window = list(rec.samples)              # read at the window's end (the recorder's stop takes seconds)
        wl = window[-1][1].workload
        pr = next((s.provreqs[-1] for _, s in reversed(window) if s.provreqs), None)
        seen = {meta(p)["name"] for _, s in window for p in s.provreqs}
        prov = condition(pr, PROVISIONED) or {}
        check = workloads.admission_check(wl, CHECK_NAME) or {}
        never_failed = not ever(window, lambda s: any(is_true(p, FAILED) for p in s.provreqs))   # the whole window
        stuck = (is_true(pr, ACCEPTED) and not is_true(pr, PROVISIONED) and never_failed
                 and len(seen) == 1 and check.get("state") == "Pending")
        ctx.check(stuck, f"after {WATCH}s one request, Accepted={(condition(pr, ACCEPTED) or {}).get('status')}, "
                         f"Provisioned={prov.get('status')}/{prov.get('reason')}, never Failed; Kueue's check "
                         f"{check.get('state')}, {len(seen)} attempt(s): nothing in layer 2 ends it")
        ctx.step("Layer 3, the admission deadline")
        view = follow(ctx.k, NS, name, "finished", timeout=90, out=ctx.out, live=False)
        ctx.check(view.outcome == "failed", f"ended by the admission deadline: {view.reason}")
        ctx.delete_job(name)
    toolbox.verdict(ctx, REPORT, False,
                "as reported, no: the open-source 1.36.1 has neither the queued-provisioning.gke.io class (left "
                "untouched, never Accepted) nor node auto-provisioning, and the kwok provider's node groups never go "
                f"away. Its analogue does: a request for a pool that is gone stayed "
                f"Accepted=True, Provisioned=False/{prov.get('reason')} for {WATCH}s, retried, never Failed (the real "
                "one writes Failed/Expired after 7 days), with Kueue's check Pending and no second attempt" if stuck
                else f"neither as reported nor its analogue: the request read {prov.get('status')}/{prov.get('reason')}",
                f"layer 3, the admission deadline ({DEADLINE}s); layer 2 (retryStrategy) never fires")


SCENARIOS = (Scenario(NAME, "upstream", REPORT.title, run, report=REPORT),)
