"""What the TauCluster controller sends besides plan.py's decisions, and when it looks again
(demo/taucluster/patches.py), on plain objects: each write's body, the finalizer given and given back, the status
patch (only when the status changed), the wait before the next look."""

from __future__ import annotations

import pytest

from demo.taucluster import patches
from demo.taucluster import plan as P
from k8s.keys import MODE_ADOPT, MODE_EXTERNAL, MODE_MANAGE, TAUCLUSTER_FINALIZER

NOW = "2026-12-01T10:00:00Z"
LATER = "2026-12-01T10:05:00Z"


def cq(**md) -> dict:
    return {"kind": "ClusterQueue", "metadata": {"name": "gpu-a100", "resourceVersion": "7", **md},
            "spec": {"namespaceSelector": {}, "resourceGroups": []}}


def test_an_update_puts_the_spec_back_and_nothing_else():
    assert patches.write_body(P.SetupWrite("update", cq(labels={"a": "b"}), "why")) == {
        "spec": {"namespaceSelector": {}, "resourceGroups": []}}


@pytest.mark.parametrize("verb", ["adopt", "release"])
def test_adopting_and_releasing_send_the_labels_and_annotations_as_planned(verb):
    both = cq(labels={"l": "1"}, annotations={"a": "2"}, uid="u")
    assert patches.write_body(P.SetupWrite(verb, both, "why")) == {"metadata": {"labels": {"l": "1"},
                                                                                "annotations": {"a": "2"}}}
    assert patches.write_body(P.SetupWrite(verb, cq(labels={"l": "1"}), "why")) == {"metadata": {"labels": {"l": "1"}}}
    assert patches.write_body(P.SetupWrite(verb, cq(annotations={}), "why")) == {"metadata": {"annotations": {}}}
    assert patches.write_body(P.SetupWrite(verb, cq(), "why")) == {"metadata": {}}


@pytest.mark.parametrize("verb", ["create", "delete"])
def test_a_create_or_a_delete_sends_no_patch(verb):
    assert patches.write_body(P.SetupWrite(verb, cq(), "why")) is None


def tc(*finalizers, mode=MODE_MANAGE, generation=3, status=None) -> dict:
    md = {"name": "demo", "generation": generation, "resourceVersion": "10"}
    if finalizers:
        md["finalizers"] = list(finalizers)
    out = {"metadata": md, "spec": {"mode": mode}}
    if status is not None:
        out["status"] = status
    return out


@pytest.mark.parametrize("mode", [MODE_MANAGE, MODE_ADOPT, None])
def test_a_taucluster_not_in_external_mode_gets_the_finalizer_once(mode):
    assert patches.finalizer_added(tc(), mode) == {"metadata": {"finalizers": [TAUCLUSTER_FINALIZER]}}
    assert patches.finalizer_added(tc("other/x"), mode) == {"metadata": {"finalizers": ["other/x",
                                                                                        TAUCLUSTER_FINALIZER]}}
    assert patches.finalizer_added(tc(TAUCLUSTER_FINALIZER), mode) is None
    assert patches.finalizer_added(tc("other/x", TAUCLUSTER_FINALIZER), mode) is None


def test_an_external_taucluster_gets_no_finalizer():
    assert patches.finalizer_added(tc(), MODE_EXTERNAL) is None


def test_a_deleted_taucluster_gives_back_only_its_finalizer():
    assert patches.finalizer_removed(tc(TAUCLUSTER_FINALIZER)) == {"metadata": {"finalizers": None}}
    assert patches.finalizer_removed(tc("a/x", TAUCLUSTER_FINALIZER, "b/y")) == {"metadata": {"finalizers": ["a/x",
                                                                                                        "b/y"]}}
    assert patches.finalizer_removed(tc("a/x")) is None
    assert patches.finalizer_removed(tc()) is None


def plan(profile="gpu-a100-8", ready=True, reason="Ready", message="ok") -> P.ProfilePlan:
    return P.ProfilePlan(profile, (), P.Ready(ready, reason, message))


