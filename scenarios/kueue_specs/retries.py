"""Kueue's provisioning specs about retries (a config with retries left, backoff base 2s): after a failed attempt
Kueue evicts the Workload (AdmissionCheck), resets its checks to Pending with the retry count, deletes the request,
requeues the Workload after the backoff and makes the request of the next attempt, `<workload>-<check>-<n+1>`.

Upstream the job reconciler's release of the quota and every reservation are written by hand; here Kueue's
scheduler and job reconciler do them.  The failures: the fake fails the first N attempts of the Workload, the
number read from Kueue's request name (fakeCAFailAttempts=N), and provisions the next; the real Cluster
Autoscaler fails a check-capacity request with noRetry that fits no node (a 16-GPU pod): every attempt.

Spec 13, "Admission checks for an evicted workload are Pending" (provisioning_test.go:876, kueue#5129).
Spec 14, "Should retry if a ProvisioningRequest fails, then succeed if the second Provisioning request succeeds"
(provisioning_test.go:911): under the real CA, a node of 16 GPUs that belongs to no autoscaler is made after
attempt 1 failed, so check-capacity finds attempt 2's capacity (CapacityIsFound).
Spec 15, "Should retry if a ProvisioningRequest fails, then reject AdmissionCheck if the second ProvisioningRequest
fails" (provisioning_test.go:1025).
Spec 16, "Should retry when a ProvisioningRequest is in BookingExpired stated, then succeed if the second
Provisioning request succeeds" (provisioning_test.go:1164): a second AdmissionCheck (the scenario's own
controller) holds the Workload until its first retry, so the booking of attempt 1 (fakeCABookingSeconds=3) ends
before admission; attempt 2 is admitted.  The real CA books for 10 minutes.
Spec 17, "Should retry twice if a ProvisioningRequest fails twice" (provisioning_test.go:1337), retry limit 2.
"""

from __future__ import annotations

from k8s import workload as workloads
from k8s.keys import (BOOKING_EXPIRED, DEMO_POOL, EVICTED, EVICTED_BY_ADMISSION_CHECK, EXTERNAL_CHECK_CONTROLLER,
                      FAILED, PARAM_BOOKING_SECONDS, PROVISIONED, SPECS_NAMESPACE, CheckState)
from k8s.objects import condition, is_true, revision
from k8s.tape import first
from k8s.resources import NODE

from ..kit.harness import Context
from ..kit.scenario import Scenario, Spec
from ..kit import toolbox
from .kit import SpecEnv, check_entry, failing, fast_boot, gpu_group, pools, reason_of

FAKE_FAILS = "the fake fails attempts 1..{n} (fakeCAFailAttempts={n}) and provisions the next"
REAL_FAILS = "check-capacity with noRetry on a 16-GPU pod, which no node holds, on every attempt"

SPEC_13 = Spec(13, 876, "Admission checks for an evicted workload are Pending",
               "reset the checks of a Workload evicted by a retry to Pending, and keep them Pending until it is "
               "admitted again (kueue#5129)",
               FAKE_FAILS.format(n=1), real=REAL_FAILS)
SPEC_14 = Spec(14, 911, "Should retry if a ProvisioningRequest fails, then succeed if the second Provisioning request "
                        "succeeds",
               "after attempt 1 fails: evict, reset the check (retryCount 1), delete the request, requeue, make "
               "attempt 2; when it is provisioned, set the check Ready",
               FAKE_FAILS.format(n=1),
               real="check-capacity with noRetry on a 16-GPU pod; once attempt 1 is answered, a 16-GPU node that no "
                    "autoscaler owns is made by hand for attempt 2")
SPEC_15 = Spec(15, 1025, "Should retry if a ProvisioningRequest fails, then reject AdmissionCheck if the second "
                         "ProvisioningRequest fails",
               "retry attempt 1 (limit 1); when attempt 2 fails too, set the check Rejected, deactivate, emit "
               "AdmissionCheckRejected, count the eviction",
               FAKE_FAILS.format(n=2), real=REAL_FAILS)
SPEC_16 = Spec(16, 1164, "Should retry when a ProvisioningRequest is in BookingExpired stated, then succeed if the "
                         "second Provisioning request succeeds",
               "retry a request whose booking expired before admission; set the check Ready when attempt 2 is "
               "provisioned",
               "a booking of 3s (fakeCABookingSeconds=3) while a second AdmissionCheck holds the Workload until its "
               "first retry")
SPEC_17 = Spec(17, 1337, "Should retry twice if a ProvisioningRequest fails twice",
               "with retry limit 2, retry attempts 1 and 2 (retryCount 1, then 2) and make attempt 3",
               FAKE_FAILS.format(n=2), real=REAL_FAILS)


def retried(env: SpecEnv, attempts: int, retry: int, gang_real: tuple[int, int] = (1, 16)) -> tuple[str, str]:
    """The spec's queue with `retry` retries and a Job whose first `attempts` requests fail: (check, Workload)."""
    how = failing(env.ctx, attempts, gang_real)
    check = env.standard(cls=how.cls, params=how.config_params, retry=retry)
    env.ctx.step(f"A Job whose first {attempts} request(s) the autoscaler fails; the config allows {retry} retr"
                 f"{'y' if retry == 1 else 'ies'}")
    return check, env.job("retry", *how.gang, params=how.job_params).workload


