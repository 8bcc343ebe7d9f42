"""Reading a TauCluster's status (k8s/taucluster.py) and preflight taking its word (demo/jobs/preflight.check_setup),
on plain objects: which TauCluster sets a profile up, when its status is current (its controller's heartbeat fresh,
the condition written for the present generation), a profile refused with the status's reason, and the objects
checked directly, with a line saying why, whenever the status cannot be taken at its word."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest
import yaml

from demo.jobs.preflight import Gang, PreflightInputs, check_setup, decide
from k8s import taucluster as T
from k8s.keys import FAKE_CA_LEASE, REAL_CA_LEASE
from k8s.paths import POOLS_FILE

REC = {d["kind"]: d for d in yaml.safe_load_all((Path(__file__).parent / "recorded" / "queue-objects.yaml").read_text())}
PROFILE_SPEC = {"name": "gpu-a100-8", "namespaces": ["demo"], "clusterQueue": "gpu-a100", "admissionCheck": "gpu-provisioning",
                "flavor": {"name": "a100-scale", "nodeLabels": {"agentpool": "gpupool"},
                           "tolerations": [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]},
                "gpuQuota": 16, "retryStrategy": {"backoffLimitCount": 2, "backoffBaseSeconds": 5, "backoffMaxSeconds": 20}}


def taucluster(name="demo", status="True", reason="Ready", message="ClusterQueue gpu-a100 and AdmissionCheck "
               "gpu-provisioning Active", generation=1, observed=1, created="2026-12-04T10:00:00Z",
               profile=None, mode="Manage") -> dict:
    p = copy.deepcopy(profile or PROFILE_SPEC)
    cond = {"type": "ProvisioningReady", "status": status, "reason": reason, "message": message,
            "lastTransitionTime": "2026-12-04T10:00:05Z", **({"observedGeneration": observed} if observed else {})}
    return {"apiVersion": "tau-demo.io/v1alpha1", "kind": "TauCluster",
            "metadata": {"name": name, "generation": generation, "creationTimestamp": created},
            "spec": {"mode": mode, "profiles": [p]},
            "status": {"profiles": [{"name": p["name"], "conditions": [cond]}] if status else []}}


# ---------------------------------------------------------------------------- k8s/taucluster.py

def test_a_taucluster_serves_a_profile_in_its_namespaces_only():
    tc = taucluster()
    assert T.serves(tc, "gpu-a100-8", "demo")
    assert not T.serves(tc, "gpu-a100-8", "other") and not T.serves(tc, "other", "demo")
    assert T.profile_spec(tc, "gpu-a100-8")["clusterQueue"] == "gpu-a100" and T.profile_spec(tc, "x") is None
    assert not T.serves({"spec": {"profiles": "no list"}}, "gpu-a100-8", "demo") and not T.serves(None, "p", "n")


def test_the_claimant_is_the_ready_one_else_the_oldest_and_never_one_being_deleted():
    older_refused = taucluster("a", status="False", reason="ClaimedByAnotherTauCluster", created="2026-12-04T09:00:00Z")
    ready = taucluster("b", created="2026-12-04T11:00:00Z")
    assert T.claimant([older_refused, ready], "gpu-a100-8", "demo") is ready
    newer = taucluster("c", status="False", reason="ObjectMissing", created="2026-12-04T12:00:00Z")
    assert T.claimant([newer, older_refused], "gpu-a100-8", "demo") is older_refused
    going = taucluster("d")
    going["metadata"]["deletionTimestamp"] = "2026-12-04T12:00:00Z"
    assert T.claimant([going], "gpu-a100-8", "demo") is None
    assert T.claimant([ready], "gpu-a100-8", "elsewhere") is None and T.claimant([], "gpu-a100-8", "demo") is None
    same_time = [taucluster("z", status="False", reason="X"), taucluster("y", status="False", reason="X")]
    assert T.claimant(same_time, "gpu-a100-8", "demo")["metadata"]["name"] == "y"
    # by creation first, then by name: the older one named later in the alphabet still wins
    later_named_older = [taucluster("a", status="False", reason="X", created="2026-12-04T12:00:00Z"),
                         taucluster("z", status="False", reason="X", created="2026-12-04T09:00:00Z")]
    assert T.claimant(later_named_older, "gpu-a100-8", "demo")["metadata"]["name"] == "z"
    undated = taucluster("m", status="False", reason="X")
    del undated["metadata"]["creationTimestamp"]
    assert T.claimant([later_named_older[1], undated], "gpu-a100-8", "demo") is undated


def test_a_current_status_is_read_as_it_is():
    r = T.reading(taucluster(), "gpu-a100-8", controller_alive=True)
    assert r == T.Reading("demo", "Manage", True, "Ready", "ClusterQueue gpu-a100 and AdmissionCheck gpu-provisioning "
                          "Active", "")
    no = T.reading(taucluster(status="False", reason="ObjectMissing", message="ClusterQueue gpu-a100 does not exist",
                              mode="External"), "gpu-a100-8", True)
    assert (no.ready, no.reason, no.message, no.mode, no.stale) == (False, "ObjectMissing",
                                                                   "ClusterQueue gpu-a100 does not exist", "External", "")


@pytest.mark.parametrize("tc, alive, why", [
    (taucluster(), False, "its controller is not running (heartbeat Lease tau-demo-system/taucluster missing or stale)"),
    (taucluster(), None, "its controller's heartbeat Lease tau-demo-system/taucluster cannot be read"),
    (taucluster(generation=2, observed=1), True,
     "its status was written for generation 1, the TauCluster is at generation 2"),
    (taucluster(generation=2, observed=None), True,
     "its status was written for generation None, the TauCluster is at generation 2"),
    (taucluster(status=""), True, "its status says nothing of this profile yet"),
])
def test_a_status_that_is_not_current_says_why(tc, alive, why):
    assert T.reading(tc, "gpu-a100-8", alive).stale == why


def test_a_condition_without_reason_or_message_and_a_taucluster_without_mode_read_as_empty():
    tc = taucluster()
    del tc["spec"]["mode"]
    tc["status"]["profiles"][0]["conditions"][0] = {"type": "ProvisioningReady", "status": "False",
                                                    "observedGeneration": 1}
    assert T.reading(tc, "gpu-a100-8", True) == T.Reading("demo", "", False, "", "", "")
    assert T.mode(None) == ""


def test_a_status_of_another_profile_says_nothing_of_this_one():
    assert T.ready_condition(taucluster(), "other") is None
    assert T.reading(taucluster(), "other", True).stale == "its status says nothing of this profile yet"
    assert T.ready_condition({"status": {"profiles": [{"name": "gpu-a100-8", "conditions": [
        {"type": "Other", "status": "True"}, "junk"]}, "junk"]}}, "gpu-a100-8") is None


# ---------------------------------------------------------------------------- preflight takes its word

def inputs(**changes) -> PreflightInputs:
    base = PreflightInputs(REC["LocalQueue"], REC["ClusterQueue"], {"gpu-provisioning": REC["AdmissionCheck"]},
                           {"gpu-provisioning": REC["ProvisioningRequestConfig"]}, REC["ConfigMap"],
                           {FAKE_CA_LEASE: True, REAL_CA_LEASE: False}, flavor=REC["ResourceFlavor"],
                           tauclusters=[taucluster()], setup_alive=True)
    return dataclasses.replace(base, **changes)


def test_a_ready_status_is_taken_at_its_word_without_reading_the_objects():
    """Even with every object unread: the status says ready, and the flavor and attempts come from the profile."""
    s = check_setup("gpu-a100-8", "demo", inputs(local_queue=None, cluster_queue=None, admission_checks={},
                                                  prov_configs={}, flavor=None))
    assert (s.result.code, s.result.lines) == (0, ["preflight: profile gpu-a100-8 ProvisioningReady=True, as "
                                                   "TauCluster demo (Manage mode) reports it"])
    assert s.result.attempts == {"gpu-provisioning": 3} and s.result.flavor == {"names": ["a100-scale"]}
    assert s.flavor == {"spec": {"nodeLabels": {"agentpool": "gpupool"}, "tolerations": [
        {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]}}
    r = decide(inputs(local_queue=None, flavor=None), "gpu-a100-8", Gang(2, 8), "demo", POOLS_FILE)
    assert (r.code, r.lines[-1]) == (0, "preflight: gang needs 2 node(s) of gpupool (max 2): fits")


def test_the_profiles_defaults_give_the_attempts_and_no_tolerations():
    bare = {k: v for k, v in PROFILE_SPEC.items() if k != "retryStrategy"}
    bare["flavor"] = {"name": "f", "nodeLabels": {"agentpool": "gpupool"}}
    s = check_setup("gpu-a100-8", "demo", inputs(tauclusters=[taucluster(profile=bare)]))
    assert s.result.attempts == {"gpu-provisioning": 3}
    assert s.flavor == {"spec": {"nodeLabels": {"agentpool": "gpupool"}, "tolerations": []}}
    r = decide(inputs(tauclusters=[taucluster(profile=bare)]), "gpu-a100-8", Gang(2, 8), "demo", POOLS_FILE)
    assert r.code == 2 and "taint sku=gpu:NoSchedule is not tolerated" in r.lines[-1]


def test_a_profile_not_ready_is_refused_with_the_statuss_reason_even_when_the_objects_look_fine():
    tc = taucluster(status="False", reason="IncompatibleObject", mode="Adopt",
                    message="ResourceFlavor a100-scale: spec.nodeLabels.agentpool: want 'gpupool', have 'other'")
    r = decide(inputs(tauclusters=[tc]), "gpu-a100-8", Gang(2, 8), "demo", POOLS_FILE, job_name="job-x")
    assert (r.code, r.lines) == (1, ["preflight: profile gpu-a100-8 ProvisioningReady=False (IncompatibleObject): "
                                     "ResourceFlavor a100-scale: spec.nodeLabels.agentpool: want 'gpupool', have "
                                     "'other' (TauCluster demo (Adopt mode))"])


@pytest.mark.parametrize("changes, why", [
    ({"setup_alive": False}, "not taking TauCluster demo's status at its word: its controller is not running "
                             "(heartbeat Lease tau-demo-system/taucluster missing or stale)"),
    ({"tauclusters": [taucluster(generation=3, observed=2)]},
     "not taking TauCluster demo's status at its word: its status was written for generation 2, the TauCluster is "
     "at generation 3"),
    ({"tauclusters": []}, "no TauCluster sets profile gpu-a100-8 up in namespace demo"),
    ({"tauclusters": [], "tauclusters_unread": "the TauCluster CRD (tauclusters.tau-demo.io) is not installed here"},
     "the TauCluster CRD (tauclusters.tau-demo.io) is not installed here"),
])
def test_otherwise_the_objects_are_checked_and_a_line_says_why(changes, why):
    ok = check_setup("gpu-a100-8", "demo", inputs(**changes))
    assert ok.result.code == 0 and ok.result.lines == [
        f"preflight: {why}; checking the profile's Kueue objects directly",
        "preflight: profile gpu-a100-8 ProvisioningReady=True"]
    assert ok.flavor is REC["ResourceFlavor"]
    refused = check_setup("gpu-a100-8", "demo", inputs(**changes, local_queue=None))
    assert refused.result.code == 1 and "unknown profile 'gpu-a100-8'" in refused.result.lines[1]


def test_a_stale_status_that_said_not_ready_does_not_refuse_when_the_objects_are_fine():
    tc = taucluster(status="False", reason="SettingUp", message="ClusterQueue gpu-a100 is being created")
    assert check_setup("gpu-a100-8", "demo", inputs(tauclusters=[tc], setup_alive=False)).result.code == 0


def test_a_ready_status_whose_profile_cannot_be_read_is_refused_naming_the_field():
    tc = taucluster(profile={**PROFILE_SPEC, "gpuQuota": -1})
    r = check_setup("gpu-a100-8", "demo", inputs(tauclusters=[tc])).result
    assert r.code == 1 and r.lines == ["preflight: profile gpu-a100-8: TauCluster demo says it is ready, but its spec "
                                       "cannot be read: spec.profiles[0].gpuQuota: must be a whole number of GPUs, 0 or "
                                       "more, got -1"]
