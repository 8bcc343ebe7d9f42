"""The conformance probes (scenarios/conformance/probes.py) as records: named after behaviours, at least twenty, each
claim about time naming events the probe can make, the settings both autoscalers get alike, the run's node
pools, the objects a probe creates, and both tables of docs/autoscaler.md covered by them."""

from __future__ import annotations

import re

from k8s.duration import FOREVER
from k8s.pools import load_pools, node_manifest
from k8s.paths import DEVIATIONS_DOC, POOLS_FILE
from scenarios.conformance import probes as cf
from scenarios.conformance import fidelity as F
from scenarios.conformance import tool
from scenarios.conformance.deviations import DEVIATIONS

POOLS = cf.probe_pools(load_pools(POOLS_FILE))
BY_NAME = {p.name: p for p in POOLS}


def test_twenty_probes_or_more_each_named_once_after_a_behaviour():
    assert len(cf.PROBES) >= 20 and len([p for p in cf.PROBES if not p.long]) >= 20
    assert len(set(cf.PROBE_NAMES)) == len(cf.PROBE_NAMES)
    for p in cf.PROBES:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", p.name), p.name
        assert p.what and (p.asks or any(s.action == "pod" for s in p.steps)), p.name


def test_the_issues_behaviours_each_have_a_probe():
    for name in ("one-request-per-loop", "retry-backoff-spacing", "never-ready-backoff", "booking-expiry",
                 "deleted-request-releases-booking", "scale-down-after-unneeded", "two-podsets", "selector-no-pool",
                 "taint-not-tolerated", "last-capacity-race", "busy-node-spare-gpus", "template-after-request",
                 "check-capacity-no-retry"):
        assert name in cf.PROBE_NAMES, name
    assert [p.name for p in cf.PROBES if p.long] == ["booking-expiry"]
    assert cf.PROBES[-1].name == "never-ready-backoff", "its node group stays backed off after it: last"


def test_every_step_and_every_claim_about_time_names_what_the_probe_makes():
    actions = {"create", "template", "delete", "answered", "until", "pod", "wait"}
    for p in cf.PROBES:
        labels = {a.label for a in p.asks}
        for s in p.plan():
            assert s.action in actions, (p.name, s)
            if s.action in ("create", "template", "delete", "answered"):
                assert s.labels and set(s.labels) <= labels, (p.name, s)
            if s.action == "until":
                assert s.selector and s.seconds + s.scans > 0, (p.name, s)
        for g in p.gaps:
            for sel in (g.start, g.end):
                head = sel.split()[0]
                assert head in labels | {"*", "node", "group", "mark"}, (p.name, sel)
    assert cf.TIMINGS == {p.name: p.gaps for p in cf.PROBES}


def test_without_steps_a_probe_creates_its_requests_at_once_and_waits_for_every_answer():
    p = cf.Probe("x-y", "w", (cf.ask("a"), cf.ask("b")))
    assert p.plan() == (cf.create("a", "b"), cf.answered("a", "b"))
    assert cf.wait(1, 2) == cf.Step("wait", seconds=1, scans=2)


def test_the_node_groups_compared_are_those_the_probe_names():
    assert cf.Probe("x-y", "w", (cf.ask("a"), cf.ask("b", pool="stuckpool"))).node_groups() == ("gpupool", "stuckpool")
    assert cf.Probe("x-y", "w", (cf.Ask("a", (cf.Pods(1, 0, pool=""),)),)).node_groups() == ()
    assert cf.Probe("x-y", "w", (), groups=("ondemand",)).node_groups() == ("ondemand",)
    assert cf.Probe("x-y", "w", ()).node_groups() == ()


