"""Conformance records compared (scenarios/conformance/fidelity.py) on plain data: condition changes and rewrites, the
node-group states of a status ConfigMap, the seven compared aspects, the claims about time, documented vs
undocumented differences against the rows of docs/autoscaler.md, and the two reports, whole."""

from __future__ import annotations

import dataclasses

import pytest

from scenarios.conformance import probes as cf
from scenarios.conformance import fidelity as F
from k8s.paths import DEVIATIONS_DOC
from scenarios.conformance.deviations import DEVIATIONS

ACC = F.Change("Accepted", "True", "Accepted", "ProvisioningRequest is accepted by ClusterAutoscaler")
PROV = F.Change("Provisioned", "True", "CapacityIsProvisioned", "Capacity is found in the cluster")
NF = F.Change("Provisioned", "False", "CapacityIsNotFound", "Capacity is not found, CA will try to find it later.")


def cond(t, s, r, m="", ltt="2026-01-01T00:00:00Z"):
    return {"type": t, "status": s, "reason": r, "message": m, "lastTransitionTime": ltt}


# ---------------------------------------------------------------------------- reading the cluster's objects

def test_condition_changes_ignore_a_rewrite_with_a_new_time_and_keep_display_order():
    before = [cond("Accepted", "True", "Accepted")]
    after = [cond("Provisioned", "False", "CapacityIsNotFound", "m"), cond("Accepted", "True", "Accepted", ltt="x")]
    assert F.condition_changes(before, after) == (F.Change("Provisioned", "False", "CapacityIsNotFound", "m"),)
    assert [c.type for c in F.condition_changes([], after)] == ["Accepted", "Provisioned"]
    assert F.condition_changes(after, after) == ()


def test_condition_rewrites_are_the_same_values_at_a_new_time():
    before = [cond("Accepted", "True", "Accepted", "m"), cond("Provisioned", "False", "CapacityIsNotFound", "n")]
    after = [cond("Provisioned", "False", "CapacityIsNotFound", "n", ltt="t2"), cond("Accepted", "True", "Accepted", "m", ltt="t2"),
             cond("Failed", "True", "X", ltt="t2")]
    assert F.condition_rewrites(before, after) == (F.Change("Accepted", "True", "Accepted", "m"),
                                                   F.Change("Provisioned", "False", "CapacityIsNotFound", "n"))
    assert F.condition_rewrites(before, before) == ()
    no_time = [{k: v for k, v in c.items() if k != "lastTransitionTime"} for c in before]
    assert F.condition_rewrites(no_time, [cond("Accepted", "True", "Accepted", "m", ltt="")]) == (), \
        "a missing time reads as an empty one"
    changed = [cond("Accepted", "True", "Other", "m", ltt="t2")]
    assert F.condition_rewrites(before, changed) == ()                 # a change, not a rewrite
    assert F.condition_changes(before, changed) == (F.Change("Accepted", "True", "Other", "m"),)


def test_conditions_without_status_reason_or_message_and_of_unknown_types():
    after = [{"type": "Zeta", "status": "True"}, {"type": "Failed", "status": "True", "reason": "Expired"},
             {"type": "Alpha"}, {"type": "Accepted", "status": "True"}, "not a condition"]
    assert F.condition_changes([], after) == (
        F.Change("Accepted", "True", "", ""), F.Change("Failed", "True", "Expired", ""), F.Change("Alpha", "", "", ""),
        F.Change("Zeta", "True", "", ""))
    assert F.condition_changes(None, None) == () and F.condition_rewrites(None, after) == ()


def test_group_states_of_both_status_documents():
    real = {"autoscalerStatus": "Running", "nodeGroups": [
        {"name": "gpupool", "health": {"status": "Healthy"}, "scaleUp": {"status": "NoActivity"}},
        {"name": "stuckpool", "scaleUp": {"status": "Backoff", "backoffInfo": {"errorCode": "timeout",
                                                                             "errorMessage": "Scale-up timed out"}}},
        {"name": "ondemand", "scaleUp": {"status": "InProgress", "backoffInfo": {}}}]}
    assert F.group_states(real) == {"gpupool": "NoActivity", "stuckpool": "Backoff (timeout)", "ondemand": "InProgress"}
    assert F.group_states({"nodeGroups": [{"name": "a"}, {"scaleUp": {"status": "X"}}, "junk",
                                          {"name": "b", "scaleUp": "junk"},
                                          {"name": "c", "scaleUp": {"status": "Backoff", "backoffInfo": "junk"}}]}) == {
        "a": "?", "b": "?", "c": "Backoff"}
    assert F.group_states(None) == {} and F.group_states({"nodeGroups": "junk"}) == {} and F.group_states([]) == {}


# ---------------------------------------------------------------------------- aspects

def rec(autoscaler, writes=(), nodes=(), probe="scale-up", **kw):
    return F.Record(probe, autoscaler, list(writes), list(nodes), **kw)


ONE = rec("fake", [F.ObservedWrite(100, "a", (ACC, PROV))],
          [F.NodeEvent(90, "n1", "created", "gpupool"), F.NodeEvent(95, "n2", "created", "gpupool")], scan=1.0)
TWO = rec("real", [F.ObservedWrite(4000, "a", (ACC,)), F.ObservedWrite(4010, "a", (PROV,))],
          [F.NodeEvent(4005, "x1", "created", "gpupool"), F.NodeEvent(4006, "x2", "created", "gpupool"),
           F.NodeEvent(4100, "x1", "ready", "gpupool")], scan=2.0)


def test_sequence_order_messages():
    assert F.sequence(ONE) == "Accepted=True/Accepted + Provisioned=True/CapacityIsProvisioned"
    assert F.sequence(TWO) == "Accepted=True/Accepted → Provisioned=True/CapacityIsProvisioned"
    assert F.sequence(rec("x")) == "(no condition written)"
    assert F.messages(ONE) == F.messages(TWO)
    assert F.messages(rec("x")) == "(none)"
    assert F.write_order(ONE) == "(one request)" and F.write_order(rec("x")) == "(no condition written)"


