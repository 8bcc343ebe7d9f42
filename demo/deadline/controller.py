"""The admission-deadline controller: observe → decide (protocol.py, pure) → apply (demo.k8s.client).

Keyed by owner Job ("namespace/name").  Every reconcile reads the Job and its Workload
live (never from the informer cache), so each decision is made on fresh state and every
write carries the resourceVersion it was decided on.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timezone
from typing import Callable

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from ..k8s import heartbeat
from ..k8s.client import Kube
from ..k8s.errors import Conflict
from ..k8s.hooks import Hooks
from ..k8s.keys import (DEADLINE_ANNOTATION, DEADLINE_CLASS_ANNOTATION, DEADLINE_LEASE_PREFIX, DEFAULT_DEADLINE_CLASS,
                        JOB_UID_LABEL, MIRROR_KEYS)
from ..k8s.objects import annotations, name_of, owned_by
from ..k8s.resources import JOB, WORKLOAD
from ..k8s.runtime import WorkQueue, run_loop, start_informer
from . import protocol as dl

log = logging.getLogger("deadline")

# Like an IngressClass: a Job annotated with DEADLINE_CLASS_ANNOTATION is handled only by the
# instance of that class; Jobs without it by the "default" instance.  Race scenarios run their own.
PROTOCOLS = ("committed", "legacy")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class DeadlineController:
    def __init__(self, k: Kube, namespace: str | None = None, protocol: str = "committed",
                 cleanup_ttl: float = 30.0, resync: float = 5.0, hooks: Hooks | None = None,
                 clock: Callable[[], datetime] = utcnow, conflict_retries: int = 6,
                 instance: str = DEFAULT_DEADLINE_CLASS):
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {PROTOCOLS}")
        self.k, self.namespace, self.protocol = k, namespace, protocol
        self.ttl, self.resync = cleanup_ttl, resync
        self.hooks = hooks or Hooks(None)
        self.now = clock
        self.conflict_retries = conflict_retries
        self.instance = instance
        self.queue = WorkQueue()
        self._known: set[str] = set()
        self._lock = threading.Lock()
        self._last: dict[str, str] = {}

    # ------------------------------------------------------------------ observe
    def _interesting(self, job: dict) -> bool:
        ann = annotations(job)
        if ann.get(DEADLINE_CLASS_ANNOTATION, DEFAULT_DEADLINE_CLASS) != self.instance:
            return False
        return DEADLINE_ANNOTATION in ann or any(k in ann for k in MIRROR_KEYS)

    def on_job(self, typ: str, job: dict) -> None:
        key = name_of(job)
        with self._lock:
            if typ == "DELETED":
                self._known.discard(key)
                return
            if not self._interesting(job):
                return
            self._known.add(key)
        self.queue.add(key)

    def on_workload(self, typ: str, wl: dict) -> None:
        for ref in (wl.get("metadata") or {}).get("ownerReferences") or []:
            if ref.get("kind") == "Job" and ref.get("controller"):
                key = f"{wl['metadata']['namespace']}/{ref['name']}"
                with self._lock:
                    if key in self._known:
                        self.queue.add(key)

    def _say_once(self, key: str, d: dl.Decision) -> None:
        """Log a no-op decision only when it changes, so resyncs do not flood the log."""
        gist = d.action if d.action == "wait" else d.why
        if self._last.get(key) != gist:
            self._last[key] = gist
            if d.action == "wait":
                log.info("deadline %s: not admitted yet; %s", key, d.why)
            elif d.why not in ("no Workload yet", "nothing to mirror"):
                log.info("deadline %s: %s", key, d.why)

    def keys(self) -> list[str]:
        with self._lock:
            return sorted(self._known)

    # ------------------------------------------------------------------ read
    def read(self, key: str) -> tuple[dict | None, dict | None]:
        ns, name = key.split("/", 1)
        job = self.k.get_or_none(JOB, name, ns)
        if job is None:
            return None, None
        uid = job["metadata"]["uid"]
        wls, _ = self.k.list(WORKLOAD, ns, label_selector=f"{JOB_UID_LABEL}={uid}")
        owned = [w for w in wls if owned_by(w, uid)]
        owned.sort(key=lambda w: w["metadata"].get("creationTimestamp", ""))
        return job, (owned[-1] if owned else None)

    # ------------------------------------------------------------------ reconcile
    def reconcile(self, key: str) -> float | None:
        if self.protocol == "legacy":
            return self._reconcile_legacy(key)
        after = self._commit_step(key)
        owner_after = self._owner_steps(key)
        waits = [a for a in (after, owner_after) if a is not None]
        return min(waits) if waits else None

    def _commit_step(self, key: str) -> float | None:
        """Step 1, with read-again-decide-again on 409 Conflict."""
        first = True
        try:
            for attempt in Retrying(retry=retry_if_exception_type(Conflict),
                                    stop=stop_after_attempt(self.conflict_retries),
                                    wait=wait_exponential(multiplier=0.05, max=1.0), reraise=True):
                with attempt:
                    job, wl = self.read(key)
                    d = dl.decide_workload(job, wl, self.now())
                    if not first:
                        state = "Admitted=True" if dl.admitted(wl) else (
                            "timeout committed" if dl.committed_timeout(wl) else "not admitted")
                        log.info("deadline %s: re-read: %s; %s", key, state, d.why)
                    elif d.action == "commit":
                        log.info("deadline %s: %s", key, d.why)
                    else:
                        self._say_once(key, d)
                    first = False
                    if d.action == "wait":
                        return d.after
                    if d.action != "commit":
                        return None
                    self.hooks.reach("before-commit", key, resource_version=d.resource_version)
                    now = self.now()
                    try:
                        self.k.patch(WORKLOAD, wl["metadata"]["name"], dl.commit_patch(now),
                                     wl["metadata"]["namespace"], resource_version=d.resource_version)
                    except Conflict:
                        log.info("deadline %s: 409 conflict on Workload rv %s; reading again", key, d.resource_version)
                        raise
                    log.info("deadline %s: committed timeout on Workload %s (spec.active=false)", key,
                             wl["metadata"]["name"])
                    self.hooks.reach("after-commit", key, workload=wl["metadata"]["name"])
                    return None
        except Conflict:
            log.warning("deadline %s: still conflicting after %d attempts; will retry", key, self.conflict_retries)
            return 0.5
        return None

    def _owner_steps(self, key: str) -> float | None:
        """Steps 2-4: mirror, arm cleanup, clean up, recover.  Each write is guarded by the Job's rv."""
        for _ in range(5):
            job, wl = self.read(key)
            now = self.now()
            d = dl.decide_owner(job, wl, now)
            if d.action == "none":
                return None
            if d.action == "wait":
                return d.after
            log.info("deadline %s: %s", key, d.why)
            ns, name = key.split("/", 1)
            rv = job["metadata"]["resourceVersion"]
            try:
                if d.action == "mirror":
                    self.k.patch(JOB, name, dl.mirror_patch(wl["metadata"]["name"], now), ns, resource_version=rv)
                    self.hooks.reach("after-mirror", key)
                elif d.action == "arm-cleanup":
                    self.k.patch(JOB, name, dl.arm_patch(now, self.ttl), ns, resource_version=rv)
                    self.hooks.reach("after-arm", key)
                elif d.action == "unmark":
                    self.k.patch(JOB, name, dl.unmark_patch(), ns, resource_version=rv)
                elif d.action == "delete":
                    self.k.delete(JOB, name, ns, propagation="Background", uid=job["metadata"]["uid"])
                    return None
            except Conflict:
                log.info("deadline %s: Job changed under us (409); reading again", key)
        return 0.2

    def _reconcile_legacy(self, key: str) -> float | None:
        """The reviewed design's order, to reproduce its bug.  Never use outside the race scenario."""
        for _ in range(4):
            job, wl = self.read(key)
            now = self.now()
            d = dl.decide_legacy(job, wl, now)
            if d.action in ("none", "wait"):
                return d.after
            log.warning("deadline %s: %s", key, d.why)
            ns, name = key.split("/", 1)
            if d.action == "mirror":
                self.k.patch(JOB, name, dl.mirror_patch(wl["metadata"]["name"], now), ns)
                self.hooks.reach("before-commit", key, resource_version=d.resource_version)
                try:
                    self.k.patch(WORKLOAD, wl["metadata"]["name"], dl.commit_patch(self.now()), ns,
                                 resource_version=d.resource_version)
                    log.warning("deadline %s: LEGACY: Workload deactivated", key)
                except Conflict:
                    log.warning("deadline %s: LEGACY: 409 conflict deactivating the Workload; "
                                "the owner keeps its terminal mark", key)
            elif d.action == "arm-cleanup":
                self.k.patch(JOB, name, dl.arm_patch(now, self.ttl), ns)
            elif d.action == "delete":
                self.k.delete(JOB, name, ns, propagation="Background", uid=job["metadata"]["uid"])
                return None
        return 0.2

    # ------------------------------------------------------------------ run
    def run(self, stop: threading.Event, ready: threading.Event | None = None) -> None:
        if self.protocol == "legacy":
            log.warning("deadline: running the LEGACY protocol (mark owner, then deactivate, then TTL cleanup). "
                        "It reports running jobs failed and deletes them; it exists only to reproduce that bug.")
        log.info("deadline: watching Jobs and Workloads in %s (class %s, protocol %s, cleanup TTL %.0fs, resync %.0fs)",
                 self.namespace or "all namespaces", self.instance, self.protocol, self.ttl, self.resync)
        hb = heartbeat.start(self.k, f"{DEADLINE_LEASE_PREFIX}{self.instance}", stop)
        jobs_synced, wls_synced = threading.Event(), threading.Event()
        start_informer(self.k, JOB, self.on_job, stop, self.namespace, synced=jobs_synced)
        start_informer(self.k, WORKLOAD, self.on_workload, stop, self.namespace, synced=wls_synced)
        jobs_synced.wait(30)
        wls_synced.wait(30)
        log.info("deadline: caches synced; ready")
        if ready:
            ready.set()
        run_loop(self.queue, self.reconcile, stop, self.resync, self.keys)
        hb.join(5)
