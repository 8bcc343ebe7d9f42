"""One loop of the fake autoscaler, decided in pure code: what a RunOnce of the real Cluster
Autoscaler 1.36.1 does with ProvisioningRequests (core/static_autoscaler.go), at demo timescales.

    1. refresh (processors/provreq/processor.go): end bookings (BookingExpired), fail requests
       never provisioned for too long (Failed/Expired), at most 20 updates a loop; then delete the
       requests whose Provisioned or Failed condition last changed longer ago than the terminal TTL
       (DeleteOldProvReqs: 7 days in the real one);
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
from typing import Any, Callable

from k8s import provreq as provreqs_
from k8s.duration import FOREVER
from k8s.keys import (ACCEPTED, BATCH_ANNOTATION, BEST_EFFORT_ATOMIC, BOOKING_EXPIRED, CAPACITY_REVOKED,
                           CHECK_CAPACITY, DOMAIN_DETAIL, FAILED, PARAM_PROCESSOR_INSTANCE, PROVISIONED,
                           PROVREQ_UID_ANNOTATION)
from k8s.objects import (annotations, condition, created_at, deleting, is_true, meta, name_of, spec, status,
                              transition_time, uid as uid_of)

from . import backoff, booking, nodes as vm
from . import conditions as C
from . import params as P
from .planner import Verdict, plan
from k8s.pools import Pool
from .request import Request, RequestError, request_from_objects, supported


def setting(default, help: str, real: str = "", metavar: str = "DURATION", never: str = "", off: str = "") -> Any:
    """A setting of the fake autoscaler, declared once: its default, what it does and the real autoscaler's
    value.  `tau-demo fake-ca` makes one flag of each (--<name>: a duration, `never` the word that means
    forever; a bool is --<name>/--<off>), so flag, option and field share one name and one default."""
    return field(default=default, metadata={"help": help, "real": real, "metavar": metavar, "never": never,
                                            "off": off})


@dataclass(frozen=True)
class Options:
    """How the fake autoscaler runs: the real Cluster Autoscaler's timeline at demo timescales, and the faults
    it can inject.  Durations in seconds; None where the default comes from elsewhere (the pool, the request)."""
    scan_interval: float = setting(1.0, "loops run this far apart when the last one processed no request",
                                   real="10s, --scan-interval")
    booking: float = setting(60.0, "how long Provisioned capacity stays booked (per request: "
                                   "parameters.fakeCABookingSeconds)", real="10m, hardcoded")
    initial_backoff: float = setting(5.0, "retry time of a request after CapacityIsNotFound, doubling at each retry",
                                     real="1m, --provisioning-request-initial-backoff-time")
    max_backoff: float = setting(20.0, "cap of that retry time", real="10m, --provisioning-request-max-backoff-time")
    max_node_provision_time: float = setting(
        20.0, "nodes not Ready this long after creation are removed and their pool backs off",
        real="15m, --max-node-provision-time")
    initial_node_group_backoff: float = setting(
        60.0, "a pool whose scale-up failed takes no scale-ups this long, doubling per failure",
        real="5m, --initial-node-group-backoff-duration")
    max_node_group_backoff: float = setting(300.0, "cap of that backoff", real="30m, --max-node-group-backoff-duration")
    scale_down_unneeded: float = setting(10.0, "delete a node after it has been unneeded this long",
                                         real="10m, --scale-down-unneeded-time")
    scale_down_delay_after_add: float = setting(
        0.0, "no deletion starts until this long after the last scale-up (the unneeded timers still run); the "
             "fleet runs the fake with 20s, as `tau-demo real-ca` runs the real one",
        real="10m, --scale-down-delay-after-add")
    node_delete_delay_after_taint: float = setting(
        5.0, "a node to delete is first tainted ToBeDeletedByClusterAutoscaler and deleted this much later",
        real="5s, --node-delete-delay-after-taint")
    expiry: float = setting(7 * 24 * 3600.0, "Failed/Expired when not provisioned this long after creation",
                            real="7 days, hardcoded")
    boot: float | None = setting(
        None, "how long every new node stays NotReady while its VM boots [default: the pool's bootSeconds] (per "
              "request: parameters.fakeCABootSeconds).  The kwok provider's nodes are Ready at once; a real cloud's "
              "VMs boot after Provisioned=True", metavar="DURATION|never", never="never")
    booking_consumed: bool = setting(
        True, "a booking ends once the request's consuming pods are scheduled (CA 1.37, CapacityBookingConsumed); "
              "--no-booking-consumed: only when --booking has passed, as 1.36.1 does (the fleet runs the fake so, "
              "with --booking 10m, beside the real 1.36.1)",
        real="1.36.1: only after its 10m; 1.37: CapacityBookingConsumed", off="no-booking-consumed")
    honor_valid_until: bool = setting(
        False, "DIFFERS FROM THE REAL CA when on: parameters.ValidUntilSeconds bounds the wait with Failed=True",
        real="ValidUntilSeconds is never read", off="ignore-valid-until")
    stockout: float | None = setting(
        None, "INJECTED fault: the cloud refuses scale-ups of requests younger than DURATION: CapacityIsNotFound, "
              "retried (a real IncreaseSize error would also back the pool off) (per request: "
              "parameters.fakeCAStockout=true|SECONDS)", metavar="DURATION|forever", never="forever")
    revoke_after: float | None = setting(
        None, "INJECTED fault: CapacityRevoked=True this long after Provisioned (per request: "
              "parameters.fakeCARevokeAfterSeconds; before provisioning: parameters.fakeCARevokeBeforeProvisionedSeconds)",
        real="never writes CapacityRevoked")
    terminal_ttl: float = setting(
        7 * 24 * 3600.0, "delete a request this long after its Provisioned or Failed condition last changed, whatever "
                         "its status (DeleteOldProvReqs; per request: parameters.fakeCATTLSeconds)",
        real="7 days, hardcoded")
    pace: bool = setting(
        True, "a loop that takes up a request lasts at least as long as the real CA 1.36.1's loop measured on this "
              "machine (fake_ca/pace.MODEL: its loop time fitted to the nodes, pods and pending requests it looks at); "
              "--no-pace: as fast as the fake's own work, several times faster than the real one at fleet scale",
        real="its own loop's cost", off="no-pace")
    max_refresh_updates: int = 20               # real: 20 updates a loop (no flag)

    @property
    def retry(self) -> backoff.RetryPolicy:
        return backoff.RetryPolicy(self.initial_backoff, self.max_backoff)

    @property
    def groups(self) -> backoff.GroupPolicy:
        return backoff.GroupPolicy(self.initial_node_group_backoff, self.max_node_group_backoff)


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
    pool: Pool
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


@dataclass(frozen=True)
class Delete:
    """Delete one request (DeleteOldProvReqs), only that incarnation (its uid)."""
    provreq: dict
    why: str


@dataclass
class LoopPlan:
    refresh: list[Write]
    failed: list[Write]                  # failed by the injector on its way (missing templates, bad parameters)
    timed_out: list[vm.TimedOut]
    pick: Pick | None
    memory: Memory
    notes: list[str] = field(default_factory=list)      # decisions worth a log line that change nothing
    deletes: list[Delete] = field(default_factory=list)  # requests past their terminal TTL, deleted after refresh


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
        return _write(pr, CAPACITY_REVOKED, "True", C.Reason.REVOKED, C.MSG_REVOKED, now,
                      f"provreq {key}: INJECTED fault: revoking capacity {held:.0f}s after provisioning "
                      "(the real autoscaler never writes CapacityRevoked)")
    if is_true(pr, BOOKING_EXPIRED):
        return None
    total = booking.total_pods(pr)
    if opts.booking_consumed and total and booking.consuming_pods_scheduled(pr, pods) >= total:
        return _write(pr, BOOKING_EXPIRED, "True", C.Reason.BOOKING_CONSUMED, C.MSG_BOOKING_CONSUMED, now,
                      f"provreq {key}: all {total} pod(s) scheduled: booking consumed (CA 1.37)")
    booked = params.booking if params.booking is not None else opts.booking
    if held >= booked:
        return _write(pr, BOOKING_EXPIRED, "True", C.Reason.RESERVATION_EXPIRED, C.MSG_RESERVATION_EXPIRED, now,
                      f"provreq {key}: booking of {booked:.0f}s expired")
    return None


def _refresh_waiting(pr: dict, params: P.Params, now: datetime, opts: Options) -> Write | None:
    key = _key(pr)
    age = _age(pr, now)
    if age >= opts.expiry:
        return _write(pr, FAILED, "True", C.Reason.EXPIRED, C.MSG_EXPIRED, now,
                      f"provreq {key}: not provisioned {age:.0f}s after creation: expired")
    revoke = params.revoke_unprovisioned
    if revoke is not None and not is_true(pr, CAPACITY_REVOKED) and age >= revoke:
        return _write(pr, CAPACITY_REVOKED, "True", C.Reason.REVOKED, C.MSG_REVOKED, now,
                      f"provreq {key}: INJECTED fault: revoking capacity {age:.0f}s after creation, never provisioned "
                      "(the real autoscaler never writes CapacityRevoked)")
    if opts.honor_valid_until or params.honor_valid_until:
        if params.valid_until_note:
            return _write(pr, FAILED, "True", C.Reason.FAILED_TO_CREATE_PODS, f"invalid parameters: {params.valid_until_note}",
                          now, f"provreq {key}: {params.valid_until_note} (--honor-valid-until is on)")
        if params.valid_until is not None and age >= params.valid_until:
            return _write(pr, FAILED, "True", C.Reason.VALID_UNTIL_EXPIRED,
                          f"capacity not provisioned within ValidUntilSeconds={params.valid_until:.0f} "
                          "(honoured by fake-ca --honor-valid-until; the real autoscaler ignores it)", now,
                          f"provreq {key}: ValidUntilSeconds={params.valid_until:.0f} passed without capacity: "
                          "Failed (--honor-valid-until; the real Cluster Autoscaler ignores ValidUntilSeconds)")
    return None


def old_requests(provreqs: list[dict], now: datetime, opts: Options) -> list[Delete]:
    """DeleteOldProvReqs: every request, of any class, whose Provisioned or Failed condition (whatever its
    status) last changed longer ago than the terminal TTL (the request's fakeCATTLSeconds, else --terminal-ttl)."""
    out = []
    for pr in ordered(provreqs):
        try:
            ttl = P.parse(pr).ttl
        except P.BadParameter:
            ttl = None
        ttl = opts.terminal_ttl if ttl is None else ttl
        for ctype in (PROVISIONED, FAILED):
            changed = transition_time(pr, ctype)
            if changed is not None and (now - changed).total_seconds() > ttl:
                c = condition(pr, ctype) or {}
                out.append(Delete(pr, f"provreq {_key(pr)}: {ctype}={c.get('status')} since {c.get('lastTransitionTime')}, "
                                      f"more than {ttl:.0f}s ago: deleting it (DeleteOldProvReqs)"))
                break
    return out


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
    deletes = old_requests(cluster.provreqs, now, opts)
    gone_now = {_key(d.provreq) for d in deletes}
    refresh_writes = [w for w in refresh_writes if _key(w.provreq) not in gone_now]
    refreshed = {_key(w.provreq) for w in refresh_writes} | gone_now
    timed_out = vm.timed_out(cluster.nodes, now, opts.max_node_provision_time)
    memory = register_failures(memory, [(t.pool, C.ERR_TIMEOUT, t.error_message) for t in timed_out], now, opts)
    gone = {n for t in timed_out for n in t.nodes}
    nodes = [n for n in cluster.nodes if meta(n).get("name") not in gone]
    retry = dict(memory.retry)
    failed: list[Write] = []
    pick = None
    live = {meta(p).get("uid") for p in cluster.provreqs}
    for pr in ordered(cluster.provreqs):
        if not supported(pr):
            instance = (spec(pr).get("parameters") or {}).get(PARAM_PROCESSOR_INSTANCE) \
                if isinstance(spec(pr).get("parameters"), dict) else None
            why = (f"parameters.{PARAM_PROCESSOR_INSTANCE}={instance} names another autoscaler instance" if instance
                   else f"class {spec(pr).get('provisioningClassName')} is not handled by this autoscaler")
            notes.append(f"provreq {_key(pr)}: {why}; left untouched (rv {meta(pr).get('resourceVersion')})")
            continue
        if _key(pr) in refreshed or is_true(pr, CAPACITY_REVOKED):      # revoked: the fake's own end
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
            failed.append(_write(pr, FAILED, "True", C.Reason.FAILED_TO_CREATE_PODS, f"invalid parameters: {e}", now,
                                 f"provreq {_key(pr)}: invalid: {e}"))
            continue
        try:
            request = request_from_objects(pr, _templates_of(pr, cluster.templates))
        except RequestError as e:
            failed.append(_write(pr, FAILED, "True", e.reason, e.message, now, f"provreq {_key(pr)}: {e.message}"))
            continue
        attempt = provreqs_.attempt(pr, None) or 1          # Kueue's getAttempt: 1 without a number
        if attempt <= params.fail_attempts:
            pick = _fail_attempt(pr, attempt, params, now)
        else:
            pick = _process(pr, request, params, cluster, nodes, pools, memory, now, opts)
        break
    memory = Memory({u: r for u, r in retry.items() if u in live}, memory.groups)
    return LoopPlan(refresh_writes, failed, timed_out, pick, memory, notes, deletes)


def _templates_of(pr: dict, templates: dict[tuple[str, str], dict]) -> dict[str, dict]:
    ns = meta(pr).get("namespace") or "default"
    return {name: t for (tns, name), t in templates.items() if tns == ns}


def nodes_of(uid: str, nodes: list[dict]) -> list[dict]:
    return [n for n in nodes if annotations(n).get(PROVREQ_UID_ANNOTATION) == uid and not deleting(n)]


def _batch_size(node: dict) -> int:
    """How many nodes the scale-up that made `node` had; 0 (unknown: roll it back) if the annotation is
    missing or was edited into something that is no count."""
    text = str(annotations(node).get(BATCH_ANNOTATION))        # "None" when it is missing: no count
    return int(text) if text.isdigit() else 0


def _accepted(pr: dict, now: datetime) -> tuple[Write, dict]:
    """The injector's Accepted write, and the request as it reads once accepted."""
    accepted = _write(pr, ACCEPTED, "True", C.Reason.ACCEPTED, C.MSG_ACCEPTED, now, f"provreq {_key(pr)}: accepted")
    return accepted, {**pr, "status": {**status(pr), "conditions": accepted.conditions}}


def _fail_attempt(pr: dict, attempt: int, params: P.Params, now: datetime) -> Pick:
    """INJECTED: attempt `attempt` of the Workload's requests (the number at the end of Kueue's name) fails, as the
    real check-capacity fails a noRetry request: Accepted, then Failed."""
    accepted, after = _accepted(pr, now)
    failed = _write(after, FAILED, "True", C.Reason.ATTEMPT_FAILED,
                    C.MSG_ATTEMPT_FAILED.format(attempt=attempt, of=params.fail_attempts), now,
                    f"provreq {_key(pr)}: INJECTED fault: attempt {attempt} fails (fakeCAFailAttempts="
                    f"{params.fail_attempts}; the real autoscaler fails best-effort-atomic requests only for missing "
                    "pod templates or after 7 days)")
    return Pick(_key(pr), uid_of(pr), [accepted, failed])


def _process(pr: dict, request, params: P.Params, cluster: Cluster, nodes: list[dict], pools: list[Pool],
             memory: Memory, now: datetime, opts: Options) -> Pick:
    key, uid = _key(pr), uid_of(pr)
    cls = spec(pr).get("provisioningClassName")
    accepted, after = _accepted(pr, now)
    pick = Pick(key, uid, [accepted])
    apply = cls == BEST_EFFORT_ATOMIC

    mine = nodes_of(uid, nodes)
    if mine:                                    # a scale-up of ours was interrupted (restart, kill -9)
        want = max(_batch_size(n) for n in mine)
        names = sorted(meta(n)["name"] for n in mine)
        if want and len(mine) >= want:
            details = _domain_details(request, mine, pools)
            pick.writes.append(_write(after, PROVISIONED, "True", C.Reason.CAPACITY_PROVISIONED, C.MSG_CAPACITY_FOUND,
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
            pick.writes.append(_write(after, PROVISIONED, "True", C.Reason.CAPACITY_FOUND, C.MSG_CAPACITY_FOUND,
                                      now, verdict.line(key)))
        elif params.no_retry:
            pick.writes.append(_write(after, FAILED, "True", C.Reason.NOT_FOUND, C.MSG_NOT_FOUND_NO_RETRY, now,
                                      verdict.line(key) + " (noRetry: Failed)"))
        else:
            pick.writes.append(_write(after, PROVISIONED, "False", C.Reason.NOT_FOUND, C.MSG_NOT_FOUND, now,
                                      verdict.line(key)))
        return pick

    if not verdict.fits:
        pick.writes.append(_write(after, PROVISIONED, "False", C.Reason.NOT_FOUND, C.MSG_NOT_FOUND, now,
                                  verdict.line(key), apply=True))
        return pick
    if verdict.nodes_to_create == 0:
        pick.writes.append(_write(after, PROVISIONED, "True", C.Reason.CAPACITY_FOUND, C.MSG_CAPACITY_FOUND, now,
                                  verdict.line(key), apply=True, details=_details(verdict)))
        return pick
    stockout = params.stockout if params.stockout is not None else opts.stockout
    if stockout is not None and _age(pr, now) < stockout:
        # A real IncreaseSize error would also back the node group off (5m); an injected stock-out
        # refuses this request only, so that one scenario's fault does not slow the next.
        left = "" if stockout == FOREVER else f", back in {stockout - _age(pr, now):.0f}s"
        pick.why = (f"INJECTED stock-out: the cloud refused {verdict.nodes_to_create} node(s) of {verdict.pool.name}"
                    f"{left}")
        pick.writes.append(_write(after, PROVISIONED, "False", C.Reason.NOT_FOUND, C.MSG_NOT_FOUND, now,
                                  verdict.line(key) + f"; {pick.why}", apply=True))
        return pick
    pool = verdict.pool
    boot = params.boot if params.boot is not None else (
        opts.boot if opts.boot is not None else pool.boot_seconds)
    domains = tuple(verdict.new_node_domains) + (verdict.domain,) * (verdict.nodes_to_create - len(verdict.new_node_domains))
    boots = vm.boots_at(now, boot)
    boot_note = "" if boots is None else (" (their VMs never boot)" if boot == FOREVER else f" (booting {boot:.0f}s)")
    pick.scale_up = ScaleUp(
        verdict.pool, verdict.nodes_to_create, domains, boots,
        provisioned=_write(after, PROVISIONED, "True", C.Reason.CAPACITY_PROVISIONED, C.MSG_CAPACITY_FOUND, now,
                           f"provreq {key}: Provisioned=True (CapacityIsProvisioned) as soon as the nodes are requested"
                           f"{boot_note}", apply=True, details=_details(verdict)),
        refused=_write(after, PROVISIONED, "False", C.Reason.NOT_FOUND, C.MSG_NOT_FOUND, now,
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
