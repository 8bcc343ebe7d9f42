"""The placement decision for one ProvisioningRequest: pure functions on plain dicts.

It follows the Cluster Autoscaler (docs: /work/shared/notes/cluster-autoscaler-provreq.md):

* Existing capacity first.  All pods of the request are simulated on the Ready nodes, first fit
  in node-name order.  If every pod fits: Provisioned=True/CapacityIsFound, no node is created.
* check-capacity never scales up: any pod that does not fit gives CapacityIsNotFound.
* best-effort-atomic scales ONE pool by exactly the number of nodes the pods that did not fit
  need (all-or-nothing): a pool is an option only when it admits every remaining pod and has
  room for all the new nodes (size + needed <= maxNodes, and at most MAX_NODES_PER_SCALEUP).
  Otherwise CapacityIsNotFound and zero nodes.  The real CA's default expander is least-waste;
  we take the first option in file order, which is deterministic and easy to reason about.

Topology (a project extension, design §10): when a pod template carries TOPOLOGY_LEVEL_LABEL,
every NEW node of the request goes to one topology domain of the pool.  Because Kueue then pins
all pods of the request to the domain the autoscaler publishes (podSetUpdates in
manifests/kueue-objects.yaml), pods placed on existing capacity must be in that domain too, so
for such requests existing capacity is searched one domain at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterable

from .pools import POOL_LABEL, Pool, node_manifest
from .quantity import MAX_MILLI, parse_quantity

BEST_EFFORT_ATOMIC = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
CHECK_CAPACITY = "check-capacity.autoscaling.x-k8s.io"
SUPPORTED_CLASSES = frozenset({BEST_EFFORT_ATOMIC, CHECK_CAPACITY})

TOPOLOGY_LEVEL_LABEL = "topology.tau-demo.io/level"

# Condition reasons.
CAPACITY_IS_FOUND = "CapacityIsFound"
CAPACITY_IS_PROVISIONED = "CapacityIsProvisioned"
CAPACITY_IS_NOT_FOUND = "CapacityIsNotFound"
FAILED_TO_CREATE_PODS = "FailedToCreatePods"
INVALID_REQUEST = "InvalidProvisioningRequest"

MAX_NODES_PER_SCALEUP = 1000     # CA's --max-nodes-per-scaleup default
MAX_PODSETS = 32                 # API limit on spec.podSets
GPU = "nvidia.com/gpu"
PODS = "pods"                    # every pod uses 1 of the node's "pods" allocatable
_ONE_POD = 1000                  # in milli-units

_TERMINAL_PHASES = ("Succeeded", "Failed")
_SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")
_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


class RequestError(ValueError):
    """A ProvisioningRequest that cannot be turned into pods; `reason` goes into a condition."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass
class PodSet:
    template_name: str
    count: int
    requests: dict[str, int]                 # milli-units, effective pod requests
    node_selector: dict = field(default_factory=dict)
    tolerations: list[dict] = field(default_factory=list)
    required_terms: list[dict] = field(default_factory=list)   # nodeSelectorTerms, ORed
    topology: bool = False


@dataclass
class Request:
    namespace: str
    name: str
    uid: str
    class_name: str
    podsets: list[PodSet]
    parameters: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def expand(self) -> list[PodSet]:
        """One entry per pod: pod index i runs podset expand()[i] (podset order, then replica)."""
        return [ps for ps in self.podsets for _ in range(ps.count)]

    @property
    def topology(self) -> bool:
        return any(ps.topology for ps in self.podsets)


@dataclass
class Verdict:
    fits: bool
    status_reason: str
    pool: str | None = None
    new_nodes: int = 0               # nodes the gang needs in `pool` (also when it does not fit)
    max_nodes: int | None = None
    pool_size: int = 0
    domain: str | None = None        # the one topology domain of a topology request
    placements: list[tuple[int, str]] = field(default_factory=list)
    new_node_pods: list[list[int]] = field(default_factory=list)    # only when it fits
    reason: str = ""
    new_node_domains: list[str | None] = field(default_factory=list)  # per new node

    @property
    def nodes_to_create(self) -> int:
        """How many nodes to create: zero unless the request fits (all-or-nothing)."""
        return len(self.new_node_pods) if self.fits else 0

    def line(self, key: str) -> str:
        """The one-line log of the decision."""
        head = f"provreq {key}: "
        if self.fits and not self.new_node_pods:
            nodes = len({n for _, n in self.placements})
            return head + f"fits on existing capacity ({len(self.placements)} pod(s) on {nodes} node(s)): no node needed"
        if self.pool is not None:
            gang = f"gang needs {self.new_nodes} node(s) of {self.pool} (max {self.max_nodes}): "
            return head + gang + ("fits" if self.fits else f"does not fit: {self.reason}")
        return head + f"does not fit: {self.reason}"


