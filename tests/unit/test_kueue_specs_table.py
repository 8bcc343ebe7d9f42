"""The group kueue-specs as the catalogue declares it (the 21 specs of Kueue v0.19.2's provisioning_test.go, each
once, with its line), and the results table made from a run (scenarios/kueue_specs/table.py, pure)."""

from __future__ import annotations

import re
from pathlib import Path

from scenarios.kueue_specs import suite, table
from scenarios.kueue_specs.table import Entry, SpecResult
from scenarios.kit.scenario import Spec

REPO = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "kueue-v0.19.2-provisioning-its.txt"
SPEC = Spec(6, 380, "Should set the condition rejected when the provision fails", "reject | deactivate",
            "Failed on attempt 1 (fake)", real="Failed/CapacityIsNotFound (check-capacity, noRetry)")
ONLY_FAKE = Spec(7, 422, "Should ... CapacityRevoked", "reject", "CapacityRevoked (fake)")
PARTIAL = Spec(3, 218, "Should create ...", "make the request", "none", real="none",
               unreachable="preserve it: only by hand")
E6, E7, E3 = Entry("kueue-spec-failed", SPEC), Entry("kueue-spec-revoked", ONLY_FAKE, "never writes it"), \
    Entry("kueue-spec-after-quota", PARTIAL)


def result(number: int, autoscaler: str, ok: bool = True, drivers=(), unreached=(), error: str = "") -> SpecResult:
    checks = [(True, "first"), (ok, "the check that matters")]
    return SpecResult(number, autoscaler, ok and not error, checks, list(drivers), list(unreached), error)


# ---------------------------------------------------------------------------- the group

def test_the_group_is_the_21_specs_in_file_order_each_once():
    entries = suite.entries()
    numbers = sorted(e.spec.number for e in entries)
    assert numbers == list(range(1, 22))
    lines = [e.spec.line for e in sorted(entries, key=lambda e: e.spec.number)]
    assert lines == sorted(lines) and len(set(lines)) == 21
    assert all(e.scenario.startswith("kueue-spec-") and e.spec.must and e.spec.fake for e in entries)
    # a spec the real CA cannot drive says why, and one it can says how
    assert all(bool(e.needs_fake) != bool(e.spec.real) for e in entries)
    assert {e.spec.number for e in entries if e.needs_fake} == {7, 8, 10, 16}
    assert suite.names((6, 14)) == [e.scenario for e in entries if e.spec.number in (6, 14)]


def test_each_scenarios_docstring_quotes_its_spec_and_names_its_line():
    from scenarios.kit import catalogue
    for e in suite.entries():
        doc = " ".join((catalogue.by_name()[e.scenario].run.__doc__ or "").split())
        assert f'spec {e.spec.number}, "{e.spec.title}" (provisioning_test.go:{e.spec.line})' in doc, e.scenario


def upstream_its() -> dict[int, str]:
    """The ginkgo.It( lines of provisioning_test.go at v0.19.2 and the line after each, by line number, from the
    committed extract (tests/unit/fixtures/kueue-v0.19.2-provisioning-its.txt: grep -n -A1 output of the file
    at that tag, whose header names the file's commit, blob and sha256)."""
    got: dict[int, str] = {}
    for raw in FIXTURE.read_text().splitlines():
        if raw.startswith("#") or raw == "--":
            continue
        m = re.fullmatch(r"(\d+)[:-](.*)", raw)
        assert m, f"{FIXTURE.name}: not a line of grep -n -A1 output: {raw!r}"
        got[int(m.group(1))] = m.group(2)
    return got


def test_each_spec_quotes_the_title_at_its_line_of_kueues_file():
    """The titles and lines as they are in the file at v0.19.2 (the line numbers are the ones ginkgo.It( is on;
    a title may start on the line after it)."""
    lines = upstream_its()
    its = sorted(n for n, text in lines.items() if "ginkgo.It(" in text)
    assert len(its) == 21, its                          # the extract holds the file's 21 specs
    assert sorted(e.spec.line for e in suite.entries()) == its, "each spec is one ginkgo.It( of the file, each once"
    for e in suite.entries():
        text = lines[e.spec.line] + " " + lines[e.spec.line + 1]
        assert f'"{e.spec.title}"' in text, (e.spec.number, e.spec.title, text)


# ---------------------------------------------------------------------------- cells

