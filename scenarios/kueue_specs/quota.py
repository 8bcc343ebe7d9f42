"""Kueue's provisioning specs about the request and the quota: none before the quota is reserved, none when no
pod needs one, and, after the reservation, one that carries the config's class and parameters, the Workload's
provreq annotations and one PodTemplate per PodSet with the flavor's node selector.

Spec 1, "Should not create provisioning requests before quota is reserved" (provisioning_test.go:175): upstream
never reserves quota (no scheduler runs in the suite).  Here Kueue's scheduler withholds it: the ClusterQueue has
quota for one Job and a second one waits; once the first leaves, the second gets the quota, and only then its
request.

Spec 2, "Should not create a provisioning request when all admitted PodSet counts are zero"
(provisioning_test.go:183): upstream writes an admission with counts 0 by hand.  Here a Job of parallelism 0 asks
for GPUs: Kueue's scheduler admits it with a count of 0.

Spec 3, "Should create provisioning requests after quota is reserved and preserve it when reservation is lost"
(provisioning_test.go:218): upstream reserves the quota, then removes it, by hand.  Here a Workload with two
PodSets (made directly, as the suite makes it) gets its quota from Kueue's scheduler.  Kueue loses a reservation
only by evicting the Workload, and then deletes its request (spec 4), so "preserve it when reservation is lost"
cannot be reached without writing the Workload's status by hand: that part is said, not shown.
"""

from __future__ import annotations

import time

from k8s import workload as workloads
from k8s.keys import (CHECK_CAPACITY, KUEUE_MANAGED_LABEL, NO_REQUEST_NEEDED, PARAM_VALID_UNTIL, PROVREQ_PARAM_PREFIX,
                      QUOTA_RESERVED, CheckState, DEMO_POOL)
from k8s.objects import condition, is_true, meta, spec
from k8s.tape import first
from k8s.resources import POD_TEMPLATE
from k8s.watch import Event

from ..kit.harness import Context
from ..kit.scenario import Scenario, Spec
from .kit import SpecEnv, after_by_revision, check_entry, flavor_spec, pools, reason_of

EXAMPLE_RESOURCE = "example.org/res1"             # the suite's customResourceOne: no node has it
WINDOW = 5.0                                      # seconds an absence is watched for
CONTAINER_DEFAULTS = ("terminationMessagePath", "terminationMessagePolicy", "imagePullPolicy")

SPEC_1 = Spec(1, 175, "Should not create provisioning requests before quota is reserved",
              "make no ProvisioningRequest while the Workload has no quota reserved; make it once it has",
              "no condition drives it: Kueue's scheduler withholds the quota (a second Job beyond the ClusterQueue's quota); the "
              "requests are check-capacity",
              real="the same, the real CA answering")
SPEC_2 = Spec(2, 183, "Should not create a provisioning request when all admitted PodSet counts are zero",
              "set the check Ready with \"the provisioning request is not needed\" and make no request",
              "no condition drives it: a Job of parallelism 0 asking for GPUs, admitted by Kueue's scheduler with count 0",
              real="the same (no autoscaler is involved)")
SPEC_3 = Spec(3, 218, "Should create provisioning requests after quota is reserved and preserve it when reservation "
                      "is lost",
              "after the reservation, make the request with the config's class and parameters, the Workload's "
              "provreq.kueue.x-k8s.io/ annotations, one PodSet per PodSet (admitted counts), the managed label and "
              "PodTemplates copying the containers with the flavor's nodeSelector",
              "no condition drives it: Kueue's scheduler reserves the quota of a Workload with two PodSets",
              real="the same, the real CA answering the check-capacity request",
              unreachable="\"preserve it when reservation is lost\": Kueue drops a reservation only by evicting the "
                          "Workload, and then deletes the request (spec 4); only a by-hand write of the Workload's "
                          "status reaches it")


