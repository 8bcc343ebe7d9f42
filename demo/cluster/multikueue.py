"""MultiKueue on one machine (issue 21), as pure functions over plain data: the names of the three clusters, a
worker's kubeconfig with everything embedded (what Kueue v0.19.2 accepts), the manager's MultiKueue objects (a
Secret and a MultiKueueCluster per worker, the MultiKueueConfig, the AdmissionCheck of controller
kueue.x-k8s.io/multikueue), the manager's version of the demo's Kueue objects, each worker's own pool table, and
what `cluster status` says about the connections.  The I/O is in multikueue_kwok.py.

Kueue v0.19.2's rules these follow (pkg/controller/admissionchecks/multikueue, pkg/cache/scheduler):
* a worker's kubeconfig is read from the Secret's key `kubeconfig` in Kueue's namespace; it must carry the CA as
  data (a certificate-authority file path is refused), no tokenFile, no exec or auth provider, no insecure TLS
  (validateKubeconfig; the MultiKueueAllowInsecureKubeconfigs gate is locked off in 0.19);
* a ClusterQueue with a MultiKueue check may have no ProvisioningRequest check and may not apply it per flavor
  (the queue goes inactive otherwise): on the manager the MultiKueue check replaces the demo's provisioning check,
  which each worker keeps with its own autoscaler.
"""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass

from k8s.keys import (ACTIVE, KUEUE_NAMESPACE, MULTIKUEUE_CHECK, MULTIKUEUE_CONTROLLER, MULTIKUEUE_SECRET_KEY,
                      MULTIKUEUE_SECRET_PREFIX, MULTIKUEUE_WORKERS, PROVISIONING_CONTROLLER)
from k8s.manifests import ManifestError
from k8s.objects import condition, meta
from k8s.resources import (ADMISSION_CHECK, CLUSTER_QUEUE, KUBECONFIG, MULTIKUEUE_CLUSTER, MULTIKUEUE_CONFIG,
                           PROVREQ_CONFIG, SECRET)

MANAGER, WORKER = "manager", "worker"          # State.role of the clusters `cluster up --multikueue` makes


def worker_cluster(manager: str, worker: str) -> str:
    """The name (and state directory) of a worker's kwok cluster: the manager's name and the worker's."""
    return f"{manager}-{worker}"


def worker_of(manager: str, cluster: str) -> str:
    """The worker's name (its MultiKueueCluster's) of one of the manager's worker clusters."""
    return cluster.removeprefix(f"{manager}-")


def worker_clusters(manager: str) -> list[str]:
    return [worker_cluster(manager, w) for w in MULTIKUEUE_WORKERS]


# ---------------------------------------------------------------------------- a worker's kubeconfig

@dataclass(frozen=True)
class Credentials:
    """Where a kubeconfig's first cluster and user are: the server, and for the CA, the client certificate and
    its key either the data (base64, as written) or a file path."""
    server: str
    ca: tuple[str, str]          # ("data", base64) or ("path", file)
    cert: tuple[str, str]
    key: tuple[str, str]


def _named(doc: dict, section: str, what: str, name: str | None) -> dict:
    entries = doc.get(section) or []
    for e in entries:
        if isinstance(e, dict) and (name is None or e.get("name") == name):
            return e.get(what) or {}
    raise ManifestError(f"the kubeconfig has no {section[:-1]}" + (f" named {name!r}" if name else ""))


def _source(entry: dict, field: str) -> tuple[str, str]:
    if entry.get(f"{field}-data"):
        return "data", entry[f"{field}-data"]
    if entry.get(field):
        return "path", entry[field]
    raise ManifestError(f"the kubeconfig gives no {field} (neither {field}-data nor a file)")


def credentials(doc: dict) -> Credentials:
    """The current context's (else the first's) server, CA, client certificate and key of a kubeconfig (kwokctl
    writes file paths)."""
    ctx = _named(doc, "contexts", "context", doc.get("current-context") or None)
    for part in ("cluster", "user"):
        if not ctx.get(part):
            raise ManifestError(f"the kubeconfig's context names no {part}")
    cluster = _named(doc, "clusters", "cluster", ctx["cluster"])
    user = _named(doc, "users", "user", ctx["user"])
    if not cluster.get("server"):
        raise ManifestError("the kubeconfig's cluster has no server")
    return Credentials(cluster["server"], _source(cluster, "certificate-authority"),
                       _source(user, "client-certificate"), _source(user, "client-key"))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def embedded_kubeconfig(name: str, server: str, ca_pem: bytes, cert_pem: bytes, key_pem: bytes) -> dict:
    """A self-contained kubeconfig for one worker (every certificate as data), as Kueue's validateKubeconfig wants."""
    return KUBECONFIG.doc(
        clusters=[{"name": name, "cluster": {"server": server, "certificate-authority-data": _b64(ca_pem)}}],
        users=[{"name": name, "user": {"client-certificate-data": _b64(cert_pem), "client-key-data": _b64(key_pem)}}],
        contexts=[{"name": name, "context": {"cluster": name, "user": name}}],
        **{"current-context": name})


# ---------------------------------------------------------------------------- the manager's MultiKueue objects

