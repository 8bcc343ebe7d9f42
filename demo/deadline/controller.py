"""The admission-deadline controller: observe → decide (protocol.py and routing.py, pure) → apply (k8s.client).

Keyed by owner Job ("namespace/name"), worked by several threads, never one key on two at once.
Decisions are made on the informer caches (Jobs, and Workloads indexed by their owner Job's uid),
so a reconcile that has nothing to do makes no API call.  What keeps that safe:

- the commit is always guarded by the Workload's resourceVersion as the decision read it: a 409
  (the cache was stale, or the Workload changed) means read it live and decide again, and what
  the live read saw goes into the caches, so no later decision is made on an older state;
- the mirror is decided only on a Workload seen carrying the committed timeout (the watch, or the
  commit's own response), and every Job write is guarded by the Job's resourceVersion;
- cleanup deletes only after a live read of both objects decides "delete" again, with the Job's
  uid and resourceVersion as preconditions.

When the deadline falls is rule.py's: the controller also caches the ProvisioningRequests (indexed by their
Workload's uid, from the same list+watch helper), looks at a Job again whenever one of its requests changes, and
remembers per Workload the earliest take-up it saw (the autoscaler rewrites the condition times at every retry).
That memory lives in the process, so it is also recorded on the Workload (TAKEN_UP_ANNOTATION, routing.take_up_patch
decides when): while step 1 waits and the take-up it knows is earlier than the one the Workload records (or it
records none), one metadata-only merge patch without a resourceVersion writes it (the record only ever moves
earlier), and its response goes into the cache.  After a restart (or a kill -9) the deadline is counted from the
earliest of the record and what the requests still show, as before the restart.  A failed write is said and
tried again at the next look; it never holds up a commit.  A request the cache has not seen yet counts as none
(for the moment of the cache's lag); the commit is guarded by the Workload's resourceVersion as before, whatever
the rule said (the record's write bumps that version, but its response is in the cache before the commit is
decided, so it makes no 409 of its own).

A deadline is a timer that fires at the deadline into the queue's urgent tier, which is served
before everything else; after a commit the key's owner steps go to the normal tier, so the commits
of Workloads whose deadlines pass together are not held up by the mirrors of the first ones.  The
legacy protocol reads live, as before: it exists only to reproduce the reviewed design's bug.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime
from typing import Callable

from ..jobs.observe import workload_for
from k8s import workload as workloads
from k8s import heartbeat
from k8s.client import Kube
from k8s.errors import ApiError, Conflict, NotFound, Unreachable
from k8s.hooks import Hooks
from k8s.keys import DEADLINE_LEASE_PREFIX, DEFAULT_DEADLINE_CLASS
from k8s.objects import name_of, utcnow
from k8s.resources import JOB, PROVREQ, WORKLOAD
from k8s.runtime import Store, WorkQueue, run_loop
from k8s.watch import Event, wait_for_caches
from . import protocol as dl
from . import routing
from . import rule as R
from .protocol import Action

log = logging.getLogger("deadline")

# Like an IngressClass: a Job annotated with DEADLINE_CLASS_ANNOTATION is handled only by the
# instance of that class; Jobs without it by the "default" instance.  Race scenarios run their own.
PROTOCOLS = ("committed", "legacy")
# Commits spend most of their time waiting on the apiserver (Kueue's validating webhook, etcd), so a few
# more in flight keep up with deadlines that pass together; docs/benchmarks.md has the measurements.
DEFAULT_WORKERS = 16
CLEANUP_TTL = 30.0      # s a timed-out Job stays before cleanup deletes it (--cleanup-ttl)
JOB_RESYNC = 5.0        # s between two looks at every Job (--resync)
MIN_REQUEUE = 0.005     # a timer that fired a hair early (wall clock vs monotonic) looks again 5 ms later


class DeadlineController:
    def __init__(self, k: Kube, namespace: str | None = None, protocol: str = "committed",
                 cleanup_ttl: float = CLEANUP_TTL, resync: float = JOB_RESYNC, hooks: Hooks | None = None,
                 clock: Callable[[], datetime] = utcnow, conflict_retries: int = 6,
                 instance: str = DEFAULT_DEADLINE_CLASS, workers: int = DEFAULT_WORKERS,
                 queue: WorkQueue | None = None, rule: str = R.DEFAULT_RULE,
                 outer_factor: float = R.DEFAULT_OUTER_FACTOR):
        """`queue`: the work queue (default a new WorkQueue; a test may hold its timers to order events).  `rule`
        and `outer_factor`: how a Job's deadline is counted unless it names its own rule (rule.py)."""
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {PROTOCOLS}")
        self.rule, self.outer_factor = R.Rule(rule), outer_factor
        self.k, self.namespace, self.protocol = k, namespace, protocol
        self.ttl, self.resync = cleanup_ttl, resync
        self.hooks = hooks or Hooks(None)
        self.now = clock
        self.conflict_retries = conflict_retries
        self.instance = instance
        self.workers = workers
        self.queue = queue if queue is not None else WorkQueue()
        self.jobs = Store(on_change=self.on_job, on_sync=self._enqueue_all)
        self.workloads = Store(on_change=self.on_workload, index=routing.owner_job_uids, on_sync=self._enqueue_all)
        self.provreqs = Store(on_change=self.on_provreq, index=routing.owner_workload_uids, on_sync=self._enqueue_all)
        # the earliest take-up seen of any request of a Workload, by its uid: the autoscaler rewrites the
        # conditions' times at every retry, and Kueue deletes a request at the next attempt (rule.py)
        self._taken_up: dict[str, datetime] = {}
        self._taken_up_lock = threading.Lock()
        self._last: dict[str, str] = {}
        self._stop = threading.Event()

    # ------------------------------------------------------------------ observe
    def _interesting(self, job: dict | None) -> bool:
        return routing.handles(job, self.instance)

    def on_job(self, typ: str, job: dict) -> None:
        key = name_of(job)
        if typ == Event.DELETED:
            self._last.pop(key, None)
        elif self._interesting(job):
            self.queue.add(key)

    def on_workload(self, typ: str, wl: dict) -> None:
        if typ == Event.DELETED:
            with self._taken_up_lock:
                self._taken_up.pop(wl["metadata"].get("uid"), None)
        for key in routing.owner_keys(wl):
            if self._interesting(self.jobs.get(key)):
                self.queue.add(key)

    def on_provreq(self, typ: str, pr: dict) -> None:
        """A request changed (taken up, answered, retried, deleted): remember its take-up for its Workload, and look
        at the Workload's Job again, whose deadline may now fall elsewhere."""
        for key, uid in routing.owner_workloads(pr):
            self._remember(key, uid, [pr])
            wl = self.workloads.get(key)
            if wl is not None:
                self.on_workload(Event.MODIFIED, wl)

    def _remember(self, wl_key: str, wl_uid: str, provreqs: list[dict]) -> datetime | None:
        """The earliest take-up of the Workload's requests: what it remembers, or what `provreqs` show if earlier.
        Kept only while the Workload is in the cache: the cache drops a deleted Workload before on_workload forgets
        its take-up under the same lock, so a request's event (or a look) after that deletion never keeps it again."""
        with self._taken_up_lock:
            t = R.taken_up_at(provreqs, self._taken_up.get(wl_uid))
            wl = self.workloads.get(wl_key)
            if t is not None and wl is not None and wl["metadata"]["uid"] == wl_uid:
                self._taken_up[wl_uid] = t
            return t

    def remembered(self) -> set[str]:
        """What it keeps of each object: the uids of the Workloads whose earliest take-up it holds, the keys of the
        Jobs whose last no-op decision it said; each forgotten with its object."""
        with self._taken_up_lock:
            return set(self._taken_up) | set(self._last)

    def counting(self, wl: dict | None) -> dl.Counting:
        """How the Workload's deadline is counted now: the rule, and its requests as the cache holds them."""
        if wl is None:
            return dl.Counting(self.rule, self.outer_factor)
        uid = wl["metadata"]["uid"]
        provreqs = self.provreqs.by_index(uid)
        return dl.Counting(self.rule, self.outer_factor, tuple(provreqs), self._remember(name_of(wl), uid, provreqs))

    def _enqueue_all(self) -> None:
        for key in self.keys():
            self.queue.add(key)

    def _say_once(self, key: str, d: dl.Decision) -> None:
        """Log a no-op decision only when it changes, so resyncs do not flood the log.  A Job gone from the cache is
        forgotten, as on_job forgets it: the cache drops a deleted Job before on_job is called, so a look that reads
        the Job before its deletion, or comes after it, never keeps its words once on_job has forgotten them."""
        gist, line = routing.say(d)
        if self._last.get(key) != gist:
            self._last[key] = gist
            if line:
                log.info("%s", routing.no_op_line(key, line))
        if self.jobs.get(key) is None:
            self._last.pop(key, None)

    def keys(self) -> list[str]:
        return routing.handled_keys(self.jobs.items(), self.instance)

    # ------------------------------------------------------------------ read
    def read(self, key: str) -> tuple[dict | None, dict | None]:
        """The Job and its Workload, read live from the apiserver."""
        ns, name = key.split("/", 1)
        job = self.k.get_or_none(JOB, name, ns)
        return (None, None) if job is None else (job, workload_for(self.k, job))

    def read_live(self, key: str) -> tuple[dict | None, dict | None]:
        """read(), and what it found goes into the caches (where it is newer), so that the decisions
        after a live read are never made on an older state than the one it saw."""
        job, wl = self.read(key)
        if job is not None:
            self.jobs.put(job)
        if wl is not None:
            self.workloads.put(wl)
        return job, wl

    def cached(self, key: str) -> tuple[dict | None, dict | None]:
        """The Job and its Workload as the informer caches hold them (and our own writes' responses)."""
        job = self.jobs.get(key)
        if job is None:
            return None, None
        uid = job["metadata"]["uid"]
        return job, workloads.of_job(self.workloads.by_index(uid), uid)

    # ------------------------------------------------------------------ reconcile
    def reconcile(self, key: str) -> float | None:
        if self.protocol == "legacy":
            return self._reconcile_legacy(key)
        if self._commit_step(key):
            return 0.0          # the owner steps come after the commits that are due (the urgent tier)
        return self._owner_steps(key)

    def _commit_step(self, key: str) -> bool:
        """Step 1 on the cached state; after a 409 (or a 404) read live and decide again.  True when it
        committed just now.  A deadline still ahead (or a commit still conflicting) is a timer in the
        queue's urgent tier, so commits that are due go before routine work."""
        live = False
        for attempt in range(self.conflict_retries):
            job, wl = self.read_live(key) if live else self.cached(key)
            counting = self.counting(wl)
            d = dl.decide_workload(job, wl, self.now(), counting)
            line = routing.decided_line(key, attempt, wl, d)
            if line:
                log.info("%s", line)
            else:
                self._say_once(key, d)
            if d.action == Action.WAIT:
                self.queue.add(key, after=d.after, urgent=True)
                self._record_take_up(key, d, job, wl, counting)
                return False
            if d.action != Action.COMMIT:
                return False
            self.hooks.reach("before-commit", key, resource_version=d.resource_version)
            wl_name, ns = wl["metadata"]["name"], wl["metadata"]["namespace"]
            sent = time.monotonic()
            try:
                new = self.k.patch(WORKLOAD, wl_name, dl.commit_patch(self.now(), d.cause), ns,
                                   resource_version=d.resource_version)
            except (Conflict, NotFound) as e:
                log.info("%s", routing.commit_refused_line(key, isinstance(e, Conflict), wl_name, d.resource_version))
            else:
                self.workloads.put(new)
                log.info("%s", routing.committed_line(key, wl_name, time.monotonic() - sent))
                self.hooks.reach("after-commit", key, workload=wl_name)
                return True
            live = True
            self._stop.wait(dl.conflict_backoff(attempt + 1))
        log.warning("%s", routing.still_conflicting_line(key, self.conflict_retries))
        self.queue.add(key, after=0.5, urgent=True)
        return False

    def _record_take_up(self, key: str, d: dl.Decision, job: dict, wl: dict, counting: dl.Counting) -> None:
        """Record the earliest take-up known on the Workload when routing.take_up_patch says so (the timer of the
        wait is already set: a failed write never delays the commit)."""
        patch = routing.take_up_patch(d, job, wl, counting)
        if patch is None:
            return
        wl_name, ns = wl["metadata"]["name"], wl["metadata"]["namespace"]
        try:
            self.workloads.put(self.k.patch(WORKLOAD, wl_name, patch, ns))
        except NotFound:
            return                  # the Workload is gone: nothing left to count
        except (ApiError, Unreachable) as e:
            log.warning("%s", routing.take_up_line(key, wl_name, patch, e))
            return
        log.info("%s", routing.take_up_line(key, wl_name, patch, None))

    def _owner_steps(self, key: str) -> float | None:
        """Steps 2-4: mirror, arm cleanup, clean up, recover, on the cached state; every Job write is
        guarded by the Job's rv (a 409 means read live and decide again); delete only on a live read."""
        live = False
        for _ in range(5):
            job, wl = self.read_live(key) if live else self.cached(key)
            now = self.now()
            d = dl.decide_owner(job, wl, now)
            if d.action == Action.NONE:
                return None
            if d.action == Action.WAIT:
                return d.after
            if d.action == Action.DELETE and not live:
                live = True         # irreversible: decide it again on what the apiserver says now
                continue
            log.info("%s", routing.step_line(key, d))
            ns, name = key.split("/", 1)
            rv = job["metadata"]["resourceVersion"]
            try:
                if d.action == Action.DELETE:
                    self.hooks.reach("before-delete", key, uid=job["metadata"]["uid"], resource_version=rv)
                    # the client's propagation, Background: the garbage collector takes the pods and the Workload
                    self.k.delete(JOB, name, ns, uid=job["metadata"]["uid"], resource_version=rv)
                    return None
                patch, after = routing.owner_patch(d, wl, now, self.ttl)       # MIRROR, ARM_CLEANUP, UNMARK
                self.jobs.put(self.k.patch(JOB, name, patch, ns, resource_version=rv))
                if after:
                    self.hooks.reach(after, key)
                live = False
            except Conflict:
                log.info("%s", routing.owner_conflict_line(key))
                live = True
            except NotFound:
                live = True
        return 0.2

    def _reconcile_legacy(self, key: str) -> float | None:
        """The reviewed design's order, to reproduce its bug.  Never use outside the race scenario."""
        for _ in range(4):
            job, wl = self.read(key)
            now = self.now()
            d = dl.decide_legacy(job, wl, now)
            if d.action in (Action.NONE, Action.WAIT):
                return d.after
            log.warning("%s", routing.step_line(key, d))
            ns, name = key.split("/", 1)
            if d.action == Action.MIRROR:
                self.k.patch(JOB, name, dl.mirror_patch(wl["metadata"]["name"], now), ns)
                self.hooks.reach("before-commit", key, resource_version=d.resource_version)
                try:
                    self.k.patch(WORKLOAD, wl["metadata"]["name"], dl.commit_patch(self.now()), ns,
                                 resource_version=d.resource_version)
                    log.warning("%s", routing.legacy_commit_line(key, False))
                except Conflict:
                    log.warning("%s", routing.legacy_commit_line(key, True))
            elif d.action == Action.ARM_CLEANUP:
                self.k.patch(JOB, name, dl.arm_patch(now, self.ttl), ns)
            elif d.action == Action.DELETE:
                self.hooks.reach("before-delete", key, uid=job["metadata"]["uid"])
                try:        # only the Job it read: one made again under the name meanwhile is another's
                    self.k.delete(JOB, name, ns, uid=job["metadata"]["uid"])
                except Conflict:
                    log.info("%s", routing.owner_conflict_line(key))
                    continue
                return None
        return 0.2

    # ------------------------------------------------------------------ run
    def run(self, stop: threading.Event, ready: threading.Event | None = None) -> None:
        self._stop = stop
        if self.protocol == "legacy":
            log.warning("%s", routing.LEGACY_WARNING)
        log.info("%s", routing.start_line(self.namespace, self.instance, self.protocol, self.rule, self.outer_factor,
                                          self.ttl, self.resync, self.workers))
        self.hooks.reach("before-caches", f"deadline-{self.instance}")
        watches = [self.jobs.watch(self.k, JOB, self.namespace).start(),
                   self.workloads.watch(self.k, WORKLOAD, self.namespace).start(),
                   self.provreqs.watch(self.k, PROVREQ, self.namespace).start()]
        if not wait_for_caches(watches, stop, log):
            return
        hb = heartbeat.start(self.k, f"{DEADLINE_LEASE_PREFIX}{self.instance}", stop)     # alive = synced
        log.info("deadline: caches synced; ready")
        if ready:
            ready.set()
        run_loop(self.queue, self.reconcile, stop, self.resync, self.keys, workers=self.workers,
                 min_requeue=MIN_REQUEUE)
        heartbeat.give_up(hb)

