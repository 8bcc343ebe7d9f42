"""Kueue's provisioning specs about a Rejected check: a request that Failed with no retry left, and capacity
revoked from an admitted Workload and from one that only holds quota.  Each ends the same way in Kueue: the
check Rejected, the Workload deactivated (spec.active=false, Evicted by deactivation), the check reset to Pending
"Reset to Pending after eviction. Previously: Rejected", a Warning event AdmissionCheckRejected, and the eviction
counted in kueue_evicted_workloads_total{reason="Deactivated",underlying_cause="AdmissionCheck"}.

Spec 6, "Should set the condition rejected when the provision fails" (provisioning_test.go:380), retry limit 0:
the fake fails attempt 1 (fakeCAFailAttempts=1); the real Cluster Autoscaler fails a check-capacity request with
noRetry that fits no node (Failed/CapacityIsNotFound).

Spec 7, "... when workloads is not Finished, and the ProvisioningRequest's condition is set to CapacityRevoked"
(provisioning_test.go:422): a running Job; the fake revokes its capacity 3s after provisioning
(fakeCARevokeAfterSeconds).  The real autoscaler never writes CapacityRevoked.

Spec 8, "... when workloads is not Admitted, and the ProvisioningRequest's condition is set to CapacityRevoked"
(provisioning_test.go:485): a pod of 16 GPUs, which no node of the pool holds, so the request is never provisioned
(CapacityIsNotFound) and the Workload never admitted; the fake revokes it 3s after its creation
(fakeCARevokeBeforeProvisionedSeconds).

Kueue's event note names the check and, when the check has a message, the message in parentheses
(workload_controller.go:946-989): the suite's conditions have none, an autoscaler's have one, so the note is
checked exactly as Kueue's code makes it from the condition the autoscaler wrote.
"""

from __future__ import annotations


from k8s import workload as workloads
from k8s.keys import CAPACITY_REVOKED, FAILED, PARAM_REVOKE_AFTER, PARAM_REVOKE_UNPROVISIONED
from k8s.objects import condition
from k8s.tape import first

from ..kit.harness import Context
from ..kit.scenario import Scenario, Spec
from .kit import SpecEnv, failing

SPEC_6 = Spec(6, 380, "Should set the condition rejected when the provision fails",
              "with no retry left (limit 0), set the check Rejected, deactivate the Workload, emit "
              "AdmissionCheckRejected and count the eviction (Deactivated, AdmissionCheck)",
              "the fake fails attempt 1 (fakeCAFailAttempts=1)",
              real="check-capacity with noRetry on a 16-GPU pod, which no node holds")
SPEC_7 = Spec(7, 422, "Should set AdmissionCheck status to Rejected, deactivate Workload, emit an event, and bump "
                      "metrics when workloads is not Finished, and the ProvisioningRequest's condition is set to "
                      "CapacityRevoked",
              "reject the check of an admitted, running Workload, deactivate it, emit AdmissionCheckRejected, count "
              "the eviction",
              "the fake revokes the capacity 3s after provisioning it, the Job running (fakeCARevokeAfterSeconds)")
SPEC_8 = Spec(8, 485, "Should set AdmissionCheck status to Rejected, deactivate Workload, emit an event, and bump "
                      "metrics when workloads is not Admitted, and the ProvisioningRequest's condition is set to "
                      "CapacityRevoked",
              "reject the check of a Workload that only holds quota, deactivate it, emit AdmissionCheckRejected, "
              "count the eviction",
              "the fake revokes a request it never provisioned, for a 16-GPU pod that no node holds "
              "(fakeCARevokeBeforeProvisionedSeconds=3)")
NEVER_REVOKES = "the real Cluster Autoscaler 1.36.1 never writes CapacityRevoked (conditions.go accepts only four types)"


