"""What a fleet run measured, from its event log alone (pure): for each phase of a gang the time from its submission
(p50, p95, p99), the autoscaler's drain rate, Kueue's admission rate, the start skew of each gang's pods, the
deadline's firings split by cause, and the counts over time that the report draws.

The phases, in order: QuotaReserved, request created, Provisioned, Admitted, all pods Running, Succeeded; each
measured from the Job's first sighting to the first sighting of the state, on the watch's clock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .events import NODE, POD, PROVREQ, WORKLOAD, Gang, provreq_state

PHASES = (("QuotaReserved", "reserved"), ("request created", "requested"), ("Provisioned", "provisioned"),
          ("Admitted", "admitted"), ("all pods Running", "running"), ("Succeeded", "succeeded"))
QUANTILES = (50, 95, 99)
SERIES_POINTS = 400              # at most this many points of each count over time


def percentile(xs: list[float], q: float) -> float | None:
    """The nearest-rank q-th percentile (None of nothing)."""
    if not xs:
        return None
    ordered = sorted(xs)
    rank = max(1, -(-len(ordered) * q // 100))           # ceil(n q / 100), at least 1
    return ordered[int(rank) - 1]


def rate(times: list[float]) -> float | None:
    """Events per second over the span from the first to the last (None for fewer than two, or no span)."""
    ts = sorted(times)
    if len(ts) < 2 or ts[-1] <= ts[0]:
        return None
    return (len(ts) - 1) / (ts[-1] - ts[0])


@dataclass(frozen=True)
class Phase:
    name: str
    count: int
    p50: float | None
    p95: float | None
    p99: float | None


def phases(gangs: dict[str, Gang]) -> list[Phase]:
    """Every phase's time from submission, over the gangs that reached it."""
    out = []
    for label, attr in PHASES:
        xs = [getattr(g, attr) - g.submitted for g in gangs.values()
              if getattr(g, attr) is not None and g.submitted is not None]
        out.append(Phase(label, len(xs), *(percentile(xs, q) for q in QUANTILES)))
    return out


def skews(gangs: dict[str, Gang]) -> list[float]:
    """For each gang all of whose pods ran: seconds between its first and its last pod seen Running."""
    return [max(g.pod_running.values()) - min(g.pod_running.values()) for g in gangs.values()
            if g.pods > 1 and len(g.pod_running) >= g.pods]


def firings(gangs: dict[str, Gang], out_of_stock: set[str]) -> dict[str, int]:
    """The deadline's firings: how many timed out, by the state of their request then (events.provreq_state), and
    how many of them were false (the gang's pool was in stock: its capacity was on its way) or true."""
    out: dict[str, int] = {"total": 0, "false": 0, "true": 0}
    for g in gangs.values():
        if g.timed_out is None:
            continue
        out["total"] += 1
        out["true" if g.name in out_of_stock else "false"] += 1
        out[f"cause:{g.cause}"] = out.get(f"cause:{g.cause}", 0) + 1
        if g.bound:
            out[f"bound:{g.bound}"] = out.get(f"bound:{g.bound}", 0) + 1
    return out


def depth(gangs: dict[str, Gang], out_of_stock: set[str]) -> dict[str, float | int | None]:
    """The queue depth a deadline bore: when the first false timeout fired (a gang whose pool was in stock), and how
    many gangs had been provisioned by then, the requests the autoscaler had worked through (None: no false one)."""
    false = [g.timed_out for g in gangs.values() if g.timed_out is not None and g.name not in out_of_stock]
    if not false:
        return {"first_false_timeout": None, "provisioned_before": None}
    first = min(false)
    return {"first_false_timeout": first,
            "provisioned_before": sum(1 for g in gangs.values() if g.provisioned is not None and g.provisioned < first)}