def test_the_status_patch_says_the_mode_the_generation_and_each_profiles_condition():
    plans = [plan(), plan("other", False, "NotReady", "the ClusterQueue is not active")]
    patch = patches.status_patch(tc(), plans, "", NOW)
    assert patch == {"status": {"mode": MODE_MANAGE, "observedGeneration": 3,
                                "profiles": P.conditions(plans, [], NOW, 3), "invalid": None}}


def test_a_status_that_already_says_it_is_not_written_again():
    written = patches.status_patch(tc(), [plan()], "", NOW)["status"]
    del written["invalid"]
    assert patches.status_patch(tc(status=written), [plan()], "", LATER) is None, "the transition time is kept"
    assert patches.status_patch(tc(status=written, generation=4), [plan()], "", LATER) is not None
    moved = patches.status_patch(tc(status=written), [plan(ready=False)], "", LATER)["status"]
    assert moved["profiles"] == P.conditions([plan(ready=False)], written["profiles"], LATER, 3)


def test_an_invalid_spec_is_said_and_cleared_once_valid():
    bad = patches.status_patch(tc(), [], "profiles[0].gpuQuota: must be at least 1", NOW)
    assert bad == {"status": {"mode": MODE_MANAGE, "observedGeneration": 3, "profiles": [],
                              "invalid": "profiles[0].gpuQuota: must be at least 1"}}
    assert patches.status_patch(tc(status=bad["status"]), [], "profiles[0].gpuQuota: must be at least 1", LATER) is None
    fixed = patches.status_patch(tc(status=bad["status"]), [], "", LATER)
    assert fixed == {"status": {"mode": MODE_MANAGE, "observedGeneration": 3, "profiles": [], "invalid": None}}


def test_the_previous_status_keeps_each_profiles_transition_time():
    old = {"mode": MODE_MANAGE, "observedGeneration": 2,
           "profiles": P.conditions([plan()], [], NOW, 2)}
    patch = patches.status_patch(tc(status=old), [plan()], "", LATER)
    assert patch["status"]["profiles"][0]["conditions"][0]["lastTransitionTime"] == NOW
    assert patch["status"]["profiles"] == P.conditions([plan()], old["profiles"], LATER, 3)
    assert patches.status_patch({"metadata": {"name": "x"}}, [], "", NOW) == {
        "status": {"mode": None, "observedGeneration": None, "profiles": [], "invalid": None}}


def test_the_next_look_is_soon_while_something_was_written_or_a_profile_is_not_ready():
    w = P.SetupWrite("create", cq(), "why")
    assert patches.next_look([], [plan()]) is None
    assert patches.next_look([], []) is None
    assert patches.next_look([w], [plan()]) == patches.NOT_READY_AGAIN == 2.0
    assert patches.next_look([], [plan(), plan("b", ready=False)]) == 2.0


def test_every_line_the_controller_logs_word_for_word():
    w = P.SetupWrite("adopt", cq(), "labelled by the profile gpu-a100-8")
    assert patches.write_line("demo", w) == (
        "taucluster demo: adopt ClusterQueue gpu-a100: labelled by the profile gpu-a100-8")
    assert patches.write_line("demo", w, RuntimeError("409")) == (
        "taucluster demo: adopt ClusterQueue gpu-a100 refused (409); looking again")
    assert patches.invalid_line("demo", ValueError("two profiles claim ClusterQueue gpu-a100")) == (
        "taucluster demo: two profiles claim ClusterQueue gpu-a100; nothing done")
    assert patches.finalized_line("demo") == "taucluster demo: deleted; nothing of it is left, its finalizer goes"
    assert patches.status_not_written_line("demo", RuntimeError("503")) == "taucluster demo: status not written: 503"
    assert patches.watching_line(["ClusterQueue", "LocalQueue"]) == (
        "taucluster: watching TauClusters and their profiles' ClusterQueue, LocalQueue")