def test_a_rewrite_is_no_step_of_the_sequence_but_an_event():
    r = rec("x", [F.ObservedWrite(1, "a", (ACC,)), F.ObservedWrite(2, "a", (NF,)),
                  F.ObservedWrite(9, "a", (), (ACC,)), F.ObservedWrite(10, "a", (), (NF,))])
    assert F.sequence(r) == "Accepted=True/Accepted → Provisioned=False/CapacityIsNotFound"
    assert F.select(r, "a Provisioned=False/*#2") == 10
    assert F.ObservedWrite(9, "a", (PROV,), (ACC,)).text() == "Provisioned=True/CapacityIsProvisioned + Accepted again"


def test_a_request_that_is_gone_ends_its_sequence():
    r = rec("x", [F.ObservedWrite(1, "a", (ACC, PROV)), F.ObservedWrite(3, "b", (ACC,))],
            marks=[F.Mark(2, "gone a"), F.Mark(0, "created a"), F.Mark(4, "gone b")])
    assert F.sequence(r) == ("Accepted=True/Accepted + Provisioned=True/CapacityIsProvisioned → gone | "
                             "Accepted=True/Accepted → gone")
    assert F.sequence(rec("x", marks=[F.Mark(5, "gone c")])) == "gone"


def test_requests_with_interchangeable_roles_compare_as_a_sorted_list_and_their_order_by_first_write():
    found = F.Change("Provisioned", "True", "CapacityIsFound", "m")
    r1 = rec("x", [F.ObservedWrite(1, "a", (ACC,)), F.ObservedWrite(2, "a", (found,)), F.ObservedWrite(3, "b", (ACC, PROV)),
                   F.ObservedWrite(4, "b", (), (ACC,))])
    r2 = rec("x", [F.ObservedWrite(4, "a", (ACC, PROV)), F.ObservedWrite(1, "b", (ACC,)), F.ObservedWrite(2, "b", (found,))])
    assert F.sequence(r1) == F.sequence(r2)
    assert F.write_order(r1) == F.write_order(r2) == "1 Accepted → 1 Provisioned → 2 Accepted + Provisioned"
    interleaved = rec("x", [F.ObservedWrite(1, "a", (ACC,)), F.ObservedWrite(2, "b", (), (ACC,)),
                            F.ObservedWrite(3, "b", (ACC,)), F.ObservedWrite(4, "a", (PROV,))])
    assert F.write_order(interleaved) == "1 Accepted → 2 Accepted → 1 Provisioned"


def test_writers():
    r = rec("x", owners={"b": {"Provisioned": ["cluster-autoscaler/Apply"], "Accepted": ["cluster-autoscaler/Update"]},
                         "a": {"Accepted": ["fake-ca/Update", "x/Update"], "Failed": []}, "c": {}})
    assert F.writers(r) == ("Accepted by cluster-autoscaler/Update; Provisioned by cluster-autoscaler/Apply | "
                            "Accepted by fake-ca/Update, x/Update")
    assert F.writers(rec("x")) == "(none)" and F.writers(rec("x", owners={"a": {}})) == "(none)"


def test_nodes_per_pool():
    r = rec("x", nodes=[F.NodeEvent(1, "n1", "created", "stuck"), F.NodeEvent(2, "n1", "ready", "stuck"),
                        F.NodeEvent(3, "n1", "deleted", "stuck"), F.NodeEvent(4, "g1", "created", "gpu"),
                        F.NodeEvent(5, "z", "created")])
    assert F.nodes(r) == "?: 1 created, 0 deleted; gpu: 1 created, 0 deleted; stuck: 1 created, 1 deleted"
    assert F.nodes(rec("x", nodes=[F.NodeEvent(1, "n", "ready", "p")])) == "(none)"
    assert F.nodes(ONE) == F.nodes(TWO) == "gpupool: 2 created, 0 deleted"


def test_groups_in_the_order_states_first_appeared_and_where_they_ended_without_in_progress():
    r = rec("x", groups=[F.GroupEvent(9, "g", "NoActivity"), F.GroupEvent(0, "g", "NoActivity"),
                         F.GroupEvent(3, "g", "InProgress"), F.GroupEvent(0, "a", "NoActivity"),
                         F.GroupEvent(5, "g", "Unhealthy"), F.GroupEvent(7, "g", "Backoff (timeout)")])
    assert F.groups(r) == "a: NoActivity; g: NoActivity → Unhealthy → Backoff (timeout), ends NoActivity"
    flips = rec("x", groups=[F.GroupEvent(0, "g", "NoActivity"), F.GroupEvent(1, "g", "Backoff (timeout)"),
                             F.GroupEvent(2, "g", "NoActivity"), F.GroupEvent(3, "g", "Backoff (timeout)"),
                             F.GroupEvent(4, "g", "NoActivity")])
    once = rec("x", groups=flips.groups[:3])
    assert F.groups(flips) == F.groups(once) == "g: NoActivity → Backoff (timeout), ends NoActivity"
    assert F.groups(rec("x", groups=flips.groups[:2])) == "g: NoActivity → Backoff (timeout)"
    racing = rec("x", groups=[F.GroupEvent(0, "g", "NoActivity"), F.GroupEvent(1, "g", "InProgress"),
                              F.GroupEvent(2, "g", "NoActivity")])
    assert F.groups(racing) == F.groups(rec("x", groups=racing.groups[:1])) == "g: NoActivity"
    assert F.groups(rec("x", groups=[F.GroupEvent(1, "g", "InProgress")])) == "(no status ConfigMap)"
    assert F.groups(rec("x")) == "(no status ConfigMap)"


def test_aspect_names():
    two = rec("x", [F.ObservedWrite(1, "b", (ACC,)), F.ObservedWrite(2, "a", (ACC, PROV)), F.ObservedWrite(3, "b", (PROV,))])
    assert [F.aspect(two, a) for a in F.ASPECTS] == [F.sequence(two), F.write_order(two), F.messages(two), "(none)", "(none)",
                                                    "(no status ConfigMap)", "(no claim about time)"]
    with pytest.raises(KeyError):
        F.aspect(two, "colour")


