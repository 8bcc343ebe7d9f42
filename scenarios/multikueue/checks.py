"""What the multikueue scenarios decide across the three clusters, as pure functions over what their watches saw:
one cluster's objects at one moment (Objects), one Job's objects in it (Snapshot, by the Job's and the Workload's
names: MultiKueue gives the remote copies the manager's names), and over time (samples: (time, Objects), in
order) which worker admitted first, whether something held or was absent over a whole window, whether a Job that
ran on a worker was ever reported failed or deleted before it finished, who wrote each ProvisioningRequest
condition, and whether kubernetes-sigs/kueue#8089's stuck dispatch happened.  No I/O (scenarios/multikueue/kit.py
does the watching)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from demo.jobs.snapshot import Snapshot
from k8s import job as jobs
from k8s import provreq as provreqs_
from k8s import workload as workloads
from k8s.keys import JOB_CONTROLLER_UID_LABEL, JOB_NAME_LABEL, PROVREQ_CONDITIONS, PROVREQ_UID_ANNOTATION
from k8s.tape import first
from k8s.objects import Obj, annotations, condition, labels, meta, spec, uid


@dataclass(frozen=True)
class Objects:
    """One cluster's Jobs, Workloads, ProvisioningRequests and Pods of the demo namespace and its Nodes, at one
    moment."""
    jobs: tuple[Obj, ...] = ()
    workloads: tuple[Obj, ...] = ()
    provreqs: tuple[Obj, ...] = ()
    pods: tuple[Obj, ...] = ()
    nodes: tuple[Obj, ...] = ()


Samples = list[tuple[float, Objects]]
Snapshots = list[tuple[float, Snapshot]]


def _named(objs: Iterable[Obj], name: str) -> Obj | None:
    return next((o for o in objs if meta(o).get("name") == name), None)


def job_view(objs: Objects, job_name: str, workload_name: str) -> Snapshot:
    """The Job `job_name`'s objects in one cluster.  Its requests are found by the Workload's name even once the
    Workload is gone (a request outlives it until the garbage collector takes it)."""
    job = _named(objs.jobs, job_name)
    wl = _named(objs.workloads, workload_name)
    mine = provreqs_.of_workload(wl or {"metadata": {"name": workload_name}}, objs.provreqs)
    if job is not None:
        pods = [p for p in objs.pods if labels(p).get(JOB_CONTROLLER_UID_LABEL) == uid(job)]
    else:
        pods = [p for p in objs.pods if labels(p).get(JOB_NAME_LABEL) == job_name]
    return Snapshot(job, wl, mine, pods, list(objs.nodes))


def job_views(samples: Samples, job_name: str, workload_name: str) -> Snapshots:
    return [(t, job_view(o, job_name, workload_name)) for t, o in samples]


# ---------------------------------------------------------------------------- over time

def span(vs: Snapshots, pred: Callable[[Snapshot], object]) -> tuple[float, float] | None:
    """The first and the last sample at which pred held, or None when it never did."""
    times = [t for t, v in vs if pred(v)]
    return (times[0], times[-1]) if times else None


def after(vs: Snapshots, since: float | None) -> Snapshots:
    """The samples from `since` on (none when since is None)."""
    return [] if since is None else [(t, v) for t, v in vs if t >= since]


def committed_at(vs: Snapshots) -> float | None:
    """When the admission deadline's timeout was committed on the Workload these views show: the commit's own time
    (workloads.decided_at), not the first sample that shows it.  That sample lags the write by its watch's delay,
    which under load outlasts what MultiKueue does on a worker in answer to the commit (another cluster's watch
    can show that first)."""
    at = next((a for _, v in vs if (a := workloads.decided_at(v.workload)) is not None), None)
    return at.timestamp() if at is not None else None


def settled(vs: Snapshots, since: float | None,
            present: Callable[[Snapshot], object]) -> tuple[float | None, list[Snapshot]]:
    """After `since`: when `present` stopped holding for good (the first sample of the absence that lasts to the
    last sample; None while it still holds at the end), and every view in which it held again after it had
    stopped once (a copy re-created meanwhile)."""
    xs = after(vs, since)
    absent = [i for i, (_, v) in enumerate(xs) if not present(v)]
    if not absent:
        return None, []
    back = [v for _, v in xs[absent[0]:] if present(v)]
    last = max((i for i, (_, v) in enumerate(xs) if present(v)), default=-1)
    return (xs[last + 1][0] if last + 1 < len(xs) else None), back


def throughout(vs: Snapshots, since: float, until: float, pred: Callable[[Snapshot], object],
               max_gap: float = 1.0) -> tuple[bool, str]:
    """Did pred hold at every sample from `since` to `until`, with the samples covering the whole window (none
    further than max_gap apart, the first no later than max_gap after `since`, the last no earlier than max_gap
    before `until`)?  (ok, what was seen)"""
    inside = [(t, v) for t, v in vs if since <= t <= until]
    if until < since or not inside:
        return False, f"no sample between {since:.1f} and {until:.1f}"
    times = [since, *(t for t, _ in inside), until]
    gap = max(b - a for a, b in zip(times, times[1:]))
    if gap > max_gap:
        return False, f"the samples leave a gap of {gap:.1f}s (more than {max_gap:g}s) in the window"
    broken = next((t for t, v in inside if not pred(v)), None)
    if broken is not None:
        return False, f"it did not hold {broken - since:.1f}s into the {until - since:.1f}s window"
    return True, f"held at all {len(inside)} samples of the {until - since:.1f}s window"


def admitted_first(by_worker: dict[str, Snapshots]) -> tuple[str, float] | None:
    """The worker whose copy of the Workload was Admitted first, and when; None if none was."""
    times = [(t, w) for w, vs in by_worker.items() if (t := first(vs, lambda v: workloads.admitted(v.workload)))
             is not None]
    if not times:
        return None
    t, w = min(times)
    return w, t


def ran(v: Snapshot) -> bool:
    """The Job ran here: unsuspended with a pod running or done."""
    phases = {(p.get("status") or {}).get("phase") for p in v.pods}
    return jobs.started(v.job) and bool(phases & {"Running", "Succeeded"})


def disturbed(manager: Snapshots, by_worker: dict[str, Snapshots]) -> list[str]:
    """"A Job that runs on a worker is never reported failed or deleted": for every worker where the Job ran, the
    manager's Job was never marked terminal (the deadline's mirror) nor failed, and the worker's Job was not
    deleted before it finished (the last version seen before it went had succeeded).  The broken rules, as
    sentences (empty: none)."""
    out = []
    for w, vs in by_worker.items():
        if not any(ran(v) for _, v in vs):
            continue
        marked = [jobs.outcome(v.job) == "failed" or jobs.mirrored(v.job) for _, v in manager]
        if any(marked):
            out.append(f"the Job ran on {w}, yet the manager's Job was reported failed or timed out")
        seen = [v.job for _, v in vs]
        for before, after in zip(seen, seen[1:]):
            if before is not None and after is None and jobs.outcome(before) != "succeeded":
                out.append(f"the Job ran on {w} and was deleted there before it finished")
                break
        if any(meta(j).get("deletionTimestamp") and jobs.outcome(j) != "succeeded" for j in seen if j is not None):
            out.append(f"the Job ran on {w} and was being deleted there before it finished")
    return out


def conditions_written(by_worker: dict[str, Snapshots]) -> dict[str, set[str]]:
    """Who wrote each ProvisioningRequest condition seen on the workers: "<worker> <condition>" -> field managers
    (from managedFields)."""
    out: dict[str, set[str]] = {}
    for w, vs in by_worker.items():
        for _, v in vs:
            for pr in v.provreqs:
                for ctype in PROVREQ_CONDITIONS:
                    if condition(pr, ctype) is not None:
                        out.setdefault(f"{w} {ctype}", set()).update(provreqs_.condition_writers(pr, ctype))
    return out


def not_written_by(writers: dict[str, set[str]], allowed: Iterable[str]) -> list[str]:
    """The conditions some other writer than `allowed` wrote (or that no managedFields entry owns)."""
    ok = set(allowed)
    return sorted(f"{what} by {', '.join(sorted(who)) or 'nobody known'}" for what, who in writers.items()
                  if not who or who - ok)


def holds_quota_since(vs: Snapshots) -> float | None:
    """When the copy of the Workload in this cluster first held quota (QuotaReserved)."""
    return first(vs, lambda v: workloads.quota_reserved(v.workload))


@dataclass(frozen=True)
class Dispatch:
    """kubernetes-sigs/kueue#8089 on one run: did MultiKueue stick to the stocked-out worker?"""
    reproduced: bool
    evidence: str


