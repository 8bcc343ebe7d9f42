"""What a fleet run is, planned before anything is made (pure).

A fleet is N gang Jobs of mixed shapes (1×8, 2×8, 4×8 GPUs by default, drawn by weight), K ClusterQueues in one
cohort and P node pools of 8-GPU nodes.  ClusterQueue q draws on pool q mod P (its flavor's nodeLabels); gang g goes
to a queue drawn at random (seeded).  Arrivals are all at once (`burst`) or a Poisson stream of `rate` gangs a second
(seeded exponential gaps).  Everything is set up by one TauCluster (a profile per queue) at run time.

By default a pool can hold every gang routed to it at once and a queue's GPU quota covers every gang routed to it, so
that nothing binds but the autoscaler's pace: what a fleet run measures.  A pool named in `stockout` has maxNodes 0:
every scale-up on it is refused, as by a cloud out of stock, under either autoscaler.

`refusals()` says, before anything is created, why a fleet cannot run: a gang that never fits its pool's nodes or
its pool's size, or asks for more GPUs than its whole cohort holds.  (A gang has at most 1,000 pods, Gang's bound,
which is also the real CA's --max-nodes-per-scaleup: no gang asks for more nodes than one scale-up may make.)
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from demo.jobs.preflight import Gang, GangError
from k8s.keys import BEST_EFFORT_ATOMIC, GPU

NAMESPACE = "fleet"                    # where the fleet's Jobs, Workloads and ProvisioningRequests live
TAUCLUSTER_NAME = "fleet"                 # the TauCluster that sets the fleet's queues up
COHORT = "fleet"                       # the cohort of the fleet's ClusterQueues
CHECK = "fleet-provisioning"           # the one AdmissionCheck (and ProvisioningRequestConfig) of every queue
DEADLINE_CLASS = "fleet"               # the deadline controller instance the fleet starts handles only these Jobs
NODE_GPUS, NODE_CPUS, NODE_MEMORY = 8, 96, "900Gi"      # one node of a pool: gpupool's shape (manifests/node-pools.yaml)
MAX_GANGS, MAX_QUEUES, MAX_POOLS = 5000, 50, 20
SHAPES = (("1x8", 1), ("2x8", 2), ("4x8", 1))            # the default mix: (shape, weight)
ARRIVALS = ("burst", "poisson")


class FleetError(ValueError):
    """A fleet that cannot run as asked; the message says which setting and why."""


@dataclass(frozen=True)
class FleetSpec:
    gangs: int = 20
    shapes: tuple[tuple[str, int], ...] = SHAPES
    queues: int = 2
    pools: int = 2
    arrival: str = "burst"
    rate: float = 2.0                  # gangs a second, for a Poisson stream
    boot: float = 15.0                 # seconds a new node boots (the fake's; the real CA's kwok nodes are Ready at once)
    stockout: tuple[int, ...] = ()     # pools whose every scale-up is refused (maxNodes 0)
    pool_max: int | None = None        # every pool's maxNodes; None: what its gangs need at once
    gpu_quota: int | None = None       # every queue's GPU quota; None: what its gangs need at once
    run: float = 20.0                  # seconds each pod runs once started
    deadline: float | None = 300.0     # each Job's admission deadline, seconds; None: no deadline
    seed: int = 1


@dataclass(frozen=True)
class GangPlan:
    name: str
    gang: Gang
    queue: int
    pool: int
    at: float                          # seconds after the run's start at which it is submitted

    @property
    def gpus(self) -> int:
        return self.gang.pods * self.gang.gpus


@dataclass(frozen=True)
class Plan:
    spec: FleetSpec
    gangs: tuple[GangPlan, ...]
    pool_max: tuple[int, ...]          # maxNodes of each pool
    gpu_quota: tuple[int, ...]         # GPU quota of each queue
    refused: tuple[str, ...] = field(default=())

    def pool_of_queue(self, q: int) -> int:
        return q % self.spec.pools


def parse_shapes(text: str) -> tuple[tuple[str, int], ...]:
    """"1x8:1,2x8:2,4x8:1" (a weight after each shape, 1 when left out) as ((shape, weight), ...); FleetError."""
    out = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        shape, _, weight = part.partition(":")
        try:
            gang = Gang.parse(shape)
        except GangError as e:
            raise FleetError(f"--shapes {text!r}: {e}".replace("--gang ", "")) from None
        if weight and not weight.strip().isdigit():
            raise FleetError(f"--shapes {text!r}: the weight after {shape.strip()!r} must be a whole number")
        w = int(weight) if weight.strip() else 1
        if w < 1:
            raise FleetError(f"--shapes {text!r}: the weight of {shape.strip()!r} must be at least 1")
        out.append((str(gang), w))
    if not out:
        raise FleetError(f"--shapes {text!r}: give at least one shape, e.g. 1x8:1,2x8:2,4x8:1")
    return tuple(out)


def validate(spec: FleetSpec) -> None:
    """FleetError for a setting out of range (before any plan is drawn)."""
    bounds = (("--gangs", spec.gangs, 1, MAX_GANGS), ("--queues", spec.queues, 1, MAX_QUEUES),
              ("--pools", spec.pools, 1, MAX_POOLS))
    for flag, value, low, high in bounds:
        if not low <= value <= high:
            raise FleetError(f"{flag} {value}: must be {low}..{high}")
    if spec.queues < spec.pools:
        raise FleetError(f"--queues {spec.queues} --pools {spec.pools}: every pool needs a queue that draws on it "
                         "(queue q draws on pool q mod P), so give at least as many queues as pools")
    if spec.arrival not in ARRIVALS:
        raise FleetError(f"--arrival {spec.arrival!r}: must be one of {', '.join(ARRIVALS)}")
    if spec.arrival == "poisson" and not spec.rate > 0:
        raise FleetError(f"--rate {spec.rate}: a Poisson stream needs a rate above 0 gangs a second")
    for j in spec.stockout:
        if not 0 <= j < spec.pools:
            raise FleetError(f"--stockout {j}: no such pool (pools are numbered 0..{spec.pools - 1})")
    if spec.boot < 0 or spec.run < 0 or (spec.deadline is not None and spec.deadline <= 0):
        raise FleetError("--boot and --run must be 0 or more seconds, --deadline more than 0")
    if spec.pool_max is not None and spec.pool_max < 0 or spec.gpu_quota is not None and spec.gpu_quota < 0:
        raise FleetError("--pool-max and --gpu-quota must be 0 or more")


def arrivals(spec: FleetSpec, rng: random.Random) -> list[float]:
    """When each gang is submitted, seconds after the start: all at 0, or a Poisson stream's cumulative gaps."""
    if spec.arrival == "burst":
        return [0.0] * spec.gangs
    t, out = 0.0, []
    for _ in range(spec.gangs):
        out.append(round(t, 3))
        t += rng.expovariate(spec.rate)
    return out


