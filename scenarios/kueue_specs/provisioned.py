"""Kueue's provisioning specs about a request's life around admission: deleted when its Workload is evicted,
Pending with the autoscaler's message then Ready with the pod annotations, deleted when the Workload finishes,
BookingExpired ignored once admitted, and an admitted Workload that keeps running when its request is deleted.

Spec 4, "Should delete provisioning requests when workload is evicted" (provisioning_test.go:284): upstream
writes Evicted=True/Preempted by hand.  Here Kueue evicts for real: a higher-priority Job preempts one that holds
quota and waits for capacity (check-capacity, a 16-GPU pod: CapacityIsNotFound).

Spec 5, "Should set the condition ready when the provision succeed" (provisioning_test.go:311): upstream writes
Accepted, then Provisioned=False with an ETA message, then Provisioned=True.  Here the pool is full (a 2 x 8-GPU
Job runs on both of its nodes): the autoscaler answers a third 8-GPU Job Accepted and Provisioned=False/
CapacityIsNotFound ("Capacity is not found, CA will try to find it later."), which Kueue shows as the check's
message; when the first Job is done, the autoscaler's retry finds the capacity (Provisioned=True) and Kueue sets
the check Ready with the two pod annotations.

Spec 9, "Should delete the ProvisioningRequest when workload is Finished" (provisioning_test.go:533): upstream
finishes the Workload by hand; here the Job runs on the provisioned node and completes.

Spec 10, "Should ignore the change if Workload is Admitted and the ProvisioningRequest's condition is set to
BookingExpired" (provisioning_test.go:581): the fake ends the booking while the Job runs: once its pods consume it
(BookingExpired, CapacityBookingConsumed, as the real CA does), or 3s after provisioning should they not be scheduled
by then (fakeCABookingSeconds=3).  The real autoscaler books for 10 minutes, hardcoded, so it cannot drive it.

Spec 12, "Should let a running workload to continue after the provisioning request deleted"
(provisioning_test.go:722): upstream deletes the request by hand, and so does the scenario (a deletion is no
condition write: the autoscaler still writes every condition), under either autoscaler.

The declared text of each spec says how the scenario drives it; what the autoscaler answered is the table's
"seen", from the run.
"""

from __future__ import annotations


from k8s import workload as workloads
from k8s.keys import (BOOKING_EXPIRED, CHECK_CAPACITY, CONSUME_PROVREQ_ANNOTATION, EVICTED,
                      EVICTED_BY_PREEMPTION, FINISHED, PARAM_BOOKING_SECONDS, PROVISIONED, SPECS_NAMESPACE,
                      PROVREQ_CLASS_ANNOTATION, ACCEPTED, BEST_EFFORT_ATOMIC, CheckState)
from k8s.objects import condition, is_true, revision
from k8s.resources import PROVREQ
from k8s.poll import eventually

from ..kit.harness import Context
from ..kit.scenario import Scenario, Spec
from .kit import SpecEnv, after_by_revision, check_entry, fast_boot, reason_of

WINDOW = 4.0               # seconds a state is watched for after the change that must not move it
LOW, HIGH = 100, 1000      # WorkloadPriorityClass values

SPEC_4 = Spec(4, 284, "Should delete provisioning requests when workload is evicted",
              "delete the Workload's request when it is evicted",
              "no condition drives it: Kueue's own preemption evicts the Workload (a higher-priority Job); the request "
              "is check-capacity for a 16-GPU pod that no node holds",
              real="the same, the real CA answering")
SPEC_5 = Spec(5, 311, "Should set the condition ready when the provision succeed",
              "keep the check Pending with the request's Provisioned message, then set it Ready with the pod "
              "annotations consume-provisioning-request and provisioning-class-name (podSetUpdates)",
              "the pool is full (a 2 x 8-GPU Job on both nodes) when a third 8-GPU Job asks; the first Job ends and "
              "the autoscaler's retry (after 5s) answers again",
              real="the same, the real CA answering (--provisioning-request-initial-backoff-time 5s)")
