"""The TauCluster CRD (manifests/taucluster-crd.yaml) on the real kube-apiserver: it is Established, a good
TauCluster is accepted with its defaults filled in and read back by demo/taucluster/profile.py, and each bad one
is refused by the apiserver itself with a message naming the field (server-side dry runs: nothing is stored):
among them profiles of one TauCluster that name one Kueue object otherwise (its CEL rules), a GPU quota above the
bound, and a cpuQuota or memoryQuota that is no quantity, negative or above its bound; profiles that name one object
alike are accepted, and so are explicit CPU and memory quotas up to their bounds.  `cluster up` installs the CRD (demo/cluster/install.py);
no test removes it."""

from __future__ import annotations

import copy

import pytest

from demo.taucluster.profile import (MAX_CPU_QUOTA, MAX_GPU_QUOTA, MAX_MEMORY_QUOTA, QUANTITY_PATTERN, RetryStrategy,
                                     parse_all, quotas)
from k8s.errors import ApiError
from k8s.keys import BEST_EFFORT_ATOMIC, CHECK_NAME, DEMO_CLUSTER_QUEUE, DEMO_NAMESPACE, PROFILE
from k8s.resources import TAUCLUSTER

GOOD = TAUCLUSTER.new("crd-check", spec={"mode": "Manage", "profiles": [{
    "name": PROFILE, "namespaces": [DEMO_NAMESPACE], "clusterQueue": DEMO_CLUSTER_QUEUE,
    "admissionCheck": CHECK_NAME, "flavor": {"name": "a100-scale", "nodeLabels": {"agentpool": "gpupool"}},
    "gpuQuota": 16}]})


def with_profile(**changes) -> dict:
    obj = copy.deepcopy(GOOD)
    obj["spec"]["profiles"][0].update(changes)
    return obj


def with_second(**changes) -> dict:
    """GOOD and a second profile: GOOD's, named `other`, with names of its own unless `changes` give GOOD's."""
    obj = copy.deepcopy(GOOD)
    first = obj["spec"]["profiles"][0]
    second = {**copy.deepcopy(first), "name": "other", "clusterQueue": "other-cq", "admissionCheck": "other-check",
              "flavor": {"name": "other-flavor", "nodeLabels": {"agentpool": "otherpool"}}, **changes}
    obj["spec"]["profiles"].append(second)
    return obj


SAME_QUEUE = ("spec.profiles: Invalid value: profiles that name one clusterQueue must give it the same "
              "flavor.name, gpuQuota, cpuQuota, memoryQuota, cohort and admissionCheck: a ClusterQueue has one spec")
NOT_A_QUANTITY = f"in body should match '{QUANTITY_PATTERN}'"
SAME_FLAVOR = ("spec.profiles: Invalid value: profiles that name one flavor.name must give it the same "
               "nodeLabels and tolerations: a ResourceFlavor has one spec")
SAME_CHECK = ("spec.profiles: Invalid value: profiles that name one admissionCheck must give it the same "
              "provisioningClass and retryStrategy: its ProvisioningRequestConfig has one spec")
FLAVOR = GOOD["spec"]["profiles"][0]["flavor"]


def test_a_good_taucluster_is_accepted_with_its_defaults_and_reads_as_the_demo_profile(k, taucluster_crd):
    made = k.create(TAUCLUSTER, GOOD, dry_run=True)
    assert made["spec"]["profiles"][0]["provisioningClass"] == BEST_EFFORT_ATOMIC      # the CRD's default
    (profile,) = parse_all(made["spec"]["profiles"])
    assert (profile.name, profile.gpu_quota, profile.provisioning_class) == (PROFILE, 16, BEST_EFFORT_ATOMIC)
    assert k.get_or_none(TAUCLUSTER, "crd-check") is None                               # a dry run stores nothing


