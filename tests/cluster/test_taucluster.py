"""The TauCluster controller against the real apiserver and the real Kueue v0.19.2, in-process with the test's
client: Manage creates a profile's five objects, Kueue makes them Active and the profile reads ProvisioningReady;
an edited quota and a deleted AdmissionCheck are put back; deleting the TauCluster deletes what it made. Adopt takes
over an administrator's compatible objects (labels only), reports an incompatible one untouched, and gives them back
on deletion. External writes nothing (every object's resourceVersion unchanged). A second TauCluster claiming a
profile is refused. Each profile here has names of its own, so the demo's objects are not touched."""

from __future__ import annotations

import threading

import pytest

from demo.taucluster import plan as P
from demo.taucluster.controller import KINDS, TauClusterController
from demo.taucluster.profile import objects, parse_profile
from k8s.keys import (BEST_EFFORT_ATOMIC, DEMO_NAMESPACE, MODE_ADOPT, MODE_EXTERNAL, MODE_MANAGE,
                      PROVISIONING_READY, TAUCLUSTER_LABEL)
from k8s.objects import is_true, labels, meta
from k8s.resources import CLUSTER_QUEUE, TAUCLUSTER
from tests.cluster.conftest import wait_for

ADMIN = "an-administrator"          # the field manager of the objects "an administrator" applies


def raw_profile(tag: str) -> dict:
    return {"name": f"tc-{tag}", "namespaces": [DEMO_NAMESPACE], "clusterQueue": f"tc-{tag}-cq",
            "admissionCheck": f"tc-{tag}-check", "flavor": {"name": f"tc-{tag}-flavor",
                                                            "nodeLabels": {"agentpool": "gpupool"}},
            "gpuQuota": 8, "provisioningClass": BEST_EFFORT_ATOMIC}


@pytest.fixture(scope="module")
def controller(k, taucluster_crd):
    stop, ready = threading.Event(), threading.Event()
    ctl = TauClusterController(k)
    t = threading.Thread(target=ctl.run, args=(stop, ready), daemon=True)
    t.start()
    assert ready.wait(60), "the controller's caches did not sync"
    yield ctl
    for tc in k.list(TAUCLUSTER)[0]:
        k.delete(TAUCLUSTER, meta(tc)["name"])
    wait_for(lambda: not k.list(TAUCLUSTER)[0], 60, what="every TauCluster gone (its finalizer done)")
    stop.set()
    t.join(10)


def taucluster(k, name: str, mode: str, *profiles: dict) -> dict:
    return k.create(TAUCLUSTER, TAUCLUSTER.new(name, spec={"mode": mode, "profiles": list(profiles)}))


def ready_of(k, name: str, profile: str) -> dict:
    tc = k.get_or_none(TAUCLUSTER, name) or {}
    for p in (tc.get("status") or {}).get("profiles") or []:
        if p["name"] == profile:
            return next(c for c in p["conditions"] if c["type"] == PROVISIONING_READY)
    return {}


def live(k, obj: dict) -> dict | None:
    return k.get_or_none(KINDS[obj["kind"]], obj["metadata"]["name"], obj["metadata"].get("namespace"))


def test_manage_makes_the_profile_puts_drift_back_and_deletes_what_it_made(k, controller, unique):
    raw = raw_profile(f"m{unique}")
    p = parse_profile(raw)
    taucluster(k, f"manage-{unique}", MODE_MANAGE, raw)
    ready = wait_for(lambda: ready_of(k, f"manage-{unique}", p.name).get("status") == "True"
                     and ready_of(k, f"manage-{unique}", p.name), 60, what="ProvisioningReady=True")
    assert ready["reason"] == P.READY
    made = objects(p, f"manage-{unique}")
    assert all(labels(live(k, o)).get(TAUCLUSTER_LABEL) == f"manage-{unique}" for o in made)
    # an edited quota is put back
    k.patch(CLUSTER_QUEUE, p.cluster_queue, {"spec": {"resourceGroups": [{
        "coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": [{"name": p.flavor, "resources": [
            {"name": "cpu", "nominalQuota": "256"}, {"name": "memory", "nominalQuota": "2Ti"},
            {"name": "nvidia.com/gpu", "nominalQuota": "2"}]}]}]}})
    wait_for(lambda: live(k, made[3])["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"]
             == "8", 20, what="the quota put back")
    # a deleted LocalQueue is made again
    k.delete(KINDS["LocalQueue"], p.name, DEMO_NAMESPACE)
    wait_for(lambda: (lq := live(k, made[4])) is not None and not meta(lq).get("deletionTimestamp"), 20,
             what="the LocalQueue made again")
    # a deleted AdmissionCheck: Kueue holds it while the ClusterQueue uses it (its resource-in-use finalizer), so
    # the profile says so and is not ready; nothing else is written
    k.delete(KINDS["AdmissionCheck"], p.check)
    said = wait_for(lambda: ready_of(k, f"manage-{unique}", p.name).get("reason") == P.BEING_DELETED
                    and ready_of(k, f"manage-{unique}", p.name), 20, what="the check's deletion reported")
    assert said["message"] == (f"AdmissionCheck {p.check} is being deleted (held by kueue.x-k8s.io/resource-in-use); "
                               "made again once it is gone")
    # a second TauCluster claiming the profile is refused and touches nothing
    taucluster(k, f"second-{unique}", MODE_ADOPT, raw)
    said = wait_for(lambda: ready_of(k, f"second-{unique}", p.name).get("reason") == P.CLAIMED
                    and ready_of(k, f"second-{unique}", p.name), 30, what="the second claim refused")
    assert said["message"].startswith(f"ResourceFlavor {p.flavor} is TauCluster manage-{unique}'s")
    k.delete(TAUCLUSTER, f"second-{unique}")
    wait_for(lambda: k.get_or_none(TAUCLUSTER, f"second-{unique}") is None, 30, what="the second one gone")
    assert all(labels(live(k, o)).get(TAUCLUSTER_LABEL) == f"manage-{unique}" for o in made), "still the first's"
    # deleting the TauCluster deletes what it made, then the TauCluster goes
    k.delete(TAUCLUSTER, f"manage-{unique}")
    wait_for(lambda: k.get_or_none(TAUCLUSTER, f"manage-{unique}") is None, 60, what="the TauCluster gone")
    wait_for(lambda: [o["kind"] for o in made if live(k, o) is not None] == [], 30,
             what="what it made gone (Kueue lets each go once nothing uses it)")