SPEC_9 = Spec(9, 533, "Should delete the ProvisioningRequest when workload is Finished",
              "delete the request when the Workload finishes; the Workload stays active, the check Ready, no "
              "deactivation counted",
              "a 1-GPU Job of 3s on the capacity the autoscaler answers with, which completes (Finished by Kueue's job "
              "reconciler)",
              real="the same, the real CA answering")
SPEC_10 = Spec(10, 581, "Should ignore the change if Workload is Admitted and the ProvisioningRequest's condition is "
                        "set to BookingExpired",
               "keep an admitted Workload admitted and its check Ready when the booking expires",
               "a Job of 60s that runs on the booked capacity: the fake ends the booking once the pods consume it, or "
               "3s after provisioning should they not be scheduled by then (fakeCABookingSeconds=3)")
SPEC_12 = Spec(12, 722, "Should let a running workload to continue after the provisioning request deleted",
               "keep the check Ready and the Workload admitted and running after its request is deleted, and make "
               "no new one",
               "the request deleted by the scenario once the check is Ready and the Job runs, as upstream's spec "
               "deletes it",
               real="the same, the real CA answering the request first")


def deleted_on_eviction(ctx: Context) -> None:
    """Kueue v0.19.2 spec 4, "Should delete provisioning requests when workload is evicted"
    (provisioning_test.go:284)."""
    with SpecEnv(ctx, SPEC_4) as env:
        env.objs.priority_class(f"{env.name}-low", LOW)
        env.objs.priority_class(f"{env.name}-high", HIGH)
        env.standard(cls=CHECK_CAPACITY, gpus="16", preemption={"withinClusterQueue": "LowerPriority"})
        ctx.step("A low-priority Job of one 16-GPU pod gets the quota and a request (no node holds it)")
        low = env.job("low", gpus=16, priority=f"{env.name}-low")
        wl, name = low.workload, low.request
        env.wait_request(name, lambda p: condition(p, PROVISIONED), 60, "the autoscaler's answer")
        env.driven(name, PROVISIONED)
        ctx.step("A high-priority Job needs the same quota: Kueue preempts the first")
        env.job("high", gpus=16, priority=f"{env.name}-high")
        got = env.wait_now(wl, lambda w: workloads.evicted(w), 30, "the eviction")
        ctx.check(workloads.evicted_for(got, EVICTED_BY_PREEMPTION), f"Evicted={reason_of(got, EVICTED)}")
        ctx.check(*deleted_after(env, name, env.version_seen(wl, workloads.evicted), "the eviction"))


def deleted_after(env: SpecEnv, name: str, event: tuple[float, dict] | None, what: str) -> tuple[bool, str]:
    """Was request `name` deleted (within 30 s) after the Workload version `event` (when seen, the version)?
    (ok, what was seen)"""
    gone = eventually(lambda: env.deletion(name), 30)
    return after_by_revision(event, gone, f"request {name} deleted after {what}",
                             f"{what} seen: {event is not None}; deleted: {'yes' if gone else 'not within 30s'}")


