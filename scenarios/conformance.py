"""Conformance probes: the same fixed set of ProvisioningRequests put to the fake and to the real Cluster
Autoscaler in turn (never both at once; the pool is reset before, between and after), each watched from
the client side with millisecond timestamps.

The probes create ProvisioningRequests and PodTemplates by hand in their own namespace (no Job, no Kueue),
so only the autoscaler answers them.  Before every probe the pool is empty; a probe that needs capacity
that already exists gets free GPU nodes made by hand, which belong to no autoscaler (they lack the pool
label).  After every probe its requests, templates and nodes are deleted.  The comparison is in
fidelity.py, the known deviations in deviations.py.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from demo.k8s import heartbeat
from demo.k8s.client import Kube, informer
from demo.k8s.errors import ApiError, Unreachable
from demo.k8s.keys import (BEST_EFFORT_ATOMIC, CHECK_CAPACITY, CONFORMANCE_NAMESPACE, CONFORMANCE_STATIC_LABEL,
                           FAILED, FAKE_CA_LEASE, GPU, KWOK_NODE_ANNOTATION, NODE_READY, NOT_READY_TAINT, OS_LABEL,
                           POOL_LABEL, PROVISIONED, QUEUED_PROVISIONING_CLASS, REAL_CA_LEASE)
from demo.k8s.objects import deleting, is_true, labels, name
from demo.k8s.resources import NAMESPACE, NODE, POD_TEMPLATE, PROVREQ
from demo.realca import exclusion
from fake_ca.pools import Pool

from .controllers import Controller, start_private
from .fidelity import NodeEvent, Record, Write, condition_changes
from .harness import Context, ScenarioFailed

NS = CONFORMANCE_NAMESPACE


@dataclass(frozen=True)
class Ask:
    """One ProvisioningRequest of a probe: `pods` pods of `gpus` GPUs each."""
    label: str
    pods: int
    gpus: int = 8
    cls: str = BEST_EFFORT_ATOMIC
    template: bool = True


@dataclass(frozen=True)
class Probe:
    name: str
    what: str
    asks: tuple[Ask, ...]
    free_nodes: int = 0              # free GPU nodes that exist before the requests (no autoscaler's)
    answered: bool = True            # False: nothing is expected to be written (then watch a quiet window)


PROBES = (
    Probe("scale-up", "a gang that fits: 2 × 8 GPU, empty pool of max 2", (Ask("a", 2),)),
    Probe("over-max", "a gang over the pool max: 3 × 8 GPU, pool max 2", (Ask("a", 3),)),
    Probe("existing-capacity", "1 × 8 GPU that fits a free node that already exists", (Ask("a", 1),), free_nodes=1),
    Probe("booking", "two 1 × 8 GPU requests at once, one free node", (Ask("a", 1), Ask("b", 1)), free_nodes=1),
    Probe("missing-template", "a request whose PodTemplate does not exist", (Ask("a", 1, template=False),)),
    Probe("unknown-class", f"class {QUEUED_PROVISIONING_CLASS}, which neither autoscaler handles",
          (Ask("a", 1, cls=QUEUED_PROVISIONING_CLASS),), answered=False),
    Probe("check-capacity-fits", "check-capacity 1 × 8 GPU, one free node", (Ask("a", 1, cls=CHECK_CAPACITY),),
          free_nodes=1),
    Probe("check-capacity-no", "check-capacity 2 × 8 GPU, empty pool", (Ask("a", 2, cls=CHECK_CAPACITY),)),
)
PROBE_NAMES = tuple(p.name for p in PROBES)


@dataclass(frozen=True)
class Under:
    """The autoscaler under test and how long to wait for it."""
    kind: str                        # fake | real
    scan_interval: float = 10.0      # the real CA's --scan-interval
    extra_args: tuple[str, ...] = ()

    @property
    def lease(self) -> str:
        return REAL_CA_LEASE if self.kind == "real" else FAKE_CA_LEASE

    @property
    def label(self) -> str:
        return f"real (scan {self.scan_interval:g}s)" if self.kind == "real" else "fake"

    def args(self) -> list[str]:
        if self.kind == "real":
            return ["real-ca", "--scan-interval", f"{self.scan_interval:g}s", *self.extra_args]
        return ["fake-ca", "--boot", "0s", *self.extra_args]     # like the kwok provider: nodes Ready at once

    @property
    def answer_timeout(self) -> float:      # a new request waits up to one loop, then one loop runs
        return 3 * self.scan_interval + 30 if self.kind == "real" else 30.0

    @property
    def settle(self) -> float:              # keep watching after the answer: a second write shows up
        return self.scan_interval + 2 if self.kind == "real" else 3.0

    @property
    def quiet(self) -> float:               # when no answer is expected: two loops
        return 2 * self.scan_interval + 3 if self.kind == "real" else 6.0

    @property
    def start_timeout(self) -> float:
        return 2 * self.scan_interval + 120 if self.kind == "real" else 30.0


def provreq_name(probe: Probe, ask: Ask) -> str:
    return f"cf-{probe.name}-{ask.label}"


# ---------------------------------------------------------------------------- objects

def pod_template(probe: Probe, ask: Ask, pool: Pool) -> dict:
    """A pod like the ones Kueue puts in a ProvisioningRequest's PodTemplate: the flavor's node labels and
    tolerations, GPU requests."""
    spec = {"restartPolicy": "Never", "nodeSelector": dict(pool.labels),
            "tolerations": [{"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect}
                            for t in pool.taints],
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {GPU: str(ask.gpus)},
                                                                    "limits": {GPU: str(ask.gpus)}}}]}
    return {"apiVersion": "v1", "kind": "PodTemplate",
            "metadata": {"name": provreq_name(probe, ask) + "-t", "namespace": NS}, "template": {"spec": spec}}


def provisioning_request(probe: Probe, ask: Ask) -> dict:
    return {"apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
            "metadata": {"name": provreq_name(probe, ask), "namespace": NS},
            "spec": {"provisioningClassName": ask.cls,
                     "podSets": [{"podTemplateRef": {"name": provreq_name(probe, ask) + "-t"}, "count": ask.pods}]}}


def free_node(pool: Pool, i: int) -> dict:
    """A GPU node with the pool's shape that no autoscaler owns (no pool label, no providerID)."""
    lbl = dict(pool.labels)
    lbl.update({OS_LABEL: "linux", "type": "kwok", CONFORMANCE_STATIC_LABEL: "true"})
    taints = [{"key": t.key, "effect": t.effect, **({"value": t.value} if t.value else {})} for t in pool.taints]
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"conformance-free-{i}", "labels": lbl, "annotations": {KWOK_NODE_ANNOTATION: "fake"}},
            "spec": {"taints": taints},
            "status": {"capacity": dict(pool.capacity), "allocatable": dict(pool.allocatable)}}