def plan(spec: FleetSpec) -> Plan:
    """The fleet's gangs, pools and quotas, drawn from the seed; FleetError for a setting out of range.  Why the
    fleet cannot run, if it cannot, is in `refused` (refusals())."""
    validate(spec)
    rng = random.Random(spec.seed)
    shapes = [Gang.parse(s) for s, _ in spec.shapes]
    weights = [w for _, w in spec.shapes]
    at = arrivals(spec, rng)
    gangs = []
    for i in range(spec.gangs):
        gang = rng.choices(shapes, weights)[0]
        q = rng.randrange(spec.queues)
        gangs.append(GangPlan(f"fleet-{i:04d}", gang, q, q % spec.pools, at[i]))
    need_nodes = [sum(g.gang.pods for g in gangs if g.pool == j) for j in range(spec.pools)]
    need_gpus = [sum(g.gpus for g in gangs if g.queue == q) for q in range(spec.queues)]
    pool_max = tuple(0 if j in spec.stockout else (spec.pool_max if spec.pool_max is not None else need_nodes[j])
                     for j in range(spec.pools))
    quota = tuple(spec.gpu_quota if spec.gpu_quota is not None else need_gpus[q] for q in range(spec.queues))
    draft = Plan(spec, tuple(gangs), pool_max, quota)
    return Plan(spec, tuple(gangs), pool_max, quota, tuple(refusals(draft)))


def refusals(p: Plan) -> list[str]:
    """Why the fleet cannot run (pure): one line per kind of gang that can never be admitted or never fit."""
    out: set[str] = set()
    cohort = sum(p.gpu_quota)
    for g in p.gangs:
        if g.gang.gpus > NODE_GPUS:
            out.add(f"a {g.gang} gang's pods ask for {g.gang.gpus} GPUs each; a node of every pool has {NODE_GPUS}")
        if g.pool not in p.spec.stockout and g.gang.pods > p.pool_max[g.pool]:
            out.add(f"a {g.gang} gang of queue {g.queue} needs {g.gang.pods} nodes of pool {g.pool}, which holds at "
                    f"most {p.pool_max[g.pool]} (--pool-max)")
        if g.gpus > cohort:
            out.add(f"a {g.gang} gang asks for {g.gpus} GPUs; the whole cohort holds {cohort} (--gpu-quota)")
    return sorted(out)


# ---------------------------------------------------------------------------- what the run makes

def pool_name(j: int) -> str:
    return f"fleet-p{j}"


def queue_name(q: int) -> str:
    return f"fleet-q{q}"


