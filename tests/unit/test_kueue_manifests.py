"""Kueue's config/default turned into what a host-process Kueue needs (demo/cluster/kueue_manifests.py),
on the recorded config/default of Kueue v0.19.2."""

from __future__ import annotations

import base64
import copy
from pathlib import Path

import pytest
import yaml

from k8s.manifests import ManifestError
from demo.cluster.kueue_manifests import (demo_settings, manager_config, install_plan,
                                          release_docs_with_demo_settings)

RECORDED = Path(__file__).parent / "recorded" / "kueue-config-default.yaml"
DOCS = [d for d in yaml.safe_load_all(RECORDED.read_text()) if d]
CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
CA_B64 = base64.b64encode(CA).decode()
PORT = 19443


def by_name(docs):
    return {d["metadata"]["name"]: d for d in docs}


def original(kind, name):
    return next(d for d in DOCS if d["kind"] == kind and d["metadata"]["name"] == name)


def test_phase_one_is_the_namespace_first_then_every_crd_in_order():
    p = install_plan(DOCS, CA, PORT)
    assert [(d["kind"], d["metadata"]["name"]) for d in p.phase1] == [("Namespace", "kueue-system")] + [
        ("CustomResourceDefinition", f"{n}.kueue.x-k8s.io") for n in (
            "admissionchecks", "clusterqueues", "cohorts", "localqueues", "multikueueclusters", "multikueueconfigs",
            "provisioningrequestconfigs", "resourceflavors", "topologies", "workloadpriorityclasses", "workloads")]


def test_conversion_webhooks_of_crds_reach_kueue_on_loopback_with_the_cluster_ca():
    crds = by_name(install_plan(DOCS, CA, PORT).phase1)
    conv = crds["workloads.kueue.x-k8s.io"]["spec"]["conversion"]
    assert conv == {"strategy": "Webhook", "webhook": {
        "clientConfig": {"url": f"https://127.0.0.1:{PORT}/convert", "caBundle": CA_B64},
        "conversionReviewVersions": ["v1"]}}
    # a CRD without a conversion webhook is passed through as it is
    assert crds["admissionchecks.kueue.x-k8s.io"] == original("CustomResourceDefinition", "admissionchecks.kueue.x-k8s.io")


def test_only_webhooks_for_jobs_and_kueues_own_kinds_are_kept_and_point_at_loopback():
    p = install_plan(DOCS, CA, PORT)
    assert [(h["kind"], [w["name"] for w in h["webhooks"]]) for h in p.webhooks] == [
        ("MutatingWebhookConfiguration", ["mclusterqueue.kb.io", "mjob.kb.io", "mresourceflavor.kb.io", "mworkload.kb.io"]),
        ("ValidatingWebhookConfiguration", ["vclusterqueue.kb.io", "vcohort.kb.io", "vjob.kb.io", "vresourceflavor.kb.io",
                                            "vworkload.kb.io"])]
    job_hook = p.webhooks[0]["webhooks"][1]
    assert job_hook["clientConfig"] == {"url": f"https://127.0.0.1:{PORT}/mutate-batch-v1-job", "caBundle": CA_B64}
    # everything else about the webhook is upstream's
    upstream = next(w for w in original("MutatingWebhookConfiguration", "kueue-mutating-webhook-configuration")["webhooks"]
                    if w["name"] == "mjob.kb.io")
    assert {k: v for k, v in job_hook.items() if k != "clientConfig"} == \
        {k: v for k, v in upstream.items() if k != "clientConfig"}
    # the pod webhook would block every pod in most namespaces while Kueue is down
    assert "mpod.kb.io" in p.dropped_webhooks and "vpod.kb.io" in p.dropped_webhooks
    assert len(p.dropped_webhooks) == 34 and "mjob.kb.io" not in p.dropped_webhooks


def test_the_upstream_manager_config_is_read_from_its_configmap():
    cfg = install_plan(DOCS, CA, PORT).manager_config
    assert cfg["kind"] == "Configuration" and cfg["webhook"] == {"port": 9443}
    assert cfg["integrations"]["frameworks"][0] == "batch/job"


