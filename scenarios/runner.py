"""The catalogue of scenarios and how a run goes: connect, make sure the controllers run, run each
scenario, summarise.  `tau-demo scenario run` and `scenario.sh` are thin wrappers around this."""

from __future__ import annotations

import os
import time
import traceback

from demo.cluster.state import default_kubeconfig
from demo.k8s import heartbeat
from demo.k8s.client import Kube
from demo.k8s.errors import ApiError, Unreachable
from demo.k8s.keys import DEADLINE_LEASE_PREFIX, DEFAULT_DEADLINE_CLASS, FAKE_CA_LEASE, REAL_CA_LEASE
from demo.realca import exclusion

from . import never_boot, race, success, timeout, upstream
from .controllers import ensure_controller
from .harness import Context, ScenarioFailed

DESIGN = {
    "success": success.run,
    "timeout-preflight": timeout.preflight_refusal,
    "timeout-window": timeout.autoscaler_window,
    "timeout-deadline": timeout.admission_deadline,
    "race-admission-wins": race.scenario_admission_wins,
    "race-timeout-wins": race.scenario_timeout_wins,
    "race-legacy": race.scenario_legacy,
    "race-interrupted-mirror": race.scenario_interrupted_mirror,
    "never-boot": never_boot.run,           # last: it leaves the pool backed off for a while
}
ABOUT = {   # one line each, for `tau-demo scenario list`
    "success": "a 2 × 8-GPU gang: quota, capacity, nodes, pods, done",
    "timeout-preflight": "layer 1: a gang that can never fit is refused at submit",
    "timeout-window": "layer 2: ValidUntilSeconds honoured + Kueue's retryStrategy end the wait",
    "timeout-deadline": "layer 3: the admission deadline ends a wait nothing else bounds",
    "race-admission-wins": "Kueue admits while the deadline controller is about to commit: 409, it backs off",
    "race-timeout-wins": "the timeout is committed first: Kueue evicts, the Job never runs",
    "race-legacy": "the reviewed design's order marks and deletes a running Job; the committed protocol does not",
    "race-interrupted-mirror": "the controller killed after its commit converges on restart",
    "never-boot": "the VMs never boot: waitForPodsReady requeues without limit; the deadline ends it",
}
# Known Kueue v0.19.2 defects (scenarios/upstream/): not in "all", run with the group "upstream" or --upstream
UPSTREAM = {m.NAME: m.run for m in upstream.REPORTS}
REPORTS = {m.NAME: m.REPORT for m in upstream.REPORTS}
SCENARIOS = {**DESIGN, **UPSTREAM}
# Scenarios that need a fault injected into the fake autoscaler, with the one line they print when run
# with --autoscaler real.  The others run unchanged against the real Cluster Autoscaler.
_INJECTED_STOCKOUT = ("it times Kueue's admission against the deadline with an injected stock-out that ends "
                      "(fakeCAStockout=SECONDS), which the real autoscaler has no knob for")
NEEDS_FAKE = {
    "timeout-window": ("it needs the fake's --honor-valid-until and an injected stockout: the real autoscaler "
                       "ignores ValidUntilSeconds and never reports Failed for best-effort-atomic"),
    "race-admission-wins": _INJECTED_STOCKOUT,
    "race-timeout-wins": _INJECTED_STOCKOUT,
    "race-legacy": _INJECTED_STOCKOUT,
    "race-interrupted-mirror": ("it pauses the deadline controller while an injected stockout (fakeCAStockout) "
                                "keeps the Job pending"),
    "never-boot": ("it needs VMs that never register (fakeCABootSeconds=never): the kwok provider's nodes are "
                   "Ready at once"),
    **{m.NAME: m.NEEDS_FAKE for m in upstream.REPORTS if getattr(m, "NEEDS_FAKE", None)},
}
AUTOSCALERS = ("fake", "real")
GROUPS = {"all": list(DESIGN), "success": ["success"],
          "timeout": [n for n in DESIGN if n.startswith("timeout")],
          "race": [n for n in DESIGN if n.startswith("race")],
          "beyond": ["never-boot"],
          "upstream": list(UPSTREAM)}


class NoCluster(RuntimeError):
    """There is no cluster to run against; the message says what to do."""


class AutoscalerConflict(RuntimeError):
    """The other autoscaler runs: the fake and the real one never run together."""