def checks_pending_after_eviction(ctx: Context) -> None:
    """Kueue v0.19.2 spec 13, "Admission checks for an evicted workload are Pending"
    (provisioning_test.go:876)."""
    with SpecEnv(ctx, SPEC_13) as env:
        check, wl = retried(env, 1, retry=1)
        name = env.request_name(wl, 1)
        env.wait_request(name, lambda p: is_true(p, FAILED), 60, "attempt 1 to fail")
        env.driven(name, FAILED)
        evicted = env.version_seen(wl, lambda w: workloads.evicted_for(w, EVICTED_BY_ADMISSION_CHECK), 30)
        ctx.check(evicted is not None, f"Evicted={reason_of(evicted and evicted[1], EVICTED)}")
        if evicted is None:
            return
        # the window's end is not the check's own state (a window ending where the check first leaves Pending
        # holds only Pending by construction): it is the autoscaler's answer to attempt 2, by etcd revision;
        # Kueue may move the check only on that answer
        second = env.request_name(wl, 2)
        answer = env.wait_request(second, lambda p: is_true(p, PROVISIONED) or is_true(p, FAILED), 90,
                                  "attempt 2 to be answered")
        end = revision(answer)
        after = env.version_seen(wl, lambda w: revision(w) > end, 30)   # the watch has delivered the window whole
        window = pending_window(env.wls.versions(wl), check, revision(evicted[1]), end)
        states = sorted({state for _, state, _ in window})
        reserved = sum(1 for _, _, again in window if again)
        ctx.check(after is not None and states == [CheckState.PENDING] and reserved > 0,
                  f"from the eviction (etcd revision {revision(evicted[1])}) until attempt 2 was answered (revision "
                  f"{end}, {window[-1][0] - evicted[0] if window else 0:.1f}s later) every version of the Workload "
                  f"({len(window)}, {reserved} of them with the quota reserved again) has the check "
                  f"{', '.join(states) or 'in no state'}; then "
                  f"{check_entry(after[1], check).get('state') if after else 'no later version seen'}")


def pending_window(versions: list[tuple[float, dict]], check: str, start: int, end: int) -> list[tuple[float, str, bool]]:
    """Every version of the Workload written at etcd revision `start` or later and before `end`: (when seen, the
    check's state, quota reserved)."""
    return [(t, check_entry(o, check).get("state", ""), bool(workloads.quota_reserved(o)))
            for t, o in versions if start <= revision(o) < end]


def retry_then_provisioned(ctx: Context) -> None:
    """Kueue v0.19.2 spec 14, "Should retry if a ProvisioningRequest fails, then succeed if the second
    Provisioning request succeeds" (provisioning_test.go:911)."""
    made: list[str] = []
    try:
        with SpecEnv(ctx, SPEC_14) as env:
            check, wl = retried(env, 1, retry=1)
            attempt1 = env.request_name(wl, 1)
            env.wait_request(attempt1, lambda p: is_true(p, FAILED), 60, "attempt 1 to fail")
            env.driven(attempt1, FAILED)
            if ctx.autoscaler == "real":
                ctx.step("A 16-GPU node that belongs to no autoscaler joins (what check-capacity can then find)")
                made.append(ctx.k.create(NODE, toolbox.free_node(pools()[DEMO_POOL], 0, name=f"{env.name}-free",
                                                         gpus=16))["metadata"]["name"])
            env.expect_retry(wl, check, 1)
            second = env.request_name(wl, 2)
            env.wait_request(second, lambda p: is_true(p, PROVISIONED), 60, "attempt 2 to be provisioned")
            env.driven(second, PROVISIONED)
            got = env.wait_now(wl, lambda w: check_entry(w, check).get("state") == CheckState.READY, 30, "the check")
            ctx.check(check_entry(got, check).get("state") == CheckState.READY and env.attempts(wl) == [1, 2],
                      f"the check is Ready; attempts {env.attempts(wl)}")
    finally:            # after the Job and its pods are gone (a pod bound to a deleted node waits for pod GC)
        for name in made:
            ctx.k.delete(NODE, name)


def retry_then_rejected(ctx: Context) -> None:
    """Kueue v0.19.2 spec 15, "Should retry if a ProvisioningRequest fails, then reject AdmissionCheck if
    the second ProvisioningRequest fails" (provisioning_test.go:1025)."""
    with SpecEnv(ctx, SPEC_15) as env:
        check, wl = retried(env, 2, retry=1)
        env.wait_request(env.request_name(wl, 1), lambda p: is_true(p, FAILED), 60, "attempt 1 to fail")
        env.driven(env.request_name(wl, 1), FAILED)
        env.expect_retry(wl, check, 1)
        second = env.request_name(wl, 2)
        pr = env.wait_request(second, lambda p: is_true(p, FAILED), 60, "attempt 2 to fail")
        env.driven(second, FAILED)
        env.expect_deactivated(wl, check, (condition(pr, FAILED) or {}).get("message", ""))
        now = env.get(wl)
        ctx.check(check_entry(now, check).get("retryCount") == 1, f"the check keeps retryCount "
                                                                 f"{check_entry(now, check).get('retryCount')}")


