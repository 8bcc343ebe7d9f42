"""A TauCluster's profiles as Kueue objects and what each mode does about the objects found (demo/taucluster/),
on plain objects: the demo profile is exactly manifests/kueue-objects.yaml; every field a bad profile gets wrong is
named; Manage creates, puts back and deletes only its own; Adopt adds its labels to a compatible object and
reports an incompatible one untouched; External writes nothing; two TauClusters cannot claim one profile, and of any
two claims on one object the later is refused (plan.refusals) and writes nothing; the CRD's bounds and defaults are
the profile's; a profile's CPU and memory quota scale with its GPU quota unless it gives them (issue 39)."""

from __future__ import annotations

import copy

import pytest

from demo.taucluster import plan as P
from demo.taucluster import profile as profile_module
from demo.taucluster.profile import (CPU_PER_GPU, MAX_CPU_QUOTA, MAX_GPU_QUOTA, MAX_MEMORY_QUOTA, MAX_QUANTITY_LENGTH,
                                     MEMORY_PER_GPU, QUANTITY_PATTERN, BadProfile, Profile, RetryStrategy, differences,
                                     objects, parse_profile, parse_all, quotas)
from k8s.keys import (BEST_EFFORT_ATOMIC, CHECK_CAPACITY, CHECK_NAME, DEMO_CLUSTER_QUEUE, DEMO_NAMESPACE,
                      MODE_ADOPT, MODE_EXTERNAL, MODE_MANAGE, PROFILE, TAUCLUSTER_ADOPTED_ANNOTATION, TAUCLUSTER_LABEL,
                      TAUCLUSTER_PROFILE_LABEL)
from k8s.manifests import load_manifest
from k8s.paths import MANIFESTS, POOLS_FILE
from k8s.pools import load_pools
from k8s.quantity import parse_quantity_exact

TC = "demo"
DEMO = {"name": PROFILE, "namespaces": [DEMO_NAMESPACE], "clusterQueue": DEMO_CLUSTER_QUEUE,
        "flavor": {"name": "a100-scale", "nodeLabels": {"agentpool": "gpupool"},
                   "tolerations": [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]},
        "gpuQuota": 16, "admissionCheck": CHECK_NAME, "provisioningClass": BEST_EFFORT_ATOMIC,
        "retryStrategy": {"backoffLimitCount": 2, "backoffBaseSeconds": 5, "backoffMaxSeconds": 20}}


def demo(**changes) -> Profile:
    return parse_profile({**copy.deepcopy(DEMO), **changes})


def strip(obj: dict) -> dict:
    """An object as an administrator's YAML has it: no labels of ours."""
    out = copy.deepcopy(obj)
    out["metadata"].pop("labels", None)
    return out


def active(obj: dict, status: str = "True", message: str = "") -> dict:
    return {**obj, "status": {"conditions": [{"type": "Active", "status": status, "message": message}]}}


def cluster(objs: list[dict], ready: bool = True) -> dict:
    """The objects found, by key; the check and the ClusterQueue Active as Kueue would have them."""
    out = {}
    for o in objs:
        if o["kind"] in ("AdmissionCheck", "ClusterQueue") and ready:
            o = active(o)
        out[P.key(o)] = o
    return out


# ---------------------------------------------------------------------------------------------- the profile

def test_the_demo_taucluster_makes_exactly_the_objects_an_administrator_applies_from_the_plain_file():
    """cluster up's TauCluster (manifests/taucluster-demo.yaml) and the administrator's file (kueue-objects.yaml, what
    Adopt and External find on an attached cluster) are one setup: the same objects, field for field."""
    applied = load_manifest(MANIFESTS / "kueue-objects.yaml")
    [tc] = load_manifest(MANIFESTS / "taucluster-demo.yaml")
    assert (tc["kind"], tc["metadata"]["name"], tc["spec"]["mode"]) == ("TauCluster", TC, MODE_MANAGE)
    [profile] = parse_all(tc["spec"]["profiles"])
    assert profile == demo()
    made = objects(profile, TC)
    assert [strip(o) for o in made] == applied
    assert all(o["metadata"]["labels"] == {TAUCLUSTER_LABEL: TC, TAUCLUSTER_PROFILE_LABEL: PROFILE} for o in made)


def test_a_profile_reads_its_fields_and_defaults():
    p = parse_profile({k: v for k, v in DEMO.items() if k not in ("provisioningClass", "retryStrategy")})
    assert (p.provisioning_class, p.retry) == (BEST_EFFORT_ATOMIC, RetryStrategy(2, 5, 20))
    q = demo(namespaces=["a", "b"], provisioningClass=CHECK_CAPACITY, retryStrategy={"backoffLimitCount": 0})
    assert (q.namespaces, q.provisioning_class, q.retry) == (("a", "b"), CHECK_CAPACITY, RetryStrategy(0, 5, 20))
    assert [(o["kind"], o["metadata"].get("namespace")) for o in objects(q, TC)][-2:] == [
        ("LocalQueue", "a"), ("LocalQueue", "b")]
    assert demo(gpuQuota=0).gpu_quota == 0                                  # a queue without GPUs is allowed
    assert demo(gpuQuota=MAX_GPU_QUOTA).gpu_quota == 100_000                # the bound itself is allowed
    assert demo(retryStrategy={"backoffBaseSeconds": 20}).retry == RetryStrategy(2, 20, 20)     # max == base will do
    assert parse_profile({**DEMO, "flavor": {"name": "f", "nodeLabels": {"a": "b"}}}).tolerations == ()
    assert "tolerations" not in objects(parse_profile({**DEMO, "flavor": {"name": "f", "nodeLabels": {"a": "b"}}}), TC)[0]["spec"]


@pytest.mark.parametrize("change, message", [
    ({"name": ""}, "spec.profiles[0].name: must be a non-empty string, got ''"),
    ({"namespaces": []}, "spec.profiles[0].namespaces: must be distinct non-empty names, at least one, got []"),
    ({"namespaces": ["a", "a"]}, "spec.profiles[0].namespaces: must be distinct non-empty names"),
    ({"namespaces": "demo"}, "spec.profiles[0].namespaces: must be a list, got 'demo'"),
    ({"namespaces": [""]}, "spec.profiles[0].namespaces: must be distinct non-empty names, at least one, got ['']"),
    ({"namespaces": [3]}, "spec.profiles[0].namespaces: must be distinct non-empty names, at least one, got [3]"),
    ({"flavor": None}, "spec.profiles[0].flavor: must be an object, got None"),
    ({"flavor": {"name": "f"}}, "spec.profiles[0].flavor.nodeLabels: must be an object, got None"),
    ({"flavor": {"name": "f", "nodeLabels": {"a": "b"}, "tolerations": "x"}},
     "spec.profiles[0].flavor.tolerations: must be a list, got 'x'"),
    ({"flavor": {"name": "f", "nodeLabels": {}}}, "spec.profiles[0].flavor.nodeLabels: must map label names"),
    ({"flavor": {"name": "f", "nodeLabels": {"a": 1}}}, "spec.profiles[0].flavor.nodeLabels: must map label names"),
    ({"flavor": {"nodeLabels": {"a": "b"}}}, "spec.profiles[0].flavor.name: must be a non-empty string, got None"),
    ({"flavor": {"name": "f", "nodeLabels": {"a": "b"}, "tolerations": ["x"]}},
     "spec.profiles[0].flavor.tolerations: must be a list of tolerations, got ['x']"),
    ({"gpuQuota": -8}, "spec.profiles[0].gpuQuota: must be a whole number of GPUs, 0 or more, got -8"),
    ({"gpuQuota": 100_001}, "spec.profiles[0].gpuQuota: must be 100000 GPUs at most, got 100001"),
    ({"gpuQuota": "16"}, "spec.profiles[0].gpuQuota: must be a whole number of GPUs, 0 or more, got '16'"),
    ({"gpuQuota": True}, "spec.profiles[0].gpuQuota: must be a whole number of GPUs, 0 or more, got True"),
    ({"retryStrategy": {"backoffBaseSeconds": 30}},
     "spec.profiles[0].retryStrategy: backoffMaxSeconds must be at least backoffBaseSeconds, got 20 < 30"),
    ({"provisioningClass": "queued-provisioning.gke.io"},
     f"spec.profiles[0].provisioningClass: must be one of {BEST_EFFORT_ATOMIC}, {CHECK_CAPACITY}, "
     "got 'queued-provisioning.gke.io'"),
    ({"retryStrategy": {"backoffBaseSeconds": -1}},
     "spec.profiles[0].retryStrategy.backoffBaseSeconds: must be a whole number, 0 or more, got -1"),
    ({"retryStrategy": {"backoffMaxSeconds": "20"}},
     "spec.profiles[0].retryStrategy.backoffMaxSeconds: must be a whole number, 0 or more, got '20'"),
    ({"retryStrategy": {"backoffLimitCount": False}},
     "spec.profiles[0].retryStrategy.backoffLimitCount: must be a whole number, 0 or more, got False"),
    ({"retryStrategy": []}, "spec.profiles[0].retryStrategy: must be an object, got []"),
    ({"admissionCheck": None}, "spec.profiles[0].admissionCheck: must be a non-empty string, got None"),
    ({"clusterQueue": 3}, "spec.profiles[0].clusterQueue: must be a non-empty string, got 3"),
])
def test_a_bad_profile_is_refused_naming_its_field(change, message):
    with pytest.raises(BadProfile) as e:
        parse_profile({**DEMO, **change})
    assert str(e.value).startswith(message), str(e.value)


