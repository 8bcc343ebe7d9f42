"""Node pools (the fake autoscaler's, and the real one's kwok node groups), and the Node objects a scale-up creates.

A pool plays the part of a Cluster Autoscaler node group backed by the kwok cloud provider: a
fixed node shape (labels, taints, capacity) and a size range.  Pools are read from
manifests/node-pools.yaml (format below) and can travel to the cluster as a ConfigMap.

    apiVersion: tau-demo.io/v1
    kind: NodePoolList
    pools:
    - name: gpupool                    # DNS-1123 label, unique
      minNodes: 0                      # optional, default 0
      maxNodes: 2
      namePrefix: aks-gpupool-vmss     # node names are namePrefix + 6 digits
      labels: {agentpool: gpupool}     # optional
      taints:                          # optional
      - {key: sku, value: gpu, effect: NoSchedule}
      capacity:    {cpu: "96", memory: 900Gi, nvidia.com/gpu: "8", pods: "110"}
      allocatable: {cpu: "94", memory: 880Gi, nvidia.com/gpu: "8", pods: "110"}
      bootSeconds: 15                  # optional, default 0: how long a new node stays NotReady;
                                       # "never": its VM never boots (the kwok provider's template
                                       # carries the same mark, so the real autoscaler's nodes never do)
      topology:                        # optional
        label: topology.tau-demo.io/domain
        domains:
        - {name: rack-a, maxNodes: 2}

Every problem is reported as PoolsError "<source>: <field path>: <reason>".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from . import node as nodes_
from .duration import FOREVER
from .keys import (BATCH_ANNOTATION, BOOTS_AT_ANNOTATION, HOSTNAME_LABEL, KWOK_MAX_COUNT_ANNOTATION,
                           KWOK_MIN_COUNT_ANNOTATION, KWOK_NODE_ANNOTATION, MANAGED_LABEL, NEVER_BOOTS, NODE_READY,
                           NOT_READY_TAINT, OS_LABEL, POOL_LABEL, POOL_TABLE, POOL_TABLE_KEY, PROVREQ_ANNOTATION,
                           PROVREQ_UID_ANNOTATION)
from .quantity import MAX_MILLI, parse_quantity
from .resources import CONFIG_MAP, NODE, NODE_POOL_LIST

CONFIGMAP_KEY = POOL_TABLE_KEY

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# Resources every kubelet reports; a pool without them could not run any pod.
REQUIRED_RESOURCES = ("cpu", "memory", "pods")
NODE_NAME_DIGITS = 6

# Labels node_manifest() sets itself; a pool may not set them.
_RESERVED_LABELS = (HOSTNAME_LABEL, OS_LABEL, "type", MANAGED_LABEL, POOL_LABEL)

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME_PART = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")

_POOL_FIELDS = {"name", "minNodes", "maxNodes", "namePrefix", "labels", "taints", "capacity",
                "allocatable", "topology", "bootSeconds"}
MAX_BOOT_SECONDS = 24 * 3600
_TAINT_FIELDS = {"key", "value", "effect"}
_TOPOLOGY_FIELDS = {"label", "domains"}
_DOMAIN_FIELDS = {"name", "maxNodes"}


class PoolsError(ValueError):
    """An invalid node-pools document; the message names the source, the field and the reason."""


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class Domain:
    name: str
    max_nodes: int


@dataclass(frozen=True)
class Pool:
    name: str
    min_nodes: int
    max_nodes: int
    name_prefix: str
    labels: dict
    taints: tuple[Taint, ...]
    capacity: dict[str, str]
    allocatable: dict[str, str]
    topology_label: str | None = None
    domains: tuple[Domain, ...] = ()
    boot_seconds: float = 0.0          # a new node stays NotReady this long (the VM boots)


# ---------------------------------------------------------------------------- validation helpers

def is_dns1123_label(s: Any) -> bool:
    return isinstance(s, str) and len(s) <= 63 and bool(_DNS1123_LABEL.fullmatch(s))


def is_dns1123_subdomain(s: Any) -> bool:
    return isinstance(s, str) and len(s) <= 253 and bool(_DNS1123_SUBDOMAIN.fullmatch(s))


def is_qualified_name(s: Any) -> bool:
    """A label key or resource name: optional DNS-subdomain prefix, "/", name of <= 63 chars."""
    if not isinstance(s, str):
        return False
    prefix, slash, name = s.rpartition("/")
    if slash and not is_dns1123_subdomain(prefix):
        return False
    return len(name) <= 63 and bool(_QUALIFIED_NAME_PART.fullmatch(name))


def is_label_value(s: Any) -> bool:
    return isinstance(s, str) and (s == "" or (len(s) <= 63 and bool(_QUALIFIED_NAME_PART.fullmatch(s))))


class _Ctx:
    """Builds PoolsError messages for one source."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, path: str, reason: str):
        raise PoolsError(f"{self.source}: {path}: {reason}")

    def mapping(self, value: Any, path: str, allowed: set[str] | None = None) -> dict:
        if not isinstance(value, dict):
            self.fail(path, f"must be a mapping (got {_kind(value)})")
        if allowed is not None:
            unknown = sorted(str(k) for k in value if k not in allowed)
            if unknown:
                self.fail(path, f"unknown field(s) {', '.join(unknown)} (allowed: {', '.join(sorted(allowed))})")
        return value

    def integer(self, value: Any, path: str, minimum: int = 0, what: str = "a non-negative integer") -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.fail(path, f"must be {what} (got {value!r})")
        return value


