"""k8s/crd.py: when a CRD can be used by a client that starts now.  The documents' shapes are those a kwokctl
cluster's kube-apiserver v1.36.3 answered (Kueue's CRDs, read at /apis and /apis/kueue.x-k8s.io/v1beta2)."""

from __future__ import annotations

import pytest

from k8s import crd

AGG = crd.AGGREGATED_DISCOVERY


def a_crd(plural="workloads", group="kueue.x-k8s.io", versions=(("v1beta2", True), ("v1beta1", True)),
          established="True"):
    c = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
         "metadata": {"name": f"{plural}.{group}"},
         "spec": {"group": group, "names": {"plural": plural, "kind": plural.title()[:-1]},
                  "versions": [{"name": v, "served": s, "storage": i == 0} for i, (v, s) in enumerate(versions)]}}
    if established is not None:
        c["status"] = {"conditions": [{"type": "NamesAccepted", "status": "True"},
                                      {"type": "Established", "status": established}]}
    return c


def aggregated(*entries):
    """An APIGroupDiscoveryList holding (group, version, plural) entries."""
    groups: dict = {}
    for g, v, r in entries:
        versions = groups.setdefault(g, {})
        versions.setdefault(v, []).append({"resource": r, "scope": "Namespaced", "verbs": ["get", "list"]})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
            "items": [{"metadata": {"name": g}, "versions": [{"version": v, "resources": rs} for v, rs in vs.items()]}
                      for g, vs in groups.items()]}


def plain_groups(*group_versions):
    groups: dict = {}
    for g, v in group_versions:
        groups.setdefault(g, []).append({"groupVersion": f"{g}/{v}", "version": v})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [{"name": g, "versions": vs} for g, vs in groups.items()]}


def resource_list(*plurals):
    return {"kind": "APIResourceList", "resources": [{"name": p, "namespaced": True, "kind": "X"} for p in plurals]}


WL_BOTH = {"/apis/kueue.x-k8s.io/v1beta2": resource_list("localqueues", "workloads", "workloads/status"),
           "/apis/kueue.x-k8s.io/v1beta1": resource_list("workloads")}
AGG_BOTH = aggregated(("kueue.x-k8s.io", "v1beta2", "workloads"), ("kueue.x-k8s.io", "v1beta1", "workloads"))


@pytest.mark.parametrize("status, want", [("True", True), ("False", False), (None, False)])
def test_established_is_the_condition_the_apiserver_wrote(status, want):
    assert crd.established(a_crd(established=status)) is want


def test_nothing_is_established():
    assert crd.established(None) is False


def test_served_lists_each_served_version_with_its_group_and_plural():
    c = a_crd(versions=(("v1beta2", True), ("v1beta1", False), ("v1alpha1", True)))
    assert crd.served(c) == [("kueue.x-k8s.io", "v1beta2", "workloads"), ("kueue.x-k8s.io", "v1alpha1", "workloads")]


@pytest.mark.parametrize("broken", [
    {}, {"spec": {"names": {"plural": "x"}, "versions": [{"name": "v1", "served": True}]}},
    {"spec": {"group": "g", "names": {}, "versions": [{"name": "v1", "served": True}]}},
    {"spec": {"group": "g", "names": {"plural": "x"}, "versions": [{"served": True}, "v1", None]}},
])
def test_a_malformed_crd_serves_nothing(broken):
    assert crd.served(broken) == []


def test_the_version_path_is_the_group_versions_resource_list():
    assert crd.version_path("kueue.x-k8s.io", "v1beta2") == "/apis/kueue.x-k8s.io/v1beta2"


def test_no_gap_once_both_discovery_documents_list_every_served_version():
    assert crd.discovery_gaps([a_crd()], AGG_BOTH, WL_BOTH) == []


def test_no_gap_with_the_plain_group_list_either():
    groups = plain_groups(("kueue.x-k8s.io", "v1beta2"), ("kueue.x-k8s.io", "v1beta1"))
    assert crd.discovery_gaps([a_crd()], groups, WL_BOTH) == []


