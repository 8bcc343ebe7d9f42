"""A ProvisioningRequest and its PodTemplates turned into pods to place: parsing and validation (pure).

Everything malformed becomes a RequestError whose reason and message go into a condition: a
missing PodTemplate gives the real autoscaler's FailedToCreatePods message; a malformed spec
gives InvalidProvisioningRequest (this fake's own reason).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from k8s.keys import BEST_EFFORT_ATOMIC, CHECK_CAPACITY, GPU, PARAM_PROCESSOR_INSTANCE, TOPOLOGY_LEVEL_LABEL
from k8s.quantity import MAX_MILLI, parse_quantity

from .conditions import Reason

SUPPORTED_CLASSES = frozenset({BEST_EFFORT_ATOMIC, CHECK_CAPACITY})


def supported(provreq: dict) -> bool:
    """Whether the autoscaler handles this request (provisioningrequest.SupportedProvisioningClass of one run
    without --check-capacity-processor-instance, as this fake always is): best-effort-atomic, and check-capacity
    unless parameters.processorInstance names an instance (another autoscaler's)."""
    spec = provreq.get("spec") if isinstance(provreq, dict) and isinstance(provreq.get("spec"), dict) else {}
    cls = spec.get("provisioningClassName")
    params = spec.get("parameters") if isinstance(spec.get("parameters"), dict) else {}
    return cls == BEST_EFFORT_ATOMIC or (cls == CHECK_CAPACITY and not params.get(PARAM_PROCESSOR_INSTANCE))
MAX_PODSETS = 32                 # API limit on spec.podSets
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


def _err(message: str, reason: str = Reason.FAILED_TO_CREATE_PODS):
    raise RequestError(reason, message)


def is_str_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def checked_quantity(value: Any, where: str) -> int:
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
            out[res] = checked_quantity(qty, f"{where}.resources.{kind}.{res}")
    return out


def add_requests(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
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
        total = add_requests(total, _container_requests(c, f"spec.containers[{i}]"))
    inits = spec.get("initContainers") or []
    if not isinstance(inits, list):
        raise ValueError("spec.initContainers: must be a list")
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for i, c in enumerate(inits):
        req = _container_requests(c, f"spec.initContainers[{i}]")
        if c.get("restartPolicy") == "Always":
            total = add_requests(total, req)
            sidecars = add_requests(sidecars, req)
            init_peak = _max(init_peak, sidecars)
        else:
            init_peak = _max(init_peak, add_requests(req, sidecars))
    total = _max(total, init_peak)
    overhead = spec.get("overhead") or {}
    if not isinstance(overhead, dict):
        raise ValueError("spec.overhead: must be a mapping")
    total = add_requests(total, {r: checked_quantity(q, f"spec.overhead.{r}") for r, q in overhead.items()})
    for res, milli in total.items():
        if milli > MAX_MILLI:
            raise ValueError(f"spec: the pod's total {res} request is absurdly large")
    return total


def validate_tolerations(value: Any, where: str) -> list[dict]:
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
        if len(values) != 1 or not is_int(values[0]):
            raise ValueError(f"{where}.values: {op} needs exactly one integer value")


def is_int(s: str) -> bool:
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
        if not is_str_map(node_selector):
            raise ValueError("spec.nodeSelector: must map strings to strings")
        tolerations = validate_tolerations(spec.get("tolerations") or [], "spec.tolerations")
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
        _err("the ProvisioningRequest must be a mapping", Reason.INVALID_REQUEST)
    meta = provreq.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        _err("metadata.name: is required", Reason.INVALID_REQUEST)
    namespace = meta.get("namespace") or "default"
    if not isinstance(namespace, str):
        _err("metadata.namespace: must be a string", Reason.INVALID_REQUEST)
    spec = provreq.get("spec")
    if not isinstance(spec, dict):
        _err("spec: is required", Reason.INVALID_REQUEST)
    class_name = spec.get("provisioningClassName") or ""
    if not isinstance(class_name, str):
        _err("spec.provisioningClassName: must be a string", Reason.INVALID_REQUEST)

    raw_sets = spec.get("podSets")
    if not isinstance(raw_sets, list) or not raw_sets:
        _err("spec.podSets: must list at least one pod set", Reason.INVALID_REQUEST)
    if len(raw_sets) > MAX_PODSETS:
        _err(f"spec.podSets: at most {MAX_PODSETS} pod sets are allowed (got {len(raw_sets)})", Reason.INVALID_REQUEST)
    refs: list[tuple[str, int]] = []
    for i, ps in enumerate(raw_sets):
        ref = ps.get("podTemplateRef") if isinstance(ps, dict) else None
        name = ref.get("name") if isinstance(ref, dict) else None
        if not isinstance(name, str) or not name:
            _err(f"spec.podSets[{i}].podTemplateRef.name: is required", Reason.INVALID_REQUEST)
        count = ps.get("count")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            _err(f"spec.podSets[{i}].count: must be an integer >= 1 (got {count!r})", Reason.INVALID_REQUEST)
        refs.append((name, count))

    parameters = spec.get("parameters") or {}
    if not is_str_map(parameters):
        _err("spec.parameters: must map strings to strings", Reason.INVALID_REQUEST)

    missing = [name for name, _ in refs if name not in templates]
    if missing:
        _err(f"missing pod templates, {len(refs)} pod templates were referenced, "
             f"{len(missing)} templates were missing: {','.join(missing)}")
    podsets = [_podset(templates[name], name, count, namespace) for name, count in refs]
    return Request(namespace=namespace, name=meta["name"], uid=str(meta.get("uid") or ""),
                   class_name=class_name, podsets=podsets, parameters=dict(parameters))


def gang_request(count: int, gpus_per_pod: int, cpu: str = "8", memory: str = "64Gi",
                 node_selector: dict | None = None, tolerations: list[dict] | None = None) -> Request:
    """A synthetic best-effort-atomic request of `count` identical pods (podset "main"), of no object: its
    namespace, name and uid are empty."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        _err(f"count must be an integer >= 1 (got {count!r})")
    if isinstance(gpus_per_pod, bool) or not isinstance(gpus_per_pod, int) or gpus_per_pod < 0:
        _err(f"gpus per pod must be a non-negative integer (got {gpus_per_pod!r})")
    try:
        requests = {"cpu": checked_quantity(cpu, "cpu"), "memory": checked_quantity(memory, "memory")}
        if gpus_per_pod:
            requests[GPU] = checked_quantity(gpus_per_pod, GPU)
        tols = validate_tolerations(list(tolerations or []), "tolerations")
    except ValueError as e:
        _err(str(e))
    if not is_str_map(node_selector or {}):
        _err("nodeSelector must map strings to strings")
    ps = PodSet("main", count, requests, dict(node_selector or {}), tols)      # no affinity, no topology
    return Request("", "", "", BEST_EFFORT_ATOMIC, [ps])
