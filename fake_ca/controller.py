"""The fake Cluster Autoscaler's loop: read (informer caches) -> decide (lifecycle.plan_loop and
scaledown, pure) -> apply.  This module only reads, calls the pure step and applies what it returns;
what it sends and when (the write bodies, the status ConfigMap's pace, the pod events that wake the loop)
is outbox.py's, pure.

Like the real autoscaler's RunOnce: one ProvisioningRequest per loop; the next loop runs at once
after a loop that processed one (or scaled down), otherwise after --scan-interval, or when an
unschedulable pod appears; a new request does not wake an idle loop.  It writes
ProvisioningRequest status as field manager cluster-autoscaler, like the real one (Accepted and the other
conditions by update, best-effort-atomic's Provisioned by server-side apply) and Node objects, and deletes
the requests past their terminal TTL (DeleteOldProvReqs).
"""

from __future__ import annotations

import dataclasses
import logging
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from k8s import heartbeat
from k8s.client import Kube
from k8s.errors import ApiError, Conflict, NotFound, Unreachable
from k8s.hooks import Hooks
from k8s.keys import (CA_FIELD_MANAGER, CA_STATUS, FAKE_CA_FIELD_MANAGER, FAKE_CA_LEASE, MARKER,
                      UNNEEDED_ANNOTATION)
from k8s.objects import format_time, meta, name_of, utcnow
from k8s.resources import CONFIG_MAP, NODE, POD, POD_TEMPLATE, PROVREQ
from k8s.runtime import Store
from k8s.watch import Event, wait_for_caches

from . import booking, lifecycle, outbox, pace, planner, scaledown, status
from . import conditions as C
from . import nodes as vm
from k8s.pools import Pool, node_manifest, pools_to_configmap
from .request import Request, request_from_objects

log = logging.getLogger("fake-ca")

MAX_PARALLEL_CREATES = 16


class NotADemoCluster(RuntimeError):
    pass


