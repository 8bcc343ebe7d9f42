"""The ceiling the deadline controller's burst is measured against (bench/deadline_latency.py --versus-ideal): a
client with the controller's concurrency (its 16 workers) that, at each Job's deadline, makes exactly the controller's
writes for a timeout (the commit on the Workload, guarded by the version it read, then the mirror and the cleanup
time on the Job) and nothing else: no protocol, no re-reads, no checks.  Like the controller's urgent lane, a worker
takes a due commit before any mirror: every commit of a burst is sent before the first mirror (a worker already
mirroring finishes that Job first).  The deadlines come from the Jobs' annotations as the controller reads them
(demo/deadline/protocol.py), the Workloads from a watch.

    .venv/bin/python bench/ideal_deadline.py --kubeconfig KC --namespace demo --class bench-latency --ttl 5
"""

from __future__ import annotations

import argparse
import heapq
import sys
import threading
import time
from collections import deque
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from demo.deadline import protocol as dl  # noqa: E402
from k8s import workload as workloads  # noqa: E402
from k8s.client import Kube  # noqa: E402
from k8s.errors import Conflict  # noqa: E402
from k8s.keys import DEADLINE_CLASS_ANNOTATION  # noqa: E402
from k8s.objects import annotations, meta  # noqa: E402
from k8s.resources import JOB, WORKLOAD  # noqa: E402
from k8s.runtime import Store  # noqa: E402
from k8s.watch import start_synced  # noqa: E402

WORKERS = 16                       # demo/deadline/controller.py DEFAULT_WORKERS


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--namespace", required=True)
    ap.add_argument("--class", dest="cls", required=True)
    ap.add_argument("--ttl", type=float, default=5.0)
    a = ap.parse_args()
    k = Kube(a.kubeconfig)
    due: list[tuple[float, str]] = []          # (deadline, job name), a heap; an entry whose deadline moved is stale
    deadline: dict[str, float] = {}            # job name -> its deadline now (the bench may re-annotate it once)
    done: set[str] = set()
    mirrors: deque[tuple[str, str, datetime]] = deque()   # (job, workload, decision time): committed, not mirrored
    cv = threading.Condition()

    def job_seen(_typ, job) -> None:
        name = meta(job).get("name")
        if annotations(job).get(DEADLINE_CLASS_ANNOTATION) != a.cls or name in done:
            return
        at = dl.deadline_of(job)
        if at is not None and deadline.get(name) != at.timestamp():
            with cv:
                deadline[name] = at.timestamp()
                heapq.heappush(due, (at.timestamp(), name))
                cv.notify()
    jobs = Store(on_change=job_seen)
    wls = Store()
    start_synced([jobs.watch(k, JOB, a.namespace), wls.watch(k, WORKLOAD, a.namespace)])
    print("caches synced; ready", flush=True)

    def commit(name: str) -> None:
        wl = workloads.of_job(wls.items(), meta(jobs.get(f"{a.namespace}/{name}")).get("uid") or "")
        if wl is None:
            return
        now = datetime.now(timezone.utc)
        t0 = time.monotonic()
        while True:
            try:
                k.patch(WORKLOAD, meta(wl)["name"], dl.commit_patch(now), a.namespace,
                        resource_version=meta(wl).get("resourceVersion"))
                break
            except Conflict:
                # Kueue wrote the Workload after the cache's copy: read it live and write again (the controller
                # does as much, and then decides again; here no decision, only the write)
                wl = k.get(WORKLOAD, meta(wl)["name"], a.namespace)
        print(f"{name}: committed timeout on Workload {meta(wl)['name']} (spec.active=false; the write took "
              f"{(time.monotonic() - t0) * 1000:.0f} ms)", flush=True)
        with cv:
            mirrors.append((name, meta(wl)["name"], now))
            cv.notify()

    def worker() -> None:
        while True:
            with cv:
                while not mirrors and (not due or due[0][0] > time.time()):
                    cv.wait(None if not due else max(0.0, due[0][0] - time.time()))
                if not due or due[0][0] > time.time():          # no commit is due: mirror one committed Job
                    name, wl_name, now = mirrors.popleft()
                    job_name = None
                else:
                    at, job_name = heapq.heappop(due)
                    if job_name in done or deadline.get(job_name) != at:
                        continue
                    done.add(job_name)
            if job_name is not None:
                commit(job_name)
                continue
            k.patch(JOB, name, dl.mirror_patch(wl_name, now), a.namespace)
            k.patch(JOB, name, dl.arm_patch(now, a.ttl), a.namespace)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(WORKERS)]
    for t in threads:
        t.start()
    threading.Event().wait()


if __name__ == "__main__":
    main()