# ---------------------------------------------------------------------------- claims about time

TIMED = rec("x", [F.ObservedWrite(1000, "a", (ACC,)), F.ObservedWrite(1010, "a", (NF,)),
                  F.ObservedWrite(7000, "a", (), (ACC,)), F.ObservedWrite(7010, "a", (), (NF,))],
            [F.NodeEvent(500, "n", "created", "p"), F.NodeEvent(9000, "n", "deleted", "p")],
            groups=[F.GroupEvent(0, "p", "NoActivity"), F.GroupEvent(8000, "p", "Backoff (timeout)")],
            marks=[F.Mark(20, "created a")], scan=2.0)


def test_events_and_select():
    assert F.events(TIMED) == [(0, "group p NoActivity"), (20, "mark created a"), (500, "node created"),
                               (1000, "a Accepted=True/Accepted"), (1010, "a Provisioned=False/CapacityIsNotFound"),
                               (7000, "a Accepted=True/Accepted"), (7010, "a Provisioned=False/CapacityIsNotFound"),
                               (8000, "group p Backoff (timeout)"), (9000, "node deleted")]
    assert F.select(TIMED, "a Provisioned=False/*") == 1010
    assert F.select(TIMED, "* Provisioned=*#2") == 7010
    assert F.select(TIMED, " group p Backoff* ") == 8000
    assert F.select(TIMED, "a Provisioned=False/*#3") is None
    assert F.select(TIMED, "a Provisioned=False/*#0") is None
    assert F.select(TIMED, "node ready") is None
    assert F.select(TIMED, "mark created a") == 20
    assert F.select(TIMED, "A Accepted*") is None                          # case matters
    same_ms = rec("x", nodes=[F.NodeEvent(5, "n", "created", "p")], groups=[F.GroupEvent(5, "p", "Backoff")],
                  marks=[F.Mark(1, "created a")])
    assert F.events(same_ms) == [(1, "mark created a"), (5, "node created"), (5, "group p Backoff")], \
        "in time order, one millisecond's events as they were listed"


def test_measure_and_tolerance():
    retry = F.Gap("retry 1", "a Provisioned=False/*#1", "a Provisioned=False/*#2")
    assert F.measure(TIMED, retry) == 6.0
    assert F.measure(TIMED, F.Gap("x", "node ready", "node deleted")) is None
    assert F.measure(TIMED, F.Gap("x", "node created", "node ready")) is None
    assert retry.tolerance(2.0) == F.TOLERANCE_SCANS * 2.0 + F.TOLERANCE_SLACK == 3.0
    assert F.Gap("y", "", "", scans=0.5, slack=0.25).tolerance(2.0) == 1.25
    assert F.timing_value(TIMED, (retry, F.Gap("never", "node ready", "node deleted"))) == "retry 1 6.0s; never never"
    assert F.timing_value(TIMED, ()) == "(no claim about time)"


def _shifted(r: F.Record, second_retry_ms: int, scan: float = 2.0) -> F.Record:
    return rec("y", [w if w.ms != 7010 else F.ObservedWrite(second_retry_ms, "a", (), (NF,)) for w in r.writes],
               r.nodes, probe=r.probe, groups=r.groups, marks=r.marks, scan=scan)


def test_timing_lines_show_both_measurements_and_the_tolerance():
    retry = (F.Gap("retry 1", "a Provisioned=False/*#1", "a Provisioned=False/*#2"),
             F.Gap("loop", "node created", "node ready", scans=0.5, slack=0.5))
    assert F.timing_lines(TIMED, _shifted(TIMED, 10010, scan=1.0), retry) == [
        "retry 1: fake 6.0s, real 9.0s (± 3.0s)", "loop: fake never, real never (± 1.5s)"]


def test_timing_is_the_same_within_the_tolerance_of_the_larger_scan_interval():
    retry = (F.Gap("retry 1", "a Provisioned=False/*#1", "a Provisioned=False/*#2"),)
    assert F.timing_same(TIMED, _shifted(TIMED, 10010), retry)                  # 9.0s vs 6.0s: exactly 3.0s apart
    assert not F.timing_same(TIMED, _shifted(TIMED, 10011), retry)
    assert F.timing_same(_shifted(TIMED, 12010, scan=0.5), _shifted(TIMED, 10010, scan=4.0), retry)    # 4 s scan: ± 5s
    assert not F.timing_same(_shifted(TIMED, 12011, scan=4.0), TIMED, retry)
    nothing = rec("z", scan=2.0)
    assert not F.timing_same(TIMED, nothing, retry) and not F.timing_same(nothing, TIMED, retry)
    assert F.timing_same(nothing, rec("w", scan=2.0), retry)                  # neither happened: alike
    assert F.timing_same(TIMED, nothing, ())


# ---------------------------------------------------------------------------- differences

def test_difference_is_documented_only_with_a_matching_entry_and_its_row():
    dev = [F.Deviation("R1", "scale-up", "sequence", F.sequence(ONE), F.sequence(TWO))]
    documented = F.compare([ONE], [TWO], dev, "| R1 | one write vs two |")
    assert [(d.aspect, d.documented) for d in documented] == [("sequence", "R1")]
    assert documented[0].row == "| R1 | one write vs two |"
    assert F.undocumented(documented) == []
    assert F.undocumented(F.compare([ONE], [TWO], dev, "no table here"))            # row missing
    other = rec("real", [F.ObservedWrite(1, "a", (ACC,))])
    assert F.undocumented(F.compare([ONE], [other], dev, "| R1 | x |"))              # another difference
    assert F.compare([ONE], [rec("real", probe="other")], dev, "| R1 | x |") == []  # the real one did not run it