class FakeCA:
    def __init__(self, k: Kube, pools: list[Pool], opts: lifecycle.Options,
                 clock=utcnow, rng: random.Random | None = None, hooks: Hooks | None = None):
        self.k, self.pools, self.opts = k, pools, opts
        self.now = clock
        self.rng = rng or random.Random()
        self.hooks = hooks or Hooks(None)
        self.memory = lifecycle.Memory()
        self.wake = threading.Event()
        self.provreqs = Store()
        self.templates = Store()
        self.nodes = Store()
        self.pods = Store(on_change=self._on_pod)
        self._said: dict[str, str] = {}            # log-once, per request
        self._status: dict | None = None           # the status ConfigMap as last written
        self._status_written = 0.0
        self._parsed: dict[str, tuple[tuple, Request]] = {}
        self._made = self._deleted = self._marked = 0      # the loop under way's node writes (--pace)
        self._last_scale_up: datetime | None = None        # when a scale-up last made nodes (scale-down's cooldown)

    # ------------------------------------------------------------------ start-up checks
    def check_demo_cluster(self) -> None:
        if self.k.get_or_none(CONFIG_MAP, MARKER[1], MARKER[0]) is None:
            raise NotADemoCluster(
                f"ConfigMap {MARKER[0]}/{MARKER[1]} is missing: this cluster was not created by `tau-demo cluster up` "
                "nor attached with `tau-demo cluster attach --autoscaler fake`. "
                "fake-ca creates fake nodes and refuses to touch a real cluster (use --force if you are sure).")

    def publish_pools(self) -> None:
        cm = pools_to_configmap(self.pools)
        self.k.apply(CONFIG_MAP, cm, field_manager=FAKE_CA_FIELD_MANAGER)
        log.info("%s", outbox.pools_line(cm["metadata"]["namespace"], cm["metadata"]["name"], self.pools))

    # ------------------------------------------------------------------ observe
    def _on_pod(self, typ: str, pod: dict) -> None:
        """loop/trigger.go: a recently created unschedulable pod wakes the loop (outbox.wakes)."""
        if typ != Event.DELETED and outbox.wakes(pod, self.now()):
            self.wake.set()

    def cluster(self) -> lifecycle.Cluster:
        return lifecycle.Cluster(self.provreqs.items(), outbox.templates_by_key(self.templates.items()), self.nodes.items(), self.pods.items(),
                                 parse=self._parse)

    def _parse(self, pr: dict, templates: dict[str, dict]) -> Request:
        """request_from_objects, remembered per request UID for as long as neither the request nor its
        PodTemplates change (booking re-reads every booked request every loop)."""
        version = outbox.parse_version(pr, templates)
        uid = meta(pr)["uid"]                  # the apiserver gives every object one
        hit = self._parsed.get(uid)
        if hit is not None and hit[0] == version:
            return hit[1]
        req = request_from_objects(pr, templates)
        if len(self._parsed) > 10000:
            self._parsed.clear()
        self._parsed[uid] = (version, req)
        return req

    # ------------------------------------------------------------------ one loop
    def run_once(self) -> float:
        """One loop; returns the seconds to wait before the next."""
        began = time.monotonic()
        self._made = self._deleted = self._marked = 0      # this loop's node creates, deletes and marks (its pace)
        now = self.now()
        plan = lifecycle.plan_loop(self.cluster(), self.pools, self.memory, now, self.opts)
        self.memory = plan.memory
        for note in plan.notes:
            self._say_once(note.split(":", 1)[0], note)
        for w in plan.refresh + plan.failed:
            self._write(w)
        for d in plan.deletes:
            self._delete_request(d)
        for t in plan.timed_out:
            log.warning("%s", outbox.timed_out_line(t.why, t.nodes))
            for n in t.nodes:
                self._delete_node(n)
        if plan.pick is not None:
            self._apply_pick(plan.pick)
        scaled_down = self.scale_down()
        self.publish_status()
        if self.opts.pace:          # as long as the real autoscaler's loop would take
            loop = pace.looked_at(self.nodes.items(), self.pods.items(), self.provreqs.items(), self._made,
                                  self._deleted, self._marked)
            spent = time.monotonic() - began
            wait = pace.rest(pace.MODEL, loop, spent)
            if loop.made or loop.deleted or loop.marked:    # a loop that wrote nodes: what it told the pace model
                self.hooks.reach("paced", "loop", spent=spent, rest=wait, **dataclasses.asdict(loop))
            time.sleep(wait)
        return lifecycle.next_wait(plan, scaled_down, self.opts)

    def publish_status(self) -> None:
        """kube-system/cluster-autoscaler-status, written when something in it changed: at once when a
        node group's scale-up status did (backoff), else at most once a second (node counts)."""
        now = self.now()
        doc = status.status_document(self.pools, self.nodes.items(), self.memory.groups, now)
        if not outbox.status_due(doc, self._status, time.monotonic() - self._status_written):
            return
        try:
            self.k.apply(CONFIG_MAP, status.configmap(doc, now), field_manager=FAKE_CA_FIELD_MANAGER)
            self._status, self._status_written = doc, time.monotonic()
        except (ApiError, Unreachable) as e:
            log.warning("%s", outbox.status_failed_line(e))

    def _apply_pick(self, pick: lifecycle.Pick) -> None:
        if pick.why:
            log.info("%s", pick.why)
        for n in pick.rollback:
            self._delete_node(n)
        base = None
        for w in pick.writes:
            base = self._write(w, base)
            if base is None:
                return                       # the request changed or went away: the next loop looks again
        up = pick.scale_up
        if up is None:
            return
        log.info("%s", up.why)
        created, error = self._create_nodes(pick.key, pick.uid, up)
        self.hooks.reach("nodes-created", pick.key, nodes=created)
        if error:
            failure = (up.pool.name, C.ERR_CLOUD_PROVIDER, C.MSG_INCREASE_FAILED.format(error=error))
            self.memory = lifecycle.register_failures(self.memory, [failure], self.now(), self.opts)
            self._write(up.refused, base)
            return
        if self._write(up.provisioned, base) is not None:
            log.info("%s", outbox.nodes_requested_line(pick.key, created, up.boots_at))

    # ------------------------------------------------------------------ apply
    def _write(self, w: lifecycle.Write, base: dict | None = None) -> dict | None:
        """Apply one write; the object as written, or None when the request changed or went away.
        `base`: the object as returned by this loop's previous write of the same request (its
        resourceVersion), for a decision that follows that write."""
        apply, body = outbox.status_write(w, base)
        key = name_of(body)
        try:
            if apply:
                out = self.k.apply(PROVREQ, body, CA_FIELD_MANAGER, subresource="status")
            else:
                out = self.k.replace_status(PROVREQ, body, field_manager=CA_FIELD_MANAGER)
        except (NotFound, Conflict) as e:
            log.info("%s", outbox.not_written_line(key, e))
            return None
        self.provreqs.put(out)
        log.info("%s", outbox.written_line(w, out))
        return out

    def _delete_request(self, d: lifecycle.Delete) -> None:
        md = d.provreq["metadata"]
        self.hooks.reach("before-request-delete", name_of(d.provreq))
        try:       # only the incarnation that was judged (its uid): one made again under the name stays
            self.k.delete(PROVREQ, md["name"], md.get("namespace"), uid=md.get("uid"))
        except Conflict:
            log.info("%s", outbox.not_deleted_line(name_of(d.provreq), None))
            return
        except (ApiError, Unreachable) as e:
            log.warning("%s", outbox.not_deleted_line(name_of(d.provreq), e))
            return
        self.provreqs.discard(name_of(d.provreq))
        log.info("%s", d.why)

    def _say_once(self, key: str, text: str) -> None:
        if self._said.get(key) != text:
            self._said[key] = text
            log.info("%s", text)

    def _new_names(self, pool: Pool, count: int) -> list[str]:
        return outbox.new_names(pool, count, {meta(n).get("name") for n in self.nodes.items()}, self.rng)

    def _create_nodes(self, key: str, uid: str, up: lifecycle.ScaleUp) -> tuple[list[str], str]:
        """Create every node of the scale-up, concurrently, or none: if a create fails, the nodes made
        are deleted again (the kwok provider would leave them; this fake is truly atomic).  (the nodes
        made, '') or ([], what failed)."""
        names = self._new_names(up.pool, up.count)
        created: list[str] = []
        errors: list[str] = []
        lock = threading.Lock()

        def make(name: str, domain: str | None) -> None:
            node = node_manifest(up.pool, name, domain, uid, key, up.boots_at, batch=up.count)
            try:
                out = self.k.create(NODE, node)
            except (ApiError, Unreachable) as e:
                with lock:
                    errors.append(f"{name}: {e}")
                return
            self.nodes.put(out)
            with lock:
                self._made += 1
                created.append(name)
                index = len(created)
            self.hooks.reach("node-created", key, node=name, index=index, of=up.count)

        log.info("%s", outbox.creating_line(key, names))
        if up.count == 1:
            make(names[0], up.domains[0])
        else:
            with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_CREATES, up.count)) as pool_:
                list(pool_.map(make, names, up.domains))
        if not errors:
            self._last_scale_up = self.now()
            return sorted(created), ""
        log.warning("%s", outbox.creates_failed_line(key, errors, up.count, created))
        for name in created:
            self._delete_node(name)
        return [], "; ".join(sorted(errors))

    def _delete_node(self, name: str) -> None:
        try:
            self.k.delete(NODE, name)          # False (already gone) is as good as deleted
        except (ApiError, Unreachable) as e:
            log.warning("%s", outbox.node_write_failed_line("deleting", name, e))
            return
        self._deleted += 1
        self.nodes.discard(name)

    # ------------------------------------------------------------------ scale-down
    def scale_down(self) -> bool:
        c = self.cluster()
        by_uid = {p["metadata"]["uid"]: p for p in c.provreqs}
        def booked() -> set[str]:
            return planner.booked_nodes(booking.booked_pods(c.provreqs, c.templates, parse=c.parse),
                                        vm.snapshot_nodes(c.nodes), c.pods)
        now = self.now()
        nodes, pods = c.nodes, c.pods
        cooldown = self._last_scale_up is not None and \
            (now - self._last_scale_up).total_seconds() < self.opts.scale_down_delay_after_add
        plan = scaledown.scale_down(nodes, pods, by_uid, self.pools, now, self.opts.scale_down_unneeded, booked,
                                    self.opts.node_delete_delay_after_taint, cooldown)
        for n in plan.mark:
            self._patch_node(n, {UNNEEDED_ANNOTATION: format_time(now)})
        for n in plan.clear:
            self._patch_node(n, {UNNEEDED_ANNOTATION: None})
        self._marked += len(plan.mark) + len(plan.clear)
        for n in plan.taint:
            log.info("%s", outbox.tainting_line(n, self.opts.node_delete_delay_after_taint))
            self._taint_node(n, outbox.to_be_deleted(now))
        for n in plan.untaint:
            log.info("%s", outbox.untainting_line(n))
            self._taint_node(n, None)
        for n in plan.delete:
            log.info("%s", outbox.deleting_line(n, plan.why[n]))
            self._delete_node(n)
        if plan.delete:
            for line in outbox.pool_lines(nodes, plan.delete, self.pools):
                log.info("%s", line)
        return bool(plan.delete)

    def _taint_node(self, name: str, taint: dict | None) -> None:
        """Add `taint` (None: remove) the ToBeDeleted taint, keeping the node's other taints."""
        node = next((n for n in self.nodes.items() if meta(n).get("name") == name), None)
        if node is None:
            return
        self.hooks.reach("before-node-taint", name)
        try:       # guarded by the version read: a node changed meanwhile is not overwritten (a later loop looks again)
            self.nodes.put(self.k.patch(NODE, name, {"spec": {"taints": outbox.taints_with(node, taint)}},
                                        resource_version=meta(node).get("resourceVersion")))
        except (ApiError, Unreachable) as e:
            log.warning("%s", outbox.node_write_failed_line("tainting", name, e))

    def _patch_node(self, name: str, ann: dict) -> None:
        try:
            self.nodes.put(self.k.patch(NODE, name, {"metadata": {"annotations": ann}}))
        except (ApiError, Unreachable) as e:
            log.warning("%s", outbox.node_write_failed_line("annotating", name, e))

    # ------------------------------------------------------------------ run
    def _woken_by(self, stop: threading.Event) -> None:
        stop.wait()
        self.wake.set()

    def run(self, stop: threading.Event, ready: threading.Event | None = None) -> None:
        self.hooks.reach("before-caches", "fake-ca")
        watches = [store.watch(self.k, res).start() for res, store in
                   ((PROVREQ, self.provreqs), (POD_TEMPLATE, self.templates), (NODE, self.nodes), (POD, self.pods))]
        if not wait_for_caches(watches, stop, log):
            return
        self.publish_pools()
        log.info("%s", outbox.options_line(self.opts))
        hb = heartbeat.start(self.k, FAKE_CA_LEASE, stop)       # alive = synced and deciding
        log.info("fake-ca: caches synced; ready")
        if ready:
            ready.set()
        # a stop ends the loop's rest, however long (--scan-interval): it stops within a loop, as the real one on SIGTERM
        threading.Thread(target=self._woken_by, args=(stop,), name="fake-ca-stop", daemon=True).start()
        while not stop.is_set():
            try:
                wait = self.run_once()
            except Unreachable as e:
                log.warning("%s", outbox.unreachable_line(e))
                wait = outbox.LOOP_RETRY
            except Exception:
                log.exception("%s", outbox.LOOP_FAILED)
                wait = outbox.LOOP_RETRY
            if wait > 0:
                self.wake.wait(wait)
                self.wake.clear()
        try:        # like the real autoscaler on SIGTERM: its status ConfigMap goes with it
            self.k.delete(CONFIG_MAP, CA_STATUS[1], CA_STATUS[0])
        except (ApiError, Unreachable):
            pass
        heartbeat.give_up(hb)