def caught(gangs: dict[str, Gang], out_of_stock: set[str]) -> dict[str, float | int | None]:
    """How fast a real stockout is caught: of the gangs routed to a pool out of stock, how many timed out, and the
    time from each one's submission to its committed timeout (p50, max; None: none timed out)."""
    waits = [g.timed_out - g.submitted for g in gangs.values() if g.name in out_of_stock
             and g.timed_out is not None and g.submitted is not None]
    return {"gangs": sum(1 for g in gangs.values() if g.name in out_of_stock), "timed_out": len(waits),
            "p50": percentile(waits, 50), "max": max(waits, default=None)}


def counts(records: list[dict], fleet_pools: set[str]) -> list[tuple[float, int, int, int, int]]:
    """(t, live nodes of the fleet's pools, pods not finished, requests pending (not yet Provisioned, Failed or
    refused), Workloads admitted) after every record of those kinds."""
    nodes: set[str] = set()
    pods: set[str] = set()
    pending: set[str] = set()
    admitted: set[str] = set()
    out = []
    for r in records:
        kind, name, gone = r["kind"], r["name"], r["type"] == "DELETED"
        if kind == NODE and r.get("owner") in fleet_pools:
            (nodes.discard if gone or r.get("deleting") else nodes.add)(name)
        elif kind == POD:
            (pods.discard if gone or r.get("phase") in ("Succeeded", "Failed") else pods.add)(name)
        elif kind == PROVREQ:
            (pending.add if provreq_state(r) in ("waiting", "accepted") and not gone else pending.discard)(name)
        elif kind == WORKLOAD:
            (admitted.add if r.get("admitted") and not gone else admitted.discard)(name)
        else:
            continue
        out.append((r["t"], len(nodes), len(pods), len(pending), len(admitted)))
    return out


def series(records: list[dict], fleet_pools: set[str]) -> list[tuple[float, int, int, int]]:
    """(t, live nodes, requests pending, Workloads admitted) over the run (counts()), thinned to at most SERIES_POINTS
    points (the last one kept)."""
    points = [(t, n, q, a) for t, n, _, q, a in counts(records, fleet_pools)]
    if len(points) <= SERIES_POINTS:
        return points
    step = len(points) / SERIES_POINTS
    return [points[int(i * step)] for i in range(SERIES_POINTS)] + [points[-1]]


def peak_nodes(records: list[dict], pool: str) -> int:
    """The most live nodes pool `pool` held at once."""
    live: set[str] = set()
    most = 0
    for r in records:
        if r["kind"] == NODE and r.get("owner") == pool:
            (live.discard if r["type"] == "DELETED" or r.get("deleting") else live.add)(r["name"])
            most = max(most, len(live))
    return most


def summary(gangs: dict[str, Gang], records: list[dict], out_of_stock: set[str], fleet_pools: set[str]) -> dict:
    """Everything measured, as plain data (what results.json holds and the report shows)."""
    sk = skews(gangs)
    prov = [g.provisioned for g in gangs.values() if g.provisioned is not None]
    adm = [g.admitted for g in gangs.values() if g.admitted is not None]
    end = max((r["t"] for r in records), default=0.0)
    return {
        "gangs": len(gangs),
        "phases": [vars(p) for p in phases(gangs)],
        "drain_rate": rate(prov),
        "admission_rate": rate(adm),
        "skew": {"gangs": len(sk), "p50": percentile(sk, 50), "p95": percentile(sk, 95), "max": max(sk, default=None),
                 "over_2s": sum(1 for s in sk if s > 2)},
        "firings": firings(gangs, out_of_stock),
        "depth": depth(gangs, out_of_stock),
        "caught": caught(gangs, out_of_stock),
        "succeeded": sum(1 for g in gangs.values() if g.succeeded is not None),
        "requests": sum(len(g.requests) for g in gangs.values()),
        "peak_nodes": {p: peak_nodes(records, p) for p in sorted(fleet_pools)},
        "pod_start_count": sum(len(g.pod_running) for g in gangs.values()),
        "records": len(records),
        "span": end,
        "admission_cdf": sorted(g.admitted - g.submitted for g in gangs.values()
                                if g.admitted is not None and g.submitted is not None),
        "series": series(records, fleet_pools),
    }


