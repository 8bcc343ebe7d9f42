"""A TauCluster profile and the Kueue objects it stands for (pure).

A profile is what a researcher names at submit (`--profile gpu-a100-8`): a LocalQueue in each of its namespaces,
the ClusterQueue behind them with its GPU quota, one ResourceFlavor (the node pool's labels and tolerations), and
the ProvisioningRequest AdmissionCheck with its ProvisioningRequestConfig (the class, the retry strategy, the
topology update of design §10).  `parse_profile()` reads one from a TauCluster's `spec.profiles[]` (the CRD's validation
first; these checks again, so a bad object read from a cluster is refused with the field that is wrong),
`objects()` gives the objects, `differences()` the fields in which an object found differs from the wanted one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from k8s.keys import (BEST_EFFORT_ATOMIC, CHECK_CAPACITY, GPU, PROVISIONING_CONTROLLER, TAUCLUSTER_LABEL,
                      TAUCLUSTER_PROFILE_LABEL, TOPOLOGY_DOMAIN_LABEL)
from k8s.objects import Obj
from k8s.quantity import parse_quantity_exact
from k8s.resources import ADMISSION_CHECK, CLUSTER_QUEUE, LOCAL_QUEUE, PROVREQ_CONFIG, RESOURCE_FLAVOR

CLASSES = (BEST_EFFORT_ATOMIC, CHECK_CAPACITY)       # the classes Kueue's check can ask for, both atomic-capable
TOPOLOGY_DETAIL = "topology-domain"                  # the provisioningClassDetails key the autoscaler fills
CPU_QUOTA, MEMORY_QUOTA = "256", "2Ti"               # the ClusterQueue's other covered resources (not limiting)
MAX_GPU_QUOTA = 100_000                              # a profile's gpuQuota at most (the CRD's `maximum` says it too)


class BadProfile(ValueError):
    """A profile that cannot stand for Kueue objects; the message names the field."""


@dataclass(frozen=True)
class RetryStrategy:
    backoff_limit_count: int = 2
    backoff_base_seconds: int = 5
    backoff_max_seconds: int = 20


@dataclass(frozen=True)
class Profile:
    name: str                                   # the LocalQueue's name in every namespace
    namespaces: tuple[str, ...]
    cluster_queue: str
    flavor: str
    node_labels: dict[str, str]
    gpu_quota: int
    check: str                                  # the AdmissionCheck's and the ProvisioningRequestConfig's name
    provisioning_class: str = BEST_EFFORT_ATOMIC
    tolerations: tuple[dict, ...] = ()
    retry: RetryStrategy = field(default_factory=RetryStrategy)


def _field(where: str, raw: Obj, key: str, kind: type):
    value = raw.get(key)
    if not isinstance(value, kind) or (kind is str and not value):
        wanted = {str: "a non-empty string", dict: "an object", list: "a list"}[kind]
        raise BadProfile(f"{where}.{key}: must be {wanted}, got {value!r}")
    return value


def _optional(where: str, raw: Obj, key: str, kind: type, absent):
    return absent if raw.get(key) is None else _field(where, raw, key, kind)


def parse_profile(raw: Obj, where: str = "spec.profiles[0]") -> Profile:
    """One profile of a TauCluster's spec; BadProfile naming the field otherwise."""
    if not isinstance(raw, dict):
        raise BadProfile(f"{where}: must be an object, got {raw!r}")
    name = _field(where, raw, "name", str)
    namespaces = _field(where, raw, "namespaces", list)
    if not namespaces or not all(isinstance(n, str) and n for n in namespaces) or len(set(namespaces)) < len(namespaces):
        raise BadProfile(f"{where}.namespaces: must be distinct non-empty names, at least one, got {namespaces!r}")
    flavor = _field(where, raw, "flavor", dict)
    labels = _field(f"{where}.flavor", flavor, "nodeLabels", dict)
    if not labels or not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        raise BadProfile(f"{where}.flavor.nodeLabels: must map label names to values, at least one, got {labels!r}")
    tolerations = _optional(f"{where}.flavor", flavor, "tolerations", list, [])
    if not all(isinstance(t, dict) for t in tolerations):
        raise BadProfile(f"{where}.flavor.tolerations: must be a list of tolerations, got {tolerations!r}")
    quota = raw.get("gpuQuota")
    if not isinstance(quota, int) or isinstance(quota, bool) or quota < 0:
        raise BadProfile(f"{where}.gpuQuota: must be a whole number of GPUs, 0 or more, got {quota!r}")
    if quota > MAX_GPU_QUOTA:
        raise BadProfile(f"{where}.gpuQuota: must be {MAX_GPU_QUOTA} GPUs at most, got {quota!r}")
    provisioning_class = raw.get("provisioningClass", BEST_EFFORT_ATOMIC)
    if provisioning_class not in CLASSES:
        raise BadProfile(f"{where}.provisioningClass: must be one of {', '.join(CLASSES)}, got {provisioning_class!r}")
    retry_raw = _optional(where, raw, "retryStrategy", dict, {})
    counts = {}
    for key in ("backoffLimitCount", "backoffBaseSeconds", "backoffMaxSeconds"):
        value = retry_raw.get(key, getattr(RetryStrategy(), _snake(key)))
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise BadProfile(f"{where}.retryStrategy.{key}: must be a whole number, 0 or more, got {value!r}")
        counts[_snake(key)] = value
    if counts["backoff_max_seconds"] < counts["backoff_base_seconds"]:
        raise BadProfile(f"{where}.retryStrategy: backoffMaxSeconds must be at least backoffBaseSeconds, got "
                         f"{counts['backoff_max_seconds']} < {counts['backoff_base_seconds']}")
    return Profile(name=name, namespaces=tuple(namespaces), cluster_queue=_field(where, raw, "clusterQueue", str),
                   flavor=_field(f"{where}.flavor", flavor, "name", str), node_labels=dict(labels),
                   gpu_quota=quota, check=_field(where, raw, "admissionCheck", str),
                   provisioning_class=provisioning_class, tolerations=tuple(tolerations), retry=RetryStrategy(**counts))