def test_a_deviation_matches_its_probe_aspect_and_values_any_standing_for_every_value():
    d = F.Deviation("R5", "p", "timing", F.ANY, "x")
    assert d.matches("p", "timing", "anything", "x")
    assert not d.matches("p", "timing", "anything", "y")
    assert not d.matches("q", "timing", "a", "x") and not d.matches("p", "nodes", "a", "x")
    assert F.Deviation("R5", "p", "timing", "a", F.ANY).matches("p", "timing", "a", "zzz")
    assert not F.Deviation("R5", "p", "timing", "a", F.ANY).matches("p", "timing", "b", "zzz")


def test_a_timing_difference_compares_by_tolerance_and_is_documented_by_a_wildcard_entry():
    gaps = {"scale-up": (F.Gap("retry 1", "a Provisioned=False/*#1", "a Provisioned=False/*#2"),)}
    fast = dataclasses.replace(TIMED, probe="scale-up")
    slow = _shifted(fast, 20010)
    diffs = F.compare([fast], [slow], [], "", gaps)
    assert [(d.aspect, d.fake, d.real, d.documented) for d in diffs] == [
        ("timing", "retry 1 6.0s", "retry 1 19.0s", "")]
    dev = [F.Deviation("R5", "scale-up", "timing", F.ANY, F.ANY)]
    assert [d.documented for d in F.compare([fast], [slow], dev, "| R5 | boots |", gaps)] == ["R5"]
    assert F.compare([fast], [_shifted(fast, 8000)], dev, "| R5 | boots |", gaps) == []


def test_unobserved_deviation_is_reported():
    dev = [F.Deviation("R9", "scale-up", "nodes", "0", "1"), F.Deviation("R9", "scale-up", "groups", "a", "b")]
    assert F.unobserved(dev, [], ["scale-up"]) == dev
    assert F.unobserved(dev, [], ["over-max"]) == []
    seen = [F.Difference("scale-up", "nodes", "0", "1", "R9")]
    assert F.unobserved(dev, seen, ["scale-up"]) == [dev[1]]
    assert F.unobserved(dev, [F.Difference("scale-up", "nodes", "0", "1")], ["scale-up"]) == dev   # undocumented


def test_record_round_trip_old_records_too():
    full = rec("real", [F.ObservedWrite(1, "a", (ACC,), (NF,))], [F.NodeEvent(2, "n", "created", "p")],
               groups=[F.GroupEvent(0, "p", "NoActivity")], marks=[F.Mark(1, "created a")],
               owners={"a": {"Accepted": ["m/Update"]}}, scan=2.0, error="e")
    assert F.Record.from_dict(full.to_dict()) == full
    old = TWO.to_dict()
    for key in ("error", "groups", "marks", "owners", "scan"):
        del old[key]
    for w in old["writes"]:
        del w["rewritten"]
    back = F.Record.from_dict(old)
    assert back.writes == TWO.writes and back.error == "" and back.groups == [] and back.scan == 0.0


def test_every_documented_deviation_has_a_row_and_a_known_probe_and_aspect():
    rows = F.deviation_rows(DEVIATIONS_DOC.read_text())
    for d in DEVIATIONS:
        assert d.id in rows, f"docs/autoscaler.md has no row {d.id}"
        assert d.probe in cf.PROBE_NAMES and d.aspect in F.ASPECTS


# ---------------------------------------------------------------------------- the whole reports

NF_OTHER = F.Change("Provisioned", "False", "CapacityIsNotFound", "other | text")


def three_probes():
    """scale-up: a documented difference; over-max: two undocumented ones, three events in one millisecond
    and a real run that broke; only-fake: run by the fake only, and nothing happened."""
    fake_over = rec("fake", [F.ObservedWrite(20, "b", (ACC, NF)), F.ObservedWrite(20, "a", (ACC, NF))],
                    [F.NodeEvent(20, "n1", "deleted", "gpupool")], probe="over-max", scan=1.0,
                    groups=[F.GroupEvent(0, "gpupool", "NoActivity")], marks=[F.Mark(5, "created a")])
    real_over = rec("real", [F.ObservedWrite(3000, "a", (ACC,)), F.ObservedWrite(3001, "a", (NF,)),
                             F.ObservedWrite(3002, "b", (ACC, NF_OTHER)), F.ObservedWrite(9000, "a", (), (ACC,))],
                    [F.NodeEvent(3500, "x1", "deleted", "gpupool")], probe="over-max", scan=2.0,
                    groups=[F.GroupEvent(0, "gpupool", "NoActivity")])
    real_over.error = "watch broke"
    probes = [("scale-up", "a gang | of 2"), ("over-max", "more than the max"), ("only-fake", "fake only")]
    fake, real = [rec("fake", [], probe="only-fake"), ONE, fake_over], [TWO, real_over]
    dev = [F.Deviation("R1", "scale-up", "sequence", F.sequence(ONE), F.sequence(TWO))]
    return probes, fake, real, F.compare(fake, real, dev, "| R1 | one write | | two writes |\n", TIMINGS)


TIMINGS = {"over-max": (F.Gap("to the first answer", "mark created a", "a Provisioned=*"),)}
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
        F.Difference("over-max", "order", "1 Accepted + Provisioned → 2 Accepted + Provisioned",
                     "1 Accepted → 1 Provisioned → 2 Accepted + Provisioned"),
        F.Difference("over-max", "messages", f"{MSG_ACC} | {MSG_NF}",
                     f"{MSG_ACC} | {MSG_NF} | Provisioned/CapacityIsNotFound: other | text"),
        F.Difference("over-max", "timing", "to the first answer 0.0s", "to the first answer never")]


def cols(left: str, right: str) -> str:
    return f"  {left:<58} | {right}"


