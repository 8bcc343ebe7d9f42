"""The admission-deadline controller at scale: N Jobs (100) whose deadlines all pass within the same
second, none of which can be admitted; time from each deadline to the committed decision, the
controller's CPU, and the protocol's invariants checked on every Job.

- Starts its own deadline controller (class `bench-latency`, no pause points, as its ServiceAccount),
  so a demo controller that may be running leaves these Jobs alone.
- Each Job is `tau-demo submit`'s Job (1 x 8 GPU, queue gpu-a100-8) with the ProvisioningRequest
  parameter fakeCAStockout=true: a fake autoscaler, if one runs, answers CapacityIsNotFound, and with
  no autoscaler the request is never answered; either way no Workload is admitted.  The ClusterQueue's
  16 GPUs hold quota for two of them; the rest wait for quota.
- The deadline annotation of Job i is chosen from its creationTimestamp so that the deadline is
  T + i/N seconds: all N deadlines pass within one second, T is --lead seconds after the start.
- Two Tapes (k8s/tape.py), on the Jobs and on the Workloads, stamp every change with the time it arrived
  (time.time(), milliseconds); the latency of Job i is the arrival of the first Workload event that
  carries the committed decision, minus its deadline.  Beside it: the controller's decision-time
  annotation (when it sent the commit) and the commit's PATCH round trip (from its log), which split
  the latency into the controller's part and the apiserver's.
- The controller's CPU time (utime + stime from /proc) is read before the Jobs are created, at T - 0.5 s,
  when the last decision arrived, and when cleanup deleted the last Job.  The apiserver's /metrics,
  read at T - 1.5 s and when the last decision arrived, give its CPU and writes over the burst.
- Afterwards demo.deadline.invariants checks every Job's history (committed => mirrored, never admitted
  and committed, mirror after commit, cleanup armed after the mirror, cleanup only of committed
  timeouts, each step written once); then everything the script made is deleted.

Needs `tau-demo cluster up`.  Run from the repository root:

    .venv/bin/python -m bench.deadline_latency [--jobs 100] [--lead 30] [--cleanup-ttl 5s]
                                               [--controller-arg=--workers --controller-arg=4]
"""

from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from demo.cluster import procs
from demo.cluster.state import default_kubeconfig
from demo.deadline import protocol as dl
from demo.deadline.invariants import History, violations
from demo.jobs.preflight import Gang
from demo.jobs.render import job_template, render_job
from k8s import job as jobs_
from k8s import poll
from k8s import workload as workloads
from k8s.client import Kube
from k8s.duration import parse_duration
from k8s.keys import DEADLINE_ANNOTATION, DEADLINE_CLASS_ANNOTATION, DECISION_TIME_ANNOTATION, PARAM_STOCKOUT, PROFILE
from k8s.objects import annotations, created_at, labels, meta, parse_time, revision
from k8s.paths import REPO
from k8s.resources import JOB, PROVREQ, WORKLOAD
from k8s.tape import Delivered, Tape
from k8s.watch import Event
from scenarios.kit.controllers import start_private, stop_started
from scenarios.kit.harness import NS, Context, ScenarioFailed

from .common import median, p95

CLS = "bench-latency"
BENCH_LABEL = "tau-demo.io/bench"
BENCH_VALUE = "deadline-latency"
GONE_TIMEOUT = 120.0          # seconds for the Jobs of an earlier run, and of this one at its end, to go


class IdealProcess:
    """bench.ideal_deadline as the run sees the controller: its log, and a stop."""

    def __init__(self, proc: subprocess.Popen, log_path: Path):
        self.proc, self.log_path = proc, log_path

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def controller_uid(obj: dict) -> str | None:
    """The uid of the Job that controls the object (a Workload's owner), or None."""
    return next((r.get("uid") for r in meta(obj).get("ownerReferences") or []
                 if r.get("kind") == "Job" and r.get("controller")), None)


