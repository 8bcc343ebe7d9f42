"""The apiserver's audit events read as writes (k8s/audit.py), on an excerpt of a real kwok cluster's audit log
(tests/unit/recorded/audit-excerpt.jsonl: cluster up's TauCluster, its controller's writes as its ServiceAccount,
Kueue's and a heartbeat): who wrote (the impersonated user where there is one), which verb, which object and
subresource, the answer; reads, other stages and half-written lines are no writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from k8s.audit import AuditedWrite, writes

LINES = (Path(__file__).parent / "recorded" / "audit-excerpt.jsonl").read_text().splitlines()
SA = "system:serviceaccount:tau-demo-system:taucluster"


def test_each_recorded_write_reads_as_who_did_what_to_which_object_and_the_answer():
    got = writes(LINES)
    assert [str(w) for w in got] == [
        "kwok-admin patch tauclusters demo -> 201",
        f"{SA} patch tauclusters demo -> 200",
        f"{SA} patch leases tau-demo-system/taucluster -> 201",
        f"{SA} create resourceflavors a100-scale -> 201",
        f"{SA} create provisioningrequestconfigs gpu-provisioning -> 201",
        f"{SA} create admissionchecks gpu-provisioning -> 201",
        "kwok-admin update admissionchecks gpu-provisioning -> 200",
        f"{SA} create clusterqueues gpu-a100 -> 201",
        f"{SA} create localqueues demo/gpu-a100-8 -> 201",
        f"{SA} patch tauclusters/status demo -> 200",
        f"{SA} patch leases tau-demo-system/taucluster -> 200",
        "kwok-admin patch leases tau-demo-system/fake-ca -> 201"]
    assert got[9] == AuditedWrite(SA, "patch", "tauclusters/status", "", "demo", 200, got[9].time, "OpenAPI-Generator")
    assert got[9].time.startswith("2026-") and not any(w.refused for w in got)
    assert [w.agent for w in got if w.user == "kwok-admin"] == ["kubectl", "kueue", "OpenAPI-Generator"]


def event(**changes) -> str:
    ev = json.loads(LINES[3])
    ev.update(changes)
    return json.dumps(ev)


@pytest.mark.parametrize("line", [
    event(verb="get"), event(verb="list"), event(verb="watch"), event(stage="ResponseStarted"),
    event(stage="RequestReceived"), LINES[3][:80], "not json", "[1, 2]", ""])
def test_reads_other_stages_and_broken_lines_are_no_writes(line):
    assert writes([line]) == []


@pytest.mark.parametrize("verb", ["create", "update", "patch", "delete", "deletecollection"])
def test_every_write_verb_is_a_write_and_a_refusal_is_told_apart(verb):
    [w] = writes([event(verb=verb, responseStatus={"code": 403})])
    assert (w.verb, w.code, w.refused) == (verb, 403, True)
    [w] = writes([event(verb=verb, stage="Panic", responseStatus={"code": 399})])
    assert (w.code, w.refused) == (399, False)
    [w] = writes([event(verb=verb, responseStatus={"code": 400})])
    assert w.refused


def test_a_write_without_an_impersonated_user_is_its_users_and_missing_fields_read_as_empty():
    [w] = writes([json.dumps({"verb": "delete", "stage": "ResponseComplete"})])
    assert w == AuditedWrite("", "delete", "", "", "", 0, "", "")
    [w] = writes([event(impersonatedUser=None)])
    assert w.user == "kwok-admin"


def test_a_line_that_is_no_write_is_skipped_and_the_lines_after_it_still_read():
    got = writes(["not json", "[1, 2]", event(verb="get"), LINES[3][:80], LINES[3], event(stage="ResponseStarted"),
                  LINES[4]])
    assert [w.resource for w in got] == ["resourceflavors", "provisioningrequestconfigs"]
    [w] = writes([event(userAgent="kueue")])
    assert w.agent == "kueue"
