"""A TauCluster profile and the Kueue objects it stands for (pure).

A profile is what a researcher names at submit (`--profile gpu-a100-8`): a LocalQueue in each of its namespaces,
the ClusterQueue behind them with its GPU quota, one ResourceFlavor (the node pool's labels and tolerations), and
the ProvisioningRequest AdmissionCheck with its ProvisioningRequestConfig (the class, the retry strategy, the
topology update of design §10).  `parse_profile()` reads one from a TauCluster's `spec.profiles[]` (the CRD's validation
first; these checks again, so a bad object read from a cluster is refused with the field that is wrong),
`objects()` gives the objects, `differences()` the fields in which an object found differs from the wanted one.

**Quotas** (`quotas()`): the ClusterQueue covers cpu, memory and GPUs, so each needs a quota that lets the Jobs in.
`gpuQuota` is required; `cpuQuota` and `memoryQuota` are optional quantities, and a profile that leaves one out gets
CPU_PER_GPU CPUs and MEMORY_PER_GPU of memory per GPU of `gpuQuota`: at least what the largest GPU node of
manifests/node-pools.yaml holds per GPU (96 CPUs, 900Gi, 8 GPUs: 12 CPUs, 112.5Gi), so that a queue's CPU and memory
never run out before the GPU nodes its GPU quota stands for would (the profile names only the flavor's node labels,
not a node shape: on a cluster taken on with `cluster attach` the node groups are the cloud's).  Each quota has a
stated bound, MAX_GPU_QUOTA, MAX_CPU_QUOTA, MAX_MEMORY_QUOTA (the CRD's too), and nothing else caps a profile.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction

from k8s.keys import (BEST_EFFORT_ATOMIC, CHECK_CAPACITY, GPU, PROVISIONING_CONTROLLER, TAUCLUSTER_LABEL,
                      TAUCLUSTER_PROFILE_LABEL, TOPOLOGY_DOMAIN_LABEL)
from k8s.objects import Obj
from k8s.quantity import format_milli, parse_quantity_exact
from k8s.resources import ADMISSION_CHECK, CLUSTER_QUEUE, LOCAL_QUEUE, PROVREQ_CONFIG, RESOURCE_FLAVOR

CLASSES = (BEST_EFFORT_ATOMIC, CHECK_CAPACITY)       # the classes Kueue's check can ask for, both atomic-capable
TOPOLOGY_DETAIL = "topology-domain"                  # the provisioningClassDetails key the autoscaler fills
MAX_GPU_QUOTA = 100_000                              # a profile's gpuQuota at most (the CRD's `maximum` says it too)
# Without cpuQuota / memoryQuota, per GPU of gpuQuota: the largest GPU node shape of manifests/node-pools.yaml per GPU
# (12 CPUs, 112.5Gi) rounded up; 16 GPUs give the 256 CPUs and 2Ti that manifests/kueue-objects.yaml holds.
CPU_PER_GPU, MEMORY_PER_GPU = 16, "128Gi"
# cpuQuota and memoryQuota at most (the CRD says them too): 100 CPUs and 1Ti per GPU at MAX_GPU_QUOTA, and far below
# what Kueue counts in an int64 (milli-CPUs, bytes) even summed over a cohort of many such queues.
MAX_CPU_QUOTA, MAX_MEMORY_QUOTA = "10M", "100Pi"
# A quantity, 0 or more, as the CRD's `pattern` for cpuQuota and memoryQuota says it (a unit test holds the two alike).
QUANTITY_PATTERN = r"^([0-9]+(\.[0-9]*)?|\.[0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,3})?$"
MAX_QUANTITY_LENGTH = 32                             # the CRD's maxLength for a quantity written as a string


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
    cpu_quota: str | None = None                # as the profile gives it; None: CPU_PER_GPU per GPU (quotas())
    memory_quota: str | None = None             # as the profile gives it; None: MEMORY_PER_GPU per GPU
    cohort: str | None = None                   # the ClusterQueue's cohort (spec.cohortName); None: in none


def quotas(profile: Profile) -> dict[str, str]:
    """The ClusterQueue's nominal quota of each resource it covers, in the order it lists them: cpu and memory as the
    profile gives them, else scaled from its GPU quota (CPU_PER_GPU, MEMORY_PER_GPU per GPU)."""
    per_gpu = {"cpu": Fraction(CPU_PER_GPU), "memory": parse_quantity_exact(MEMORY_PER_GPU)}
    given = {"cpu": profile.cpu_quota, "memory": profile.memory_quota}
    return {**{r: given[r] if given[r] is not None else format_milli(r, int(per_gpu[r] * profile.gpu_quota * 1000))
               for r in ("cpu", "memory")}, GPU: str(profile.gpu_quota)}


def _field(where: str, raw: Obj, key: str, kind: type):
    value = raw.get(key)
    if not isinstance(value, kind) or (kind is str and not value):
        wanted = {str: "a non-empty string", dict: "an object", list: "a list"}[kind]
        raise BadProfile(f"{where}.{key}: must be {wanted}, got {value!r}")
    return value


def _optional(where: str, raw: Obj, key: str, kind: type, absent):
    return absent if raw.get(key) is None else _field(where, raw, key, kind)


def _quantity(where: str, raw: Obj, key: str, most: str) -> str | None:
    """An optional quota (cpuQuota, memoryQuota): a whole number or a quantity string, 0 or more and `most` at most,
    as given (a number as its digits); None when absent."""
    value = raw.get(key)
    if value is None:
        return None
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(text, str) or len(text) > MAX_QUANTITY_LENGTH or not re.fullmatch(QUANTITY_PATTERN, text):
        raise BadProfile(f"{where}.{key}: must be a quantity, 0 or more (e.g. 512, 1500m, 4Ti), got {value!r}")
    try:
        amount = parse_quantity_exact(text)
    except ValueError as e:
        raise BadProfile(f"{where}.{key}: must be a quantity, 0 or more (e.g. 512, 1500m, 4Ti), got {value!r}") from e
    if amount > parse_quantity_exact(most):
        raise BadProfile(f"{where}.{key}: must be {most} at most, got {value!r}")
    return text


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
                   provisioning_class=provisioning_class, tolerations=tuple(tolerations), retry=RetryStrategy(**counts),
                   cpu_quota=_quantity(where, raw, "cpuQuota", MAX_CPU_QUOTA),
                   memory_quota=_quantity(where, raw, "memoryQuota", MAX_MEMORY_QUOTA),
                   cohort=_cohort(where, raw))


def _cohort(where: str, raw: Obj) -> str | None:
    """The optional cohort: a DNS-1123 label (Kueue's cohortName), or None."""
    value = raw.get("cohort")
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 63 or not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", value):
        raise BadProfile(f"{where}.cohort: must be a DNS-1123 label (a cohort's name), got {value!r}")
    return value


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
    retry, quota = profile.retry, quotas(profile)
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
            **({"cohortName": profile.cohort} if profile.cohort else {}),
            "resourceGroups": [{"coveredResources": list(quota), "flavors": [{
                "name": profile.flavor, "resources": [
                    {"name": name, "nominalQuota": amount} for name, amount in quota.items()]}]}],
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

