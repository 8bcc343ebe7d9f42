"""Kueue's provisioning specs about the ProvisioningRequestConfig: its edits reach the request, and its
podSetMergePolicy merges PodSets.

Spec 11, "Should keep the provisioning config in sync" (provisioning_test.go:627): while a request waits for
capacity (a 16-GPU pod, which no node holds: the autoscaler answers CapacityIsNotFound), the config's class and
parameters are changed, then the AdmissionCheck is pointed at a second config, then at a config that does not
exist.  Kueue must re-make the request with each config's class and parameters (plus the Workload's provreq
annotation), and, for the missing one, delete it and say the check is not active.  These are edits a user makes;
the autoscaler answers each new request.

Spec 18, "Should merge similar PodSets into one PodTemplate, PodSetMergePolicy is
IdenticalWorkloadSchedulingRequirements" (provisioning_test.go:1559): a Workload (made directly, as the suite
does) with a master and a worker PodSet whose pods differ only in their labels; the request must carry one
PodSet counting both and one PodTemplate.
"""

from __future__ import annotations

from k8s import workload as workloads
from k8s.keys import (BEST_EFFORT_ATOMIC, CHECK_CAPACITY, CHECK_INACTIVE, DEMO_POOL, KUEUE_MANAGED_LABEL,
                      MERGE_IDENTICAL_REQUIREMENTS, PARAM_VALID_UNTIL, PROVISIONED, CheckState)
from k8s.objects import condition, meta, spec
from k8s.resources import ADMISSION_CHECK, POD_TEMPLATE, PROVREQ_CONFIG
from k8s.poll import eventually

from ..kit.harness import Context
from ..kit.scenario import Scenario, Spec
from .kit import SpecEnv, check_entry, flavor_spec, gpu_group, pools
from .quota import podset, strip

SPEC_11 = Spec(11, 627, "Should keep the provisioning config in sync",
               "re-make the waiting request with the edited config's class and parameters, then with the second "
               "config's; for a missing config delete it and set the check Pending \"the check is not active\"",
               "no condition drives it: the config and AdmissionCheck edits (what a user does); every request is for a "
               "16-GPU pod, which no node holds",
               real="the same, the real CA answering")
SPEC_18 = Spec(18, 1559, "Should merge similar PodSets into one PodTemplate, PodSetMergePolicy is "
                         "IdenticalWorkloadSchedulingRequirements",
               "make one request PodSet (the PodSets' counts summed) and one PodTemplate for PodSets with the same "
               "scheduling requirements",
               "no condition drives it: a Workload with two PodSets that differ only in their labels; the request is "
               "check-capacity",
               real="the same, the real CA answering")


def config_in_sync(ctx: Context) -> None:
    """Kueue v0.19.2 spec 11, "Should keep the provisioning config in sync" (provisioning_test.go:627)."""
    with SpecEnv(ctx, SPEC_11) as env:
        first = env.config(params={"p1": "v1", "p2": "v2"})
        second = env.config(f"{env.name}-2", params={"p1": "v1.2", "p2": "v2.2"})
        check = env.check(config=first)
        flavor = env.flavor(DEMO_POOL)
        env.queue([gpu_group(flavor, gpus="16")], [check])
        ctx.step("A Job of one 16-GPU pod (no node holds it), with provreq.kueue.x-k8s.io/ValidUntilSeconds=0")
        waiting = env.job("sync", gpus=16, params={PARAM_VALID_UNTIL: "0"})
        wl, name = waiting.workload, waiting.request
        pr = env.wait_request(name, lambda p: condition(p, PROVISIONED), 60, "the autoscaler's answer")
        env.driven(name, PROVISIONED)
        ctx.check(content(pr) == (BEST_EFFORT_ATOMIC, {"p1": "v1", "p2": "v2", PARAM_VALID_UNTIL: "0"}),
                  f"the request carries the config: {content(pr)}")
        ctx.step("Change the config's class and parameters")
        ctx.k.patch(PROVREQ_CONFIG, first, {"spec": {"provisioningClassName": CHECK_CAPACITY,
                                                     "parameters": {"p1": "v1updated", "p2": None, "p3": "v3"}}})
        want = (CHECK_CAPACITY, {"p1": "v1updated", "p3": "v3", PARAM_VALID_UNTIL: "0"})
        got = eventually(lambda: content(env.request(name)) == want and env.request(name), 30)
        ctx.check(bool(got), f"Kueue made the request again with them: {content(env.request(name))}")
        ctx.step("Point the AdmissionCheck at the second config")
        ctx.k.patch(ADMISSION_CHECK, check, {"spec": {"parameters": {"name": second}}})
        want = (BEST_EFFORT_ATOMIC, {"p1": "v1.2", "p2": "v2.2", PARAM_VALID_UNTIL: "0"})
        got = eventually(lambda: content(env.request(name)) == want and env.request(name), 30)
        ctx.check(bool(got), f"Kueue made it again with the second config's: {content(env.request(name))}")
        ctx.step("Point the AdmissionCheck at a config that does not exist")
        ctx.k.patch(ADMISSION_CHECK, check, {"spec": {"parameters": {"name": f"{env.name}-missing"}}})
        gone = eventually(lambda: env.request(name) is None, 30)
        ctx.check(gone, "Kueue deleted the request")
        entry = eventually(lambda: (e := check_entry(env.get(wl), check)).get("message") == CHECK_INACTIVE and e, 30)
        ctx.check(bool(entry) and entry.get("state") == CheckState.PENDING,
                  f"the check is {(entry or {}).get('state')}: {(entry or {}).get('message')!r}")
        ctx.check(len(set(env.created(f"{wl}-{check}-"))) == 1 and env.attempts(wl) == [1, 1, 1],
                  f"each config made the request anew under the same name (attempt 1): {env.attempts(wl)}")


