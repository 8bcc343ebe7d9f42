"""The TauCluster controller: observe (informer caches of the TauClusters and of the five kinds of Kueue object a
profile stands for) → decide (plan.py, pure; the bodies, the finalizer, the status and the next look: patches.py,
pure) → apply (k8s.client).

Keyed by TauCluster name, a few workers, never one key on two at once.  Who may write an object is decided over
every TauCluster's profiles (plan.refusals: one holder per object; the other claims are refused, Conflict, and
write nothing), so a change to a TauCluster, like a change to any Kueue object of those kinds, enqueues every
TauCluster (there are few; each reconcile reads only the caches), and drift is put back within a watch event.
Every write is guarded: an update or an adoption by the resourceVersion the plan read (a 409 means the cache was
stale: the key is looked at again), a delete by uid and resourceVersion.  The status is written only when it
changed.  A TauCluster not in External mode carries a finalizer, so that its deletion first deletes what it made
(Manage) and gives back what it adopted.  Nothing is decided before the caches synced; after a restart (or
`kill -9`) the caches are the whole truth, so it converges from there.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import Callable

from k8s import heartbeat
from k8s.client import Kube
from k8s.errors import ApiError, Conflict, NotFound
from k8s.keys import MODE_MANAGE, TAUCLUSTER_LEASE
from k8s.objects import Obj, deleting, format_time, meta, utcnow
from k8s.objects import name as name_of
from k8s.resources import ADMISSION_CHECK, CLUSTER_QUEUE, LOCAL_QUEUE, PROVREQ_CONFIG, RESOURCE_FLAVOR, TAUCLUSTER
from k8s.runtime import Store, WorkQueue, run_loop
from k8s.watch import wait_for_caches

from . import patches
from . import plan as P
from .profile import BadProfile, objects, parse_all

log = logging.getLogger("taucluster")

KINDS = {r.kind: r for r in (RESOURCE_FLAVOR, PROVREQ_CONFIG, ADMISSION_CHECK, CLUSTER_QUEUE, LOCAL_QUEUE)}
RESYNC = 10.0


class TauClusterController:
    def __init__(self, k: Kube, workers: int = 2, resync: float = RESYNC, clock: Callable[[], datetime] = utcnow):
        self.k, self.workers, self.resync, self.now = k, workers, resync, clock
        self.queue = WorkQueue()
        # a TauCluster's change may change who holds what (plan.refusals): every TauCluster is looked at again
        self.tauclusters = Store(on_change=lambda _t, obj: (self.queue.add(name_of(obj)), self._enqueue_all()),
                                 on_sync=self._enqueue_all)
        self.kueue = {kind: Store(on_change=lambda _t, _o: self._enqueue_all(), on_sync=self._enqueue_all)
                      for kind in KINDS}

    # ------------------------------------------------------------------ observe
    def keys(self) -> list[str]:
        return [name_of(tc) for tc in self.tauclusters.items()]

    def _enqueue_all(self) -> None:
        for key in self.keys():
            self.queue.add(key)

    def found(self) -> list[Obj]:
        return [obj for store in self.kueue.values() for obj in store.items()]

    # ------------------------------------------------------------------ decide and apply
    def reconcile(self, name: str) -> float | None:
        tc = self.tauclusters.get(name)
        if tc is None:
            return None
        mode = (tc.get("spec") or {}).get("mode")
        found = self.found()
        if deleting(tc):
            return self._release(tc, mode, found)
        try:
            profiles = parse_all((tc.get("spec") or {}).get("profiles"))
        except BadProfile as e:
            log.warning("%s", patches.invalid_line(name, e))
            self._status(tc, [], str(e))
            return None
        finalizer = patches.finalizer_added(tc, mode)
        if finalizer is not None:
            tc = self._patch_tc(tc, finalizer)
            if tc is None:
                return 0.2
        by_key = {P.key(o): o for o in found}
        refused = P.refusals(self.tauclusters.items(), by_key)      # every TauCluster's claims, from the caches
        plans = [P.plan_profile(mode, name, p, by_key, refused.get((name, p.name), ())) for p in profiles]
        writes = P.once([w for pl in plans for w in pl.actions])       # profiles may share a check and its config
        if mode == MODE_MANAGE:
            writes += P.stale(name, [o for p in profiles for o in objects(p, name)], found)
        done = all(self._write(name, w) for w in writes)
        self._status(tc, plans, "")
        if not done:
            return 0.2                          # a write was refused on a stale read: look again at once
        return patches.next_look(writes, plans)

    def _release(self, tc: Obj, mode: str, found: list[Obj]) -> float | None:
        name = name_of(tc)
        writes = P.release_all(mode, name, found)
        if not all(self._write(name, w) for w in writes):
            return 0.2
        if writes:
            return 0.5                          # wait for the watch to show them gone before letting go
        finalizer = patches.finalizer_removed(tc)
        if finalizer is not None:
            log.info("%s", patches.finalized_line(name))
            self._patch_tc(tc, finalizer)
        return None

    def _write(self, name: str, w: P.SetupWrite) -> bool:
        """Apply one write; False when the apiserver refused it as made on a stale read (409, or already gone)."""
        res = KINDS[w.obj["kind"]]
        md = w.obj["metadata"]
        ns = md.get("namespace")
        log.info("%s", patches.write_line(name, w))
        try:
            if w.verb == "create":
                self._keep(res, self.k.create(res, w.obj, ns))
            elif w.verb in ("update", "adopt", "release"):
                self._keep(res, self.k.patch(res, md["name"], patches.write_body(w), ns,
                                             resource_version=md.get("resourceVersion")))
            elif w.verb == "delete":
                self.k.delete(res, md["name"], ns, uid=md.get("uid"), resource_version=md.get("resourceVersion"))
            return True
        except (Conflict, NotFound) as e:
            log.info("%s", patches.write_line(name, w, e))
            return False

    def _keep(self, res, obj: Obj) -> None:
        self.kueue[res.kind].put(obj)

    def _patch_tc(self, tc: Obj, patch: Obj) -> Obj | None:
        try:
            out = self.k.patch(TAUCLUSTER, name_of(tc), patch, resource_version=meta(tc).get("resourceVersion"))
        except (Conflict, NotFound):
            return None
        self.tauclusters.put(out)
        return out

    def _status(self, tc: Obj, plans: list[P.ProfilePlan], invalid: str) -> None:
        patch = patches.status_patch(tc, plans, invalid, format_time(self.now()))
        if patch is None:
            return
        try:
            self.tauclusters.put(self.k.patch_status(TAUCLUSTER, name_of(tc), patch))
        except (NotFound, ApiError) as e:
            log.warning("%s", patches.status_not_written_line(name_of(tc), e))

    # ------------------------------------------------------------------ run
    def run(self, stop: threading.Event, ready: threading.Event | None = None) -> None:
        log.info("%s", patches.watching_line(list(KINDS)))
        watches = [self.tauclusters.watch(self.k, TAUCLUSTER).start(),
                   *[self.kueue[kind].watch(self.k, res).start() for kind, res in KINDS.items()]]
        if not wait_for_caches(watches, stop, log):
            return
        hb = heartbeat.start(self.k, TAUCLUSTER_LEASE, stop)
        log.info("taucluster: caches synced; ready")
        if ready:
            ready.set()
        run_loop(self.queue, self.reconcile, stop, self.resync, self.keys, workers=self.workers)
        heartbeat.give_up(hb)