def provisioned_ready(ctx: Context) -> None:
    """Kueue v0.19.2 spec 5, "Should set the condition ready when the provision succeed"
    (provisioning_test.go:311)."""
    with SpecEnv(ctx, SPEC_5) as env:
        check = env.standard(cls=BEST_EFFORT_ATOMIC)
        ctx.step("A 2 x 8-GPU Job fills both nodes of the pool (its maximum) for 8s")
        blocker = env.job("full", pods=2, gpus=8, duration="8s", params=fast_boot(ctx))
        env.wait_now(blocker.workload, workloads.admitted, 90, "the first Job to be admitted")
        ctx.wait(lambda: len(env.scheduled_pods(blocker.job)) == 2, 60, "the first Job's pods on the pool's nodes")
        ctx.step("A 1 x 8-GPU Job: the autoscaler finds no capacity and says so; Kueue shows its message")
        waiting = env.job("wait", gpus=8, params=fast_boot(ctx))
        wl, name = waiting.workload, waiting.request
        pending = env.wait_request(name, lambda p: (condition(p, PROVISIONED) or {}).get("status") == "False", 60,
                                   "Provisioned=False")
        env.driven(name, ACCEPTED)
        env.driven(name, PROVISIONED)
        message = (condition(pending, PROVISIONED) or {}).get("message", "")
        shown = env.seen_at(wl, lambda w: check_entry(w, check).get("state") == CheckState.PENDING
                         and check_entry(w, check).get("message") == message, 15)
        ctx.check(is_true(pending, ACCEPTED) and shown is not None,
                  f"the check is Pending with the request's message {message!r}")
        ctx.step("The first Job finishes; the autoscaler's retry finds the freed capacity")
        got = env.wait_now(wl, lambda w: check_entry(w, check).get("state") == CheckState.READY, 90, "the check to be Ready")
        ready = env.wait_request(name, lambda p: is_true(p, PROVISIONED), 10, "Provisioned=True")
        env.drivers.append(f"then Provisioned=True/{(condition(ready, PROVISIONED) or {}).get('reason')}")
        ctx.check(env.seen_at(blocker.workload, workloads.finished) is not None, "the first Job finished before")
        updates = check_entry(got, check).get("podSetUpdates")
        ctx.check(updates == pod_annotations(name, BEST_EFFORT_ATOMIC), f"the check is Ready with podSetUpdates {updates}")
        ctx.check(eventually(lambda: workloads.admitted(env.get(wl)), 10), "the Workload is admitted")


def deleted_on_finish(ctx: Context) -> None:
    """Kueue v0.19.2 spec 9, "Should delete the ProvisioningRequest when workload is Finished"
    (provisioning_test.go:533)."""
    with SpecEnv(ctx, SPEC_9) as env:
        check = env.standard()
        ctx.step("A 1-GPU Job of 3s on a provisioned node")
        done = env.job("done", duration="3s", params=fast_boot(ctx))
        wl, name = done.workload, done.request
        env.wait_request(name, lambda p: is_true(p, PROVISIONED), 90, "Provisioned=True")
        env.driven(name, PROVISIONED)
        ready = env.wait_now(wl, lambda w: check_entry(w, check).get("state") == CheckState.READY, 30, "the check")
        ctx.check(check_entry(ready, check).get("state") == CheckState.READY, "the check is Ready")
        done = env.wait_now(wl, workloads.finished, 90, "the Job to finish")
        ctx.check(*deleted_after(env, name, env.version_seen(wl, workloads.finished),
                                 f"Finished={reason_of(done, FINISHED)}"))
        now = env.get(wl)
        ctx.check(workloads.active(now) and not workloads.deactivated(now),
                  f"the Workload is active and not deactivated (Evicted={reason_of(now, EVICTED)})")
        ctx.check(check_entry(now, check).get("state") == CheckState.READY, "the check stays Ready")
        env.check_metric(0, cause="")


def booking_expired_ignored(ctx: Context) -> None:
    """Kueue v0.19.2 spec 10, "Should ignore the change if Workload is Admitted and the
    ProvisioningRequest's condition is set to BookingExpired" (provisioning_test.go:581)."""
    with SpecEnv(ctx, SPEC_10) as env:
        check = env.standard()
        booked = env.admitted_job("book", "A 1-GPU Job runs; its booking ends 3s after provisioning", "60s",
                                  **{PARAM_BOOKING_SECONDS: "3"})
        wl, name = booked.workload, booked.request
        env.wait_request(name, lambda p: is_true(p, BOOKING_EXPIRED), 30, "BookingExpired=True")
        expired = env.driven(name, BOOKING_EXPIRED)
        ctx.hold(WINDOW, "the window after the booking ended: the admitted Workload stays admitted")
        # ordered by etcd revision, not by arrival: the request and the Workload reach this process on two
        # watches, and the fake can end the booking within a second of the admission (once the pod consumes it)
        at = revision(expired) if expired is not None else None
        versions = [o for _, o in env.wls.versions(wl)]
        then = [o for o in versions if at is not None and revision(o) < at][-1:]
        after = [o for o in versions if at is not None and revision(o) > at]
        ctx.check(bool(then) and workloads.admitted(then[0]),
                  f"the booking expired while the Workload was admitted (the Workload's version at the expiry's "
                  f"etcd revision {at})")
        ctx.check(bool(then) and all(workloads.admitted(o) and check_entry(o, check).get("state") == CheckState.READY
                                     for o in then + after) and workloads.admitted(env.get(wl)),
                  f"for {WINDOW:.0f}s after, every version of the Workload is Admitted with the check Ready "
                  f"(its version at the expiry and {len(after)} after)")
        ctx.check(env.attempts(wl) == [1], f"no new request ({env.attempts(wl)})")


