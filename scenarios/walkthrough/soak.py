"""`tau-demo race soak`: random interleavings of admission and the deadline, with the protocol's
invariants checked after every run.

With faults, some runs also get one fault at a random moment: the deadline controller or the
fake autoscaler killed with SIGKILL and started again, Kueue killed and started again, or the
kube-apiserver killed and started again.  The invariants must hold all the same, and every run
must still be decided."""

from __future__ import annotations

import random
import statistics
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from demo.deadline import protocol as dl
from k8s import job as jobs
from k8s import workload as workloads
from k8s import hooks
from k8s.keys import PARAM_BOOT_SECONDS

from ..kit.controllers import Controller, race_controller
from ..kit.harness import NS, Context
from .race import CLASS_ANNOTATION, DEADLINE, capacity_back_after
from ..kit.recorder import Recorder


FAULTS = ("deadline-controller", "fake-ca", "kueue", "kube-apiserver")


@dataclass
class SoakRun:
    name: str
    outcome: str            # admission | timeout | ?
    violations: list[str]
    reaction: float | None  # deadline -> committed decision, seconds
    fault: str = ""         # what was killed during the run, and when


class Fault:
    """One fault, injected from a thread at a moment after the run's submission."""

    def __init__(self, kind: str, at: float, inject: Callable[[], None]):
        self.kind, self.at, self.inject = kind, at, inject
        self.error: str = ""
        self.thread = threading.Timer(at, self._run)     # started at the submission: fires `at` seconds later
        self.thread.daemon = True

    def _run(self) -> None:
        try:
            self.inject()
        except Exception as e:       # reported with the run; the soak goes on
            self.error = f"{type(e).__name__}: {e}"

    def __str__(self) -> str:
        return f"{self.kind} killed at {self.at:.1f}s" + (f" (restart failed: {self.error})" if self.error else "")


def soak_one(ctx: Context, ctl: Controller, hook_dir: Path, rng: random.Random, cls: str,
             fault: Fault | None = None) -> SoakRun:
    name = ctx.new_name("job-soak")
    key = f"{NS}/{name}"
    back = max(0.0, DEADLINE + rng.uniform(-4, 2))         # when capacity comes back
    pause = rng.choice([0.0, 0.0, rng.uniform(0.1, 3.0)])
    if pause:
        hooks.arm(hook_dir, "before-commit", key)
    violations: list[str] = []
    with Recorder(ctx, name, None, interval=0.15) as rec:
        # the VMs boot at once: this soak is about admission against the deadline, not about the boot
        ctx.submit(name, "1x8", duration="3s", deadline=f"{DEADLINE}s",
                   provreq={**capacity_back_after(round(back, 1)), PARAM_BOOT_SECONDS: "0"},
                   annotations={CLASS_ANNOTATION: cls})
        if fault is not None:
            fault.thread.start()
        if pause:
            try:
                hooks.wait_reached(hook_dir, "before-commit", key, timeout=DEADLINE + 10)
                ctx.hold(pause, "the commit paused at the hook")
                hooks.release(hook_dir, "before-commit", key)
            except TimeoutError:
                hooks.disarm(hook_dir, "before-commit", key)       # admitted first

        def settled():
            s = rec.samples[-1][1] if rec.samples else None
            if s is None:
                return False
            if s.job is None and rec.job_uid:
                return "deleted"
            return s.job is not None and ((s.job.get("status") or {}).get("succeeded") or 0) >= 1 and "succeeded"
        ctx.wait(settled, 180 if fault else 90, f"{name} to settle")
        if fault is not None:
            fault.thread.join(180)
        ctx.hold(1.5, "the window after it settled: a late start or deletion would show")
        samples = [s for _, s in rec.samples]
    admitted = any(s.workload and workloads.admitted(s.workload) for s in samples)
    committed = any(s.workload and workloads.committed_timeout(s.workload) for s in samples)
    ran = any(p.get("status", {}).get("phase") in ("Running", "Succeeded") for s in samples for p in s.pods)
    marked = any(jobs.mirrored(s.job) for s in samples)
    deleted = samples[-1].job is None
    violations += invariant_violations(samples, admitted, committed, ran, marked, deleted)
    reaction = None
    for s in samples:
        if s.workload and workloads.committed_timeout(s.workload) and s.job:
            t = workloads.decided_at(s.workload)
            d = dl.deadline_of(s.job)
            if t and d:
                reaction = (t - d).total_seconds()
            break
    if not deleted:
        ctx.delete_job(name)
    outcome = "timeout" if committed else ("admission" if admitted else "?")
    if fault is not None and fault.error:
        violations.append(f"the fault's restart failed: {fault.error}")
    return SoakRun(name, outcome, violations, reaction, str(fault) if fault else "")


