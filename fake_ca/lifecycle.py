"""One loop of the fake autoscaler, decided in pure code: what a RunOnce of the real Cluster
Autoscaler 1.36.1 does with ProvisioningRequests (core/static_autoscaler.go), at demo timescales.

    1. refresh (processors/provreq/processor.go): end bookings (BookingExpired), fail requests
       never provisioned for too long (Failed/Expired), at most 20 updates a loop;
    2. cluster state (clusterstate): nodes that did not boot within --max-node-provision-time
       are removed and their group backs off;
    3. the injector (processors/provreq/injector.go) picks ONE request: of a supported class,
       neither Failed nor Provisioned=True, and, after Provisioned=False, past its retry time;
       requests whose PodTemplates are missing are failed on the way (not picked);
    4. the picked request: Accepted=True (one write), then its class decides:
       best-effort-atomic: fits existing capacity -> Provisioned=True/CapacityIsFound; else one
       node group grows all-or-nothing -> nodes requested -> Provisioned=True/CapacityIsProvisioned
       at once, without waiting for the nodes to boot; else Provisioned=False/CapacityIsNotFound;
       check-capacity: CapacityIsFound or CapacityIsNotFound, or Failed with noRetry.

The loop that processed a request runs again at once; otherwise after --scan-interval.  Everything
a decision needs comes from the cluster (conditions, timestamps, nodes carrying the request's UID)
or from `Memory`, the in-memory state the real autoscaler keeps too (retry times, node-group
backoff) and loses on a restart.  A controller killed at any point takes the same decisions again:
no duplicate nodes, no leaked nodes, no lost condition.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable

from demo.k8s.keys import (ACCEPTED, BATCH_ANNOTATION, BEST_EFFORT_ATOMIC, BOOKING_EXPIRED, CAPACITY_REVOKED,
                           CHECK_CAPACITY, DOMAIN_DETAIL, FAILED, PROVISIONED, PROVREQ_UID_ANNOTATION)
from demo.k8s.objects import (annotations, created_at, deleting, is_true, meta, name_of, spec, status, transition_time,
                              uid as uid_of)

from . import backoff, booking, nodes as vm
from . import conditions as C
from . import params as P
from .planner import Verdict, plan
from .pools import Pool
from .request import SUPPORTED_CLASSES, Request, RequestError, request_from_objects


@dataclass(frozen=True)
class Options:
    scan_interval: float = 1.0                  # real: 10s (--scan-interval)
    booking_seconds: float = 60.0               # real: 10m, hardcoded
    initial_backoff: float = 5.0                # real: 1m  (--provisioning-request-initial-backoff-time)
    max_backoff: float = 20.0                   # real: 10m (--provisioning-request-max-backoff-time)
    expiry_seconds: float = 7 * 24 * 3600       # real: 7 days, then Failed/Expired
    max_node_provision_seconds: float = 20.0    # real: 15m (--max-node-provision-time)
    initial_group_backoff: float = 60.0         # real: 5m  (--initial-node-group-backoff-duration)
    max_group_backoff: float = 300.0            # real: 30m (--max-node-group-backoff-duration)
    honor_valid_until: bool = False             # real: ValidUntilSeconds is never read
    boot_seconds: float | None = None           # override every pool's bootSeconds
    stockout_seconds: float | None = None       # FAKE-ONLY fault: refuse scale-ups of requests younger than this
    revoke_after: float | None = None           # FAKE-ONLY fault: CapacityRevoked this long after Provisioned
    max_refresh_updates: int = 20               # real: 20 updates a loop

    @property
    def retry(self) -> backoff.RetryPolicy:
        return backoff.RetryPolicy(self.initial_backoff, self.max_backoff)

    @property
    def groups(self) -> backoff.GroupPolicy:
        return backoff.GroupPolicy(self.initial_group_backoff, self.max_group_backoff)


@dataclass
class Memory:
    """What the real autoscaler keeps only in memory: lost on a restart, like its LRU and clusterstate."""
    retry: dict[str, float] = field(default_factory=dict)                    # request UID -> next retry time
    groups: dict[str, backoff.GroupBackoff] = field(default_factory=dict)    # pool -> node-group backoff


@dataclass(frozen=True)
class Cluster:
    """What one loop reads (from the informer caches)."""
    provreqs: list[dict]
    templates: dict[tuple[str, str], dict]       # (namespace, name) -> PodTemplate
    nodes: list[dict]
    pods: list[dict]
    parse: Callable[[dict, dict[str, dict]], Request] = request_from_objects   # may memoize


@dataclass(frozen=True)
class Write:
    """One status write to a ProvisioningRequest.  `apply`: server-side apply of the one condition
    `ctype` (field manager cluster-autoscaler, as best-effort-atomic writes Provisioned); otherwise
    an update of the whole status carrying the resourceVersion that was read."""
    provreq: dict
    ctype: str
    conditions: list[dict]
    why: str
    apply: bool = False
    details: dict | None = None

    @property
    def condition(self) -> dict:
        return next(c for c in self.conditions if c["type"] == self.ctype)


@dataclass(frozen=True)
class ScaleUp:
    """Grow one pool by `count` nodes for one request, all or nothing."""
    pool: str
    count: int
    domains: tuple[str | None, ...]
    boots_at: str | None
    provisioned: Write           # once every node exists
    refused: Write               # when a node create failed (the others are rolled back)
    why: str


@dataclass
class Pick:
    """The one request this loop processed."""
    key: str
    uid: str
    writes: list[Write] = field(default_factory=list)      # in order
    scale_up: ScaleUp | None = None
    rollback: list[str] = field(default_factory=list)      # nodes of an interrupted scale-up, deleted first
    why: str = ""


@dataclass
class LoopPlan:
    refresh: list[Write]
    failed: list[Write]                  # failed by the injector on its way (missing templates, bad parameters)
    timed_out: list[vm.TimedOut]
    pick: Pick | None
    memory: Memory
    notes: list[str] = field(default_factory=list)      # decisions worth a log line that change nothing


def _key(pr: dict) -> str:
    return name_of(pr)


def _age(pr: dict, now: datetime) -> float:
    created = created_at(pr)
    return 0.0 if created is None else (now - created).total_seconds()


def _conds(pr: dict) -> list[dict]:
    return list(status(pr).get("conditions") or [])


def _gen(pr: dict) -> int | None:
    return meta(pr).get("generation")


def _write(pr: dict, ctype: str, st: str, reason: str, message: str, now: datetime, why: str,
           apply: bool = False, details: dict | None = None) -> Write:
    conds = C.set_condition(_conds(pr), ctype, st, reason, message, now, None if apply else _gen(pr))
    return Write(pr, ctype, conds, why, apply, details)


def supported(pr: dict) -> bool:
    return spec(pr).get("provisioningClassName") in SUPPORTED_CLASSES


def ordered(provreqs: list[dict]) -> list[dict]:
    """The order the loop walks requests in: oldest first (the real lister's order is unspecified)."""
    return sorted(provreqs, key=lambda p: (meta(p).get("creationTimestamp") or "", _key(p)))


# ---------------------------------------------------------------------------- 1. refresh

def refresh(provreqs: list[dict], pods: list[dict], now: datetime, opts: Options) -> tuple[list[Write], list[str]]:
    """Bookings that end, requests that expire, injected revocations; at most max_refresh_updates writes."""
    writes: list[Write] = []
    notes: list[str] = []
    for pr in ordered(provreqs):
        if len(writes) >= opts.max_refresh_updates:
            break
        if not supported(pr) or is_true(pr, FAILED):
            continue
        key = _key(pr)
        try:
            params = P.parse(pr)
        except P.BadParameter:
            continue                # the injector fails it when it gets to it
        if is_true(pr, PROVISIONED):
            w = _refresh_provisioned(pr, params, pods, now, opts)
        else:
            w = _refresh_waiting(pr, params, now, opts)
        if w is not None:
            writes.append(w)
        elif params.valid_until_note and not (opts.honor_valid_until or params.honor_valid_until):
            notes.append(f"provreq {key}: {params.valid_until_note}: ignored (the real autoscaler never reads it)")
    return writes, notes


def _refresh_provisioned(pr: dict, params: P.Params, pods: list[dict], now: datetime, opts: Options) -> Write | None:
    key = _key(pr)
    held = (now - (transition_time(pr, PROVISIONED) or now)).total_seconds()
    revoke = params.revoke_after if params.revoke_after is not None else opts.revoke_after
    if revoke is not None and not is_true(pr, CAPACITY_REVOKED) and held >= revoke:
        return _write(pr, CAPACITY_REVOKED, "True", C.R_REVOKED, C.MSG_REVOKED, now,
                      f"provreq {key}: INJECTED fault: revoking capacity {held:.0f}s after provisioning "
                      "(the real autoscaler never writes CapacityRevoked)")
    if is_true(pr, BOOKING_EXPIRED):
        return None
    total = booking.total_pods(pr)
    if total and booking.consuming_pods_scheduled(pr, pods) >= total:
        return _write(pr, BOOKING_EXPIRED, "True", C.R_BOOKING_CONSUMED, C.MSG_BOOKING_CONSUMED, now,
                      f"provreq {key}: all {total} pod(s) scheduled: booking consumed (CA 1.37)")
    if held >= opts.booking_seconds:
        return _write(pr, BOOKING_EXPIRED, "True", C.R_RESERVATION_EXPIRED, C.MSG_RESERVATION_EXPIRED, now,
                      f"provreq {key}: booking of {opts.booking_seconds:.0f}s expired")
    return None


def _refresh_waiting(pr: dict, params: P.Params, now: datetime, opts: Options) -> Write | None:
    key = _key(pr)
    age = _age(pr, now)
    if age >= opts.expiry_seconds:
        return _write(pr, FAILED, "True", C.R_EXPIRED, C.MSG_EXPIRED, now,
                      f"provreq {key}: not provisioned {age:.0f}s after creation: expired")
    if opts.honor_valid_until or params.honor_valid_until:
        if params.valid_until_note:
            return _write(pr, FAILED, "True", C.R_FAILED_TO_CREATE_PODS, f"invalid parameters: {params.valid_until_note}",
                          now, f"provreq {key}: {params.valid_until_note} (--honor-valid-until is on)")
        if params.valid_until is not None and age >= params.valid_until:
            return _write(pr, FAILED, "True", C.R_VALID_UNTIL_EXPIRED,
                          f"capacity not provisioned within ValidUntilSeconds={params.valid_until:.0f} "
                          "(honoured by fake-ca --honor-valid-until; the real autoscaler ignores it)", now,
                          f"provreq {key}: ValidUntilSeconds={params.valid_until:.0f} passed without capacity: "
                          "Failed (--honor-valid-until; the real Cluster Autoscaler ignores ValidUntilSeconds)")
    return None


# ---------------------------------------------------------------------------- 2. nodes that never booted

def register_failures(memory: Memory, pools_failed: list[tuple[str, str, str]], now: datetime,
                      opts: Options) -> Memory:
    """Memory after failed scale-ups of the given pools (pool, error code, error message) at `now`."""
    groups = backoff.forget_stale(memory.groups, now, opts.groups)
    for pool, code, message in pools_failed:
        groups[pool] = backoff.register_failure(groups.get(pool), now, opts.groups, code, message)
    return Memory(dict(memory.retry), groups)


# ---------------------------------------------------------------------------- 3 and 4. pick one, process it

def plan_loop(cluster: Cluster, pools: list[Pool], memory: Memory, now: datetime, opts: Options) -> LoopPlan:
    """Everything one loop does, in the order it does it."""
    refresh_writes, notes = refresh(cluster.provreqs, cluster.pods, now, opts)
    refreshed = {_key(w.provreq) for w in refresh_writes}
    timed_out = vm.timed_out(cluster.nodes, now, opts.max_node_provision_seconds)
    memory = register_failures(memory, [(t.pool, C.ERR_TIMEOUT, t.error_message) for t in timed_out], now, opts)
    gone = {n for t in timed_out for n in t.nodes}
    nodes = [n for n in cluster.nodes if meta(n).get("name") not in gone]
    retry = dict(memory.retry)
    failed: list[Write] = []
    pick = None
    live = {meta(p).get("uid") for p in cluster.provreqs}
    for pr in ordered(cluster.provreqs):
        if not supported(pr):
            notes.append(f"provreq {_key(pr)}: class {spec(pr).get('provisioningClassName')} is not handled by "
                         f"this autoscaler; left untouched (rv {meta(pr).get('resourceVersion')})")
            continue
        if _key(pr) in refreshed:
            continue
        uid = uid_of(pr)
        avail = backoff.availability(pr, retry.get(uid), now, opts.retry)
        if avail.retry is None:
            retry.pop(uid, None)
        else:
            retry[uid] = avail.retry
        if not avail.available:
            continue
        try:
            params = P.parse(pr)
        except P.BadParameter as e:
            failed.append(_write(pr, FAILED, "True", C.R_FAILED_TO_CREATE_PODS, f"invalid parameters: {e}", now,
                                 f"provreq {_key(pr)}: invalid: {e}"))
            continue
        try:
            request = request_from_objects(pr, _templates_of(pr, cluster.templates))
        except RequestError as e:
            failed.append(_write(pr, FAILED, "True", e.reason, e.message, now, f"provreq {_key(pr)}: {e.message}"))
            continue
        pick = _process(pr, request, params, cluster, nodes, pools, memory, now, opts)
        break
    memory = Memory({u: r for u, r in retry.items() if u in live}, memory.groups)
    return LoopPlan(refresh_writes, failed, timed_out, pick, memory, notes)


def _templates_of(pr: dict, templates: dict[tuple[str, str], dict]) -> dict[str, dict]:
    ns = meta(pr).get("namespace") or "default"
    return {name: t for (tns, name), t in templates.items() if tns == ns}


def nodes_of(uid: str, nodes: list[dict]) -> list[dict]:
    return [n for n in nodes if annotations(n).get(PROVREQ_UID_ANNOTATION) == uid and not deleting(n)]


def _batch_size(node: dict) -> int:
    """How many nodes the scale-up that made `node` had; 0 (unknown: roll it back) if the annotation is
    missing or was edited into something that is no count."""
    text = annotations(node).get(BATCH_ANNOTATION) or "0"
    return int(text) if text.isdigit() else 0


def _process(pr: dict, request, params: P.Params, cluster: Cluster, nodes: list[dict], pools: list[Pool],
             memory: Memory, now: datetime, opts: Options) -> Pick:
    key, uid = _key(pr), uid_of(pr)
    cls = spec(pr).get("provisioningClassName")
    accepted = _write(pr, ACCEPTED, "True", C.R_ACCEPTED, C.MSG_ACCEPTED, now, f"provreq {key}: accepted")
    after = {**pr, "status": {**status(pr), "conditions": accepted.conditions}}     # the request once accepted
    pick = Pick(key, uid, [accepted])
    apply = cls == BEST_EFFORT_ATOMIC

    mine = nodes_of(uid, nodes)
    if mine:                                    # a scale-up of ours was interrupted (restart, kill -9)
        want = max(_batch_size(n) for n in mine)
        names = sorted(meta(n)["name"] for n in mine)
        if want and len(mine) >= want:
            details = _domain_details(request, mine, pools)
            pick.writes.append(_write(after, PROVISIONED, "True", C.R_CAPACITY_PROVISIONED, C.MSG_CAPACITY_FOUND,
                                      now, f"provreq {key}: all {want} node(s) exist ({', '.join(names)}): provisioned",
                                      apply, details))
            return pick
        pick.rollback = names
        pick.why = (f"provreq {key}: found {len(mine)} of {want} node(s) from an interrupted scale-up; deleting "
                    f"{', '.join(names)} (atomic) and planning again")
        return pick

    snapshot = vm.snapshot_nodes(nodes)
    # the picked request is not Provisioned=True, so it books nothing itself
    booked = booking.booked_pods(cluster.provreqs, cluster.templates, parse=cluster.parse)
    backed = {pool: f"node group {pool} is backed off after a failed scale-up ({g.error_message}) until "
                    f"{g.until.strftime('%H:%M:%S')}"
              for pool, g in memory.groups.items() if backoff.backed_off(g, now)}
    verdict = plan(request, pools, snapshot, cluster.pods, booked, backed)

    if cls == CHECK_CAPACITY:
        if verdict.fits:
            pick.writes.append(_write(after, PROVISIONED, "True", C.R_CAPACITY_FOUND, C.MSG_CAPACITY_FOUND,
                                      now, verdict.line(key)))
        elif params.no_retry:
            pick.writes.append(_write(after, FAILED, "True", C.R_NOT_FOUND, C.MSG_NOT_FOUND_NO_RETRY, now,
                                      verdict.line(key) + " (noRetry: Failed)"))
        else:
            pick.writes.append(_write(after, PROVISIONED, "False", C.R_NOT_FOUND, C.MSG_NOT_FOUND, now,
                                      verdict.line(key)))
        return pick

    if not verdict.fits:
        pick.writes.append(_write(after, PROVISIONED, "False", C.R_NOT_FOUND, C.MSG_NOT_FOUND, now,
                                  verdict.line(key), apply=True))
        return pick
    if verdict.nodes_to_create == 0:
        pick.writes.append(_write(after, PROVISIONED, "True", C.R_CAPACITY_FOUND, C.MSG_CAPACITY_FOUND, now,
                                  verdict.line(key), apply=True, details=_details(verdict)))
        return pick
    stockout = params.stockout_seconds if params.stockout_seconds is not None else opts.stockout_seconds
    if stockout is not None and _age(pr, now) < stockout:
        # A real IncreaseSize error would also back the node group off (5m); an injected stock-out
        # refuses this request only, so that one scenario's fault does not slow the next.
        left = "" if stockout == P.FOREVER else f", back in {stockout - _age(pr, now):.0f}s"
        pick.why = (f"INJECTED stock-out: the cloud refused {verdict.nodes_to_create} node(s) of {verdict.pool}"
                    f"{left}")
        pick.writes.append(_write(after, PROVISIONED, "False", C.R_NOT_FOUND, C.MSG_NOT_FOUND, now,
                                  verdict.line(key) + f"; {pick.why}", apply=True))
        return pick
    pool = next(p for p in pools if p.name == verdict.pool)
    boot = params.boot_seconds if params.boot_seconds is not None else (
        opts.boot_seconds if opts.boot_seconds is not None else pool.boot_seconds)
    domains = tuple(verdict.new_node_domains) + (verdict.domain,) * (verdict.nodes_to_create - len(verdict.new_node_domains))
    boots = vm.boots_at(now, boot)
    boot_note = "" if boots is None else (" (their VMs never boot)" if boot == P.FOREVER else f" (booting {boot:.0f}s)")
    pick.scale_up = ScaleUp(
        verdict.pool, verdict.nodes_to_create, domains, boots,
        provisioned=_write(after, PROVISIONED, "True", C.R_CAPACITY_PROVISIONED, C.MSG_CAPACITY_FOUND, now,
                           f"provreq {key}: Provisioned=True (CapacityIsProvisioned) as soon as the nodes are requested"
                           f"{boot_note}", apply=True, details=_details(verdict)),
        refused=_write(after, PROVISIONED, "False", C.R_NOT_FOUND, C.MSG_NOT_FOUND, now,
                       f"provreq {key}: the scale-up failed; nodes rolled back", apply=True),
        why=verdict.line(key))
    return pick


def _details(verdict: Verdict) -> dict | None:
    return {DOMAIN_DETAIL: verdict.domain} if verdict.domain else None


def _domain_details(request, mine: list[dict], pools: list[Pool]) -> dict | None:
    if not request.topology:
        return None
    doms = set()
    for n in mine:
        for p in pools:
            if p.topology_label and p.topology_label in (meta(n).get("labels") or {}):
                doms.add(meta(n)["labels"][p.topology_label])
    return {DOMAIN_DETAIL: doms.pop()} if len(doms) == 1 else None


def next_wait(plan_: LoopPlan, scaled_down: bool, opts: Options) -> float:
    """Seconds until the next loop (loop/trigger.go): none after a loop that processed a request or
    scaled down; otherwise the scan interval.  A new request does not wake an idle loop."""
    return 0.0 if plan_.pick is not None or scaled_down else opts.scan_interval
