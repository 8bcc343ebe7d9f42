"""How a run of scenarios goes: connect, make sure the controllers run, run each scenario (records from
catalogue.py), summarise.  `tau-demo scenario run` and `scenario.sh` are thin wrappers around this."""

from __future__ import annotations

import os
import time
import traceback

from demo.cluster.multikueue import MANAGER
from demo.cluster.multikueue_kwok import is_manager
from demo.cluster.state import default_kubeconfig
from k8s import heartbeat
from k8s.client import Kube
from k8s.errors import ApiError, Unreachable
from k8s.keys import DEADLINE_LEASE_PREFIX, DEFAULT_DEADLINE_CLASS, FAKE_CA_LEASE, REAL_CA_LEASE
from demo.realca import exclusion

from . import catalogue
from .controllers import ensure_controller
from .harness import Context, ScenarioFailed

AUTOSCALERS = ("fake", "real")


class NoCluster(RuntimeError):
    """There is no cluster to run against; the message says what to do."""


class AutoscalerConflict(RuntimeError):
    """The other autoscaler runs: the fake and the real one never run together."""


class NotClean(RuntimeError):
    """Objects a scenario would trip over are left in the scenarios' namespaces; the message lists them."""


def verdict_table(ctx: Context) -> list[str]:
    """The upstream verdicts of a run as Markdown rows (docs/upstream.md's table)."""
    rows = ["| report | fixed in | reproduces here | layer that catches it | timeline |",
            "| --- | --- | --- | --- | --- |"]
    fixed = {s.report.number: s.report.fixed_in for s in catalogue.scenarios() if s.report}
    for v in ctx.verdicts:
        rows.append(f"| {v.number} | {fixed.get(v.number, '')} | {'**yes**' if v.reproduced else 'no'} on {v.on}: "
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
    kc = kc or os.environ["KUBECONFIG"]
    return Context(k, kc, auto=auto, autoscaler=autoscaler, cluster=MANAGER if is_manager(kc) else "")


def check_cluster(ctx: Context, names: list[str]) -> None:
    """NoCluster when a chosen scenario's group needs the other kind of cluster: the multikueue group a
    MultiKueue manager, every other group a plain demo cluster (a manager dispatches its Jobs to workers)."""
    groups = {g.name: g for g in catalogue.GROUPS}
    wanted = {groups[catalogue.by_name()[n].group].multikueue for n in names}
    manager = is_manager(ctx.kubeconfig)
    if True in wanted and not manager:
        raise NoCluster("the multikueue group runs on a MultiKueue manager and its two workers: bring them up with "
                        "`tau-demo cluster up --multikueue` (after `tau-demo cluster down`, or with --name)")
    if False in wanted and manager:
        raise NoCluster("this cluster is a MultiKueue manager: its ClusterQueue dispatches every Job to the workers, "
                        "so only the multikueue group runs here; the other scenarios need a plain demo cluster "
                        "(`tau-demo cluster up` under another --name, or after `tau-demo cluster down`)")


def start_controllers(ctx: Context) -> None:
    ctx.say("Controllers:")
    if is_manager(ctx.kubeconfig):
        if ctx.autoscaler == "real":
            raise AutoscalerConflict("--autoscaler real: the multikueue scenarios stock the workers out with the fake "
                                     "autoscaler's --stockout")
        ctx.say("  no autoscaler on a MultiKueue manager: it makes no nodes; each worker's own fake autoscaler runs "
                "on that worker (the scenarios start them)")
    elif ctx.autoscaler == "real":
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


def start_clean(ctx: Context) -> None:
    """Start the controllers (start_controllers), then refuse to go on if anything is left behind
    (NotClean): a scenario judges what it finds."""
    start_controllers(ctx)
    left = ctx.leftovers()
    if left:
        raise NotClean(f"the namespaces are not clean: {', '.join(left)}")


def run_scenarios(ctx: Context, names: list[str]) -> list[tuple[str, bool | None, str]]:
    """(name, passed, detail) per scenario; passed is None for one skipped because it needs the fake."""
    summary = []
    records = catalogue.by_name()
    for n in names:
        scenario = records[n]
        if ctx.autoscaler == "real" and scenario.needs_fake:
            why = f"cannot run against a real autoscaler: {scenario.needs_fake}"
            ctx.say(f"\nSKIP  {n} {why}")
            summary.append((n, None, why))
            continue
        ctx.checks.clear()
        t0 = time.monotonic()
        err = ""
        try:
            scenario.run(ctx)
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
