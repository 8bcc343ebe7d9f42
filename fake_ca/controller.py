"""The fake Cluster Autoscaler's loop: observe (informers) → decide (lifecycle and scaledown, pure) → apply.

This module only reads, calls the pure step and applies what it returns.  It writes only
ProvisioningRequest /status (server-side apply, field manager "cluster-autoscaler", like the
real CA's best-effort-atomic class) and Node objects.
"""

from __future__ import annotations

import logging
import random
import threading
from datetime import datetime, timezone

from demo.k8s import heartbeat
from demo.k8s.client import Kube
from demo.k8s.errors import ApiError, Conflict, NotFound, Unreachable
from demo.k8s.hooks import Hooks
from demo.k8s.keys import (BATCH_ANNOTATION, CA_FIELD_MANAGER, FAKE_CA_FIELD_MANAGER, FAKE_CA_LEASE, MARKER,
                           POOL_LABEL, UNNEEDED_ANNOTATION)
from demo.k8s.objects import format_time, labels, name_of
from demo.k8s.resources import CONFIG_MAP, NODE, POD, POD_TEMPLATE, PROVREQ
from demo.k8s.runtime import WorkQueue, run_loop, start_informer

from . import lifecycle, planner, scaledown
from .pools import Pool, node_manifest, pools_to_configmap
from .request import SUPPORTED_CLASSES

log = logging.getLogger("fake-ca")

SCALE_DOWN_KEY = "~scale-down"