@pytest.mark.parametrize("obj, message", [
    ({**GOOD, "spec": {**GOOD["spec"], "mode": "Own"}},
     'spec.mode: Unsupported value: "Own": supported values: "Manage", "Adopt", "External"'),
    ({**GOOD, "spec": {**GOOD["spec"], "profiles": GOOD["spec"]["profiles"] * 2}},
     'spec.profiles[1]: Duplicate value: {"name":"gpu-a100-8"}'),
    ({**GOOD, "spec": {**GOOD["spec"], "profiles": []}}, "spec.profiles: Invalid value: 0: spec.profiles in body "
                                                           "should have at least 1 items"),
    (with_profile(gpuQuota=-8), "spec.profiles[0].gpuQuota: Invalid value: -8: spec.profiles[0].gpuQuota in body "
                                "should be greater than or equal to 0"),
    (with_profile(gpuQuota="lots"), 'spec.profiles[0].gpuQuota: Invalid value: "string": spec.profiles[0].gpuQuota '
                                    'in body must be of type integer: "string"'),
    (with_profile(provisioningClass="queued-provisioning.gke.io"),
     'spec.profiles[0].provisioningClass: Unsupported value: "queued-provisioning.gke.io": supported values: '
     '"best-effort-atomic-scale-up.autoscaling.x-k8s.io", "check-capacity.autoscaling.x-k8s.io"'),
    (with_profile(retryStrategy={"backoffBaseSeconds": 10, "backoffMaxSeconds": 5}),
     "spec.profiles[0].retryStrategy: Invalid value: backoffMaxSeconds must be at least backoffBaseSeconds"),
    (with_profile(name="GPU A100"), 'spec.profiles[0].name: Invalid value: "GPU A100": spec.profiles[0].name in '
                                    'body should match'),
    (with_profile(namespaces=[]), "spec.profiles[0].namespaces: Invalid value: 0: spec.profiles[0].namespaces in "
                                  "body should have at least 1 items"),
    (with_profile(gpuQuota=MAX_GPU_QUOTA + 1),
     "spec.profiles[0].gpuQuota: Invalid value: 100001: spec.profiles[0].gpuQuota in body should be less than or "
     "equal to 100000"),
    # two profiles of one TauCluster naming one Kueue object, otherwise
    (with_second(clusterQueue=DEMO_CLUSTER_QUEUE), SAME_QUEUE),                      # another flavor and check
    (with_second(clusterQueue=DEMO_CLUSTER_QUEUE, admissionCheck=CHECK_NAME, flavor=FLAVOR, gpuQuota=32), SAME_QUEUE),
    (with_second(flavor={"name": "a100-scale", "nodeLabels": {"agentpool": "otherpool"}}), SAME_FLAVOR),
    (with_second(flavor={**FLAVOR, "tolerations": [{"key": "sku", "operator": "Exists"}]}), SAME_FLAVOR),
    (with_second(admissionCheck=CHECK_NAME, provisioningClass="check-capacity.autoscaling.x-k8s.io"), SAME_CHECK),
    (with_second(admissionCheck=CHECK_NAME, retryStrategy={"backoffLimitCount": 5}), SAME_CHECK),
    # a profile's CPU and memory quotas: quantities, 0 or more, bounded
    (with_profile(cpuQuota="lots"), f'spec.profiles[0].cpuQuota: Invalid value: "lots": spec.profiles[0].cpuQuota '
                                    f'{NOT_A_QUANTITY}'),
    (with_profile(cpuQuota=-1), "spec.profiles[0].cpuQuota: Invalid value: -1: spec.profiles[0].cpuQuota in body "
                                "should be greater than or equal to 0"),
    (with_profile(cpuQuota="-1"), f'spec.profiles[0].cpuQuota: Invalid value: "-1": spec.profiles[0].cpuQuota '
                                  f'{NOT_A_QUANTITY}'),
    (with_profile(cpuQuota="11M"), 'spec.profiles[0].cpuQuota: Invalid value: "11M": must be a quantity of 10M CPUs '
                                   'at most'),
    (with_profile(cpuQuota=10_000_001), "spec.profiles[0].cpuQuota: Invalid value: 10000001: spec.profiles[0].cpuQuota "
                                        "in body should be less than or equal to 10000000"),
    (with_profile(cpuQuota="1" * 33), "spec.profiles[0].cpuQuota: Too long: may not be more than 32 bytes"),
    (with_profile(cpuQuota="1e2000"), 'spec.profiles[0].cpuQuota: Invalid value: "1e2000": spec.profiles[0].cpuQuota '
                                      f'{NOT_A_QUANTITY}'),
    (with_profile(memoryQuota="4TB"), f'spec.profiles[0].memoryQuota: Invalid value: "4TB": '
                                      f'spec.profiles[0].memoryQuota {NOT_A_QUANTITY}'),
    (with_profile(memoryQuota="101Pi"), 'spec.profiles[0].memoryQuota: Invalid value: "101Pi": must be a quantity of '
                                        '100Pi at most'),
    (with_profile(memoryQuota=100 * 2**50 + 1),                 # as a number, one byte more than 100Pi: CEL sees it
     "spec.profiles[0].memoryQuota: Invalid value: 112589990684262401: must be a quantity of 100Pi at most"),
    (with_second(clusterQueue=DEMO_CLUSTER_QUEUE, admissionCheck=CHECK_NAME, flavor=FLAVOR, cpuQuota=512), SAME_QUEUE),
    (with_second(clusterQueue=DEMO_CLUSTER_QUEUE, admissionCheck=CHECK_NAME, flavor=FLAVOR, memoryQuota="2Ti"),
     SAME_QUEUE),                                               # given by one, derived by the other: not the same
], ids=["unknown-mode", "profile-twice", "no-profile", "negative-quota", "quota-not-a-number", "another-class",
        "max-below-base", "bad-name", "no-namespace", "quota-above-the-bound", "one-queue-other-flavor-and-check",
        "one-queue-other-quota", "one-flavor-other-labels", "one-flavor-other-tolerations", "one-check-other-class",
        "one-check-other-retries", "cpu-not-a-quantity", "cpu-negative", "cpu-negative-string", "cpu-above-the-bound",
        "cpu-number-above-the-bound", "cpu-too-long", "cpu-no-such-exponent", "memory-not-a-quantity",
        "memory-above-the-bound", "memory-number-above-the-bound", "one-queue-other-cpu", "one-queue-memory-given-once"])