def no_request_before_quota(ctx: Context) -> None:
    """Kueue v0.19.2 spec 1, "Should not create provisioning requests before quota is reserved"
    (provisioning_test.go:175)."""
    with SpecEnv(ctx, SPEC_1) as env:
        check = env.standard(cls=CHECK_CAPACITY, gpus="1")
        ctx.step("Two 1-GPU Jobs into a ClusterQueue with quota for one GPU: the first gets it, the second waits")
        first_job = env.job("first")
        env.wait_now(first_job.workload, workloads.quota_reserved, 30, "the first Job's quota")
        env.wait_request(first_job.request, what="the first Job's request")
        second = env.job("second")
        wl = second.workload
        env.wait_now(wl, lambda w: condition(w, QUOTA_RESERVED), 30, "the scheduler to look at the second Job")
        started = time.time()
        ctx.step(f"Watch the second Job's Workload for {WINDOW:.0f}s without quota")
        ctx.hold(WINDOW, "the window without quota")
        prefix = f"{wl}-{check}-"
        ctx.check(first(env.versions(wl), workloads.quota_reserved) is None,
                  f"for {time.time() - started:.0f}s the second Workload has no quota: "
                  f"QuotaReserved={reason_of(env.get(wl), QUOTA_RESERVED)} "
                  f"({(condition(env.get(wl), QUOTA_RESERVED) or {}).get('message', '')[:80]})")
        ctx.check(not env.created(prefix), f"and no ProvisioningRequest of it exists (none named {prefix}*, watched)")
        ctx.step("The first Job leaves: the second gets the quota, and then its request")
        ctx.delete_job(meta(first_job.job)["name"], namespace=meta(first_job.job)["namespace"])
        reserved = env.wait_now(wl, workloads.quota_reserved, 30, "the second Job's quota")
        env.wait_request(second.request, what="the second Job's request")
        ctx.check(*made_after_quota(env, wl, prefix, f"its request {second.request}",
                                    f" ({reason_of(reserved, QUOTA_RESERVED)})"))


def made_after_quota(env: SpecEnv, wl: str, prefix: str, what: str, why: str = "") -> tuple[bool, str]:
    """Was the first request named `prefix`* made after the Workload's quota was reserved?  (ok, what was seen)"""
    quota = env.version_seen(wl, workloads.quota_reserved)
    made = next(((t, o) for t, typ, o in env.prs.of(prefix=prefix) if typ == Event.ADDED), None)
    return after_by_revision(quota, made, f"{what} was made after the quota was reserved{why}",
                             f"quota seen: {quota is not None}, request seen: {made is not None}")


def no_request_for_zero_pods(ctx: Context) -> None:
    """Kueue v0.19.2 spec 2, "Should not create a provisioning request when all admitted PodSet counts are
    zero" (provisioning_test.go:183)."""
    with SpecEnv(ctx, SPEC_2) as env:
        check = env.standard()
        ctx.step("A Job of parallelism 0 that asks for GPUs: Kueue admits a PodSet of count 0")
        wl = env.job("zero", parallelism=0).workload
        got = env.wait_now(wl, lambda w: check_entry(w, check).get("state") == CheckState.READY, 30,
                           "the check to be Ready")
        counts = [psa.get("count") for psa in (got.get("status") or {}).get("admission", {}).get("podSetAssignments") or []]
        entry = check_entry(got, check)
        ctx.check(counts == [0], f"Kueue's scheduler admitted the PodSet with count {counts}")
        ctx.check(entry.get("message") == NO_REQUEST_NEEDED,
                  f"the check is Ready with the message {entry.get('message')!r} (want {NO_REQUEST_NEEDED!r})")
        ctx.hold(WINDOW / 2, "the window in which no request may be made")
        ctx.check(not env.created(f"{wl}-{check}-") and workloads.admitted(env.get(wl)),
                  f"no ProvisioningRequest was made (watched for {WINDOW / 2:.1f}s after); the Workload is Admitted")


