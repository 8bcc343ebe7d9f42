"""How a run of scenarios goes: connect, make sure the controllers run, run each scenario (declared in
catalogue.py), summarise.  `tau-demo scenario run` and `scenario.sh` are thin wrappers around this.

Side by side: the walkthrough's scenarios run at once, each in a thread of its own with a context of its own
(Context.child): its slot (harness.Slot: the demo's profile for `success`, a profile, namespace and node pool of its
own for the others), its output kept and shown whole, in the walkthrough's order, as each finishes.  The fake
autoscaler and the default deadline controller are shared (one request per loop, one Workload per key); a scenario
that pauses a controller pauses one of its own (a race's private deadline controller, its class carrying the slot's
tag), so no scenario stalls another.  One after another (serial): as the walkthrough always ran, every scenario on
the demo's profile."""

from __future__ import annotations

import os
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

from demo.cluster.multikueue import MANAGER
from demo.cluster.multikueue_kwok import is_manager
from demo.cluster.state import default_kubeconfig
from k8s import heartbeat, poll
from k8s.client import Kube
from k8s.errors import ApiError, Unreachable
from k8s.keys import (CONFORMANCE_NAMESPACE, CONFORMANCE_STATIC_LABEL, DEADLINE_LEASE_PREFIX, DEFAULT_DEADLINE_CLASS,
                      FAKE_CA_LEASE, REAL_CA_LEASE)
from k8s.objects import deleting
from k8s.resources import (ADMISSION_CHECK, CLUSTER_QUEUE, JOB, LOCAL_QUEUE, NODE, POD, POD_TEMPLATE, PROVREQ,
                           PROVREQ_CONFIG, RESOURCE_FLAVOR, TAUCLUSTER, WORKLOAD, WORKLOAD_PRIORITY_CLASS)
from demo.realca import exclusion

from . import catalogue
from .controllers import DEMO_FAKE_CA, ensure_controller, stop_started
from .harness import NAMESPACES, Context, ScenarioFailed, Slot, slot_of
from .scenario import Scenario

AUTOSCALERS = ("fake", "real")
BOTH = "both"                                    # the products' choice: the fake, then the real one, never together
AUTOSCALER_CHOICES = (*AUTOSCALERS, BOTH)


def autoscalers_of(choice: str) -> list[str]:
    """The autoscalers a product's --autoscaler choice names, in the order they run."""
    return list(AUTOSCALERS) if choice == BOTH else [choice]


class NoCluster(RuntimeError):
    """There is no cluster to run against; the message says what to do."""


class AutoscalerConflict(RuntimeError):
    """The other autoscaler runs: the fake and the real one never run together."""


class NotClean(RuntimeError):
    """Objects a scenario would trip over are left in the scenarios' namespaces; the message lists them and names
    the command that removes them."""


CLEAN_COMMAND = "tau-demo clean"


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
    return Context(k, kc, auto=auto, autoscaler=autoscaler, cluster=MANAGER if is_manager(kc) else "",
                   namespaces=NAMESPACES + slot_namespaces())


def slot_namespaces() -> tuple[str, ...]:
    """The namespaces of the walkthrough's own slots (leftovers are looked for there too)."""
    return tuple(slot_of(s.name).namespace for s in catalogue.scenarios() if s.slot)


def slot_of_scenario(scenario: Scenario, side_by_side: bool) -> Slot:
    """Where a scenario runs (pure): a walkthrough scenario's nodes are its pool's (scoped), in a slot of its own
    side by side (`success` on the demo's profile, whose pool no other one uses then); every other scenario on the
    demo's profile, seeing every pool."""
    walkthrough = {g.name for g in catalogue.all_groups() if g.walkthrough}
    if scenario.group not in walkthrough:
        return Slot()
    return slot_of(scenario.name) if side_by_side and scenario.slot else Slot(scoped=True)


def missing_slots(ctx: Context, names: list[str]) -> list[str]:
    """The slots the chosen scenarios would need side by side that this cluster does not have (their LocalQueue)."""
    declared = catalogue.by_name()
    want = [slot_of(n) for n in names if declared[n].slot]
    return [f"{slot.namespace}/{slot.profile}" for slot in want
            if ctx.live.get(LOCAL_QUEUE, slot.profile, slot.namespace) is None]