def secret_name(worker: str) -> str:
    return f"{MULTIKUEUE_SECRET_PREFIX}{worker}"


def worker_secret(worker: str, kubeconfig_yaml: str) -> dict:
    """The Secret in Kueue's namespace that holds a worker's kubeconfig (key `kubeconfig`)."""
    return SECRET.new(secret_name(worker), KUEUE_NAMESPACE, type="Opaque",
                      data={MULTIKUEUE_SECRET_KEY: _b64(kubeconfig_yaml.encode())})


def multikueue_cluster(worker: str) -> dict:
    """A MultiKueueCluster: the worker's connection, its kubeconfig in the Secret of worker_secret()."""
    return MULTIKUEUE_CLUSTER.new(worker, spec={"clusterSource": {"kubeConfig": {
        "locationType": "Secret", "location": secret_name(worker)}}})


def multikueue_objects(workers: tuple[str, ...] | list[str] = MULTIKUEUE_WORKERS) -> list[dict]:
    """The MultiKueueConfig listing the workers (in order) and the AdmissionCheck that uses it."""
    config = MULTIKUEUE_CONFIG.new(MULTIKUEUE_CHECK, spec={"clusters": list(workers)})
    check = ADMISSION_CHECK.new(MULTIKUEUE_CHECK, spec={
        "controllerName": MULTIKUEUE_CONTROLLER,
        "parameters": {"apiGroup": MULTIKUEUE_CONFIG.group, "kind": MULTIKUEUE_CONFIG.kind, "name": MULTIKUEUE_CHECK}})
    return [config, check]


def _provisioning_checks(docs: list[dict]) -> set[str]:
    return {meta(d).get("name") for d in docs
            if d.get("kind") == ADMISSION_CHECK.kind and (d.get("spec") or {}).get("controllerName") == PROVISIONING_CONTROLLER}


def manager_objects(docs: list[dict]) -> list[dict]:
    """The demo's Kueue objects (manifests/kueue-objects.yaml) as the manager has them: the same namespaces,
    flavor, ClusterQueue (same quota) and LocalQueue, but the ClusterQueue's one check is the MultiKueue check on
    every flavor, and the ProvisioningRequest check and its config stay on the workers; then the MultiKueueConfig
    and its AdmissionCheck."""
    if not any(d.get("kind") == CLUSTER_QUEUE.kind for d in docs):
        raise ManifestError("the demo's Kueue objects have no ClusterQueue to put the MultiKueue check on")
    dropped = _provisioning_checks(docs)
    out = []
    for d in docs:
        if d.get("kind") == PROVREQ_CONFIG.kind or (d.get("kind") == ADMISSION_CHECK.kind and meta(d).get("name") in dropped):
            continue
        d = copy.deepcopy(d)
        if d.get("kind") == CLUSTER_QUEUE.kind:
            spec = d.setdefault("spec", {})
            spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": MULTIKUEUE_CHECK}]}    # no onFlavors: all
        out.append(d)
    return out + multikueue_objects()


# ---------------------------------------------------------------------------- each worker's own pool table

def worker_pools(doc: dict, worker: str) -> dict:
    """A worker's node pool table: the demo's pools, their nodes named after the worker (aks-gpupool-worker-1-vmss
    + 6 digits), so that a node's name says which cluster it is in."""
    out = copy.deepcopy(doc)
    pools = out.get("pools")
    if not isinstance(pools, list) or not pools:
        raise ManifestError("the pools file has no pools")
    for p in pools:
        prefix = p.get("namePrefix") or f"{p.get('name', 'pool')}-"
        head, vmss, tail = prefix.rpartition("-vmss")
        p["namePrefix"] = f"{head}-{worker}{vmss}{tail}" if vmss else f"{prefix}{worker}-"
    return out


# ---------------------------------------------------------------------------- status

def connection_rows(clusters: list[dict], check: dict | None,
                    workers: tuple[str, ...] | list[str] = MULTIKUEUE_WORKERS) -> list[tuple[str, bool, str]]:
    """`cluster status` rows for the manager's MultiKueue: each worker's MultiKueueCluster (Active, with Kueue's
    reason and message) and the MultiKueue AdmissionCheck."""
    by_name = {meta(c).get("name"): c for c in clusters}
    rows = []
    for w in workers:
        c = by_name.get(w)
        active = condition(c, ACTIVE)
        if c is None:
            rows.append((f"multikueue {w}", False, "no MultiKueueCluster"))
        elif active is None:
            rows.append((f"multikueue {w}", False, "MultiKueueCluster: no Active condition yet"))
        else:
            rows.append((f"multikueue {w}", active.get("status") == "True", _said(active)))
    ac = condition(check, ACTIVE)
    rows.append((f"admission check {MULTIKUEUE_CHECK}", ac is not None and ac.get("status") == "True",
                 "no AdmissionCheck" if check is None else _said(ac) if ac else "no Active condition yet"))
    return rows


def _said(c: dict) -> str:
    """A condition's reason and message, as Kueue wrote them."""
    return ": ".join(str(x) for x in (c.get("reason"), c.get("message")) if x)