def test_the_profiles_must_be_a_list_of_distinct_names():
    assert [p.name for p in parse_all([DEMO, {**DEMO, "name": "gpu-a100-4"}])] == [PROFILE, "gpu-a100-4"]
    for bad, message in (([], "spec.profiles: must be a list of at least one profile, got []"),
                         ({}, "spec.profiles: must be a list of at least one profile, got {}"),
                         ([DEMO, DEMO], f"spec.profiles: the profile name {PROFILE!r} is used twice"),
                         ([DEMO, "x"], "spec.profiles[1]: must be an object, got 'x'")):
        with pytest.raises(BadProfile) as e:
            parse_all(bad)
        assert str(e.value) == message


def test_differences_name_each_wanted_field_not_held_and_ignore_the_apiservers_additions():
    want = objects(demo(), TC)[3]                                          # the ClusterQueue
    have = copy.deepcopy(want)
    have["spec"]["queueingStrategy"] = "BestEffortFIFO"                    # a default the apiserver adds
    have["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1]["nominalQuota"] = "2048Gi"   # 2Ti, spelled again
    assert differences(want, have) == []
    have["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"] = "8"
    have["spec"]["admissionChecksStrategy"]["admissionChecks"] = []
    assert differences(want, have) == [
        "spec.resourceGroups[0].flavors[0].resources[2].nominalQuota: want '16', have '8'",
        "spec.admissionChecksStrategy.admissionChecks: want [{'name': 'gpu-provisioning', 'onFlavors': "
        "['a100-scale']}], have []"]
    assert differences(want, {"spec": None}) == [f"spec: want {want['spec']!r}, have None"]
    assert differences({"spec": {"a": "x"}}, {"spec": {"a": 1}}) == ["spec.a: want 'x', have 1"]
    assert differences({"spec": {"a": True}}, {"spec": {"a": 1}}) == ["spec.a: want True, have 1"]


def test_differences_under_another_field_than_spec_are_named_by_their_full_path_from_it():
    want = {"spec": {"a": 1}, "data": {"b": {"c": "x"}, "d": [1, "16"]}}
    have = {"spec": {"a": 2}, "data": {"b": {"c": "y"}, "d": [1, "8"], "added": True}}
    assert differences(want, have, "data") == ["data.b.c: want 'x', have 'y'", "data.d[1]: want '16', have '8'"]
    assert differences(want, have) == ["spec.a: want 1, have 2"]                    # spec when no field is named
    assert differences(want, {"spec": {"a": 1}}, "data") == [f"data: want {want['data']!r}, have None"]


# ---------------------------------------------------------------------------------------------- the modes

def verbs(plan):
    return [(a.verb, P.key(a.obj)) for a in plan.actions]


def test_manage_creates_what_is_missing_in_order_and_is_ready_once_all_are_active():
    p = demo()
    first = P.plan_profile(MODE_MANAGE, TC, p, {})
    assert [(a.verb, a.obj) for a in first.actions] == [("create", o) for o in objects(p, TC)]
    assert first.actions[0].why == "ResourceFlavor a100-scale does not exist"
    assert (first.ready.status, first.ready.reason) == (False, P.SETTING_UP)
    assert first.ready.message.startswith("ResourceFlavor a100-scale is being created; ")
    done = P.plan_profile(MODE_MANAGE, TC, p, cluster(objects(p, TC)))
    assert done == P.ProfilePlan(PROFILE, (), P.Ready(True, P.READY, f"profile {PROFILE}: ClusterQueue gpu-a100 and "
                                                                      "AdmissionCheck gpu-provisioning Active"))


def test_manage_puts_a_changed_field_of_its_own_back_at_the_version_it_read():
    p = demo()
    objs = objects(p, TC)
    edited = copy.deepcopy(objs)
    edited[3]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"] = "4"
    edited[3]["spec"]["admissionChecksStrategy"]["admissionChecks"][0]["name"] = "other-check"
    edited[3]["metadata"]["resourceVersion"] = "77"
    plan = P.plan_profile(MODE_MANAGE, TC, p, cluster(edited))
    assert verbs(plan) == [("update", ("ClusterQueue", "", DEMO_CLUSTER_QUEUE))]
    put = plan.actions[0]
    assert put.obj["spec"] == objs[3]["spec"] and put.obj["metadata"]["resourceVersion"] == "77"
    assert put.why == ("ClusterQueue gpu-a100 changed, put back: "
                       "spec.resourceGroups[0].flavors[0].resources[2].nominalQuota: want '16', have '4'; "
                       "spec.admissionChecksStrategy.admissionChecks[0].name: want 'gpu-provisioning', have "
                       "'other-check'")
    assert plan.ready == P.Ready(False, P.SETTING_UP, "ClusterQueue gpu-a100 is being put back")


def test_manage_never_touches_an_object_it_did_not_make():
    p = demo()
    found = cluster([strip(o) for o in objects(p, TC)])
    plan = P.plan_profile(MODE_MANAGE, TC, p, found)
    assert plan.actions == ()
    assert plan.ready.reason == P.NOT_OURS and plan.ready.message.startswith(
        "ResourceFlavor a100-scale exists and was not made by TauCluster demo (adopt it, or delete it); ")


def test_adopt_adds_its_labels_to_compatible_objects_only_and_makes_nothing():
    p = demo()
    admin = [strip(o) for o in objects(p, TC)]
    for i, o in enumerate(admin):
        o["metadata"]["resourceVersion"] = str(10 + i)
        o["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "Helm"}
    plan = P.plan_profile(MODE_ADOPT, TC, p, cluster(admin))
    assert verbs(plan) == [("adopt", P.key(o)) for o in admin]
    assert plan.actions[0].why == "ResourceFlavor a100-scale is compatible: adopted"
    flavor = plan.actions[0].obj
    assert flavor == {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                      "metadata": {"name": "a100-scale", "resourceVersion": "10", "labels": {
                          "app.kubernetes.io/managed-by": "Helm", TAUCLUSTER_LABEL: TC,
                          TAUCLUSTER_PROFILE_LABEL: PROFILE}, "annotations": {TAUCLUSTER_ADOPTED_ANNOTATION: "true"}}}
    assert plan.actions[-1].obj["metadata"]["namespace"] == DEMO_NAMESPACE
    assert plan.ready.status is True
    # adopted already: nothing to write
    assert P.plan_profile(MODE_ADOPT, TC, p, cluster(objects(p, TC))).actions == ()


def test_adopt_reports_an_incompatible_object_with_its_fields_and_leaves_it_and_makes_nothing_missing():
    p = demo()
    admin = [strip(o) for o in objects(p, TC)]
    admin[0]["spec"]["nodeLabels"] = {"agentpool": "otherpool"}
    admin[0]["spec"]["tolerations"] = []
    admin[3]["spec"].pop("admissionChecksStrategy")
    found = cluster(admin[:-1])                                             # no LocalQueue
    plan = P.plan_profile(MODE_ADOPT, TC, p, found)
    assert verbs(plan) == [("adopt", P.key(admin[i])) for i in (1, 2)]      # the compatible ones only
    assert plan.ready == P.Ready(False, P.MISSING, "LocalQueue demo/gpu-a100-8 does not exist")
    found = cluster(admin)
    plan = P.plan_profile(MODE_ADOPT, TC, p, found)
    assert plan.ready.reason == P.INCOMPATIBLE
    assert plan.ready.message == (
        "ResourceFlavor a100-scale: spec.nodeLabels.agentpool: want 'gpupool', have 'otherpool'; spec.tolerations: "
        "want [{'key': 'sku', 'operator': 'Equal', 'value': 'gpu', 'effect': 'NoSchedule'}], have []; "
        "ClusterQueue gpu-a100: spec.admissionChecksStrategy: want {'admissionChecks': [{'name': 'gpu-provisioning', "
        "'onFlavors': ['a100-scale']}]}, have None")


def test_external_writes_nothing_and_says_what_is_wrong():
    p = demo()
    assert P.plan_profile(MODE_EXTERNAL, TC, p, {}) == P.ProfilePlan(PROFILE, (), P.Ready(
        False, P.MISSING, "; ".join(f"{P.describe(o)} does not exist" for o in objects(p, TC))))
    admin = [strip(o) for o in objects(p, TC)]
    assert P.plan_profile(MODE_EXTERNAL, TC, p, cluster(admin)).ready.status is True
    wrong_class = copy.deepcopy(admin)
    wrong_class[1]["spec"]["provisioningClassName"] = CHECK_CAPACITY
    plan = P.plan_profile(MODE_EXTERNAL, TC, p, cluster(wrong_class))
    assert (plan.actions, plan.ready.reason) == ((), P.INCOMPATIBLE)
    assert plan.ready.message == (f"ProvisioningRequestConfig gpu-provisioning: spec.provisioningClassName: want "
                                  f"'{BEST_EFFORT_ATOMIC}', have '{CHECK_CAPACITY}'")


@pytest.mark.parametrize("mode", [MODE_MANAGE, MODE_ADOPT, MODE_EXTERNAL])
def test_a_profile_another_taucluster_claims_is_refused_and_left_alone(mode):
    p = demo()
    theirs = objects(p, "other")
    plan = P.plan_profile(mode, TC, p, cluster(theirs))
    assert plan.actions == ()
    assert plan.ready.reason == P.CLAIMED and plan.ready.message.startswith(
        "ResourceFlavor a100-scale is TauCluster other's; ")


def test_readiness_needs_the_check_and_the_cluster_queue_active_and_says_what_kueue_says():
    p = demo()
    objs = objects(p, TC)
    found = cluster(objs, ready=False)
    assert P.plan_profile(MODE_EXTERNAL, TC, p, found).ready == P.Ready(
        False, P.CHECK_NOT_ACTIVE, "AdmissionCheck gpu-provisioning is not Active: no Active condition yet")
    found[P.key(objs[2])] = active(objs[2], "False", "Can't find ProvisioningRequestConfig")
    assert P.plan_profile(MODE_EXTERNAL, TC, p, found).ready.message == (
        "AdmissionCheck gpu-provisioning is not Active: Can't find ProvisioningRequestConfig")
    found[P.key(objs[2])] = active(objs[2])
    found[P.key(objs[3])] = active(objs[3], "False", "Can't admit new workloads: references inactive check")
    assert P.plan_profile(MODE_EXTERNAL, TC, p, found).ready == P.Ready(
        False, P.QUEUE_INACTIVE,
        "ClusterQueue gpu-a100 is not Active: Can't admit new workloads: references inactive check")


def test_the_first_problem_in_order_is_the_reason():
    p = demo()
    objs = objects(p, TC)
    mixed = cluster([objects(p, "other")[0], strip(objs[1]), *objs[2:4]])     # claimed, not ours, LocalQueue missing
    assert P.plan_profile(MODE_MANAGE, TC, p, mixed).ready.reason == P.CLAIMED
    assert P.plan_profile(MODE_MANAGE, TC, p, cluster([strip(objs[1]), *objs[2:4]])).ready.reason == P.NOT_OURS


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="mode 'Own': must be one of Manage, Adopt, External"):
        P.plan_profile("Own", TC, demo(), {})


def test_stale_objects_are_this_tauclusters_that_no_profile_wants_any_more():
    p, q = demo(), demo(name="gpu-a100-4", clusterQueue="gpu-a100-small", admissionCheck="gpu-provisioning-small",
                        flavor={"name": "a100-small", "nodeLabels": {"agentpool": "small"}})
    found = objects(p, TC) + objects(q, TC) + objects(demo(name="x"), "other") + [strip(objects(demo(name="y"), TC)[4])]
    assert P.stale(TC, objects(p, TC) + objects(q, TC), found) == []
    gone = P.stale(TC, objects(p, TC), found)
    assert [(a.verb, a.obj) for a in gone] == [("delete", o) for o in objects(q, TC)]
    assert gone[0].why == "ResourceFlavor a100-small (profile gpu-a100-4) is no longer wanted by TauCluster demo"
    two_ns = parse_profile({**DEMO, "namespaces": ["demo", "team-b"]})
    assert [P.key(a.obj) for a in P.stale(TC, objects(p, TC), objects(two_ns, TC))] == [
        ("LocalQueue", "team-b", PROFILE)]
    assert len(P.stale(TC, [], found)) == len(objects(p, TC)) + len(objects(q, TC))


# ---------------------------------------------------------------------------------------------- letting go

def test_adopting_marks_the_object_adopted_and_releasing_gives_it_back_as_it_was():
    p = demo()
    admin = [strip(o) for o in objects(p, TC)]
    plan = P.plan_profile(MODE_ADOPT, TC, p, cluster(admin))
    taken = [{**o, "metadata": {**o["metadata"], **a.obj["metadata"]}} for o, a in zip(admin, plan.actions)]
    assert all(P.adopted(o) and P.owner(o) == TC for o in taken)
    back = P.release_all(MODE_ADOPT, TC, taken)
    assert [w.verb for w in back] == ["release"] * len(taken)
    assert back[0].obj["metadata"] == {"name": "a100-scale", "resourceVersion": None,
                                       "labels": {TAUCLUSTER_LABEL: None, TAUCLUSTER_PROFILE_LABEL: None},
                                       "annotations": {TAUCLUSTER_ADOPTED_ANNOTATION: None}}
    assert back[0].why == "ResourceFlavor a100-scale: given back as it is (TauCluster demo is deleted)"


def test_releasing_under_manage_deletes_what_it_made_and_gives_back_what_it_adopted_and_nothing_else():
    p = demo()
    made = objects(p, TC)
    adopted = {**made[0], "metadata": {**made[0]["metadata"], "annotations": {TAUCLUSTER_ADOPTED_ANNOTATION: "true"}}}
    other = objects(p, "other")[1]
    writes = P.release_all(MODE_MANAGE, TC, [adopted, *made[1:], other, strip(made[2])])
    assert [(w.verb, P.key(w.obj)) for w in writes] == [("release", P.key(adopted))] + [
        ("delete", P.key(o)) for o in made[1:]]
    assert writes[1].why == "ProvisioningRequestConfig gpu-provisioning: made by TauCluster demo, which is deleted"
    assert P.release_all(MODE_EXTERNAL, TC, [strip(o) for o in made]) == []
    assert [w.verb for w in P.release_all(MODE_MANAGE, TC, [other, strip(made[0]), made[1]])] == ["delete"]


def test_a_stale_adopted_object_is_given_back_not_deleted():
    p = demo()
    adopted = {**objects(p, TC)[0]}
    adopted["metadata"] = {**adopted["metadata"], "annotations": {TAUCLUSTER_ADOPTED_ANNOTATION: "true"}}
    (w,) = P.stale(TC, [], [adopted])
    assert (w.verb, w.why) == ("release", "ResourceFlavor a100-scale (profile gpu-a100-8) is no longer wanted by "
                                          "TauCluster demo: given back")


def test_the_status_says_provisioning_ready_per_profile_and_keeps_the_time_of_the_last_change():
    ready = P.ProfilePlan(PROFILE, (), P.Ready(True, P.READY, "ok"))
    waiting = P.ProfilePlan("gpu-a100-4", (), P.Ready(False, P.MISSING, "LocalQueue demo/gpu-a100-4 does not exist"))
    first = P.conditions([ready, waiting], [], "T1", 3)
    assert first == [
        {"name": PROFILE, "conditions": [{"type": "ProvisioningReady", "status": "True", "reason": "Ready",
                                          "message": "ok", "lastTransitionTime": "T1", "observedGeneration": 3}]},
        {"name": "gpu-a100-4", "conditions": [{"type": "ProvisioningReady", "status": "False", "reason": "ObjectMissing",
                                               "message": "LocalQueue demo/gpu-a100-4 does not exist",
                                               "lastTransitionTime": "T1", "observedGeneration": 3}]}]
    later = P.conditions([ready, P.ProfilePlan("gpu-a100-4", (), P.Ready(True, P.READY, "ok"))], first, "T2", None)
    assert [c["conditions"][0]["lastTransitionTime"] for c in later] == ["T1", "T2"]
    assert "observedGeneration" not in later[0]["conditions"][0]


def going(obj: dict, *finalizers: str) -> dict:
    return {**obj, "metadata": {**obj["metadata"], "deletionTimestamp": "2026-12-03T19:27:10Z",
                                **({"finalizers": list(finalizers)} if finalizers else {})}}


def test_an_object_being_deleted_is_waited_for_not_written_and_the_others_still_planned():
    p = demo()
    objs = objects(p, TC)
    found = cluster([objs[0], objs[1], going(objs[2], "kueue.x-k8s.io/resource-in-use", "other/x"), objs[3]])
    plan = P.plan_profile(MODE_MANAGE, TC, p, found)
    assert [(a.verb, P.key(a.obj)) for a in plan.actions] == [("create", P.key(objs[4]))]      # the LocalQueue
    assert plan.ready == P.Ready(False, P.BEING_DELETED, "AdmissionCheck gpu-provisioning is being deleted (held by "
                                 "kueue.x-k8s.io/resource-in-use, other/x); made again once it is gone")
    external = P.plan_profile(MODE_EXTERNAL, TC, p, cluster([going(objs[0]), *[strip(o) for o in objs[1:]]]))
    assert external.ready == P.Ready(False, P.BEING_DELETED,
                                     "ResourceFlavor a100-scale is being deleted (held by no finalizer)")


def test_giving_back_removes_only_our_marks_of_a_namespaced_or_cluster_object():
    objs = objects(demo(), TC)
    marked = [{**o, "metadata": {**o["metadata"], "resourceVersion": "5",
                                 "annotations": {TAUCLUSTER_ADOPTED_ANNOTATION: "true", "note": "kept"}}}
              for o in (objs[0], objs[4])]
    writes = P.release_all(MODE_MANAGE, TC, [going(objs[1]), *marked])
    gone = {TAUCLUSTER_LABEL: None, TAUCLUSTER_PROFILE_LABEL: None}
    assert [(w.verb, w.obj) for w in writes] == [
        ("release", {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {
            "name": "a100-scale", "resourceVersion": "5", "labels": gone,
            "annotations": {TAUCLUSTER_ADOPTED_ANNOTATION: None}}}),
        ("release", {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {
            "name": PROFILE, "namespace": DEMO_NAMESPACE, "resourceVersion": "5", "labels": gone,
            "annotations": {TAUCLUSTER_ADOPTED_ANNOTATION: None}}})]


def test_adopting_keeps_the_objects_own_annotations():
    p = demo()
    admin = [strip(o) for o in objects(p, TC)]
    admin[0]["metadata"]["annotations"] = {"meta.helm.sh/release-name": "kueue-setup"}
    taken = P.plan_profile(MODE_ADOPT, TC, p, cluster(admin)).actions[0].obj
    assert taken["metadata"]["annotations"] == {"meta.helm.sh/release-name": "kueue-setup",
                                                TAUCLUSTER_ADOPTED_ANNOTATION: "true"}


def test_a_status_without_a_provisioning_ready_condition_yet_starts_one_now():
    ready = P.ProfilePlan(PROFILE, (), P.Ready(True, P.READY, "ok"))
    old = [{"name": PROFILE, "conditions": [{"type": "Other", "status": "True", "lastTransitionTime": "T0"}]}]
    assert P.conditions([ready], old, "T1", None)[0]["conditions"][0]["lastTransitionTime"] == "T1"


def test_profiles_that_share_a_check_and_its_config_make_them_once_and_both_read_ready_once_made():
    """The walkthrough's slots share the demo's AdmissionCheck and ProvisioningRequestConfig, each with its own
    flavor, ClusterQueue and LocalQueue."""
    a = demo()
    b = demo(name="slot-b", clusterQueue="slot-b-cq", flavor={"name": "slot-b-flavor", "nodeLabels": {"agentpool": "b"}})
    plans = [P.plan_profile(MODE_MANAGE, TC, p, {}) for p in (a, b)]
    writes = P.once([w for pl in plans for w in pl.actions])
    assert [(w.verb, P.describe(w.obj)) for w in writes] == [
        ("create", "ResourceFlavor a100-scale"), ("create", f"ProvisioningRequestConfig {CHECK_NAME}"),
        ("create", f"AdmissionCheck {CHECK_NAME}"), ("create", f"ClusterQueue {DEMO_CLUSTER_QUEUE}"),
        ("create", f"LocalQueue {DEMO_NAMESPACE}/{PROFILE}"), ("create", "ResourceFlavor slot-b-flavor"),
        ("create", "ClusterQueue slot-b-cq"), ("create", f"LocalQueue {DEMO_NAMESPACE}/slot-b")]
    made = cluster([o for w in writes for o in [{**w.obj, "metadata": {**w.obj["metadata"], "resourceVersion": "1"}}]])
    again = [P.plan_profile(MODE_MANAGE, TC, p, made) for p in (a, b)]
    assert [pl.actions for pl in again] == [(), ()] and all(pl.ready.status for pl in again)
    assert P.once([]) == [] and len(P.once(writes + writes)) == len(writes)
    assert P.once([P.SetupWrite("delete", writes[0].obj, "x"), writes[0]]) == [P.SetupWrite("delete", writes[0].obj,
                                                                                             "x"), writes[0]]


# ---------------------------------------------------------------------------------------------- claims

def taucluster(name: str, created: str, *profiles: dict, mode: str = MODE_MANAGE, going: bool = False) -> dict:
    md = {"name": name, "creationTimestamp": created, **({"deletionTimestamp": created} if going else {})}
    return {"kind": "TauCluster", "metadata": md,
            "spec": {"mode": mode, "profiles": [copy.deepcopy(p) for p in profiles]}}


def raw(**changes) -> dict:
    return {**copy.deepcopy(DEMO), **changes}


T0, T1 = "2026-12-04T09:00:00Z", "2026-12-04T09:00:05Z"
QUOTA = "spec.resourceGroups[0].flavors[0].resources[2].nominalQuota"
CPU, MEMORY = (f"spec.resourceGroups[0].flavors[0].resources[{i}].nominalQuota" for i in (0, 1))


def test_two_tauclusters_naming_one_profile_alike_the_later_is_refused_for_each_object_in_order():
    refused = P.refusals([taucluster("b", T1, DEMO, mode=MODE_ADOPT), taucluster("a", T0, DEMO)], {})
    assert list(refused) == [("b", PROFILE)]
    lines = refused[("b", PROFILE)]
    assert lines[0] == ("ResourceFlavor a100-scale is TauCluster a's (its profile gpu-a100-8 holds it); this profile "
                        "wants it alike, but an object is held by one TauCluster")
    assert [line.split(" is ")[0] for line in lines] == [P.describe(o) for o in objects(demo(), "b")]


def test_two_tauclusters_naming_one_cluster_queue_otherwise_the_later_is_refused_naming_the_field():
    a = raw(name="team-a", flavor={"name": "fa", "nodeLabels": {"pool": "a"}}, admissionCheck="check-a")
    b = raw(name="team-b", flavor={"name": "fb", "nodeLabels": {"pool": "b"}}, admissionCheck="check-a", gpuQuota=32)
    refused = P.refusals([taucluster("a", T0, a), taucluster("b", T1, b)], {})
    assert refused == {("b", "team-b"): [                             # in the order the profile's objects are made
        "ProvisioningRequestConfig check-a is TauCluster a's (its profile team-a holds it); this profile wants it "
        "alike, but an object is held by one TauCluster",
        "AdmissionCheck check-a is TauCluster a's (its profile team-a holds it); this profile wants it alike, but an "
        "object is held by one TauCluster",
        f"ClusterQueue {DEMO_CLUSTER_QUEUE} is TauCluster a's (its profile team-a holds it); this profile wants it "
        f"otherwise: spec.resourceGroups[0].flavors[0].name: profile team-a wants 'fa', this profile 'fb'; {CPU}: "
        f"profile team-a wants '256', this profile '512'; {MEMORY}: profile team-a wants '2Ti', this profile '4Ti'; "
        f"{QUOTA}: profile team-a wants '16', this profile '32'; "
        "spec.admissionChecksStrategy.admissionChecks[0].onFlavors[0]: profile team-a wants 'fa', this profile 'fb'"]}


def test_a_field_only_one_claim_sets_is_a_difference_either_way():
    a = raw(name="a", clusterQueue="qa", admissionCheck="ca")
    b = raw(name="b", clusterQueue="qb", admissionCheck="cb", flavor={**DEMO["flavor"], "tolerations": []})
    [line] = P.refusals([taucluster("a", T0, a), taucluster("b", T1, b)], {})[("b", "b")]
    assert line.startswith("ResourceFlavor a100-scale is TauCluster a's") and line.endswith(
        "spec.tolerations: profile a wants [{'key': 'sku', 'operator': 'Equal', 'value': 'gpu', 'effect': "
        "'NoSchedule'}], this profile None")


def test_the_holder_is_the_claimant_whose_label_the_object_carries_else_the_earliest_by_time_then_name():
    a, b = taucluster("a", T0, DEMO), taucluster("b", T1, DEMO)
    cq = (("ClusterQueue", "", DEMO_CLUSTER_QUEUE))
    held_by_b = {cq: objects(demo(), "b")[3]}
    refused = P.refusals([a, b], held_by_b)
    assert refused[("a", PROFILE)] == [
        f"ClusterQueue {DEMO_CLUSTER_QUEUE} is TauCluster b's (its profile gpu-a100-8 holds it); this profile wants it "
        "alike, but an object is held by one TauCluster"]
    assert [line.split(" is ")[0] for line in refused[("b", PROFILE)]] == [
        "ResourceFlavor a100-scale", f"ProvisioningRequestConfig {CHECK_NAME}", f"AdmissionCheck {CHECK_NAME}",
        f"LocalQueue {DEMO_NAMESPACE}/{PROFILE}"]                     # each object on its own: a holds the others
    stray = {cq: objects(demo(), "gone")[3]}                            # a label of a TauCluster that claims nothing
    assert list(P.refusals([a, b], stray)) == [("b", PROFILE)]
    same_second = [taucluster("z", T0, DEMO), taucluster("m", T0, DEMO)]
    assert list(P.refusals(same_second, {})) == [("z", PROFILE)]
    assert P.refusals(same_second[::-1], {}) == P.refusals(same_second, {})       # read in any order: the same


def test_a_taucluster_being_deleted_or_invalid_holds_nothing_and_a_refused_profile_writes_nothing():
    assert P.refusals([taucluster("a", T0, DEMO, going=True), taucluster("b", T1, DEMO)], {}) == {}
    assert P.refusals([taucluster("a", T0, {**DEMO, "gpuQuota": -1}), taucluster("b", T1, DEMO)], {}) == {}
    assert P.refusals([taucluster("a", T0, DEMO)], {}) == {}
    for mode in (MODE_MANAGE, MODE_ADOPT, MODE_EXTERNAL):
        plan = P.plan_profile(mode, "b", demo(), {}, ["ResourceFlavor a100-scale is TauCluster a's"])
        assert plan == P.ProfilePlan(PROFILE, (), P.Ready(False, "Conflict", "ResourceFlavor a100-scale is TauCluster "
                                                                             "a's"))
    assert P.CLAIMED == "Conflict"


def test_profiles_of_one_taucluster_share_an_object_alike_but_not_otherwise_the_later_profile_refused():
    slot = raw(name="slot", namespaces=["slot"], clusterQueue="slot", flavor={"name": "slot", "nodeLabels": {"p": "s"}})
    assert P.refusals([taucluster("demo", T0, DEMO, slot)], {}) == {}            # the slots share the check alike
    two_queues = raw(name="other", gpuQuota=8)                                   # the demo's ClusterQueue, 8 GPUs
    assert P.refusals([taucluster("demo", T0, DEMO, two_queues)], {}) == {("demo", "other"): [
        f"ClusterQueue {DEMO_CLUSTER_QUEUE} is set up by profile {PROFILE} of this TauCluster otherwise: {CPU}: "
        f"profile {PROFILE} wants '256', this profile '128'; {MEMORY}: profile {PROFILE} wants '2Ti', this profile "
        f"'1Ti'; {QUOTA}: profile {PROFILE} wants '16', this profile '8'"]}
    other_pool = raw(name="other", clusterQueue="q2", admissionCheck="c2",
                     flavor={**DEMO["flavor"], "nodeLabels": {"agentpool": "otherpool"}})
    assert P.refusals([taucluster("demo", T0, other_pool, DEMO)], {}) == {("demo", PROFILE): [
        "ResourceFlavor a100-scale is set up by profile other of this TauCluster otherwise: spec.nodeLabels.agentpool: "
        "profile other wants 'otherpool', this profile 'gpupool'"]}
    other_class = raw(name="other", clusterQueue="q2", provisioningClass=CHECK_CAPACITY)
    assert [line.split(":")[0] for line in P.refusals([taucluster("demo", T0, DEMO, other_class)], {})[
        ("demo", "other")]] == [f"ProvisioningRequestConfig {CHECK_NAME} is set up by profile {PROFILE} of this "
                                "TauCluster otherwise"]


def test_local_queues_conflict_by_namespace_and_name():
    elsewhere = raw(clusterQueue="q2", admissionCheck="c2", namespaces=["team-b"],
                    flavor={"name": "f2", "nodeLabels": {"a": "b"}})
    assert P.refusals([taucluster("a", T0, DEMO), taucluster("b", T1, elsewhere)], {}) == {}
    both = {**elsewhere, "namespaces": ["team-b", DEMO_NAMESPACE]}
    assert P.refusals([taucluster("a", T0, DEMO), taucluster("b", T1, both)], {}) == {("b", PROFILE): [
        f"LocalQueue {DEMO_NAMESPACE}/{PROFILE} is TauCluster a's (its profile {PROFILE} holds it); this profile "
        f"wants it otherwise: spec.clusterQueue: profile {PROFILE} wants '{DEMO_CLUSTER_QUEUE}', this profile 'q2'"]}


T2 = "2026-12-04T09:00:10Z"
SLOT = raw(name="slot", namespaces=["slot"], clusterQueue="slot", flavor={"name": "slot", "nodeLabels": {"p": "s"}})


def test_each_claim_names_its_taucluster_its_time_its_profiles_place_and_the_object_marked_as_that_tauclusters():
    made = P.claims([taucluster("demo", T0, DEMO, SLOT)])
    assert [(c.taucluster, c.created, c.index, c.profile, c.place, P.describe(c.want)) for c in made] == [
        ("demo", T0, 0, PROFILE, 0, "ResourceFlavor a100-scale"),
        ("demo", T0, 0, PROFILE, 1, f"ProvisioningRequestConfig {CHECK_NAME}"),
        ("demo", T0, 0, PROFILE, 2, f"AdmissionCheck {CHECK_NAME}"),
        ("demo", T0, 0, PROFILE, 3, f"ClusterQueue {DEMO_CLUSTER_QUEUE}"),
        ("demo", T0, 0, PROFILE, 4, f"LocalQueue {DEMO_NAMESPACE}/{PROFILE}"),
        ("demo", T0, 1, "slot", 0, "ResourceFlavor slot"),
        ("demo", T0, 1, "slot", 1, f"ProvisioningRequestConfig {CHECK_NAME}"),
        ("demo", T0, 1, "slot", 2, f"AdmissionCheck {CHECK_NAME}"),
        ("demo", T0, 1, "slot", 3, "ClusterQueue slot"),
        ("demo", T0, 1, "slot", 4, "LocalQueue slot/slot")]
    assert [c.want for c in made[:5]] == objects(demo(), "demo")          # each wanted object carries demo's labels
    assert made[0].want["metadata"]["labels"] == {TAUCLUSTER_LABEL: "demo", TAUCLUSTER_PROFILE_LABEL: PROFILE}
    assert [c.order for c in made[4:6]] == [(T0, "demo", 0), (T0, "demo", 1)]


def test_the_earlier_created_taucluster_holds_an_object_even_when_its_name_sorts_later():
    """The tie-break by name only counts within one creationTimestamp: b, created first, holds; a is refused."""
    later_a, earlier_b = taucluster("a", T1, DEMO), taucluster("b", T0, DEMO)
    for order in ([later_a, earlier_b], [earlier_b, later_a]):
        refused = P.refusals(order, {})
        assert list(refused) == [("a", PROFILE)]
        assert refused[("a", PROFILE)][0] == (
            "ResourceFlavor a100-scale is TauCluster b's (its profile gpu-a100-8 holds it); this profile wants it "
            "alike, but an object is held by one TauCluster")
    assert [c.created for c in P.claims([later_a, earlier_b])][::5] == [T1, T0]


def test_a_taucluster_without_a_creation_timestamp_reads_as_created_before_any_other():
    """Only an object not read from an apiserver lacks one (the apiserver sets it on create): it reads as "", which
    sorts before every RFC 3339 time, so the rule stays one order over every input."""
    unstored = taucluster("z", T0, DEMO)
    del unstored["metadata"]["creationTimestamp"]
    nulled = taucluster("y", T0, DEMO)
    nulled["metadata"]["creationTimestamp"] = None
    assert {c.created for c in P.claims([unstored, nulled])} == {""}
    assert list(P.refusals([taucluster("a", T0, DEMO), unstored], {})) == [("a", PROFILE)]
    assert set(P.refusals([taucluster("a", T0, DEMO), nulled, unstored], {})) == {("a", PROFILE), ("z", PROFILE)}


@pytest.mark.parametrize("skipped", [taucluster("a", T0, DEMO, going=True), taucluster("a", T0, raw(gpuQuota=-1))],
                         ids=["being-deleted", "invalid"])
def test_a_taucluster_that_holds_nothing_does_not_stop_the_claims_of_the_ones_after_it(skipped):
    """A TauCluster being deleted or refused as invalid is passed over, and the next ones still claim: of b and c
    after it, b (the earlier) holds and c is refused."""
    b, c = taucluster("b", T1, DEMO), taucluster("c", T2, DEMO)
    assert [x.taucluster for x in P.claims([skipped, b, c])] == ["b"] * 5 + ["c"] * 5
    refused = P.refusals([skipped, b, c], {})
    assert list(refused) == [("c", PROFILE)] and len(refused[("c", PROFILE)]) == 5
    assert refused[("c", PROFILE)][0].startswith("ResourceFlavor a100-scale is TauCluster b's")
    assert list(P.refusals([b, skipped, c], {})) == [("c", PROFILE)]


def test_profiles_of_the_holder_sharing_an_object_alike_do_not_stop_another_tauclusters_claim_on_it_being_refused():
    """demo's two profiles share the check and its config alike (allowed); team-b of TauCluster b, created later,
    names the same check and nothing else of demo's: refused for the check and its config, after demo's second claim
    on them has been passed over."""
    team_b = raw(name="team-b", namespaces=["team-b"], clusterQueue="qb",
                 flavor={"name": "fb", "nodeLabels": {"p": "b"}})
    refused = P.refusals([taucluster("demo", T0, DEMO, SLOT), taucluster("b", T1, team_b)], {})
    assert refused == {("b", "team-b"): [
        f"{kind} {CHECK_NAME} is TauCluster demo's (its profile {PROFILE} holds it); this profile wants it alike, but "
        "an object is held by one TauCluster" for kind in ("ProvisioningRequestConfig", "AdmissionCheck")]}


def test_a_refused_profile_says_every_object_it_may_not_have_in_one_message():
    refused = P.refusals([taucluster("a", T0, DEMO), taucluster("b", T1, DEMO)], {})[("b", PROFILE)]
    plan = P.plan_profile(MODE_MANAGE, "b", demo(), {}, refused)
    assert plan.ready.message == "; ".join(refused)
    assert plan.ready.message.startswith(
        "ResourceFlavor a100-scale is TauCluster a's (its profile gpu-a100-8 holds it); this profile wants it alike, "
        f"but an object is held by one TauCluster; ProvisioningRequestConfig {CHECK_NAME} is TauCluster a's")


def settle(tauclusters: list[dict], rounds: int = 20) -> dict:
    """The controller's loop on plain data: each round every TauCluster is planned from what was written so far and
    its writes applied; the writes per object counted."""
    found: dict = {}
    writes: dict = {}
    for _ in range(rounds):
        for tc in tauclusters:
            name, mode = tc["metadata"]["name"], tc["spec"]["mode"]
            refused = P.refusals(tauclusters, found)
            plans = [P.plan_profile(mode, name, p, found, refused.get((name, p.name), ()))
                     for p in parse_all(tc["spec"]["profiles"])]
            for w in P.once([w for pl in plans for w in pl.actions]):
                k = P.key(w.obj)
                writes[k] = writes.get(k, 0) + 1
                found[k] = active(w.obj) if w.verb == "create" else {**found[k], "spec": w.obj["spec"]}
    return writes


def test_no_object_is_written_by_two_claims_in_turn_each_is_written_once():
    """The bug this closes: two profiles of one TauCluster naming one ClusterQueue with other quotas had the controller
    rewrite it between the two specs without end (the CRD refuses such a TauCluster now; the controller, given one
    all the same, writes the queue once)."""
    cq = ("ClusterQueue", "", DEMO_CLUSTER_QUEUE)
    one = settle([taucluster("demo", T0, DEMO, raw(name="other", gpuQuota=8))])
    assert one[cq] == 1 and set(one.values()) == {1}
    two = settle([taucluster("b", T1, raw(gpuQuota=8)), taucluster("a", T0, DEMO)])
    assert two[cq] == 1 and set(two.values()) == {1}


def test_the_crd_bounds_the_quota_and_defaults_the_retries_as_the_profile_does():
    [crd] = load_manifest(MANIFESTS / "taucluster-crd.yaml")
    profile = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "profiles"]["items"]["properties"]
    assert (profile["gpuQuota"]["minimum"], profile["gpuQuota"]["maximum"]) == (0, MAX_GPU_QUOTA)
    retry = profile["retryStrategy"]
    assert retry["default"] == {} and RetryStrategy(**{
        "".join(f"_{c.lower()}" if c.isupper() else c for c in k): v["default"]
        for k, v in retry["properties"].items()}) == RetryStrategy()
    assert profile["provisioningClass"]["default"] == BEST_EFFORT_ATOMIC
    for name, most in (("cpuQuota", MAX_CPU_QUOTA), ("memoryQuota", MAX_MEMORY_QUOTA)):
        field = profile[name]                                       # a quantity: a whole number or a string, bounded
        assert field["x-kubernetes-int-or-string"] and field["anyOf"] == [{"type": "integer"}, {"type": "string"}]
        assert (field["pattern"], field["maxLength"]) == (QUANTITY_PATTERN, MAX_QUANTITY_LENGTH)
        assert (field["minimum"], field["maximum"]) == (0, parse_quantity_exact(most))
        [rule] = field["x-kubernetes-validations"]
        assert f"compareTo(quantity('{most}')) <= 0" in rule["rule"] and most in rule["message"]
    items = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["profiles"][
        "items"]
    assert not {"cpuQuota", "memoryQuota"} & set(items["required"])                    # optional: derived without them


