"""A ProvisioningRequest and its PodTemplates turned into pods to place (fake_ca/request.py).

Everything malformed must come back as a RequestError whose reason and message end up in the
request's Provisioned/Failed condition, so every message is pinned exactly: it is what a user
reads with `kubectl describe provisioningrequest`.
"""

from __future__ import annotations

import copy

import pytest

from k8s.quantity import MAX_MILLI
from fake_ca.request import PodSet, Request, RequestError, gang_request, pod_requests, request_from_objects

TPL = "ppt-job-x-gpu-1-main"
GI = 2**30 * 1000
SEL = {"agentpool": "gpupool"}
TOL = [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]


def template(name=TPL, **spec_fields) -> dict:
    spec = {"restartPolicy": "Never",
            "containers": [{"name": "main", "resources": {"requests": {"cpu": "8", "memory": "64Gi",
                                                                       "nvidia.com/gpu": "8"}}}]}
    spec.update(spec_fields)
    return {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": name, "namespace": "demo"},
            "template": {"metadata": {"labels": {"kueue.x-k8s.io/managed": "true"}}, "spec": spec}}


def provreq(*podsets, **spec_fields) -> dict:
    spec = {"provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
            "podSets": [{"podTemplateRef": {"name": t}, "count": c} for t, c in podsets or [(TPL, 2)]]}
    spec.update(spec_fields)
    return {"apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
            "metadata": {"name": "job-x-gpu-1", "namespace": "demo", "uid": "uid-x"}, "spec": spec}


def error(pr, templates=None) -> tuple[str, str]:
    with pytest.raises(RequestError) as e:
        request_from_objects(pr, {TPL: template()} if templates is None else templates)
    assert str(e.value) == e.value.message
    return e.value.reason, e.value.message


def with_spec(**spec_fields) -> dict:
    return {TPL: template(**spec_fields)}


# ---------------------------------------------------------------------------- the request itself

def test_a_well_formed_request():
    req = request_from_objects(provreq((TPL, 2), ("ppt-b", 1), parameters={"noRetry": "true"}),
                               {TPL: template(nodeSelector=SEL, tolerations=TOL), "ppt-b": template("ppt-b")})
    assert req == Request("demo", "job-x-gpu-1", "uid-x", "best-effort-atomic-scale-up.autoscaling.x-k8s.io", [
        PodSet(TPL, 2, {"cpu": 8000, "memory": 64 * GI, "nvidia.com/gpu": 8000}, SEL, TOL, [], False),
        PodSet("ppt-b", 1, {"cpu": 8000, "memory": 64 * GI, "nvidia.com/gpu": 8000}, {}, [], [], False)],
        {"noRetry": "true"})
    assert [ps.template_name for ps in req.expand()] == [TPL, TPL, "ppt-b"]
    assert req.key == "demo/job-x-gpu-1" and not req.topology


def test_defaults_for_what_a_request_may_leave_out():
    pr = provreq()
    del pr["metadata"]["namespace"], pr["metadata"]["uid"], pr["spec"]["provisioningClassName"]
    tpl = template()
    del tpl["metadata"]["namespace"]
    req = request_from_objects(pr, {TPL: tpl})
    assert (req.namespace, req.uid, req.class_name, req.parameters, req.key) == ("default", "", "", {},
                                                                                "default/job-x-gpu-1")


def test_the_api_limit_of_32_pod_sets():
    templates = {f"t{i}": template(f"t{i}") for i in range(33)}
    assert len(request_from_objects(provreq(*[(f"t{i}", 1) for i in range(32)]), templates).podsets) == 32
    assert error(provreq(*[(f"t{i}", 1) for i in range(33)]), templates) == (
        "InvalidProvisioningRequest", "spec.podSets: at most 32 pod sets are allowed (got 33)")


def _set(path, value):
    def mutate(pr):
        *head, last = path
        target = pr
        for key in head:
            target = target[key]
        if value is KeyError:
            del target[last]
        else:
            target[last] = value
    return mutate