def failed_rejected(ctx: Context) -> None:
    """Kueue v0.19.2 spec 6, "Should set the condition rejected when the provision fails"
    (provisioning_test.go:380)."""
    with SpecEnv(ctx, SPEC_6) as env:
        how = failing(ctx, 1)
        check = env.standard(cls=how.cls, params=how.config_params, retry=0)
        ctx.step("A Job whose request the autoscaler fails; the config allows no retry")
        failed = env.job("fail", *how.gang, params=how.job_params)
        wl, name = failed.workload, failed.request
        pr = env.wait_request(name, lambda p: condition(p, FAILED), 60, "the request to fail")
        env.driven(name, FAILED)
        env.expect_deactivated(wl, check, (condition(pr, FAILED) or {}).get("message", ""))
        ctx.check(env.attempts(wl) == [1], f"one request only, attempt {env.attempts(wl)} (no retry)")


def revoked_while_admitted(ctx: Context) -> None:
    """Kueue v0.19.2 spec 7, "Should set AdmissionCheck status to Rejected, deactivate Workload, emit an
    event, and bump metrics when workloads is not Finished, and the ProvisioningRequest's condition is set
    to CapacityRevoked" (provisioning_test.go:422)."""
    with SpecEnv(ctx, SPEC_7) as env:
        check = env.standard()
        running = env.admitted_job("run", "A 1-GPU Job runs; 3s after provisioning the fake revokes its capacity",
                                   "120s", **{PARAM_REVOKE_AFTER: "3"})
        wl, name = running.workload, running.request
        pr = env.wait_request(name, lambda p: condition(p, CAPACITY_REVOKED), 30, "the revocation")
        admitted = env.seen_at(wl, workloads.admitted)
        revoked = env.driven(name, CAPACITY_REVOKED)
        ctx.check(admitted is not None and revoked is not None and not workloads.finished(env.get(wl)),
                  "the Workload was admitted and not finished when the capacity was revoked")
        env.expect_deactivated(wl, check, (condition(pr, CAPACITY_REVOKED) or {}).get("message", ""))


def revoked_before_admission(ctx: Context) -> None:
    """Kueue v0.19.2 spec 8, "Should set AdmissionCheck status to Rejected, deactivate Workload, emit an
    event, and bump metrics when workloads is not Admitted, and the ProvisioningRequest's condition is set
    to CapacityRevoked" (provisioning_test.go:485)."""
    with SpecEnv(ctx, SPEC_8) as env:
        check = env.standard()
        ctx.step("A Job of one 16-GPU pod, which no node holds (CapacityIsNotFound); 3s after the request was made "
                 "the fake revokes it")
        holding = env.job("quota", gpus=16, params=ctx.injected({PARAM_REVOKE_UNPROVISIONED: "3"}))
        wl, name = holding.workload, holding.request
        pr = env.wait_request(name, lambda p: condition(p, CAPACITY_REVOKED), 30, "the revocation")
        env.driven(name, CAPACITY_REVOKED)
        last = env.expect_deactivated(wl, check, (condition(pr, CAPACITY_REVOKED) or {}).get("message", ""))
        env.caught_up(wl, last)             # every version up to the one read now has reached the watch
        versions = env.versions(wl)
        ctx.check(first(versions, workloads.quota_reserved) is not None and first(versions, workloads.admitted) is None,
                  "the Workload held quota and was never admitted")


SCENARIOS = (
    Scenario("kueue-spec-failed-rejected", "kueue-specs", "spec 6: Failed, no retry left: Rejected, deactivated",
             failed_rejected, spec=SPEC_6),
    Scenario("kueue-spec-revoked-while-admitted", "kueue-specs",
             "spec 7: CapacityRevoked on a running Workload: Rejected, deactivated", revoked_while_admitted,
             needs_fake=NEVER_REVOKES, spec=SPEC_7),
    Scenario("kueue-spec-revoked-before-admission", "kueue-specs",
             "spec 8: CapacityRevoked before admission: Rejected, deactivated", revoked_before_admission,
             needs_fake=NEVER_REVOKES, spec=SPEC_8),
)