def by_owner(seen: list[Delivered]) -> dict[str, list[Delivered]]:
    """The Workloads' changes grouped by the uid of the Job that owns each (pure)."""
    out: dict[str, list[Delivered]] = defaultdict(list)
    for change in seen:
        if (uid := controller_uid(change[2])) is not None:
            out[uid].append(change)
    return out


def first_committed(seen: list[Delivered]) -> float | None:
    """When a change first carried the committed timeout (pure): the arrival the latency is measured to."""
    return next((t for t, typ, wl in seen if typ != Event.DELETED and workloads.committed_timeout(wl)), None)


def is_bench_job(obj: dict) -> bool:
    return labels(obj).get(BENCH_LABEL) == BENCH_VALUE


class DeadlineEvents:
    """The bench's Jobs and the namespace's Workloads, each on a Tape (k8s/tape.py): every change stamped with the
    time it arrived, and the query set over them."""

    def __init__(self, k: Kube):
        self.jobs: Tape = Tape(k, (JOB,), NS, keep=is_bench_job)
        self.wls: Tape = Tape(k, (WORKLOAD,), NS)

    def __enter__(self) -> DeadlineEvents:
        self.jobs.__enter__()
        try:
            self.wls.__enter__()
        except BaseException:
            self.jobs.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.wls.__exit__(*exc)
        self.jobs.__exit__(*exc)

    def wl_events(self) -> dict[str, list[Delivered]]:
        """Every Workload change so far, by the uid of the Job that owns it."""
        return by_owner(list(self.wls.changes))

    def job_events(self, name: str) -> list[Delivered]:
        return self.jobs.of(name)

    def committed(self, uids: list[str]) -> dict[str, float] | None:
        """When each of these Jobs' Workloads was first seen committed, once all were; else None."""
        wls = self.wl_events()
        got = {u: first_committed(wls.get(u, [])) for u in uids}
        return got if all(t is not None for t in got.values()) else None


WRITES = ("POST", "PUT", "PATCH", "APPLY", "DELETE")


def apiserver_metrics(k: Kube) -> dict:
    """The apiserver's counters the summary reads, summed over the label sets not named."""
    out: dict = defaultdict(float)
    for line in k.raw("/metrics").splitlines():
        name, brace, rest = line.partition("{")
        if not brace:
            if line.startswith("process_cpu_seconds_total "):
                out["cpu"] = float(line.split()[1])
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', rest))
        value = float(line.rsplit(" ", 1)[1])
        res, sub, verb = labels.get("resource"), labels.get("subresource", ""), labels.get("verb")
        if name == "apiserver_request_total" and res in ("workloads", "jobs") and verb in WRITES:
            out[(verb, res, sub)] += value
        elif name.startswith("apiserver_request_duration_seconds_") and (verb, res, sub) == ("PATCH", "workloads", ""):
            out["patch_" + name.rsplit("_", 1)[1]] += value
        elif name.startswith("apiserver_admission_webhook_admission_duration_seconds_") and \
                labels.get("name") == "vworkload.kb.io" and labels.get("operation") == "UPDATE":
            out["webhook_" + name.rsplit("_", 1)[1]] += value
        elif name.startswith("etcd_request_duration_seconds_") and res == "workloads" and \
                labels.get("operation") == "update":
            out["etcd_" + name.rsplit("_", 1)[1]] += value
    return out