@pytest.mark.parametrize("mutate, message", [
    (lambda pr: "not a mapping", "the ProvisioningRequest must be a mapping"),
    (_set(["metadata"], KeyError), "metadata.name: is required"),
    (_set(["metadata", "name"], ""), "metadata.name: is required"),
    (_set(["metadata", "name"], 7), "metadata.name: is required"),
    (_set(["metadata", "namespace"], 7), "metadata.namespace: must be a string"),
    (_set(["spec"], KeyError), "spec: is required"),
    (_set(["spec"], "x"), "spec: is required"),
    (_set(["spec", "provisioningClassName"], 7), "spec.provisioningClassName: must be a string"),
    (_set(["spec", "podSets"], []), "spec.podSets: must list at least one pod set"),
    (_set(["spec", "podSets"], {"a": 1}), "spec.podSets: must list at least one pod set"),
    (_set(["spec", "podSets", 0], "ppt"), "spec.podSets[0].podTemplateRef.name: is required"),
    (_set(["spec", "podSets", 0, "podTemplateRef"], "ppt"), "spec.podSets[0].podTemplateRef.name: is required"),
    (_set(["spec", "podSets", 0, "podTemplateRef", "name"], ""), "spec.podSets[0].podTemplateRef.name: is required"),
    (_set(["spec", "podSets", 0, "podTemplateRef", "name"], 7), "spec.podSets[0].podTemplateRef.name: is required"),
    (_set(["spec", "podSets", 0, "count"], 0), "spec.podSets[0].count: must be an integer >= 1 (got 0)"),
    (_set(["spec", "podSets", 0, "count"], True), "spec.podSets[0].count: must be an integer >= 1 (got True)"),
    (_set(["spec", "podSets", 0, "count"], "2"), "spec.podSets[0].count: must be an integer >= 1 (got '2')"),
    (_set(["spec", "parameters"], {"noRetry": True}), "spec.parameters: must map strings to strings"),
    (_set(["spec", "parameters"], ["noRetry"]), "spec.parameters: must map strings to strings"),
])
def test_malformed_requests_are_invalid_and_say_where(mutate, message):
    pr = provreq()
    pr = mutate(pr) or pr
    assert error(pr) == ("InvalidProvisioningRequest", message)


# ---------------------------------------------------------------------------- its pod templates

def tpl_error(templates) -> str:
    reason, message = error(provreq(), templates)
    assert reason == "FailedToCreatePods"
    return message


def test_a_template_that_is_not_an_object():
    assert tpl_error({TPL: "junk"}) == f"pod template {TPL}: must be a PodTemplate object"


@pytest.mark.parametrize("mutate", [lambda t: t.pop("template"), lambda t: t.update(template="x"),
                                    lambda t: t["template"].pop("spec"), lambda t: t["template"].update(spec=[])])
def test_a_template_without_a_pod_spec(mutate):
    t = template()
    mutate(t)
    assert tpl_error({TPL: t}) == f"pod template {TPL}: template.spec is missing"


def test_unreadable_metadata_reads_as_empty():
    t = template()
    t["metadata"] = "junk"
    t["template"]["metadata"] = "junk"
    [ps] = request_from_objects(provreq((TPL, 1)), {TPL: t}).podsets
    assert ps.requests["nvidia.com/gpu"] == 8000 and not ps.topology


def test_template_labels_must_be_a_mapping_and_mark_topology():
    t = template()
    t["template"]["metadata"]["labels"] = ["topology"]
    assert tpl_error({TPL: t}) == f"pod template {TPL}: template.metadata.labels: must be a mapping"
    t["template"]["metadata"]["labels"] = {"topology.tau-demo.io/level": "domain"}
    assert request_from_objects(provreq(), {TPL: t}).topology
    t["template"]["metadata"]["labels"] = {"topology.tau-demo.io/level": ""}
    assert not request_from_objects(provreq(), {TPL: t}).topology


AFF = "template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"


def affinity(*terms):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def expr(key, op, *values, fields=False):
    r = {"key": key, "operator": op}
    if values:
        r["values"] = list(values)
    return {"matchFields" if fields else "matchExpressions": [r]}