def test_the_terminal_report_whole():
    probes, fake, real, diffs = three_probes()
    assert F.report_text(probes, fake, real, "real 1.36.1", diffs, TIMINGS).split("\n") == [
        "",
        "scale-up: a gang | of 2",
        cols("fake", "real 1.36.1"),
        cols("+    90 ms node created n1", "+  4000 ms a: Accepted=True/Accepted"),
        cols("+    95 ms node created n2", "+  4005 ms node created x1"),
        cols("+   100 ms a: Accepted=True/Accepted", "+  4006 ms node created x2"),
        cols("              + Provisioned=True/CapacityIsProvisioned", "+  4010 ms a: Provisioned=True/CapacityIsProvisioned"),
        cols("", "+  4100 ms node ready x1"),
        "  sequence: differs: documented (R1); order: — (one request); messages: same; "
        "writers: — (no field manager recorded); nodes: same; groups: — (no status ConfigMap); timing: — (no claim)",
        "",
        "over-max: more than the max",
        cols("fake", "real 1.36.1"),
        cols("+     0 ms group gpupool: NoActivity", "+     0 ms group gpupool: NoActivity"),
        cols("+     5 ms probe: created a", "+  3000 ms a: Accepted=True/Accepted"),
        cols("+    20 ms b: Accepted=True/Accepted", "+  3001 ms a: Provisioned=False/CapacityIsNotFound"),
        cols("              + Provisioned=False/CapacityIsNotFound", "+  3002 ms b: Accepted=True/Accepted"),
        cols("+    20 ms a: Accepted=True/Accepted", "              + Provisioned=False/CapacityIsNotFound"),
        cols("              + Provisioned=False/CapacityIsNotFound", "+  3500 ms node deleted x1"),
        cols("+    20 ms node deleted n1", "+  9000 ms a: Accepted=True/Accepted again"),
        cols("", "ERROR: watch broke"),
        "  to the first answer: fake 0.0s, real never (± 3.0s)",
        "  sequence: differs: UNDOCUMENTED; order: differs: UNDOCUMENTED; messages: differs: UNDOCUMENTED; "
        "writers: — (no field manager recorded); nodes: same; groups: same; timing: differs: UNDOCUMENTED",
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
    md = F.report_markdown("tau-demo conformance", "2026-12-01", ["scan 1s", "boot 0s"],
                           probes[:2] + [("long", "ten minutes")] + probes[2:],
                           fake, real, "real 1.36.1", diffs, stale, TIMINGS, {"long": "long: run with --long"})
    head = ("| probe | what | sequence | order | messages | writers | nodes | groups | timing |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    assert md == "\n".join([
        "# Fidelity: the fake autoscaler against the real Cluster Autoscaler 1.36.1",
        "",
        "Generated by `tau-demo conformance` on 2026-12-01, from that run (nothing here is edited by hand).",
        "",
        "- scan 1s",
        "- boot 0s",
        "",
        "Every probe puts the same ProvisioningRequests (made by hand in their own namespace, no Kueue) to each "
        "autoscaler in turn, on the same cluster, and records from client-side watches, in milliseconds since the "
        "probe's first action: every condition write (type, status, reason, message; a condition written again "
        "unchanged, as a retry does, too), the field managers of each condition, every pool-node event, every "
        "change of the node groups' scale-up state in the autoscaler's status ConfigMap, and the probe's own "
        "actions. Compared: the sequence of condition writes per request and their order across requests, the "
        "messages, the writers, the nodes created and deleted per pool, the node-group states, and each claim "
        "about time within 1 scan interval(s) + 1s (a claim about loops: tighter, as it says).",
        "",
        "Two kinds of probe. **Likeness** (4 probes): the same behaviour put to both, so a cell \"same\" is a "
        "claim that the fake behaves like the real one; \"—\" marks an aspect with nothing to compare (one request "
        "has no order across requests; a probe that makes no claim about time says why). 1 of the 2 likeness "
        "probes that ran make a claim about time.",
        "",
        "**Likeness: 5 difference(s), 1 documented, 4 undocumented.**",
        "",
        *head,
        "| scale-up | a gang \\| of 2 | differs: documented ([R1](autoscaler.md#the-real-cluster-autoscaler-side-by-side)) "
        "| — (one request) | same | — (no field manager recorded) | same | — (no status ConfigMap) | — (no claim) |",
        "| over-max | more than the max | differs: UNDOCUMENTED | differs: UNDOCUMENTED | differs: UNDOCUMENTED "
        "| — (no field manager recorded) | same | same | differs: UNDOCUMENTED |",
        "| long | ten minutes | long: run with --long | long: run with --long | long: run with --long | long: run with "
        "--long | long: run with --long | long: run with --long | long: run with --long |",
        "| only-fake | fake only | not run | not run | not run | not run | not run | not run | not run |",
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
        "- **sequence** differs — documented deviation [R1](autoscaler.md#the-real-cluster-autoscaler-side-by-side): "
        "one write · two writes",
        f"  - fake: `{F.sequence(ONE)}`",
        f"  - real: `{F.sequence(TWO)}`",
        "",
        "## over-max: more than the max",
        "",
        "| fake | real 1.36.1 |",
        "| --- | --- |",
        "| +     0 ms group gpupool: NoActivity | +     0 ms group gpupool: NoActivity |",
        "| +     5 ms probe: created a | +  3000 ms a: Accepted=True/Accepted |",
        f"| +    20 ms b: {OVER_FAKE} | +  3001 ms a: Provisioned=False/CapacityIsNotFound |",
        f"| +    20 ms a: {OVER_FAKE} | +  3002 ms b: {OVER_FAKE} |",
        "| +    20 ms node deleted n1 | +  3500 ms node deleted x1 |",
        "|  | +  9000 ms a: Accepted=True/Accepted again |",
        "|  | ERROR: watch broke |",
        "",
        "- timing: to the first answer: fake 0.0s, real never (± 3.0s)",
        "",
        "- **sequence** differs — **UNDOCUMENTED**",
        f"  - fake: `{OVER_SEQ_FAKE}`",
        f"  - real: `{OVER_SEQ_REAL}`",
        "",
        "- **order** differs — **UNDOCUMENTED**",
        "  - fake: `1 Accepted + Provisioned → 2 Accepted + Provisioned`",
        "  - real: `1 Accepted → 1 Provisioned → 2 Accepted + Provisioned`",
        "",
        "- **messages** differs — **UNDOCUMENTED**",
        f"  - fake: `{MSG_ACC} | {MSG_NF}`",
        f"  - real: `{MSG_ACC} | {MSG_NF} | Provisioned/CapacityIsNotFound: other | text`",
        "",
        "- **timing** differs — **UNDOCUMENTED**",
        "  - fake: `to the first answer 0.0s`",
        "  - real: `to the first answer never`",
        "",
        "## long: ten minutes",
        "",
        "Not run: long: run with --long.",
        "",
        "## only-fake: fake only",
        "",
        "| fake | real 1.36.1 |",
        "| --- | --- |",
        "| (nothing: no condition, no node) | not run |",
        "",
        "## Documented deviations not observed in this run",
        "",
        "- R9 (over-max, nodes): the row in docs/autoscaler.md may be stale",
    ]) + "\n"
    without_real = F.report_markdown("c", "w", [], [("x", "y")], [], [], "real", [], [])
    assert without_real.endswith("| x | y | not run | not run | not run | not run | not run | not run | not run |\n\n"
                                 "## x: y\n\n| fake | real |\n| --- | --- |\n| not run | not run |\n")


