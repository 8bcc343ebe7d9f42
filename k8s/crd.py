"""The checks on a CustomResourceDefinition, in one place: is it Established, and does the apiserver's discovery
list what it serves yet.  Pure: plain objects in, answers out; a malformed object reads as empty.

Established is not enough for a client that starts next.  The apiserver serves a CRD's objects once it is
Established, but its discovery documents are rewritten after that by other controllers of its own, and a
controller-runtime program (Kueue) resolves every kind it indexes through discovery when it starts: a Kueue started
in that gap exits with `no matches for kind "Workload" in version "kueue.x-k8s.io/v1beta2"`, as it did in a loaded CI
run.  client-go finds a kind in two steps, and both must know it: the group list at /apis (its aggregated form,
what client-go asks for first), then the version's own resource list at /apis/<group>/<version>.
"""

from __future__ import annotations

from .keys import CRD_ESTABLISHED
from .objects import Obj, is_true, spec

# the aggregated discovery document (apidiscovery.k8s.io/v2), with the plain group list as the fallback client-go
# accepts too
AGGREGATED_DISCOVERY = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"


def established(crd: Obj | None) -> bool:
    """Has the apiserver written Established=True on the CRD?"""
    return is_true(crd, CRD_ESTABLISHED)


def served(crd: Obj | None) -> list[tuple[str, str, str]]:
    """(group, version, plural) for each version the CRD serves."""
    s = spec(crd)
    group, plural = s.get("group"), (s.get("names") or {}).get("plural")
    if not group or not plural:
        return []
    return [(group, v["name"], plural) for v in s.get("versions") or []
            if isinstance(v, dict) and v.get("served") and v.get("name")]


def version_path(group: str, version: str) -> str:
    """The path of one group version's resource list."""
    return f"/apis/{group}/{version}"


def _dicts(items) -> list[Obj]:
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _aggregated(doc: Obj) -> set[tuple[str, str, str]]:
    return {((g.get("metadata") or {}).get("name"), v.get("version"), r.get("resource"))
            for g in _dicts(doc.get("items")) for v in _dicts(g.get("versions")) for r in _dicts(v.get("resources"))}


def _plain_groups(doc: Obj) -> set[tuple[str, str]]:
    return {(g.get("name"), v.get("version")) for g in _dicts(doc.get("groups")) for v in _dicts(g.get("versions"))}


def discovery_gaps(crds: list[Obj], groups: Obj | None, versions: dict[str, Obj | None]) -> list[str]:
    """What discovery does not list yet of what the CRDs serve, as "<plural>.<group>/<version>: why", in the CRDs'
    order; [] once a client started now finds every kind.  groups: the answer at /apis (aggregated, or the plain
    group list); versions: each version_path() answered (None: not found)."""
    groups = groups if isinstance(groups, dict) else {}
    aggregated = groups.get("kind") == "APIGroupDiscoveryList"
    listed, plain = _aggregated(groups), _plain_groups(groups)
    gaps = []
    for group, version, plural in (t for c in crds for t in served(c)):
        what = f"{plural}.{group}/{version}"
        if aggregated and (group, version, plural) not in listed:
            gaps.append(f"{what}: not in the aggregated discovery at /apis")
        elif not aggregated and (group, version) not in plain:
            gaps.append(f"{what}: {group}/{version} not in the group list at /apis")
        elif plural not in {r.get("name") for r in _dicts((versions.get(version_path(group, version)) or {}).get(
                "resources"))}:
            gaps.append(f"{what}: not in {version_path(group, version)}")
    return gaps