def test_both_autoscalers_get_the_same_settings():
    s = cf.RunSettings()
    fake, real = s.fake_args("P"), s.real_args("P")
    assert fake == ["fake-ca", "--no-pace", "--pools", "P", "--scan-interval", "2s", "--initial-backoff", "5s", "--max-backoff", "10s",
                    "--max-node-provision-time", "10s", "--initial-node-group-backoff", "30s",
                    "--max-node-group-backoff", "1m0s", "--scale-down-unneeded", "6s", "--booking", "10m0s"]
    assert real == ["real-ca", "--pools", "P", "--scan-interval", "2s", "--scale-down-unneeded-time", "6s",
                    "--max-node-provision-time", "10s", "--", "--provisioning-request-initial-backoff-time=5s",
                    "--provisioning-request-max-backoff-time=10s", "--initial-node-group-backoff-duration=30s",
                    "--max-node-group-backoff-duration=1m0s", "--scale-down-delay-after-failure=6s"]
    assert s.booking == 600, "the real one's booking is a hardcoded 10 minutes"
    under = cf.Under("real", s, "P")
    assert under.args() == real and under.label == "real (scan 2s)" and under.lease == "real-ca"
    assert cf.Under("fake", s, "P").args() == fake and cf.Under("fake", s).label == "fake (scan 2s)"
    assert under.answer_timeout == 36 and under.start_timeout == 124 and cf.Under("fake").start_timeout == 30


def test_the_runs_pools_boot_at_once_but_one_never_does():
    demo = load_pools(POOLS_FILE)
    assert [p.name for p in POOLS] == [p.name for p in demo] + ["stuckpool"]
    assert all(p.boot_seconds == 0 for p in POOLS[:-1])
    stuck = BY_NAME["stuckpool"]
    assert stuck.boot_seconds == FOREVER and stuck.labels["agentpool"] == "stuckpool" and stuck.topology_label is None
    assert stuck.max_nodes == demo[0].max_nodes and stuck.taints == demo[0].taints
    template = node_manifest(stuck, "t", kwok_provider_template=True)
    assert template["metadata"]["annotations"]["fake-ca.tau-demo.io/boots-at"] == "never"


