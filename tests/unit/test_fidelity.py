"""Conformance records compared (scenarios/fidelity.py) on plain data: condition changes, the compared
aspects, documented vs undocumented differences against README rows, and the report."""

from __future__ import annotations

from pathlib import Path

from scenarios import conformance as cf
from scenarios import fidelity as F
from scenarios.deviations import DEVIATIONS

REPO = Path(__file__).resolve().parents[2]
ACC = F.Change("Accepted", "True", "Accepted", "ProvisioningRequest is accepted by ClusterAutoscaler")
PROV = F.Change("Provisioned", "True", "CapacityIsProvisioned", "Capacity is found in the cluster")


def cond(t, s, r, m="", ltt="2026-01-01T00:00:00Z"):
    return {"type": t, "status": s, "reason": r, "message": m, "lastTransitionTime": ltt}


def test_condition_changes_ignore_a_rewrite_with_a_new_time_and_keep_display_order():
    before = [cond("Accepted", "True", "Accepted")]
    after = [cond("Provisioned", "False", "CapacityIsNotFound", "m"), cond("Accepted", "True", "Accepted", ltt="x")]
    assert F.condition_changes(before, after) == (F.Change("Provisioned", "False", "CapacityIsNotFound", "m"),)
    assert [c.type for c in F.condition_changes([], after)] == ["Accepted", "Provisioned"]
    assert F.condition_changes(after, after) == ()


def rec(autoscaler, writes, nodes=(), probe="scale-up"):
    return F.Record(probe, autoscaler, list(writes), list(nodes))


ONE = rec("fake", [F.Write(100, "a", (ACC, PROV))], [F.NodeEvent(90, "n1", "created"), F.NodeEvent(95, "n2", "created")])
TWO = rec("real", [F.Write(4000, "a", (ACC,)), F.Write(4010, "a", (PROV,))],
          [F.NodeEvent(4005, "x1", "created"), F.NodeEvent(4006, "x2", "created"), F.NodeEvent(4100, "x1", "ready")])


def test_aspects():
    assert F.sequence(ONE) == "Accepted=True/Accepted + Provisioned=True/CapacityIsProvisioned"
    assert F.sequence(TWO) == "Accepted=True/Accepted → Provisioned=True/CapacityIsProvisioned"
    assert F.sequence(rec("x", [])) == "(no condition written)"
    assert F.messages(ONE) == F.messages(TWO)
    assert F.nodes_created(ONE) == F.nodes_created(TWO) == "2"


def test_requests_with_interchangeable_roles_compare_as_a_sorted_list():
    found = F.Change("Provisioned", "True", "CapacityIsFound", "m")
    r1 = rec("x", [F.Write(1, "a", (ACC, found)), F.Write(2, "b", (ACC, PROV))])
    r2 = rec("x", [F.Write(1, "b", (ACC, found)), F.Write(2, "a", (ACC, PROV))])
    assert F.sequence(r1) == F.sequence(r2)


def test_difference_is_documented_only_with_a_matching_entry_and_its_readme_row():
    dev = [F.Deviation("R1", "scale-up", "sequence", F.sequence(ONE), F.sequence(TWO))]
    documented = F.compare([ONE], [TWO], dev, "| R1 | one write vs two |")
    assert [(d.aspect, d.documented) for d in documented] == [("sequence", "R1")]
    assert documented[0].readme_row == "| R1 | one write vs two |"
    assert F.undocumented(documented) == []
    assert F.undocumented(F.compare([ONE], [TWO], dev, "no table here"))            # row missing
    other = rec("real", [F.Write(1, "a", (ACC,))])
    assert F.undocumented(F.compare([ONE], [other], dev, "| R1 | x |"))              # another difference


def test_unobserved_deviation_is_reported():
    dev = [F.Deviation("R9", "scale-up", "nodes", "0", "1")]
    assert F.unobserved(dev, [], ["scale-up"]) == dev
    assert F.unobserved(dev, [], ["over-max"]) == []


def test_record_round_trip():
    assert F.Record.from_dict(TWO.to_dict()) == TWO


def test_timeline_and_reports():
    lines = F.timeline(ONE, wrap=True)
    assert lines[0].startswith("+    90 ms node created") and lines[-1].strip() == "+ Provisioned=True/CapacityIsProvisioned"
    dev = [F.Deviation("R1", "scale-up", "sequence", F.sequence(ONE), F.sequence(TWO))]
    diffs = F.compare([ONE], [TWO], dev, "| R1 | one write vs two |")
    text = F.report_text([("scale-up", "a gang")], [ONE], [TWO], "real (scan 1s)", diffs)
    assert "documented (R1)" in text and "| +  4000 ms a: Accepted=True/Accepted" in text
    md = F.report_markdown("tau-demo conformance --autoscaler both", "today", ["s"], [("scale-up", "a gang")],
                           [ONE], [TWO], "real", diffs, [])
    assert md.startswith("# Fidelity") and "`tau-demo conformance --autoscaler both`" in md
    assert "0 undocumented" in md and "documented deviation R1" in md


def test_every_documented_deviation_has_a_readme_row_and_a_known_probe_and_aspect():
    rows = F.readme_rows((REPO / "README.md").read_text())
    for d in DEVIATIONS:
        assert d.id in rows, f"README has no row {d.id}"
        assert d.probe in cf.PROBE_NAMES and d.aspect in F.ASPECTS