def request_after_quota(ctx: Context) -> None:
    """Kueue v0.19.2 spec 3, "Should create provisioning requests after quota is reserved and preserve it
    when reservation is lost" (provisioning_test.go:218)."""
    with SpecEnv(ctx, SPEC_3) as env:
        params = {"p1": "v1", "p2": "v2"}
        env.standard(cls=CHECK_CAPACITY, params=params, **{EXAMPLE_RESOURCE: "10"})
        ctx.step("A Workload with two PodSets (ps1: 3 pods of 1 CPU; ps2: 6 pods of 500m CPU and example.org/res1), "
                 "annotated provreq.kueue.x-k8s.io/ValidUntilSeconds=0 and invalid-provreq-prefix/Foo=Bar")
        wl = env.new_name("wl")
        env.workload_object(wl, [podset("ps1", 3, {"cpu": "1"}),
                                 podset("ps2", 6, {"cpu": "500m", EXAMPLE_RESOURCE: "1"}, {EXAMPLE_RESOURCE: "1"})],
                            annotations={PROVREQ_PARAM_PREFIX + PARAM_VALID_UNTIL: "0", "invalid-provreq-prefix/Foo": "Bar"})
        got = env.wait_now(wl, workloads.quota_reserved, 30, "the quota")
        name = env.request_name(wl, 1)
        pr = env.wait_request(name, what="the request")
        ctx.check(*made_after_quota(env, wl, name, f"request {name}"))
        s = spec(pr)
        ctx.check(s.get("provisioningClassName") == CHECK_CAPACITY, f"its class is the config's: {s.get('provisioningClassName')}")
        want = {**params, PARAM_VALID_UNTIL: "0"}
        ctx.check(s.get("parameters") == want, f"its parameters are the config's and the Workload's provreq "
                                               f"annotation, nothing else: {s.get('parameters')}")
        ctx.check(meta(pr).get("labels") == {KUEUE_MANAGED_LABEL: "true"}, f"its labels: {meta(pr).get('labels')}")
        admitted = {psa["name"]: psa.get("count") for psa in got["status"]["admission"]["podSetAssignments"]}
        sets = s.get("podSets") or []
        ctx.check([p.get("count") for p in sets] == [admitted["ps1"], admitted["ps2"]] and len(sets) == 2,
                  f"two PodSets with the admitted counts: {[p.get('count') for p in sets]} (admitted {admitted})")
        labels, _ = flavor_spec(pools()[DEMO_POOL])
        for i, ps in enumerate(sets):
            ref = (ps.get("podTemplateRef") or {}).get("name")
            pt = ctx.live.get(POD_TEMPLATE, ref, meta(pr)["namespace"]) if ref else None
            tpl = (pt or {}).get("template") or {}
            mine = got["spec"]["podSets"][i]["template"]["spec"]["containers"]
            ctx.check(pt is not None and strip(tpl.get("spec", {}).get("containers")) == strip(mine),
                      f"PodTemplate {ref}: the containers of PodSet {got['spec']['podSets'][i]['name']}")
            ctx.check(tpl.get("spec", {}).get("nodeSelector") == labels,
                      f"PodTemplate {ref}: the flavor's nodeSelector {tpl.get('spec', {}).get('nodeSelector')}")
            ctx.check(meta(pt).get("labels") == {KUEUE_MANAGED_LABEL: "true"},
                      f"PodTemplate {ref}: labels {meta(pt).get('labels')}")
        env.note_unreached(SPEC_3.unreachable)
        ctx.check(not is_true(env.request(name), "Failed"), "the request stays (check-capacity, not Failed)")


def podset(name: str, count: int, requests: dict, limits: dict | None = None) -> dict:
    resources: dict = {"requests": dict(requests)}
    if limits:
        resources["limits"] = dict(limits)
    return {"name": name, "count": count, "template": {"spec": {"restartPolicy": "Never", "containers": [
        {"name": "c", "image": "image", "resources": resources}]}}}


def strip(containers) -> list[dict]:
    """Containers without the fields the apiserver defaults on a PodTemplate (the suite ignores them too)."""
    return [{k: v for k, v in c.items() if k not in CONTAINER_DEFAULTS} for c in containers or []]


SCENARIOS = (
    Scenario("kueue-spec-no-request-before-quota", "kueue-specs", "spec 1: no ProvisioningRequest before quota",
             no_request_before_quota, spec=SPEC_1),
    Scenario("kueue-spec-zero-pods-no-request", "kueue-specs", "spec 2: no ProvisioningRequest for zero pods",
             no_request_for_zero_pods, spec=SPEC_2),
    Scenario("kueue-spec-request-after-quota", "kueue-specs", "spec 3: the request Kueue makes once quota is reserved",
             request_after_quota, spec=SPEC_3),
)