def usable(node: dict | None) -> bool:
    taints = (node or {}).get("spec", {}).get("taints") or []
    return is_true(node, NODE_READY) and not any(t.get("key") == NOT_READY_TAINT for t in taints)


# ---------------------------------------------------------------------------- the client-side watch

class Watch:
    """ProvisioningRequests of the conformance namespace and pool nodes, timestamped on receipt."""

    def __init__(self, k: Kube, labels_by_name: dict[str, str]):
        self.k, self.labels_by_name = k, labels_by_name
        self.stop = threading.Event()
        self.t0 = time.time()
        self.lock = threading.Lock()
        self.conds: dict[str, list[dict]] = {}
        self.writes: list[Write] = []
        self.nodes: list[NodeEvent] = []
        self.ready: set[str] = set()
        self.synced = [threading.Event(), threading.Event()]
        self.threads = [threading.Thread(target=self._run, args=(PROVREQ, NS, self._provreq, self.synced[0]),
                                         daemon=True),
                        threading.Thread(target=self._run, args=(NODE, None, self._node, self.synced[1]),
                                         daemon=True)]

    def __enter__(self):
        for t in self.threads:
            t.start()
        for e in self.synced:
            if not e.wait(30):
                raise ScenarioFailed("the conformance watch did not sync within 30s")
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(8)

    def ms(self) -> int:
        return int(round((time.time() - self.t0) * 1000))

    def _run(self, res, namespace, handle, synced):
        for typ, obj in informer(self.k, res, namespace, stop=self.stop, timeout_seconds=5):
            if typ == "SYNCED":
                synced.set()
                continue
            handle(typ, obj)

    def _provreq(self, typ: str, pr: dict) -> None:
        n = name(pr)
        if typ == "DELETED":
            return
        new = (pr.get("status") or {}).get("conditions") or []
        with self.lock:
            changes = condition_changes(self.conds.get(n, []), new)
            self.conds[n] = new
            if changes and typ != "SYNC" and n in self.labels_by_name:
                self.writes.append(Write(self.ms(), self.labels_by_name[n], changes))

    def _node(self, typ: str, node: dict) -> None:
        if not labels(node).get(POOL_LABEL):
            return
        n = name(node)
        with self.lock:
            if typ == "ADDED":
                self.nodes.append(NodeEvent(self.ms(), n, "created"))
            elif typ == "DELETED":
                self.nodes.append(NodeEvent(self.ms(), n, "deleted"))
            if typ in ("ADDED", "MODIFIED") and usable(node) and n not in self.ready:
                self.ready.add(n)
                self.nodes.append(NodeEvent(self.ms(), n, "ready"))

    def answered(self, names: list[str]) -> bool:
        with self.lock:
            return all(any(c.get("type") in (PROVISIONED, FAILED) for c in self.conds.get(n, [])) for n in names)


