"""Layer 1 (preflight) on queue objects recorded from the real cluster."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from demo.jobs.preflight import Gang, GangError, check_gang, check_profile
from fake_ca.pools import pools_from_configmap

REC = {d["kind"]: d for d in yaml.safe_load_all((Path(__file__).parent / "recorded" / "queue-objects.yaml").read_text())}


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