def state_at(records: list[dict], fleet_pools: set[str]) -> list[tuple[float, int, int, int]]:
    """(t, live nodes of the fleet's pools, pods not finished, requests pending) over the run (counts()): what an
    autoscaler's loop had to look at then."""
    return [(t, n, p, q) for t, n, p, q, _ in counts(records, fleet_pools)]


def loop_samples(scrapes: list[tuple[float, float, float]], records: list[dict], fleet_pools: set[str]) -> list[dict]:
    """The real autoscaler's loop time against what its loops looked at and did: for each interval between two scrapes
    of its metrics in which it ran loops, the nodes, pods and pending requests at the interval's start, the nodes of
    the fleet's pools made and deleted per loop in it, the loops and the mean seconds a loop."""
    states = state_at(records, fleet_pools)
    added = [r["t"] for r in records if r["kind"] == NODE and r["type"] == "ADDED" and r.get("owner") in fleet_pools]
    gone = [r["t"] for r in records if r["kind"] == NODE and r["type"] == "DELETED" and r.get("owner") in fleet_pools]
    out = []
    for (t0, c0, s0), (t1, c1, s1) in zip(scrapes, scrapes[1:]):
        if c1 <= c0:
            continue
        before = [s for s in states if s[0] <= t0]
        _, n, p, q = before[-1] if before else (0, 0, 0, 0)
        loops = c1 - c0
        out.append({"nodes": n, "pods": p, "requests": q, "made": sum(1 for t in added if t0 < t <= t1) / loops,
                    "deleted": sum(1 for t in gone if t0 < t <= t1) / loops, "loops": loops,
                    "mean": (s1 - s0) / loops})
    return out


KLOG_TIME = re.compile(r"^[IWEF](\d{4}) (\d\d):(\d\d):(\d\d\.\d+)")
SCALE_UP = re.compile(r"Final scale-up plan: (\[.*\])")
GROW = re.compile(r"\{\S+ (\d+)->(\d+)")


def _klog_seconds(line: str) -> float | None:
    m = KLOG_TIME.match(line)
    return None if not m else int(m.group(2)) * 3600 + int(m.group(3)) * 60 + float(m.group(4))


def ca_loops(log_text: str) -> list[dict]:
    """The real autoscaler's loops from its klog (the last run in the file, from its last start): each loop's
    seconds (from its trigger line to the next loop's; a loop whose next one a timer started is left out, its gap
    holds a wait), the nodes its scale-up planned, the nodes its scale-down removed and the soft taints it wrote."""
    lines = log_text.splitlines()
    start = max((i for i, line in enumerate(lines) if "] Cluster Autoscaler " in line), default=0)
    loops: list[dict] = []
    for line in lines[start:]:
        t = _klog_seconds(line)
        if t is None:
            continue
        if "Autoscaler loop triggered" in line:
            if loops:
                loops[-1]["seconds"] = t - loops[-1]["t"]
                loops[-1]["timer"] = "triggered by a " in line
            loops.append({"t": t, "made": 0, "deleted": 0, "taints": 0})
        elif loops and (m := SCALE_UP.search(line)):
            loops[-1]["made"] += sum(int(b) - int(a) for a, b in GROW.findall(m.group(1)))
        elif loops and "Scale-down: removing" in line:
            loops[-1]["deleted"] += 1
        elif loops and "DeletionCandidateOfClusterAutoscaler" in line and line.split("] ", 1)[1].startswith(
                ("Successfully added", "Successfully released")):
            loops[-1]["taints"] += 1
    return [{k: v for k, v in lp.items() if k not in ("t", "timer")} for lp in loops
            if "seconds" in lp and not lp["timer"] and lp["seconds"] >= 0]


def out_of_stock_gangs(plan_gangs, stockout: tuple[int, ...]) -> set[str]:
    """The gangs routed to a pool out of stock: their timeouts are true ones."""
    return {g.name for g in plan_gangs if g.pool in stockout}