def describe_burst(m0: dict, m1: dict, seconds: float) -> str:
    d = {key: m1.get(key, 0.0) - m0.get(key, 0.0) for key in set(m0) | set(m1)}

    def mean(what):
        return d.get(what + "_sum", 0.0) / d[what + "_count"] * 1000 if d.get(what + "_count") else float("nan")

    def writes(res, sub=""):
        return sum(v for key, v in d.items() if isinstance(key, tuple) and key[1:] == (res, sub))
    return (f"apiserver over the burst ({seconds:.1f}s): CPU {d.get('cpu', 0.0):.2f}s; "
            f"Workload PATCHes {d.get(('PATCH', 'workloads', ''), 0):.0f} (mean {mean('patch'):.0f} ms), "
            f"Workload status writes {writes('workloads', 'status'):.0f}, Job writes {writes('jobs'):.0f}; "
            f"per Workload update: Kueue's validating webhook {mean('webhook'):.0f} ms, etcd {mean('etcd'):.0f} ms")


def delete_leftovers(k: Kube) -> None:
    for j in k.list(JOB, NS, label_selector=f"{BENCH_LABEL}={BENCH_VALUE}")[0]:
        k.delete(JOB, meta(j)["name"], NS, propagation="Background")


def burst_arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--lead", type=float, default=30.0, help="seconds from the start to the first deadline")
    ap.add_argument("--cleanup-ttl", default="5s")
    ap.add_argument("--controller-arg", action="append", default=[], help="extra argument for `tau-demo deadline`")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--versus-ideal", action="store_true",
                    help="pair each run with one of bench.ideal_deadline (the controller's writes, its concurrency, "
                         "nothing else) right after it, and give the p50 ratio pair by pair")
    return ap.parse_args()


def main() -> None:
    a = burst_arguments()
    kc = default_kubeconfig()
    k = Kube(kc)
    ratios = []
    for i in range(a.runs):
        controller = one_burst(k, kc, a, ideal=False)
        if a.versus_ideal:
            ideal = one_burst(k, kc, a, ideal=True)
            ratios.append(controller / ideal)
            print(f"\npair {i + 1}: p50 controller {controller:.3f}s / ideal {ideal:.3f}s = {ratios[-1]:.2f}\n", flush=True)
    if ratios:
        print(f"p50 of the controller / the ideal client, pair by pair: {', '.join(f'{r:.2f}' for r in ratios)}; "
              f"median {median(ratios):.2f}")


def start_deciding(ctx: Context, kc: str, a: argparse.Namespace, ideal: bool):
    """The deadline controller (class CLS, as its ServiceAccount) or the ideal client, ready; it and its pid."""
    if ideal:
        log_path = Path(os.environ.get("TMPDIR", "/tmp")) / "bench-ideal-deadline.log"
        with open(log_path, "w") as out:
            proc = subprocess.Popen([sys.executable, "-m", "bench.ideal_deadline", "--kubeconfig", kc, "--namespace", NS,
                                     "--class", CLS, "--ttl", str(parse_duration(a.cleanup_ttl))], stdout=out,
                                    stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONUNBUFFERED="1"), cwd=REPO)
        ctl = IdealProcess(proc, log_path)
        try:
            poll.until(lambda: "caches synced; ready" in ctl.log_text() or proc.poll() is not None, 60,
                       "the ideal client", 0.1)
        except BaseException:
            ctl.stop()
            raise
        return ctl, proc.pid
    args = ["deadline", "--class", CLS, "--namespace", NS, "--cleanup-ttl", a.cleanup_ttl, *a.controller_arg]
    ctl = start_private(ctx, f"deadline-{CLS}", args, "deadline controller (bench)")
    pid = procs.read_pid(ctl.pidfile)
    print(f"controller: tau-demo {' '.join(ctl.args)} (pid {pid}, log {ctl.logfile})", flush=True)
    return ctl, pid


@dataclass
class Burst:
    """The Jobs of one burst, as created: their deadlines, all within the second T."""
    t_start: float
    T: float
    made: dict[str, dict] = field(default_factory=dict)         # job name -> the Job as last written
    deadlines: dict[str, float] = field(default_factory=dict)   # job name -> its deadline (epoch seconds)
    patched: int = 0                                           # deadline annotations re-patched
    cpu0: float = 0.0                                          # the deciding process's CPU before the creates

    @property
    def uids(self) -> dict[str, str]:
        return {n: meta(j)["uid"] for n, j in self.made.items()}


