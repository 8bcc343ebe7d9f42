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


@dataclass(frozen=True)
class LoopModel:
    base: float = 0.0            # seconds a loop takes on a cluster with nothing to look at
    per_node: float = 0.0        # seconds more per node
    per_pod: float = 0.0         # per pod not finished
    per_request: float = 0.0     # per ProvisioningRequest not yet answered


OFF = LoopModel()
MODEL = OFF      # replaced by the fit of the side-by-side runs (docs/autoscaler.md)


def looked_at(nodes: list[dict], pods: list[dict], requests: list[dict]) -> tuple[int, int, int]:
    """What a loop looks at: the nodes, the pods not finished, the requests not yet answered (neither Provisioned
    nor Failed True)."""
    live = sum(1 for p in pods if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))
    waiting = sum(1 for r in requests if not any(
        c.get("type") in ("Provisioned", "Failed") and c.get("status") == "True"
        for c in (r.get("status") or {}).get("conditions") or []))
    return len(nodes), live, waiting


def loop_seconds(model: LoopModel, nodes: int, pods: int, requests: int) -> float:
    """How long a loop of the real autoscaler takes looking at this cluster."""
    return max(0.0, model.base + model.per_node * nodes + model.per_pod * pods + model.per_request * requests)


def rest(model: LoopModel, nodes: int, pods: int, requests: int, spent: float) -> float:
    """What a loop that took `spent` seconds still waits, to last as long as the real one would."""
    return max(0.0, loop_seconds(model, nodes, pods, requests) - spent)


def fit_model(samples: list[tuple[float, float, float, float, float]]) -> LoopModel:
    """The model closest (least squares, weighted by the loops each sample holds) to samples of (nodes, pods, pending
    requests, loops, mean seconds a loop), every coefficient 0 or more: a coefficient the data would make negative is
    dropped and the rest fitted again."""
    names = ["base", "per_node", "per_pod", "per_request"]
    active = list(names)
    while True:
        coef = _least_squares(samples, active)
        negative = [n for n in active if coef[n] < 0 and n != "base"]
        if not negative:
            return LoopModel(**{n: max(0.0, coef.get(n, 0.0)) for n in names})
        active.remove(min(negative, key=lambda n: coef[n]))


def _row(sample: tuple[float, float, float, float, float], active: list[str]) -> list[float]:
    nodes, pods, requests = sample[0], sample[1], sample[2]
    values = {"base": 1.0, "per_node": nodes, "per_pod": pods, "per_request": requests}
    return [values[n] for n in active]


def _least_squares(samples, active: list[str]) -> dict[str, float]:
    """Weighted normal equations, solved by Gaussian elimination with partial pivoting (a singular column: 0)."""
    k = len(active)
    a = [[0.0] * k for _ in range(k)]
    b = [0.0] * k
    for s in samples:
        x, w, y = _row(s, active), s[3], s[4]
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