def test_timeline_of_groups_marks_and_rewrites():
    assert F.timeline(TIMED) == [
        "+     0 ms group p: NoActivity", "+    20 ms probe: created a", "+   500 ms node created n",
        "+  1000 ms a: Accepted=True/Accepted", "+  1010 ms a: Provisioned=False/CapacityIsNotFound",
        "+  7000 ms a: Accepted=True/Accepted again", "+  7010 ms a: Provisioned=False/CapacityIsNotFound again",
        "+  8000 ms group p: Backoff (timeout)", "+  9000 ms node deleted n"]
    both = rec("x", [F.ObservedWrite(5, "a", (PROV,), (ACC,))])
    assert F.timeline(both) == ["+     5 ms a: Provisioned=True/CapacityIsProvisioned + Accepted=True/Accepted again"]
    assert F.timeline(both, wrap=True) == ["+     5 ms a: Provisioned=True/CapacityIsProvisioned",
                                           "              + Accepted=True/Accepted again"]


def test_a_difference_in_a_later_aspect_is_found_after_an_equal_one():
    fake = rec("fake", [F.ObservedWrite(1, "a", (ACC,))], [F.NodeEvent(1, "n1", "created", "p")])
    real = rec("real", [F.ObservedWrite(9, "a", (ACC,))])
    assert F.compare([fake], [real], [], "") == [F.Difference("scale-up", "nodes", "p: 1 created, 0 deleted", "(none)")]
    assert F.probe_verdict(F.compare([fake], [real], [], ""), "scale-up", "sequence") == "same"
    assert F.probe_verdict([F.Difference("p", "nodes", "1", "0")], "q", "nodes") == "same"


def test_row_as_prose():
    assert F.row_text("  | R3 | fake writes once |  | real writes twice |  ") == "fake writes once · real writes twice"
    assert F.row_text("|R5|fake|X|") == "fake · X"                     # no padding: only the pipes are cut
    assert F.deviation_rows("text\n| R3 | a |\n|R12| b |\n| X1 | c |\n  | R4 | indented |\n| D7 | d |\n| DR1 | e |") == {
        "R3": "| R3 | a |", "R12": "|R12| b |", "D7": "| D7 | d |"}


def test_a_cell_says_same_only_where_something_was_compared():
    one_a, one_b = rec("fake", [F.ObservedWrite(1, "a", (ACC,))]), rec("real", [F.ObservedWrite(2, "a", (ACC,))])
    two = rec("real", [F.ObservedWrite(2, "a", (ACC,)), F.ObservedWrite(3, "b", (ACC,))])
    assert F.cell([], one_a, one_b, "scale-up", "order") == "— (one request)"
    assert F.cell([], one_a, one_b, "scale-up", "sequence") == "same"                  # compared, and alike
    assert F.cell([], two, two, "scale-up", "order") == "same"
    assert F.cell([], one_a, two, "scale-up", "order") == "same"   # not alike, yet no difference given: the verdict
    assert F.cell([], one_a, one_b, "scale-up", "timing") == "— (no claim)"
    assert F.cell([], one_a, one_b, "scale-up", "timing", untimed="neither answers") == "— (no claim: neither answers)"
    assert F.cell([], one_a, one_b, "scale-up", "order", untimed="neither answers") == "— (one request)"
    gap = (F.Gap("g", "a Accepted=*", "a Accepted=*"),)
    assert F.cell([], one_a, one_b, "scale-up", "timing", gap) == "same"
    nothing = rec("fake")
    assert F.cell([], nothing, rec("real"), "scale-up", "messages") == "— (nothing written)"
    assert F.cell([], nothing, rec("real"), "scale-up", "nodes") == "same"           # no node in both: a claim
    assert F.cell([], nothing, rec("real"), "scale-up", "order") == "— (nothing written)"
    assert F.cell([], nothing, rec("real"), "scale-up", "writers") == "— (no field manager recorded)"
    assert F.cell([], nothing, rec("real"), "scale-up", "groups") == "— (no status ConfigMap)"
    diff = [F.Difference("scale-up", "order", "(one request)", "(one request)")]
    assert F.cell(diff, one_a, one_b, "scale-up", "order") == "differs: UNDOCUMENTED"
    documented = [F.Difference("scale-up", "timing", "x", "y", "D1", "| D1 |")]
    assert F.cell(documented, one_a, one_b, "scale-up", "timing") == "differs: documented (D1)"
    assert F.probe_verdict(documented, "scale-up", "timing") == "differs: documented (D1)"     # unlinked by default
    assert F.cell(documented, one_a, one_b, "scale-up", "timing", link=True).endswith(
        "([D1](autoscaler.md#what-it-does-like-the-real-one-and-where-it-differs))")


