"""Kueue's provisioning specs about flavors ("Provisioning with scheduling"): a Workload admitted on a flavor
guarded by a ProvisioningRequest check is preempted by a higher-priority one and admitted again on a second
flavor, with no check, with a second check, or with a decimal memory request; its first check's entry goes.

The two flavors are the two node pools of manifests/node-pools.yaml: the GPU pool (flavor-1, its check
provisions its nodes) and the on-demand CPU pool (flavor-2).  The Jobs are CPU-only, as the suite's: 500m, then a
high-priority one of 750m; the ClusterQueue has 0.75 CPU on flavor-1 and 0.5 on flavor-2, and preempts within
itself by priority.  Upstream sets every request Provisioned by hand and nothing provisions the preemptor's
request; here the autoscaler provisions every request (the preemptor is admitted too), so "wl2 has
QuotaReserved" is checked as a state the watch saw.  Under the fake, pods admitted on the on-demand flavor without
a check stay Pending (the fake scales only for ProvisioningRequests); the real CA scales that pool for them.

Spec 19, "Should be successfully re-admitted on another flavor without an admission check"
(provisioning_test.go:1683); spec 20, "... with another admission check" (provisioning_test.go:1819); spec 21,
"... with a decimal memory request" (provisioning_test.go:1976).
"""

from __future__ import annotations

from k8s import workload as workloads
from k8s.keys import DEMO_POOL, JOB_NAME_LABEL, ON_DEMAND_POOL, PROVISIONED, CheckState
from k8s.objects import is_true, meta
from k8s.poll import eventually

from ..kit.harness import Context
from ..kit.scenario import Scenario, Spec
from .kit import SpecEnv, check_entry, fast_boot, flavors_of, quota

HIGH = 1000
DRIVER = "wl1's request for flavor-1 is answered{more}; the preemption is Kueue's own (a high-priority Job)"

SPEC_19 = Spec(19, 1683, "Should be successfully re-admitted on another flavor without an admission check",
               "after preempting wl1 from flavor-1 (check ac1), admit it on flavor-2 (no check) and clear its ac1 entry",
               DRIVER.format(more=""), real=DRIVER.format(more="") + "; the real CA answering")
SPEC_20 = Spec(20, 1819, "Should be successfully re-admitted on another flavor with another admission check",
               "after preempting wl1 from flavor-1 (check ac1), admit it on flavor-2 once its check ac2 is Ready, and "
               "clear its ac1 entry",
               DRIVER.format(more=", then its request for flavor-2 (ac2, the on-demand pool)"),
               real=DRIVER.format(more=", then its request for flavor-2 (ac2, the on-demand pool)") + "; the real CA answering")
SPEC_21 = Spec(21, 1976, "Should be successfully re-admitted on another flavor with a decimal memory request",
               "as spec 19, for a Job of 500m CPU and 220M memory against quotas of 5G",
               DRIVER.format(more=""), real=DRIVER.format(more="") + "; the real CA answering")