def pools_document(p: Plan) -> dict:
    """The node pools the autoscaler is started with (k8s/pools.py's NodePoolList)."""
    pools = []
    for j, most in enumerate(p.pool_max):
        pools.append({
            "name": pool_name(j), "minNodes": 0, "maxNodes": most, "namePrefix": f"kwok-{pool_name(j)}-vmss",
            "labels": {"agentpool": pool_name(j), "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
            "taints": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}],
            "capacity": {"cpu": str(NODE_CPUS), "memory": NODE_MEMORY, GPU: str(NODE_GPUS), "pods": "110"},
            "allocatable": {"cpu": str(NODE_CPUS - 2), "memory": "880Gi", GPU: str(NODE_GPUS), "pods": "110"},
            "bootSeconds": p.spec.boot})
    return {"apiVersion": "tau-demo.io/v1", "kind": "NodePoolList", "pools": pools}


def taucluster(p: Plan) -> dict:
    """The TauCluster that sets the fleet's queues up: a profile per queue, each its own ClusterQueue in one cohort,
    its flavor on pool q mod P, one AdmissionCheck for all."""
    profiles = []
    for q, quota in enumerate(p.gpu_quota):
        pool = pool_name(p.pool_of_queue(q))
        profiles.append({
            "name": queue_name(q), "namespaces": [NAMESPACE], "clusterQueue": queue_name(q), "cohort": COHORT,
            "admissionCheck": CHECK, "gpuQuota": quota, "provisioningClass": BEST_EFFORT_ATOMIC,
            "flavor": {"name": pool, "nodeLabels": {"agentpool": pool},
                       "tolerations": [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]},
            "retryStrategy": {"backoffLimitCount": 2, "backoffBaseSeconds": 5, "backoffMaxSeconds": 20}})
    return {"apiVersion": "tau-demo.io/v1alpha1", "kind": "TauCluster", "metadata": {"name": TAUCLUSTER_NAME},
            "spec": {"mode": "Manage", "profiles": profiles}}


def without_check(objects: list[dict]) -> list[dict]:
    """The fleet's Kueue objects for a run without the ProvisioningRequest check (the baseline of Kueue's admission
    throughput): the flavors, ClusterQueues and LocalQueues of its profiles, the ClusterQueues admitting at quota
    (pure; `objects` as demo.taucluster.profile.objects gives them, duplicates dropped)."""
    out, seen = [], set()
    for o in objects:
        key = (o["kind"], o["metadata"]["name"], o["metadata"].get("namespace"))
        if o["kind"] in ("AdmissionCheck", "ProvisioningRequestConfig") or key in seen:
            continue
        seen.add(key)
        if o["kind"] == "ClusterQueue":
            o = {**o, "spec": {k: v for k, v in o["spec"].items() if k != "admissionChecksStrategy"}}
        out.append(o)
    return out


def as_run(spec: dict, autoscaler: str) -> dict:
    """A run's fleet (results.json's spec) as its nodes had it: the real autoscaler's kwok nodes are Ready at once
    whatever --boot said (the boot is the fake's), so a real run's boot is 0.  Two runs are of the same fleet when
    these are equal: a real run of boot 15 s is not the same fleet as a fake one of boot 15 s."""
    return {**spec, "boot": 0.0} if autoscaler == "real" else dict(spec)


def summary(p: Plan, autoscaler: str) -> list[str]:
    """What the fleet is, in a few lines (before it runs)."""
    s = p.spec
    boots = (f"nodes Ready at once (the real autoscaler's kwok nodes; --boot {s.boot:g}s is the fake's)"
             if autoscaler == "real" else f"nodes boot in {s.boot:g}s")
    mix = {}
    for g in p.gangs:
        mix[str(g.gang)] = mix.get(str(g.gang), 0) + 1
    pods = sum(g.gang.pods for g in p.gangs)
    how = "all at once" if s.arrival == "burst" else f"a Poisson stream of {s.rate:g} a second"
    return [f"{s.gangs} gangs ({', '.join(f'{n} × {k}' for k, n in sorted(mix.items()))}; {pods} pods, "
            f"{sum(g.gpus for g in p.gangs)} GPUs), submitted {how}",
            f"{s.queues} ClusterQueues in cohort {COHORT} (GPU quota {', '.join(map(str, p.gpu_quota))}), "
            f"{s.pools} pools of {NODE_GPUS}-GPU nodes (maxNodes {', '.join(map(str, p.pool_max))}"
            + (f"; out of stock: {', '.join(pool_name(j) for j in s.stockout)}" if s.stockout else "") + ")",
            f"each pod runs {s.run:g}s; {boots}; "
            + (f"admission deadline {s.deadline:g}s" if s.deadline else "no admission deadline")]
