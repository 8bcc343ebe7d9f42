"""The walkthrough's slots on plain data: a slot's profile (demo/cluster/slots.py) and the TauCluster cluster up
applies with them; the slots file, the scenarios that run in a slot, the pools and the slots' names held together;
where each scenario runs, side by side or one after another (scenarios/kit/runner.py slot_of_scenario); what a slot
tells its scenario (harness.Slot)."""

from __future__ import annotations

import copy

import pytest
import yaml

from demo.cluster import install
from demo.cluster import slots as S
from demo.taucluster.profile import parse_all
from k8s.pools import load_pools
from k8s.manifests import ManifestError, load_manifest
from k8s.paths import MANIFESTS, POOLS_FILE
from scenarios.kit import catalogue
from scenarios.kit.harness import Slot, slot_of
from scenarios.kit.runner import slot_of_scenario

[DEMO_TC] = load_manifest(MANIFESTS / "taucluster-demo.yaml")
DEMO = DEMO_TC["spec"]["profiles"][0]


def test_a_slots_profile_is_the_demos_with_every_name_the_slots():
    p = S.slot_profile(DEMO, "race-legacy")
    assert p == {**DEMO, "name": "wt-race-legacy", "namespaces": ["wt-race-legacy"], "clusterQueue": "wt-race-legacy",
                 "flavor": {**DEMO["flavor"], "name": "wt-race-legacy", "nodeLabels": {"agentpool": "wt-race-legacy"}}}
    assert p["admissionCheck"] == DEMO["admissionCheck"] and p["flavor"]["tolerations"] == DEMO["flavor"]["tolerations"]
    assert DEMO["name"] == "gpu-a100-8" and DEMO["flavor"]["nodeLabels"] == {"agentpool": "gpupool"}, "left as it was"
    bare = S.slot_profile({"name": "x"}, "s")
    assert bare == {"name": "wt-s", "namespaces": ["wt-s"], "clusterQueue": "wt-s", "flavor": {"name": "wt-s",
                                                                                              "nodeLabels": {}}}


def test_a_slots_profile_shares_no_part_with_the_demos():
    """Each slot's profile is a copy of its own: a change to one (a slot's quota) is not a change to the demo's,
    and the TauCluster written with them has no YAML aliases (a part shared between profiles is dumped as one)."""
    demo = copy.deepcopy(DEMO)
    p = S.slot_profile(demo, "a")
    nested = [k for k, v in demo.items() if isinstance(v, (dict, list)) and k not in ("flavor", "namespaces")]
    assert nested, "the demo's profile has parts of its own (quota, admission check) to copy"
    for k in nested:
        assert p[k] == demo[k] and p[k] is not demo[k], k
    assert "&id" not in yaml.safe_dump(S.with_slots(DEMO_TC, ["a", "b"]))


def test_the_taucluster_with_slots_keeps_its_profiles_first_and_reads_as_valid_profiles():
    tc = S.with_slots(DEMO_TC, ["a", "b"])
    assert [p["name"] for p in tc["spec"]["profiles"]] == ["gpu-a100-8", "wt-a", "wt-b"]
    assert [p.name for p in parse_all(tc["spec"]["profiles"])] == ["gpu-a100-8", "wt-a", "wt-b"]
    assert len(DEMO_TC["spec"]["profiles"]) == 1, "the file's object is left as it was"
    assert S.with_slots(DEMO_TC, []) == DEMO_TC


@pytest.mark.parametrize("doc", [None, [], {"kind": "WalkthroughSlots"}, {"kind": "Other", "slots": ["a"]},
                                 {"kind": "WalkthroughSlots", "slots": ["a", ""]},
                                 {"kind": "WalkthroughSlots", "slots": ["a", 3]},
                                 {"kind": "WalkthroughSlots", "slots": ["a", "a"]},
                                 {"kind": "WalkthroughSlots", "slots": "a"}])
def test_a_slots_file_that_is_not_a_list_of_distinct_names_is_refused_naming_the_file(doc):
    with pytest.raises(ManifestError, match=r"^f\.yaml: needs kind WalkthroughSlots and slots: a list of distinct names$"):
        S.parse_slots(doc, "f.yaml")
    assert S.parse_slots({"kind": "WalkthroughSlots", "slots": ["a", "b"]}, "f") == ["a", "b"]
    assert S.parse_slots({"kind": "WalkthroughSlots", "slots": []}, "f") == []


def test_the_slots_the_scenarios_pools_and_names_hold_together():
    slots = install.read_slots()
    assert slots == [s.name for s in catalogue.scenarios() if s.slot], "manifests/walkthrough-slots.yaml is the " \
                                                                         "list of scenarios with slot=True, in order"
    walk = set(catalogue.members("all"))
    assert set(slots) <= walk and set(walk) - set(slots) == {"success"}, "every walkthrough scenario but success"
    pools = {p.name: p for p in load_pools(POOLS_FILE)}
    for name in slots:
        slot, profile = slot_of(name), S.slot_profile(DEMO, name)
        assert (slot.namespace, slot.profile, slot.cluster_queue, slot.pool, slot.tag, slot.scoped) == (
            profile["namespaces"][0], profile["name"], profile["clusterQueue"], profile["flavor"]["nodeLabels"]["agentpool"],
            name, True)
        assert pools[slot.pool].labels["agentpool"] == slot.pool and pools[slot.pool].max_nodes == 2
    assert install.read_slots(MANIFESTS / "no-such-folder") == []


def test_where_each_scenario_runs():
    records = catalogue.by_name()
    assert slot_of_scenario(records["race-legacy"], True) == slot_of("race-legacy")
    assert slot_of_scenario(records["race-legacy"], False) == Slot(scoped=True)
    assert slot_of_scenario(records["success"], True) == Slot(scoped=True) == slot_of_scenario(records["success"], False)
    upstream = catalogue.members("upstream")[0]
    assert slot_of_scenario(records[upstream], True) == Slot() == slot_of_scenario(records[upstream], False)


def test_what_a_slot_tells_its_scenario():
    slot = slot_of("never-boot")
    assert slot.node_selector == "cluster-autoscaler.kwok.nodegroup/name=wt-never-boot"
    assert slot.private("race-committed") == "race-committed-never-boot"
    assert Slot().node_selector is None and Slot(scoped=True).node_selector == \
        "cluster-autoscaler.kwok.nodegroup/name=gpupool"
    assert Slot().private("race-committed") == "race-committed"


def test_submit_and_preflight_are_told_the_slot_only_off_the_demos():
    from scenarios.kit.harness import Context
    assert Context(None, "", slot=Slot(scoped=True)).slot_args() == []
    assert Context(None, "", slot=slot_of("timeout-preflight")).slot_args() == [
        "--profile", "wt-timeout-preflight", "-n", "wt-timeout-preflight"]
