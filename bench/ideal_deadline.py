"""The ceiling the deadline controller's burst is measured against (`python -m bench.deadline_latency --versus-ideal`): a
client with the controller's concurrency (its 16 workers) that, at each Job's deadline, makes exactly the controller's
writes for a timeout (the commit on the Workload, guarded by the version it read, then the mirror and the cleanup
time on the Job) and nothing else: no protocol, no re-reads, no checks.  Like the controller's urgent tier, a worker
takes a due commit before any mirror: every commit of a burst is sent before the first mirror (a worker already
mirroring finishes that Job first).  The deadlines come from the Jobs' annotations as the controller reads them
(demo/deadline/protocol.py), the Workloads from a watch.

    .venv/bin/python -m bench.ideal_deadline --kubeconfig KC --namespace demo --class bench-latency --ttl 5

A controller (it writes): like every controller it keeps its own caches, the Stores of k8s/runtime.py.
"""

from __future__ import annotations

import argparse
import heapq
import threading
import time
from collections import deque
from datetime import datetime, timezone

from demo.deadline import protocol as dl
from k8s import workload as workloads
from k8s.client import Kube
from k8s.errors import Conflict
from k8s.keys import DEADLINE_CLASS_ANNOTATION
from k8s.objects import annotations, meta
from k8s.resources import JOB, WORKLOAD
from k8s.runtime import Store
from k8s.watch import start_synced

WORKERS = 16                       # demo/deadline/controller.py DEFAULT_WORKERS


class IdealClient:
    """The Jobs of one deadline class in one namespace, each timed out at its deadline with the controller's writes."""

    def __init__(self, k: Kube, namespace: str, cls: str, ttl: float):
        self.k, self.namespace, self.cls, self.ttl = k, namespace, cls, ttl
        self.due: list[tuple[float, str]] = []      # (deadline, job name), a heap; an entry whose deadline moved is stale
        self.deadline: dict[str, float] = {}        # job name -> its deadline now (the bench may re-annotate it once)
        self.done: set[str] = set()
        self.mirrors: deque[tuple[str, str, datetime]] = deque()   # (job, workload, decision time): not mirrored yet
        self.cv = threading.Condition()
        self.jobs = Store(on_change=self.job_seen)
        self.wls = Store()

    def start(self) -> None:
        start_synced([self.jobs.watch(self.k, JOB, self.namespace), self.wls.watch(self.k, WORKLOAD, self.namespace)])
        print("caches synced; ready", flush=True)
        for _ in range(WORKERS):
            threading.Thread(target=self.worker, daemon=True).start()

    def job_seen(self, _typ, job) -> None:
        name = meta(job).get("name")
        if annotations(job).get(DEADLINE_CLASS_ANNOTATION) != self.cls or name in self.done:
            return
        at = dl.deadline_of(job)
        if at is not None and self.deadline.get(name) != at.timestamp():
            with self.cv:
                self.deadline[name] = at.timestamp()
                heapq.heappush(self.due, (at.timestamp(), name))
                self.cv.notify()

    def commit(self, name: str) -> None:
        wl = workloads.of_job(self.wls.items(), meta(self.jobs.get(f"{self.namespace}/{name}")).get("uid") or "")
        if wl is None:
            return
        now = datetime.now(timezone.utc)
        t0 = time.monotonic()
        while True:
            try:
                self.k.patch(WORKLOAD, meta(wl)["name"], dl.commit_patch(now), self.namespace,
                             resource_version=meta(wl).get("resourceVersion"))
                break
            except Conflict:
                # Kueue wrote the Workload after the cache's copy: read it live and write again (the controller
                # does as much, and then decides again; here no decision, only the write)
                wl = self.k.get(WORKLOAD, meta(wl)["name"], self.namespace)
        print(f"{name}: committed timeout on Workload {meta(wl)['name']} (spec.active=false; the write took "
              f"{(time.monotonic() - t0) * 1000:.0f} ms)", flush=True)
        with self.cv:
            self.mirrors.append((name, meta(wl)["name"], now))
            self.cv.notify()

    def next_step(self) -> tuple[str | None, tuple[str, str, datetime] | None]:
        """Block until a commit is due (its job's name) or, none due, a committed Job waits for its mirror."""
        with self.cv:
            while True:
                while not self.mirrors and (not self.due or self.due[0][0] > time.time()):
                    self.cv.wait(None if not self.due else max(0.0, self.due[0][0] - time.time()))
                if not self.due or self.due[0][0] > time.time():          # no commit is due: mirror one committed Job
                    return None, self.mirrors.popleft()
                at, job_name = heapq.heappop(self.due)
                if job_name in self.done or self.deadline.get(job_name) != at:
                    continue
                self.done.add(job_name)
                return job_name, None

    def worker(self) -> None:
        while True:
            job_name, mirror = self.next_step()
            if job_name is not None:
                self.commit(job_name)
                continue
            name, wl_name, now = mirror
            self.k.patch(JOB, name, dl.mirror_patch(wl_name, now), self.namespace)
            self.k.patch(JOB, name, dl.arm_patch(now, self.ttl), self.namespace)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--namespace", required=True)
    ap.add_argument("--class", dest="cls", required=True)
    ap.add_argument("--ttl", type=float, default=5.0)
    a = ap.parse_args()
    IdealClient(Kube(a.kubeconfig), a.namespace, a.cls, a.ttl).start()
    threading.Event().wait()


if __name__ == "__main__":
    main()
