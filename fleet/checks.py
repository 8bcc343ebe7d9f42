"""The design's invariants over a whole fleet run, from its event log alone (pure).  Each is checked over every
record of the run, never at one moment:

- a committed timeout never runs: a gang whose Workload carries the committed timeout never has a pod Running and
  its Workload is never Admitted after the commit;
- a running Job is never deleted or reported failed: a gang that had a pod Running is never given the timeout's
  mirror, never ends Failed, and its Job is not deleted while the run records (the run's own cleanup comes after);
- a pool never exceeds its maxNodes;
- a request is provisioned once (Provisioned=True never comes back after it left) and no more nodes are made than
  the pods of the provisioned requests need; the nodes made for one request (the fake marks them) are created
  within NODES_TOGETHER seconds of each other.

What is left at the end is checked on the live cluster after the cleanup (run.py), not here.
"""

from __future__ import annotations

from dataclasses import dataclass

from k8s.objects import parse_time

from .events import JOB, NODE, POD, PROVREQ, WORKLOAD, Gang

NODES_TOGETHER = 1.0        # seconds: the creation times (whole seconds) of one request's nodes differ by at most this


@dataclass(frozen=True)
class Verdict:
    name: str
    ok: bool
    detail: str


def _some(names, most: int = 5) -> str:
    names = sorted(names)
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def timeout_never_runs(records: list[dict], gangs: dict[str, Gang]) -> Verdict:
    bad = set()
    for r in records:
        g = gangs.get(r.get("owner") if r["kind"] in (WORKLOAD, POD) else "")
        if g is None or g.timed_out is None:
            continue
        if r["kind"] == POD and r.get("phase") == "Running":
            bad.add(g.name)
        if r["kind"] == WORKLOAD and r.get("admitted") and r["t"] >= g.timed_out:
            bad.add(g.name)
    timed = sum(1 for g in gangs.values() if g.timed_out is not None)
    return Verdict("a committed timeout never runs", not bad,
                   f"{timed} timed out; ran or admitted after the commit: {_some(bad) or 'none'}")


def running_never_failed(records: list[dict], gangs: dict[str, Gang]) -> Verdict:
    ran = {g.name for g in gangs.values() if g.pod_running}
    bad = set()
    for r in records:
        if r["kind"] == JOB and r["name"] in ran and (
                r.get("mirrored") or r.get("outcome") == "failed" or r["type"] == "DELETED"):
            bad.add(r["name"])
    return Verdict("a running Job is never deleted or reported failed", not bad,
                   f"{len(ran)} ran; mirrored, failed or deleted: {_some(bad) or 'none'}")


def pools_within_max(peaks: dict[str, int], pool_max: dict[str, int]) -> Verdict:
    over = {f"{p} ({peaks[p]} > {pool_max.get(p, 0)})" for p in peaks if peaks[p] > pool_max.get(p, 0)}
    return Verdict("a pool never exceeds its maxNodes", not over,
                   f"peaks {', '.join(f'{p} {n}/{pool_max.get(p)}' for p, n in sorted(peaks.items()))}"
                   + (f"; over: {_some(over)}" if over else ""))


def provisioned_once(records: list[dict], gangs: dict[str, Gang], fleet_pools: set[str]) -> Verdict:
    """Each request Provisioned=True once; nodes made at most the pods of the provisioned requests; one request's
    nodes created together."""
    state: dict[str, str] = {}
    again, provisioned = set(), set()
    for r in records:
        if r["kind"] != PROVREQ or r["type"] == "DELETED":
            continue
        key = r.get("uid") or r["name"]          # one request; Kueue may make another of the same name
        now = ((r.get("conditions") or {}).get("Provisioned") or [""])[0]
        if now == "True" and state.get(key) == "left":
            again.add(r["name"])
        if now == "True":
            provisioned.add(key)
        state[key] = "True" if now == "True" else ("left" if state.get(key) in ("True", "left") else "")
    pods_of_request = {req: g.pods for g in gangs.values() for req in g.requests}
    need = sum(pods_of_request.get(req, 0) for req in provisioned)
    made: dict[str, str] = {}
    by_request: dict[str, set[str]] = {}
    for r in records:
        if r["kind"] == NODE and r.get("owner") in fleet_pools and r["type"] != "DELETED":
            made.setdefault(r["name"], r.get("created") or "")
            if r.get("provreq"):
                by_request.setdefault(r["provreq"], set()).add(r["name"])
    apart = set()
    for req, names in by_request.items():
        times = [t.timestamp() for n in names if (t := parse_time(made.get(n)))]
        if times and max(times) - min(times) > NODES_TOGETHER:
            apart.add(req)
    ok = not again and len(made) <= need and not apart
    return Verdict("a request is provisioned once and no more nodes are made than its pods need", ok,
                   f"{len(provisioned)} requests provisioned for {need} pods; {len(made)} nodes made"
                   + (f"; provisioned again: {_some(again)}" if again else "")
                   + (f"; nodes of one request not made together: {_some(apart)}" if apart else ""))


def all_checks(records: list[dict], gangs: dict[str, Gang], peaks: dict[str, int], pool_max: dict[str, int]
               ) -> list[Verdict]:
    return [timeout_never_runs(records, gangs), running_never_failed(records, gangs),
            pools_within_max(peaks, pool_max), provisioned_once(records, gangs, set(pool_max))]
