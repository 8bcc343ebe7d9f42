"""Gangs at scale: half a gang holds its GPUs only until waitForPodsReady's timeout.

A ProvisioningRequest books capacity, not placement: the kube-scheduler binds each pod to any node that fits, so
at scale a gang's pod can land on a node made for another gang, and the gang it was made for starts with one pod
short (docs/fleet.md, "Gangs at scale").  Here that happens to one gang, deterministically: while its two nodes boot,
another workload's 8-GPU pod is bound to one of them (as the kube-scheduler binds a pod that was pending first).
When the nodes are Ready, one pod of the gang runs on the other node and holds its 8 GPUs; the second pod fits
nowhere (the pool is at its maxNodes).  What bounds it is Kueue's waitForPodsReady, which the harness configures
(demo/cluster/kueue_manifests.py WAIT_FOR_PODS_READY: timeout 45s, requeuing base 5s, no limit):

* the admitted Workload's pods are not all Ready `timeout` after its Admitted transition, so Kueue evicts it
  (Evicted=True/PodsReadyTimeout);
* the Job is suspended: its running pod is deleted, the quota released, the ProvisioningRequest deleted; no GPU of
  the gang is held while it waits;
* after the requeuing backoff it is queued again and gets a new ProvisioningRequest, which the autoscaler cannot
  meet while the other pod holds the node (CapacityIsNotFound);
* once the other pod is gone the new request is provisioned and the whole gang starts together (PodsReady=True).

The cost: the gang's half-start is thrown away and it waits again behind the autoscaler.
"""

from __future__ import annotations

import time

from demo.cluster.kueue_manifests import WAIT_FOR_PODS_READY
from demo.jobs.render import new_name
from demo.timeline import svg
from fake_ca.conditions import Reason
from k8s import node as nodes_
from k8s import workload as workloads
from k8s.duration import parse_duration
from k8s.keys import (ADMITTED, EVICTED, GANG_OTHER_PREFIX, GPU, PODS_READY, PODS_READY_TIMEOUT, POD_SCHEDULED,
                      POD_UNSCHEDULABLE, PROVISIONED, PROVREQ_UID_ANNOTATION, REQUEUED, REQUEUED_BACKOFF_FINISHED)
from k8s.objects import Obj, annotations, condition, is_true, meta, status, transition_time, uid
from k8s.paths import shown
from k8s.resources import CLUSTER_QUEUE, POD
from k8s.tape import first

from ..kit import toolbox
from ..kit.harness import Context
from ..kit.recorder import Recorder
from ..kit.scenario import Scenario

TITLE = "Gangs at scale: half a gang holds its GPUs only until waitForPodsReady's timeout"
TIMEOUT = parse_duration(WAIT_FOR_PODS_READY["timeout"])                        # 45 s
BACKOFF = WAIT_FOR_PODS_READY["requeuingStrategy"]["backoffBaseSeconds"]        # 5 s: the first requeue's wait
TOLERANCE = 10.0     # s past the timeout: Kueue's timer fires on time; its status write and Admitted's whole seconds
RELEASED_WITHIN = 15.0   # s from the eviction until no pod of the gang exists and the quota is free
RUN = "300s"         # each pod runs this long: the half that started still runs when Kueue evicts
NEEDS_FAKE = ("it binds another pod to one of the gang's nodes while their VMs boot (the fake's bootSeconds) and "
              "reads the fake's CapacityIsNotFound: the real autoscaler's kwok nodes are Ready at once, so the "
              "kube-scheduler has bound the gang before another pod can be")


# ---------------------------------------------------------------------------- what is read (pure)

def holding(pods: list[Obj]) -> list[Obj]:
    """The pods that hold their GPUs: Running, not being deleted."""
    return [p for p in pods if status(p).get("phase") == "Running" and not meta(p).get("deletionTimestamp")]


def unschedulable(pod: Obj) -> bool:
    c = condition(pod, POD_SCHEDULED)
    return bool(c) and c.get("status") == "False" and c.get("reason") == POD_UNSCHEDULABLE


def half_started(pods: list[Obj]) -> bool:
    """One pod of the two runs (it holds its node's GPUs) and the other cannot be scheduled."""
    return len(pods) == 2 and len(holding(pods)) == 1 and any(unschedulable(p) for p in pods)


def gpus_reserved(cq: Obj | None) -> float:
    """The GPUs a ClusterQueue has reserved for its Workloads (status.flavorsReservation, every flavor)."""
    return sum(float(r.get("total") or 0) for f in status(cq).get("flavorsReservation") or []
               for r in f.get("resources") or [] if r.get("name") == GPU)