def content(pr: dict | None) -> tuple[str | None, dict | None]:
    return spec(pr).get("provisioningClassName"), spec(pr).get("parameters")


def podsets_merged(ctx: Context) -> None:
    """Kueue v0.19.2 spec 18, "Should merge similar PodSets into one PodTemplate, PodSetMergePolicy is
    IdenticalWorkloadSchedulingRequirements" (provisioning_test.go:1559)."""
    with SpecEnv(ctx, SPEC_18) as env:
        env.standard(cls=CHECK_CAPACITY, merge=MERGE_IDENTICAL_REQUIREMENTS)
        ctx.step("A Workload: master (1 pod) and worker (2 pods), 1 CPU and 2Gi each, different pod labels")
        wl = env.new_name("wl")
        sets = [podset("master", 1, {"cpu": "1", "memory": "2Gi"}), podset("worker", 2, {"cpu": "1", "memory": "2Gi"})]
        for ps, role in zip(sets, ("master", "worker")):
            ps["template"]["metadata"] = {"labels": {"role": role}}
        env.workload_object(wl, sets)
        got = env.wait_now(wl, workloads.quota_reserved, 30, "the quota")
        name = env.request_name(wl, 1)
        pr = env.wait_request(name, what="the request")
        s = spec(pr)
        admitted = sum(psa.get("count") or 0 for psa in got["status"]["admission"]["podSetAssignments"])
        ctx.check(s.get("provisioningClassName") == CHECK_CAPACITY and meta(pr).get("labels") == {KUEUE_MANAGED_LABEL: "true"},
                  f"request {name}: class {s.get('provisioningClassName')}, labels {meta(pr).get('labels')}")
        ps = s.get("podSets") or []
        ctx.check(len(ps) == 1 and ps[0].get("count") == admitted == 3,
                  f"one PodSet of {[p.get('count') for p in ps]} pods (admitted {admitted}: master 1 + worker 2)")
        ref = ((ps or [{}])[0].get("podTemplateRef") or {}).get("name")
        pt = ctx.live.get(POD_TEMPLATE, ref, meta(pr)["namespace"]) if ref else None
        tpl = ((pt or {}).get("template") or {}).get("spec") or {}
        labels, _ = flavor_spec(pools()[DEMO_POOL])
        ctx.check(pt is not None and strip(tpl.get("containers")) == strip(got["spec"]["podSets"][0]["template"]["spec"]["containers"]),
                  f"one PodTemplate {ref}, with the first PodSet's containers")
        ctx.check(tpl.get("nodeSelector") == labels and meta(pt).get("labels") == {KUEUE_MANAGED_LABEL: "true"},
                  f"its nodeSelector is the flavor's, its labels {meta(pt).get('labels')}")
        env.driven(name, PROVISIONED)


SCENARIOS = (
    Scenario("kueue-spec-config-in-sync", "kueue-specs", "spec 11: config and AdmissionCheck edits reach the request",
             config_in_sync, spec=SPEC_11),
    Scenario("kueue-spec-podsets-merged", "kueue-specs", "spec 18: podSetMergePolicy merges identical PodSets",
             podsets_merged, spec=SPEC_18),
)