def check_cluster(ctx: Context, names: list[str]) -> None:
    """NoCluster when a chosen scenario's group needs the other kind of cluster: the multikueue group a
    MultiKueue manager, every other group a plain demo cluster (a manager dispatches its Jobs to workers)."""
    groups = {g.name: g for g in catalogue.all_groups()}
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
        ensure_controller(ctx, FAKE_CA_LEASE, DEMO_FAKE_CA, "fake autoscaler")
    ensure_controller(ctx, DEADLINE_LEASE_PREFIX + DEFAULT_DEADLINE_CLASS, ["deadline", "--cleanup-ttl", "10s"],
                      "deadline controller")


def start_clean(ctx: Context) -> None:
    """Start the controllers (start_controllers), then refuse to go on if anything is left behind
    (NotClean): a scenario judges what it finds."""
    start_controllers(ctx)
    left = ctx.leftovers()
    if left:
        raise NotClean(f"the namespaces are not clean: {', '.join(left)}; `{CLEAN_COMMAND}` removes what the harness "
                       "made (and says what it removed)")


def run_one(ctx: Context, scenario: Scenario) -> tuple[str, bool | None, str]:
    """One scenario on its context: (name, passed, detail); passed is None for one skipped because it needs the
    fake.  Every controller it started is stopped."""
    n = scenario.name
    if ctx.autoscaler == "real" and scenario.needs_fake:
        why = f"cannot run against a real autoscaler: {scenario.needs_fake}"
        ctx.say(f"\nSKIP  {n} {why}")
        return n, None, why
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
    finally:
        stop_started(ctx)
    failed = [c.what for c in ctx.checks if not c.ok]
    ok = not err and not failed and bool(ctx.checks)
    detail = err or ("; ".join(failed) if failed else f"{len(ctx.checks)} checks passed")
    return n, ok, f"{detail} ({time.monotonic() - t0:.0f}s)"


def run_scenarios(ctx: Context, names: list[str], side_by_side: bool = False,
                  progress=None) -> list[tuple[str, bool | None, str]]:
    """(name, passed, detail) per scenario, in the order given.  Serial: one after another, their output as it
    comes.  Side by side: all at once, each one's output shown whole, in order, as soon as it and those before
    it have finished; `progress(text)` (a terminal's status line) says meanwhile what runs."""
    declared = catalogue.by_name()
    if not side_by_side:
        return [run_one(ctx.child(slot_of_scenario(declared[n], False), out=ctx.out), declared[n]) for n in names]
    children = {n: ctx.child(slot_of_scenario(declared[n], True)) for n in names}
    t0 = time.monotonic()
    summary = []
    with ThreadPoolExecutor(max_workers=len(names), thread_name_prefix="scenario") as pool:
        futures = {n: pool.submit(run_one, children[n], declared[n]) for n in names}
        for n in names:
            while progress is not None and not futures[n].done():
                running = [m for m in names if not futures[m].done()]
                progress(f"side by side: {len(names) - len(running)}/{len(names)} done, "
                         f"{time.monotonic() - t0:.0f}s; running: {', '.join(running)}")
                _wait(futures[n], 1.0)
            if progress is not None:
                progress("")
            summary.append(futures[n].result())
            ctx.out.write(children[n].out.getvalue())
            ctx.out.flush()
    return summary


def run_chosen(ctx: Context, chosen: list[str], side_by_side: bool, progress=None) -> list:
    """The walkthrough's scenarios side by side (when asked and the cluster has their slots; `progress(text)`
    shows a status line meanwhile), then the rest one after another.  The runner's summary, in `chosen`'s order
    of groups."""
    walk = {g.name for g in catalogue.all_groups() if g.walkthrough}
    declared = catalogue.by_name()
    side = [n for n in chosen if declared[n].group in walk] if side_by_side else []
    missing = missing_slots(ctx, side) if len(side) > 1 else []
    if missing:
        ctx.say(f"Side by side needs a slot per scenario, which this cluster lacks ({', '.join(missing[:3])}"
                f"{', ...' if len(missing) > 3 else ''}: `tau-demo cluster up` makes them); one after another instead")
    if len(side) < 2 or missing:
        return run_scenarios(ctx, chosen)
    ctx.say(f"Running {len(side)} scenarios side by side, each in a slot of its own; each one's output follows "
            "whole, in order, as it finishes")
    summary = run_scenarios(ctx, side, side_by_side=True, progress=progress)
    return summary + run_scenarios(ctx, [n for n in chosen if n not in side])