def _snake(key: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)


def parse_all(profiles: object) -> list[Profile]:
    """Every profile of `spec.profiles`; BadProfile for a bad one or a name twice."""
    if not isinstance(profiles, list) or not profiles:
        raise BadProfile(f"spec.profiles: must be a list of at least one profile, got {profiles!r}")
    out = [parse_profile(p, f"spec.profiles[{i}]") for i, p in enumerate(profiles)]
    names = [p.name for p in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise BadProfile(f"spec.profiles: the profile name {twice[0]!r} is used twice")
    return out


def marks(taucluster: str, profile: Profile) -> dict[str, str]:
    """The labels that say an object is this TauCluster's, for this profile."""
    return {TAUCLUSTER_LABEL: taucluster, TAUCLUSTER_PROFILE_LABEL: profile.name}


def objects(profile: Profile, taucluster: str) -> list[Obj]:
    """The Kueue objects of a profile, each marked as the TauCluster's, in the order they are made: the flavor,
    the config, the check, the ClusterQueue, then a LocalQueue per namespace."""
    mine = marks(taucluster, profile)
    retry = profile.retry
    return [
        RESOURCE_FLAVOR.new(profile.flavor, labels=dict(mine), spec={
            "nodeLabels": dict(profile.node_labels),
            **({"tolerations": [dict(t) for t in profile.tolerations]} if profile.tolerations else {})}),
        PROVREQ_CONFIG.new(profile.check, labels=dict(mine), spec={
            "provisioningClassName": profile.provisioning_class,
            "managedResources": [GPU],
            "retryStrategy": {"backoffLimitCount": retry.backoff_limit_count,
                              "backoffBaseSeconds": retry.backoff_base_seconds,
                              "backoffMaxSeconds": retry.backoff_max_seconds},
            "podSetUpdates": {"nodeSelector": [{"key": TOPOLOGY_DOMAIN_LABEL,
                                                "valueFromProvisioningClassDetail": TOPOLOGY_DETAIL}]}}),
        ADMISSION_CHECK.new(profile.check, labels=dict(mine), spec={
            "controllerName": PROVISIONING_CONTROLLER,
            "parameters": {"apiGroup": PROVREQ_CONFIG.group, "kind": PROVREQ_CONFIG.kind, "name": profile.check}}),
        CLUSTER_QUEUE.new(profile.cluster_queue, labels=dict(mine), spec={
            "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": ["cpu", "memory", GPU], "flavors": [{
                "name": profile.flavor, "resources": [
                    {"name": "cpu", "nominalQuota": CPU_QUOTA}, {"name": "memory", "nominalQuota": MEMORY_QUOTA},
                    {"name": GPU, "nominalQuota": str(profile.gpu_quota)}]}]}],
            "admissionChecksStrategy": {"admissionChecks": [{"name": profile.check, "onFlavors": [profile.flavor]}]}}),
        *[LOCAL_QUEUE.new(profile.name, ns, labels=dict(mine), spec={"clusterQueue": profile.cluster_queue})
          for ns in profile.namespaces],
    ]


def differences(want: Obj, have: Obj, path: str = "spec") -> list[str]:
    """The fields of `want` under `path` that `have` does not hold as wanted ("spec.resourceGroups[0]...: want X,
    have Y"); fields only `have` sets (the apiserver's defaults) are not differences."""
    return [f"{where}: want {w!r}, have {h!r}" for where, w, h in divergences(want, have, path)]


def divergences(want: Obj, have: Obj, path: str = "spec") -> list[tuple[str, object, object]]:
    """differences() as (field, wanted value, value held)."""
    return _diff(want.get(path), have.get(path), path)


def _diff(want: object, have: object, path: str) -> list[tuple[str, object, object]]:
    if isinstance(want, dict):
        if not isinstance(have, dict):
            return [(path, want, have)]
        return [d for key, value in want.items() for d in _diff(value, have.get(key), f"{path}.{key}")]
    if isinstance(want, list):
        if not isinstance(have, list) or len(have) != len(want):
            return [(path, want, have)]
        return [d for i, (a, b) in enumerate(zip(want, have)) for d in _diff(a, b, f"{path}[{i}]")]
    if (want != have or type(want) is not type(have)) and not _same_quantity(want, have):
        return [(path, want, have)]
    return []


def _same_quantity(want: object, have: object) -> bool:
    """"16" and 16, "2Ti" and "2048Gi": the apiserver may hand a quantity back in another spelling (anything else,
    True, None or a name, is no quantity)."""
    try:
        return parse_quantity_exact(str(want)) == parse_quantity_exact(str(have))
    except ValueError:
        return False

