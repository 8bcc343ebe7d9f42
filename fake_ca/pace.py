"""The real Cluster Autoscaler's pace: how long one of its loops takes, as a model of what it looks at (pure).

The real autoscaler 1.36.1 takes up one best-effort-atomic ProvisioningRequest per loop, and a loop's own cost
(its snapshot of every node and pod, the scale-up simulation of the request's pods) grows with the cluster: on this
machine that cost, not the scan interval, sets how fast a queue of requests drains.  The fake's own loop costs far
less, so without a model it drains a queue several times faster than the real one.  With `--pace` (the default) the
fake's loop lasts at least `loop_seconds(MODEL, nodes, pods, requests)`: a loop that finishes sooner waits out the
rest, busy as the real one is (no event cuts it short).

MODEL is fitted (`fit_model`, least squares with coefficients ≥ 0) to the real autoscaler's loop time measured against the
nodes, pods and pending requests it looked at, sampled every 2 s during fleet runs (`tau-demo fleet run --autoscaler
real`, fleet/measure.loop_samples); docs/autoscaler.md gives the runs, their commit and the fit.
"""

from __future__ import annotations

from dataclasses import dataclass


FIELDS = ("base", "per_node", "per_pod", "per_request", "per_made", "per_deleted", "per_marked")


@dataclass(frozen=True)
class LoopModel:
    base: float = 0.0            # seconds a loop takes with nothing to look at or do
    per_node: float = 0.0        # seconds more per node it looks at
    per_pod: float = 0.0         # per pod not finished
    per_request: float = 0.0     # per ProvisioningRequest not yet answered
    per_made: float = 0.0        # per node the loop creates (a scale-up's nodes)
    per_deleted: float = 0.0     # per node the loop deletes (scale-down)
    per_marked: float = 0.0      # per node it marks unneeded or needed again (the real one's soft taint, the fake's
                                 # unneeded-since annotation)


@dataclass(frozen=True)
class Loop:
    """What one loop looked at and did."""
    nodes: int = 0
    pods: int = 0
    requests: int = 0
    made: float = 0.0
    deleted: float = 0.0
    marked: float = 0.0


OFF = LoopModel()
# Fitted to 600 loops of the real autoscaler in eight fleet runs of 10 to 200 gangs (docs/autoscaler.md, "A loop's
# pace"): a loop takes 0.80 s (the median of the loops with no scale-down work: 0.80 s whether it made 0, 1, 2 or 4
# nodes, with 0 to 450 nodes, 900 pods and 200 requests in the cluster), then fit_model over per_marked and per_deleted
# on what is left: 0.34 s per soft taint written and 0.29 s per node removed.  Its writes go at client-go's default 5 a
# second (every loop's time is a multiple of 0.2 s); not measurably more per node made, node, pod or request.
MODEL = LoopModel(base=0.80, per_marked=0.34, per_deleted=0.29)
# The real autoscaler writes at most this many soft taints in one loop (--max-bulk-soft-taint-count, 10 by default;
# core/scaledown/actuation/softtaint.go's budget), so a loop pays for at most this many marks: the fake marks every
# node that became unneeded or needed again at once (its unneeded-since annotation).
SOFT_TAINT_BUDGET = 10


def loop_seconds(model: LoopModel, loop: Loop) -> float:
    """How long a loop of the real autoscaler takes, looking at and doing this."""
    return max(0.0, model.base + model.per_node * loop.nodes + model.per_pod * loop.pods
               + model.per_request * loop.requests + model.per_made * loop.made + model.per_deleted * loop.deleted
               + model.per_marked * loop.marked)


def rest(model: LoopModel, loop: Loop, spent: float) -> float:
    """What a loop that took `spent` seconds still waits, to last as long as the real one would."""
    return max(0.0, loop_seconds(model, loop) - spent)


def looked_at(nodes: list[dict], pods: list[dict], requests: list[dict], made: int = 0, deleted: int = 0,
              marked: int = 0) -> Loop:
    """A loop: the nodes, the pods not finished, the requests not yet answered (neither Provisioned nor Failed True)
    it looked at, and the nodes it made, deleted and marked (unneeded, or needed again: at most SOFT_TAINT_BUDGET count,
    as the real one writes no more soft taints in a loop)."""
    live = sum(1 for p in pods if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))
    waiting = sum(1 for r in requests if not any(
        c.get("type") in ("Provisioned", "Failed") and c.get("status") == "True"
        for c in (r.get("status") or {}).get("conditions") or []))
    return Loop(len(nodes), live, waiting, made, deleted, min(marked, SOFT_TAINT_BUDGET))


def fit_model(samples: list[tuple[Loop, float, float]], fields: tuple[str, ...] = FIELDS) -> LoopModel:
    """The model closest (least squares, weighted by the loops each sample holds) to samples of (what the loops
    looked at and did, on average, how many loops, mean seconds a loop), over `fields`, every coefficient 0 or more:
    a coefficient the data would make negative is dropped and the rest fitted again."""
    active = list(fields)
    while True:
        coef = _least_squares(samples, active)
        negative = [n for n in active if coef[n] < 0 and n != "base"]
        if not negative:
            return LoopModel(**{n: max(0.0, coef.get(n, 0.0)) for n in FIELDS})
        active.remove(min(negative, key=lambda n: coef[n]))


def _row(loop: Loop, active: list[str]) -> list[float]:
    values = {"base": 1.0, "per_node": loop.nodes, "per_pod": loop.pods, "per_request": loop.requests,
              "per_made": loop.made, "per_deleted": loop.deleted, "per_marked": loop.marked}
    return [values[n] for n in active]


def _least_squares(samples, active: list[str]) -> dict[str, float]:
    """Weighted normal equations, solved by Gaussian elimination with partial pivoting (a singular column: 0)."""
    k = len(active)
    a = [[0.0] * k for _ in range(k)]
    b = [0.0] * k
    for loop, w, y in samples:
        x = _row(loop, active)
        for i in range(k):
            b[i] += w * x[i] * y
            for j in range(k):
                a[i][j] += w * x[i] * x[j]
    for col in range(k):
        piv = max(range(col, k), key=lambda r: abs(a[r][col]))
        if abs(a[piv][col]) < 1e-12:
            continue
        a[col], a[piv], b[col], b[piv] = a[piv], a[col], b[piv], b[col]
        for r in range(k):
            if r != col and a[r][col]:
                f = a[r][col] / a[col][col]
                a[r] = [x - f * y for x, y in zip(a[r], a[col])]
                b[r] -= f * b[col]
    return {n: (b[i] / a[i][i] if abs(a[i][i]) >= 1e-12 else 0.0) for i, n in enumerate(active)}
