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

from . import never_boot, race, success, timeout
from .controllers import ensure_controller
from .harness import Context, ScenarioFailed

SCENARIOS = {
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
}
AUTOSCALERS = ("fake", "real")
GROUPS = {"all": list(SCENARIOS), "success": ["success"],
          "timeout": [n for n in SCENARIOS if n.startswith("timeout")],
          "race": [n for n in SCENARIOS if n.startswith("race")],
          "beyond": ["never-boot"]}


class NoCluster(RuntimeError):
    """There is no cluster to run against; the message says what to do."""


class AutoscalerConflict(RuntimeError):
    """The other autoscaler runs: the fake and the real one never run together."""


def resolve(names: tuple[str, ...]) -> list[str]:
    """Scenario names from groups and names, in order; KeyError names the unknown one."""
    chosen: list[str] = []
    for n in names or ("all",):
        if n in GROUPS:
            chosen += GROUPS[n]
        elif n in SCENARIOS:
            chosen.append(n)
        else:
            raise KeyError(n)
    return chosen


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
