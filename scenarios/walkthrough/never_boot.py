"""Beyond the design: the nodes never boot.

The cloud accepts the scale-up, so the autoscaler writes Provisioned=True at once and Kueue
admits; but the VMs never register.  What bounds the wait, layer by layer:

* the autoscaler (layer 2): after --max-node-provision-time it removes the nodes and backs the
  node group off; the ProvisioningRequest stays Provisioned=True (the real autoscaler never
  touches it again), so Kueue's retryStrategy never sees a Failed to react to;
* Kueue's waitForPodsReady (configured at demo scale): the admitted Workload's pods are not
  Ready in time, so Kueue evicts it (PodsReadyTimeout) and requeues it, without limit;
* the requeued Workload gets a new ProvisioningRequest, which meets the backed-off pool:
  Provisioned=False/CapacityIsNotFound, retried;
* the admission deadline (layer 3) ends it: the Workload is not admitted when the deadline
  passes, so the timeout is committed.
"""

from __future__ import annotations

from demo.jobs.watch import follow
from demo.timeline import svg
from fake_ca.conditions import Reason
from fake_ca.status import group_backoff
from k8s import poll
from k8s import workload as workloads
from k8s.duration import parse_duration
from k8s.keys import (CA_STATUS, EVICTED, NEVER_BOOTS, PARAM_BOOT_SECONDS, PODS_READY_TIMEOUT,
                           PROVISIONED, PROVREQ_UID_ANNOTATION)
from k8s.objects import annotations, condition, is_true, uid
from k8s.paths import shown
from k8s.resources import CONFIG_MAP

from ..kit.harness import Context
from ..kit.scenario import Scenario
from ..kit.recorder import Recorder, check_commit_bound

TITLE = "Beyond the design: the nodes never boot"
DEADLINE = "70s"

REMOVED_WITHIN = 5.0           # seconds after the backoff is reported: a few of the fake's 1 s loops


def pool_backoff(ctx: Context) -> dict | None:
    """The demo pool's backoff as the autoscaler publishes it (kube-system/cluster-autoscaler-status)."""
    return group_backoff(ctx.live.get(CONFIG_MAP, CA_STATUS[1], CA_STATUS[0]), ctx.slot.pool)


