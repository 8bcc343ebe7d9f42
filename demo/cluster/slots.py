"""The walkthrough's slots (pure): manifests/walkthrough-slots.yaml names them; each slot L is a profile of TauCluster
demo that cluster up adds, the demo's profile with its name, namespace, ClusterQueue, flavor and pool all named
wt-L (one name for all: slot_name), and the pool wt-L of manifests/node-pools.yaml.  Side by side, a walkthrough
scenario runs in its slot (scenarios/kit/harness.py slot_of), so that its quota, nodes and pool backoff are its own."""

from __future__ import annotations

import copy

from k8s.keys import SLOT_PREFIX
from k8s.manifests import ManifestError
from k8s.objects import Obj
from k8s.resources import WALKTHROUGH_SLOTS

SLOTS_FILE = "walkthrough-slots.yaml"          # in manifests/ (install.read_slots reads it)


def slot_name(slot: str) -> str:
    """Every name of slot `slot`: its profile, namespace, ClusterQueue, flavor and node pool."""
    return f"{SLOT_PREFIX}{slot}"


def parse_slots(doc: object, where: str) -> list[str]:
    """The slots of a WalkthroughSlots document; ManifestError naming the file otherwise."""
    slots = doc.get("slots") if isinstance(doc, dict) and doc.get("kind") == WALKTHROUGH_SLOTS.kind else None
    if not isinstance(slots, list) or not all(isinstance(x, str) and x for x in slots) or len(set(slots)) < len(slots):
        raise ManifestError(f"{where}: needs kind {WALKTHROUGH_SLOTS.kind} and slots: a list of distinct names")
    return list(slots)


def slot_profile(raw: Obj, slot: str) -> Obj:
    """A slot's profile: the demo's profile `raw` with its name, its namespace, its ClusterQueue, its flavor and every
    node label of the flavor (the pool) named slot_name(slot); the AdmissionCheck, its config, the quota, the
    tolerations and the retries are the demo's."""
    name = slot_name(slot)
    out = copy.deepcopy(raw)
    out.update(name=name, namespaces=[name], clusterQueue=name)
    flavor = out.get("flavor") or {}
    out["flavor"] = {**flavor, "name": name, "nodeLabels": {k: name for k in flavor.get("nodeLabels") or {}}}
    return out


def with_slots(taucluster: Obj, slots: list[str]) -> Obj:
    """The TauCluster with a slot's profile, made from its first profile (the demo's), for each of `slots`."""
    out = copy.deepcopy(taucluster)
    first = out["spec"]["profiles"][0]
    out["spec"]["profiles"] = [*out["spec"]["profiles"], *[slot_profile(first, slot) for slot in slots]]
    return out