def invariant_violations(samples: list, admitted: bool, committed: bool, ran: bool, marked: bool,
                         deleted: bool) -> list[str]:
    """The protocol's invariants over one run's observations.  A Workload that Kueue admitted and then
    evicted (its pods never became Ready) is waiting for admission again: a timeout committed then is
    legitimate; committing while it is Admitted, or touching a Job whose pods ran, is not."""
    out = []
    if any(s.workload and workloads.admitted(s.workload) and workloads.committed_timeout(s.workload) for s in samples):
        out.append("a Workload was Admitted and carried a committed timeout at once")
    if ran and (marked or deleted):
        out.append("a Job whose pods ran was marked or deleted")
    if deleted and not committed:
        out.append("cleanup deleted a job without a committed timeout")
    if committed and not marked:
        out.append("committed timeout never mirrored")
    if committed and any(p.get("status", {}).get("phase") == "Running" for s in samples[-3:] for p in s.pods):
        out.append("pods of a timed-out job kept running")
    return out


def soak(ctx: Context, runs: int, seed: int | None = None, faults: bool = False,
         restart: Callable[[str], None] | None = None, fake_ca: Controller | None = None,
         fault_share: float = 0.4) -> list[SoakRun]:
    """`restart(component)` restarts kueue or kube-apiserver (the cluster backend's); `fake_ca` is the
    fake autoscaler this soak started (faults kill only controllers it owns)."""
    rng = random.Random(seed)
    cls = "soak"
    ctl = race_controller(ctx, cls, "committed", hooks=True)
    hook_dir = ctl.scratch
    results: list[SoakRun] = []

    def kill_restart(c: Controller) -> Callable[[], None]:
        def go():
            c.kill9()
            c.start(ctx.kubeconfig)
        return go

    injectors = {"deadline-controller": kill_restart(ctl)}
    if fake_ca is not None:
        injectors["fake-ca"] = kill_restart(fake_ca)
    if restart is not None:
        injectors["kueue"] = lambda: restart("kueue")
        injectors["kube-apiserver"] = lambda: restart("kube-apiserver")
    try:
        for i in range(runs):
            fault = None
            if faults and rng.random() < fault_share:
                kind = rng.choice(sorted(injectors))
                fault = Fault(kind, rng.uniform(0.0, DEADLINE + 4), injectors[kind])
            r = soak_one(ctx, ctl, hook_dir, rng, cls, fault)
            results.append(r)
            ctx.say(f"  run {i + 1:3}/{runs}: {r.outcome:9} "
                    f"{'reaction %.2fs' % r.reaction if r.reaction is not None else '':16} "
                    f"{'VIOLATIONS: ' + '; '.join(r.violations) if r.violations else 'ok'}"
                    f"{'  [' + r.fault + ']' if r.fault else ''}")
        ctx.wait_pool_empty(120)
        leftovers = [x for x in ctx.leftovers() if "soak" in x or x.startswith("Node")]
        if leftovers:
            results.append(SoakRun("leftovers", "?", [f"left behind: {', '.join(leftovers)}"], None))
    finally:
        ctl.stop()
    return results


def _quantiles(xs: list[float]) -> str:
    xs = sorted(xs)
    if not xs:
        return "-"
    p95 = xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]
    return f"median {statistics.median(xs):.2f}s, p95 {p95:.2f}s, max {xs[-1]:.2f}s (n={len(xs)})"


def soak_table(results: list[SoakRun]) -> str:
    real = [r for r in results if r.name != "leftovers"]
    faulted = [r for r in real if r.fault]
    rows = [("runs", len(real)), ("admission won", sum(r.outcome == "admission" for r in real)),
            ("timeout won", sum(r.outcome == "timeout" for r in real)),
            ("undecided", sum(r.outcome == "?" for r in real)),
            ("violations", sum(len(r.violations) for r in results)),
            ("deadline -> commit, all runs", _quantiles([r.reaction for r in real if r.reaction is not None])),
            ("deadline -> commit, runs without a fault",
             _quantiles([r.reaction for r in real if r.reaction is not None and not r.fault]))]
    if faulted:
        rows.append(("runs with a fault", len(faulted)))
        for kind in FAULTS:
            mine = [r for r in faulted if r.fault.startswith(kind + " ")]
            if mine:
                rows.append((f"  {kind} killed", f"{len(mine)} runs: "
                             f"{sum(r.outcome == 'admission' for r in mine)} admission, "
                             f"{sum(r.outcome == 'timeout' for r in mine)} timeout; commit "
                             f"{_quantiles([r.reaction for r in mine if r.reaction is not None])}"))
    w = max(len(k) for k, _ in rows)
    return "\n".join(f"| {k:{w}} | {v} |" for k, v in rows)
