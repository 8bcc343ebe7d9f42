"""What the multikueue scenarios share: the three clusters (the manager's context and one per worker, from the
state `tau-demo cluster up --multikueue` wrote), each worker's own fake autoscaler started with the scenario's
stock-out, a recorder of one Job across the three clusters (the manager's Recorder writes the event log, with one
lane per object and cluster; a watch per worker keeps every version of its objects for the checks, which are pure:
checks.py), and the end of every scenario: the Job deleted, nothing left on any cluster, the workers' pools empty.

Kueue's MultiKueue (v0.19.2, AllAtOnce dispatcher) gives the remote copies of a Job the manager's names: the
Workload keeps the manager Workload's name, the Job its Job's; a worker's Job exists only once that worker admitted
the Workload (the adapter's SyncJob creates it).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from demo.cluster.multikueue import MANAGER, worker_of
from demo.cluster.multikueue_kwok import worker_pools_file, workers_of
from demo.cluster.state import State, state_of
from demo.jobs.snapshot import Snapshot
from demo.timeline import lanes as lanes_
from demo.timeline.log import EventLog
from k8s import heartbeat
from k8s.client import Kube
from k8s.keys import (ACTIVE, CHECK_NAME, DEADLINE_LEASE_PREFIX, DEFAULT_DEADLINE_CLASS, DEMO_CLUSTER_QUEUE,
                      FAKE_CA_LEASE, MULTIKUEUE_CHECK)
from k8s.objects import condition, meta
from k8s.resources import CLUSTER_QUEUE, JOB, NODE, POD, PROVREQ, WORKLOAD
from k8s.tape import Tape
from k8s.watch import NotSynced

from ..kit.controllers import DEMO_FAKE_CA, start_private
from ..kit.harness import NS, Context, ScenarioFailed
from ..kit.recorder import Recorder
from . import checks

CLUSTER_KINDS = (JOB, WORKLOAD, PROVREQ, POD, NODE)
SCALE_DOWN = "5s"          # the workers' autoscalers remove unneeded nodes after this (the fake's default: 10s)
CLEAN_TIMEOUT = 90.0
HOLD, NO_STOP = "Hold", "None"     # ClusterQueue spec.stopPolicy: no new quota reserved (nothing evicted); the default


@dataclass
class Worker:
    name: str              # its MultiKueueCluster's name: worker-1, worker-2
    state: State
    ctx: Context           # its own context: its cluster, its controllers' files named after it

    @property
    def pools(self) -> Path:
        return worker_pools_file(self.state)


def workers(ctx: Context) -> list[Worker]:
    """The manager's workers, each with a context of its own; ScenarioFailed when ctx is no MultiKueue manager."""
    st = state_of(ctx.kubeconfig)
    if st is None or st.role != MANAGER:
        raise ScenarioFailed("the multikueue scenarios run on a MultiKueue manager: bring one up with "
                             "`tau-demo cluster up --multikueue` (this cluster is a plain one)")
    found = workers_of(st)
    if len(found) != len(st.workers):
        raise ScenarioFailed(f"the manager {st.name} lists workers {', '.join(st.workers)}, but only "
                             f"{', '.join(w.name for w in found) or 'none'} have a state: run "
                             "`tau-demo cluster up --multikueue` to repair them")
    out = []
    for w in found:
        name = worker_of(st.name, w.name)
        out.append(Worker(name, w, Context(Kube(w.kubeconfig), w.kubeconfig, auto=ctx.auto, out=ctx.out,
                                           runs_dir=ctx.runs_dir, impersonate=ctx.impersonate,
                                           extra_args=ctx.extra_args, cluster=name)))
    return out