def test_the_fault_injection_probes_are_tabled_and_counted_apart():
    fake = [ONE, rec("fake", [F.ObservedWrite(5, "a", (NF,))], probe="knobbed")]
    real = [TWO, rec("real", [F.ObservedWrite(5, "a", (PROV,))], probe="knobbed")]
    probes = [("scale-up", "a gang"), ("knobbed", "a knob")]
    dev = [F.Deviation("D2", "knobbed", "sequence", F.ANY, F.ANY)]
    diffs = F.compare(fake, real, dev, "| D2 | stockout |\n")
    assert [d.probe for d in diffs] == ["scale-up", "knobbed", "knobbed"]
    knobs = {"knobbed": ("fakeCAStockout", "refuses | always")}
    assert F.split(probes, knobs) == ([("scale-up", "a gang")], [("knobbed", "a knob")])
    md = F.report_markdown("c", "w", [], probes, fake, real, "real", diffs, [], {}, {}, knobs).split("\n")
    assert ("**Likeness: 1 difference(s), 0 documented, 1 undocumented.** Fault injection: 2 difference(s), "
            "1 documented, 1 undocumented (each the knob's own effect).") in md
    assert any(line.startswith("Two kinds of probe. **Likeness** (1 probes)") and "**Fault injection** (2 probes"
               not in line and "**Fault injection** (1 probes" in line for line in md)
    table = md.index("## Fault injection: knobs only the fake reads")
    assert md[table + 4:table + 7] == [
        "| probe | knob: what the fake does | fake's writes | the real one's writes (it ignores the knob) | differences |",
        "| --- | --- | --- | --- | --- |",
        "| knobbed | `fakeCAStockout`: refuses \\| always | `Provisioned=False/CapacityIsNotFound` "
        "| `Provisioned=True/CapacityIsProvisioned` | sequence: documented ([D2](autoscaler.md#what-it-does-like-the-real-"
        "one-and-where-it-differs)); messages: UNDOCUMENTED |"]
    assert not any(line.startswith("| knobbed | a knob |") for line in md)         # not in the likeness table
    text = F.report_text(probes, fake, real, "real", diffs, {}, knobs)
    assert "\nknobbed: a knob\n  fault injection: fakeCAStockout, a knob only the fake reads (refuses | always)\n" in text
    assert "fault injection" not in text.split("knobbed:")[0]


def _with_knobs_and_a_quiet_probe():
    fake = [ONE, rec("fake", [F.ObservedWrite(5, "a", (NF,))], probe="knobbed"), rec("fake", probe="quiet")]
    real = [TWO, rec("real", [F.ObservedWrite(5, "a", (PROV,))], probe="knobbed"), rec("real", probe="quiet")]
    probes = [("scale-up", "a gang"), ("knobbed", "a knob"), ("unran", "never run"), ("quiet", "nothing")]
    diffs = F.compare(fake, real, [F.Deviation("D2", "knobbed", "sequence", F.ANY, F.ANY)], "| D2 | stockout |\n")
    knobs = {"knobbed": ("fakeCAStockout", "refuses | always"), "unran": ("fakeCAX", "x")}
    timings = {"scale-up": (F.Gap("g", "a Accepted=*", "a Provisioned=*"),)}
    return probes, fake, real, diffs, knobs, timings, {"quiet": "neither answers"}


