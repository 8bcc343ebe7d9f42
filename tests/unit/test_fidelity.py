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


# ---------------------------------------------------------------------------- the whole reports

NF = F.Change("Provisioned", "False", "CapacityIsNotFound", "Capacity is not found, CA will try to find it later.")
NF_OTHER = F.Change("Provisioned", "False", "CapacityIsNotFound", "other | text")


def three_probes():
    """scale-up: a documented difference; over-max: two undocumented ones, three events in one millisecond
    and a real run that broke; only-fake: run by the fake only, and nothing happened."""
    fake_over = rec("fake", [F.Write(20, "b", (ACC, NF)), F.Write(20, "a", (ACC, NF))],
                    [F.NodeEvent(20, "n1", "deleted")], probe="over-max")
    real_over = rec("real", [F.Write(3000, "a", (ACC,)), F.Write(3001, "a", (NF,)), F.Write(3002, "b", (ACC, NF_OTHER))],
                    probe="over-max")
    real_over.error = "watch broke"
    probes = [("scale-up", "a gang | of 2"), ("over-max", "more than the max"), ("only-fake", "fake only")]
    fake, real = [rec("fake", [], probe="only-fake"), ONE, fake_over], [TWO, real_over]
    dev = [F.Deviation("R1", "scale-up", "sequence", F.sequence(ONE), F.sequence(TWO))]
    return probes, fake, real, F.compare(fake, real, dev, "| R1 | one write | | two writes |\n")


OVER_FAKE = "Accepted=True/Accepted + Provisioned=False/CapacityIsNotFound"
OVER_SEQ_FAKE = f"{OVER_FAKE} | {OVER_FAKE}"
OVER_SEQ_REAL = f"{OVER_FAKE} | Accepted=True/Accepted → Provisioned=False/CapacityIsNotFound"
MSG_ACC = "Accepted/Accepted: ProvisioningRequest is accepted by ClusterAutoscaler"
MSG_NF = "Provisioned/CapacityIsNotFound: Capacity is not found, CA will try to find it later."


def test_the_differences_of_three_probes():
    _, _, _, diffs = three_probes()
    assert diffs == [
        F.Difference("scale-up", "sequence", F.sequence(ONE), F.sequence(TWO), "R1", "| R1 | one write | | two writes |"),
        F.Difference("over-max", "sequence", OVER_SEQ_FAKE, OVER_SEQ_REAL),
        F.Difference("over-max", "messages", f"{MSG_ACC} | {MSG_NF}",
                     f"{MSG_ACC} | {MSG_NF} | Provisioned/CapacityIsNotFound: other | text")]


def cols(left: str, right: str) -> str:
    return f"  {left:<58} | {right}"


def test_the_terminal_report_whole():
    probes, fake, real, diffs = three_probes()
    assert F.report_text(probes, fake, real, "real 1.36.1", diffs).split("\n") == [
        "",
        "scale-up: a gang | of 2",
        cols("fake", "real 1.36.1"),
        cols("+    90 ms node created n1", "+  4000 ms a: Accepted=True/Accepted"),
        cols("+    95 ms node created n2", "+  4005 ms node created x1"),
        cols("+   100 ms a: Accepted=True/Accepted", "+  4006 ms node created x2"),
        cols("              + Provisioned=True/CapacityIsProvisioned", "+  4010 ms a: Provisioned=True/CapacityIsProvisioned"),
        cols("", "+  4100 ms node ready x1"),
        "  sequence: differs: documented (R1); messages: same; nodes: same",
        "",
        "over-max: more than the max",
        cols("fake", "real 1.36.1"),
        cols("+    20 ms b: Accepted=True/Accepted", "+  3000 ms a: Accepted=True/Accepted"),
        cols("              + Provisioned=False/CapacityIsNotFound", "+  3001 ms a: Provisioned=False/CapacityIsNotFound"),
        cols("+    20 ms a: Accepted=True/Accepted", "+  3002 ms b: Accepted=True/Accepted"),
        cols("              + Provisioned=False/CapacityIsNotFound", "              + Provisioned=False/CapacityIsNotFound"),
        cols("+    20 ms node deleted n1", "ERROR: watch broke"),
        "  sequence: differs: UNDOCUMENTED; messages: differs: UNDOCUMENTED; nodes: same",
        "",
        "only-fake: fake only",
        cols("fake", "real 1.36.1: not run"),
        cols("(nothing: no condition, no node)", ""),
    ]
    assert F.report_text([("x", "y")], [], [], "real", []).split("\n") == ["", "x: y", cols("fake: not run", "real: not run")]


def test_a_long_line_is_cut_at_the_column_width():
    assert F.side_by_side(["x" * 70], []) == [cols("x" * 58, "")]