# ---------------------------------------------------------------------------- building requests

def _err(message: str, reason: str = FAILED_TO_CREATE_PODS):
    raise RequestError(reason, message)


def _is_str_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def _quantity(value: Any, where: str) -> int:
    try:
        milli = parse_quantity(value)
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None
    if milli < 0:
        raise ValueError(f"{where}: must not be negative (got {value})")
    if milli > MAX_MILLI:
        raise ValueError(f"{where}: {value} is absurdly large")
    return milli


def _container_requests(c: Any, where: str) -> dict[str, int]:
    """Requests of one container; a limit without a request counts as the request."""
    if not isinstance(c, dict):
        raise ValueError(f"{where}: must be a mapping")
    resources = c.get("resources") or {}
    if not isinstance(resources, dict):
        raise ValueError(f"{where}.resources: must be a mapping")
    out: dict[str, int] = {}
    for kind in ("limits", "requests"):          # requests override limits
        values = resources.get(kind) or {}
        if not isinstance(values, dict):
            raise ValueError(f"{where}.resources.{kind}: must be a mapping")
        for res, qty in values.items():
            if not isinstance(res, str) or not res:
                raise ValueError(f"{where}.resources.{kind}: resource names must be strings")
            out[res] = _quantity(qty, f"{where}.resources.{kind}.{res}")
    return out


