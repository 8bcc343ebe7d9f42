"""`tau-demo race soak`: random interleavings of admission and the deadline, with the protocol's
invariants checked after every run."""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from demo.deadline import protocol as dl
from demo.k8s import hooks
from demo.k8s.keys import ADMITTED, DECISION_TIME_ANNOTATION
from demo.k8s.objects import is_true, parse_time

from .controllers import Controller
from .harness import NS, Context
from .race import CLASS_ANNOTATION, DEADLINE, capacity_back_after, race_controller
from .recorder import Recorder


@dataclass
class SoakRun:
    name: str
    outcome: str            # admission | timeout | ?
    violations: list[str]
    reaction: float | None  # deadline -> committed decision, seconds


def soak_one(ctx: Context, ctl: Controller, hook_dir: Path, rng: random.Random, cls: str) -> SoakRun:
    name = ctx.new_name("job-soak")
    key = f"{NS}/{name}"
    back = max(0.0, DEADLINE + rng.uniform(-3, 3))         # when capacity comes back
    pause = rng.choice([0.0, 0.0, rng.uniform(0.1, 3.0)])
    if pause:
        hooks.arm(hook_dir, "before-commit", key)
    violations: list[str] = []
    with Recorder(ctx, name, None, interval=0.15) as rec:
        ctx.submit(name, "1x8", duration="3s", deadline=f"{DEADLINE}s",
                   provreq=capacity_back_after(round(back, 1)), annotations={CLASS_ANNOTATION: cls})
        if pause:
            try:
                hooks.wait_reached(hook_dir, "before-commit", key, timeout=DEADLINE + 10)
                time.sleep(pause)
                hooks.release(hook_dir, "before-commit", key)
            except TimeoutError:
                (hook_dir / f"before-commit@{key.replace('/', '_')}.arm").unlink(missing_ok=True)   # admitted first

        def settled():
            s = rec.samples[-1][1] if rec.samples else None
            if s is None:
                return False
            if s.job is None and rec.job_uid:
                return "deleted"
            return s.job is not None and ((s.job.get("status") or {}).get("succeeded") or 0) >= 1 and "succeeded"
        ctx.wait(settled, 90, f"{name} to settle")
        time.sleep(1.5)
        samples = [s for _, s in rec.samples]
    admitted = any(s.workload and is_true(s.workload, ADMITTED) for s in samples)
    committed = any(s.workload and dl.committed_timeout(s.workload) for s in samples)
    marked = any(dl.mirrored(s.job) for s in samples)
    deleted = samples[-1].job is None
    if admitted and committed:
        violations.append("both admitted and committed")
    if admitted and (marked or deleted):
        violations.append("an admitted job was marked or deleted")
    if deleted and not committed:
        violations.append("cleanup deleted a job without a committed timeout")
    if committed and not marked:
        violations.append("committed timeout never mirrored")
    if committed and any(p.get("status", {}).get("phase") == "Running" for s in samples[-3:] for p in s.pods):
        violations.append("pods of a timed-out job kept running")
    reaction = None
    for s in samples:
        if s.workload and dl.committed_timeout(s.workload) and s.job:
            t = parse_time(s.workload["metadata"]["annotations"].get(DECISION_TIME_ANNOTATION))
            d = dl.deadline_of(s.job)
            if t and d:
                reaction = (t - d).total_seconds()
            break
    if not deleted:
        ctx.delete_job(name)
    outcome = "admission" if admitted else ("timeout" if committed else "?")
    return SoakRun(name, outcome, violations, reaction)


def soak(ctx: Context, runs: int, seed: int | None = None) -> list[SoakRun]:
    rng = random.Random(seed)
    cls = "soak"
    hook_dir = Path(tempfile.mkdtemp(prefix="tau-hooks-"))
    ctl = race_controller(ctx, cls, "committed", hook_dir)
    results: list[SoakRun] = []
    try:
        for i in range(runs):
            r = soak_one(ctx, ctl, hook_dir, rng, cls)
            results.append(r)
            ctx.say(f"  run {i + 1:3}/{runs}: {r.outcome:9} "
                    f"{'reaction %.2fs' % r.reaction if r.reaction is not None else '':16} "
                    f"{'VIOLATIONS: ' + '; '.join(r.violations) if r.violations else 'ok'}")
        ctx.wait_pool_empty(120)
        leftovers = [x for x in ctx.leftovers() if "soak" in x or x.startswith("Node")]
        if leftovers:
            results.append(SoakRun("leftovers", "?", [f"left behind: {', '.join(leftovers)}"], None))
    finally:
        ctl.stop()
    return results


def soak_table(results: list[SoakRun]) -> str:
    real = [r for r in results if r.name != "leftovers"]
    reactions = sorted(r.reaction for r in real if r.reaction is not None)
    p95 = reactions[min(len(reactions) - 1, int(round(0.95 * (len(reactions) - 1))))] if reactions else None
    rows = [("runs", len(real)), ("admission won", sum(r.outcome == "admission" for r in real)),
            ("timeout won", sum(r.outcome == "timeout" for r in real)),
            ("undecided", sum(r.outcome == "?" for r in real)),
            ("violations", sum(len(r.violations) for r in results)),
            ("deadline -> commit median", f"{statistics.median(reactions):.2f}s" if reactions else "-"),
            ("deadline -> commit p95", f"{p95:.2f}s" if p95 is not None else "-")]
    w = max(len(k) for k, _ in rows)
    return "\n".join(f"| {k:{w}} | {v} |" for k, v in rows)