def test_a_bad_taucluster_is_refused_by_the_apiserver_naming_its_field(k, taucluster_crd, obj, message):
    with pytest.raises(ApiError) as e:
        k.create(TAUCLUSTER, obj, dry_run=True)
    assert e.value.status == 422, e.value
    assert message in e.value.message, e.value.message



def test_profiles_that_name_one_object_alike_are_accepted_and_the_quota_bound_itself_is(k, taucluster_crd):
    """The walkthrough's slots share the demo's check and its config; two LocalQueue names may share one queue; two
    profiles one flavor (no tolerations and an empty list are alike); an omitted retryStrategy is the one the
    controller reads (the CRD's defaults are RetryStrategy's)."""
    slots = with_second(admissionCheck=CHECK_NAME)                  # neither profile says its retryStrategy
    for obj in (slots, with_second(clusterQueue=DEMO_CLUSTER_QUEUE, admissionCheck=CHECK_NAME, flavor=FLAVOR),
                with_second(flavor=copy.deepcopy(FLAVOR)), with_second(flavor={**FLAVOR, "tolerations": []}),
                with_second(admissionCheck=CHECK_NAME, retryStrategy={"backoffLimitCount": 2}),  # said, as defaulted
                with_profile(gpuQuota=MAX_GPU_QUOTA)):
        made = k.create(TAUCLUSTER, obj, dry_run=True)
        assert len(parse_all(made["spec"]["profiles"])) == len(obj["spec"]["profiles"])
    made = k.create(TAUCLUSTER, slots, dry_run=True)
    assert made["spec"]["profiles"][1]["retryStrategy"] == {"backoffLimitCount": 2, "backoffBaseSeconds": 5,
                                                            "backoffMaxSeconds": 20}
    assert parse_all(made["spec"]["profiles"])[1].retry == RetryStrategy()


def test_explicit_cpu_and_memory_quotas_are_accepted_up_to_their_bounds_and_read_as_given(k, taucluster_crd):
    """A number or a quantity string; the bounds themselves; two profiles of one queue that give it alike (a number
    and its digits as a string are alike to the rule)."""
    same = with_second(clusterQueue=DEMO_CLUSTER_QUEUE, admissionCheck=CHECK_NAME, flavor=FLAVOR, cpuQuota=256)
    same["spec"]["profiles"][0]["cpuQuota"] = "256"
    for obj, want in ((with_profile(cpuQuota=512, memoryQuota="4Ti"), ("512", "4Ti")),
                      (with_profile(cpuQuota="1500m", memoryQuota=0), ("1500m", "0")),
                      (with_profile(cpuQuota=MAX_CPU_QUOTA, memoryQuota=MAX_MEMORY_QUOTA), (MAX_CPU_QUOTA, MAX_MEMORY_QUOTA)),
                      (with_profile(cpuQuota=10_000_000, memoryQuota=100 * 2**50), ("10000000", str(100 * 2**50))),
                      (same, ("256", "2Ti"))):
        made = k.create(TAUCLUSTER, obj, dry_run=True)
        profile = parse_all(made["spec"]["profiles"])[0]
        assert (quotas(profile)["cpu"], quotas(profile)["memory"]) == want, made["spec"]["profiles"][0]
