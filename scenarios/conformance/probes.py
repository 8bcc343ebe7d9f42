"""Conformance probes: the same ProvisioningRequests put to the fake and to the real Cluster Autoscaler in
turn (never both at once; the pool is reset before, between and after), on the same cluster, with the
same settings, each watched from the client side with millisecond timestamps.

Each probe is named after the behaviour it probes and is one record (`Probe`): its requests (`Ask`s, each
with one or more PodSets), the free nodes that exist before (hand-made, no autoscaler's) and the pods
running on them, and its steps (`Step`s: create, delete, wait for an answer, create a PodTemplate late,
start a pod, wait for an event, watch on).  Without steps a probe creates its requests at once and waits
for every answer.  The probes create ProvisioningRequests, PodTemplates and pods by hand in their own
namespace (no Job, no Kueue), so only the autoscaler answers them.  After every probe its objects and
every pool node are deleted.

Both autoscalers run with the same settings (`RunSettings`: the scan interval, the request backoff, the
node-provision time, the node-group backoff, the unneeded time; the fake's booking at the real one's
hardcoded 10 minutes) and the same node pools: the demo's, with no boot time (the kwok provider's nodes are
Ready at once), plus `stuckpool`, whose nodes never become Ready (the fake: bootSeconds never; the real one:
the kwok provider copies the template's boots-at annotation, which the project's KWOK node stage waits
for).  The comparison is in fidelity.py, the known deviations in deviations.py.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from k8s import heartbeat
from k8s import poll
from k8s import node as nodes_
from k8s import provreq as provreqs_
from k8s.client import Kube
from k8s.duration import go_duration
from k8s.errors import ApiError, NotFound, Unreachable
from k8s.keys import (BEST_EFFORT_ATOMIC, CA_STATUS, CA_STATUS_KEY, CHECK_CAPACITY, CONFORMANCE_NAMESPACE,
                      CONFORMANCE_STATIC_LABEL, CONSUME_PROVREQ_ANNOTATION, DEMO_POOL, FAILED, FAKE_CA_LEASE, GPU,
                      ON_DEMAND_POOL, PROVISIONED, PROVREQ_CONDITIONS,
                      PARAM_BOOKING_SECONDS, PARAM_BOOT_SECONDS, PARAM_FAIL_ATTEMPTS, PARAM_HONOR_VALID_UNTIL,
                      PARAM_NO_RETRY, PARAM_PROCESSOR_INSTANCE, PARAM_REVOKE_AFTER, PARAM_REVOKE_UNPROVISIONED,
                      PARAM_STOCKOUT, PARAM_TTL_SECONDS, PARAM_VALID_UNTIL, QUEUED_PROVISIONING_CLASS, REAL_CA_LEASE)
from k8s.objects import deleting, labels, name
from k8s.resources import CONFIG_MAP, NAMESPACE, NODE, POD, POD_TEMPLATE, PROVREQ
from k8s.tape import Tape
from k8s.watch import Event, NotSynced
from demo.realca import exclusion
from k8s.duration import FOREVER
from k8s.pools import Pool, pools_to_yaml

from ..kit.controllers import DEMO_FAKE_CA, Controller, start_private
from ..kit.live import LiveReads
from ..kit.toolbox import free_node
from .fidelity import (Gap, GroupEvent, Mark, NodeEvent, ObservedWrite, Record, condition_changes,
                       condition_rewrites, group_states, select)
from ..kit.harness import Context, ScenarioFailed

STUCK_POOL = "stuckpool"         # the probes' pool whose nodes never become Ready


# ---------------------------------------------------------------------------- what a probe is

@dataclass(frozen=True)
class Pods:
    """`count` pods of `gpus` GPUs (or of `cpu` and no GPU) on `pool` (its labels as nodeSelector, its
    taints tolerated unless tolerate=False); `selector` replaces the pool's labels."""
    count: int
    gpus: int = 8
    pool: str = DEMO_POOL
    cpu: str = ""
    tolerate: bool = True
    selector: tuple[tuple[str, str], ...] = ()
    host_port: int = 0


@dataclass(frozen=True)
class Ask:
    """One ProvisioningRequest of a probe."""
    label: str
    podsets: tuple[Pods, ...]
    cls: str = BEST_EFFORT_ATOMIC
    params: tuple[tuple[str, str], ...] = ()
    template: bool = True            # False: its PodTemplates never exist


def ask(label: str, pods: int = 1, gpus: int = 8, pool: str = DEMO_POOL, **kw) -> Ask:
    """One request of one PodSet: `pods` pods of `gpus` GPUs on `pool`."""
    return Ask(label, (Pods(pods, gpus, pool),), **kw)


@dataclass(frozen=True)
class Step:
    """One thing a probe does, in order:
    create LABELS      create these requests (their PodTemplates first, unless a `template` step makes them)
    template LABELS    create these requests' PodTemplates now
    delete LABELS      delete these requests
    answered LABELS    wait until each has Provisioned or Failed (the autoscaler's answer)
    until SELECTOR     wait until the event a fidelity.select selector names happened
    pod LABEL          start a pod that consumes the request (its first pod's shape) on free node 0
    wait               watch on `seconds` + `scans` scan intervals
    Waits give up after `seconds` + `scans` scan intervals (answered, until: a generous default)."""
    action: str
    labels: tuple[str, ...] = ()
    selector: str = ""
    seconds: float = 0.0
    scans: float = 0.0


