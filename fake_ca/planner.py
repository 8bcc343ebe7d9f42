"""The placement decision for one ProvisioningRequest: pure functions on plain dicts.

It follows the Cluster Autoscaler 1.36.1 (best-effort-atomic and check-capacity provisioning classes):

* Existing capacity first.  All pods of the request are simulated on the Ready nodes, first fit
  in node-name order.  If every pod fits: Provisioned=True/CapacityIsFound, no node is created.
* check-capacity never scales up: any pod that does not fit gives CapacityIsNotFound.
* best-effort-atomic scales ONE pool by exactly the number of nodes the pods that did not fit
  need (all-or-nothing): a pool is an option only when it admits every remaining pod and has
  room for all the new nodes (size + needed <= maxNodes, and at most MAX_NODES_PER_SCALEUP).
  Otherwise CapacityIsNotFound and zero nodes.  The real CA's default expander is least-waste;
  we take the first option in file order, which is deterministic and easy to reason about.

Topology (a project extension, design §10): when a pod template carries TOPOLOGY_LEVEL_LABEL,
every NEW node of the request goes to one topology domain of the pool.  Because Kueue then pins
all pods of the request to the domain the autoscaler publishes (podSetUpdates in
manifests/kueue-objects.yaml), pods placed on existing capacity must be in that domain too, so
for such requests existing capacity is searched one domain at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Iterable

from k8s import node as nodes_
from k8s.keys import CHECK_CAPACITY, TOPOLOGY_LEVEL_LABEL
from k8s.objects import labels as labels_of
from k8s.objects import name as obj_name
from k8s.quantity import format_milli

from .conditions import Reason
from k8s.pools import Pool, node_manifest
from .request import PodSet, Request
from .scheduling import (demand_of, eligible_nodes, free_capacity, parse_resources, selector_mismatch, shortfall,
                         subtract)

MAX_NODES_PER_SCALEUP = 1000     # CA's --max-nodes-per-scaleup default


@dataclass
class Verdict:
    fits: bool
    status_reason: str
    pool: Pool | None = None         # the pool to grow (or the one that came closest)
    new_nodes: int = 0               # nodes the gang needs in `pool` (also when it does not fit)
    pool_size: int = 0
    domain: str | None = None        # the one topology domain of a topology request
    placements: list[tuple[int, str]] = field(default_factory=list)
    new_node_pods: list[list[int]] = field(default_factory=list)    # only when it fits
    reason: str = ""
    new_node_domains: list[str | None] = field(default_factory=list)  # per new node

    @property
    def max_nodes(self) -> int | None:
        return self.pool.max_nodes if self.pool else None

    @property
    def nodes_to_create(self) -> int:
        """How many nodes to create: zero unless the request fits (all-or-nothing)."""
        return len(self.new_node_pods) if self.fits else 0

    def line(self, key: str) -> str:
        """The one-line log of the decision."""
        return f"provreq {key}: {self.detail()}"

    def detail(self) -> str:
        """The decision, without the request it is about."""
        if self.fits and not self.new_node_pods:
            nodes = len({n for _, n in self.placements})
            return f"fits on existing capacity ({len(self.placements)} pod(s) on {nodes} node(s)): no node needed"
        if self.pool is not None:
            gang = f"gang needs {self.new_nodes} node(s) of {self.pool.name} (max {self.max_nodes}): "
            return gang + ("fits" if self.fits else f"does not fit: {self.reason}")
        return f"does not fit: {self.reason}"


# ---------------------------------------------------------------------------- existing capacity

def _place_existing(pods: list[PodSet], indexes: Iterable[int], candidates: list[dict],
                    free: dict[str, dict[str, int]]) -> tuple[list[tuple[int, str]], list[int]]:
    """First fit of the pods on the candidate nodes; returns (placements, indexes left over)."""
    free = {name: dict(f) for name, f in free.items()}
    placements, remaining = [], []
    for i in indexes:
        demand = demand_of(pods[i])
        for node in candidates:
            name = obj_name(node)
            if selector_mismatch(pods[i], node) is None and shortfall(demand, free[name]) is None:
                subtract(free[name], demand)
                placements.append((i, name))
                break
        else:
            remaining.append(i)
    return placements, remaining


# ---------------------------------------------------------------------------- new nodes

@dataclass
class _Option:
    """A pool that can take the pods left over: the scale-up to perform."""
    pool: Pool
    pool_size: int
    placements: list[tuple[int, str]]
    bins: list[list[int]]
    domains: list[str | None]
    domain: str | None = None


# the kinds of a refusal: the pool does not admit some pod, has no room, or its node group is backed off
# after a failed scale-up (not an option at all)
SHAPE, SIZE, BACKOFF = "shape", "size", "backoff"


@dataclass
class _Refusal:
    """A pool that cannot take them, and why: kind SHAPE, SIZE or BACKOFF."""
    pool: Pool
    kind: str
    reason: str
    pool_size: int = 0
    needed: int = 0


def _template(pool: Pool, domain: str | None) -> dict:
    """The node a scale-up of `pool` (in `domain`) would create, for predicate checks."""
    return node_manifest(pool, f"{pool.name_prefix}template", domain)


def _admission(ps: PodSet, pool: Pool, domain: str | None) -> str | None:
    """Why a fresh node of pool (in domain) cannot run the pod; None if it can."""
    why = selector_mismatch(ps, _template(pool, domain))
    if why:
        return why
    lack = shortfall(demand_of(ps), parse_resources(pool.allocatable))
    if lack:
        res, need, have = lack
        return f"needs {res}={format_milli(res, need)} but a node has {format_milli(res, have)}"
    return None


def _pool_size(pool: Pool, nodes: list[dict]) -> tuple[int, dict[str, int]]:
    """Nodes of the pool (not being deleted), in total and per topology domain."""
    members = nodes_.of_pool(nodes, pool.name)
    per_domain = {d.name: 0 for d in pool.domains}
    for n in members:
        dom = labels_of(n).get(pool.topology_label)     # a pool without a label has no domains to count
        if dom in per_domain:
            per_domain[dom] += 1
    return len(members), per_domain


def _pack(pods: list[PodSet], indexes: list[int], alloc: dict[str, int],
          admitted: dict[int, set]) -> list[tuple[list[int], set]]:
    """First-fit decreasing of the pods onto fresh nodes of one shape.

    Pods are sorted by their largest request relative to the node (dominant share), biggest
    first.  A node's domain set is the intersection of the domains that admit its pods.
    """
    def share(i: int) -> Fraction:
        d = demand_of(pods[i])
        # never empty: every pod takes a pod slot, and a shape that admits it has pods allocatable
        return max(Fraction(v, alloc[r]) for r, v in d.items() if alloc.get(r))

    bins: list[tuple[dict[str, int], list[int], set]] = []
    for i in sorted(indexes, key=share, reverse=True):
        demand = demand_of(pods[i])
        for n, (free, members, doms) in enumerate(bins):
            common = doms & admitted[i]
            if common and shortfall(demand, free) is None:
                subtract(free, demand)
                members.append(i)
                bins[n] = (free, members, common)
                break
        else:
            free = dict(alloc)
            subtract(free, demand)
            bins.append((free, [i], set(admitted[i])))
    return [(sorted(members), doms) for _, members, doms in bins]


def _too_small(pool: Pool, size: int, needed: int) -> str | None:
    if needed > MAX_NODES_PER_SCALEUP:
        return f"{needed} nodes exceed the {MAX_NODES_PER_SCALEUP} allowed in one scale-up"
    if size + needed > pool.max_nodes:
        return f"pool {pool.name} has {size} node(s) and max {pool.max_nodes}, {needed} more needed"
    return None


def _plan_pool(pool: Pool, pods: list[PodSet], remaining: list[int], placements: list[tuple[int, str]],
               nodes: list[dict]) -> _Option | _Refusal:
    """Can `pool` take the remaining pods, without a topology constraint?"""
    size, per_domain = _pool_size(pool, nodes)
    domains = [d.name for d in pool.domains] or [None]
    admitted: dict[int, set] = {}
    for i in remaining:
        admitted[i] = {d for d in domains if _admission(pods[i], pool, d) is None}
        if not admitted[i]:
            why = _admission(pods[i], pool, domains[0])
            return _Refusal(pool, SHAPE, f"pod of {pods[i].template_name}: {why}")
    bins = _pack(pods, remaining, parse_resources(pool.allocatable), admitted)
    needed = len(bins)
    why = _too_small(pool, size, needed)
    if why:
        return _Refusal(pool, SIZE, why, size, needed)
    if not pool.domains:
        return _Option(pool, size, placements, [b for b, _ in bins], [None] * needed)
    room = {d.name: d.max_nodes - per_domain[d.name] for d in pool.domains}
    total_room = sum(max(r, 0) for r in room.values())
    chosen: list[str | None] = []
    for _, doms in bins:          # greedy: each node to the first domain (file order) with room
        dom = next((d for d in domains if d in doms and room[d] > 0), None)
        if dom is None:
            return _Refusal(pool, SIZE, f"the topology domains of {pool.name} have room for "
                                        f"{total_room} more node(s), {needed} needed", size, needed)
        room[dom] -= 1
        chosen.append(dom)
    return _Option(pool, size, placements, [b for b, _ in bins], chosen)


def _plan_pool_topology(pool: Pool, pods: list[PodSet], eligible: list[dict], free: dict[str, dict[str, int]],
                        nodes: list[dict]) -> _Option | _Refusal:
    """Can `pool` take the request with all its new nodes (and pods) in one topology domain?"""
    if not pool.domains:
        return _Refusal(pool, SHAPE, f"pool {pool.name} has no topology domains "
                                     f"(the pods carry {TOPOLOGY_LEVEL_LABEL})")
    size, per_domain = _pool_size(pool, nodes)
    tries = []                    # (domain, placements, bins, room) for domains that admit the pods
    shape_whys = []               # why each domain that does not admit some pod refuses it
    for d in pool.domains:
        candidates = [n for n in eligible if labels_of(n).get(pool.topology_label) == d.name]
        placements, remaining = _place_existing(pods, range(len(pods)), candidates, free)
        whys = [(i, _admission(pods[i], pool, d.name)) for i in remaining]
        bad = next(((i, w) for i, w in whys if w), None)
        if bad:
            shape_whys.append(f"pod of {pods[bad[0]].template_name}: {bad[1]} (domain {d.name})")
            continue
        admitted = {i: {d.name} for i in remaining}
        bins = [b for b, _ in _pack(pods, remaining, parse_resources(pool.allocatable), admitted)]
        room = d.max_nodes - per_domain[d.name]
        if len(bins) <= room and _too_small(pool, size, len(bins)) is None:
            return _Option(pool, size, placements, bins, [d.name] * len(bins), domain=d.name)
        tries.append((d.name, bins, room))
    if not tries:                 # then no domain admits the pods: quote the first
        return _Refusal(pool, SHAPE, shape_whys[0])
    within = [t for t in tries if len(t[1]) <= t[2]]
    if within:                    # some domain has room, the pool does not
        needed = len(within[0][1])
        return _Refusal(pool, SIZE, _too_small(pool, size, needed), size, needed)    # refused this count
    best = max(tries, key=lambda t: t[2] - len(t[1]))      # closest to fitting; first on ties
    name, bins, room = best
    return _Refusal(pool, SIZE, f"no topology domain of {pool.name} has room for {len(bins)} node(s) "
                                f"(largest room: {max(room, 0)} in {name})", size, len(bins))


# ---------------------------------------------------------------------------- the decision

def _no_pool_reason(pods: list[PodSet], pools: list[Pool], refusals: list[_Refusal]) -> str:
    """Why no pool is even a candidate: name the first pod no pool admits, else each pool's refusal."""
    if not pools:
        return "no node pool is configured"
    podsets = list({id(ps): ps for ps in pods}.values())     # each podset once, in order
    for ps in podsets:
        shaped = [p for p in pools
                  if any(selector_mismatch(ps, _template(p, d)) is None for d in [x.name for x in p.domains] or [None])]
        if not shaped:
            whys = "; ".join(f"{p.name}: {selector_mismatch(ps, _template(p, None))}" for p in pools)
            return f"pod of {ps.template_name} matches no pool ({whys})"
        if any(_admission(ps, p, d) is None for p in shaped for d in [x.name for x in p.domains] or [None]):
            continue
        demand = demand_of(ps)
        for res in sorted(demand):
            largest = max(parse_resources(p.allocatable).get(res, 0) for p in shaped)
            if demand[res] > largest:
                return (f"pod of {ps.template_name} needs {res}={format_milli(res, demand[res])} "
                        f"but the largest node of any pool that admits it has {format_milli(res, largest)}")
        needs = ", ".join(f"{r}={format_milli(r, v)}" for r, v in sorted(ps.requests.items()))
        return f"pod of {ps.template_name} needs {needs}, which no single node shape of {', '.join(p.name for p in shaped)} holds"
    return "no pool can take the whole gang: " + "; ".join(f"{r.pool.name}: {r.reason}" for r in refusals)