def autoscalers(ctx: Context, ws: list[Worker], stockout: dict[str, str]) -> None:
    """(Re)start each worker's fake autoscaler on its own cluster with its own pool table, out of stock for
    requests younger than stockout[worker] ("forever": for good); say what each one does."""
    for w in ws:
        args = [*DEMO_FAKE_CA, "--pools", str(w.pools), "--scale-down-unneeded", SCALE_DOWN]
        out = stockout.get(w.name)
        if out:
            args += ["--stockout", out]
        c = start_private(w.ctx, FAKE_CA_LEASE, args, f"{w.name}'s fake autoscaler")
        if not any(s.pidfile == c.pidfile for s in ctx.started):
            ctx.started.append(c)         # stopped with the run's controllers
        what = ("out of stock (--stockout forever): CapacityIsNotFound, retried" if out == "forever" else
                f"out of stock for requests younger than {out}" if out else "has capacity")
        ctx.say(f"  {w.name}: its own fake autoscaler ({w.pools.name}, nodes aks-gpupool-{w.name}-vmss…): {what}")


def no_deadline_on_workers(ws: list[Worker]) -> bool:
    """No admission-deadline controller runs on a worker: the remote Job copies the manager Job's deadline
    annotation, and only the manager's controller may decide."""
    return not any(heartbeat.alive(w.ctx.k, DEADLINE_LEASE_PREFIX + DEFAULT_DEADLINE_CLASS) for w in ws)


def worker_contexts(ctx: Context) -> list[tuple[str, Context]]:
    """The workers, each (its name, its context): the clusters besides the manager that a multikueue run makes
    objects on (the group's Group.other_clusters: where the runner looks for what a run left and clean sweeps)."""
    return [(w.name, w.ctx) for w in workers(ctx)]


def leftovers(ctx: Context, ws: list[Worker]) -> list[str]:
    """What a finished scenario must not leave on any of the three clusters."""
    return [f"manager: {x}" for x in ctx.leftovers()] + [f"{w.name}: {x}" for w in ws for x in w.ctx.leftovers()]


def open_scenario(ctx: Context, ws: list[Worker], title: str, stockout: dict[str, str]) -> None:
    """The scenario's header, the workers' autoscalers with its stock-out, and the three clusters clean (nodes an
    earlier run left go once an autoscaler finds them unneeded)."""
    ctx.header(title)
    for w in ws:                          # a run interrupted inside held() left its ClusterQueue stopped
        _stop_policy(w, NO_STOP)
    autoscalers(ctx, ws, stockout)
    left = leftovers(ctx, ws)
    if left:
        ctx.say(f"  waiting for what an earlier run left to go: {', '.join(left)}")
        ctx.wait(lambda: not leftovers(ctx, ws), CLEAN_TIMEOUT, "the three clusters to be clean")


def _stop_policy(w: Worker, policy: str) -> None:
    """Set the worker's ClusterQueue's stopPolicy and wait until Kueue has acted on it (its Active condition)."""
    w.ctx.k.patch(CLUSTER_QUEUE, DEMO_CLUSTER_QUEUE, {"spec": {"stopPolicy": policy}})
    want = "False" if policy == HOLD else "True"
    w.ctx.wait(lambda: (condition(w.ctx.live.must(CLUSTER_QUEUE, DEMO_CLUSTER_QUEUE), ACTIVE) or {}).get("status") == want,
               10, f"{w.name}'s ClusterQueue {DEMO_CLUSTER_QUEUE} to be Active={want} (stopPolicy {policy})")


@contextmanager
def held(ctx: Context, w: Worker) -> Iterator[None]:
    """Kueue's own pause for one worker: its ClusterQueue at stopPolicy Hold (Kueue reserves no new quota there and
    evicts nothing) while the block runs, released after it, failed or not."""
    _stop_policy(w, HOLD)
    ctx.say(f"  {w.name}: ClusterQueue {DEMO_CLUSTER_QUEUE} on hold (stopPolicy: {HOLD})")
    try:
        yield
    finally:
        _stop_policy(w, NO_STOP)
        ctx.say(f"  {w.name}: ClusterQueue {DEMO_CLUSTER_QUEUE} released (stopPolicy: {NO_STOP})")


def finish(ctx: Context, ws: list[Worker], name: str | None) -> None:
    """Delete the manager's Job (MultiKueue then removes its remote objects) and wait until nothing is left on
    any cluster and the workers' pools are back to 0 (the next scenario's stock-out must not find spare nodes)."""
    if name:
        ctx.delete_job(name)
    ctx.wait(lambda: not leftovers(ctx, ws), CLEAN_TIMEOUT, "nothing left on the three clusters")