# ---------------------------------------------------------------------------- pool reset

def probe_objects(k: Kube) -> list[str]:
    out = [f"ProvisioningRequest {name(p)}" for p in k.list(PROVREQ, NS)[0]]
    out += [f"PodTemplate {name(t)}" for t in k.list(POD_TEMPLATE, NS)[0]]
    out += [f"Node {name(n)}" for n in k.list(NODE)[0]
            if (labels(n).get(POOL_LABEL) or labels(n).get(CONFORMANCE_STATIC_LABEL))]
    return out


def reset(ctx: Context, timeout: float = 60) -> None:
    """Delete every probe request and template, every pool node and every hand-made free node; wait until
    they are gone.  Requests first, so no booking outlives its nodes."""
    k = ctx.k
    for p in k.list(PROVREQ, NS)[0]:
        k.delete(PROVREQ, name(p), NS)
    for t in k.list(POD_TEMPLATE, NS)[0]:
        k.delete(POD_TEMPLATE, name(t), NS)
    ctx.wait(lambda: not k.list(PROVREQ, NS)[0], timeout, "the probe requests to go")
    for n in k.list(NODE)[0]:
        if (labels(n).get(POOL_LABEL) or labels(n).get(CONFORMANCE_STATIC_LABEL)) and not deleting(n):
            k.delete(NODE, name(n))
    ctx.wait(lambda: not probe_objects(k), timeout, "the pool to be empty")


def ensure_namespace(k: Kube) -> None:
    k.apply(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}, "tau-demo")


# ---------------------------------------------------------------------------- one probe

def run_probe(ctx: Context, probe: Probe, under: Under, pool: Pool) -> Record:
    k = ctx.k
    rec = Record(probe.name, under.kind)
    reset(ctx)
    for i in range(probe.free_nodes):
        k.create(NODE, free_node(pool, i))
    if probe.free_nodes:
        ctx.wait(lambda: all(usable(k.get_or_none(NODE, f"conformance-free-{i}")) for i in range(probe.free_nodes)),
                 60, "the free nodes to be Ready")
    for ask in probe.asks:
        if ask.template:
            k.create(POD_TEMPLATE, pod_template(probe, ask, pool), NS)
    names = [provreq_name(probe, a) for a in probe.asks]
    with Watch(k, {provreq_name(probe, a): a.label for a in probe.asks}) as w:
        w.t0 = time.time()
        for ask in probe.asks:
            k.create(PROVREQ, provisioning_request(probe, ask), NS)
        if probe.answered:
            deadline = time.monotonic() + under.answer_timeout
            while not w.answered(names) and time.monotonic() < deadline:
                time.sleep(0.05)
            if not w.answered(names):
                rec.error = f"no Provisioned/Failed condition within {under.answer_timeout:.0f}s"
            time.sleep(under.settle)
        else:
            time.sleep(under.quiet)
    rec.writes, rec.nodes = list(w.writes), list(w.nodes)
    reset(ctx)
    return rec


# ---------------------------------------------------------------------------- one autoscaler

def running_autoscaler(k: Kube) -> str | None:
    for lease, what in ((FAKE_CA_LEASE, "the fake autoscaler"), (REAL_CA_LEASE, "the real Cluster Autoscaler")):
        if heartbeat.alive(k, lease):
            return f"{what} is already running (Lease {lease}); conformance starts its own: stop it first"
    return exclusion.real_running(k)


def run_under(ctx: Context, under: Under, probes: list[Probe], pool: Pool, say=print) -> list[Record]:
    why = running_autoscaler(ctx.k)
    if why:
        raise ScenarioFailed(why)
    ensure_namespace(ctx.k)
    reset(ctx)
    say(f"starting the {under.label} autoscaler")
    ctl: Controller = start_private(ctx, under.lease, under.args(), f"{under.label} autoscaler",
                                    timeout=under.start_timeout)
    records = []
    try:
        for p in probes:
            t = time.monotonic()
            try:
                r = run_probe(ctx, p, under, pool)
            except (ApiError, Unreachable, ScenarioFailed) as e:
                r = Record(p.name, under.kind, error=f"{type(e).__name__}: {e}")
                reset(ctx)
            records.append(r)
            say(f"  {under.label:18} {p.name:20} {len(r.writes)} write(s), "
                f"{sum(1 for n in r.nodes if n.what == 'created')} node(s) ({time.monotonic() - t:.0f}s)"
                f"{'  ERROR ' + r.error if r.error else ''}")
    finally:
        ctl.stop()
        ctx.started.remove(ctl)
        ctx.wait(lambda: not heartbeat.alive(ctx.k, under.lease), 30, f"the {under.label} autoscaler to stop")
        reset(ctx)
    return records