# ---------------------------------------------------------------------------------------------- the quotas

GANG = {"pods": 2, "cpu": "8", "memory": "64Gi", "gpu": 8}          # manifests/gpu-job.yaml's pod, 2 of them


def nominal(profile: Profile) -> dict[str, str]:
    """The ClusterQueue's nominal quota of each resource, as objects() writes it."""
    [cq] = [o for o in objects(profile, TC) if o["kind"] == "ClusterQueue"]
    [group] = cq["spec"]["resourceGroups"]
    assert group["coveredResources"] == [r["name"] for r in group["flavors"][0]["resources"]]
    return {r["name"]: r["nominalQuota"] for r in group["flavors"][0]["resources"]}


def gangs_admitted(quota: dict[str, str]) -> int:
    """How many GANGs the quota admits at once: the resource that binds first decides."""
    per_gang = {"cpu": parse_quantity_exact(GANG["cpu"]) * GANG["pods"],
                "memory": parse_quantity_exact(GANG["memory"]) * GANG["pods"], "nvidia.com/gpu": GANG["gpu"] * GANG["pods"]}
    return min(int(parse_quantity_exact(quota[r]) // need) for r, need in per_gang.items())


def test_a_profile_that_gives_only_its_gpu_quota_gets_cpu_and_memory_scaled_from_it_at_any_scale():
    """The bug: a fixed 256 CPUs and 2Ti whatever gpuQuota said, so 3200 GPUs admitted 16 gangs of 2 x (8 GPUs, 8 CPUs,
    64Gi) at a time.  Now CPU_PER_GPU and MEMORY_PER_GPU per GPU: 16 GPUs still give the plain file's 256 and 2Ti."""
    assert nominal(demo()) == {"cpu": "256", "memory": "2Ti", "nvidia.com/gpu": "16"}
    assert nominal(demo(gpuQuota=3200)) == {"cpu": "51200", "memory": "400Ti", "nvidia.com/gpu": "3200"}
    assert gangs_admitted(nominal(demo(gpuQuota=3200))) == 200                  # the GPUs bind, nothing else
    for gpus in (0, 1, 8, 16, 100, 3200, 12_345, MAX_GPU_QUOTA):               # no constant caps it: linear throughout
        q = quotas(demo(gpuQuota=gpus))
        assert parse_quantity_exact(q["cpu"]) == CPU_PER_GPU * gpus
        assert parse_quantity_exact(q["memory"]) == parse_quantity_exact(MEMORY_PER_GPU) * gpus
        assert gangs_admitted(q) == gpus // 16, gpus
    top = quotas(demo(gpuQuota=MAX_GPU_QUOTA))                                   # the largest derived quota is allowed
    assert parse_quantity_exact(top["cpu"]) <= parse_quantity_exact(MAX_CPU_QUOTA)
    assert parse_quantity_exact(top["memory"]) <= parse_quantity_exact(MAX_MEMORY_QUOTA)


def test_the_quota_per_gpu_is_at_least_what_every_gpu_pool_node_holds_per_gpu():
    """So a queue's CPU and memory never run out before the GPU nodes its GPU quota stands for would: a Job whose
    pods ask more per GPU than a node holds leaves GPUs idle on the nodes too.  The pools file decides the ratio; a
    GPU pool added with more per GPU fails here until the ratio (or the profile's explicit quota) follows."""
    gpu_pools = [pool for pool in load_pools(POOLS_FILE) if "nvidia.com/gpu" in pool.capacity]
    assert gpu_pools
    for pool in gpu_pools:
        gpus = parse_quantity_exact(pool.capacity["nvidia.com/gpu"])
        assert parse_quantity_exact(pool.capacity["cpu"]) / gpus <= CPU_PER_GPU, pool.name
        assert parse_quantity_exact(pool.capacity["memory"]) / gpus <= parse_quantity_exact(MEMORY_PER_GPU), pool.name
    job = load_manifest(MANIFESTS / "gpu-job.yaml")[0]
    requests = job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]
    assert {"cpu": requests["cpu"], "memory": requests["memory"], "gpu": int(requests["nvidia.com/gpu"]),
            "pods": job["spec"]["parallelism"]} == GANG                          # the gang above is the demo's Job


def test_a_profile_may_give_its_cpu_and_memory_quota_which_land_in_the_cluster_queue_as_given():
    assert nominal(demo(cpuQuota=512, memoryQuota="4Ti")) == {"cpu": "512", "memory": "4Ti", "nvidia.com/gpu": "16"}
    assert nominal(demo(cpuQuota="1500m")) == {"cpu": "1500m", "memory": "2Ti", "nvidia.com/gpu": "16"}   # one given
    assert nominal(demo(gpuQuota=0, memoryQuota="64Gi")) == {"cpu": "0", "memory": "64Gi", "nvidia.com/gpu": "0"}
    assert (demo(cpuQuota=0).cpu_quota, demo(memoryQuota="0").memory_quota) == ("0", "0")
    assert demo(cpuQuota=MAX_CPU_QUOTA, memoryQuota=MAX_MEMORY_QUOTA).cpu_quota == MAX_CPU_QUOTA  # the bounds themselves
    assert demo(cpuQuota=10_000_000, memoryQuota=100 * 2**50).memory_quota == str(100 * 2**50)
    assert demo(cpuQuota="2.5", memoryQuota="1e12").cpu_quota == "2.5"
    # given as the derived value would be, or spelled otherwise: the same ClusterQueue, no difference
    assert not differences(objects(demo(cpuQuota="256", memoryQuota="2048Gi"), TC)[3], objects(demo(), TC)[3])
    assert demo(cpuQuota=256) != demo()                                        # what the profile says is kept


@pytest.mark.parametrize("change, message", [
    ({"cpuQuota": -1}, "spec.profiles[0].cpuQuota: must be a quantity, 0 or more (e.g. 512, 1500m, 4Ti), got -1"),
    ({"cpuQuota": "-1"}, "spec.profiles[0].cpuQuota: must be a quantity, 0 or more (e.g. 512, 1500m, 4Ti), got '-1'"),
    ({"cpuQuota": "lots"}, "spec.profiles[0].cpuQuota: must be a quantity, 0 or more (e.g. 512, 1500m, 4Ti), got 'lots'"),
    ({"cpuQuota": ""}, "spec.profiles[0].cpuQuota: must be a quantity, 0 or more (e.g. 512, 1500m, 4Ti), got ''"),
    ({"cpuQuota": True}, "spec.profiles[0].cpuQuota: must be a quantity, 0 or more (e.g. 512, 1500m, 4Ti), got True"),
    ({"cpuQuota": 1.5}, "spec.profiles[0].cpuQuota: must be a quantity, 0 or more (e.g. 512, 1500m, 4Ti), got 1.5"),
    ({"cpuQuota": "1 k"}, "spec.profiles[0].cpuQuota: must be a quantity, 0 or more (e.g. 512, 1500m, 4Ti), got '1 k'"),
    ({"cpuQuota": "8\n"}, "spec.profiles[0].cpuQuota: must be a quantity, 0 or more"),
    ({"cpuQuota": "1" * 33}, "spec.profiles[0].cpuQuota: must be a quantity, 0 or more"),           # longer than 32
    ({"cpuQuota": "1e2000"}, "spec.profiles[0].cpuQuota: must be a quantity, 0 or more"),         # no such quantity
    ({"cpuQuota": "1e-1000"}, "spec.profiles[0].cpuQuota: must be a quantity, 0 or more"),  # the apiserver's would do
    ({"cpuQuota": 10_000_001}, "spec.profiles[0].cpuQuota: must be 10M at most, got 10000001"),
    ({"cpuQuota": "10000001"}, "spec.profiles[0].cpuQuota: must be 10M at most, got '10000001'"),
    ({"cpuQuota": "1e8"}, "spec.profiles[0].cpuQuota: must be 10M at most, got '1e8'"),
    ({"memoryQuota": "4TB"}, "spec.profiles[0].memoryQuota: must be a quantity, 0 or more (e.g. 512, 1500m, 4Ti), "
                             "got '4TB'"),
    ({"memoryQuota": ["4Ti"]}, "spec.profiles[0].memoryQuota: must be a quantity, 0 or more"),
    ({"memoryQuota": "101Pi"}, "spec.profiles[0].memoryQuota: must be 100Pi at most, got '101Pi'"),
    ({"memoryQuota": 100 * 2**50 + 1}, f"spec.profiles[0].memoryQuota: must be 100Pi at most, got {100 * 2**50 + 1}"),
])
def test_a_bad_cpu_or_memory_quota_is_refused_naming_its_field(change, message):
    with pytest.raises(BadProfile) as e:
        parse_profile({**DEMO, **change})
    assert str(e.value).startswith(message), str(e.value)


def test_a_quota_written_in_as_many_characters_as_the_crd_allows_is_allowed_one_more_is_not():
    longest = "1." + "0" * (MAX_QUANTITY_LENGTH - 2)                        # 1 CPU, in 32 characters
    assert len(longest) == MAX_QUANTITY_LENGTH
    p = demo(cpuQuota=longest, memoryQuota="0" * MAX_QUANTITY_LENGTH)
    assert (p.cpu_quota, p.memory_quota) == (longest, "0" * MAX_QUANTITY_LENGTH)
    assert nominal(p)["cpu"] == longest
    with pytest.raises(BadProfile, match=r"cpuQuota: must be a quantity, 0 or more \(e\.g\. 512, 1500m, 4Ti\), got "
                                         f"'{longest}0'"):
        demo(cpuQuota=longest + "0")


def test_a_quota_the_pattern_admits_but_no_quantity_parses_is_still_refused_naming_its_field(monkeypatch):
    """QUANTITY_PATTERN admits only what parse_quantity_exact parses today (its exponent has at most 3 digits, the
    parser's bound is 1000), so this guard is reached only if the pattern is ever loosened: then too the refusal is
    a BadProfile naming the field, with the parser's reason as its cause, not a bare ValueError."""
    monkeypatch.setattr(profile_module, "QUANTITY_PATTERN", r"[0-9]+e[0-9]+")
    with pytest.raises(BadProfile) as e:
        demo(cpuQuota="1e2000")
    assert str(e.value) == ("spec.profiles[0].cpuQuota: must be a quantity, 0 or more (e.g. 512, 1500m, 4Ti), "
                            "got '1e2000'")
    assert isinstance(e.value.__cause__, ValueError) and "exponent 2000 is out of range" in str(e.value.__cause__)


def test_profiles_that_name_one_cluster_queue_with_other_cpu_or_memory_quotas_the_later_is_refused():
    """(The CRD refuses them first when one TauCluster holds both: tests/cluster/test_taucluster_crd.py.)"""
    assert P.refusals([taucluster("demo", T0, DEMO, raw(name="other", cpuQuota=512))], {}) == {("demo", "other"): [
        f"ClusterQueue {DEMO_CLUSTER_QUEUE} is set up by profile {PROFILE} of this TauCluster otherwise: {CPU}: "
        f"profile {PROFILE} wants '256', this profile '512'"]}
    assert P.refusals([taucluster("demo", T0, DEMO, raw(name="other", memoryQuota="3Ti"))], {}) == {("demo", "other"): [
        f"ClusterQueue {DEMO_CLUSTER_QUEUE} is set up by profile {PROFILE} of this TauCluster otherwise: {MEMORY}: "
        f"profile {PROFILE} wants '2Ti', this profile '3Ti'"]}
    alike = raw(name="other", cpuQuota=256, memoryQuota="2048Gi")       # what the demo's 16 GPUs give, spelled otherwise
    assert P.refusals([taucluster("demo", T0, DEMO, alike)], {}) == {}


COHORT_RAW = {"name": "p", "namespaces": ["demo"], "clusterQueue": "cq", "admissionCheck": "chk", "gpuQuota": 8,
              "flavor": {"name": "f", "nodeLabels": {"agentpool": "x"}}}


@pytest.mark.parametrize("cohort", ["a", "fleet", "a-b-9", "0", "a" * 63])
def test_a_profile_takes_a_cohort_and_its_cluster_queue_names_it(cohort):
    prof = profile_module.parse_profile({**COHORT_RAW, "cohort": cohort})
    assert prof.cohort == cohort
    cq = next(o for o in profile_module.objects(prof, "tc") if o["kind"] == "ClusterQueue")
    assert list(cq["spec"])[:2] == ["namespaceSelector", "cohortName"] and cq["spec"]["cohortName"] == cohort


def test_a_profile_without_a_cohort_has_none():
    prof = profile_module.parse_profile(dict(COHORT_RAW))
    assert prof.cohort is None
    cq = next(o for o in profile_module.objects(prof, "tc") if o["kind"] == "ClusterQueue")
    assert "cohortName" not in cq["spec"]
    assert profile_module.parse_profile({**COHORT_RAW, "cohort": None}).cohort is None


@pytest.mark.parametrize("cohort", ["", "-a", "a-", "A", "a_b", "a.b", "a" * 64, 7, ["a"], True])
def test_a_cohort_that_is_no_dns_label_is_refused_with_its_field(cohort):
    with pytest.raises(BadProfile) as e:
        profile_module.parse_profile({**COHORT_RAW, "cohort": cohort}, "spec.profiles[3]")
    assert str(e.value) == f"spec.profiles[3].cohort: must be a DNS-1123 label (a cohort's name), got {cohort!r}"