def test_deployments_rbac_services_and_the_visibility_api_are_not_applied():
    p = install_plan(DOCS, CA, PORT)
    kinds = {d["kind"] for d in p.phase1 + p.webhooks}
    assert kinds == {"Namespace", "CustomResourceDefinition", "MutatingWebhookConfiguration",
                     "ValidatingWebhookConfiguration"}


def test_the_input_documents_are_not_changed():
    docs = copy.deepcopy(DOCS)
    install_plan(docs, CA, PORT)
    assert docs == DOCS


def test_empty_documents_are_skipped():
    p = install_plan([None, {}] + DOCS, CA, PORT)
    assert len(p.phase1) == 12


def test_a_webhook_without_a_service_path_goes_to_the_root_and_core_rules_are_dropped():
    hook = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "extra"},
            "webhooks": [{"name": "nopath.kb.io", "clientConfig": {"service": {"name": "s", "namespace": "n"}},
                          "rules": [{"apiGroups": ["batch"], "resources": ["jobs"]}]},
                         {"name": "noservice.kb.io", "clientConfig": {},
                          "rules": [{"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"]}]},
                         {"name": "core.kb.io", "clientConfig": {}, "rules": [{"resources": ["pods"]}]},
                         {"name": "mixed.kb.io", "clientConfig": {},
                          "rules": [{"apiGroups": ["batch"]}, {"apiGroups": ["apps"]}]},
                         {"name": "both.kb.io", "clientConfig": {},
                          "rules": [{"apiGroups": ["batch", "kueue.x-k8s.io"]}]},
                         {"clientConfig": {}, "rules": [{"apiGroups": ["apps"]}]}]}
    p = install_plan(DOCS + [hook], CA, PORT)
    extra = p.webhooks[-1]["webhooks"]
    assert [(w["name"], w["clientConfig"]["url"]) for w in extra] == [
        ("nopath.kb.io", f"https://127.0.0.1:{PORT}/"), ("noservice.kb.io", f"https://127.0.0.1:{PORT}/"),
        ("both.kb.io", f"https://127.0.0.1:{PORT}/")]
    assert p.dropped_webhooks[-3:] == ["core.kb.io", "mixed.kb.io", "?"]


def test_the_namespace_comes_first_wherever_it_is_in_the_input():
    docs = [d for d in DOCS if d["kind"] != "Namespace"] + [d for d in DOCS if d["kind"] == "Namespace"]
    p = install_plan(docs, CA, PORT)
    assert p.phase1[0]["kind"] == "Namespace" and [d["kind"] for d in p.phase1[1:]] == ["CustomResourceDefinition"] * 11


def test_crds_without_spec_or_without_webhook_settings():
    bare = {"kind": "CustomResourceDefinition", "metadata": {"name": "bare.example.com"}}
    convert = {"kind": "CustomResourceDefinition", "metadata": {"name": "convert.example.com"},
               "spec": {"conversion": {"strategy": "Webhook"}}}
    crds = by_name(install_plan(DOCS + [bare, convert], CA, PORT).phase1)
    assert crds["bare.example.com"] == bare
    assert crds["convert.example.com"]["spec"]["conversion"]["webhook"] == {
        "clientConfig": {"url": f"https://127.0.0.1:{PORT}/", "caBundle": CA_B64}}


def test_a_kind_without_a_rule_is_refused_by_name():
    with pytest.raises(ManifestError, match=r"^unexpected PriorityClass high in Kueue's config/default: no rule for it$"):
        install_plan(DOCS + [{"kind": "PriorityClass", "metadata": {"name": "high"}}], CA, PORT)
    with pytest.raises(ManifestError, match=r"^unexpected PriorityClass \? in Kueue's config/default"):
        install_plan(DOCS + [{"kind": "PriorityClass"}], CA, PORT)