def made_for(snap, provreq: Obj) -> list[str]:
    """The nodes the fake autoscaler made for one request (its uid on them), by name."""
    return sorted(meta(n)["name"] for n in snap.nodes
                  if annotations(n).get(PROVREQ_UID_ANNOTATION) == uid(provreq) and nodes_.live(n))


def other_pod(name: str, namespace: str, node: str) -> Obj:
    """Another workload's pod that takes all 8 GPUs of `node`, bound to it (as the kube-scheduler binds a pod that
    was pending before the gang's): no Kueue queue, no ProvisioningRequest; it tolerates the booting node."""
    return POD.new(name, namespace,
                   spec={"nodeName": node, "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                         "tolerations": [{"operator": "Exists"}],
                         "containers": [{"name": "other", "image": "ghcr.io/example/other:latest",
                                         "resources": {"requests": {GPU: "8"}, "limits": {GPU: "8"}}}]})


def since(samples: list, t0: float) -> list:
    """The samples taken at or after t0."""
    return [(t, x) for t, x in list(samples) if t >= t0]


def _ts(wl: Obj | None, ctype: str) -> float | None:
    t = transition_time(wl, ctype)
    return t.timestamp() if t else None


# ---------------------------------------------------------------------------- the story

def run(ctx: Context) -> None:
    ctx.header(TITLE)
    name, other = ctx.new_name("job-gang"), new_name(GANG_OTHER_PREFIX.rstrip("-"))
    ns = ctx.slot.namespace
    log, log_path = ctx.event_log("half-gang")
    try:
        with Recorder(ctx, name, log) as rec, \
                toolbox.changes(ctx, CLUSTER_QUEUE, keep=lambda o: meta(o)["name"] == ctx.slot.cluster_queue) as cq:
            tell(ctx, rec, cq, name, other, ns)
    finally:
        ctx.k.delete(POD, other, ns)          # False when the story already removed it
        ctx.delete_job(name)
    ctx.step("The pool scales back to 0")
    ctx.wait_pool_empty(180)
    ctx.check(not ctx.pool_nodes(), "nothing left: the pool is empty")
    picture = svg.write(log_path, log_path.with_suffix(".svg"), TITLE)
    ctx.say(f"  timeline: {shown(picture)}")