def admin_applies(k, objs: list[dict]) -> list[dict]:
    out = []
    for o in objs:
        o = {**o, "metadata": {k_: v for k_, v in o["metadata"].items() if k_ != "labels"}}
        out.append(k.apply(KINDS[o["kind"]], o, ADMIN))
    return out


def test_adopt_takes_compatible_objects_reports_an_incompatible_one_untouched_and_gives_them_back(k, controller,
                                                                                                   unique):
    raw = raw_profile(f"a{unique}")
    p = parse_profile(raw)
    objs = objects(p, "nobody")
    objs[0]["spec"]["nodeLabels"] = {"agentpool": "otherpool"}           # another node pool: incompatible
    applied = admin_applies(k, objs)
    name = f"adopt-{unique}"
    taucluster(k, name, MODE_ADOPT, raw)
    said = wait_for(lambda: ready_of(k, name, p.name).get("reason") == P.INCOMPATIBLE and ready_of(k, name, p.name),
                    30, what="the incompatible flavor reported")
    assert said["message"] == (f"ResourceFlavor {p.flavor}: spec.nodeLabels.agentpool: want 'gpupool', have "
                               "'otherpool'")
    assert meta(live(k, applied[0]))["resourceVersion"] == meta(applied[0])["resourceVersion"]     # untouched
    wait_for(lambda: all(labels(live(k, o)).get(TAUCLUSTER_LABEL) == name for o in applied[1:]), 30,
             what="the compatible ones adopted")
    # the administrator puts the flavor right: it is adopted and the profile is ready
    k.apply(KINDS["ResourceFlavor"], {**applied[0], "metadata": {"name": p.flavor},
                                      "spec": {"nodeLabels": {"agentpool": "gpupool"}}}, ADMIN)
    wait_for(lambda: ready_of(k, name, p.name).get("status") == "True", 60, what="ready once compatible")
    k.delete(TAUCLUSTER, name)
    wait_for(lambda: k.get_or_none(TAUCLUSTER, name) is None, 60, what="the TauCluster gone")
    left = [live(k, o) for o in applied]
    assert all(o is not None and TAUCLUSTER_LABEL not in labels(o) for o in left), "given back as they were"
    for o in reversed(applied):
        k.delete(KINDS[o["kind"]], o["metadata"]["name"], o["metadata"].get("namespace"))


def test_external_writes_nothing_and_a_second_taucluster_cannot_claim_a_profile(k, controller, unique):
    raw = raw_profile(f"e{unique}")
    p = parse_profile(raw)
    applied = admin_applies(k, objects(p, "nobody"))
    wait_for(lambda: is_true(live(k, applied[3]), "Active"), 30, what="Kueue's ClusterQueue Active")
    before = {P.key(o): meta(live(k, o))["resourceVersion"] for o in applied}
    name = f"external-{unique}"
    taucluster(k, name, MODE_EXTERNAL, raw)
    wait_for(lambda: ready_of(k, name, p.name).get("status") == "True", 30, what="External: ready")
    assert {P.key(o): meta(live(k, o))["resourceVersion"] for o in applied} == before, "External wrote something"
    # a Manage TauCluster over the same objects: not its own, so it touches nothing and says so
    taucluster(k, f"manage2-{unique}", MODE_MANAGE, raw)
    said = wait_for(lambda: ready_of(k, f"manage2-{unique}", p.name).get("reason") == P.NOT_OURS
                    and ready_of(k, f"manage2-{unique}", p.name), 30, what="Manage refuses objects it did not make")
    assert said["status"] == "False"
    assert {P.key(o): meta(live(k, o))["resourceVersion"] for o in applied} == before
    for n in (name, f"manage2-{unique}"):
        k.delete(TAUCLUSTER, n)
    for o in reversed(applied):
        k.delete(KINDS[o["kind"]], o["metadata"]["name"], o["metadata"].get("namespace"))