@pytest.mark.parametrize("spec_fields, message", [
    ({"nodeSelector": {"agentpool": 1}}, "template.spec.nodeSelector: must map strings to strings"),
    ({"nodeSelector": ["agentpool"]}, "template.spec.nodeSelector: must map strings to strings"),
    ({"tolerations": {"key": "sku"}}, "template.spec.tolerations: must be a list"),
    ({"tolerations": ["sku"]}, "template.spec.tolerations[0]: must be a mapping"),
    ({"tolerations": [{"key": "sku", "operator": "Sometimes"}]},
     "template.spec.tolerations[0].operator: must be Equal or Exists (got 'Sometimes')"),
    ({"tolerations": TOL + [{"key": 7, "value": "gpu"}]}, "template.spec.tolerations[1]: key and value must be strings"),
    ({"tolerations": [{"key": "sku", "value": 7}]}, "template.spec.tolerations[0]: key and value must be strings"),
    ({"tolerations": [{"key": "sku", "operator": "Exists", "value": "gpu"}]},
     "template.spec.tolerations[0].value: must be empty when operator is Exists"),
    ({"tolerations": [{"operator": "Equal", "value": "gpu"}]},
     "template.spec.tolerations[0].key: an empty key needs operator Exists"),
    ({"tolerations": [{"value": "gpu"}]}, "template.spec.tolerations[0].key: an empty key needs operator Exists"),
    ({"tolerations": [{"key": "sku", "effect": "Never"}]},
     "template.spec.tolerations[0].effect: must be NoSchedule, PreferNoSchedule or NoExecute (got 'Never')"),
    ({"affinity": "x"}, "template.spec.affinity: must be a mapping"),
    ({"affinity": {"nodeAffinity": "x"}}, "template.spec.affinity.nodeAffinity: must be a mapping"),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": "x"}}},
     f"{AFF}: must be a non-empty list"),
    ({"affinity": affinity()}, f"{AFF}: must be a non-empty list"),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": "x"}}}},
     f"{AFF}: must be a non-empty list"),
    ({"affinity": affinity("x")}, f"{AFF}[0]: must be a mapping"),
    ({"affinity": affinity({"matchExpressions": "x"})}, f"{AFF}[0].matchExpressions: must be a list"),
    ({"affinity": affinity({"matchFields": "x"})}, f"{AFF}[0].matchFields: must be a list"),
    ({"affinity": affinity({"matchExpressions": ["x"]})}, f"{AFF}[0].matchExpressions[0]: must be a mapping with a key"),
    ({"affinity": affinity(expr("", "Exists"))}, f"{AFF}[0].matchExpressions[0]: must be a mapping with a key"),
    ({"affinity": affinity(expr(7, "Exists"))}, f"{AFF}[0].matchExpressions[0]: must be a mapping with a key"),
    ({"affinity": affinity(expr("a", "Near", "b"))}, f"{AFF}[0].matchExpressions[0].operator: unsupported operator 'Near'"),
    ({"affinity": affinity(expr("metadata.name", "Exists", fields=True))},
     f"{AFF}[0].matchFields[0].operator: unsupported operator 'Exists'"),
    ({"affinity": affinity(expr("metadata.name", "Gt", "1", fields=True))},
     f"{AFF}[0].matchFields[0].operator: unsupported operator 'Gt'"),
    ({"affinity": affinity({"matchExpressions": [{"key": "a", "operator": "In", "values": "abc"}]})},
     f"{AFF}[0].matchExpressions[0].values: must be a list of strings"),
    ({"affinity": affinity(expr("a", "In", 1))}, f"{AFF}[0].matchExpressions[0].values: must be a list of strings"),
    ({"affinity": affinity(expr("a", "In"))}, f"{AFF}[0].matchExpressions[0].values: must not be empty for In"),
    ({"affinity": affinity(expr("a", "NotIn"))}, f"{AFF}[0].matchExpressions[0].values: must not be empty for NotIn"),
    ({"affinity": affinity(expr("a", "Exists", "b"))}, f"{AFF}[0].matchExpressions[0].values: must be empty for Exists"),
    ({"affinity": affinity(expr("a", "DoesNotExist", "b"))},
     f"{AFF}[0].matchExpressions[0].values: must be empty for DoesNotExist"),
    ({"affinity": affinity(expr("a", "Gt", "1", "2"))}, f"{AFF}[0].matchExpressions[0].values: Gt needs exactly one integer value"),
    ({"affinity": affinity(expr("a", "Gt"))}, f"{AFF}[0].matchExpressions[0].values: Gt needs exactly one integer value"),
    ({"affinity": affinity(expr("a", "Lt", "x"))}, f"{AFF}[0].matchExpressions[0].values: Lt needs exactly one integer value"),
    ({"affinity": affinity(expr("a", "In", "b"), expr("metadata.name", "In", fields=True))},
     f"{AFF}[1].matchFields[0].values: must not be empty for In"),
    ({"containers": []}, "template.spec.containers: must list at least one container"),
])
def test_malformed_pod_specs_fail_to_create_pods_and_say_where(spec_fields, message):
    assert tpl_error(with_spec(**spec_fields)) == f"pod template {TPL}: {message}"


