"""Where a capacity-provisioned GPU Job is in its life, derived from plain API objects.

`derive()` is a pure function of what the caller listed (Job, its Workload, the
ProvisioningRequests, the Job's pods and the nodes) and returns five phases:

    Submitted -> Quota reserved -> Capacity provisioning -> Pod scheduling -> Running

Each phase is "done", "active", "failed" or "pending".  Phases are evaluated in order;
the first one that is not done is the active (or failed) one and the rest are pending.
The shapes read here are those of Kueue v0.19.2 (kueue.x-k8s.io/v1beta2 Workload) and
autoscaling.x-k8s.io/v1 ProvisioningRequest.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from k8s import job as jobs
from k8s import node as nodes_
from k8s import provreq as provreqs_
from k8s import workload as workloads
from k8s.keys import (ADMISSION_TIMEOUT, CHECK_NAME, CHECK_RESET_PREFIX, DEACTIVATED_DUE_TO_ADMISSION_CHECK, FAILED,
                        GPU, JOB_COMPLETE, JOB_FAILED, POD_SCHEDULED, PROVISIONED, PROVREQ_UID_ANNOTATION,
                        QUEUE_LABEL, QUOTA_RESERVED, REQUEUED, REQUEUED_BY_ADMISSION_CHECK,
                        TERMINAL_REASON_ANNOTATION, TERMINAL_TIME_ANNOTATION, TERMINAL_WORKLOAD_ANNOTATION,
                        CheckState)
from k8s.objects import Obj, annotations, condition, created_at, deleting, is_true, labels
from k8s.objects import meta as _meta
from k8s.objects import spec as _spec
from k8s.objects import status as _status
from k8s.quantity import format_quantity, parse_quantity_exact

from .snapshot import Snapshot

PhaseState = Literal["done", "active", "failed", "pending"]
Outcome = Literal["waiting", "running", "succeeded", "failed"]
PHASES = ("Submitted", "Quota reserved", "Capacity provisioning", "Pod scheduling", "Running")
SYMBOLS = {"done": "✓", "active": "…", "failed": "✗", "pending": "·"}
NAME_WIDTH = 22
# what a card says of an object deleted after the Job completed (the Workload and the pods go with the Job)
WORKLOAD_DELETED = "the Workload was deleted after the Job completed"
PODS_DELETED = "the pods were deleted after the Job completed"



@dataclass(frozen=True)
class Phase:
    name: str
    state: PhaseState
    detail: str


@dataclass(frozen=True)
class View:
    phases: tuple[Phase, ...]
    outcome: Outcome
    reason: str    # why it failed / what it waits for; "" otherwise

    def render(self) -> str:
        """One line per phase: two spaces, symbol, space, name padded to 22, space, detail."""
        lines = []
        for p in self.phases:
            lines.append(f"  {SYMBOLS[p.state]} {p.name.ljust(NAME_WIDTH)} {p.detail}".rstrip())
        return "\n".join(lines)

    def phase(self, name: str) -> Phase:
        for p in self.phases:
            if p.name == name:
                return p
        raise KeyError(name)


# ------------------------------------------------------------------ small object helpers

def pod_phase(pod: Obj) -> str:
    return _status(pod).get("phase") or "Pending"


# ------------------------------------------------------------------------- quantities

def _sum_quantities(values: list[Any]) -> str:
    if len(values) == 1:
        return str(values[0])
    try:
        return format_quantity(sum(parse_quantity_exact(v) for v in values))     # two or more: a Fraction
    except ValueError:
        return "+".join(str(v) for v in values)


def quota_summary(workload: Obj | None) -> str:
    """"16 nvidia.com/gpu on ClusterQueue gpu-a100 (flavor a100-scale)" from status.admission."""
    admission = _status(workload).get("admission") or {}
    usage: dict[str, list[Any]] = {}
    flavors: dict[str, set[str]] = {}
    for psa in admission.get("podSetAssignments") or []:
        for res, qty in (psa.get("resourceUsage") or {}).items():
            usage.setdefault(res, []).append(qty)
        for res, flavor in (psa.get("flavors") or {}).items():
            flavors.setdefault(res, set()).add(flavor)
    all_flavors: set[str] = set().union(*flavors.values())
    if GPU in usage:
        what = f"{_sum_quantities(usage[GPU])} {GPU}"
        used_flavors = flavors.get(GPU) or all_flavors
    elif usage:
        what = ", ".join(f"{res} {_sum_quantities(usage[res])}" for res in sorted(usage))
        used_flavors = all_flavors
    else:
        what = "quota"
        used_flavors = all_flavors
    text = what
    cq = admission.get("clusterQueue")
    if cq:
        text += f" on ClusterQueue {cq}"
    if used_flavors:
        names = sorted(used_flavors)
        text += f" ({'flavor' if len(names) == 1 else 'flavors'} {', '.join(names)})"
    return text


def pool_line(pool: str, nodes: list[Obj], max_nodes: int) -> str:
    """"Node pool gpupool: 1/2 nodes": live (not deleting) nodes labelled with the pool."""
    return f"Node pool {pool}: {len(nodes_.of_pool(nodes, pool))}/{max_nodes} nodes"


# ------------------------------------------------------------------------- derivation

@dataclass
class _Facts:
    job: Obj | None
    workload: Obj | None
    provreqs: list[Obj]          # this workload's, oldest attempt first
    pods: list[Obj]              # live pods of the job
    nodes: list[Obj]
    check_name: str
    check: Obj | None
    need: int
    now: datetime | None = None

    @property
    def job_started(self) -> bool:
        """Kueue unsuspends a managed Job only once its Workload is admitted."""
        return jobs.started(self.job)

    @property
    def inactive(self) -> bool:
        return self.workload is not None and workloads.deactivated(self.workload)

    @property
    def quota_was_reserved(self) -> bool:
        """Quota is or was reserved for the workload's current life.

        Besides QuotaReserved/Admitted/status.admission: the job reconciler writes
        Requeued=False only when it clears a reservation after an eviction, and a
        check only leaves Pending once quota is reserved.
        """
        wl = self.workload
        if wl is None:
            return False
        if workloads.holds_quota(wl) or workloads.admitted(wl):
            return True
        rq = condition(wl, REQUEUED)
        if rq is not None and rq.get("status") == "False":
            return True
        return self.check is not None and self.check.get("state") in (CheckState.READY, CheckState.RETRY, CheckState.REJECTED)

    def newest_provreq(self) -> Obj | None:
        return self.provreqs[-1] if self.provreqs else None

    def evicted(self) -> Obj | None:
        return workloads.evicted(self.workload)

    def cause(self) -> str:
        """Why the workload was deactivated, in one phrase."""
        if workloads.committed_timeout(self.workload):
            return "admission deadline passed: workload deactivated"
        ev = self.evicted()
        check = self.check or {}
        if check.get("state") == CheckState.REJECTED:
            msg = check.get("message") or (ev or {}).get("message") or ""
            return f"rejected by admission check: {msg}" if msg else "rejected by admission check"
        if ev is not None and ev.get("reason") == DEACTIVATED_DUE_TO_ADMISSION_CHECK:
            msg = ev.get("message") or ""
            return f"rejected by admission check: {msg}" if msg else "rejected by admission check"
        if ev is not None:
            return ev.get("message") or f"evicted ({ev.get('reason', '')})"
        return "workload deactivated (spec.active=false)"

    def attempt(self) -> int | None:
        return provreqs_.attempt(self.newest_provreq(), self.check_name)     # None without a request

    def terminal_failure(self) -> str | None:
        """A Job-level failure that ends everything: the deadline mirror or Job Failed=True."""
        ann = annotations(self.job)
        reason = ann.get(TERMINAL_REASON_ANNOTATION)
        if reason:
            msg = "admission deadline passed" if reason == ADMISSION_TIMEOUT else "Job marked terminal"
            if ann.get(TERMINAL_TIME_ANNOTATION):
                msg += f" at {ann[TERMINAL_TIME_ANNOTATION]}"
            if ann.get(TERMINAL_WORKLOAD_ANNOTATION):
                msg += f" (Workload {ann[TERMINAL_WORKLOAD_ANNOTATION]} deactivated)"
            return f"{reason}: {msg}"
        failed = condition(self.job, JOB_FAILED)
        if failed is not None and failed.get("status") == "True":
            return _reason_message(failed)
        return None


def _reason_message(cond: Obj) -> str:
    reason, msg = cond.get("reason") or "", cond.get("message") or ""
    if reason and msg:
        return f"{reason}: {msg}"
    return reason or msg or cond["type"]          # found by its type


def _submitted(f: _Facts) -> tuple[str, str]:
    if f.job is None:
        return "active", "waiting for the Job"
    # Kueue's webhook suspends a queue-labelled Job at creation, so a labelled Job was
    # suspended when first seen even if it has been unsuspended since.
    suspended = jobs.suspended(f.job) or QUEUE_LABEL in labels(f.job)
    return "done", "Job applied (suspended)" if suspended else "Job applied"


def _quota(f: _Facts) -> tuple[str, str]:
    wl = f.workload
    if wl is None:
        if jobs.outcome(f.job) == "succeeded":
            return "done", f"quota was reserved ({WORKLOAD_DELETED})"
        if f.job_started:
            return "done", "quota was reserved (the Workload has been deleted since)"
        return "active", "waiting for Kueue to create the Workload"
    if workloads.quota_reserved(wl) or workloads.admitted(wl) or (
            workloads.finished(wl) and _status(wl).get("admission")):
        return "done", quota_summary(wl)
    if f.job_started:
        return "done", quota_summary(wl) if _status(wl).get("admission") else "quota was reserved"
    if f.inactive:
        if f.quota_was_reserved:
            return "done", "quota was reserved (released on eviction)"
        return "failed", f.cause()
    rq = condition(wl, REQUEUED)
    if rq is not None and rq.get("status") == "False" and rq.get("reason") == REQUEUED_BY_ADMISSION_CHECK:
        # Retry backoff: the eviction released the quota until requeueState.requeueAt.
        n = (f.check or {}).get("retryCount") or f.attempt()
        until = (_status(wl).get("requeueState") or {}).get("requeueAt")
        text = f"retry after attempt {n}: " if n else "retry: "
        return "active", text + (f"quota released, requeued at {until}" if until else "quota released, requeued")
    qr = condition(wl, QUOTA_RESERVED)
    if qr is not None and qr.get("status") == "False" and qr.get("message"):
        return "active", qr["message"]
    return "active", "waiting for Kueue to reserve quota"


def _capacity(f: _Facts) -> tuple[str, str]:
    wl, check = f.workload, f.check or {}
    state = check.get("state") or CheckState.PENDING
    if state == CheckState.REJECTED:
        return "failed", f.cause()
    if workloads.admitted(wl) or f.job_started or (wl is None and jobs.outcome(f.job) == "succeeded"):
        return "done", _booked(f)
    if f.inactive:
        return "failed", f.cause()
    if state == CheckState.READY:
        return "done", _booked(f)
    msg = check.get("message") or ""
    if msg.startswith(CHECK_RESET_PREFIX):
        msg = ""
    pr = f.newest_provreq()
    if not msg and pr is not None:
        failed, prov = condition(pr, FAILED), condition(pr, PROVISIONED)
        if failed is not None and failed.get("status") == "True" and failed.get("message"):
            msg = failed["message"]
        elif prov is not None and prov.get("message"):
            msg = prov["message"]
    if not msg:
        msg = "waiting for the autoscaler"
    if state == CheckState.RETRY:
        n = f.attempt() or (int(check.get("retryCount") or 0) + 1)
        msg = f"retry after attempt {n}: {msg}"
    return "active", msg


def _booked(f: _Facts) -> str:
    provisioned = [pr for pr in f.provreqs if is_true(pr, PROVISIONED)]
    uid = _meta(provisioned[-1]).get("uid") if provisioned else None
    booked = [n for n in f.nodes if uid and annotations(n).get(PROVREQ_UID_ANNOTATION) == uid]
    if not booked:
        # Kueue may have deleted the request by now, or the real Cluster Autoscaler made the nodes (they carry
        # no request uid): fall back to the autoscaler's nodes (a pool's) the pods ran on
        used = {_spec(p).get("nodeName") for p in f.pods}
        booked = [n for n in f.nodes if _meta(n).get("name") in used
                  and (annotations(n).get(PROVREQ_UID_ANNOTATION) or nodes_.pool_of(n))]
    if not booked:
        return "capacity found on existing nodes"
    pools = sorted({nodes_.pool_of(n) for n in booked if nodes_.pool_of(n)})
    text = f"capacity booked on {len(booked)} node(s)"
    return text + (f" of {', '.join(pools)}" if pools else "")


def _scheduling(f: _Facts) -> tuple[str, str]:
    bound = [p for p in f.pods if _spec(p).get("nodeName")]
    names = sorted({_spec(p)["nodeName"] for p in bound})
    if len(bound) >= f.need or jobs.outcome(f.job) == "succeeded":
        if not bound:
            return "done", f"scheduled ({PODS_DELETED})"
        count = f"{len(bound)}/{f.need}" if len(bound) <= f.need else f"{len(bound)} pods"
        return "done", f"{count} on {', '.join(names)}"
    if not jobs.started(f.job):
        return "active", "waiting for Kueue to unsuspend the Job"
    text = f"{len(bound)}/{f.need} scheduled"
    booting = _booting_nodes(f)
    if booting:
        since = [created_at(n) for n in booting]
        oldest = min((t for t in since if t is not None), default=None)
        for_how_long = f" for {(f.now - oldest).total_seconds():.0f}s" if f.now and oldest else ""
        return "active", f"{text}: {len(booting)} node(s) booting{for_how_long} (NotReady until their VMs are up)"
    for p in f.pods:
        c = condition(p, POD_SCHEDULED)
        if not _spec(p).get("nodeName") and c is not None and c.get("status") == "False" and c.get("message"):
            text += f" ({c.get('reason') or 'Unschedulable'}: {c['message']})"
            break
    return "active", text


def _booting_nodes(f: _Facts) -> list[Obj]:
    """The autoscaler's nodes made for this Job's provisioned request that are not Ready yet."""
    uids = {_meta(pr).get("uid") for pr in f.provreqs if is_true(pr, PROVISIONED)}
    return [n for n in f.nodes if annotations(n).get(PROVREQ_UID_ANNOTATION) in uids
            and not nodes_.ready(n) and not deleting(n)]


def _running_pods(f: _Facts) -> int:
    return sum(1 for p in f.pods if pod_phase(p) == "Running")


def _running(f: _Facts) -> tuple[str, str]:
    job = f.job
    if is_true(job, JOB_COMPLETE):
        st, sp = _status(job), _spec(job)
        completions = sp.get("completions")
        completions = jobs.parallelism(job) if completions is None else int(completions)
        return "done", f"Succeeded ({int(st.get('succeeded') or 0)}/{completions} completions)"
    # a terminal failure (the deadline's mirror, Failed=True) turns this open phase failed in derive()
    running = _running_pods(f)
    finished = sum(1 for p in f.pods if pod_phase(p) == "Succeeded")
    if running or finished:
        done = f", {finished} finished" if finished else ""
        return "active", f"Running ({running}/{f.need} pods{done})"
    return "active", f"waiting for pods to start (0/{f.need} running)"


_EVALUATORS = (_submitted, _quota, _capacity, _scheduling, _running)


def derive(snap: Snapshot, check_name: str = CHECK_NAME, now: datetime | None = None) -> View:
    """The phase view of one Job.  `snap.pods` are the Job's pods (assemble() chooses them); `now` lets
    details say for how long (nodes booting)."""
    facts = _Facts(
        job=snap.job, workload=snap.workload,
        provreqs=provreqs_.of_workload(snap.workload, snap.provreqs or [], check_name),
        pods=[p for p in snap.pods or [] if not deleting(p)],
        nodes=list(snap.nodes or []), check_name=check_name,
        check=workloads.admission_check(snap.workload, check_name), need=jobs.parallelism(snap.job), now=now,
    )
    terminal = facts.terminal_failure()
    phases: list[Phase] = []
    for name, evaluate in zip(PHASES, _EVALUATORS):
        if phases and phases[-1].state != "done":         # an open or failed phase blocks the ones after it
            phases.append(Phase(name, "pending", ""))
            continue
        state, detail = evaluate(facts)
        if state == "active" and terminal:
            # The Job ended (deadline mirror or Failed=True) while this phase was open.
            state, detail = "failed", terminal
        phases.append(Phase(name, state, detail))

    failed = next((p for p in phases if p.state == "failed"), None)
    if failed is not None:
        outcome, reason = "failed", failed.detail
    elif all(p.state == "done" for p in phases):
        outcome, reason = "succeeded", ""
    else:                         # neither failed nor done: the first phase not done is open
        active = next(p for p in phases if p.state == "active")
        all_running = active.name == "Running" and _running_pods(facts) >= facts.need
        outcome = "running" if all_running else "waiting"
        reason = active.detail
    return View(phases=tuple(phases), outcome=outcome, reason=reason)


# ------------------------------------------------------------------------- over a whole run

Row = list[str]       # [name, state, detail], as the event log holds a phase (demo.timeline.log)


def over_run(history: list[list[Row]], outcome: str = "") -> tuple[list[Row], str]:
    """The five phases over a run, from the rows written as it went (oldest first) and the last outcome: what
    the run reached, not what its teardown left (one node deleted, one pod gone, the Workload gone).

    Each phase is shown as it was when the run moved on from it: as in the row where the next phase was first
    done (both nodes booked, both pods scheduled), or, when no phase after it was ever done, as it was first done.
    Not simply when it was first done: a row is derived from several watches, and the one that says a phase is
    done (the request Provisioned) can come before another that says how (the nodes made for it).  A phase failed in
    the last rows stays failed (the run ended so); a phase never done is shown as it was last open (active or
    failed); the phases after the first one not done are pending, as in derive().  The outcome: succeeded when all
    are done, failed when one failed, else the last one."""
    if not history:
        return [], outcome
    last = history[-1]
    rows: list[Row] = []
    for i, (name, state, detail) in enumerate(last):
        if rows and rows[-1][1] != "done":
            rows.append([name, "pending", ""])
            continue
        seen = [(s, d) for written in history for n, s, d in written if n == name]
        done = [d for s, d in seen if s == "done"]
        moved_on = next((j for j, written in enumerate(history)
                         if i + 1 < len(written) and written[i + 1][1] == "done"), None)
        settled = [] if moved_on is None else [d for written in history[:moved_on + 1] for n, s, d in written
                                               if n == name and s == "done"]
        if settled:
            done = settled[-1:]
        opened = [(s, d) for s, d in seen if s != "pending"]
        if state != "failed" and done:
            state, detail = "done", done[0]
        elif state == "pending" and opened:      # pending now only because a phase before it went back
            state, detail = opened[-1]
        rows.append([name, state, detail])
    if all(r[1] == "done" for r in rows):
        outcome = "succeeded"
    elif any(r[1] == "failed" for r in rows):
        outcome = "failed"
    return rows, outcome