def readmitted(ctx: Context, spec: Spec, second_check: bool = False, memory: bool = False) -> None:
    with SpecEnv(ctx, spec) as env:
        f1, f2 = env.flavor(DEMO_POOL), env.flavor(ON_DEMAND_POOL)
        env.config(retry=1)
        ac1 = env.check(f"{env.name}-ac1")
        rules = [{"name": ac1, "onFlavors": [f1]}]
        ac2 = None
        if second_check:
            ac2 = env.check(f"{env.name}-ac2")
            rules.append({"name": ac2, "onFlavors": [f2]})
        env.objs.priority_class(f"{env.name}-high", HIGH)
        extra = {"memory": "5G"} if memory else {}
        env.queue([{"coveredResources": ["cpu", *extra],
                    "flavors": [quota(f1, {"cpu": "0.75", **extra}), quota(f2, {"cpu": "0.5", **extra})]}], rules,
                  preemption={"withinClusterQueue": "LowerPriority"})
        first = {"cpu": "500m", **({"memory": "220M"} if memory else {})}
        ctx.step(f"job1 ({', '.join(f'{k} {v}' for k, v in first.items())}) gets flavor-1, whose check provisions a "
                 "node of the GPU pool")
        job1 = env.job("job1", duration="120s", requests=first, params=fast_boot(ctx))
        wl1 = job1.workload
        got = env.wait_now(wl1, workloads.quota_reserved, 30, "wl1's quota")
        want1 = {r: f1 for r in first}
        ctx.check(flavors_of(got) == [want1], f"wl1 holds quota on flavor-1: {flavors_of(got)}")
        labels = (got["spec"]["podSets"][0]["template"].get("metadata") or {}).get("labels")
        if spec.number == 19:
            ctx.check(labels == {JOB_NAME_LABEL: meta(job1.job)["name"]}, f"wl1's pod template labels: {labels}")
        pr1 = env.request_name(wl1, 1, ac1)
        env.wait_request(pr1, lambda p: is_true(p, PROVISIONED), 90, "wl1's request on flavor-1 to be provisioned")
        env.driven(pr1, PROVISIONED)
        env.wait_now(wl1, workloads.admitted, 30, "wl1 to be admitted")
        ctx.step("A high-priority job2 (750m) needs flavor-1: Kueue preempts wl1, which fits flavor-2")
        wl2 = env.job("job2", duration="120s", requests={"cpu": "750m"}, params=fast_boot(ctx),
                      priority=f"{env.name}-high").workload
        seen2 = env.seen_at(wl2, lambda w: workloads.quota_reserved(w) and not workloads.admitted(w), 60)
        ctx.check(seen2 is not None, "wl2 got its quota (QuotaReserved, not yet admitted)")
        if ac2:
            pr2 = env.request_name(wl1, 1, ac2)
            env.wait_request(pr2, lambda p: is_true(p, PROVISIONED), 90, "wl1's request on flavor-2 (ac2)")
            env.driven(pr2, PROVISIONED)
        want2 = {r: f2 for r in first}
        again = eventually(lambda: (w := env.get(wl1)) is not None and workloads.admitted(w)
                           and flavors_of(w) == [want2] and w, 90)
        ctx.check(bool(again), f"wl1 is admitted again, on flavor-2: {flavors_of(env.get(wl1))}")
        ctx.check(env.seen_at(wl1, workloads.evicted) is not None, "wl1 was evicted (preempted) in between")
        if ac2:
            ctx.check(check_entry(env.get(wl1), ac2).get("state") == CheckState.READY, f"wl1's check {ac2} is Ready")
        cleared = eventually(lambda: not check_entry(env.get(wl1), ac1), 30)
        ctx.check(bool(cleared), f"wl1 has no entry for {ac1} any more: "
                                 f"{[c.get('name') for c in (env.get(wl1) or {}).get('status', {}).get('admissionChecks') or []]}")


def without_check(ctx: Context) -> None:
    """Kueue v0.19.2 spec 19, "Should be successfully re-admitted on another flavor without an admission
    check" (provisioning_test.go:1683)."""
    readmitted(ctx, SPEC_19)


def with_second_check(ctx: Context) -> None:
    """Kueue v0.19.2 spec 20, "Should be successfully re-admitted on another flavor with another admission
    check" (provisioning_test.go:1819)."""
    readmitted(ctx, SPEC_20, second_check=True)


def decimal_memory(ctx: Context) -> None:
    """Kueue v0.19.2 spec 21, "Should be successfully re-admitted on another flavor with a decimal memory
    request" (provisioning_test.go:1976)."""
    readmitted(ctx, SPEC_21, memory=True)


SCENARIOS = (
    Scenario("kueue-spec-readmitted-on-flavor-without-check", "kueue-specs",
             "spec 19: preempted, re-admitted on a flavor without a check", without_check, spec=SPEC_19),
    Scenario("kueue-spec-readmitted-on-flavor-with-check", "kueue-specs",
             "spec 20: preempted, re-admitted on a flavor with another check", with_second_check, spec=SPEC_20),
    Scenario("kueue-spec-readmitted-with-decimal-memory", "kueue-specs",
             "spec 21: preempted, re-admitted on another flavor, decimal memory", decimal_memory, spec=SPEC_21),
)