def test_a_version_missing_from_the_aggregated_document_is_a_gap_even_when_its_own_list_has_it():
    """What Kueue met: the kind is served, its group version not yet in the document client-go reads first."""
    agg = aggregated(("kueue.x-k8s.io", "v1beta1", "workloads"))
    assert crd.discovery_gaps([a_crd()], agg, WL_BOTH) == [
        "workloads.kueue.x-k8s.io/v1beta2: not in the aggregated discovery at /apis"]


def test_another_kind_of_the_same_group_version_in_the_aggregated_document_is_not_this_one():
    agg = aggregated(("kueue.x-k8s.io", "v1beta2", "localqueues"), ("kueue.x-k8s.io", "v1beta1", "workloads"))
    assert crd.discovery_gaps([a_crd()], agg, WL_BOTH) == [
        "workloads.kueue.x-k8s.io/v1beta2: not in the aggregated discovery at /apis"]


def test_the_same_plural_in_another_group_is_not_this_one():
    agg = aggregated(("other.example.com", "v1beta2", "workloads"), ("kueue.x-k8s.io", "v1beta1", "workloads"))
    assert crd.discovery_gaps([a_crd()], agg, WL_BOTH) == [
        "workloads.kueue.x-k8s.io/v1beta2: not in the aggregated discovery at /apis"]


def test_a_group_version_missing_from_the_plain_group_list_is_a_gap():
    groups = plain_groups(("kueue.x-k8s.io", "v1beta1"), ("other.example.com", "v1beta2"))
    assert crd.discovery_gaps([a_crd()], groups, WL_BOTH) == [
        "workloads.kueue.x-k8s.io/v1beta2: kueue.x-k8s.io/v1beta2 not in the group list at /apis"]


@pytest.mark.parametrize("v1beta2", [None, resource_list("localqueues", "workloads/status"), {"kind": "Status"},
                                     {"resources": "workloads"}])
def test_a_version_whose_own_resource_list_lacks_the_plural_is_a_gap(v1beta2):
    """The second step: ServerResourcesForGroupVersion.  Missing, another kind, only a subresource, malformed."""
    versions = dict(WL_BOTH, **{"/apis/kueue.x-k8s.io/v1beta2": v1beta2})
    assert crd.discovery_gaps([a_crd()], AGG_BOTH, versions) == [
        "workloads.kueue.x-k8s.io/v1beta2: not in /apis/kueue.x-k8s.io/v1beta2"]


def test_every_gap_of_every_crd_is_named_in_the_crds_order():
    cq = a_crd("clusterqueues", versions=(("v1beta2", True),))
    assert crd.discovery_gaps([a_crd(), cq], aggregated(), {}) == [
        "workloads.kueue.x-k8s.io/v1beta2: not in the aggregated discovery at /apis",
        "workloads.kueue.x-k8s.io/v1beta1: not in the aggregated discovery at /apis",
        "clusterqueues.kueue.x-k8s.io/v1beta2: not in the aggregated discovery at /apis"]


@pytest.mark.parametrize("groups", [None, {}, [], {"kind": "APIGroupDiscoveryList", "items": "x"},
                                    {"kind": "APIGroupDiscoveryList", "items": [None, {"versions": [None, {}]}]},
                                    {"kind": "APIGroupList", "groups": [None, {"name": "kueue.x-k8s.io", "versions": "v"}]}])
def test_an_empty_or_malformed_group_document_lists_nothing(groups):
    gaps = crd.discovery_gaps([a_crd(versions=(("v1beta2", True),))], groups, WL_BOTH)
    assert len(gaps) == 1 and gaps[0].startswith("workloads.kueue.x-k8s.io/v1beta2: ")


def test_a_crd_that_serves_nothing_has_no_gap():
    assert crd.discovery_gaps([a_crd(versions=(("v1", False),))], None, {}) == []


def test_the_aggregated_accept_header_asks_for_v2_and_takes_plain_json_too():
    assert crd.AGGREGATED_DISCOVERY.split(",") == [
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", "application/json"]