def create(*labels_: str) -> Step:
    return Step("create", labels_)


def answered(*labels_: str) -> Step:
    return Step("answered", labels_)


def wait(seconds: float = 0.0, scans: float = 0.0) -> Step:
    return Step("wait", seconds=seconds, scans=scans)


@dataclass(frozen=True)
class Probe:
    name: str                         # the behaviour it probes
    what: str
    asks: tuple[Ask, ...]
    steps: tuple[Step, ...] = ()      # () : create every request at once, wait for every answer, watch on
    free_nodes: int = 0               # free GPU nodes that exist before the requests (no autoscaler's)
    busy_gpus: int = 0                # GPUs a running pod (no request's) uses on free node 0
    gaps: tuple[Gap, ...] = ()        # its claims about time (fidelity.py)
    long: bool = False                # runs only with --long (a hardcoded real timer)
    settle_scans: float = 1.0         # after the last step: watch on this many scan intervals + 1 s
    groups: tuple[str, ...] = ()      # the node groups whose state is compared ((): those its PodSets name)
    knob: tuple[str, str] = ()        # fault injection: (the request parameter only the fake reads, what it does)
    untimed: str = ""                 # a likeness probe with no claim about time: why there is none

    def node_groups(self) -> tuple[str, ...]:
        """The node groups whose state is compared: `groups`, else the pools its PodSets name; () for all (a
        PodSet that names no pool: every pool may take it)."""
        if self.groups:
            return self.groups
        pools = [ps.pool for a in self.asks for ps in a.podsets]
        return () if not pools or "" in pools else tuple(sorted(set(pools)))

    def plan(self) -> tuple[Step, ...]:
        if self.steps:
            return self.steps
        return (create(*(a.label for a in self.asks)), answered(*(a.label for a in self.asks)))


# ---------------------------------------------------------------------------- the settings both run with

@dataclass(frozen=True)
class RunSettings:
    """The flags both autoscalers get, alike (seconds).  The real one's booking is a hardcoded 10 minutes:
    the fake's --booking is set to it."""
    scan: float = 2.0
    initial_backoff: float = 5.0           # CapacityIsNotFound retried after 5s, 10s, 10s ...
    max_backoff: float = 10.0
    max_node_provision_time: float = 10.0
    node_group_backoff: float = 30.0
    max_node_group_backoff: float = 60.0
    unneeded: float = 6.0
    booking: float = 600.0

    def fake_args(self, pools_file: str) -> list[str]:
        d = go_duration
        return [*DEMO_FAKE_CA, "--pools", pools_file, "--scan-interval", d(self.scan),
                "--initial-backoff", d(self.initial_backoff), "--max-backoff", d(self.max_backoff),
                "--max-node-provision-time", d(self.max_node_provision_time),
                "--initial-node-group-backoff", d(self.node_group_backoff),
                "--max-node-group-backoff", d(self.max_node_group_backoff),
                "--scale-down-unneeded", d(self.unneeded), "--booking", d(self.booking)]

    def real_args(self, pools_file: str) -> list[str]:
        d = go_duration
        return ["real-ca", "--pools", pools_file, "--scan-interval", d(self.scan),
                "--scale-down-unneeded-time", d(self.unneeded),
                "--max-node-provision-time", d(self.max_node_provision_time), "--",
                f"--provisioning-request-initial-backoff-time={d(self.initial_backoff)}",
                f"--provisioning-request-max-backoff-time={d(self.max_backoff)}",
                f"--initial-node-group-backoff-duration={d(self.node_group_backoff)}",
                f"--max-node-group-backoff-duration={d(self.max_node_group_backoff)}",
                f"--scale-down-delay-after-failure={d(self.unneeded)}"]


def probe_pools(pools: list[Pool]) -> list[Pool]:
    """The node pools of a conformance run: the demo's, with no boot time (like the kwok provider's nodes),
    and STUCK_POOL, a copy of the first whose nodes never become Ready."""
    first = pools[0]
    out = [dataclasses.replace(p, boot_seconds=0.0) for p in pools]
    stuck = dataclasses.replace(first, name=STUCK_POOL, name_prefix=f"aks-{STUCK_POOL}-vmss",
                                labels={**first.labels, "agentpool": STUCK_POOL}, boot_seconds=FOREVER,
                                topology_label=None, domains=())
    return out + [stuck]


# ---------------------------------------------------------------------------- the probes

S = RunSettings()
GB = f"{S.node_group_backoff:g}s"


def _p(*pairs: str) -> tuple[tuple[str, str], ...]:
    return tuple((pairs[i], pairs[i + 1]) for i in range(0, len(pairs), 2))


CREATED = "mark created a"


def answered_in(what: str, end: str, start: str = CREATED) -> Gap:
    """The claim that both answer as fast: from the request's creation to `end`."""
    return Gap(f"created to {what}", start, end)


TO_FOUND = answered_in("CapacityIsFound", "a Provisioned=True/*")
TO_PROVISIONED = answered_in("Provisioned", "a Provisioned=True/*")
TO_NOT_FOUND = answered_in("CapacityIsNotFound", "a Provisioned=False/*")
TO_FAILED = answered_in("Failed", "a Failed=True/*")
TO_BOTH = (answered_in("the 1st answer", "* Provisioned=*#1", "mark created *"),
           answered_in("the 2nd answer", "* Provisioned=*#2", "mark created *"))


