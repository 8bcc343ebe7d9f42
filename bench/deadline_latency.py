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
- A client-side watch on the Jobs and the Workloads stamps every event with the time it arrived
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

    .venv/bin/python bench/deadline_latency.py [--jobs 100] [--lead 30] [--cleanup-ttl 5s]
                                               [--controller-arg=--workers --controller-arg=4]
"""

from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
import sys
import threading
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import cpu_seconds, median, p95  # noqa: E402

from demo.cluster import procs  # noqa: E402
from demo.cluster.state import default_kubeconfig  # noqa: E402
from demo.deadline import protocol as dl  # noqa: E402
from demo.deadline.invariants import History, violations  # noqa: E402
from demo.jobs.preflight import Gang  # noqa: E402
from demo.jobs.render import job_template, render_job  # noqa: E402
from k8s import job as jobs_
from k8s import workload as workloads
from k8s.client import Kube  # noqa: E402
from k8s.duration import parse_duration  # noqa: E402
from k8s.keys import (DEADLINE_ANNOTATION, DEADLINE_CLASS_ANNOTATION, DECISION_TIME_ANNOTATION,  # noqa: E402
                           PARAM_STOCKOUT, PROFILE)
from k8s.objects import annotations, created_at, meta, parse_time  # noqa: E402
from k8s.resources import JOB, PROVREQ, WORKLOAD  # noqa: E402
from k8s.watch import Event, Watch as BackgroundWatch, start_synced  # noqa: E402
from scenarios.kit.controllers import start_private, stop_started  # noqa: E402
from k8s import poll  # noqa: E402
from scenarios.kit.harness import NS, Context, ScenarioFailed  # noqa: E402

CLS = "bench-latency"
BENCH_LABEL = "tau-demo.io/bench"
BENCH_VALUE = "deadline-latency"


class IdealProcess:
    """bench/ideal_deadline.py as the run sees the controller: its log, and a stop."""

    def __init__(self, proc: subprocess.Popen, log_path: Path):
        self.proc, self.log_path = proc, log_path

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


class DeadlineEvents:
    """Jobs (by the bench label) and Workloads of the namespace, every event stamped on arrival."""

    def __init__(self, k: Kube):
        self.k = k
        self.watches: list[BackgroundWatch] = []
        self.lock = threading.Lock()
        self.jobs: dict[str, list[tuple[float, str, dict]]] = {}          # job name -> events
        self.wls: dict[str, list[tuple[float, str, dict]]] = {}           # owner job uid -> events
        self.committed: dict[str, float] = {}                              # owner job uid -> first seen committed

    def start(self) -> None:
        self.watches = [BackgroundWatch(self.k, JOB, lambda typ, obj: self._job(time.time(), typ, obj), namespace=NS,
                                        label_selector=f"{BENCH_LABEL}={BENCH_VALUE}", timeout_seconds=30),
                        BackgroundWatch(self.k, WORKLOAD, lambda typ, obj: self._wl(time.time(), typ, obj),
                                        namespace=NS, timeout_seconds=30)]
        start_synced(self.watches)

    def stop(self) -> None:
        for w in self.watches:
            w.stop()

    def _job(self, t, typ, obj):
        with self.lock:
            self.jobs.setdefault(meta(obj)["name"], []).append((t, typ, obj))

    def _wl(self, t, typ, obj):
        for ref in meta(obj).get("ownerReferences") or []:
            if ref.get("kind") == "Job" and ref.get("controller"):
                with self.lock:
                    self.wls.setdefault(ref["uid"], []).append((t, typ, obj))
                    if typ != Event.DELETED and workloads.committed_timeout(obj):
                        self.committed.setdefault(ref["uid"], t)

    def wl_events(self, uid: str) -> list[tuple[float, str, dict]]:
        with self.lock:
            return list(self.wls.get(uid, []))

    def job_events(self, name: str) -> list[tuple[float, str, dict]]:
        with self.lock:
            return list(self.jobs.get(name, []))


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


def rv_of(obj: dict) -> int:
    return int(meta(obj).get("resourceVersion") or 0)


def wait_until(pred, timeout: float, what: str, interval: float = 0.1):
    return poll.until(pred, timeout, what, interval)


def delete_leftovers(k: Kube) -> None:
    for j in k.list(JOB, NS, label_selector=f"{BENCH_LABEL}={BENCH_VALUE}")[0]:
        k.delete(JOB, meta(j)["name"], NS, propagation="Background")


IDEAL_CLIENT = Path(__file__).with_name("ideal_deadline.py")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--lead", type=float, default=30.0, help="seconds from the start to the first deadline")
    ap.add_argument("--cleanup-ttl", default="5s")
    ap.add_argument("--controller-arg", action="append", default=[], help="extra argument for `tau-demo deadline`")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--versus-ideal", action="store_true",
                    help="pair each run with one of bench/ideal_deadline.py (the controller's writes, its concurrency, "
                         "nothing else) right after it, and give the p50 ratio pair by pair")
    a = ap.parse_args()
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


def one_burst(k: Kube, kc: str, a: argparse.Namespace, ideal: bool) -> float:
    """One burst, by the controller or the ideal client; its p50 (deadline -> committed, as the watch saw it)."""
    print(f"\n== {'the ideal client (bench/ideal_deadline.py)' if ideal else 'the deadline controller'}", flush=True)
    ctx = Context(k, kc, out=open(os.devnull, "w"), impersonate=True)
    delete_leftovers(k)
    wait_until(lambda: not k.list(JOB, NS, label_selector=f"{BENCH_LABEL}={BENCH_VALUE}")[0], 120,
               "the Jobs of an earlier run to go")
    watch = DeadlineEvents(k)
    watch.start()
    if ideal:
        log_path = Path(os.environ.get("TMPDIR", "/tmp")) / "bench-ideal-deadline.log"
        with open(log_path, "w") as out:
            proc = subprocess.Popen([sys.executable, str(IDEAL_CLIENT), "--kubeconfig", kc, "--namespace", NS, "--class", CLS,
                                     "--ttl", str(parse_duration(a.cleanup_ttl))], stdout=out, stderr=subprocess.STDOUT,
                                    env=dict(os.environ, PYTHONUNBUFFERED="1"))
        ctl = IdealProcess(proc, log_path)
        wait_until(lambda: "caches synced; ready" in ctl.log_text() or proc.poll() is not None, 60, "the ideal client")
        pid = proc.pid
    else:
        args = ["deadline", "--class", CLS, "--namespace", NS, "--cleanup-ttl", a.cleanup_ttl, *a.controller_arg]
        ctl = start_private(ctx, f"deadline-{CLS}", args, "deadline controller (bench)")
        pid = procs.read_pid(ctl.pidfile)
        print(f"controller: tau-demo {' '.join(ctl.args)} (pid {pid}, log {ctl.logfile})", flush=True)
    made: dict[str, dict] = {}
    uids: dict[str, str] = {}
    try:
        time.sleep(2)                                   # let start-up settle before the CPU baseline
        cpu0 = cpu_seconds(pid)
        t_start = time.time()
        T = math.ceil(t_start + a.lead)                 # the second in which every deadline passes
        deadlines: dict[str, float] = {}
        patched = 0
        tmpl = job_template()
        for i in range(a.jobs):
            name = f"job-dlbench-{i:03d}"
            target = T + i / a.jobs
            guess = math.floor(time.time())
            job = render_job(tmpl, name, NS, PROFILE, Gang.parse("1x8"), "5s", f"{target - guess:.3f}s",
                             {PARAM_STOCKOUT: "true"}, {DEADLINE_CLASS_ANNOTATION: CLS})
            job["metadata"].setdefault("labels", {})[BENCH_LABEL] = BENCH_VALUE
            created = k.create(JOB, job, NS)
            made[name] = created
            c = created_at(created).timestamp()
            if c != guess:                              # crossed a second boundary: fix the duration
                created = k.patch(JOB, name, {"metadata": {"annotations": {DEADLINE_ANNOTATION: f"{target - c:.3f}s"}}},
                                  NS)
                made[name] = created
                patched += 1
            deadlines[name] = dl.deadline_of(created).timestamp()
            assert abs(deadlines[name] - target) < 1e-3, (name, deadlines[name], target)
        t_created = time.time()
        uids = {n: meta(j)["uid"] for n, j in made.items()}
        wait_until(lambda: all(watch.wl_events(u) for u in uids.values()), max(5.0, T - time.time() - 1),
                   "every Job's Workload before the deadlines (raise --lead)")
        t_wls = time.time()
        print(f"{a.jobs} Jobs created in {t_created - t_start:.1f}s ({patched} deadline annotations re-patched), "
              f"all Workloads seen after {t_wls - t_start:.1f}s; deadlines pass in "
              f"[{datetime.fromtimestamp(T, timezone.utc):%H:%M:%S}, +1s), {T - t_wls:.1f}s later", flush=True)
        time.sleep(max(0.0, T - 1.5 - time.time()))
        m_pre = apiserver_metrics(k)
        t_pre = time.time()
        time.sleep(max(0.0, T - 0.5 - time.time()))
        cpu_pre = cpu_seconds(pid)

        def decided():
            with watch.lock:
                if all(u in watch.committed for u in uids.values()):
                    return {n: watch.committed[u] for n, u in uids.items()}
            return None
        seen = wait_until(decided, 120, "every Workload's committed decision", interval=0.05)
        cpu_decided = cpu_seconds(pid)
        m_decided = apiserver_metrics(k)
        t_post = time.time()
        t_decided = max(seen.values())
        ttl = parse_duration(a.cleanup_ttl)
        if not ideal:                                   # the ideal client arms cleanup but does not delete
            wait_until(lambda: all(any(typ == "DELETED" for _, typ, _ in watch.job_events(n)) for n in made),
                       ttl + 90, "cleanup to delete every Job")
        else:       # it sends every due commit before any mirror, so its mirrors may trail the last decision
            wait_until(lambda: all(any(jobs_.mirrored(j) and jobs_.cleanup_after(j) for _, _, j in watch.job_events(n))
                                   for n in made), 90, "the ideal client's mirrors and cleanup times")
        cpu_end = cpu_seconds(pid)
        t_cleaned = time.time()
        time.sleep(1.0)                                 # late events (Workload deletions) for the histories

        lat = sorted(seen[n] - deadlines[n] for n in made)
        log = ctl.log_text()
        took = {m[0]: float(m[1]) / 1000 for m in re.findall(r"(job-dlbench-\d+): committed timeout on Workload \S+ "
                                                             r"\(spec.active=false; the write took (\d+) ms\)", log)}
        stamped, acked = [], []
        broken: list[str] = []
        for n, j in made.items():
            evs = watch.job_events(n)
            deleted, gone_rv = next(((t, rv_of(o)) for t, typ, o in evs if typ == "DELETED"), (None, None))
            # the Workload while its Job existed (resourceVersions are etcd revisions, one order for both
            # kinds): afterwards Kueue finishes it (Finished=True, OwnerNotFound), which is not admission
            wl_objs = [w for _, typ, w in watch.wl_events(uids[n])
                       if typ != "DELETED" and (gone_rv is None or rv_of(w) < gone_rv)]
            h = History(n, [j] + [o for _, typ, o in evs if typ != "DELETED"], wl_objs,
                        datetime.fromtimestamp(deleted, timezone.utc) if deleted else None)
            broken += violations(h, expect_deleted=not ideal)
            t = next((parse_time(annotations(w).get(DECISION_TIME_ANNOTATION)) for w in wl_objs
                      if workloads.committed_timeout(w)), None)
            if t:
                stamped.append(t.timestamp() - deadlines[n])
                if n in took:
                    acked.append(t.timestamp() + took[n] - deadlines[n])
            if any(workloads.admission_won(w) for w in wl_objs):
                broken.append(f"{n}: admitted (the bench expects no admission)")
        stamped.sort()
        acked.sort()
        conflicts = len(re.findall(r"job-dlbench-\d+: 409 conflict", log))
        writes = sorted(took.values())
        n = a.jobs
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
        print(f"last decision {t_decided - T:.2f}s after the first deadline; 409 conflicts on commit: {conflicts}")
        print(describe_burst(m_pre, m_decided, t_post - t_pre))
        print(f"controller CPU: {cpu_decided - cpu_pre:.2f}s from T-0.5s to the last decision "
              f"({(cpu_decided - cpu_pre) / n * 1000:.1f} ms per Workload); {cpu_end - cpu0:.2f}s for the whole life "
              f"(create -> cleanup deleted all, {t_cleaned - t_start:.0f}s) = {(cpu_end - cpu0) / n * 1000:.1f} ms "
              f"per Workload")
        print(f"invariant violations: {len(broken)}")
        for b in broken[:20]:
            print(f"  {b}")
        if broken:
            sys.exit(1)
        return median(lat)
    finally:
        if ideal:
            ctl.stop()
        stop_started(ctx)
        delete_leftovers(k)
        gone = set(uids.values())

        def clean():
            wls = [w for w in k.list(WORKLOAD, NS)[0]
                   if any(r.get("uid") in gone for r in meta(w).get("ownerReferences") or [])]
            jobs = k.list(JOB, NS, label_selector=f"{BENCH_LABEL}={BENCH_VALUE}")[0]
            prs = [p for p in k.list(PROVREQ, NS)[0] if p["metadata"]["name"].startswith("job-job-dlbench-")]
            return not (wls or jobs or prs)
        try:
            wait_until(clean, 120, "the bench's Jobs, Workloads and ProvisioningRequests to be gone", interval=0.5)
            print("cleaned up: no Job, Workload or ProvisioningRequest of the bench is left")
        finally:
            watch.stop()


if __name__ == "__main__":
    try:
        main()
    except (ScenarioFailed, poll.WaitTimedOut) as e:          # a wait timed out: say what, without a traceback
        sys.exit(str(e))