def create_jobs(k: Kube, jobs: int, lead: float, cpu0: float) -> Burst:
    """N Jobs that cannot be admitted, Job i's deadline at T + i/N (T: the whole second --lead seconds on)."""
    t_start = time.time()
    burst = Burst(t_start, math.ceil(t_start + lead), cpu0=cpu0)
    tmpl = job_template()
    for i in range(jobs):
        name = f"job-dlbench-{i:03d}"
        target = burst.T + i / jobs
        guess = math.floor(time.time())
        job = render_job(tmpl, name, NS, PROFILE, Gang.parse("1x8"), "5s", f"{target - guess:.3f}s",
                         {PARAM_STOCKOUT: "true"}, {DEADLINE_CLASS_ANNOTATION: CLS})
        job["metadata"].setdefault("labels", {})[BENCH_LABEL] = BENCH_VALUE
        created = k.create(JOB, job, NS)
        c = created_at(created).timestamp()
        if c != guess:                              # crossed a second boundary: fix the duration
            created = k.patch(JOB, name, {"metadata": {"annotations": {DEADLINE_ANNOTATION: f"{target - c:.3f}s"}}},
                              NS)
            burst.patched += 1
        burst.made[name] = created
        burst.deadlines[name] = dl.deadline_of(created).timestamp()
        assert abs(burst.deadlines[name] - target) < 1e-3, (name, burst.deadlines[name], target)
    return burst


def await_workloads(watch: DeadlineEvents, burst: Burst, t_created: float) -> None:
    """Until every Job's Workload was seen (before the deadlines: else --lead is too short); say when."""
    uids = list(burst.uids.values())
    poll.until(lambda: all(u in watch.wl_events() for u in uids), max(5.0, burst.T - time.time() - 1),
               "every Job's Workload before the deadlines (raise --lead)", 0.1)
    t_wls = time.time()
    print(f"{len(burst.made)} Jobs created in {t_created - burst.t_start:.1f}s ({burst.patched} deadline annotations "
          f"re-patched), all Workloads seen after {t_wls - burst.t_start:.1f}s; deadlines pass in "
          f"[{datetime.fromtimestamp(burst.T, timezone.utc):%H:%M:%S}, +1s), {burst.T - t_wls:.1f}s later", flush=True)


@dataclass
class Measured:
    """What one burst measured around its deadlines: the apiserver's counters before and at the last decision,
    the deciding process's CPU at T - 0.5 s, at the last decision and at the end, and when each was read."""
    seen: dict[str, float]                 # job name -> its Workload first seen committed
    m_pre: dict
    m_decided: dict
    t_pre: float
    t_post: float
    cpu_pre: float
    cpu_decided: float
    cpu_end: float = 0.0
    t_cleaned: float = 0.0


def measure_burst(k: Kube, watch: DeadlineEvents, burst: Burst, pid: int, ideal: bool, ttl: float) -> Measured:
    """Read the counters just before T, wait for every committed decision, then for cleanup (the controller) or
    the mirrors and cleanup times (the ideal client, which arms cleanup but does not delete)."""
    names, uids = list(burst.made), burst.uids
    time.sleep(max(0.0, burst.T - 1.5 - time.time()))
    m_pre, t_pre = apiserver_metrics(k), time.time()
    time.sleep(max(0.0, burst.T - 0.5 - time.time()))
    cpu_pre = procs.cpu_seconds(pid)
    by_uid = poll.until(lambda: watch.committed(list(uids.values())), 120, "every Workload's committed decision", 0.05)
    cpu_decided = procs.cpu_seconds(pid)
    got = Measured({n: by_uid[u] for n, u in uids.items()}, m_pre, apiserver_metrics(k), t_pre, time.time(), cpu_pre,
                   cpu_decided)
    if not ideal:
        poll.until(lambda: all(any(typ == Event.DELETED for _, typ, _ in watch.job_events(n)) for n in names),
                   ttl + 90, "cleanup to delete every Job", 0.1)
    else:       # it sends every due commit before any mirror, so its mirrors may trail the last decision
        poll.until(lambda: all(any(jobs_.mirrored(j) and jobs_.cleanup_after(j) for _, _, j in watch.job_events(n))
                               for n in names), 90, "the ideal client's mirrors and cleanup times", 0.1)
    got.cpu_end, got.t_cleaned = procs.cpu_seconds(pid), time.time()
    time.sleep(1.0)                                 # late events (Workload deletions) for the histories
    return got