def test_config_default_without_the_manager_config_or_the_namespace_is_refused():
    no_config = [d for d in DOCS if d["kind"] != "ConfigMap"]
    with pytest.raises(ManifestError, match=r"^Kueue's config/default has no ConfigMap kueue-manager-config$"):
        install_plan(no_config, CA, PORT)
    other_config = copy.deepcopy(DOCS)
    for d in other_config:
        if d["kind"] == "ConfigMap":
            d["metadata"]["name"] = "something-else"
    with pytest.raises(ManifestError, match="has no ConfigMap kueue-manager-config"):
        install_plan(other_config, CA, PORT)
    with pytest.raises(ManifestError, match=r"^Kueue's config/default has no Namespace$"):
        install_plan([d for d in DOCS if d["kind"] != "Namespace"], CA, PORT)


def test_manager_config_for_a_host_process():
    upstream = install_plan(DOCS, CA, PORT).manager_config
    before = copy.deepcopy(upstream)
    cfg = manager_config(upstream, webhook_port=PORT, health_port=18081, cert_dir="/state/kueue/certs")
    assert cfg == {**upstream,
                   "namespace": "kueue-system",
                   "health": {"healthProbeBindAddress": "127.0.0.1:18081"},
                   "metrics": {"bindAddress": "0"},
                   "webhook": {"port": PORT, "host": "127.0.0.1", "certDir": "/state/kueue/certs"},
                   "leaderElection": {"leaderElect": False},
                   "internalCertManagement": {"enable": False},
                   "featureGates": {"VisibilityOnDemand": False},
                   "integrations": {"frameworks": ["batch/job"]},
                   "waitForPodsReady": {"timeout": "45s", "blockAdmission": False,
                                        "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 5,
                                                              "backoffMaxSeconds": 60}}}
    assert cfg["clientConnection"] == {"qps": 300, "burst": 500}          # the rest stays upstream's
    cfg["clientConnection"]["qps"] = 1                                     # and is a copy
    assert upstream == before
    served = manager_config(upstream, webhook_port=PORT, health_port=18081, cert_dir="/c", metrics_port=18443)
    assert served["metrics"] == {"bindAddress": "127.0.0.1:18443"}                   # and nothing else changes
    assert {**served, "metrics": None} == {**manager_config(upstream, webhook_port=PORT, health_port=18081,
                                                            cert_dir="/c"), "metrics": None}


WAIT = {"timeout": "45s", "blockAdmission": False,
        "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 5, "backoffMaxSeconds": 60}}


def test_the_release_manifests_get_the_demo_settings_in_the_manager_configmap_only():
    """The kind backend applies Kueue's release manifests with the same settings as the host process."""
    other_cm = {"kind": "ConfigMap", "metadata": {"name": "other"}, "data": {"controller_manager_config.yaml": "a: 1\n"}}
    same_name = {"kind": "Secret", "metadata": {"name": "kueue-manager-config"}}
    docs = copy.deepcopy(DOCS) + [other_cm, same_name, {"kind": "ConfigMap"}]
    out = release_docs_with_demo_settings(docs)
    assert docs == DOCS + [other_cm, same_name, {"kind": "ConfigMap"}]                 # the input is not changed
    changed = [i for i, (a, b) in enumerate(zip(docs, out)) if a is not b]
    manager = original("ConfigMap", "kueue-manager-config")
    assert len(out) == len(docs) and changed == [docs.index(manager)]
    cm = out[changed[0]]
    text = cm["data"]["controller_manager_config.yaml"]
    assert {**cm, "data": {}} == {**manager, "data": {}}
    upstream = yaml.safe_load(manager["data"]["controller_manager_config.yaml"])
    assert yaml.safe_load(text) == {**upstream, "waitForPodsReady": WAIT}
    assert list(yaml.safe_load(text)) == list(upstream) + ["waitForPodsReady"]          # upstream's order, kept


def test_demo_settings_are_a_fresh_copy_every_time():
    first = demo_settings({"kind": "Configuration"})
    first["waitForPodsReady"]["requeuingStrategy"]["backoffMaxSeconds"] = 1
    assert demo_settings({"kind": "Configuration"}) == {"kind": "Configuration", "waitForPodsReady": WAIT}