def resolve(names: tuple[str, ...], with_upstream: bool = False) -> list[str]:
    """Scenario names from groups and names, in order, each once; with_upstream appends the upstream group.
    KeyError names the unknown one."""
    chosen: list[str] = []
    for n in list(names or ("all",)) + (["upstream"] if with_upstream else []):
        if n in GROUPS:
            chosen += [m for m in GROUPS[n] if m not in chosen]
        elif n in SCENARIOS:
            chosen += [n] if n not in chosen else []
        else:
            raise KeyError(n)
    return chosen


def catalogue() -> list[tuple[str, str, str, bool]]:
    """(name, upstream report or "", one line, needs the fake autoscaler) for every scenario."""
    return [(n, REPORTS[n]["number"] if n in REPORTS else "",
             REPORTS[n]["title"] if n in REPORTS else ABOUT.get(n, ""), n in NEEDS_FAKE) for n in SCENARIOS]


def verdict_table(ctx: Context) -> list[str]:
    """The upstream verdicts of a run as Markdown rows (docs/upstream.md's table)."""
    rows = ["| report | fixed in | reproduces on v0.19.2 | layer that catches it | timeline |",
            "| --- | --- | --- | --- | --- |"]
    fixed = {r["number"]: r["fixed_in"] for r in REPORTS.values()}
    for v in ctx.verdicts:
        rows.append(f"| {v.number} | {fixed.get(v.number, '')} | {'**yes**' if v.reproduced else 'no'}: "
                    f"{v.evidence} | {v.layer} | {v.picture or '-'} |")
    return rows


def make_context(kubeconfig: str | None, context: str | None, auto: bool, autoscaler: str = "fake") -> Context:
    kc = kubeconfig or default_kubeconfig()
    if kc is None and not os.environ.get("KUBECONFIG"):
        raise NoCluster("no demo cluster: run ./setup.sh (or `tau-demo cluster up`) first")
    try:
        k = Kube(kc, context)
        k.raw("/readyz")
    except (Unreachable, ApiError) as e:
        raise NoCluster(f"the cluster does not answer ({e}); run `tau-demo cluster up`") from e
    return Context(k, kc or os.environ["KUBECONFIG"], auto=auto, autoscaler=autoscaler)


def start_controllers(ctx: Context) -> None:
    ctx.say("Controllers:")
    if ctx.autoscaler == "real":
        why = None if heartbeat.alive(ctx.k, REAL_CA_LEASE) else exclusion.fake_running(ctx.k)
        if why:
            raise AutoscalerConflict(f"--autoscaler real: {why}")
        ensure_controller(ctx, REAL_CA_LEASE, ["real-ca"], "real Cluster Autoscaler", timeout=180)
    else:
        why = None if heartbeat.alive(ctx.k, FAKE_CA_LEASE) else exclusion.real_running(ctx.k)
        if why:
            raise AutoscalerConflict(f"--autoscaler fake: {why}")
        ensure_controller(ctx, FAKE_CA_LEASE, ["fake-ca"], "fake autoscaler")
    ensure_controller(ctx, DEADLINE_LEASE_PREFIX + DEFAULT_DEADLINE_CLASS, ["deadline", "--cleanup-ttl", "10s"],
                      "deadline controller")


def run_scenarios(ctx: Context, names: list[str]) -> list[tuple[str, bool | None, str]]:
    """(name, passed, detail) per scenario; passed is None for one skipped because it needs the fake."""
    summary = []
    for n in names:
        if ctx.autoscaler == "real" and n in NEEDS_FAKE:
            line = f"{n} cannot run against a real autoscaler: {NEEDS_FAKE[n]}"
            ctx.say(f"\nSKIP  {line}")
            summary.append((n, None, f"cannot run against a real autoscaler: {NEEDS_FAKE[n]}"))
            continue
        ctx.checks.clear()
        t0 = time.monotonic()
        err = ""
        try:
            SCENARIOS[n](ctx)
        except ScenarioFailed as e:
            err = str(e)
        except Exception as e:   # report and go on to the next scenario
            err = f"{type(e).__name__}: {e}"
            traceback.print_exc(file=ctx.out)
        failed = [c.what for c in ctx.checks if not c.ok]
        ok = not err and not failed and bool(ctx.checks)
        detail = err or ("; ".join(failed) if failed else f"{len(ctx.checks)} checks passed")
        summary.append((n, ok, f"{detail} ({time.monotonic() - t0:.0f}s)"))
    return summary
