"""What the TauCluster controller sends besides plan.py's decisions, and when it looks again (pure; the controller is
controller.py): the body of each kind of write, the finalizer a TauCluster gets and gives back, its status (only
when it changed), the wait before the next look, and every line the controller logs."""

from __future__ import annotations

from k8s.keys import MODE_EXTERNAL, TAUCLUSTER_FINALIZER
from k8s.objects import Obj, meta
from . import plan as P

NOT_READY_AGAIN = 2.0          # a profile not ready is looked at again this soon (Kueue's Active comes by itself)


def write_body(w: P.SetupWrite) -> Obj | None:
    """The patch an "update" (the spec put back), an "adopt" or a "release" (the labels and annotations as planned)
    sends; None for a "create" (the object itself) and a "delete" (no body)."""
    md = w.obj["metadata"]
    if w.verb == "update":
        return {"spec": w.obj["spec"]}
    if w.verb in ("adopt", "release"):
        return {"metadata": {k: md[k] for k in ("labels", "annotations") if k in md}}
    return None


def finalizer_added(tc: Obj, mode: str | None) -> Obj | None:
    """The patch that gives a TauCluster not in External mode its finalizer (its other finalizers kept); None when
    it has it, or needs none."""
    have = meta(tc).get("finalizers") or []
    if mode == MODE_EXTERNAL or TAUCLUSTER_FINALIZER in have:
        return None
    return {"metadata": {"finalizers": [*have, TAUCLUSTER_FINALIZER]}}


def finalizer_removed(tc: Obj) -> Obj | None:
    """The patch that takes this controller's finalizer off a deleted TauCluster (the others kept; none left: the
    field goes); None when it does not carry it."""
    have = meta(tc).get("finalizers") or []
    left = [f for f in have if f != TAUCLUSTER_FINALIZER]
    if len(left) == len(have):
        return None
    return {"metadata": {"finalizers": left or None}}


def status_patch(tc: Obj, plans: list[P.ProfilePlan], invalid: str, now: str) -> Obj | None:
    """The status patch of a TauCluster (its mode, the generation observed, each profile's conditions, why its spec
    is invalid), or None when its status already says that."""
    old = tc.get("status") or {}
    generation = meta(tc).get("generation")
    new = {"mode": (tc.get("spec") or {}).get("mode"), "observedGeneration": generation,
           "profiles": P.conditions(plans, old.get("profiles") or [], now, generation),
           **({"invalid": invalid} if invalid else {})}
    if old == new:
        return None
    return {"status": {**new, "invalid": invalid or None}}


def next_look(writes: list[P.SetupWrite], plans: list[P.ProfilePlan]) -> float | None:
    """After every write went through: look again soon while something was written or a profile is not ready
    (Kueue's answer comes by itself), else only on the next change."""
    return NOT_READY_AGAIN if writes or not all(pl.ready.status for pl in plans) else None


# ---------------------------------------------------------------------------- what the controller says

def invalid_line(name: str, error: Exception) -> str:
    return f"taucluster {name}: {error}; nothing done"


def finalized_line(name: str) -> str:
    return f"taucluster {name}: deleted; nothing of it is left, its finalizer goes"


def write_line(name: str, w: P.SetupWrite, error: Exception | None = None) -> str:
    """A write about to be sent (its verb, its object and why), or refused by the apiserver (`error`)."""
    if error is None:
        return f"taucluster {name}: {w.verb} {P.describe(w.obj)}: {w.why}"
    return f"taucluster {name}: {w.verb} {P.describe(w.obj)} refused ({error}); looking again"


def status_not_written_line(name: str, error: Exception) -> str:
    return f"taucluster {name}: status not written: {error}"


def watching_line(kinds: list[str]) -> str:
    return "taucluster: watching TauClusters and their profiles' " + ", ".join(kinds)