def _add(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


def _max(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    out = dict(a)
    for k, v in b.items():
        out[k] = max(out.get(k, 0), v)
    return out


def pod_requests(spec: dict) -> dict[str, int]:
    """Effective requests of a pod spec, in milli-units, as the scheduler computes them.

    Sum of the containers (plus restartable init containers, i.e. sidecars), max with each
    init container (which runs beside the sidecars started before it), plus spec.overhead.
    ValueError on malformed, negative or absurd quantities.
    """
    if not isinstance(spec, dict):
        raise ValueError("spec: must be a mapping")
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise ValueError("spec.containers: must list at least one container")
    total: dict[str, int] = {}
    for i, c in enumerate(containers):
        total = _add(total, _container_requests(c, f"spec.containers[{i}]"))
    inits = spec.get("initContainers") or []
    if not isinstance(inits, list):
        raise ValueError("spec.initContainers: must be a list")
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for i, c in enumerate(inits):
        req = _container_requests(c, f"spec.initContainers[{i}]")
        if c.get("restartPolicy") == "Always":
            total = _add(total, req)
            sidecars = _add(sidecars, req)
            init_peak = _max(init_peak, sidecars)
        else:
            init_peak = _max(init_peak, _add(req, sidecars))
    total = _max(total, init_peak)
    overhead = spec.get("overhead") or {}
    if not isinstance(overhead, dict):
        raise ValueError("spec.overhead: must be a mapping")
    total = _add(total, {r: _quantity(q, f"spec.overhead.{r}") for r, q in overhead.items()})
    for res, milli in total.items():
        if milli > MAX_MILLI:
            raise ValueError(f"spec: the pod's total {res} request is absurdly large")
    return total


def _validate_tolerations(value: Any, where: str) -> list[dict]:
    if not isinstance(value, list):
        raise ValueError(f"{where}: must be a list")
    for i, t in enumerate(value):
        w = f"{where}[{i}]"
        if not isinstance(t, dict):
            raise ValueError(f"{w}: must be a mapping")
        op = t.get("operator") or "Equal"
        if op not in ("Equal", "Exists"):
            raise ValueError(f"{w}.operator: must be Equal or Exists (got {op!r})")
        if not isinstance(t.get("key") or "", str) or not isinstance(t.get("value") or "", str):
            raise ValueError(f"{w}: key and value must be strings")
        if op == "Exists" and t.get("value"):
            raise ValueError(f"{w}.value: must be empty when operator is Exists")
        if op == "Equal" and not t.get("key"):
            raise ValueError(f"{w}.key: an empty key needs operator Exists")
        if (t.get("effect") or "") not in ("", "NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise ValueError(f"{w}.effect: must be NoSchedule, PreferNoSchedule or NoExecute (got {t.get('effect')!r})")
    return value


def _validate_requirement(r: Any, where: str, fields: bool) -> None:
    if not isinstance(r, dict) or not isinstance(r.get("key"), str) or not r.get("key"):
        raise ValueError(f"{where}: must be a mapping with a key")
    op, values = r.get("operator"), r.get("values") or []
    if op not in _OPERATORS or (fields and op not in ("In", "NotIn")):
        raise ValueError(f"{where}.operator: unsupported operator {op!r}")
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"{where}.values: must be a list of strings")
    if op in ("In", "NotIn") and not values:
        raise ValueError(f"{where}.values: must not be empty for {op}")
    if op in ("Exists", "DoesNotExist") and values:
        raise ValueError(f"{where}.values: must be empty for {op}")
    if op in ("Gt", "Lt"):
        if len(values) != 1 or not _is_int(values[0]):
            raise ValueError(f"{where}.values: {op} needs exactly one integer value")


def _is_int(s: str) -> bool:
    try:
        int(s)
    except ValueError:
        return False
    return True


def _required_terms(spec: dict) -> list[dict]:
    affinity = spec.get("affinity") or {}
    if not isinstance(affinity, dict):
        raise ValueError("spec.affinity: must be a mapping")
    node_affinity = affinity.get("nodeAffinity") or {}
    if not isinstance(node_affinity, dict):
        raise ValueError("spec.affinity.nodeAffinity: must be a mapping")
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return []
    where = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    terms = required.get("nodeSelectorTerms") if isinstance(required, dict) else None
    if not isinstance(terms, list) or not terms:
        raise ValueError(f"{where}: must be a non-empty list")
    for i, term in enumerate(terms):
        if not isinstance(term, dict):
            raise ValueError(f"{where}[{i}]: must be a mapping")
        for kind in ("matchExpressions", "matchFields"):
            exprs = term.get(kind) or []
            if not isinstance(exprs, list):
                raise ValueError(f"{where}[{i}].{kind}: must be a list")
            for j, r in enumerate(exprs):
                _validate_requirement(r, f"{where}[{i}].{kind}[{j}]", kind == "matchFields")
    return terms


def _podset(pt: Any, ref: str, count: int, namespace: str) -> PodSet:
    if not isinstance(pt, dict):
        _err(f"pod template {ref}: must be a PodTemplate object")
    meta = pt.get("metadata") or {}
    pt_ns = meta.get("namespace") if isinstance(meta, dict) else None
    if pt_ns and pt_ns != namespace:
        _err(f"pod template {ref} is in namespace {pt_ns}, not in the ProvisioningRequest's namespace {namespace}")
    template = pt.get("template")
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        _err(f"pod template {ref}: template.spec is missing")
    spec = template["spec"]
    tmeta = template.get("metadata") or {}
    labels = (tmeta.get("labels") if isinstance(tmeta, dict) else None) or {}
    try:
        requests = pod_requests(spec)
        node_selector = spec.get("nodeSelector") or {}
        if not _is_str_map(node_selector):
            raise ValueError("spec.nodeSelector: must map strings to strings")
        tolerations = _validate_tolerations(spec.get("tolerations") or [], "spec.tolerations")
        terms = _required_terms(spec)
        if not isinstance(labels, dict):
            raise ValueError("metadata.labels: must be a mapping")
        labels = labels or {}
    except ValueError as e:
        _err(f"pod template {ref}: template.{e}")
    return PodSet(template_name=ref, count=count, requests=requests, node_selector=dict(node_selector),
                  tolerations=list(tolerations), required_terms=list(terms),
                  topology=bool(labels.get(TOPOLOGY_LEVEL_LABEL)))


def request_from_objects(provreq: dict, templates: dict[str, dict]) -> Request:
    """A Request from a ProvisioningRequest and the PodTemplates of its namespace (name -> object).

    RequestError(reason="FailedToCreatePods") for missing or unusable PodTemplates (the message
    for missing ones is the real CA's), reason "InvalidProvisioningRequest" for a malformed spec.
    The provisioning class is kept as is; deciding which classes to handle is the caller's job.
    """
    if not isinstance(provreq, dict):
        _err("the ProvisioningRequest must be a mapping", INVALID_REQUEST)
    meta = provreq.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        _err("metadata.name: is required", INVALID_REQUEST)
    namespace = meta.get("namespace") or "default"
    if not isinstance(namespace, str):
        _err("metadata.namespace: must be a string", INVALID_REQUEST)
    spec = provreq.get("spec")
    if not isinstance(spec, dict):
        _err("spec: is required", INVALID_REQUEST)
    class_name = spec.get("provisioningClassName") or ""
    if not isinstance(class_name, str):
        _err("spec.provisioningClassName: must be a string", INVALID_REQUEST)

    raw_sets = spec.get("podSets")
    if not isinstance(raw_sets, list) or not raw_sets:
        _err("spec.podSets: must list at least one pod set", INVALID_REQUEST)
    if len(raw_sets) > MAX_PODSETS:
        _err(f"spec.podSets: at most {MAX_PODSETS} pod sets are allowed (got {len(raw_sets)})", INVALID_REQUEST)
    refs: list[tuple[str, int]] = []
    for i, ps in enumerate(raw_sets):
        ref = ps.get("podTemplateRef") if isinstance(ps, dict) else None
        name = ref.get("name") if isinstance(ref, dict) else None
        if not isinstance(name, str) or not name:
            _err(f"spec.podSets[{i}].podTemplateRef.name: is required", INVALID_REQUEST)
        count = ps.get("count")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            _err(f"spec.podSets[{i}].count: must be an integer >= 1 (got {count!r})", INVALID_REQUEST)
        refs.append((name, count))

    parameters = spec.get("parameters") or {}
    if not _is_str_map(parameters):
        _err("spec.parameters: must map strings to strings", INVALID_REQUEST)

    missing = [name for name, _ in refs if name not in templates]
    if missing:
        _err(f"missing pod templates, {len(refs)} pod templates were referenced, "
             f"{len(missing)} templates were missing: {','.join(missing)}")
    podsets = [_podset(templates[name], name, count, namespace) for name, count in refs]
    return Request(namespace=namespace, name=meta["name"], uid=str(meta.get("uid") or ""),
                   class_name=class_name, podsets=podsets, parameters=dict(parameters))


def gang_request(namespace: str, name: str, count: int, gpus_per_pod: int, cpu: str = "8", memory: str = "64Gi",
                 node_selector: dict | None = None, tolerations: list[dict] | None = None) -> Request:
    """A synthetic best-effort-atomic request of `count` identical pods (podset "main")."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        _err(f"count must be an integer >= 1 (got {count!r})")
    if isinstance(gpus_per_pod, bool) or not isinstance(gpus_per_pod, int) or gpus_per_pod < 0:
        _err(f"gpus per pod must be a non-negative integer (got {gpus_per_pod!r})")
    try:
        requests = {"cpu": _quantity(cpu, "cpu"), "memory": _quantity(memory, "memory")}
        if gpus_per_pod:
            requests[GPU] = _quantity(gpus_per_pod, GPU)
        tols = _validate_tolerations(list(tolerations or []), "tolerations")
    except ValueError as e:
        _err(str(e))
    if not _is_str_map(node_selector or {}):
        _err("nodeSelector must map strings to strings")
    ps = PodSet("main", count, requests, dict(node_selector or {}), tols, [], False)
    return Request(namespace, name, "", BEST_EFFORT_ATOMIC, [ps], {})


# ---------------------------------------------------------------------------- node predicates

def _meta(obj: dict) -> dict:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def _labels(node: dict) -> dict:
    return _meta(node).get("labels") or {}


def _name(node: dict) -> str:
    return _meta(node).get("name") or ""


def _deleting(obj: dict) -> bool:
    return bool(_meta(obj).get("deletionTimestamp"))


def _ready(node: dict) -> bool:
    conds = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds if isinstance(c, dict))


def _requirement_matches(r: dict, value: str | None) -> bool:
    """One NodeSelectorRequirement against a label (or field) value; None when absent."""
    op, values = r.get("operator"), r.get("values") or []
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt"):
        if value is None or not _is_int(value) or len(values) != 1 or not _is_int(values[0]):
            return False
        return int(value) > int(values[0]) if op == "Gt" else int(value) < int(values[0])
    return False


def _term_matches(term: dict, labels: dict, name: str) -> bool:
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False             # an empty term matches no node (Kubernetes semantics)
    return (all(_requirement_matches(r, labels.get(r.get("key"))) for r in exprs)
            and all(_requirement_matches(r, name if r.get("key") == "metadata.name" else None) for r in fields))


def tolerates(toleration: dict, taint: dict) -> bool:
    """Kubernetes Toleration.ToleratesTaint."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def _taint_str(t: dict) -> str:
    value = t.get("value") or ""
    return f"{t.get('key')}{'=' + value if value else ''}:{t.get('effect')}"


def selector_mismatch(ps: PodSet, node: dict) -> str | None:
    """Why the pod's nodeSelector, required node affinity or tolerations exclude `node`; None if they don't."""
    labels = _labels(node)
    for k, v in ps.node_selector.items():
        if labels.get(k) != v:
            have = labels.get(k)
            return f"nodeSelector {k}={v} does not match ({k}={have})" if have is not None \
                else f"nodeSelector {k}={v} does not match (no {k} label)"
    if ps.required_terms and not any(_term_matches(t, labels, _name(node)) for t in ps.required_terms):
        return "required node affinity does not match"
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in _SCHEDULING_EFFECTS and not any(tolerates(t, taint) for t in ps.tolerations):
            return f"taint {_taint_str(taint)} is not tolerated"
    return None


def _demand(ps: PodSet) -> dict[str, int]:
    d = dict(ps.requests)
    d[PODS] = d.get(PODS, 0) + _ONE_POD
    return d


def _shortfall(demand: dict[str, int], free: dict[str, int]) -> tuple[str, int, int] | None:
    """The first resource (by name) the pod needs more of than `free` has, as (resource, need, have)."""
    for res in sorted(demand):
        if demand[res] > 0 and demand[res] > free.get(res, 0):
            return res, demand[res], free.get(res, 0)
    return None


def _parse_resources(values: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for res, qty in (values or {}).items() if isinstance(values, dict) else ():
        try:
            out[res] = parse_quantity(qty)
        except ValueError:
            out[res] = 0          # the API server validated it; an unreadable value offers nothing
    return out


def _subtract(free: dict[str, int], demand: dict[str, int]) -> None:
    for res, v in demand.items():
        free[res] = free.get(res, 0) - v


def format_amount(resource: str, milli: int) -> str:
    """A readable amount: 16, 500m, 64Gi."""
    if milli % 1000:
        return f"{milli}m"
    value = milli // 1000
    if value and (resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")):
        for suffix, power in (("Ei", 60), ("Pi", 50), ("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)):
            if value % (1 << power) == 0:
                return f"{value >> power}{suffix}"
    return str(value)


# ---------------------------------------------------------------------------- existing capacity

def _eligible_nodes(nodes: list[dict], booked: dict[str, str], uid: str) -> list[dict]:
    """Ready, schedulable, not deleting, not booked by another request; sorted by name."""
    out = []
    for n in nodes:
        if not isinstance(n, dict) or not _name(n) or _deleting(n) or not _ready(n):
            continue
        if (n.get("spec") or {}).get("unschedulable"):
            continue
        holder = booked.get(_name(n))
        if holder is not None and holder != uid:
            continue
        out.append(n)
    return sorted(out, key=_name)


def _free_capacity(nodes: list[dict], pods: list[dict]) -> dict[str, dict[str, int]]:
    """Node name -> allocatable minus the requests of the live pods bound to it."""
    free = {_name(n): _parse_resources((n.get("status") or {}).get("allocatable")) for n in nodes}
    for p in pods:
        if not isinstance(p, dict):
            continue
        node = (p.get("spec") or {}).get("nodeName")
        if node not in free or (p.get("status") or {}).get("phase") in _TERMINAL_PHASES:
            continue
        try:
            req = pod_requests(p.get("spec") or {})
        except ValueError:
            req = {}              # the API server validated it; count it as a pod without requests
        _subtract(free[node], _add(req, {PODS: _ONE_POD}))
    return free


def _place_existing(pods: list[PodSet], indexes: Iterable[int], candidates: list[dict],
                    free: dict[str, dict[str, int]]) -> tuple[list[tuple[int, str]], list[int]]:
    """First fit of the pods on the candidate nodes; returns (placements, indexes left over)."""
    free = {name: dict(f) for name, f in free.items()}
    placements, remaining = [], []
    for i in indexes:
        demand = _demand(pods[i])
        for node in candidates:
            name = _name(node)
            if selector_mismatch(pods[i], node) is None and _shortfall(demand, free[name]) is None:
                _subtract(free[name], demand)
                placements.append((i, name))
                break
        else:
            remaining.append(i)
    return placements, remaining


# ---------------------------------------------------------------------------- new nodes

@dataclass
class _Option:
    """A pool that can take the pods left over: the scale-up to perform."""
    pool: Pool
    pool_size: int
    placements: list[tuple[int, str]]
    bins: list[list[int]]
    domains: list[str | None]
    domain: str | None = None


@dataclass
class _Refusal:
    """A pool that cannot take them: kind "shape" (it does not admit some pod) or "size" (no room)."""
    pool: Pool
    kind: str
    reason: str
    pool_size: int = 0
    needed: int = 0


def _template(pool: Pool, domain: str | None) -> dict:
    """The node a scale-up of `pool` (in `domain`) would create, for predicate checks."""
    return node_manifest(pool, f"{pool.name_prefix}template", domain, "", "")


def _admission(ps: PodSet, pool: Pool, domain: str | None) -> str | None:
    """Why a fresh node of pool (in domain) cannot run the pod; None if it can."""
    why = selector_mismatch(ps, _template(pool, domain))
    if why:
        return why
    lack = _shortfall(_demand(ps), _parse_resources(pool.allocatable))
    if lack:
        res, need, have = lack
        return f"needs {res}={format_amount(res, need)} but a node has {format_amount(res, have)}"
    return None


def _pool_size(pool: Pool, nodes: list[dict]) -> tuple[int, dict[str, int]]:
    """Nodes of the pool (not being deleted), in total and per topology domain."""
    members = [n for n in nodes if isinstance(n, dict) and not _deleting(n) and _labels(n).get(POOL_LABEL) == pool.name]
    per_domain = {d.name: 0 for d in pool.domains}
    for n in members:
        dom = _labels(n).get(pool.topology_label) if pool.topology_label else None
        if dom in per_domain:
            per_domain[dom] += 1
    return len(members), per_domain


def _pack(pods: list[PodSet], indexes: list[int], alloc: dict[str, int],
          admitted: dict[int, set]) -> list[tuple[list[int], set]]:
    """First-fit decreasing of the pods onto fresh nodes of one shape.

    Pods are sorted by their largest request relative to the node (dominant share), biggest
    first.  A node's domain set is the intersection of the domains that admit its pods.
    """
    def share(i: int) -> Fraction:
        d = _demand(pods[i])
        return max((Fraction(v, alloc[r]) for r, v in d.items() if alloc.get(r)), default=Fraction(0))

    bins: list[tuple[dict[str, int], list[int], set]] = []
    for i in sorted(indexes, key=share, reverse=True):
        demand = _demand(pods[i])
        for n, (free, members, doms) in enumerate(bins):
            common = doms & admitted[i]
            if common and _shortfall(demand, free) is None:
                _subtract(free, demand)
                members.append(i)
                bins[n] = (free, members, common)
                break
        else:
            free = dict(alloc)
            _subtract(free, demand)
            bins.append((free, [i], set(admitted[i])))
    return [(sorted(members), doms) for _, members, doms in bins]


def _too_small(pool: Pool, size: int, needed: int) -> str | None:
    if needed > MAX_NODES_PER_SCALEUP:
        return f"{needed} nodes exceed the {MAX_NODES_PER_SCALEUP} allowed in one scale-up"
    if size + needed > pool.max_nodes:
        return f"pool {pool.name} has {size} node(s) and max {pool.max_nodes}, {needed} more needed"
    return None


def _plan_pool(pool: Pool, pods: list[PodSet], remaining: list[int], placements: list[tuple[int, str]],
               nodes: list[dict]) -> _Option | _Refusal:
    """Can `pool` take the remaining pods, without a topology constraint?"""
    size, per_domain = _pool_size(pool, nodes)
    domains = [d.name for d in pool.domains] or [None]
    admitted: dict[int, set] = {}
    for i in remaining:
        admitted[i] = {d for d in domains if _admission(pods[i], pool, d) is None}
        if not admitted[i]:
            why = _admission(pods[i], pool, domains[0])
            return _Refusal(pool, "shape", f"pod of {pods[i].template_name}: {why}")
    bins = _pack(pods, remaining, _parse_resources(pool.allocatable), admitted)
    needed = len(bins)
    why = _too_small(pool, size, needed)
    if why:
        return _Refusal(pool, "size", why, size, needed)
    if not pool.domains:
        return _Option(pool, size, placements, [b for b, _ in bins], [None] * needed)
    room = {d.name: d.max_nodes - per_domain[d.name] for d in pool.domains}
    total_room = sum(max(r, 0) for r in room.values())
    chosen: list[str | None] = []
    for _, doms in bins:          # greedy: each node to the first domain (file order) with room
        dom = next((d for d in domains if d in doms and room[d] > 0), None)
        if dom is None:
            return _Refusal(pool, "size", f"the topology domains of {pool.name} have room for "
                                          f"{total_room} more node(s), {needed} needed", size, needed)
        room[dom] -= 1
        chosen.append(dom)
    return _Option(pool, size, placements, [b for b, _ in bins], chosen)


def _plan_pool_topology(pool: Pool, pods: list[PodSet], eligible: list[dict], free: dict[str, dict[str, int]],
                        nodes: list[dict]) -> _Option | _Refusal:
    """Can `pool` take the request with all its new nodes (and pods) in one topology domain?"""
    if not pool.domains:
        return _Refusal(pool, "shape", f"pool {pool.name} has no topology domains "
                                       f"(the pods carry {TOPOLOGY_LEVEL_LABEL})")
    size, per_domain = _pool_size(pool, nodes)
    tries = []                    # (domain, placements, bins, room) for domains that admit the pods
    shape_why = ""
    for d in pool.domains:
        candidates = [n for n in eligible if _labels(n).get(pool.topology_label) == d.name]
        placements, remaining = _place_existing(pods, range(len(pods)), candidates, free)
        whys = [(i, _admission(pods[i], pool, d.name)) for i in remaining]
        bad = next(((i, w) for i, w in whys if w), None)
        if bad:
            shape_why = shape_why or f"pod of {pods[bad[0]].template_name}: {bad[1]} (domain {d.name})"
            continue
        admitted = {i: {d.name} for i in remaining}
        bins = [b for b, _ in _pack(pods, remaining, _parse_resources(pool.allocatable), admitted)]
        room = d.max_nodes - per_domain[d.name]
        if len(bins) <= room and _too_small(pool, size, len(bins)) is None:
            return _Option(pool, size, placements, bins, [d.name] * len(bins), domain=d.name)
        tries.append((d.name, bins, room))
    if not tries:
        return _Refusal(pool, "shape", shape_why)
    within = [t for t in tries if len(t[1]) <= t[2]]
    if within:                    # some domain has room, the pool does not
        needed = len(within[0][1])
        return _Refusal(pool, "size", _too_small(pool, size, needed) or "", size, needed)
    best = max(tries, key=lambda t: t[2] - len(t[1]))      # closest to fitting; first on ties
    name, bins, room = best
    return _Refusal(pool, "size", f"no topology domain of {pool.name} has room for {len(bins)} node(s) "
                                  f"(largest room: {max(room, 0)} in {name})", size, len(bins))


# ---------------------------------------------------------------------------- the decision

def _no_pool_reason(pods: list[PodSet], pools: list[Pool], refusals: list[_Refusal]) -> str:
    """Why no pool is even a candidate: name the first pod no pool admits, else each pool's refusal."""
    if not pools:
        return "no node pool is configured"
    podsets = list({id(ps): ps for ps in pods}.values())     # each podset once, in order
    for ps in podsets:
        shaped = [p for p in pools
                  if any(selector_mismatch(ps, _template(p, d)) is None for d in [x.name for x in p.domains] or [None])]
        if not shaped:
            whys = "; ".join(f"{p.name}: {selector_mismatch(ps, _template(p, None))}" for p in pools)
            return f"pod of {ps.template_name} matches no pool ({whys})"
        if any(_admission(ps, p, d) is None for p in shaped for d in [x.name for x in p.domains] or [None]):
            continue
        demand = _demand(ps)
        for res in sorted(demand):
            largest = max(_parse_resources(p.allocatable).get(res, 0) for p in shaped)
            if demand[res] > largest:
                return (f"pod of {ps.template_name} needs {res}={format_amount(res, demand[res])} "
                        f"but the largest node of any pool that admits it has {format_amount(res, largest)}")
        needs = ", ".join(f"{r}={format_amount(r, v)}" for r, v in sorted(ps.requests.items()))
        return f"pod of {ps.template_name} needs {needs}, which no single node shape of {', '.join(p.name for p in shaped)} holds"
    return "no pool can take the whole gang: " + "; ".join(f"{r.pool.name}: {r.reason}" for r in refusals)


def _found(placements: list[tuple[int, str]], domain: str | None = None) -> Verdict:
    return Verdict(fits=True, status_reason=CAPACITY_IS_FOUND, domain=domain, placements=placements)


def _not_found(reason: str) -> Verdict:
    return Verdict(fits=False, status_reason=CAPACITY_IS_NOT_FOUND, reason=reason)


def plan(request: Request, pools: list[Pool], nodes: list[dict], pods: list[dict],
         booked: dict[str, str] | None = None) -> Verdict:
    """Decide where the request's pods go: existing capacity, new nodes of one pool, or nowhere.

    `nodes` and `pods` are the cluster's Node and Pod objects; `booked` maps node name -> uid of
    the ProvisioningRequest whose booking holds that node (other requests may not use it).
    """
    booked = booked or {}
    expanded = request.expand()
    eligible = _eligible_nodes(nodes, booked, request.uid)
    free = _free_capacity(eligible, pods)

    if request.topology:
        seen = []
        for p in pools:
            for d in p.domains:
                if (p.topology_label, d.name) in seen:
                    continue
                seen.append((p.topology_label, d.name))
                candidates = [n for n in eligible if _labels(n).get(p.topology_label) == d.name]
                placements, remaining = _place_existing(expanded, range(len(expanded)), candidates, free)
                if not remaining:
                    return _found(placements, d.name)
        if request.class_name == CHECK_CAPACITY:
            return _not_found(f"check-capacity never adds nodes, and no topology domain has free capacity "
                              f"for all {len(expanded)} pod(s)")
        results = [_plan_pool_topology(p, expanded, eligible, free, nodes) for p in pools]
        expanded_left = expanded
    else:
        placements, remaining = _place_existing(expanded, range(len(expanded)), eligible, free)
        if not remaining:
            return _found(placements)
        if request.class_name == CHECK_CAPACITY:
            first = expanded[remaining[0]].template_name
            return _not_found(f"check-capacity never adds nodes, and {len(remaining)} of {len(expanded)} pod(s) "
                              f"do not fit on existing capacity (first: a pod of {first})")
        results = [_plan_pool(p, expanded, remaining, placements, nodes) for p in pools]
        expanded_left = [expanded[i] for i in remaining]

    option = next((r for r in results if isinstance(r, _Option)), None)
    if option:
        return Verdict(fits=True, status_reason=CAPACITY_IS_PROVISIONED, pool=option.pool.name,
                       new_nodes=len(option.bins), max_nodes=option.pool.max_nodes, pool_size=option.pool_size,
                       domain=option.domain, placements=option.placements,
                       new_node_pods=option.bins, new_node_domains=option.domains)
    refusals = [r for r in results if isinstance(r, _Refusal)]
    sized = next((r for r in refusals if r.kind == "size"), None)
    if sized:
        return Verdict(fits=False, status_reason=CAPACITY_IS_NOT_FOUND, pool=sized.pool.name,
                       new_nodes=sized.needed, max_nodes=sized.pool.max_nodes, pool_size=sized.pool_size,
                       reason=sized.reason)
    return _not_found(_no_pool_reason(expanded_left, pools, refusals))