def run(ctx: Context) -> None:
    ctx.header(TITLE)
    name = ctx.new_name()
    log, log_path = ctx.event_log("never-boot")
    with Recorder(ctx, name, log) as rec:
        ctx.step(f"Submit a 2 × 8-GPU Job with --deadline {DEADLINE}; the cloud accepts the scale-up but the VMs "
                 "never register (fakeCABootSeconds=never)")
        ctx.submit(name, "2x8", deadline=DEADLINE, provreq={PARAM_BOOT_SECONDS: NEVER_BOOTS})

        ctx.step("Provisioned=True as soon as the nodes are requested; Kueue admits; the pods wait for nodes "
                 "that stay NotReady")
        ctx.wait(lambda: rec.ever(lambda s: s.workload is not None and workloads.admitted(s.workload)), 60,
                 "Kueue to admit")
        first = rec.samples[-1][1]
        first_nodes = {n["metadata"]["name"] for n in first.nodes
                       if any(annotations(n).get(PROVREQ_UID_ANNOTATION) == uid(p)
                              for p in first.provreqs)}
        ctx.check(len(first_nodes) == 2 and any(is_true(p, PROVISIONED) for p in first.provreqs),
                  f"the autoscaler requested 2 nodes and wrote Provisioned=True at once ({', '.join(sorted(first_nodes))})")

        ctx.step("After --max-node-provision-time the autoscaler removes them and backs the node group off")
        backoff = ctx.wait(lambda: pool_backoff(ctx), 60, "the node group's backoff")
        # the same loop deletes them, then writes the backoff; a delete the apiserver did not take is retried the
        # next loop, and a node may still be going when the status is read: gone within REMOVED_WITHIN of it
        left = poll.eventually(lambda: sorted(n["metadata"]["name"] for n in ctx.pool_nodes()
                                              if n["metadata"]["name"] in first_nodes), REMOVED_WITHIN,
                               done=lambda got: not got)
        ctx.check(not left, "the nodes that never booted are gone"
                  + (f" (still there {REMOVED_WITHIN:.0f}s after the backoff: {', '.join(left)})" if left else ""))
        why = (backoff.get("backoffInfo") or {}).get("errorMessage", "")
        ctx.say(f"  cluster-autoscaler-status: gpupool scaleUp {backoff.get('status')} since "
                f"{backoff.get('lastTransitionTime')} ({(backoff.get('backoffInfo') or {}).get('errorCode')}: {why})")
        ctx.check(why.startswith(f"Scale-up timed out for node group {ctx.slot.pool}"),
                  "the autoscaler reports node group gpupool in Backoff because its nodes did not register")
        still = rec.samples[-1][1]
        ctx.check(any(is_true(p, PROVISIONED) for p in still.provreqs) and workloads.admitted(still.workload),
                  "the ProvisioningRequest stays Provisioned=True and the Workload Admitted: "
                  "retryStrategy has nothing to react to")

        ctx.step("Kueue's waitForPodsReady evicts the Workload whose pods never became Ready, and requeues it")
        ev = ctx.wait(lambda: next((c for _, s in rec.samples if (c := condition(s.workload, EVICTED))
                                    and c.get("status") == "True"), None), 90, "Kueue to evict the Workload")
        ctx.check(ev.get("reason") == PODS_READY_TIMEOUT, f"evicted: {ev.get('reason')}: {ev.get('message', '')}")

        ctx.step("The requeued Workload's new ProvisioningRequest meets the backed-off pool")
        first_uids = {uid(p) for p in first.provreqs}

        def not_found_again():
            s = rec.samples[-1][1]
            return next((p for p in s.provreqs if uid(p) not in first_uids
                         and (condition(p, PROVISIONED) or {}).get("reason") == Reason.NOT_FOUND), None)
        again = ctx.wait(not_found_again, 60, "a new ProvisioningRequest with CapacityIsNotFound")
        ctx.check(pool_backoff(ctx) is not None,
                  f"{again['metadata']['name']}: Provisioned=False/CapacityIsNotFound while node group gpupool "
                  "is backed off")

        ctx.step(f"tau-demo watch {name}: the admission deadline ({DEADLINE}) ends it")
        view = follow(ctx.k, ctx.slot.namespace, name, "finished", timeout=120, out=ctx.out, live=False)
        ctx.check(view.outcome == "failed" and "admission deadline" in view.reason,
                  f"the watch ends failed: {view.reason}")
        wl = ctx.wait(lambda: (w := rec.samples[-1][1].workload) and workloads.committed_timeout(w) and w, 30,
                      "the committed timeout")
        ctx.check(workloads.committed_timeout(wl) and not workloads.active(wl),
                  "caught by layer 3: the timeout is committed on the Workload (spec.active=false)")
        check_commit_bound(ctx, rec, deadline_at=rec.job_created_at() + parse_duration(DEADLINE))
        ctx.check(not rec.ever(lambda s: any(p.get("status", {}).get("phase") == "Running" for p in s.pods)),
                  "no pod ever ran")

    ctx.say("  which layer caught it: not layer 2 (the request stayed Provisioned=True, no Failed for "
            "retryStrategy), not waitForPodsReady alone (it requeues without limit); the admission deadline did")
    ctx.delete_job(name)
    ctx.step("The pool's backoff runs out before the next scenario")
    ctx.wait(lambda: pool_backoff(ctx) is None, 180, "the node group's backoff to end")
    ctx.check(pool_backoff(ctx) is None and not ctx.pool_nodes(), "the pool is empty and out of backoff")
    picture = svg.write(log_path, log_path.with_suffix(".svg"), TITLE)
    ctx.say(f"  timeline: {shown(picture)}")


SCENARIOS = (
    Scenario("never-boot", "beyond",
             "the VMs never boot: waitForPodsReady requeues without limit; the deadline ends it", run,
             needs_fake="it needs VMs that never register (fakeCABootSeconds=never): the kwok provider's nodes "
                        "are Ready at once", slot=True),
)
