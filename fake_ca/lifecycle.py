"""What the fake autoscaler does next with one ProvisioningRequest: a pure function of cluster state.

Everything it needs is read from the cluster (conditions and their timestamps, nodes that
carry the request's UID), so a controller killed at any point and restarted takes the same
decision again: no duplicate nodes, no leaked nodes, no lost condition.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime

from demo.k8s.keys import (ACCEPTED, BATCH_ANNOTATION, BOOKING_EXPIRED, CAPACITY_REVOKED, CONSUME_PROVREQ_ANNOTATION,
                           DOMAIN_DETAIL, FAILED, PARAM_DELAY, PARAM_HONOR_VALID_UNTIL, PARAM_REVOKE_AFTER,
                           PARAM_STOCKOUT, PARAM_VALID_UNTIL, PROVISIONED, PROVREQ_UID_ANNOTATION)
from demo.k8s.objects import annotations, condition, created_at, is_true

from . import conditions as C
from . import planner
from .pools import Pool, pool_of_node
from .request import RequestError, request_from_objects

P_VALID_UNTIL, P_DELAY, P_STOCKOUT, P_REVOKE_AFTER, P_HONOR_VALID_UNTIL = (
    PARAM_VALID_UNTIL, PARAM_DELAY, PARAM_STOCKOUT, PARAM_REVOKE_AFTER, PARAM_HONOR_VALID_UNTIL)


@dataclass(frozen=True)
class Options:
    booking_seconds: float = 60.0            # real CA: 10m, hardcoded
    initial_backoff: float = 5.0             # real CA: 1m  (--provisioning-request-initial-backoff-time)
    max_backoff: float = 20.0                # real CA: 10m (--provisioning-request-max-backoff-time)
    expiry_seconds: float = 7 * 24 * 3600    # real CA: 7 days, then Failed/Expired
    honor_valid_until: bool = False          # real CA: ignores ValidUntilSeconds
    delay_seconds: float = 0.0               # global injected provisioning delay
    stockout: bool = False                   # global injected stock-out
    revoke_after: float | None = None        # global injected revocation


@dataclass
class Step:
    action: str                  # none | wait | conditions | create-nodes | rollback
    why: str
    conditions: list[dict] | None = None
    class_details: dict | None = None
    verdict: planner.Verdict | None = None
    rollback: list[str] = field(default_factory=list)
    after: float | None = None


class BadParameter(ValueError):
    pass


def _param_seconds(params: dict, key: str) -> float | None:
    raw = params.get(key)
    if raw is None:
        return None
    try:
        v = float(raw)
    except (TypeError, ValueError):
        raise BadParameter(f"parameters.{key}={raw!r} is not a number of seconds") from None
    if v < 0 or v > 10 * 365 * 24 * 3600:
        raise BadParameter(f"parameters.{key}={raw!r} is out of range")
    return v


def _age(provreq: dict, now: datetime) -> float:
    created = created_at(provreq)
    return 0.0 if created is None else (now - created).total_seconds()


def consuming_pods_scheduled(provreq: dict, pods: list[dict]) -> int:
    """Scheduled pods that consume this request (CA 1.37 ends the booking when they reach its count)."""
    md = provreq["metadata"]
    return sum(1 for p in pods
               if p["metadata"].get("namespace") == md["namespace"]
               and (p["metadata"].get("annotations") or {}).get(CONSUME_PROVREQ_ANNOTATION) == md["name"]
               and (p.get("spec") or {}).get("nodeName")
               and not p["metadata"].get("deletionTimestamp"))


def nodes_of(uid: str, nodes: list[dict]) -> list[dict]:
    return [n for n in nodes if (n.get("metadata", {}).get("annotations") or {}).get(PROVREQ_UID_ANNOTATION) == uid
            and not n["metadata"].get("deletionTimestamp")]


def step(provreq: dict, templates: dict[str, dict], nodes: list[dict], pods: list[dict], pools: list[Pool],
         booked: dict[str, str], now: datetime, opts: Options, backoff_seconds: float) -> Step:
    md = provreq["metadata"]
    key = f"{md['namespace']}/{md['name']}"
    uid = md["uid"]
    conds = list((provreq.get("status") or {}).get("conditions") or [])
    gen = md.get("generation")
    params = (provreq.get("spec") or {}).get("parameters") or {}
    try:
        revoke_after = _param_seconds(params, P_REVOKE_AFTER)
        delay = _param_seconds(params, P_DELAY)
        valid_until = _param_seconds(params, P_VALID_UNTIL)
    except BadParameter as e:
        if is_true(provreq, FAILED):
            return Step("none", "failed")
        return Step("conditions", f"provreq {key}: invalid: {e}",
                    C.set_condition(conds, FAILED, "True", C.R_FAILED_TO_CREATE_PODS, f"invalid parameters: {e}",
                                    now, gen))
    if revoke_after is None:
        revoke_after = opts.revoke_after
    delay = opts.delay_seconds if delay is None else delay
    stockout = opts.stockout or str(params.get(P_STOCKOUT, "")).lower() == "true"
    honor_valid_until = opts.honor_valid_until or str(params.get(P_HONOR_VALID_UNTIL, "")).lower() == "true"

    if is_true(provreq, FAILED):
        return Step("none", "failed: terminal")

    # ---- after provisioning: booking window, injected revocation
    if is_true(provreq, PROVISIONED):
        prov_at = C.ltt(provreq, PROVISIONED) or now
        held = (now - prov_at).total_seconds()
        waits = []
        if revoke_after is not None and not is_true(provreq, CAPACITY_REVOKED):
            if held >= revoke_after:
                return Step("conditions", f"provreq {key}: INJECTED fault: revoking capacity {held:.0f}s after "
                                          "provisioning (the real autoscaler never writes CapacityRevoked)",
                            C.set_condition(conds, CAPACITY_REVOKED, "True", C.R_REVOKED,
                                            "capacity revoked by fault injection (fake-ca)", now, gen))
            waits.append(revoke_after - held)
        if not is_true(provreq, BOOKING_EXPIRED):
            total = sum(int((ps or {}).get("count") or 0) for ps in (provreq.get("spec") or {}).get("podSets") or [])
            consumed = consuming_pods_scheduled(provreq, pods)
            if total and consumed >= total:
                return Step("conditions", f"provreq {key}: all {total} pod(s) scheduled: booking consumed",
                            C.set_condition(conds, BOOKING_EXPIRED, "True", C.R_BOOKING_CONSUMED,
                                            C.MSG_BOOKING_CONSUMED, now, gen))
            if held >= opts.booking_seconds:
                return Step("conditions", f"provreq {key}: booking of {opts.booking_seconds:.0f}s expired",
                            C.set_condition(conds, BOOKING_EXPIRED, "True", C.R_RESERVATION_EXPIRED,
                                            C.MSG_RESERVATION_EXPIRED, now, gen))
            waits.append(opts.booking_seconds - held)
        return Step("wait", "booked", after=min(waits)) if waits else Step("none", "booking over")

    # ---- not provisioned yet
    age = _age(provreq, now)
    if age >= opts.expiry_seconds:
        return Step("conditions", f"provreq {key}: not provisioned {age:.0f}s after creation: expired",
                    C.set_condition(conds, FAILED, "True", C.R_EXPIRED, C.MSG_EXPIRED, now, gen))
    if honor_valid_until and valid_until is not None and age >= valid_until:
        return Step("conditions",
                    f"provreq {key}: ValidUntilSeconds={valid_until:.0f} passed without capacity: Failed "
                    "(--honor-valid-until; the real Cluster Autoscaler ignores ValidUntilSeconds)",
                    C.set_condition(conds, FAILED, "True", C.R_VALID_UNTIL_EXPIRED,
                                    f"capacity not provisioned within ValidUntilSeconds={valid_until:.0f} "
                                    "(honoured by fake-ca --honor-valid-until; the real autoscaler ignores it)",
                                    now, gen))

    try:
        request = request_from_objects(provreq, templates)
    except RequestError as e:
        return Step("conditions", f"provreq {key}: {e}",
                    C.set_condition(conds, FAILED, "True", e.reason, str(e), now, gen))

    accepted = is_true(provreq, ACCEPTED)
    if not accepted:
        conds = C.set_condition(conds, ACCEPTED, "True", C.R_ACCEPTED, C.MSG_ACCEPTED, now, gen)

    # nodes already created for this request: a previous run was interrupted
    mine = nodes_of(uid, nodes)
    if mine:
        want = max(int((n["metadata"].get("annotations") or {}).get(BATCH_ANNOTATION, "0") or 0) for n in mine)
        names = sorted(n["metadata"]["name"] for n in mine)
        if want and len(mine) >= want:
            details = {}
            doms = {v for n in mine for k, v in (n["metadata"].get("labels") or {}).items()
                    if k == _topology_label(pools, n)}
            if request.topology and len(doms) == 1:
                details[DOMAIN_DETAIL] = doms.pop()
            return Step("conditions", f"provreq {key}: all {want} node(s) exist ({', '.join(names)}): provisioned",
                        C.set_condition(conds, PROVISIONED, "True", C.R_CAPACITY_PROVISIONED, C.MSG_CAPACITY_FOUND,
                                        now, gen), class_details=details or None)
        return Step("rollback", f"provreq {key}: found {len(mine)} of {want} node(s) from an interrupted scale-up; "
                                f"deleting {', '.join(names)} (atomic) and planning again", rollback=names)

    # wake up exactly when ValidUntilSeconds runs out, whatever else we are waiting for
    def until(after: float) -> float:
        if honor_valid_until and valid_until is not None:
            return min(after, max(valid_until - age, 0.05))
        return after

    # injected delay: capacity takes this long to appear
    if delay and age < delay:
        if not accepted:
            return Step("conditions", f"provreq {key}: accepted; INJECTED provisioning delay {delay:.0f}s", conds,
                        after=until(delay - age))
        return Step("wait", f"injected delay: {delay - age:.0f}s left", after=until(delay - age))

    # backoff after CapacityIsNotFound (in memory, like the real CA)
    prov = condition(provreq, PROVISIONED)
    if prov and prov.get("status") == "False" and accepted:
        since = (now - (C.ltt(provreq, PROVISIONED) or now)).total_seconds()
        if since < backoff_seconds:
            return Step("wait", f"backoff {backoff_seconds - since:.0f}s", after=until(backoff_seconds - since))

    bookings = {n: u for n, u in booked.items() if u != uid}
    verdict = planner.plan(request, pools, nodes, pods, bookings)
    if stockout and verdict.fits and verdict.nodes_to_create:
        verdict = _stockout(verdict)
    if not verdict.fits:
        conds = C.set_condition(conds, ACCEPTED, "True", C.R_ACCEPTED, C.MSG_ACCEPTED, now, gen)
        return Step("conditions", verdict.line(key) + ("" if not stockout else " (INJECTED stock-out)"),
                    C.set_condition(conds, PROVISIONED, "False", C.R_NOT_FOUND, C.MSG_NOT_FOUND, now, gen),
                    verdict=verdict, after=until(3600.0) if honor_valid_until and valid_until is not None else None)
    if verdict.nodes_to_create == 0:
        return Step("conditions", verdict.line(key),
                    C.set_condition(conds, PROVISIONED, "True", C.R_CAPACITY_FOUND, C.MSG_CAPACITY_FOUND, now, gen),
                    verdict=verdict)
    return Step("create-nodes", verdict.line(key), conds, verdict=verdict,
                class_details={DOMAIN_DETAIL: verdict.domain} if verdict.domain else None)


def _topology_label(pools: list[Pool], node: dict) -> str | None:
    p = pool_of_node(node, pools)
    return p.topology_label if p else None


def _stockout(v: planner.Verdict) -> planner.Verdict:
    return replace(v, fits=False, status_reason=C.R_NOT_FOUND,
                               reason="injected stock-out: the cloud has no capacity for this pool")


def backoff_for(failures: int, opts: Options) -> float:
    """1m, 2m, 4m, ... capped (scaled to the demo's flags)."""
    if failures <= 0:
        return 0.0
    return min(opts.initial_backoff * (2 ** (failures - 1)), opts.max_backoff)


def booked_nodes(nodes: list[dict], provreqs_by_uid: dict[str, dict]) -> dict[str, str]:
    """Node name -> uid of the ProvisioningRequest whose booking holds it (nodes this fake made for a
    request that is still Provisioned and neither Failed nor BookingExpired)."""
    out = {}
    for n in nodes:
        uid = annotations(n).get(PROVREQ_UID_ANNOTATION)
        if uid and uid in provreqs_by_uid and C.booked(provreqs_by_uid[uid]):
            out[n["metadata"]["name"]] = uid
    return out


def _provisioned(conditions: list[dict]) -> dict | None:
    return next((c for c in conditions if c.get("type") == PROVISIONED), None)


def not_found(conditions: list[dict]) -> bool:
    """Whether conditions about to be written report CapacityIsNotFound (which advances the backoff)."""
    prov = _provisioned(conditions)
    return bool(prov and prov["status"] == "False" and prov["reason"] == C.R_NOT_FOUND)


def after_scale_up(step: "Step", created: bool, now: datetime, generation: int | None) -> list[dict]:
    """The conditions to write once the node creates of a create-nodes step are done: Provisioned=True
    (CapacityIsProvisioned) when every node was made, else CapacityIsNotFound (the nodes were rolled back)."""
    if created:
        return C.set_condition(step.conditions or [], PROVISIONED, "True", C.R_CAPACITY_PROVISIONED,
                               C.MSG_CAPACITY_FOUND, now, generation)
    return C.set_condition(step.conditions or [], PROVISIONED, "False", C.R_NOT_FOUND, C.MSG_NOT_FOUND, now, generation)


def status_body(provreq: dict, conditions: list[dict], details: dict | None) -> dict:
    """The ProvisioningRequest status to apply.  Server-side apply drops fields a manager stops sending,
    so provisioningClassDetails published earlier are sent again with every later condition write."""
    status: dict = {"conditions": conditions}
    keep = details or ((provreq.get("status") or {}).get("provisioningClassDetails") or None)
    if keep:
        status["provisioningClassDetails"] = keep
    return status


def next_look(step: "Step", written: list[dict], failures: int, opts: Options) -> float | None:
    """Seconds until this request wants another look, given the conditions just written."""
    prov = _provisioned(written)
    if prov and prov["status"] == "False":
        backoff = backoff_for(failures, opts)
        return min(backoff, step.after) if step.after is not None else backoff
    if step.action == "create-nodes":
        return opts.booking_seconds
    return step.after if step.after is not None else 0.1