def _found(placements: list[tuple[int, str]], domain: str | None = None) -> Verdict:
    return Verdict(fits=True, status_reason=Reason.CAPACITY_FOUND, domain=domain, placements=placements)


def _not_found(reason: str) -> Verdict:
    return Verdict(fits=False, status_reason=Reason.NOT_FOUND, reason=reason)


def _shape(ps: PodSet) -> tuple:
    """Pods of one shape fit the same nodes: same requests, selector, tolerations and affinity."""
    return (tuple(sorted(ps.requests.items())), tuple(sorted(ps.node_selector.items())),
            repr(ps.tolerations), repr(ps.required_terms))


def reserve(booked: list[PodSet], candidates: list[dict], free: dict[str, dict[str, int]]) -> list[str]:
    """Place booked pods first-fit on the candidates and take their capacity out of `free` (in place),
    like the real autoscaler's bookCapacity (TrySchedulePods without breaking on failure): a pod
    that fits nowhere is skipped.  Returns the node each placed pod went to.

    Capacity only shrinks while booking, so a pod of a shape already placed starts its search at the
    node where the last pod of that shape went: first fit all the same, in linear time."""
    placed: list[str] = []
    start: dict[tuple, int] = {}
    names = [obj_name(n) for n in candidates]
    for ps in booked:
        need = demand_of(ps)
        shape = _shape(ps)
        i = start.get(shape, 0)
        while i < len(candidates):
            n = names[i]
            if selector_mismatch(ps, candidates[i]) is None and shortfall(need, free[n]) is None:
                subtract(free[n], need)
                placed.append(n)
                break
            i += 1
        start[shape] = i
    return placed