class NotADemoCluster(RuntimeError):
    pass


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class FakeCA:
    def __init__(self, k: Kube, pools: list[Pool], opts: lifecycle.Options, scale_down_unneeded: float = 10.0,
                 resync: float = 2.0, clock=utcnow, rng: random.Random | None = None, hooks: Hooks | None = None):
        self.k, self.pools, self.opts = k, pools, opts
        self.unneeded = scale_down_unneeded
        self.resync = resync
        self.now = clock
        self.rng = rng or random.Random()
        self.hooks = hooks or Hooks(None)
        self.queue = WorkQueue()
        self._provreqs: dict[str, dict] = {}       # key -> last seen
        self._lock = threading.Lock()
        self._failures: dict[str, int] = {}        # uid -> CapacityIsNotFound count (in memory, like CA)
        self._told: set[str] = set()               # log-once for unsupported classes

    # ------------------------------------------------------------------ start-up checks
    def check_demo_cluster(self) -> None:
        if self.k.get_or_none(CONFIG_MAP, MARKER[1], MARKER[0]) is None:
            raise NotADemoCluster(
                f"ConfigMap {MARKER[0]}/{MARKER[1]} is missing: this cluster was not created by `tau-demo cluster up`. "
                "fake-ca creates fake nodes and refuses to touch a real cluster (use --force if you are sure).")

    def publish_pools(self) -> None:
        cm = pools_to_configmap(self.pools)
        self.k.apply(CONFIG_MAP, cm, field_manager=FAKE_CA_FIELD_MANAGER)
        log.info("fake-ca: published pool table %s/%s: %s", cm["metadata"]["namespace"], cm["metadata"]["name"],
                 ", ".join(f"{p.name} ({p.min_nodes}..{p.max_nodes} nodes)" for p in self.pools))

    # ------------------------------------------------------------------ observe
    def on_provreq(self, typ: str, pr: dict) -> None:
        key = name_of(pr)
        with self._lock:
            if typ == "DELETED":
                self._provreqs.pop(key, None)
                self._failures.pop(pr["metadata"].get("uid", ""), None)
                self.queue.add(SCALE_DOWN_KEY)
                return
            self._provreqs[key] = pr
        self.queue.add(key)

    def on_node_or_pod(self, typ: str, obj: dict) -> None:
        self.queue.add(SCALE_DOWN_KEY)

    def keys(self) -> list[str]:
        with self._lock:
            return sorted(self._provreqs) + [SCALE_DOWN_KEY]

    # ------------------------------------------------------------------ reconcile
    def reconcile(self, key: str) -> float | None:
        if key == SCALE_DOWN_KEY:
            return self.reconcile_scale_down()
        ns, name = key.split("/", 1)
        pr = self.k.get_or_none(PROVREQ, name, ns)
        if pr is None:
            return None
        cls = (pr.get("spec") or {}).get("provisioningClassName", "")
        if cls not in SUPPORTED_CLASSES:
            if key not in self._told:
                self._told.add(key)
                log.info("provreq %s: class %s is not handled by this autoscaler; left untouched", key, cls)
            return None
        templates = self._templates(pr)
        nodes, _ = self.k.list(NODE)
        pods, _ = self.k.list(POD)
        prs, _ = self.k.list(PROVREQ)
        booked = lifecycle.booked_nodes(nodes, {p["metadata"]["uid"]: p for p in prs})
        uid = pr["metadata"]["uid"]
        gen = pr["metadata"].get("generation")
        s = lifecycle.step(pr, templates, nodes, pods, self.pools, booked, self.now(), self.opts,
                           lifecycle.backoff_for(self._failures.get(uid, 0), self.opts))
        if s.action == "none":
            return None
        if s.action == "wait":
            return s.after
        log.info("%s", s.why)
        if s.action == "rollback":
            for n in s.rollback:
                self.k.delete(NODE, n)
            return 0.1
        conds, details = s.conditions or [], s.class_details
        if s.action == "create-nodes":
            created = self._create_nodes(pr, s.verdict)
            conds = lifecycle.after_scale_up(s, created is not None, self.now(), gen)
            if created is None:      # a node failed and the others were rolled back: no class details
                details = None
            else:
                log.info("provreq %s: Provisioned=True (CapacityIsProvisioned) on %s", key, ", ".join(created))
        if lifecycle.not_found(conds):
            self._failures[uid] = self._failures.get(uid, 0) + 1
        self._apply_status(pr, conds, details)
        return lifecycle.next_look(s, conds, self._failures.get(uid, 0), self.opts)

    def _templates(self, pr: dict) -> dict[str, dict]:
        ns = pr["metadata"]["namespace"]
        out = {}
        for ps in (pr.get("spec") or {}).get("podSets") or []:
            name = ((ps or {}).get("podTemplateRef") or {}).get("name")
            if name:
                t = self.k.get_or_none(POD_TEMPLATE, name, ns)
                if t is not None:
                    out[name] = t
        return out

    def _apply_status(self, pr: dict, conds: list[dict], details: dict | None) -> None:
        status = lifecycle.status_body(pr, conds, details)
        body = {"apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
                "metadata": {"name": pr["metadata"]["name"], "namespace": pr["metadata"]["namespace"],
                             "uid": pr["metadata"]["uid"]},
                "status": status}
        try:
            self.k.apply(PROVREQ, body, CA_FIELD_MANAGER, subresource="status")
        except (NotFound, Conflict):
            log.info("provreq %s: gone or replaced before its status was written", name_of(pr))

    def _new_name(self, pool: Pool, taken: set[str]) -> str:
        while True:
            n = f"{pool.name_prefix}{self.rng.randrange(10 ** 6):06d}"
            if n not in taken:
                taken.add(n)
                return n

    def _create_nodes(self, pr: dict, verdict: planner.Verdict) -> list[str] | None:
        """Create every node of the verdict, or none: if node k of N fails, delete the k-1 already made."""
        pool = next(p for p in self.pools if p.name == verdict.pool)
        existing, _ = self.k.list(NODE)
        taken = {n["metadata"]["name"] for n in existing}
        count = verdict.nodes_to_create
        names = [self._new_name(pool, taken) for _ in range(count)]
        domains = list(verdict.new_node_domains) + [verdict.domain] * count
        key = name_of(pr)
        log.info("provreq %s: creating %s", key, ", ".join(names))
        created: list[str] = []
        try:
            for name, domain in zip(names, domains):
                node = node_manifest(pool, name, domain, pr["metadata"]["uid"], key)
                node["metadata"].setdefault("annotations", {})[BATCH_ANNOTATION] = str(count)
                self.k.create(NODE, node)
                created.append(name)
                self.hooks.reach("node-created", key, node=name, index=len(created), of=count)
        except (ApiError, Unreachable) as e:
            log.warning("provreq %s: creating node %d of %d failed (%s); deleting %s so the scale-up stays atomic",
                        key, len(created) + 1, len(names), e, ", ".join(created) or "nothing")
            for name in created:
                try:
                    self.k.delete(NODE, name)
                except (ApiError, Unreachable):
                    log.exception("rollback of %s failed; it will be collected at the next loop", name)
            return None
        return created

    def reconcile_scale_down(self) -> float | None:
        nodes, _ = self.k.list(NODE)
        pods, _ = self.k.list(POD)
        prs, _ = self.k.list(PROVREQ)
        by_uid = {p["metadata"]["uid"]: p for p in prs}
        now = self.now()
        plan = scaledown.scale_down(nodes, pods, by_uid, self.pools, now, self.unneeded)
        for n in plan.mark:
            self.k.patch(NODE, n, {"metadata": {"annotations": {UNNEEDED_ANNOTATION: format_time(now)}}})
        for n in plan.clear:
            self.k.patch(NODE, n, {"metadata": {"annotations": {UNNEEDED_ANNOTATION: None}}})
        for n in plan.delete:
            log.info("scale-down: deleting %s: %s", n, plan.why.get(n, ""))
            self.k.delete(NODE, n)
        if plan.delete:
            left = {}
            for n in nodes:
                p = labels(n).get(POOL_LABEL)
                if p and n["metadata"]["name"] not in plan.delete and not n["metadata"].get("deletionTimestamp"):
                    left[p] = left.get(p, 0) + 1
            for p in self.pools:
                log.info("scale-down: node pool %s: %d/%d nodes", p.name, left.get(p.name, 0), p.max_nodes)
        return plan.after

    # ------------------------------------------------------------------ run
    def run(self, stop: threading.Event, ready: threading.Event | None = None) -> None:
        self.publish_pools()
        hb = heartbeat.start(self.k, FAKE_CA_LEASE, stop)
        synced = [threading.Event() for _ in range(3)]
        start_informer(self.k, PROVREQ, self.on_provreq, stop, synced=synced[0])
        start_informer(self.k, NODE, self.on_node_or_pod, stop, synced=synced[1])
        start_informer(self.k, POD, self.on_node_or_pod, stop, synced=synced[2])
        for e in synced:
            e.wait(30)
        log.info("fake-ca: watching ProvisioningRequests (booking %.0fs, backoff %.0f..%.0fs, scale-down after "
                 "%.0fs unneeded, ValidUntilSeconds %s)", self.opts.booking_seconds, self.opts.initial_backoff,
                 self.opts.max_backoff, self.unneeded,
                 "HONOURED (differs from the real CA)" if self.opts.honor_valid_until else "ignored (like the real CA)")
        log.info("fake-ca: caches synced; ready")
        if ready:
            ready.set()
        run_loop(self.queue, self.reconcile, stop, self.resync, self.keys)
        hb.join(5)