def test_the_markdown_report_with_fault_injection_and_a_probe_that_makes_no_claim_whole():
    probes, fake, real, diffs, knobs, timings, untimed = _with_knobs_and_a_quiet_probe()
    md = F.report_markdown("c", "w", [], probes, fake, real, "real", diffs, [], timings,
                           {"unran": "long: run with --long"}, knobs, untimed)
    assert md.split("\n") == [
        '# Fidelity: the fake autoscaler against the real Cluster Autoscaler 1.36.1',
        '',
        'Generated by `c` on w, from that run (nothing here is edited by hand).',
        '',
        '',
        "Every probe puts the same ProvisioningRequests (made by hand in their own namespace, no Kueue) to each autoscaler in turn, on the same cluster, and records from client-side watches, in milliseconds since the probe's first action: every condition write (type, status, reason, message; a condition written again unchanged, as a retry does, too), the field managers of each condition, every pool-node event, every change of the node groups' scale-up state in the autoscaler's status ConfigMap, and the probe's own actions. Compared: the sequence of condition writes per request and their order across requests, the messages, the writers, the nodes created and deleted per pool, the node-group states, and each claim about time within 1 scan interval(s) + 1s (a claim about loops: tighter, as it says).",
        '',
        'Two kinds of probe. **Likeness** (2 probes): the same behaviour put to both, so a cell "same" is a claim that the fake behaves like the real one; "—" marks an aspect with nothing to compare (one request has no order across requests; a probe that makes no claim about time says why). 1 of the 2 likeness probes that ran make a claim about time. **Fault injection** (2 probes, [below](#fault-injection-knobs-only-the-fake-reads)): a request parameter only the fake reads; they show what each knob does, not a likeness.',
        '',
        "**Likeness: 1 difference(s), 0 documented, 1 undocumented.** Fault injection: 2 difference(s), 1 documented, 1 undocumented (each the knob's own effect).",
        '',
        '| probe | what | sequence | order | messages | writers | nodes | groups | timing |',
        '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
        '| scale-up | a gang | differs: UNDOCUMENTED | — (one request) | same | — (no field manager recorded) | same | — (no status ConfigMap) | same |',
        '| quiet | nothing | same | — (nothing written) | — (nothing written) | — (no field manager recorded) | same | — (no status ConfigMap) | — (no claim: neither answers) |',
        '',
        '## Fault injection: knobs only the fake reads',
        '',
        "Each of these probes sets a request parameter that only the fake reads (the fake's way to inject a fault or a timer a scenario needs). The real autoscaler ignores parameters it does not know, so it answers the same request as it would without the knob: its writes below are what it did. A difference here is the knob's effect, documented in docs/autoscaler.md; it is not counted as a likeness.",
        '',
        "| probe | knob: what the fake does | fake's writes | the real one's writes (it ignores the knob) | differences |",
        '| --- | --- | --- | --- | --- |',
        '| knobbed | `fakeCAStockout`: refuses \\| always | `Provisioned=False/CapacityIsNotFound` | `Provisioned=True/CapacityIsProvisioned` | sequence: documented ([D2](autoscaler.md#what-it-does-like-the-real-one-and-where-it-differs)); messages: UNDOCUMENTED |',
        '| unran | `fakeCAX`: x | long: run with --long | | |',
        '',
        '## scale-up: a gang',
        '',
        '| fake | real |',
        '| --- | --- |',
        '| +    90 ms node created n1 | +  4000 ms a: Accepted=True/Accepted |',
        '| +    95 ms node created n2 | +  4005 ms node created x1 |',
        '| +   100 ms a: Accepted=True/Accepted + Provisioned=True/CapacityIsProvisioned | +  4006 ms node created x2 |',
        '|  | +  4010 ms a: Provisioned=True/CapacityIsProvisioned |',
        '|  | +  4100 ms node ready x1 |',
        '',
        '- timing: g: fake 0.0s, real 0.0s (± 3.0s)',
        '',
        '- **sequence** differs — **UNDOCUMENTED**',
        '  - fake: `Accepted=True/Accepted + Provisioned=True/CapacityIsProvisioned`',
        '  - real: `Accepted=True/Accepted → Provisioned=True/CapacityIsProvisioned`',
        '',
        '## knobbed: a knob',
        '',
        '| fake | real |',
        '| --- | --- |',
        '| +     5 ms a: Provisioned=False/CapacityIsNotFound | +     5 ms a: Provisioned=True/CapacityIsProvisioned |',
        '',
        '- **sequence** differs — documented deviation [D2](autoscaler.md#what-it-does-like-the-real-one-and-where-it-differs): stockout',
        '  - fake: `Provisioned=False/CapacityIsNotFound`',
        '  - real: `Provisioned=True/CapacityIsProvisioned`',
        '',
        '- **messages** differs — **UNDOCUMENTED**',
        '  - fake: `Provisioned/CapacityIsNotFound: Capacity is not found, CA will try to find it later.`',
        '  - real: `Provisioned/CapacityIsProvisioned: Capacity is found in the cluster`',
        '',
        '## unran: never run',
        '',
        'Not run: long: run with --long.',
        '',
        '## quiet: nothing',
        '',
        '| fake | real |',
        '| --- | --- |',
        '| (nothing: no condition, no node) | (nothing: no condition, no node) |',
        '',
    ]


def test_the_terminal_report_with_fault_injection_and_a_probe_that_makes_no_claim_whole():
    probes, fake, real, diffs, knobs, timings, untimed = _with_knobs_and_a_quiet_probe()
    assert F.report_text(probes, fake, real, "real", diffs, timings, knobs, untimed).split("\n") == [
        '',
        'scale-up: a gang',
        '  fake                                                       | real',
        '  +    90 ms node created n1                                 | +  4000 ms a: Accepted=True/Accepted',
        '  +    95 ms node created n2                                 | +  4005 ms node created x1',
        '  +   100 ms a: Accepted=True/Accepted                       | +  4006 ms node created x2',
        '                + Provisioned=True/CapacityIsProvisioned     | +  4010 ms a: Provisioned=True/CapacityIsProvisioned',
        '                                                             | +  4100 ms node ready x1',
        '  g: fake 0.0s, real 0.0s (± 3.0s)',
        '  sequence: differs: UNDOCUMENTED; order: — (one request); messages: same; writers: — (no field manager recorded); nodes: same; groups: — (no status ConfigMap); timing: same',
        '',
        'knobbed: a knob',
        '  fault injection: fakeCAStockout, a knob only the fake reads (refuses | always)',
        '  fake                                                       | real',
        '  +     5 ms a: Provisioned=False/CapacityIsNotFound         | +     5 ms a: Provisioned=True/CapacityIsProvisioned',
        '  sequence: differs: documented (D2); order: — (one request); messages: differs: UNDOCUMENTED; writers: — (no field manager recorded); nodes: same; groups: — (no status ConfigMap); timing: — (no claim)',
        '',
        'unran: never run',
        '  fault injection: fakeCAX, a knob only the fake reads (x)',
        '  fake: not run                                              | real: not run',
        '',
        'quiet: nothing',
        '  fake                                                       | real',
        '  (nothing: no condition, no node)                           | (nothing: no condition, no node)',
        '  sequence: same; order: — (nothing written); messages: — (nothing written); writers: — (no field manager recorded); nodes: same; groups: — (no status ConfigMap); timing: — (no claim: neither answers)',
    ]


def test_a_fault_injection_probe_with_no_difference_run_by_one_autoscaler_or_by_none():
    same = rec("fake", [F.ObservedWrite(5, "a", (PROV,))], probe="alike")
    fake = [same, rec("fake", [F.ObservedWrite(5, "a", (NF,))], probe="half")]
    real = [rec("real", [F.ObservedWrite(6, "a", (PROV,))], probe="alike")]
    probes = [("alike", "a knob with no effect here"), ("half", "run by the fake only"), ("none", "run by neither")]
    knobs = {p: ("fakeCAX", "x") for p, _ in probes}
    md = F.report_markdown("c", "w", [], probes, fake, real, "real", F.compare(fake, real, [], ""), [],
                           knobs=knobs).split("\n")
    table = md.index("| --- | --- | --- | --- | --- |")
    assert md[table + 1:table + 4] == [
        "| alike | `fakeCAX`: x | `Provisioned=True/CapacityIsProvisioned` | `Provisioned=True/CapacityIsProvisioned` | none |",
        "| half | `fakeCAX`: x | not run | | |",
        "| none | `fakeCAX`: x | not run | | |"]