def booking_expired_retry(ctx: Context) -> None:
    """Kueue v0.19.2 spec 16, "Should retry when a ProvisioningRequest is in BookingExpired stated, then
    succeed if the second Provisioning request succeeds" (provisioning_test.go:1164)."""
    with SpecEnv(ctx, SPEC_16) as env:
        flavor = env.flavor(DEMO_POOL)
        env.config(retry=1)
        check = env.check()
        hold = f"{env.name}-hold"
        env.objs.admission_check(hold, controller=EXTERNAL_CHECK_CONTROLLER, config=None)

        def policy(w: dict, mine: dict):
            """The second check: Ready only once the provisioning check has been retried."""
            if workloads.quota_reserved(w) and (check_entry(w, check).get("retryCount") or 0) >= 1:
                return CheckState.READY, "passes once the provisioning check has been retried"
            return None
        with toolbox.ExternalCheck(ctx, hold, policy, namespace=SPECS_NAMESPACE) as ext:
            env.queue([gpu_group(flavor)], [check, hold])
            ctx.step("A 1-GPU Job; a second AdmissionCheck holds it; the request's booking lasts 3s")
            booked = env.job("book", params=fast_boot(ctx, **{PARAM_BOOKING_SECONDS: "3"}))
            wl, attempt1 = booked.workload, booked.request
            pr = env.wait_request(attempt1, lambda p: is_true(p, BOOKING_EXPIRED), 60, "the booking to expire")
            env.driven(attempt1, PROVISIONED)
            env.driven(attempt1, BOOKING_EXPIRED)
            expired_at = next(t for t, typ, o in env.prs.of(prefix=attempt1) if is_true(o, BOOKING_EXPIRED))
            ctx.check(is_true(pr, PROVISIONED) and first(env.versions(wl), workloads.admitted) is None,
                      f"the booking of attempt 1 expired before admission (the second check held it: "
                      f"{check_entry(env.get(wl), hold).get('state')})")
            env.expect_retry(wl, check, 1)
            second = env.request_name(wl, 2)
            env.wait_request(second, lambda p: is_true(p, PROVISIONED), 60, "attempt 2 to be provisioned")
            env.driven(second, PROVISIONED)
            got = env.wait_now(wl, workloads.admitted, 30, "Kueue to admit")
            admitted_at = env.seen_at(wl, workloads.admitted)
            ctx.check(check_entry(got, check).get("state") == CheckState.READY and bool(ext.writes),
                      "attempt 2: the check is Ready and the Workload admitted ("
                      + (f"{admitted_at - expired_at:.1f}s after the booking expired)" if admitted_at is not None
                         else "the watch did not see it within 10s)"))


def retry_twice(ctx: Context) -> None:
    """Kueue v0.19.2 spec 17, "Should retry twice if a ProvisioningRequest fails twice"
    (provisioning_test.go:1337)."""
    with SpecEnv(ctx, SPEC_17) as env:
        check, wl = retried(env, 2, retry=2)
        env.wait_request(env.request_name(wl, 1), lambda p: is_true(p, FAILED), 60, "attempt 1 to fail")
        env.driven(env.request_name(wl, 1), FAILED)
        env.expect_retry(wl, check, 1)
        env.wait_request(env.request_name(wl, 2), lambda p: is_true(p, FAILED), 60, "attempt 2 to fail")
        env.driven(env.request_name(wl, 2), FAILED)
        env.expect_retry(wl, check, 2)
        ctx.check(env.attempts(wl)[:3] == [1, 2, 3], f"attempts made: {env.attempts(wl)}")


NEEDS_BOOKING = "the real Cluster Autoscaler books for 10 minutes (hardcoded defaultReservationTime)"
SCENARIOS = (
    Scenario("kueue-spec-checks-pending-after-eviction", "kueue-specs",
             "spec 13: a retried Workload's checks are Pending until it is admitted again", checks_pending_after_eviction,
             spec=SPEC_13),
    Scenario("kueue-spec-retry-then-provisioned", "kueue-specs", "spec 14: attempt 1 fails, attempt 2 is provisioned",
             retry_then_provisioned, spec=SPEC_14),
    Scenario("kueue-spec-retry-then-rejected", "kueue-specs", "spec 15: attempts 1 and 2 fail (limit 1): Rejected",
             retry_then_rejected, spec=SPEC_15),
    Scenario("kueue-spec-booking-expired-retry", "kueue-specs",
             "spec 16: BookingExpired before admission is retried; attempt 2 is admitted", booking_expired_retry,
             needs_fake=NEEDS_BOOKING, spec=SPEC_16),
    Scenario("kueue-spec-retry-twice", "kueue-specs", "spec 17: two failures, two retries, attempt 3 made",
             retry_twice, spec=SPEC_17),
)