def _kind(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", type(None): "nothing"}.get(type(value), type(value).__name__)


# ---------------------------------------------------------------------------- parsing

def load_pools(path: str | Path) -> list[Pool]:
    """Read and validate a node-pools file."""
    source = str(path)
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise PoolsError(f"{source}: cannot read: {e.strerror or e}") from None
    return _parse_text(text, source)


def _parse_text(text: str, source: str) -> list[Pool]:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise PoolsError(f"{source}: invalid YAML: {' '.join(str(e).split())}") from None
    return parse_pools(doc, source)


def parse_pools(doc: Any, source: str) -> list[Pool]:
    """Validate an already-parsed node-pools document."""
    c = _Ctx(source)
    if not isinstance(doc, dict):
        c.fail("top level", f"must be a mapping with apiVersion, kind and pools (got {_kind(doc)})")
    c.mapping(doc, "top level", {"apiVersion", "kind", "pools", "metadata"})
    if doc.get("apiVersion") != NODE_POOL_LIST.api_version:
        c.fail("apiVersion", f"must be {NODE_POOL_LIST.api_version} (got {doc.get('apiVersion')!r})")
    if doc.get("kind") != NODE_POOL_LIST.kind:
        c.fail("kind", f"must be {NODE_POOL_LIST.kind} (got {doc.get('kind')!r})")
    raw_pools = doc.get("pools")
    if not isinstance(raw_pools, list):
        c.fail("pools", f"must be a list of pools (got {_kind(raw_pools)})")
    pools = [_parse_pool(c, raw, f"pools[{i}]") for i, raw in enumerate(raw_pools)]
    seen_names: dict[str, int] = {}
    seen_prefixes: dict[str, int] = {}
    for i, p in enumerate(pools):
        if p.name in seen_names:
            c.fail(f"pools[{i}].name", f"duplicate pool name {p.name!r} (also pools[{seen_names[p.name]}])")
        seen_names[p.name] = i
        if p.name_prefix in seen_prefixes:
            c.fail(f"pools[{i}].namePrefix",
                   f"duplicate namePrefix {p.name_prefix!r} (also pools[{seen_prefixes[p.name_prefix]}]); node names would clash")
        seen_prefixes[p.name_prefix] = i
    return pools


def _parse_pool(c: _Ctx, raw: Any, path: str) -> Pool:
    c.mapping(raw, path, _POOL_FIELDS)
    for required in ("name", "maxNodes", "namePrefix", "capacity", "allocatable"):
        if required not in raw:
            c.fail(f"{path}.{required}", "is required")
    name = raw["name"]
    if not is_dns1123_label(name):
        c.fail(f"{path}.name", f"must be a DNS-1123 label (lowercase letters, digits, '-', at most 63) (got {name!r})")
    min_nodes = c.integer(raw.get("minNodes", 0), f"{path}.minNodes")
    max_nodes = raw["maxNodes"]
    if isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or max_nodes < max(min_nodes, 0):
        c.fail(f"{path}.maxNodes", f"must be an integer >= minNodes (got {max_nodes!r})")

    prefix = raw["namePrefix"]
    if not isinstance(prefix, str) or not prefix or not is_dns1123_subdomain(prefix + "0" * NODE_NAME_DIGITS):
        c.fail(f"{path}.namePrefix",
               f"must be a non-empty prefix that makes a DNS-1123 node name with {NODE_NAME_DIGITS} digits appended (got {prefix!r})")

    labels = _parse_labels(c, raw.get("labels"), f"{path}.labels")
    taints = _parse_taints(c, raw.get("taints"), f"{path}.taints")
    capacity = _parse_resources(c, raw["capacity"], f"{path}.capacity")
    allocatable = _parse_resources(c, raw["allocatable"], f"{path}.allocatable")
    for res, qty in allocatable.items():
        if res not in capacity:
            c.fail(f"{path}.allocatable.{res}", "is not in capacity")
        if parse_quantity(qty) > parse_quantity(capacity[res]):
            c.fail(f"{path}.allocatable.{res}", f"must not exceed capacity ({qty} > {capacity[res]})")

    topology_label, domains = None, ()
    if raw.get("topology") is not None:
        topology_label, domains = _parse_topology(c, raw["topology"], f"{path}.topology", labels)
    boot = raw.get("bootSeconds", 0)
    if boot == NEVER_BOOTS:
        boot = FOREVER
    elif isinstance(boot, bool) or not isinstance(boot, (int, float)) or not 0 <= boot <= MAX_BOOT_SECONDS:
        c.fail(f"{path}.bootSeconds", f"must be a number of seconds from 0 to {MAX_BOOT_SECONDS} or \"{NEVER_BOOTS}\" "
                                      f"(got {boot!r})")
    return Pool(name=name, min_nodes=min_nodes, max_nodes=max_nodes, name_prefix=prefix, labels=labels,
                taints=taints, capacity=capacity, allocatable=allocatable,
                topology_label=topology_label, domains=domains, boot_seconds=float(boot))


def _parse_labels(c: _Ctx, raw: Any, path: str) -> dict[str, str]:
    if raw is None:
        return {}
    c.mapping(raw, path)
    labels = {}
    for key, value in raw.items():
        if not is_qualified_name(key):
            c.fail(f"{path}.{key}", "is not a valid label key")
        if key in _RESERVED_LABELS:
            c.fail(f"{path}.{key}", "is set by the fake autoscaler on every node; a pool may not set it")
        if not isinstance(value, str):
            c.fail(f"{path}.{key}", f"must be a string; quote it (got {value!r})")
        if not is_label_value(value):
            c.fail(f"{path}.{key}", f"is not a valid label value (got {value!r})")
        labels[key] = value
    return labels


def _parse_taints(c: _Ctx, raw: Any, path: str) -> tuple[Taint, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        c.fail(path, f"must be a list (got {_kind(raw)})")
    taints: list[Taint] = []
    for i, t in enumerate(raw):
        tp = f"{path}[{i}]"
        c.mapping(t, tp, _TAINT_FIELDS)
        key, value, effect = t.get("key"), t.get("value"), t.get("effect")
        if not is_qualified_name(key):
            c.fail(f"{tp}.key", f"must be a valid label key (got {key!r})")
        if value is None:
            value = ""
        if not isinstance(value, str) or not is_label_value(value):
            c.fail(f"{tp}.value", f"must be a valid label value string (got {value!r})")
        if effect not in TAINT_EFFECTS:
            c.fail(f"{tp}.effect", f"must be one of {', '.join(TAINT_EFFECTS)} (got {effect!r})")
        if any(o.key == key and o.effect == effect for o in taints):
            c.fail(tp, f"duplicate taint {key}:{effect}")
        taints.append(Taint(key, value, effect))
    return tuple(taints)


def _parse_resources(c: _Ctx, raw: Any, path: str) -> dict[str, str]:
    c.mapping(raw, path)
    out: dict[str, str] = {}
    for res, qty in raw.items():
        if not is_qualified_name(res):
            c.fail(f"{path}.{res}", "is not a valid resource name")
        if isinstance(qty, bool) or not isinstance(qty, (str, int, float)):
            c.fail(f"{path}.{res}", f"must be a quantity such as \"8\" or 900Gi (got {qty!r})")
        text = str(qty)                       # unquoted YAML numbers (96) are kept as "96"
        try:
            milli = parse_quantity(qty)
        except ValueError as e:
            c.fail(f"{path}.{res}", str(e))
        if milli < 0:
            c.fail(f"{path}.{res}", f"must not be negative (got {text})")
        if milli > MAX_MILLI:
            c.fail(f"{path}.{res}", f"is absurdly large (got {text})")
        out[res] = text
    for res in REQUIRED_RESOURCES:
        if res not in out:
            c.fail(f"{path}.{res}", "is required (every node reports cpu, memory and pods)")
    return out


def _parse_topology(c: _Ctx, raw: Any, path: str, labels: dict[str, str]) -> tuple[str, tuple[Domain, ...]]:
    c.mapping(raw, path, _TOPOLOGY_FIELDS)
    label = raw.get("label")
    if not is_qualified_name(label):
        c.fail(f"{path}.label", f"must be a valid label key (got {label!r})")
    if label in _RESERVED_LABELS or label in labels:
        c.fail(f"{path}.label", f"{label} is already a node label of this pool")
    raw_domains = raw.get("domains")
    if not isinstance(raw_domains, list) or not raw_domains:
        c.fail(f"{path}.domains", f"must be a non-empty list (got {_kind(raw_domains)})")
    domains: list[Domain] = []
    for i, d in enumerate(raw_domains):
        dp = f"{path}.domains[{i}]"
        c.mapping(d, dp, _DOMAIN_FIELDS)
        name = d.get("name")
        if not is_dns1123_label(name):
            c.fail(f"{dp}.name", f"must be a DNS-1123 label (got {name!r})")
        if any(o.name == name for o in domains):
            c.fail(f"{dp}.name", f"duplicate domain {name!r}")
        if "maxNodes" not in d:
            c.fail(f"{dp}.maxNodes", "is required")
        domains.append(Domain(name, c.integer(d["maxNodes"], f"{dp}.maxNodes")))
    return label, tuple(domains)


# ---------------------------------------------------------------------------- serialisation

def _pool_to_dict(p: Pool) -> dict:
    d: dict[str, Any] = {
        "name": p.name, "minNodes": p.min_nodes, "maxNodes": p.max_nodes, "namePrefix": p.name_prefix,
        "labels": dict(p.labels),
        "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in p.taints],
        "capacity": dict(p.capacity), "allocatable": dict(p.allocatable),
    }
    if p.boot_seconds:
        d["bootSeconds"] = NEVER_BOOTS if p.boot_seconds == FOREVER else p.boot_seconds
    if p.topology_label:
        d["topology"] = {"label": p.topology_label,
                         "domains": [{"name": dm.name, "maxNodes": dm.max_nodes} for dm in p.domains]}
    return d


def pools_to_yaml(pools: list[Pool]) -> str:
    """The pools in the node-pools file format."""
    doc = NODE_POOL_LIST.doc(pools=[_pool_to_dict(p) for p in pools])
    return yaml.safe_dump(doc, sort_keys=False)        # block style is the default


def pools_to_configmap(pools: list[Pool], namespace: str = POOL_TABLE[0], name: str = POOL_TABLE[1]) -> dict:
    """A ConfigMap carrying the pools under data["pools.yaml"]."""
    return CONFIG_MAP.new(name, namespace, data={CONFIGMAP_KEY: pools_to_yaml(pools)})


def pools_from_configmap(cm: dict) -> list[Pool]:
    """The pools of a ConfigMap made by pools_to_configmap (validated like the file)."""
    meta = cm.get("metadata") if isinstance(cm, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    source = f"configmap {meta.get('namespace', '?')}/{meta.get('name', '?')}"
    data = cm.get("data") if isinstance(cm, dict) else None
    if not isinstance(data, dict) or not isinstance(data.get(CONFIGMAP_KEY), str):
        raise PoolsError(f"{source}: data.{CONFIGMAP_KEY}: is missing")
    return _parse_text(data[CONFIGMAP_KEY], f"{source} data.{CONFIGMAP_KEY}")


# ---------------------------------------------------------------------------- nodes

def taint_dicts(pool: Pool) -> list[dict]:
    """The pool's taints as a Node's spec.taints."""
    out = []
    for t in pool.taints:
        taint = {"key": t.key, "effect": t.effect}
        if t.value:
            taint["value"] = t.value
        out.append(taint)
    return out


def node_manifest(pool: Pool, name: str, domain: str | None = None, provreq_uid: str = "", provreq_key: str = "",
                  boots_at: str | None = None, batch: int = 0, kwok_provider_template: bool = False) -> dict:
    """The one Node builder: a node of `pool` (in topology domain `domain`, if any), as this fake creates it
    for a request (its uid and namespace/name; `batch`: how many nodes that scale-up made).

    With `boots_at` (an RFC 3339 time, or "never") the node is a VM still booting: it carries the not-ready
    taint a kubelet registers with and the time it becomes Ready, which KWOK's node-initialize stage
    (manifests/kwok/node-initialize.yaml) waits for.

    With kwok_provider_template=True it is instead the template the real autoscaler's kwok provider makes its
    nodes from (demo/realca/provider.py), differing only where the provider needs it: no kubernetes.io/hostname
    (the provider copies template labels verbatim: every node would share one hostname), none of this fake's
    marks (managed label, request annotations, providerID: the provider sets kwok:<name>), the group's
    min/max counts, and no status.conditions (kwok's node-initialize stage makes the node Ready), except for a
    pool whose VMs never boot: the template then carries boots-at "never", so that stage never does."""
    labels = dict(pool.labels)
    labels.update({OS_LABEL: "linux", "type": "kwok", POOL_LABEL: pool.name})
    taints = taint_dicts(pool)
    status: dict = {"capacity": dict(pool.capacity), "allocatable": dict(pool.allocatable)}
    if kwok_provider_template:
        # the provider writes into this map without creating it: it must exist (min/max guarantee it)
        annotations = {KWOK_MIN_COUNT_ANNOTATION: str(pool.min_nodes), KWOK_MAX_COUNT_ANNOTATION: str(pool.max_nodes)}
        if pool.boot_seconds == FOREVER:     # copied onto every node: KWOK's node stage never makes it Ready
            annotations[BOOTS_AT_ANNOTATION] = NEVER_BOOTS
        status["nodeInfo"] = {"operatingSystem": "linux"}
        return NODE.new(name, labels=labels, annotations=annotations, spec={"taints": taints}, status=status)
    labels.update({HOSTNAME_LABEL: name, MANAGED_LABEL: "true"})
    if domain:
        if not pool.topology_label:
            raise ValueError(f"pool {pool.name} has no topology; cannot place node {name} in domain {domain}")
        labels[pool.topology_label] = domain
    annotations = {KWOK_NODE_ANNOTATION: "fake", POOL_LABEL: pool.name}
    # the marks of the request a node is made for (the planner's template of a node to come has none)
    for key, value in ((PROVREQ_UID_ANNOTATION, provreq_uid), (PROVREQ_ANNOTATION, provreq_key)):
        if value:
            annotations[key] = value
    if batch:
        annotations[BATCH_ANNOTATION] = str(batch)
    status["nodeInfo"] = {"kubeletVersion": "fake"}
    if boots_at:
        annotations[BOOTS_AT_ANNOTATION] = boots_at
        taints.append({"key": NOT_READY_TAINT, "effect": "NoSchedule"})
        # Ready=False as a kubelet reports while it starts; without a Ready condition the node
        # lifecycle controller would lift the not-ready taint at once
        status["conditions"] = [{"type": NODE_READY, "status": "False", "reason": "KubeletNotReady",
                                 "message": "the VM is booting (fake-ca)"}]
    return NODE.new(name, labels=labels, annotations=annotations, spec={"providerID": f"kwok:{name}", "taints": taints},
                    status=status)


def pool_of_node(node: dict, pools: list[Pool]) -> Pool | None:
    """The pool a Node belongs to, by its POOL_LABEL; None for nodes of no (known) pool."""
    name = nodes_.pool_of(node)
    return next((p for p in pools if p.name == name), None)