def tell(ctx: Context, rec: Recorder, cq, name: str, other: str, ns: str) -> None:
    ctx.step(f"Submit a 2 × 8-GPU Job (waitForPodsReady: timeout {TIMEOUT:.0f}s, requeuing base {BACKOFF}s, no limit)")
    ctx.submit(name, "2x8", duration=RUN)
    ctx.wait(lambda: rec.ever(lambda s: workloads.admitted(s.workload)), 60, "Kueue to admit")

    def booking():
        s = rec.samples[-1][1]
        got = [(p, made_for(s, p)) for p in s.provreqs if is_true(p, PROVISIONED)]
        return next(((p, ns_) for p, ns_ in got if len(ns_) == 2), None)
    first_pr, booked = ctx.wait(booking, 30, "the two nodes made for the request")
    snap = rec.samples[-1][1]
    ctx.require(not any(nodes_.ready(n) for n in snap.nodes if meta(n)["name"] in booked),
                f"admitted; the autoscaler made 2 nodes for {meta(first_pr)['name']} ({', '.join(booked)}), "
                "still booting")

    ctx.step(f"While they boot, another workload's 8-GPU pod is bound to {booked[0]} (ProvisioningRequest books "
             "capacity, not placement)")
    ctx.k.create(POD, other_pod(other, ns, booked[0]), ns)
    ctx.say(f"  pod {ns}/{other} bound to {booked[0]}")

    ctx.step("The nodes boot: one pod of the gang runs and holds 8 GPUs; the other fits nowhere")
    half = ctx.wait(lambda: rec.first(lambda s: half_started(s.pods)), 90, "half the gang to start")
    s = rec.samples[-1][1]
    ctx.check(half_started(s.pods) and [p["spec"].get("nodeName") for p in holding(s.pods)] == [booked[1]],
              f"half the gang runs, on {booked[1]}; the other pod is Unschedulable (the pool is at its maxNodes)")

    ctx.step(f"Kueue's waitForPodsReady evicts the Workload {TIMEOUT:.0f}s after its admission")
    ctx.wait(lambda: rec.first(lambda s: workloads.evicted_for(s.workload, PODS_READY_TIMEOUT)), TIMEOUT + 60,
             "Kueue to evict the Workload (PodsReadyTimeout)")
    evicted_at = rec.first(lambda s: workloads.evicted(s.workload))
    before = [x for t, x in rec.samples if t < evicted_at and workloads.admitted(x.workload)][-1].workload
    wl = next(x.workload for t, x in rec.samples if t >= evicted_at)
    ev = workloads.evicted(wl)
    ctx.check(ev.get("reason") == PODS_READY_TIMEOUT, f"evicted: {ev.get('reason')}: {ev.get('message', '')}")
    admitted, evicted = _ts(before, ADMITTED), _ts(wl, EVICTED)
    held = None if admitted is None or evicted is None else evicted - admitted
    ctx.check(held is not None and TIMEOUT - 1 <= held <= TIMEOUT + TOLERANCE,
              f"evicted {held:.0f}s after its Admitted transition (the timeout {TIMEOUT:.0f}s, + at most "
              f"{TOLERANCE:.0f}s)" if held is not None else "the Admitted and Evicted transition times")
    ctx.check(not any(is_true(x.workload, PODS_READY) for t, x in rec.samples if t <= evicted_at),
              "PodsReady was never True before it: the gang never ran whole")

    ctx.step("The GPUs are released: the running half deleted, the quota and the request freed")

    def released(s) -> bool:
        return not s.pods and not workloads.holds_quota(s.workload) and not any(
            uid(p) == uid(first_pr) for p in s.provreqs)
    freed = ctx.wait(lambda: first(since(rec.samples, evicted_at), released), RELEASED_WITHIN + 30,
                     "the gang's pods, quota and request to go")
    ctx.check(freed - evicted_at <= RELEASED_WITHIN,
              f"no pod of the gang, no quota held and {meta(first_pr)['name']} deleted {freed - evicted_at:.1f}s after "
              f"the eviction (at most {RELEASED_WITHIN:.0f}s)")
    cq_free = ctx.wait(lambda: next((t for t, _typ, o in list(cq.changes) if t >= evicted_at and gpus_reserved(o) == 0),
                                    None), RELEASED_WITHIN + 30, "the ClusterQueue's GPU reservation to drop to 0")
    ctx.check(cq_free - evicted_at <= RELEASED_WITHIN,
              f"ClusterQueue {ctx.slot.cluster_queue} reserves 0 GPUs {cq_free - evicted_at:.1f}s after the eviction")

    ctx.step(f"Requeued after the backoff ({BACKOFF}s): a new request, which the pool cannot meet while "
             f"{booked[0]} is taken")

    def not_found():
        return next((p for p in rec.samples[-1][1].provreqs if uid(p) != uid(first_pr)
                     and (condition(p, PROVISIONED) or {}).get("reason") == Reason.NOT_FOUND), None)
    again = ctx.wait(not_found, 90, "a new request answered CapacityIsNotFound")
    requeued = next((c for t, x in rec.samples if t >= evicted_at and (c := condition(x.workload, REQUEUED))
                     and c.get("status") == "True"), None)
    back = _ts(rec.samples[-1][1].workload, REQUEUED)
    ctx.check(requeued is not None and requeued.get("reason") == REQUEUED_BACKOFF_FINISHED
              and back is not None and back - evicted >= BACKOFF - 1,
              f"Requeued=True/{(requeued or {}).get('reason')} {back - evicted:.0f}s after the eviction; "
              f"{meta(again)['name']} (a new uid): Provisioned=False/CapacityIsNotFound" if back and evicted
              else "Requeued=True after the backoff")
    window_start = time.time()
    ctx.wait(lambda: time.time() >= window_start + 5, 10, "a window of 5s")
    ctx.k.delete(POD, other, ns)
    left = time.time()
    ctx.check(not any(holding(x.pods) or workloads.admitted(x.workload) for t, x in rec.samples
                      if freed <= t <= left),
              f"from the release until the other pod left ({left - freed:.0f}s): no pod of the gang ran and it "
              "was not admitted")

    ctx.step(f"The other pod leaves ({other}): the new request is provisioned and the whole gang starts together")
    whole = ctx.wait(lambda: first(since(rec.samples, left), lambda s: workloads.admitted(s.workload)
                                   and is_true(s.workload, PODS_READY) and len(holding(s.pods)) == 2),
                     120, "the gang to run whole")
    s = rec.samples[-1][1]
    on = sorted({p["spec"].get("nodeName") for p in holding(s.pods)})
    ctx.check(len(on) == 2 and is_true(s.workload, PODS_READY),
              f"PodsReady=True {whole - left:.0f}s after the other pod left: both pods run, on {', '.join(on)}")
    ctx.say(f"  the cost: the half-start thrown away (8 GPUs of a node held {evicted_at - half:.0f}s, 16 of quota "
            f"{held:.0f}s, for nothing), one requeue, and a new wait behind the autoscaler")


SCENARIOS = (
    Scenario("half-gang", "gangs",
             "half a gang runs, its other pod unschedulable: waitForPodsReady evicts it at its timeout, the GPUs "
             "are released, it is requeued and starts whole", run, needs_fake=NEEDS_FAKE),
)