LEFT_NODES_TIMEOUT = 120.0     # seconds for the nodes a run left to go (the autoscaler finds them unneeded)


def other_clusters(ctx: Context) -> list[tuple[str, Context]]:
    """The clusters besides ctx's own that a run on it makes objects on, each (its name, its context): those the
    groups that run on this kind of cluster (a MultiKueue manager or a plain one) name (Group.other_clusters)."""
    manager = ctx.cluster == MANAGER
    return [c for g in catalogue.all_groups() if g.multikueue == manager and g.other_clusters for c in g.other_clusters(ctx)]


def left_behind(ctx: Context) -> list[str]:
    """What a finished run left on the cluster, and on the other clusters its groups use (other_clusters: a
    MultiKueue manager's workers), once the nodes it left had the time to go by themselves."""
    try:
        ctx.wait_pool_empty(LEFT_NODES_TIMEOUT)
    except ScenarioFailed:
        pass
    others = other_clusters(ctx)
    if not others:
        return ctx.leftovers()
    return [f"{ctx.cluster}: {x}" for x in ctx.leftovers()] + [f"{name}: {x}" for name, c in others for x in c.leftovers()]


def _wait(future, seconds: float) -> None:
    try:
        future.result(timeout=seconds)
    except Exception:          # done (its result is read above) or not yet: either way, look again
        pass


# ---------------------------------------------------------------------------- clean

SWEEP_TIMEOUT = 120.0         # seconds for what clean() deleted to be gone
# The order of deletion: a TauCluster takes its Kueue objects with it (its controller), a Job its Workload and
# pods (Kueue's owner references, the garbage collector), requests before the nodes booked for them (an autoscaler
# still running would otherwise make them again), the nodes last.
CLEAN_ORDER = (TAUCLUSTER, JOB, WORKLOAD, PROVREQ, POD, POD_TEMPLATE, LOCAL_QUEUE, CLUSTER_QUEUE, ADMISSION_CHECK,
               PROVREQ_CONFIG, RESOURCE_FLAVOR, WORKLOAD_PRIORITY_CLASS, NODE)


def made_by_harness(ctx: Context) -> list[tuple]:
    """What the harness made on ctx's cluster, read now, as (resource, name, namespace or None): what a scenario
    must not leave (Context.left_objects), and the conformance tool's probe requests, templates, pods and nodes."""
    live = ctx.live
    probes = [(res, i["metadata"]["name"], CONFORMANCE_NAMESPACE) for res in (PROVREQ, POD_TEMPLATE, POD)
              for i in live.list(res, CONFORMANCE_NAMESPACE)]
    static = [(NODE, n["metadata"]["name"], None) for n in live.list(NODE, selector=CONFORMANCE_STATIC_LABEL)]
    return ctx.left_objects() + probes + static


def clean(ctx: Context, timeout: float = SWEEP_TIMEOUT, say=None) -> tuple[list[str], list[str]]:
    """Remove what the harness made (made_by_harness), on the other clusters its groups use too (other_clusters: a
    MultiKueue manager's workers), and nothing
    else: deleted in CLEAN_ORDER, deleted again while it comes back (a Workload Kueue made for a Job still being
    deleted, a node an autoscaler made for a request just deleted), until nothing is left or `timeout` has passed.
    (what was removed, what is still there), each as 'Kind namespace/name'; `say(line)` hears each deletion."""
    contexts = [("", ctx)] + [(f"{name}: ", c) for name, c in other_clusters(ctx)]
    removed: list[str] = []

    def shown(where: str, res, name: str, ns: str | None) -> str:
        return f"{where}{res.kind} {ns + '/' if ns else ''}{name}"

    def sweep() -> list[str]:
        left = []
        for where, c in contexts:
            found = made_by_harness(c)
            for res, name, ns in sorted(found, key=lambda f: CLEAN_ORDER.index(f[0])):
                what = shown(where, res, name, ns)
                left.append(what)
                obj = c.live.get(res, name, ns)
                if obj is None or deleting(obj):
                    continue
                if c.k.delete(res, name, ns, propagation="Background") and what not in removed:
                    removed.append(what)
                    if say is not None:
                        say(f"  removed {what}")
        return left

    left = poll.eventually(sweep, timeout, 1.0, done=lambda got: not got)
    return removed, left