def stuck_dispatch(manager: Snapshots, by_worker: dict[str, Snapshots], stocked: str, t0: float = 0.0) -> Dispatch:
    """The report: when the worker MultiKueue chooses cannot provision, admission is stuck.  Reproduced when the
    manager's Workload was placed on the stocked-out worker, or never admitted although another worker's copy
    was; not reproduced when another worker admitted it and the manager followed.  Times are said from t0 (the
    Job's creation)."""
    placed = [workloads.cluster_name(v.workload) for _, v in manager if workloads.cluster_name(v.workload)]
    chosen = placed[-1] if placed else ""
    winner = admitted_first(by_worker)
    reserved = {w: holds_quota_since(vs) for w, vs in by_worker.items()}
    order = ", ".join(f"{w} at {t - t0:.2f}s" if t is not None else f"{w} never" for w, t in sorted(reserved.items()))
    manager_admitted = first(manager, lambda v: workloads.admitted(v.workload))
    if chosen == stocked:
        return Dispatch(True, f"the manager placed the Workload on {stocked}, which could not provision "
                              f"(quota reserved: {order})")
    if winner is not None and manager_admitted is None:
        return Dispatch(True, f"{winner[0]} admitted its copy but the manager's Workload was never admitted "
                              f"(quota reserved: {order})")
    if winner is None:
        return Dispatch(False, f"no worker admitted the Workload (quota reserved: {order}): nothing to tell")
    return Dispatch(False, f"the manager followed {chosen or '?'}, the worker that admitted first "
                           f"({winner[1] - (reserved.get(winner[0]) or winner[1]):.2f}s after its quota), not the "
                           f"stocked-out {stocked} (quota reserved: {order})")


def job_uids(vs: Snapshots) -> set[str]:
    return {uid(v.job) for _, v in vs if v.job is not None}


def nodes_for(vs: Snapshots) -> set[str]:
    """Every node an autoscaler made for one of the Job's requests seen here (the fake's nodes carry the request's
    uid)."""
    uids = {uid(pr) for _, v in vs for pr in v.provreqs}
    return {meta(n).get("name") for _, v in vs for n in v.nodes if annotations(n).get(PROVREQ_UID_ANNOTATION) in uids}


def pods_on(vs: Snapshots) -> set[str]:
    """Every node the Job's pods were bound to."""
    return {spec(p).get("nodeName") for _, v in vs for p in v.pods if spec(p).get("nodeName")}