def booked_nodes(booked: list[PodSet], nodes: list[dict], pods: list[dict]) -> set[str]:
    """The nodes that booked pods occupy in the snapshot: the scale-down planner sees them in use."""
    eligible = eligible_nodes(nodes)
    return set(reserve(list(booked), eligible, free_capacity(eligible, pods)))


def plan(request: Request, pools: list[Pool], nodes: list[dict], pods: list[dict],
         booked: list[PodSet] | None = None, backed_off: dict[str, str] | None = None) -> Verdict:
    """Decide where the request's pods go: existing capacity, new nodes of one pool, or nowhere.

    `nodes` and `pods` are the cluster's Node and Pod objects (booting nodes given as the Ready
    placeholders they will become); `booked` are the pods of other requests whose booking holds
    capacity (placed first, pod-sized, wherever they fit); `backed_off` maps a pool to why it is
    not a scale-up option now (node-group backoff).
    """
    expanded = request.expand()
    eligible = eligible_nodes(nodes)
    free = free_capacity(eligible, pods)
    reserve(list(booked or []), eligible, free)
    backed_off = backed_off or {}

    if request.topology:
        seen = []
        for p in pools:
            for d in p.domains:
                if (p.topology_label, d.name) in seen:
                    continue
                seen.append((p.topology_label, d.name))
                candidates = [n for n in eligible if labels_of(n).get(p.topology_label) == d.name]
                placements, remaining = _place_existing(expanded, range(len(expanded)), candidates, free)
                if not remaining:
                    return _found(placements, d.name)
        if request.class_name == CHECK_CAPACITY:
            return _not_found(f"check-capacity never adds nodes, and no topology domain has free capacity "
                              f"for all {len(expanded)} pod(s)")
        results = [_Refusal(p, BACKOFF, backed_off[p.name]) if p.name in backed_off
                   else _plan_pool_topology(p, expanded, eligible, free, nodes) for p in pools]
        expanded_left = expanded
    else:
        placements, remaining = _place_existing(expanded, range(len(expanded)), eligible, free)
        if not remaining:
            return _found(placements)
        if request.class_name == CHECK_CAPACITY:
            first = expanded[remaining[0]].template_name
            return _not_found(f"check-capacity never adds nodes, and {len(remaining)} of {len(expanded)} pod(s) "
                              f"do not fit on existing capacity (first: a pod of {first})")
        results = [_Refusal(p, BACKOFF, backed_off[p.name]) if p.name in backed_off
                   else _plan_pool(p, expanded, remaining, placements, nodes) for p in pools]
        expanded_left = [expanded[i] for i in remaining]

    option = next((r for r in results if isinstance(r, _Option)), None)
    if option:
        return Verdict(fits=True, status_reason=Reason.CAPACITY_PROVISIONED, pool=option.pool,
                       new_nodes=len(option.bins), pool_size=option.pool_size,
                       domain=option.domain, placements=option.placements,
                       new_node_pods=option.bins, new_node_domains=option.domains)
    refusals = [r for r in results if isinstance(r, _Refusal)]
    sized = next((r for r in refusals if r.kind == SIZE), None)
    backed = next((r for r in refusals if r.kind == BACKOFF), None)
    if backed is not None and sized is None:
        return _not_found(backed.reason)
    if sized:
        return Verdict(fits=False, status_reason=Reason.NOT_FOUND, pool=sized.pool,
                       new_nodes=sized.needed, pool_size=sized.pool_size,
                       reason=sized.reason)
    return _not_found(_no_pool_reason(expanded_left, pools, refusals))
