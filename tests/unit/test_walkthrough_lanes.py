"""The walkthrough's lanes on plain data: a lane's profile (demo/cluster/lanes.py) and the TauCluster cluster up
applies with them; the lanes file, the scenarios that run on a lane, the pools and the lanes' names held together;
where each scenario runs, side by side or one after another (scenarios/kit/runner.py lane_of_scenario); what a lane
tells its scenario (harness.Lane)."""

from __future__ import annotations

import copy

import pytest
import yaml

from demo.cluster import install
from demo.cluster import lanes as L
from demo.taucluster.profile import parse_all
from k8s.pools import load_pools
from k8s.manifests import ManifestError, load_manifest
from k8s.paths import MANIFESTS, POOLS_FILE
from scenarios.kit import catalogue
from scenarios.kit.harness import Lane, lane_of
from scenarios.kit.runner import lane_of_scenario

[DEMO_TC] = load_manifest(MANIFESTS / "taucluster-demo.yaml")
DEMO = DEMO_TC["spec"]["profiles"][0]


def test_a_lanes_profile_is_the_demos_with_every_name_the_lanes():
    p = L.lane_profile(DEMO, "race-legacy")
    assert p == {**DEMO, "name": "wt-race-legacy", "namespaces": ["wt-race-legacy"], "clusterQueue": "wt-race-legacy",
                 "flavor": {**DEMO["flavor"], "name": "wt-race-legacy", "nodeLabels": {"agentpool": "wt-race-legacy"}}}
    assert p["admissionCheck"] == DEMO["admissionCheck"] and p["flavor"]["tolerations"] == DEMO["flavor"]["tolerations"]
    assert DEMO["name"] == "gpu-a100-8" and DEMO["flavor"]["nodeLabels"] == {"agentpool": "gpupool"}, "left as it was"
    bare = L.lane_profile({"name": "x"}, "l")
    assert bare == {"name": "wt-l", "namespaces": ["wt-l"], "clusterQueue": "wt-l", "flavor": {"name": "wt-l",
                                                                                              "nodeLabels": {}}}


def test_a_lanes_profile_shares_no_part_with_the_demos():
    """Each lane's profile is a copy of its own: a change to one (a lane's quota) is not a change to the demo's,
    and the TauCluster written with them has no YAML aliases (a part shared between profiles is dumped as one)."""
    demo = copy.deepcopy(DEMO)
    p = L.lane_profile(demo, "a")
    nested = [k for k, v in demo.items() if isinstance(v, (dict, list)) and k not in ("flavor", "namespaces")]
    assert nested, "the demo's profile has parts of its own (quota, admission check) to copy"
    for k in nested:
        assert p[k] == demo[k] and p[k] is not demo[k], k
    assert "&id" not in yaml.safe_dump(L.with_lanes(DEMO_TC, ["a", "b"]))


def test_the_taucluster_with_lanes_keeps_its_profiles_first_and_reads_as_valid_profiles():
    tc = L.with_lanes(DEMO_TC, ["a", "b"])
    assert [p["name"] for p in tc["spec"]["profiles"]] == ["gpu-a100-8", "wt-a", "wt-b"]
    assert [p.name for p in parse_all(tc["spec"]["profiles"])] == ["gpu-a100-8", "wt-a", "wt-b"]
    assert len(DEMO_TC["spec"]["profiles"]) == 1, "the file's object is left as it was"
    assert L.with_lanes(DEMO_TC, []) == DEMO_TC


@pytest.mark.parametrize("doc", [None, [], {"kind": "WalkthroughLanes"}, {"kind": "Other", "lanes": ["a"]},
                                 {"kind": "WalkthroughLanes", "lanes": ["a", ""]},
                                 {"kind": "WalkthroughLanes", "lanes": ["a", 3]},
                                 {"kind": "WalkthroughLanes", "lanes": ["a", "a"]},
                                 {"kind": "WalkthroughLanes", "lanes": "a"}])
def test_a_lanes_file_that_is_not_a_list_of_distinct_names_is_refused_naming_the_file(doc):
    with pytest.raises(ManifestError, match=r"^f\.yaml: needs kind WalkthroughLanes and lanes: a list of distinct names$"):
        L.parse_lanes(doc, "f.yaml")
    assert L.parse_lanes({"kind": "WalkthroughLanes", "lanes": ["a", "b"]}, "f") == ["a", "b"]
    assert L.parse_lanes({"kind": "WalkthroughLanes", "lanes": []}, "f") == []


def test_the_lanes_the_scenarios_pools_and_names_hold_together():
    lanes = install.read_lanes()
    assert lanes == [s.name for s in catalogue.scenarios() if s.lane], "manifests/walkthrough-lanes.yaml is the " \
                                                                         "list of scenarios with lane=True, in order"
    walk = set(catalogue.members("all"))
    assert set(lanes) <= walk and set(walk) - set(lanes) == {"success"}, "every walkthrough scenario but success"
    pools = {p.name: p for p in load_pools(POOLS_FILE)}
    for name in lanes:
        lane, profile = lane_of(name), L.lane_profile(DEMO, name)
        assert (lane.namespace, lane.profile, lane.cluster_queue, lane.pool, lane.tag, lane.scoped) == (
            profile["namespaces"][0], profile["name"], profile["clusterQueue"], profile["flavor"]["nodeLabels"]["agentpool"],
            name, True)
        assert pools[lane.pool].labels["agentpool"] == lane.pool and pools[lane.pool].max_nodes == 2
    assert install.read_lanes(MANIFESTS / "no-such-folder") == []


def test_where_each_scenario_runs():
    records = catalogue.by_name()
    assert lane_of_scenario(records["race-legacy"], True) == lane_of("race-legacy")
    assert lane_of_scenario(records["race-legacy"], False) == Lane(scoped=True)
    assert lane_of_scenario(records["success"], True) == Lane(scoped=True) == lane_of_scenario(records["success"], False)
    upstream = catalogue.members("upstream")[0]
    assert lane_of_scenario(records[upstream], True) == Lane() == lane_of_scenario(records[upstream], False)


def test_what_a_lane_tells_its_scenario():
    lane = lane_of("never-boot")
    assert lane.node_selector == "cluster-autoscaler.kwok.nodegroup/name=wt-never-boot"
    assert lane.private("race-committed") == "race-committed-never-boot"
    assert Lane().node_selector is None and Lane(scoped=True).node_selector == \
        "cluster-autoscaler.kwok.nodegroup/name=gpupool"
    assert Lane().private("race-committed") == "race-committed"


def test_submit_and_preflight_are_told_the_lane_only_off_the_demos():
    from scenarios.kit.harness import Context
    assert Context(None, "", lane=Lane(scoped=True)).lane_args() == []
    assert Context(None, "", lane=lane_of("timeout-preflight")).lane_args() == [
        "--profile", "wt-timeout-preflight", "-n", "wt-timeout-preflight"]
