"""The walkthrough's lanes (pure): manifests/walkthrough-lanes.yaml names them; each lane L is a profile of TauCluster
demo that cluster up adds, the demo's profile with its name, namespace, ClusterQueue, flavor and pool all named
wt-L (one name for all: lane_name), and the pool wt-L of manifests/node-pools.yaml.  Side by side, a walkthrough
scenario runs on its lane (scenarios/kit/harness.py lane_of), so that its quota, nodes and pool backoff are its own."""

from __future__ import annotations

import copy

from k8s.keys import LANE_PREFIX
from k8s.manifests import ManifestError
from k8s.objects import Obj
from k8s.resources import WALKTHROUGH_LANES

LANES_FILE = "walkthrough-lanes.yaml"          # in manifests/ (install.read_lanes reads it)


def lane_name(lane: str) -> str:
    """Every name of lane `lane`: its profile, namespace, ClusterQueue, flavor and node pool."""
    return f"{LANE_PREFIX}{lane}"


def parse_lanes(doc: object, where: str) -> list[str]:
    """The lanes of a WalkthroughLanes document; ManifestError naming the file otherwise."""
    lanes = doc.get("lanes") if isinstance(doc, dict) and doc.get("kind") == WALKTHROUGH_LANES.kind else None
    if not isinstance(lanes, list) or not all(isinstance(x, str) and x for x in lanes) or len(set(lanes)) < len(lanes):
        raise ManifestError(f"{where}: needs kind {WALKTHROUGH_LANES.kind} and lanes: a list of distinct names")
    return list(lanes)


def lane_profile(raw: Obj, lane: str) -> Obj:
    """A lane's profile: the demo's profile `raw` with its name, its namespace, its ClusterQueue, its flavor and every
    node label of the flavor (the pool) named lane_name(lane); the AdmissionCheck, its config, the quota, the
    tolerations and the retries are the demo's."""
    name = lane_name(lane)
    out = copy.deepcopy(raw)
    out.update(name=name, namespaces=[name], clusterQueue=name)
    flavor = out.get("flavor") or {}
    out["flavor"] = {**flavor, "name": name, "nodeLabels": {k: name for k in flavor.get("nodeLabels") or {}}}
    return out


def with_lanes(taucluster: Obj, lanes: list[str]) -> Obj:
    """The TauCluster with a lane's profile, made from its first profile (the demo's), for each of `lanes`."""
    out = copy.deepcopy(taucluster)
    first = out["spec"]["profiles"][0]
    out["spec"]["profiles"] = [*out["spec"]["profiles"], *[lane_profile(first, lane) for lane in lanes]]
    return out