@pytest.mark.parametrize("spec_fields", [
    {"tolerations": [{"operator": "Exists"}]},                                     # tolerates every taint
    {"tolerations": [{"key": "sku", "operator": "Exists", "effect": "PreferNoSchedule"}]},
    {"tolerations": [{"key": "sku", "value": "gpu", "effect": "NoExecute", "tolerationSeconds": 5}]},
    {"affinity": {}},
    {"affinity": {"nodeAffinity": {}}},
    {"affinity": affinity(expr("a", "In", "b"), expr("a", "NotIn", "b"), expr("a", "Exists"), expr("a", "DoesNotExist"),
                          expr("a", "Gt", "5"), expr("a", "Lt", "-5"), expr("metadata.name", "NotIn", "n1", fields=True))},
])
def test_well_formed_scheduling_constraints_are_kept(spec_fields):
    [ps] = request_from_objects(provreq((TPL, 1)), with_spec(**spec_fields)).podsets
    assert ps.tolerations == spec_fields.get("tolerations", [])
    terms = (((spec_fields.get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms", [])
    assert ps.required_terms == terms


def test_the_podset_keeps_copies_of_the_templates_constraints():
    templates = with_spec(nodeSelector=dict(SEL), tolerations=copy.deepcopy(TOL))
    [ps] = request_from_objects(provreq(), templates).podsets
    ps.node_selector["x"] = "y"
    ps.tolerations.append({"operator": "Exists"})
    assert templates[TPL]["template"]["spec"]["nodeSelector"] == SEL
    assert templates[TPL]["template"]["spec"]["tolerations"] == TOL


# ---------------------------------------------------------------------------- effective pod requests

def containers(*requests, kind="requests"):
    return [{"name": f"c{i}", "resources": {kind: r}} for i, r in enumerate(requests)]


@pytest.mark.parametrize("spec, message", [
    ("x", "spec: must be a mapping"),
    ({}, "spec.containers: must list at least one container"),
    ({"containers": "c"}, "spec.containers: must list at least one container"),
    ({"containers": ["c"]}, "spec.containers[0]: must be a mapping"),
    ({"containers": [{"resources": "x"}]}, "spec.containers[0].resources: must be a mapping"),
    ({"containers": [{"resources": {"limits": ["cpu"]}}]}, "spec.containers[0].resources.limits: must be a mapping"),
    ({"containers": [{"resources": {"requests": {7: "1"}}}]},
     "spec.containers[0].resources.requests: resource names must be strings"),
    ({"containers": [{"resources": {"requests": {"": "1"}}}]},
     "spec.containers[0].resources.requests: resource names must be strings"),
    ({"containers": containers({"cpu": "1"}, {"cpu": "lots"})},
     "spec.containers[1].resources.requests.cpu: invalid quantity 'lots': expected a number with an optional suffix "
     "or exponent, e.g. 500m, 2, 1.5, 900Gi, 2e3"),
    ({"containers": containers({"cpu": "-1"})}, "spec.containers[0].resources.requests.cpu: must not be negative (got -1)"),
    ({"containers": containers({"cpu": "1e16"})}, "spec.containers[0].resources.requests.cpu: 1e16 is absurdly large"),
    ({"containers": containers({"cpu": "1"}), "initContainers": "x"}, "spec.initContainers: must be a list"),
    ({"containers": containers({"cpu": "1"}), "initContainers": ["x"]}, "spec.initContainers[0]: must be a mapping"),
    ({"containers": containers({"cpu": "1"}), "initContainers": containers({}, {"cpu": "x"})},
     "spec.initContainers[1].resources.requests.cpu: invalid quantity 'x': expected a number with an optional suffix "
     "or exponent, e.g. 500m, 2, 1.5, 900Gi, 2e3"),
    ({"containers": containers({"cpu": "1"}), "overhead": ["cpu"]}, "spec.overhead: must be a mapping"),
    ({"containers": containers({"cpu": "1"}), "overhead": {"cpu": "-1"}}, "spec.overhead.cpu: must not be negative (got -1)"),
    ({"containers": containers({"cpu": "9223372036854775000m"}, {"cpu": "808m"})},
     "spec: the pod's total cpu request is absurdly large"),
])
def test_malformed_pod_specs_say_where(spec, message):
    with pytest.raises(ValueError) as e:
        pod_requests(spec)
    assert str(e.value) == message


def test_requests_up_to_the_int64_limit_are_fine():
    assert pod_requests({"containers": containers({"cpu": f"{MAX_MILLI}m"})}) == {"cpu": MAX_MILLI}
    assert pod_requests({"containers": containers({"cpu": "9223372036854775000m"}, {"cpu": "807m"})}) == {"cpu": MAX_MILLI}
    assert pod_requests({"containers": containers({"cpu": "0"})}) == {"cpu": 0}


def test_a_limit_without_a_request_is_the_request():
    spec = {"containers": [{"resources": {"limits": {"cpu": "2", "nvidia.com/gpu": "4"}, "requests": {"cpu": "1"}}}]}
    assert pod_requests(spec) == {"cpu": 1000, "nvidia.com/gpu": 4000}


def test_init_containers_run_before_the_containers_beside_the_sidecars_started_before_them():
    spec = {"containers": containers({"cpu": "1"}),
            "initContainers": [{"name": "setup", "resources": {"requests": {"cpu": "2", "ephemeral-storage": "0"}}},
                               {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
                               {"name": "warm", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}
    # containers 1 + sidecar 0.5 = 1.5; setup alone 2; warm beside the sidecar 1.5 -> cpu 2, memory 1Gi
    assert pod_requests(spec) == {"cpu": 2000, "ephemeral-storage": 0, "memory": GI}


def test_overhead_is_added():
    assert pod_requests({"containers": containers({"cpu": "1"}), "overhead": {"cpu": "250m", "memory": "1Gi"}}) == \
        {"cpu": 1250, "memory": GI}


# ---------------------------------------------------------------------------- synthetic gangs

def test_gang_request_is_one_podset_of_identical_pods():
    req = gang_request(2, 8, node_selector=SEL, tolerations=TOL)
    assert req == Request("", "", "", "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
                          [PodSet("main", 2, {"cpu": 8000, "memory": 64 * GI, "nvidia.com/gpu": 8000}, SEL, TOL, [], False)],
                          {})
    assert gang_request(1, 0, cpu="500m", memory="1Gi").podsets[0].requests == \
        {"cpu": 500, "memory": GI}


@pytest.mark.parametrize("kwargs, message", [
    ({"count": 0}, "count must be an integer >= 1 (got 0)"),
    ({"count": True}, "count must be an integer >= 1 (got True)"),
    ({"count": "2"}, "count must be an integer >= 1 (got '2')"),
    ({"gpus_per_pod": -1}, "gpus per pod must be a non-negative integer (got -1)"),
    ({"gpus_per_pod": True}, "gpus per pod must be a non-negative integer (got True)"),
    ({"gpus_per_pod": "8"}, "gpus per pod must be a non-negative integer (got '8')"),
    ({"gpus_per_pod": 10**17}, "nvidia.com/gpu: 100000000000000000 is absurdly large"),
    ({"cpu": "lots"}, "cpu: invalid quantity 'lots': expected a number with an optional suffix or exponent, "
                      "e.g. 500m, 2, 1.5, 900Gi, 2e3"),
    ({"memory": "-1Gi"}, "memory: must not be negative (got -1Gi)"),
    ({"tolerations": [{"key": "sku", "operator": "Maybe"}]},
     "tolerations[0].operator: must be Equal or Exists (got 'Maybe')"),
    ({"node_selector": {"agentpool": 2}}, "nodeSelector must map strings to strings"),
])
def test_gang_request_refuses_bad_shapes(kwargs, message):
    args = {"count": 2, "gpus_per_pod": 8}
    args.update(kwargs)
    with pytest.raises(RequestError) as e:
        gang_request(**args)
    assert (e.value.reason, e.value.message) == ("FailedToCreatePods", message)


def test_the_requests_the_autoscaler_handles():
    from fake_ca.request import supported

    def req(cls, params=None):
        spec = {"provisioningClassName": cls}
        if params is not None:
            spec["parameters"] = params
        return {"spec": spec}
    assert supported(req("best-effort-atomic-scale-up.autoscaling.x-k8s.io"))
    assert supported(req("best-effort-atomic-scale-up.autoscaling.x-k8s.io", {"processorInstance": "x"}))
    assert supported(req("check-capacity.autoscaling.x-k8s.io"))
    assert supported(req("check-capacity.autoscaling.x-k8s.io", {"processorInstance": ""}))
    assert supported(req("check-capacity.autoscaling.x-k8s.io", "junk"))
    assert not supported(req("check-capacity.autoscaling.x-k8s.io", {"processorInstance": "other"}))
    assert not supported(req("queued-provisioning.gke.io"))
    assert not supported({"spec": "junk"}) and not supported({}) and not supported(None)
