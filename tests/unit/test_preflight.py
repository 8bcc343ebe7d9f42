"""Layer 1 (preflight) on queue objects recorded from the real cluster."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest
import yaml

from demo.jobs import kueue_names
from demo.jobs.preflight import Gang, GangError, PreflightInputs, check_gang, check_profile, decide, gpu_flavors
from k8s.keys import FAKE_CA_LEASE, REAL_CA_LEASE
from k8s.paths import POOLS_FILE
from k8s.pools import pools_from_configmap

REC = {d["kind"]: d for d in yaml.safe_load_all((Path(__file__).parent / "recorded" / "queue-objects.yaml").read_text())}
LONG = yaml.safe_load((Path(__file__).parent / "recorded" / "kueue-names.yaml").read_text())


def profile(lq="default", cq="default", acs="default", prcs="default"):
    lq = REC["LocalQueue"] if lq == "default" else lq
    cq = REC["ClusterQueue"] if cq == "default" else cq
    acs = {"gpu-provisioning": REC["AdmissionCheck"]} if acs == "default" else acs
    prcs = {"gpu-provisioning": REC["ProvisioningRequestConfig"]} if prcs == "default" else prcs
    return check_profile("gpu-a100-8", lq, cq, acs, prcs)


def test_recorded_profile_is_provisioning_ready():
    r = profile()
    assert r.code == 0 and r.lines == ["preflight: profile gpu-a100-8 ProvisioningReady=True"]
    assert r.flavor == {"names": ["a100-scale"]}


def test_unknown_profile():
    r = profile(lq=None)
    assert r.code == 1 and "unknown profile 'gpu-a100-8'" in r.lines[0]


def test_missing_cluster_queue():
    r = profile(cq=None)
    assert r.code == 1 and "points to ClusterQueue 'gpu-a100', which does not exist" in r.lines[0]


def test_missing_admission_check():
    r = profile(acs={})
    assert r.code == 1 and "ProvisioningReady=False" in r.lines[0]
    assert "no AdmissionCheck with controller kueue.x-k8s.io/provisioning-request" in r.lines[0]


def test_inactive_admission_check():
    ac = copy.deepcopy(REC["AdmissionCheck"])
    for c in ac["status"]["conditions"]:
        if c["type"] == "Active":
            c.update(status="False", message="Can't resolve ProvisioningRequestConfig")
    r = profile(acs={"gpu-provisioning": ac})
    assert r.code == 1 and "AdmissionCheck gpu-provisioning is not Active (Can't resolve" in r.lines[0]


def test_provisioning_config_without_class():
    prc = copy.deepcopy(REC["ProvisioningRequestConfig"])
    prc["spec"]["provisioningClassName"] = " "
    r = profile(prcs={"gpu-provisioning": prc})
    assert r.code == 1 and "has no provisioningClassName" in r.lines[0]


def test_malformed_local_queue_without_spec():
    r = profile(lq={"metadata": {"name": "gpu-a100-8"}}, cq=None)
    assert r.code == 1 and "ClusterQueue None" in r.lines[0]


POOLS = pools_from_configmap(REC["ConfigMap"])


def test_gang_that_fits_the_pool():
    r = check_gang(Gang(2, 8), POOLS, REC["ResourceFlavor"])
    assert (r.code, r.lines) == (0, ["preflight: gang needs 2 node(s) of gpupool (max 2): fits"])


def test_gang_that_can_never_fit_exits_2():
    r = check_gang(Gang(3, 8), POOLS, REC["ResourceFlavor"])
    assert r.code == 2
    assert r.lines[0].startswith("preflight: gang needs 3 node(s) of gpupool (max 2): does not fit")


def test_pod_larger_than_any_node_exits_2():
    r = check_gang(Gang(1, 16), POOLS, REC["ResourceFlavor"])
    assert r.code == 2 and "does not fit" in r.lines[0]


@pytest.mark.parametrize("text", ["2by8", "0x8", "2x0", "2x", "", "2x8x1", "9999x8"])
def test_malformed_gang(text):
    with pytest.raises(GangError):
        Gang.parse(text)


def test_gang_accepts_common_spellings():
    assert Gang.parse(" 2X8 ") == Gang(2, 8) == Gang.parse("2×8")


def ready_line(reason):
    return [f"preflight: profile gpu-a100-8 ProvisioningReady=False: {reason}"]


def test_admission_check_without_an_active_condition_yet():
    ac = copy.deepcopy(REC["AdmissionCheck"])
    ac["status"]["conditions"] = [c for c in ac["status"]["conditions"] if c["type"] != "Active"]
    r = profile(acs={"gpu-provisioning": ac})
    assert (r.code, r.lines) == (1, ready_line("AdmissionCheck gpu-provisioning is not Active (no condition yet)"))


def test_inactive_admission_check_without_a_message():
    ac = copy.deepcopy(REC["AdmissionCheck"])
    ac["status"]["conditions"] = [{"type": "Active", "status": "False", "reason": "Unknown"}]
    r = profile(acs={"gpu-provisioning": ac})
    assert (r.code, r.lines) == (1, ready_line("AdmissionCheck gpu-provisioning is not Active ()"))


def test_missing_admission_check_says_what_goes_wrong_without_it():
    r = profile(acs={})
    assert (r.code, r.lines) == (1, ready_line(
        "ClusterQueue gpu-a100 has no AdmissionCheck with controller kueue.x-k8s.io/provisioning-request; "
        "without it Kueue admits without waiting for capacity"))


def test_an_admission_check_of_another_controller_does_not_count():
    ac = copy.deepcopy(REC["AdmissionCheck"])
    ac["spec"]["controllerName"] = "example.com/other"
    assert profile(acs={"gpu-provisioning": ac}).lines[0].endswith("without it Kueue admits without waiting for capacity")


def test_checks_listed_directly_on_the_cluster_queue_count_too():
    cq = copy.deepcopy(REC["ClusterQueue"])
    del cq["spec"]["admissionChecksStrategy"]
    cq["spec"]["admissionChecks"] = ["gpu-provisioning"]
    r = profile(cq=cq)
    assert (r.code, r.lines) == (0, ["preflight: profile gpu-a100-8 ProvisioningReady=True"])


@pytest.mark.parametrize("parameters", [
    {"apiGroup": "kueue.x-k8s.io", "kind": "ConfigMap", "name": "gpu-provisioning"},       # the wrong kind
    {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "other"},  # names nothing
    {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig"},                   # no name
])
def test_parameters_must_name_an_existing_provisioning_request_config(parameters):
    ac = copy.deepcopy(REC["AdmissionCheck"])
    ac["spec"]["parameters"] = parameters
    r = profile(acs={"gpu-provisioning": ac})
    assert (r.code, r.lines) == (1, ready_line(
        "AdmissionCheck gpu-provisioning parameters do not resolve to a ProvisioningRequestConfig"))


@pytest.mark.parametrize("class_name", [" ", "", None])
def test_provisioning_config_without_a_class_names_it(class_name):
    prc = copy.deepcopy(REC["ProvisioningRequestConfig"])
    if class_name is None:
        del prc["spec"]["provisioningClassName"]
    else:
        prc["spec"]["provisioningClassName"] = class_name
    r = profile(prcs={"gpu-provisioning": prc})
    assert (r.code, r.lines) == (1, ready_line("ProvisioningRequestConfig gpu-provisioning has no provisioningClassName"))


def test_the_flavor_places_the_gang_nodes_selected_by_its_labels():
    flavor = copy.deepcopy(REC["ResourceFlavor"])
    flavor["spec"]["nodeLabels"] = {"agentpool": "cpupool"}
    r = check_gang(Gang(2, 8), POOLS, flavor)
    assert (r.code, r.lines) == (2, ["preflight: does not fit: pod of main matches no pool "
                                     "(gpupool: nodeSelector agentpool=cpupool does not match (agentpool=gpupool))"])


def test_the_flavor_must_tolerate_the_pools_taints():
    flavor = copy.deepcopy(REC["ResourceFlavor"])
    del flavor["spec"]["tolerations"]
    r = check_gang(Gang(2, 8), POOLS, flavor)
    assert (r.code, r.lines) == (2, ["preflight: does not fit: pod of main matches no pool "
                                     "(gpupool: taint sku=gpu:NoSchedule is not tolerated)"])


def test_gang_too_big_for_the_pool_says_how_many_nodes():
    r = check_gang(Gang(3, 8), POOLS, REC["ResourceFlavor"])
    assert (r.code, r.lines) == (2, ["preflight: gang needs 3 node(s) of gpupool (max 2): does not fit: "
                                     "pool gpupool has 0 node(s) and max 2, 3 more needed"])


@pytest.mark.parametrize("text, gang", [("1x1", Gang(1, 1)), ("1000x64", Gang(1000, 64)), ("16 x 8", Gang(16, 8))])
def test_gang_limits_are_inclusive(text, gang):
    assert Gang.parse(text) == gang and str(gang) == f"{gang.pods}x{gang.gpus}"


@pytest.mark.parametrize("text, says", [
    ("0x8", "a gang of 0 pods runs nothing; give 1..1000 pods, e.g. 2x8"),
    ("1001x8", "at most 1000 pods of at most 64 GPUs each"),
    ("8x0", "pods of 0 GPUs ask for no GPU capacity, so there is nothing to provision; give 1..64 GPUs per pod, e.g. 8x8"),
    ("8x65", "at most 1000 pods of at most 64 GPUs each")])
def test_gang_outside_the_limits_says_the_limits(text, says):
    with pytest.raises(GangError) as err:
        Gang.parse(text)
    assert str(err.value) == f"--gang '{text}': {says}"


@pytest.mark.parametrize("text", ["2by8", "", None, 28])
def test_gang_that_is_not_podsxgpus_shows_an_example(text):
    with pytest.raises(GangError, match=r"^--gang .*: expected PODSxGPUS, e\.g\. 2x8$"):
        Gang.parse(text)


# ---------------------------------------------------------------------------- decide: the checks in order

DEMO_TABLE = REC["ConfigMap"]
FAKE_CA_RUNS = {FAKE_CA_LEASE: True, REAL_CA_LEASE: False}


def inputs(**changes) -> PreflightInputs:
    """What observe.preflight_inputs reads of the recorded profile, with the fake autoscaler running."""
    base = PreflightInputs(REC["LocalQueue"], REC["ClusterQueue"], {"gpu-provisioning": REC["AdmissionCheck"]},
                           {"gpu-provisioning": REC["ProvisioningRequestConfig"]}, DEMO_TABLE, FAKE_CA_RUNS,
                           flavor=REC["ResourceFlavor"])
    return dataclasses.replace(base, **changes)


NO_TAUCLUSTER = ("preflight: no TauCluster sets profile gpu-a100-8 up in namespace demo; checking the profile's Kueue "
                 "objects directly")


def test_decide_says_each_check_that_passed():
    r = decide(inputs(), "gpu-a100-8", Gang(2, 8), "demo", POOLS_FILE)
    assert (r.code, r.lines) == (0, [NO_TAUCLUSTER, "preflight: profile gpu-a100-8 ProvisioningReady=True",
                                     "preflight: gang needs 2 node(s) of gpupool (max 2): fits"])


def test_decide_stops_at_a_profile_that_is_not_ready():
    r = decide(inputs(local_queue=None), "gpu-a100-8", Gang(3, 8), "demo", POOLS_FILE, job_name="job-x")
    assert (r.code, r.lines) == (1, [NO_TAUCLUSTER, "preflight: unknown profile 'gpu-a100-8': no LocalQueue of that "
                                     "name in the namespace"])


def test_decide_with_an_autoscaler_that_has_not_published_its_table_yet():
    r = decide(inputs(pool_table=None), "gpu-a100-8", Gang(2, 8), "demo", POOLS_FILE)
    assert r.code == 1 and len(r.lines) == 3
    assert r.lines[-1].startswith("preflight: the running autoscaler has not published its pool table")


def test_decide_plans_the_gang_with_the_flavors_placement():
    r = decide(inputs(flavor=None), "gpu-a100-8", Gang(2, 8), "demo", POOLS_FILE)
    assert r.code == 2 and "taint sku=gpu:NoSchedule is not tolerated" in r.lines[-1]


def checked_by(check: str) -> dict:
    """The recorded profile with its provisioning AdmissionCheck named `check`."""
    cq = copy.deepcopy(REC["ClusterQueue"])
    cq["spec"]["admissionChecksStrategy"]["admissionChecks"][0]["name"] = check
    ac = copy.deepcopy(REC["AdmissionCheck"])
    ac["metadata"]["name"] = check
    return {"cluster_queue": cq, "admission_checks": {check: ac}}


def test_decide_warns_of_a_job_name_kueue_would_lose_and_still_plans():
    """The recorded looping case of kueue#12542: its long admission check, its Job name."""
    check = LONG["check"]
    r = decide(inputs(**checked_by(check)), "gpu-a100-8", Gang(2, 8), "demo", POOLS_FILE,
               job_name=LONG["looping"]["job"])
    assert r.code == 0 and len(r.lines) == 4
    assert r.lines[2].startswith("preflight: WARNING: Kueue v0.19.2 cannot find its own ProvisioningRequest")
    assert r.lines[3] == "preflight: gang needs 2 node(s) of gpupool (max 2): fits"
    r = decide(inputs(**checked_by(check)), "gpu-a100-8", Gang(2, 8), "demo", POOLS_FILE,
               job_name=LONG["control"]["job"])
    assert r.code == 0 and len(r.lines) == 3


def test_decide_without_the_jobs_name_warns_of_nothing():
    """Without --name there is no request name to check, even with a check name long enough to loop for any Job."""
    check = "c" * kueue_names.shortest_looping_check("x")
    r = decide(inputs(**checked_by(check)), "gpu-a100-8", Gang(2, 8), "demo", POOLS_FILE)
    assert (r.code, len(r.lines)) == (0, 3)
    r = decide(inputs(**checked_by(check)), "gpu-a100-8", Gang(2, 8), "demo", POOLS_FILE, job_name="x")
    assert (r.code, len(r.lines)) == (0, 4) and "WARNING" in r.lines[2]


def test_the_gpu_flavors_are_those_of_the_resource_groups_covering_gpus():
    cq = copy.deepcopy(REC["ClusterQueue"])
    cq["spec"]["resourceGroups"] = [{"coveredResources": ["cpu"], "flavors": [{"name": "cpu-only"}]},
                                    *cq["spec"]["resourceGroups"],
                                    {"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "spare"}]}]
    assert gpu_flavors(cq) == ["a100-scale", "spare"]
    assert gpu_flavors(None) == [] == gpu_flavors({"spec": {}}) == gpu_flavors({"spec": {"resourceGroups": [{}]}})