@dataclass
class Judged:
    """Each Job's history judged: the invariants' violations, the decision-time stamps and the acknowledged
    commits (both minus the deadline, sorted)."""
    broken: list[str]
    stamped: list[float]
    acked: list[float]


def judge(watch: DeadlineEvents, burst: Burst, took: dict[str, float], ideal: bool) -> Judged:
    got = Judged([], [], [])
    wls = watch.wl_events()
    for n, j in burst.made.items():
        evs = watch.job_events(n)
        deleted, gone_rv = next(((t, revision(o)) for t, typ, o in evs if typ == Event.DELETED), (None, None))
        # the Workload while its Job existed (resourceVersions are etcd revisions, one order for both
        # kinds): afterwards Kueue finishes it (Finished=True, OwnerNotFound), which is not admission
        wl_objs = [w for _, typ, w in wls.get(burst.uids[n], [])
                   if typ != Event.DELETED and (gone_rv is None or revision(w) < gone_rv)]
        h = History(n, [j] + [o for _, typ, o in evs if typ != Event.DELETED], wl_objs,
                    datetime.fromtimestamp(deleted, timezone.utc) if deleted else None)
        got.broken += violations(h, expect_deleted=not ideal)
        t = next((parse_time(annotations(w).get(DECISION_TIME_ANNOTATION)) for w in wl_objs
                  if workloads.committed_timeout(w)), None)
        if t:
            got.stamped.append(t.timestamp() - burst.deadlines[n])
            if n in took:
                got.acked.append(t.timestamp() + took[n] - burst.deadlines[n])
        if any(workloads.admission_won(w) for w in wl_objs):
            got.broken.append(f"{n}: admitted (the bench expects no admission)")
    got.stamped.sort()
    got.acked.sort()
    return got


def commit_times(log: str) -> dict[str, float]:
    """Each Job's commit PATCH round trip in seconds, from the deciding process's log (pure)."""
    return {m[0]: float(m[1]) / 1000 for m in re.findall(r"(job-dlbench-\d+): committed timeout on Workload \S+ "
                                                         r"\(spec.active=false; the write took (\d+) ms\)", log)}