def test_the_markdown_report_whole():
    probes, fake, real, diffs = three_probes()
    stale = [F.Deviation("R9", "over-max", "nodes", "0", "1")]
    md = F.report_markdown("tau-demo conformance", "2026-12-01", ["scan 1s", "boot 0s"], probes, fake, real,
                           "real 1.36.1", diffs, stale)
    assert md == "\n".join([
        "# Fidelity: the fake autoscaler against the real Cluster Autoscaler 1.36.1",
        "",
        "Generated by `tau-demo conformance` on 2026-12-01, from that run (nothing here is edited by hand).",
        "",
        "- scan 1s",
        "- boot 0s",
        "",
        "Every probe puts the same ProvisioningRequests (made by hand in their own namespace, no Kueue) to each "
        "autoscaler in turn, on an empty pool, and records every condition transition (type, status, reason, "
        "message) and pool-node event from a client-side watch, in milliseconds since the first request was "
        "created. Compared: the sequence of condition writes per request, the messages, the number of nodes "
        "created. Timings are shown, not compared.",
        "",
        "**Result: 3 difference(s), 1 documented, 2 undocumented.**",
        "",
        "| probe | what | sequence | messages | nodes |",
        "| --- | --- | --- | --- | --- |",
        "| scale-up | a gang \\| of 2 | differs: documented (R1) | same | same |",
        "| over-max | more than the max | differs: UNDOCUMENTED | differs: UNDOCUMENTED | same |",
        "| only-fake | fake only | not run | not run | not run |",
        "",
        "## scale-up: a gang | of 2",
        "",
        "| fake | real 1.36.1 |",
        "| --- | --- |",
        "| +    90 ms node created n1 | +  4000 ms a: Accepted=True/Accepted |",
        "| +    95 ms node created n2 | +  4005 ms node created x1 |",
        "| +   100 ms a: Accepted=True/Accepted + Provisioned=True/CapacityIsProvisioned | +  4006 ms node created x2 |",
        "|  | +  4010 ms a: Provisioned=True/CapacityIsProvisioned |",
        "|  | +  4100 ms node ready x1 |",
        "",
        "- **sequence** differs — documented deviation R1 (README): one write · two writes",
        f"  - fake: `{F.sequence(ONE)}`",
        f"  - real: `{F.sequence(TWO)}`",
        "",
        "## over-max: more than the max",
        "",
        "| fake | real 1.36.1 |",
        "| --- | --- |",
        f"| +    20 ms b: {OVER_FAKE} | +  3000 ms a: Accepted=True/Accepted |",
        f"| +    20 ms a: {OVER_FAKE} | +  3001 ms a: Provisioned=False/CapacityIsNotFound |",
        f"| +    20 ms node deleted n1 | +  3002 ms b: {OVER_FAKE} |",
        "|  | ERROR: watch broke |",
        "",
        "- **sequence** differs — **UNDOCUMENTED**",
        f"  - fake: `{OVER_SEQ_FAKE}`",
        f"  - real: `{OVER_SEQ_REAL}`",
        "",
        "- **messages** differs — **UNDOCUMENTED**",
        f"  - fake: `{MSG_ACC} | {MSG_NF}`",
        f"  - real: `{MSG_ACC} | {MSG_NF} | Provisioned/CapacityIsNotFound: other | text`",
        "",
        "## only-fake: fake only",
        "",
        "| fake | real 1.36.1 |",
        "| --- | --- |",
        "| (nothing: no condition, no node) | not run |",
        "",
        "## Documented deviations not observed in this run",
        "",
        "- R9 (over-max, nodes): the README row may be stale",
    ]) + "\n"
    without_real = F.report_markdown("c", "w", [], [("x", "y")], [], [], "real", [], [])
    assert without_real.endswith("| x | y | not run | not run | not run |\n\n## x: y\n\n| fake | real |\n| --- | --- |\n"
                                 "| not run | not run |\n")


def test_conditions_without_status_reason_or_message_and_of_unknown_types():
    after = [{"type": "Zeta", "status": "True"}, {"type": "Failed", "status": "True", "reason": "Expired"},
             {"type": "Alpha"}, {"type": "Accepted", "status": "True"}]
    assert F.condition_changes([], after) == (
        F.Change("Accepted", "True", "", ""), F.Change("Failed", "True", "Expired", ""), F.Change("Alpha", "", "", ""),
        F.Change("Zeta", "True", "", ""))


def test_aspects_of_several_requests_and_of_nothing():
    two = rec("x", [F.Write(1, "b", (ACC,)), F.Write(2, "a", (ACC, PROV)), F.Write(3, "b", (PROV,))])
    assert F.sequence(two) == ("Accepted=True/Accepted + Provisioned=True/CapacityIsProvisioned | "
                               "Accepted=True/Accepted → Provisioned=True/CapacityIsProvisioned")
    assert F.messages(two) == ("Accepted/Accepted: ProvisioningRequest is accepted by ClusterAutoscaler | "
                               "Provisioned/CapacityIsProvisioned: Capacity is found in the cluster")
    assert F.messages(rec("x", [])) == "(none)"
    assert [F.aspect(two, a) for a in F.ASPECTS] == [F.sequence(two), F.messages(two), "0"]


def test_a_difference_in_a_later_aspect_is_found_after_an_equal_one():
    fake = rec("fake", [F.Write(1, "a", (ACC,))], [F.NodeEvent(1, "n1", "created")])
    real = rec("real", [F.Write(9, "a", (ACC,))])
    assert F.compare([fake], [real], [], "") == [F.Difference("scale-up", "nodes", "1", "0")]
    assert F.verdict(F.compare([fake], [real], [], ""), "scale-up", "sequence") == "same"
    assert F.verdict([F.Difference("p", "nodes", "1", "0")], "q", "nodes") == "same"


def test_a_record_without_an_error_reads_back_without_one_and_one_with_an_error_keeps_it():
    d = TWO.to_dict()
    del d["error"]
    assert F.Record.from_dict(d) == TWO and F.Record.from_dict(d).error == ""
    broken = rec("real", [], probe="p")
    broken.error = "watch broke"
    assert F.Record.from_dict(broken.to_dict()) == broken


def test_readme_row_as_prose():
    assert F.row_text("  | R3 | fake writes once |  | real writes twice |  ") == "fake writes once · real writes twice"
    assert F.row_text("|R5|fake|X|") == "fake · X"                     # no padding: only the pipes are cut
    assert F.readme_rows("text\n| R3 | a |\n|R12| b |\n| X1 | c |\n  | R4 | indented |") == {
        "R3": "| R3 | a |", "R12": "|R12| b |"}