def test_an_outcome_is_holds_a_finding_with_what_failed_cannot_or_not_run():
    assert table.spec_cell(result(6, "fake")) == "holds (2 checks)"
    assert table.spec_cell(result(6, "real"), "never") == "holds (2 checks)"            # it ran after all
    assert table.spec_cell(result(6, "fake", ok=False)) == "**FINDING**: the check that matters"
    two = SpecResult(6, "fake", False, [(False, "one"), (True, "fine"), (False, "two")], [], [], "Boom: x")
    assert table.spec_cell(two) == "**FINDING**: one; two; Boom: x"
    assert table.spec_cell(result(6, "real", error="ScenarioFailed: timed out")) == \
        "**FINDING**: ScenarioFailed: timed out"
    assert table.spec_cell(SpecResult(6, "real", False, [], [], [])) == "**FINDING**: no check ran"
    assert table.spec_cell(None, "never writes it") == "cannot: never writes it"
    assert table.spec_cell(None) == "not run"


def test_the_driver_cell_says_how_each_autoscaler_writes_it_and_what_was_seen():
    got = table.driver(E6, {"fake": result(6, "fake", drivers=["Failed=True/X on attempt 1, by fake-ca"]),
                            "real": None})
    assert got == ("fake: Failed on attempt 1 (fake) (seen: Failed=True/X on attempt 1, by fake-ca)<br>"
                   "real: Failed/CapacityIsNotFound (check-capacity, noRetry)")
    assert table.driver(E7, {"fake": result(7, "fake")}) == "fake: CapacityRevoked (fake)"     # no real line
    assert table.driver(E6, {"fake": result(6, "fake", drivers=["a", "b|c"])}).startswith(
        "fake: Failed on attempt 1 (fake) (seen: a; b\\|c)")


def test_the_result_cell_over_both_autoscalers():
    both = {"fake": result(6, "fake"), "real": result(6, "real")}
    assert table.result_cell(E6, both) == "holds under both"
    assert table.result_cell(E7, {"fake": result(7, "fake"), "real": None}) == \
        "holds (fake); the real CA cannot drive it"
    assert table.result_cell(E6, {"fake": result(6, "fake"), "real": None}) == "holds (fake only run)"
    assert table.result_cell(E7, {"fake": None, "real": result(7, "real")}) == "holds (real only run)"
    assert table.result_cell(E6, {"real": result(6, "real")}) == "holds (real only run)"
    assert table.result_cell(E6, {"fake": None, "real": None}) == "not run"
    assert table.result_cell(E6, {"fake": result(6, "fake", ok=False), "real": result(6, "real", ok=False)}) == \
        "**FINDING** under fake and real"
    assert table.result_cell(E6, {"fake": result(6, "fake"), "real": result(6, "real", ok=False)}) == \
        "**FINDING** under real"
    partial = table.result_cell(E3, {"fake": result(3, "fake", unreached=["metric: kind"]),
                                     "real": result(3, "real", unreached=["metric: kind"])})
    assert partial == "holds under both; partial: metric: kind; preserve it: only by hand"


def test_rows_are_in_spec_order_with_the_upstream_link_and_escaped_cells():
    out = table.rows([E7, E6], {"fake": {6: result(6, "fake"), 7: result(7, "fake", ok=False)},
                                "real": {6: result(6, "real")}})
    assert out[0] == ("| spec | what Kueue v0.19.2 must do | the driving condition and who wrote it | fake | real CA | "
                      "result |")
    assert out[1] == "| --- | --- | --- | --- | --- | --- |"
    assert out[2] == (f"| 6. [Should set the condition rejected when the provision fails]({table.UPSTREAM}{table.SOURCE}"
                      "#L380) (`kueue-spec-failed`) | reject \\| deactivate | fake: Failed on attempt 1 (fake)<br>real: "
                      "Failed/CapacityIsNotFound (check-capacity, noRetry) | holds (2 checks) | holds (2 checks) | holds "
                      "under both |")
    assert out[3] == (f"| 7. [Should ... CapacityRevoked]({table.UPSTREAM}{table.SOURCE}#L422) (`kueue-spec-revoked`) | "
                      "reject | fake: CapacityRevoked (fake) | **FINDING**: the check that matters | cannot: never "
                      "writes it | **FINDING** under fake |")
    assert len(out) == 4
    only_fake = table.rows([E6, E7], {"fake": {6: result(6, "fake")}})           # no real run at all
    assert only_fake[2].endswith("| holds (2 checks) | not run | holds (fake only run) |")
    assert only_fake[3].endswith("| not run | cannot: never writes it | not run |")