PROBES = (
    Probe("gang-scale-up", "a gang that fits: 2 × 8 GPU, empty pool of max 2: Accepted, two nodes, Provisioned "
          "(two writes, the second a server-side apply)", (ask("a", 2),), gaps=(TO_PROVISIONED,)),
    Probe("gang-over-max", "a gang over the pool max: 3 × 8 GPU, pool max 2: CapacityIsNotFound, no node, never Failed",
          (ask("a", 3),), gaps=(TO_NOT_FOUND,)),
    Probe("existing-capacity", "1 × 8 GPU that fits a free node that already exists: CapacityIsFound, no node",
          (ask("a"),), free_nodes=1, gaps=(TO_FOUND,)),
    Probe("booking-holds-capacity", "two 1 × 8 GPU requests at once, one free node: the first books it, the second "
          "scales up", (ask("a"), ask("b")), free_nodes=1, gaps=TO_BOTH),
    Probe("missing-template", "a request whose PodTemplate does not exist: Failed/FailedToCreatePods",
          (ask("a", template=False),), gaps=(TO_FAILED,)),
    Probe("template-after-request", "the PodTemplate created after its request was answered (kubernetes-sigs/kueue#3957): "
          "Failed/FailedToCreatePods, and it stays Failed", (ask("a"),),
          steps=(create("a"), answered("a"), Step("template", ("a",)), wait(scans=2)), gaps=(TO_FAILED,)),
    Probe("unknown-class", f"class {QUEUED_PROVISIONING_CLASS}, which neither autoscaler handles: untouched",
          (ask("a", cls=QUEUED_PROVISIONING_CLASS),), steps=(create("a"), wait(scans=2)),
          untimed="neither answers it"),
    Probe("check-capacity-fits", "check-capacity 1 × 8 GPU, one free node: CapacityIsFound",
          (ask("a", cls=CHECK_CAPACITY),), free_nodes=1, gaps=(TO_FOUND,)),
    Probe("check-capacity-not-found", "check-capacity 2 × 8 GPU, empty pool: CapacityIsNotFound, no node",
          (ask("a", 2, cls=CHECK_CAPACITY),), gaps=(TO_NOT_FOUND,)),
    Probe("check-capacity-no-retry", "check-capacity 2 × 8 GPU with noRetry, empty pool: Failed/CapacityIsNotFound",
          (ask("a", 2, cls=CHECK_CAPACITY, params=_p(PARAM_NO_RETRY, "true")),), gaps=(TO_FAILED,)),
    Probe("one-request-per-loop", "three 1 × 8 GPU requests created at once, pool max 2: one per loop, the next loop "
          "at once after one that processed a request; two scale up, the third is not found",
          (ask("a"), ask("b"), ask("c")),
          gaps=(Gap("1st to 2nd answer", "* Provisioned=*#1", "* Provisioned=*#2", scans=0.5, slack=0.5),
                Gap("2nd to 3rd answer", "* Provisioned=*#2", "* Provisioned=*#3", scans=0.5, slack=0.5))),
    Probe("retry-backoff-spacing", f"CapacityIsNotFound retried after the request backoff ({S.initial_backoff:g}s, "
          f"doubling to {S.max_backoff:g}s): 3 × 8 GPU on a pool of max 2, three retries", (ask("a", 3),),
          steps=(create("a"), Step("until", selector="a Provisioned=False/*#4", seconds=60)),
          gaps=(Gap("retry 1", "a Provisioned=False/*#1", "a Provisioned=False/*#2"),
                Gap("retry 2", "a Provisioned=False/*#2", "a Provisioned=False/*#3"),
                Gap("retry 3", "a Provisioned=False/*#3", "a Provisioned=False/*#4")), settle_scans=0),
    Probe("deleted-request-releases-booking", "a request books a free node; deleted, its booking goes: a second "
          "request gets the node (CapacityIsFound), no scale-up", (ask("a"), ask("b")), free_nodes=1,
          steps=(create("a"), answered("a"), Step("delete", ("a",)), wait(scans=1), create("b"), answered("b")),
          gaps=(answered_in("CapacityIsFound (b)", "b Provisioned=True/*", "mark created b"),)),
    Probe("scale-down-after-unneeded", f"a scale-up's node, its request deleted: removed after --scale-down-unneeded "
          f"({S.unneeded:g}s)", (ask("a"),),
          steps=(create("a"), answered("a"), Step("delete", ("a",)),
                 Step("until", selector="node deleted", seconds=S.unneeded + 20, scans=4)),
          gaps=(Gap("request deleted to node deleted", "mark deleted a", "node deleted"),)),
    Probe("booking-expiry", "a provisioned request's booking ends with BookingExpired=True/CapacityReservationTimeExpired "
          "10 minutes after Provisioned (the real one's hardcoded time), then its node is scaled down", (ask("a"),),
          steps=(create("a"), answered("a"), Step("until", selector="a BookingExpired=True/*", seconds=720),
                 Step("until", selector="node deleted", seconds=S.unneeded + 30, scans=4)),
          gaps=(Gap("Provisioned to BookingExpired", "a Provisioned=True/*", "a BookingExpired=True/*"),
                Gap("BookingExpired to node deleted", "a BookingExpired=True/*", "node deleted")), long=True),
    Probe("two-podsets", "one request of two PodSets, 1 × 8 GPU and 2 × 4 GPU: two nodes, all or nothing",
          (Ask("a", (Pods(1, 8), Pods(2, 4))),), gaps=(TO_PROVISIONED,)),
    Probe("selector-no-pool", "a nodeSelector no pool has: CapacityIsNotFound, no node",
          (Ask("a", (Pods(1, 8, selector=(("agentpool", "nowhere"),)),)),), gaps=(TO_NOT_FOUND,)),
    Probe("taint-not-tolerated", "the GPU pool's taint not tolerated: CapacityIsNotFound, no node",
          (Ask("a", (Pods(1, 8, tolerate=False),)),), gaps=(TO_NOT_FOUND,)),
    Probe("last-capacity-race", "one node of the pool's 2 taken, then two 1 × 8 GPU requests at once for the last one: "
          "one scales up, the other is not found", (ask("c"), ask("a"), ask("b")),
          steps=(create("c"), answered("c"), create("a", "b"), answered("a", "b")),
          gaps=(answered_in("the 1st answer (a, b)", "* Provisioned=*#2"),
                answered_in("the 2nd answer (a, b)", "* Provisioned=*#3"))),
    Probe("busy-node-spare-gpus", "a free node with a running 4-GPU pod: 1 × 4 GPU fits its 4 spare GPUs "
          "(CapacityIsFound), 1 × 8 GPU scales up", (ask("a", gpus=4), ask("b")), free_nodes=1, busy_gpus=4,
          gaps=TO_BOTH),
    Probe("booking-consumed-by-pods", "a request books 4 GPUs of a free node, then a pod consuming it runs there; a "
          "second 1 × 4 GPU request (kubernetes/autoscaler#9805)", (ask("a", gpus=4), ask("b", gpus=4)), free_nodes=1,
          steps=(create("a"), answered("a"), Step("pod", ("a",)), wait(scans=2), create("b"), answered("b")),
          untimed="the two answer b differently (D9): no common event to time"),
    Probe("vm-boots", "a request with fakeCABootSeconds=4 (a VM that boots): the node's Ready after its creation",
          (ask("a", params=_p(PARAM_BOOT_SECONDS, "4")),),
          steps=(create("a"), answered("a"), Step("until", selector="node ready", seconds=15)),
          gaps=(Gap("node created to ready", "node created", "node ready"),), settle_scans=0,
          knob=(PARAM_BOOT_SECONDS, "the fake's node becomes Ready this many seconds after it is created (a VM's "
                "boot); the kwok provider's nodes are Ready at once")),
    Probe("stockout-injected", "a request with fakeCAStockout=true (the fake's injected cloud refusal)",
          (ask("a", params=_p(PARAM_STOCKOUT, "true")),),
          knob=(PARAM_STOCKOUT, "the fake answers CapacityIsNotFound as if the cloud refused the scale-up")),
    Probe("valid-until-ignored", "3 × 8 GPU with ValidUntilSeconds=1: never read, CapacityIsNotFound, never Failed",
          (ask("a", 3, params=_p(PARAM_VALID_UNTIL, "1")),), gaps=(TO_NOT_FOUND,)),
    Probe("valid-until-honored", "3 × 8 GPU with ValidUntilSeconds=0 and fakeCAHonorValidUntil=true",
          (ask("a", 3, params=_p(PARAM_VALID_UNTIL, "0", PARAM_HONOR_VALID_UNTIL, "true")),),
          knob=(PARAM_HONOR_VALID_UNTIL, "the fake fails a request older than its ValidUntilSeconds "
                "(Failed/ValidUntilSecondsExpired); no real CA code reads ValidUntilSeconds")),
    Probe("revoke-after-provisioned", "a request with fakeCARevokeAfterSeconds=1 (injected CapacityRevoked)",
          (ask("a", params=_p(PARAM_REVOKE_AFTER, "1")),), free_nodes=1, settle_scans=2,
          knob=(PARAM_REVOKE_AFTER, "the fake writes CapacityRevoked=True this many seconds after Provisioned=True")),
    Probe("revoke-before-provisioned", "3 × 8 GPU with fakeCARevokeBeforeProvisionedSeconds=0 (injected "
          "CapacityRevoked before any answer)",
          (ask("a", 3, params=_p(PARAM_REVOKE_UNPROVISIONED, "0")),), steps=(create("a"), wait(scans=3)),
          knob=(PARAM_REVOKE_UNPROVISIONED, "the fake writes CapacityRevoked=True once a request never provisioned "
                "is this many seconds old")),
    Probe("fail-attempts-injected", "a request with fakeCAFailAttempts=1 (an injected Failed of attempt 1)",
          (ask("a", params=_p(PARAM_FAIL_ATTEMPTS, "1")),), free_nodes=1,
          knob=(PARAM_FAIL_ATTEMPTS, "the fake answers Failed on attempts 1..N (the number at the end of Kueue's "
                "request name)")),
    Probe("booking-seconds-injected", "a request with fakeCABookingSeconds=1 (a booking of its own length)",
          (ask("a", params=_p(PARAM_BOOKING_SECONDS, "1")),), free_nodes=1, settle_scans=2,
          knob=(PARAM_BOOKING_SECONDS, "the fake's booking of this request lasts this many seconds (the real one's: "
                "a hardcoded 10 minutes)")),
    Probe("ttl-injected", "a request with fakeCATTLSeconds=1 (deleted a second after its answer)",
          (ask("a", params=_p(PARAM_TTL_SECONDS, "1")),), free_nodes=1, settle_scans=2,
          knob=(PARAM_TTL_SECONDS, "the fake deletes the request this many seconds after Provisioned or Failed (the "
                "real one's: 7 days)")),
    Probe("expander-choice", "1 pod of 1 CPU, no nodeSelector, tolerating the GPU pool's taint: every pool fits it",
          (Ask("a", (Pods(1, 0, pool="", cpu="1"),)),), gaps=(TO_PROVISIONED,)),
    Probe("scheduling-host-port", "2 pods of 1 GPU, each with hostPort 8080: one node holds only one of them",
          (Ask("a", (Pods(2, 1, host_port=8080),)),), gaps=(TO_PROVISIONED,)),
    Probe("pending-pod-without-request", f"a plain pending pod of 1 CPU on the {ON_DEMAND_POOL} pool, no "
          "ProvisioningRequest", (), steps=(Step("pod", ("plain",)), wait(seconds=2, scans=3)),
          groups=(ON_DEMAND_POOL,),
          untimed="no request: nothing to answer (the real one's scale-up for the pod is D12)"),
    Probe("check-capacity-processor-instance", "check-capacity 1 × 8 GPU with parameters.processorInstance=other, "
          "one free node; neither autoscaler runs as that instance", (ask("a", cls=CHECK_CAPACITY,
                                                                           params=_p(PARAM_PROCESSOR_INSTANCE, "other")),),
          free_nodes=1, steps=(create("a"), wait(scans=2)),
          untimed="neither answers it"),
    # last: its node group stays backed off (the fake) for a while after it
    Probe("never-ready-backoff", f"a node of {STUCK_POOL} that never becomes Ready: past --max-node-provision-time "
          f"({S.max_node_provision_time:g}s) it is removed and the group backs off ({GB}), visible in the status "
          "ConfigMap; a second request for the group meanwhile", (ask("a", pool=STUCK_POOL), ask("b", pool=STUCK_POOL)),
          steps=(create("a"), answered("a"), wait(seconds=S.max_node_provision_time + 2, scans=2), create("b"),
                 answered("b"), wait(scans=2)),
          gaps=(Gap("Provisioned to node deleted", "a Provisioned=True/*", "node deleted"),
                Gap(f"Provisioned to {STUCK_POOL} backed off", "a Provisioned=True/*", f"group {STUCK_POOL} Backoff*")),
          settle_scans=0),
)
PROBE_NAMES = tuple(p.name for p in PROBES)
TIMINGS = {p.name: p.gaps for p in PROBES}
KNOBS = {p.name: p.knob for p in PROBES if p.knob}          # fault injection: probe -> (parameter, what it does)
UNTIMED = {p.name: p.untimed for p in PROBES if p.untimed}  # likeness probes with no claim about time: why