def report(burst: Burst, got: Measured, judged: Judged, took: dict[str, float], log: str) -> float:
    """Print the burst's figures; its p50 (deadline -> committed, as the watch saw it)."""
    lat = sorted(got.seen[n] - burst.deadlines[n] for n in burst.made)
    stamped, acked, writes, n = judged.stamped, judged.acked, sorted(took.values()), len(burst.made)
    conflicts = len(re.findall(r"job-dlbench-\d+: 409 conflict", log))
    print()
    print(f"deadline -> committed decision (watch event arrival), {n} Workloads: "
          f"p50 {median(lat):.3f}s  p95 {p95(lat):.3f}s  max {lat[-1]:.3f}s  min {lat[0]:.3f}s")
    print(f"  the controller sends the commit (decision-time annotation):   "
          f"p50 {median(stamped):.3f}s  p95 {p95(stamped):.3f}s  max {stamped[-1]:.3f}s")
    if acked:
        print(f"  the apiserver acknowledges it (+ the PATCH's round trip):     "
              f"p50 {median(acked):.3f}s  p95 {p95(acked):.3f}s  max {acked[-1]:.3f}s")
        print(f"  the PATCH's round trip alone (controller log):               "
              f"p50 {median(writes):.3f}s  p95 {p95(writes):.3f}s  max {writes[-1]:.3f}s")
    print(f"last decision {max(got.seen.values()) - burst.T:.2f}s after the first deadline; 409 conflicts on commit: "
          f"{conflicts}")
    print(describe_burst(got.m_pre, got.m_decided, got.t_post - got.t_pre))
    print(f"controller CPU: {got.cpu_decided - got.cpu_pre:.2f}s from T-0.5s to the last decision "
          f"({(got.cpu_decided - got.cpu_pre) / n * 1000:.1f} ms per Workload); {got.cpu_end - burst.cpu0:.2f}s for the "
          f"whole life (create -> cleanup deleted all, {got.t_cleaned - burst.t_start:.0f}s) = "
          f"{(got.cpu_end - burst.cpu0) / n * 1000:.1f} ms per Workload")
    print(f"invariant violations: {len(judged.broken)}")
    for b in judged.broken[:20]:
        print(f"  {b}")
    return median(lat)


def clean_up(k: Kube, uids: set[str]) -> None:
    """Delete the bench's Jobs; wait until none of its Jobs, Workloads or ProvisioningRequests is left."""
    delete_leftovers(k)

    def clean():
        wls = [w for w in k.list(WORKLOAD, NS)[0] if controller_uid(w) in uids]
        jobs = k.list(JOB, NS, label_selector=f"{BENCH_LABEL}={BENCH_VALUE}")[0]
        prs = [p for p in k.list(PROVREQ, NS)[0] if p["metadata"]["name"].startswith("job-job-dlbench-")]
        return not (wls or jobs or prs)
    poll.until(clean, GONE_TIMEOUT, "the bench's Jobs, Workloads and ProvisioningRequests to be gone", 0.5)
    print("cleaned up: no Job, Workload or ProvisioningRequest of the bench is left")


def one_burst(k: Kube, kc: str, a: argparse.Namespace, ideal: bool) -> float:
    """One burst, by the controller or the ideal client; its p50 (deadline -> committed, as the watch saw it)."""
    print(f"\n== {'the ideal client (bench.ideal_deadline)' if ideal else 'the deadline controller'}", flush=True)
    ctx = Context(k, kc, out=open(os.devnull, "w"), impersonate=True)
    delete_leftovers(k)
    poll.until(lambda: not k.list(JOB, NS, label_selector=f"{BENCH_LABEL}={BENCH_VALUE}")[0], GONE_TIMEOUT,
               "the Jobs of an earlier run to go", 0.1)
    uids: set[str] = set()
    ctl = None
    with DeadlineEvents(k) as watch:
        try:
            ctl, pid = start_deciding(ctx, kc, a, ideal)
            time.sleep(2)                                   # let start-up settle before the CPU baseline
            burst = create_jobs(k, a.jobs, a.lead, procs.cpu_seconds(pid))
            uids = set(burst.uids.values())
            await_workloads(watch, burst, time.time())
            got = measure_burst(k, watch, burst, pid, ideal, parse_duration(a.cleanup_ttl))
            log = ctl.log_text()
            took = commit_times(log)
            judged = judge(watch, burst, took, ideal)
            p50 = report(burst, got, judged, took, log)
            if judged.broken:
                sys.exit(1)
            return p50
        finally:               # the controller is stopped even when it never got ready (start_private registered it)
            if isinstance(ctl, IdealProcess):
                ctl.stop()
            stop_started(ctx)
            clean_up(k, uids)


if __name__ == "__main__":
    try:
        main()
    except (ScenarioFailed, poll.WaitTimedOut) as e:          # a wait timed out: say what, without a traceback
        sys.exit(str(e))