def test_the_counts_and_the_document():
    results = {"fake": {6: result(6, "fake"), 7: result(7, "fake", ok=False)}, "real": {6: result(6, "real")}}
    assert table.counts([E6, E7], results) == {"specs": 2, "fake holds": 1, "fake findings": 1, "real holds": 1,
                                                "real findings": 0, "real cannot": 1}
    assert table.counts([E6, E7, E3], {"fake": {6: result(6, "fake")}}) == {
        "specs": 3, "fake holds": 1, "fake findings": 0, "real holds": 0, "real findings": 0, "real cannot": 1}
    ran_anyway = {"real": {7: result(7, "real", ok=False)}}                   # a needs_fake spec that ran: no "cannot"
    assert table.counts([E7], ran_anyway) == {"specs": 1, "fake holds": 0, "fake findings": 0, "real holds": 0,
                                              "real findings": 1, "real cannot": 0}
    doc = table.markdown("tau-demo kueue-specs --autoscaler both", "2026-12-01 10:00 UTC", ["fake: x", "real: y"],
                         [E6, E7], results)
    assert doc == "\n".join([
        "# Kueue v0.19.2's own provisioning specs, end to end", "",
        "Generated by `tau-demo kueue-specs --autoscaler both` on 2026-12-01 10:00 UTC, from that run (nothing here is "
        "edited by hand).", "",
        "- fake: x", "- real: y", "",
        f"Kueue's integration suite for the ProvisioningRequest admission check ([`{table.SOURCE}`]({table.UPSTREAM}"
        f"{table.SOURCE}), 2 specs) runs in envtest and writes every ProvisioningRequest condition, the quota "
        "reservation and the evictions by hand. Here each spec is a scenario of the group `kueue-specs` "
        "(`scenarios/kueue_specs/`) on a real control plane with real Kueue v0.19.2: the scenario makes Jobs, "
        "Workloads and queue objects, Kueue's scheduler and controllers do the rest, and the autoscaler writes every "
        "condition; each scenario checks, from the requests' managedFields, that no condition was written by anyone "
        "else.", "",
        "**Result: the fake autoscaler drove 1 of 2 specs to hold (1 finding(s)); the real Cluster Autoscaler 1.36.1 "
        "drove 1 (0 finding(s)), and cannot drive 1 on a demo timescale.**", "",
        *table.rows([E6, E7], results)]) + "\n"


def test_the_committed_results_table_is_a_generated_one():
    doc = (REPO / "docs" / "kueue-specs.md").read_text()
    assert re.search(r"^Generated by `tau-demo kueue-specs --autoscaler both` on ", doc, re.M)
    assert doc.count("\n| ") == 2 + 21


def test_what_a_spec_declares_is_how_it_is_driven_never_what_the_autoscaler_answered():
    """What the autoscaler wrote is the table's "seen", from the run: a declared condition or reason could
    contradict it (spec 9 once declared CapacityIsProvisioned where the run saw CapacityIsFound)."""
    outcome = re.compile(r"=(True|False)|CapacityIs\w+|CapacityBooking\w+|\b(Accepted|Provisioned|Failed|"
                         r"BookingExpired|CapacityRevoked)\b")
    for e in suite.entries():
        for text in (e.spec.fake, e.spec.real):
            assert not outcome.search(text), (e.spec.number, text)


def test_spec_13s_window_is_bounded_by_revisions_not_by_the_checks_state():
    from scenarios.kueue_specs.retries import pending_window

    def version(rv: int, state: str, reserved: bool = False) -> dict:
        conds = [{"type": "QuotaReserved", "status": "True"}] if reserved else []
        return {"metadata": {"resourceVersion": str(rv)},
                "status": {"admissionChecks": [{"name": "ac", "state": state}], "conditions": conds}}
    seen = [(1.0, version(10, "Retry")), (2.0, version(20, "Pending")), (3.0, version(25, "Ready", True)),
            (4.0, version(30, "Pending", True)), (5.0, version(40, "Ready", True))]
    # a check that flips inside the window is in it (a window ending at the first non-Pending could not see it)
    assert pending_window(seen, "ac", 20, 40) == [(2.0, "Pending", False), (3.0, "Ready", True),
                                                  (4.0, "Pending", True)]
    assert pending_window(seen, "ac", 20, 25) == [(2.0, "Pending", False)]      # the end's own version is out
    assert pending_window(seen, "ac", 11, 20) == []                            # the start's is in, none before
    assert pending_window([(1.0, {"metadata": {"resourceVersion": "5"}})], "ac", 0, 9) == [(1.0, "", False)]
