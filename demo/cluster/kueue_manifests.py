"""Turn Kueue's rendered config/default into what a host-process Kueue needs.  Pure functions.

The rules follow kwok v0.8.0's own recipe for running upstream Kueue outside the cluster
(pkg/kwokctl/components/kueue_manifest.go), adapted to a process on loopback:

* Deployment, ConfigMap, Secret, RBAC and Services are dropped: Kueue runs as a host
  process with the cluster-admin client certificate, and the apiserver reaches its
  webhooks through `clientConfig.url: https://127.0.0.1:<port><path>` (the admin
  serving certificate carries the IP SAN 127.0.0.1) with the cluster CA as caBundle.
* The visibility APIServices are dropped (VisibilityOnDemand is off): an unavailable
  aggregated API breaks discovery, which stalls namespace deletion and garbage collection.
* Webhooks are kept only for the objects the demo uses (batch Jobs and Kueue's own
  kinds).  The pod/deployment/statefulset webhooks select every Pod in most namespaces
  with failurePolicy Fail, so they would block all pod creation whenever Kueue is down;
  the other frameworks are not enabled, so their paths are not served.
* Phase 1 (namespace + CRDs) is applied before Kueue starts; phase 2 (webhook
  configurations) only once Kueue's /readyz answers.
"""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass

import yaml

from k8s.keys import KUEUE_NAMESPACE
from k8s.manifests import ManifestError
KEPT_WEBHOOK_GROUPS = {"batch", "kueue.x-k8s.io"}
DROPPED_KINDS = {"Deployment", "ConfigMap", "Secret", "ServiceAccount", "Role", "ClusterRole",
                 "RoleBinding", "ClusterRoleBinding", "APIService", "Service"}


@dataclass
class Plan:
    phase1: list[dict]            # Namespace and CRDs
    webhooks: list[dict]          # Mutating/ValidatingWebhookConfigurations
    manager_config: dict          # upstream controller_manager_config.yaml, as published in the ConfigMap
    dropped_webhooks: list[str]


def _url_client_config(cc: dict, ca_b64: str, port: int) -> dict:
    svc = cc.get("service") or {}
    path = svc.get("path", "/")
    return {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_b64}


def _webhook_groups(webhook: dict) -> set[str]:
    groups: set[str] = set()
    for rule in webhook.get("rules") or []:
        groups.update(rule.get("apiGroups") or [""])
    return groups


def install_plan(docs: list[dict], ca_pem: bytes, webhook_port: int) -> Plan:
    ca_b64 = base64.b64encode(ca_pem).decode()
    phase1: list[dict] = []
    hooks: list[dict] = []
    dropped: list[str] = []
    manager_config = None
    for d in docs:
        if not d:
            continue
        kind = d.get("kind")
        name = d.get("metadata", {}).get("name", "?")
        if kind == "ConfigMap" and name == "kueue-manager-config":
            manager_config = yaml.safe_load(d["data"]["controller_manager_config.yaml"])
            continue
        if kind in DROPPED_KINDS:
            continue
        d = copy.deepcopy(d)
        if kind == "CustomResourceDefinition":
            conv = d.get("spec", {}).get("conversion") or {}
            if conv.get("strategy") == "Webhook":
                wh = conv.setdefault("webhook", {})
                wh["clientConfig"] = _url_client_config(wh.get("clientConfig") or {}, ca_b64, webhook_port)
            phase1.append(d)
        elif kind == "Namespace":
            phase1.insert(0, d)
        elif kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            kept = []
            for w in d.get("webhooks") or []:
                if _webhook_groups(w) <= KEPT_WEBHOOK_GROUPS:
                    w["clientConfig"] = _url_client_config(w.get("clientConfig") or {}, ca_b64, webhook_port)
                    kept.append(w)
                else:
                    dropped.append(w.get("name", "?"))
            d["webhooks"] = kept
            hooks.append(d)
        else:
            raise ManifestError(f"unexpected {kind} {name} in Kueue's config/default: no rule for it")
    if manager_config is None:
        raise ManifestError("Kueue's config/default has no ConfigMap kueue-manager-config")
    if not any(d.get("kind") == "Namespace" for d in phase1):
        raise ManifestError("Kueue's config/default has no Namespace")
    return Plan(phase1, hooks, manager_config, dropped)


# Kueue's waitForPodsReady at demo scale (default: 30m, backoff base 60s): an admitted Workload whose
# pods are not all Ready this long after admission is evicted (PodsReadyTimeout) and requeued, without
# limit (backoffLimitCount null).  Long enough for a VM to boot (the pool's bootSeconds) and the pods
# to start; the "nodes never boot" scenario shows it evicting.
WAIT_FOR_PODS_READY = {"timeout": "45s", "blockAdmission": False,
                       "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 5, "backoffMaxSeconds": 60}}


def demo_settings(cfg: dict) -> dict:
    """The demo's Kueue settings, the same on both backends."""
    out = copy.deepcopy(cfg)
    out["waitForPodsReady"] = copy.deepcopy(WAIT_FOR_PODS_READY)
    return out


def release_docs_with_demo_settings(docs: list[dict]) -> list[dict]:
    """Kueue's release manifests (kind backend) with demo_settings() in its manager ConfigMap."""
    out = []
    for d in docs:
        if d.get("kind") == "ConfigMap" and (d.get("metadata") or {}).get("name") == "kueue-manager-config":
            d = copy.deepcopy(d)
            cfg = yaml.safe_load(d["data"]["controller_manager_config.yaml"])
            d["data"]["controller_manager_config.yaml"] = yaml.safe_dump(demo_settings(cfg), sort_keys=False)
        out.append(d)
    return out


def manager_config(upstream: dict, *, webhook_port: int, health_port: int, cert_dir: str,
                   metrics_port: int | None = None) -> dict:
    """Upstream manager config with the changes a host process needs (kwok v0.8.0's pkg/kwokctl/components/kueue_config.go).
    With metrics_port, Kueue serves its metrics (HTTPS; a bearer token checked by TokenReview and a
    SubjectAccessReview for GET /metrics) on loopback; without, none (bindAddress "0")."""
    cfg = demo_settings(upstream)
    cfg["namespace"] = KUEUE_NAMESPACE
    cfg["health"] = {"healthProbeBindAddress": f"127.0.0.1:{health_port}"}
    cfg["metrics"] = {"bindAddress": "0" if metrics_port is None else f"127.0.0.1:{metrics_port}"}
    cfg["webhook"] = {"port": webhook_port, "host": "127.0.0.1", "certDir": cert_dir}
    cfg["leaderElection"] = {"leaderElect": False}
    cfg["internalCertManagement"] = {"enable": False}
    cfg["featureGates"] = {"VisibilityOnDemand": False}
    cfg["integrations"] = {"frameworks": ["batch/job"]}
    return cfg