def test_a_probes_objects():
    p = cf.Probe("two", "w", (cf.Ask("a", (cf.Pods(1, 8), cf.Pods(2, 4, host_port=80)), params=(("noRetry", "true"),)),))
    [t0, t1] = cf.pod_templates(p, p.asks[0], BY_NAME)
    assert [t["metadata"]["name"] for t in (t0, t1)] == ["cf-two-a-t0", "cf-two-a-t1"]
    spec = t1["template"]["spec"]
    assert spec["nodeSelector"] == BY_NAME["gpupool"].labels
    assert spec["tolerations"] == [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
    assert spec["containers"][0]["resources"]["requests"] == {"nvidia.com/gpu": "4"}
    assert spec["containers"][0]["ports"] == [{"containerPort": 80, "hostPort": 80}]
    pr = cf.provisioning_request(p, p.asks[0])
    assert pr["metadata"] == {"name": "cf-two-a", "namespace": "tau-demo-conformance"}
    assert pr["spec"]["podSets"] == [{"podTemplateRef": {"name": "cf-two-a-t0"}, "count": 1},
                                     {"podTemplateRef": {"name": "cf-two-a-t1"}, "count": 2}]
    assert pr["spec"]["parameters"] == {"noRetry": "true"}
    cpu = cf._pod_spec(cf.Pods(1, 0, pool="", cpu="1"), BY_NAME)
    assert "nodeSelector" not in cpu and cpu["tolerations"] and cpu["containers"][0]["resources"]["requests"] == {"cpu": "1"}
    bare = cf._pod_spec(cf.Pods(1, 8, tolerate=False, selector=(("agentpool", "x"),)), BY_NAME)
    assert bare["nodeSelector"] == {"agentpool": "x"} and "tolerations" not in bare
    both = cf._pod_spec(cf.Pods(1, 2, cpu="3"), BY_NAME)
    assert both["containers"][0]["resources"]["requests"] == {"nvidia.com/gpu": "2", "cpu": "3"}
    free = cf.free_node(POOLS[0], 0)
    assert "providerID" not in free["spec"] and free["metadata"]["labels"]["tau-demo.io/conformance-static"] == "true"
    pod = cf.running_pod("p", "n", spec, consumes="cf-two-a")
    assert pod["spec"]["nodeName"] == "n"
    assert pod["metadata"]["annotations"] == {"autoscaling.x-k8s.io/consume-provisioning-request": "cf-two-a"}
    assert "nodeName" not in cf.running_pod("p", None, spec)["spec"]


def _table_rows(text: str) -> dict[str, str]:
    return F.deviation_rows(text)


def test_both_tables_of_the_autoscaler_page_are_covered_by_probes():
    """Every row (D: the deliberate differences; R: those the probes see) names the probes that show it, or says
    why none does; every probe it names exists; every documented deviation points at a row that names its probe."""
    rows = _table_rows(DEVIATIONS_DOC.read_text())
    assert {r[0] for r in rows} == {"D", "R"} and len([r for r in rows if r.startswith("D")]) >= 15
    for rid, row in rows.items():
        probed = row.rstrip().rstrip("|").rsplit("|", 1)[-1].strip()
        named = re.findall(r"`([a-z0-9-]+)`", probed)
        assert named or probed.startswith(("not probed:", "not compared:", "every probe")), (rid, probed)
        for n in named:
            assert n in cf.PROBE_NAMES, (rid, n)
    for d in DEVIATIONS:
        assert f"`{d.probe}`" in rows[d.id], (d.id, d.probe)
    text = DEVIATIONS_DOC.read_text()
    missing = [n for n in cf.PROBE_NAMES if f"`{n}`" not in text]
    assert not missing, f"probes docs/autoscaler.md does not name: {missing}"


def test_a_probe_is_a_fault_injection_one_exactly_when_a_request_sets_a_knob_only_the_fake_reads():
    for p in cf.PROBES:
        knobs = {k for a in p.asks for k, _ in a.params if k.startswith("fakeCA")}
        if p.knob:
            assert knobs == {p.knob[0]} and p.knob[1], p.name
        else:
            assert not knobs, f"{p.name} sets {knobs}, read only by the fake: it is a fault-injection probe"
    assert set(cf.KNOBS) == {p.name for p in cf.PROBES if p.knob} and len(cf.KNOBS) >= 1


def test_every_likeness_probe_makes_a_claim_about_time_or_says_why_not():
    for p in cf.PROBES:
        if not p.knob:
            assert bool(p.gaps) != bool(p.untimed), f"{p.name}: a claim about time, or why there is none (not both)"
        else:
            assert not p.untimed, p.name
    assert cf.UNTIMED == {p.name: p.untimed for p in cf.PROBES if p.untimed}


def test_the_docs_count_the_probes_and_their_two_kinds_as_the_code_does():
    from k8s.paths import REPO
    likeness, knobs = len(cf.PROBES) - len(cf.KNOBS), len(cf.KNOBS)
    for page in ("README.md", "docs/autoscaler.md"):
        text = " ".join((REPO / page).read_text().split())
        assert f"{len(cf.PROBES)} probes" in text and f"{likeness} likeness probes" in text, page
        assert f"{knobs} fault-injection probes" in text, page


def test_the_tool_runs_the_probes_asked_for_and_names_the_command_that_makes_its_report_again():
    short = [p for p in cf.PROBES if not p.long]
    assert tool.chosen_probes(tool.Asked()) == short
    assert tool.chosen_probes(tool.Asked(with_long=True)) == list(cf.PROBES)
    one = cf.PROBES[-1].name
    assert [p.name for p in tool.chosen_probes(tool.Asked(only=(one,)))] == [one]
    why = tool.not_run_why(short)
    assert set(why) == {p.name for p in cf.PROBES if p.long} and set(why.values()) <= {"long: run with --long"}
    assert tool.not_run_why([])[short[0].name] == "not chosen (--probe)"
    assert tool.command_of(tool.Asked()) == "tau-demo conformance --autoscaler both"
    assert tool.command_of(tool.Asked(scan=3.0, only=("a", "b"), with_long=True)) == (
        "tau-demo conformance --autoscaler both --scan-interval 3s --long --probe a --probe b")