# ---------------------------------------------------------------------------- watching the three clusters

def cluster_tape(w: Worker) -> Tape[checks.Objects]:
    """One worker's Jobs, Workloads, ProvisioningRequests and Pods of the demo namespace and its Nodes on a Tape,
    sampled after every change and every 0.2 s: (time, checks.Objects)."""
    return Tape(w.ctx.k, CLUSTER_KINDS, NS, project=lambda stores: checks.Objects(
        *(tuple(stores[r.plural].items()) for r in CLUSTER_KINDS)))


class Trio:
    """One Job across the three clusters.  The manager's Recorder (its Job and Workload, the deadline and the
    decision, every controller's log lines about them, the workers' Kueues' among them) writes the event log;
    its lanes are one per object and cluster ("manager Job", "worker-1 ProvReq", ...).  Each worker's objects come
    from a Tape of its own (cluster_tape).  After submit(), views() gives what each cluster held of the Job, over time."""

    def __init__(self, ctx: Context, ws: list[Worker], name: str, log: EventLog | None):
        self.ctx, self.ws, self.name = ctx, ws, name
        self.workload = ""                # the manager Workload's name, which its remote copies keep
        self.seen: dict[str, set[str]] = {c: set() for c in ["manager", *(w.name for w in ws)]}
        self.remote = {w.name: cluster_tape(w) for w in ws}
        self.manager = Recorder(ctx, name, log, lanes=self._lanes)

    def __enter__(self) -> Trio:
        for w in self.ws:
            try:
                self.remote[w.name].__enter__()
            except NotSynced as e:
                raise ScenarioFailed(f"watching {w.name}: {e}") from e
        self.manager.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        for cw in self.remote.values():
            cw.__exit__(*exc)
        self.manager.__exit__(*exc)

    def submitted(self, job: dict, timeout: float = 30) -> None:
        """The Job was created: its Workload's name once the manager's Kueue made it (the one the Job owns, as the
        recorder's snapshot finds it); the remote copies keep that name."""
        snap = self.ctx.wait(lambda: (s := self.manager.tape.latest()) is not None and s.workload is not None and s,
                             timeout, f"Kueue to make the Workload of Job {meta(job)['name']}")
        self.workload = meta(snap.workload)["name"]

    def _lanes(self, snap) -> dict[str, str]:
        states = lanes_.snapshot_states(Snapshot(snap.job, snap.workload), MULTIKUEUE_CHECK)
        states["AdmissionCheck"] = lanes_.dispatch_state(snap.workload, MULTIKUEUE_CHECK)
        out = self._cluster("manager", lanes_.MANAGER_LANES, states, snap.job, snap.workload)
        for w in self.ws:
            v = checks.job_view(self.remote[w.name].latest(checks.Objects()), self.name, self.workload)
            states = lanes_.snapshot_states(v, CHECK_NAME)
            out.update(self._cluster(w.name, lanes_.WORKER_LANES, states, v.job, v.workload))
        return out

    def _cluster(self, cluster: str, which: tuple[str, ...], states: dict, job, wl) -> dict[str, str]:
        seen = self.seen[cluster]
        if job is not None:
            seen.add("Job")
        if wl is not None:
            seen.add("Workload")
        return lanes_.cluster_lanes(cluster, which, states, seen)

    # what was seen
    def manager_views(self) -> checks.Snapshots:
        return [(t, Snapshot(s.job, s.workload)) for t, s in self.manager.samples]

    def worker_views(self) -> dict[str, checks.Snapshots]:
        return {w: checks.job_views(list(cw.samples), self.name, self.workload) for w, cw in self.remote.items()}

    def now(self, worker: str) -> Snapshot:
        return checks.job_view(self.remote[worker].latest(checks.Objects()), self.name, self.workload)

    def mark(self, label: str, t: float | None = None) -> None:
        self.manager.mark(label, t)