def running_survives_deletion(ctx: Context) -> None:
    """Kueue v0.19.2 spec 12, "Should let a running workload to continue after the provisioning request
    deleted" (provisioning_test.go:722)."""
    with SpecEnv(ctx, SPEC_12) as env:
        check = env.standard()
        kept = env.admitted_job("keep", "A 1-GPU Job of 15s is admitted on the capacity the autoscaler answers with",
                                "15s")
        wl, name = kept.workload, kept.request
        env.driven(name, PROVISIONED)
        ready = env.wait_now(wl, lambda w: check_entry(w, check).get("state") == CheckState.READY, 10, "the check")
        updates = check_entry(ready, check).get("podSetUpdates")
        ctx.check(updates == pod_annotations(name, BEST_EFFORT_ATOMIC),
                  f"the check is Ready with podSetUpdates {updates}")
        ctx.wait(lambda: len(env.scheduled_pods(kept.job)) == 1, 60, "the Job's pod on a node")
        ctx.step(f"The request {name} is deleted, as upstream's spec deletes it (no condition is written)")
        ctx.k.delete(PROVREQ, name, SPECS_NAMESPACE)
        gone = eventually(lambda: env.deleted(name), 30)
        env.drivers.append(f"the request deleted by the scenario {'' if gone else '(not seen)'}".strip())
        ctx.check(gone is not None, f"request {name} deleted")
        ctx.hold(WINDOW, "the window after the deletion: the admitted Workload stays admitted")
        after = [o for t, o in env.wls.versions(wl) if gone and t >= gone]
        now = env.get(wl)
        ctx.check(workloads.admitted(now) and check_entry(now, check).get("state") == CheckState.READY
                  and all(workloads.admitted(o) and check_entry(o, check).get("state") == CheckState.READY
                          for o in after),
                  f"for {WINDOW:.0f}s after, every version of the Workload is Admitted with the check Ready "
                  f"({len(after)} seen)")
        ctx.check(env.attempts(wl) == [1] and env.request(name) is None, "the request stays deleted; no new one")
        done = env.wait_now(wl, workloads.finished, 60, "the Job to finish")
        ctx.check(workloads.finished(done) and not workloads.evicted(done),
                  f"the Job ran to its end: Finished={reason_of(done, FINISHED)}, never evicted")


def pod_annotations(request: str, cls: str) -> list[dict]:
    """The podSetUpdates Kueue sets on a Ready check: the two pod annotations on the Job's one PodSet."""
    return [{"name": "main", "annotations": {CONSUME_PROVREQ_ANNOTATION: request, PROVREQ_CLASS_ANNOTATION: cls}}]


SCENARIOS = (
    Scenario("kueue-spec-request-deleted-on-eviction", "kueue-specs",
             "spec 4: a preempted Workload's request is deleted", deleted_on_eviction, spec=SPEC_4),
    Scenario("kueue-spec-provisioned-ready", "kueue-specs",
             "spec 5: Pending with the autoscaler's message, then Ready with the pod annotations", provisioned_ready,
             spec=SPEC_5),
    Scenario("kueue-spec-request-deleted-on-finish", "kueue-specs", "spec 9: a finished Workload's request is deleted",
             deleted_on_finish, spec=SPEC_9),
    Scenario("kueue-spec-booking-expired-while-admitted", "kueue-specs",
             "spec 10: BookingExpired after admission is ignored", booking_expired_ignored,
             needs_fake="the real Cluster Autoscaler books for 10 minutes (hardcoded defaultReservationTime)",
             spec=SPEC_10),
    Scenario("kueue-spec-running-survives-request-deletion", "kueue-specs",
             "spec 12: a running Workload continues after its request is deleted", running_survives_deletion,
             spec=SPEC_12),
)