def probe_provreq_name(probe: Probe, a: Ask) -> str:
    return f"cf-{probe.name}-{a.label}"


def template_name(probe: Probe, a: Ask, i: int) -> str:
    return f"{probe_provreq_name(probe, a)}-t{i}"


# ---------------------------------------------------------------------------- objects

def _pod_spec(ps: Pods, pools: dict[str, Pool]) -> dict:
    """A pod like the ones Kueue puts in a ProvisioningRequest's PodTemplate: the pool's node labels and
    tolerations, the requests."""
    pool = pools.get(ps.pool)
    spec: dict = {"restartPolicy": "Never"}
    selector = dict(ps.selector) if ps.selector else dict(pool.labels) if pool else {}
    if selector:
        spec["nodeSelector"] = selector
    tol_pool = pool or pools.get(DEMO_POOL)
    if ps.tolerate and tol_pool is not None:
        spec["tolerations"] = [{"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect}
                               for t in tol_pool.taints]
    requests = {GPU: str(ps.gpus)} if ps.gpus else {"cpu": ps.cpu or "1"}
    if ps.cpu and ps.gpus:
        requests["cpu"] = ps.cpu
    container: dict = {"name": "c", "image": "x", "resources": {"requests": requests, "limits": dict(requests)}}
    if ps.host_port:
        container["ports"] = [{"containerPort": ps.host_port, "hostPort": ps.host_port}]
    spec["containers"] = [container]
    return spec


def pod_templates(probe: Probe, a: Ask, pools: dict[str, Pool]) -> list[dict]:
    return [POD_TEMPLATE.new(template_name(probe, a, i), CONFORMANCE_NAMESPACE, template={"spec": _pod_spec(ps, pools)})
            for i, ps in enumerate(a.podsets)]


def provisioning_request(probe: Probe, a: Ask) -> dict:
    spec: dict = {"provisioningClassName": a.cls,
                  "podSets": [{"podTemplateRef": {"name": template_name(probe, a, i)}, "count": ps.count}
                              for i, ps in enumerate(a.podsets)]}
    if a.params:
        spec["parameters"] = dict(a.params)
    return PROVREQ.new(probe_provreq_name(probe, a), CONFORMANCE_NAMESPACE, spec=spec)


def running_pod(pod_name: str, node: str | None, spec: dict, consumes: str = "") -> dict:
    """A pod of the probe's: bound to `node` (it runs there: KWOK plays it), or pending for the scheduler."""
    spec = {**spec, "containers": [dict(c) for c in spec["containers"]]}
    if node:
        spec["nodeName"] = node
    ann = {CONSUME_PROVREQ_ANNOTATION: consumes} if consumes else {}
    return POD.new(pod_name, CONFORMANCE_NAMESPACE, annotations=ann, spec=spec)


# ---------------------------------------------------------------------------- the client-side watch

class ProbeWatch:
    """ProvisioningRequests of the conformance namespace, pool nodes and the autoscaler's status ConfigMap on two
    Tapes (k8s/tape.py; the ConfigMap lives in another namespace), folded into the probe's record as each change
    comes, timestamped on receipt (ms since t0); what each (re)list showed is the state changes are told from."""

    def __init__(self, k: Kube, labels_by_name: dict[str, str], node_groups: tuple[str, ...] = ()):
        self.k, self.labels_by_name, self.node_groups = k, labels_by_name, node_groups
        self.t0 = time.time()
        self.lock = threading.Lock()
        self.conds: dict[str, list[dict]] = {}
        self.objects: dict[str, dict] = {}
        self.writes: list[ObservedWrite] = []
        self.nodes: list[NodeEvent] = []
        self.groups: list[GroupEvent] = []
        self.marks: list[Mark] = []
        self.group_state: dict[str, str] = {}
        self.ready: set[str] = set()
        folds = {PROVREQ.plural: self._provreq, NODE.plural: self._node, CONFIG_MAP.plural: self._status}
        listed = (PROVREQ.plural, CONFIG_MAP.plural)     # a node seen only in a list is no node event

        def changed(res, typ, obj):
            folds[res.plural](typ, obj)

        def relisted(res, objs):
            for obj in objs if res.plural in listed else ():
                folds[res.plural](Event.LISTED, obj)
        self.tapes = [Tape(k, (PROVREQ, NODE), CONFORMANCE_NAMESPACE, keep=lambda obj: False, on_change=changed,
                           on_list=relisted),
                      Tape(k, (CONFIG_MAP,), CA_STATUS[0], keep=lambda obj: False, on_change=changed,
                           on_list=relisted)]

    def __enter__(self):
        entered = []
        try:
            for tape in self.tapes:
                entered.append(tape.__enter__())
        except NotSynced as e:
            for tape in entered:
                tape.__exit__(None, None, None)
            raise ScenarioFailed(f"the conformance watch: {e}") from e
        return self

    def __exit__(self, *exc):
        for tape in self.tapes:        # no join: a watch blocked in its request ends by itself (daemon thread);
            tape.__exit__(*exc)        # the record was copied before

    def ms(self) -> int:
        return int(round((time.time() - self.t0) * 1000))

    def mark(self, what: str) -> None:
        with self.lock:
            self.marks.append(Mark(self.ms(), what))

    def _provreq(self, typ: str, pr: dict) -> None:
        n = name(pr)
        label = self.labels_by_name.get(n)
        if typ == Event.DELETED:
            if label is not None and not self.objects.get(n, {}).get("_gone"):
                with self.lock:
                    self.marks.append(Mark(self.ms(), f"gone {label}"))
                    self.objects[n] = {"_gone": True}
            return
        new = (pr.get("status") or {}).get("conditions") or []
        with self.lock:
            old = self.conds.get(n, [])
            changes, rewrites = condition_changes(old, new), condition_rewrites(old, new)
            self.conds[n] = new
            self.objects[n] = pr
            if (changes or rewrites) and typ != Event.LISTED and label is not None:
                self.writes.append(ObservedWrite(self.ms(), label, changes, rewrites))

    def _node(self, typ: str, node: dict) -> None:
        pool = nodes_.pool_of(node)
        if not pool:
            return
        n = name(node)
        with self.lock:
            if typ == Event.ADDED:
                self.nodes.append(NodeEvent(self.ms(), n, "created", pool))
            elif typ == Event.DELETED:
                self.nodes.append(NodeEvent(self.ms(), n, "deleted", pool))
            if typ in (Event.ADDED, Event.MODIFIED) and nodes_.usable(node) and n not in self.ready:
                self.ready.add(n)
                self.nodes.append(NodeEvent(self.ms(), n, "ready", pool))

    def _status(self, typ: str, cm: dict) -> None:
        if name(cm) != CA_STATUS[1]:
            return
        if typ == Event.DELETED:
            states: dict[str, str] = {}
        else:
            try:
                doc = yaml.safe_load(((cm.get("data") or {}).get(CA_STATUS_KEY)) or "") or {}
            except yaml.YAMLError:
                doc = {}
            states = group_states(doc if isinstance(doc, dict) else {})
        with self.lock:
            at = 0 if typ == Event.LISTED else self.ms()
            for group, state in sorted(states.items()):
                if self.node_groups and group not in self.node_groups:
                    continue
                if self.group_state.get(group) != state:
                    self.group_state[group] = state
                    self.groups.append(GroupEvent(at, group, state))

    def answered(self, names: list[str]) -> bool:
        with self.lock:
            return all(any(c.get("type") in (PROVISIONED, FAILED) for c in self.conds.get(n, [])) for n in names)

    def owners(self) -> dict[str, dict[str, list[str]]]:
        """Per request label, per condition type, the field managers that own it now."""
        with self.lock:
            return {label: {t: provreqs_.condition_owners(self.objects.get(n), t) for t in PROVREQ_CONDITIONS
                            if provreqs_.condition_owners(self.objects.get(n), t)}
                    for n, label in self.labels_by_name.items() if n in self.objects and "_gone" not in self.objects[n]}

    def record_into(self, rec: Record) -> None:
        with self.lock:
            rec.writes, rec.nodes = list(self.writes), list(self.nodes)
            rec.groups, rec.marks = list(self.groups), list(self.marks)
        rec.owners = self.owners()


# ---------------------------------------------------------------------------- pool reset

def _probe_node(n: dict) -> bool:
    return bool(nodes_.pool_of(n) or labels(n).get(CONFORMANCE_STATIC_LABEL))


def probe_objects(k: Kube) -> list[str]:
    live = LiveReads(k)
    out = [f"ProvisioningRequest {name(p)}" for p in live.list(PROVREQ, CONFORMANCE_NAMESPACE)]
    out += [f"PodTemplate {name(t)}" for t in live.list(POD_TEMPLATE, CONFORMANCE_NAMESPACE)]
    out += [f"Pod {name(p)}" for p in live.list(POD, CONFORMANCE_NAMESPACE)]
    out += [f"Node {name(n)}" for n in live.list(NODE) if _probe_node(n)]
    return out


def reset(ctx: Context, timeout: float = 60) -> None:
    """Delete every probe request, template and pod, every pool node and every hand-made free node; wait until
    they are gone.  Requests first, so no booking outlives its nodes."""
    k, live = ctx.k, ctx.live
    for p in live.list(PROVREQ, CONFORMANCE_NAMESPACE):
        k.delete(PROVREQ, name(p), CONFORMANCE_NAMESPACE)
    for t in live.list(POD_TEMPLATE, CONFORMANCE_NAMESPACE):
        k.delete(POD_TEMPLATE, name(t), CONFORMANCE_NAMESPACE)
    for p in live.list(POD, CONFORMANCE_NAMESPACE):
        k.delete(POD, name(p), CONFORMANCE_NAMESPACE)
    ctx.wait(lambda: not live.list(PROVREQ, CONFORMANCE_NAMESPACE) and not live.list(POD, CONFORMANCE_NAMESPACE),
             timeout, "the probe requests and pods to go", interval=0.1)
    for n in live.list(NODE):
        if _probe_node(n) and not deleting(n):
            k.delete(NODE, name(n))
    ctx.wait(lambda: not probe_objects(k), timeout, "the pool to be empty", interval=0.1)


def ensure_namespace(k: Kube) -> None:
    k.apply(NAMESPACE, NAMESPACE.new(CONFORMANCE_NAMESPACE), "tau-demo")


# ---------------------------------------------------------------------------- one probe

@dataclass(frozen=True)
class Under:
    """The autoscaler under test, its settings and how long to wait for it."""
    kind: str                        # fake | real
    settings: RunSettings = RunSettings()
    pools_file: str = ""

    @property
    def lease(self) -> str:
        return REAL_CA_LEASE if self.kind == "real" else FAKE_CA_LEASE

    @property
    def label(self) -> str:
        return f"real (scan {self.settings.scan:g}s)" if self.kind == "real" else f"fake (scan {self.settings.scan:g}s)"

    def args(self) -> list[str]:
        s = self.settings
        return s.real_args(self.pools_file) if self.kind == "real" else s.fake_args(self.pools_file)

    @property
    def answer_timeout(self) -> float:      # a new request waits up to one loop, then one loop runs
        return 3 * self.settings.scan + 30

    @property
    def start_timeout(self) -> float:
        return 2 * self.settings.scan + 120 if self.kind == "real" else 30.0


def _wait(w: ProbeWatch, pred, timeout: float) -> bool:
    return bool(poll.eventually(pred, timeout, 0.05))


def _create_request(k: Kube, probe: Probe, a: Ask, pools: dict[str, Pool], templates_done: set[str]) -> None:
    if a.template and a.label not in templates_done and not any(
            s.action == "template" and a.label in s.labels for s in probe.plan()):
        for t in pod_templates(probe, a, pools):
            k.create(POD_TEMPLATE, t, CONFORMANCE_NAMESPACE)
        templates_done.add(a.label)
    k.create(PROVREQ, provisioning_request(probe, a), CONFORMANCE_NAMESPACE)


def run_steps(ctx: Context, probe: Probe, under: Under, pools: dict[str, Pool], w: ProbeWatch, rec: Record) -> None:
    k, scan = ctx.k, under.settings.scan
    by_label = {a.label: a for a in probe.asks}
    templates_done: set[str] = set()
    for step in probe.plan():
        limit = step.seconds + step.scans * scan
        if step.action == "create":
            for label in step.labels:
                _create_request(k, probe, by_label[label], pools, templates_done)
                w.mark(f"created {label}")
        elif step.action == "template":
            for label in step.labels:
                for t in pod_templates(probe, by_label[label], pools):
                    k.create(POD_TEMPLATE, t, CONFORMANCE_NAMESPACE)
                templates_done.add(label)
                w.mark(f"template {label}")
        elif step.action == "delete":
            for label in step.labels:
                k.delete(PROVREQ, probe_provreq_name(probe, by_label[label]), CONFORMANCE_NAMESPACE)
                w.mark(f"deleted {label}")
        elif step.action == "answered":
            names = [probe_provreq_name(probe, by_label[label]) for label in step.labels]
            if not _wait(w, lambda: w.answered(names), limit or under.answer_timeout):
                rec.error = f"no Provisioned/Failed condition on {', '.join(step.labels)} within " \
                            f"{limit or under.answer_timeout:.0f}s"
                return
        elif step.action == "until":
            def answered_yet() -> bool:
                probe_rec = Record(probe.name, under.kind)
                w.record_into(probe_rec)
                return select(probe_rec, step.selector) is not None
            _wait(w, answered_yet, limit)           # not happening is an outcome: the comparison shows it
        elif step.action == "pod":
            for label in step.labels:
                _start_pod(k, probe, by_label.get(label), label, pools)
                w.mark(f"pod {label}")
        elif step.action == "wait":
            ctx.hold(limit, "the probe's wait step")
        else:
            raise ValueError(f"probe {probe.name}: unknown step {step.action!r}")
    ctx.hold(probe.settle_scans * scan + (1.0 if probe.settle_scans else 0.0),
             "the settle scans: what the autoscaler does after its answer")


def _start_pod(k: Kube, probe: Probe, a: Ask | None, label: str, pools: dict[str, Pool]) -> None:
    """A pod consuming request `a` (its first Pods's shape) bound to free node 0; without a request, a plain
    pending pod of 1 CPU on the on-demand pool that only a scale-up can place (a CPU pod: the real one holds
    back GPU pods younger than 30 s)."""
    if a is None:
        spec = _pod_spec(Pods(1, 0, pool=ON_DEMAND_POOL, cpu="1"), pools)
        k.create(POD, running_pod(f"cf-{probe.name}-{label}", None, spec), CONFORMANCE_NAMESPACE)
        return
    spec = _pod_spec(a.podsets[0], pools)
    spec.pop("nodeSelector", None)
    k.create(POD, running_pod(f"cf-{probe.name}-{label}-pod", "conformance-free-0", spec,
                              consumes=probe_provreq_name(probe, a)), CONFORMANCE_NAMESPACE)


def run_probe(ctx: Context, probe: Probe, under: Under, pools: list[Pool]) -> Record:
    k, live = ctx.k, ctx.live
    by_name = {p.name: p for p in pools}
    rec = Record(probe.name, under.kind, scan=under.settings.scan)
    reset(ctx)
    for i in range(probe.free_nodes):
        k.create(NODE, free_node(pools[0], i))
    if probe.free_nodes:
        ctx.wait(lambda: all(nodes_.usable(live.get(NODE, f"conformance-free-{i}"))
                             for i in range(probe.free_nodes)), 60, "the free nodes to be Ready")
    if probe.busy_gpus:
        spec = _pod_spec(Pods(1, probe.busy_gpus), by_name)
        spec.pop("nodeSelector", None)
        k.create(POD, running_pod(f"cf-{probe.name}-busy", "conformance-free-0", spec), CONFORMANCE_NAMESPACE)
        ctx.wait(lambda: (live.get(POD, f"cf-{probe.name}-busy", CONFORMANCE_NAMESPACE) or {}).get(
            "status", {}).get("phase") == "Running", 60, "the busy pod to run")
    with ProbeWatch(k, {probe_provreq_name(probe, a): a.label for a in probe.asks}, probe.node_groups()) as w:
        w.t0 = time.time()
        try:
            run_steps(ctx, probe, under, by_name, w, rec)
        finally:
            w.record_into(rec)
    reset(ctx)
    return rec


# ---------------------------------------------------------------------------- one autoscaler

def running_autoscaler(k: Kube) -> str | None:
    for lease, what in ((FAKE_CA_LEASE, "the fake autoscaler"), (REAL_CA_LEASE, "the real Cluster Autoscaler")):
        if heartbeat.alive(k, lease):
            return f"{what} is already running (Lease {lease}); conformance starts its own: stop it first"
    return exclusion.real_running(k)


def write_pools(pools: list[Pool], directory: Path) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "conformance-pools.yaml"
    path.write_text(pools_to_yaml(pools))
    return str(path)


def run_under(ctx: Context, under: Under, probes: list[Probe], pools: list[Pool], say=print) -> list[Record]:
    why = running_autoscaler(ctx.k)
    if why:
        raise ScenarioFailed(why)
    ensure_namespace(ctx.k)
    reset(ctx)
    say(f"starting the {under.label} autoscaler: tau-demo {' '.join(under.args())}")
    t = time.monotonic()
    ctl: Controller = start_private(ctx, under.lease, under.args(), f"{under.label} autoscaler",
                                    timeout=under.start_timeout)
    say(f"  started in {time.monotonic() - t:.0f}s")
    records = []
    try:
        for p in probes:
            t = time.monotonic()
            try:
                r = run_probe(ctx, p, under, pools)
            except (ApiError, NotFound, Unreachable, ScenarioFailed) as e:
                r = Record(p.name, under.kind, error=f"{type(e).__name__}: {e}", scan=under.settings.scan)
                reset(ctx)
            records.append(r)
            say(f"  {under.label:18} {p.name:34} {len(r.writes)} write(s), "
                f"{sum(1 for n in r.nodes if n.what == 'created')} node(s) ({time.monotonic() - t:.0f}s)"
                f"{'  ERROR ' + r.error if r.error else ''}")
    finally:
        ctl.stop()
        ctx.started.remove(ctl)
        ctx.wait(lambda: not heartbeat.alive(ctx.k, under.lease), 30, f"the {under.label} autoscaler to stop")
        reset(ctx)
    return records
