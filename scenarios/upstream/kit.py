"""What the upstream scenarios share: the report's header and verdict, extra Kueue objects made and
removed, a watch that counts creations and deletions, Kueue's events on a Workload, and a small
external AdmissionCheck controller of the scenario's own.

Nothing here writes a field Kueue owns.  The external check controller writes only its own entry of
status.admissionChecks (server-side apply, its own field manager) and its own AdmissionCheck's
Active condition, which is what every external admission check controller does.
"""

from __future__ import annotations

import copy
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

from demo.jobs import observe
from demo.k8s.client import informer
from demo.k8s.errors import ApiError, Conflict, NotFound, Unreachable
from demo.k8s.keys import (ACTIVE, ADMITTED, CHECK_NAME, CLUSTER_QUEUE as DEFAULT_CQ, DEACTIVATION_TARGET, EVICTED,
                           EXTERNAL_CHECK_FIELD_MANAGER, PROVISIONING_CONTROLLER, QUEUE_LABEL, QUOTA_RESERVED)
from demo.k8s.objects import condition, format_time, is_true, labels, meta, status
from demo.k8s.resources import ADMISSION_CHECK, CLUSTER_QUEUE, EVENT, JOB, LOCAL_QUEUE, WORKLOAD, Resource

from ..harness import NS, Context, ScenarioFailed

KUEUE = "kueue.x-k8s.io/v1beta2"


# ---------------------------------------------------------------------------- the report

def begin(ctx: Context, report: dict) -> None:
    """The scenario's opening: the report's number, what it claims, where it was fixed."""
    ctx.header(f"{report['number']}: {report['title']}")
    ctx.say(f"  claim:    {report['claim']}")
    ctx.say(f"  fixed in: {report['fixed_in']}")
    ctx.say("  here:     Kueue v0.19.2 (the pinned release), observed on the cluster, nothing of Kueue's written by hand")


@dataclass
class Verdict:
    number: str
    reproduced: bool
    evidence: str
    layer: str
    picture: str | None = None


def verdict(ctx: Context, report: dict, reproduced: bool, evidence: str, layer: str,
            picture: str | None = None) -> Verdict:
    """Say whether the report reproduces here, with what was observed and which layer bounds it.
    An honest "not reproduced" passes: the check is that the scenario observed enough to say."""
    v = Verdict(report["number"], reproduced, evidence, layer, picture)
    ctx.verdicts.append(v)
    ctx.say(f"\n  {'REPRODUCES here' if reproduced else 'NOT REPRODUCED here'} on Kueue v0.19.2: {evidence}")
    ctx.say(f"  caught by: {layer}")
    if picture:
        ctx.say(f"  timeline: {picture}")
    ctx.check(True, f"verdict on {report['number']}: {'reproduces' if reproduced else 'not reproduced'}")
    return v


# ---------------------------------------------------------------------------- extra Kueue objects

class KueueObjects:
    """Kueue objects a scenario needs besides the demo's: made at its start, deleted at its end (and
    waited for), newest first.  The demo's ClusterQueue is read, never written; that it is untouched
    is checked at the end (its generation)."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.made: list[tuple[Resource, str, str | None]] = []
        self.default_generation = None

    def __enter__(self):
        self.default_generation = meta(self.ctx.k.get(CLUSTER_QUEUE, DEFAULT_CQ)).get("generation")
        return self

    def _create(self, res: Resource, obj: dict, namespace: str | None = None) -> dict:
        out = self.ctx.k.create(res, obj, namespace)
        self.made.append((res, obj["metadata"]["name"], namespace))
        return out

    def admission_check(self, name: str, controller: str = PROVISIONING_CONTROLLER, config: str | None = CHECK_NAME):
        """An AdmissionCheck; a provisioning one shares the demo's ProvisioningRequestConfig."""
        spec: dict = {"controllerName": controller}
        if controller == PROVISIONING_CONTROLLER:
            spec["parameters"] = {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": config}
        return self._create(ADMISSION_CHECK, {"apiVersion": KUEUE, "kind": "AdmissionCheck",
                                              "metadata": {"name": name}, "spec": spec})

    def cluster_queue(self, name: str, checks: list[str], resource_groups: list | None = None) -> dict:
        """A ClusterQueue with the demo's resource groups (its own quota of the same size) and `checks`."""
        groups = resource_groups or copy.deepcopy(self.ctx.k.get(CLUSTER_QUEUE, DEFAULT_CQ)["spec"]["resourceGroups"])
        spec = {"namespaceSelector": {}, "resourceGroups": groups}
        if checks:
            spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": c} for c in checks]}
        return self._create(CLUSTER_QUEUE, {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name},
                                            "spec": spec})

    def local_queue(self, name: str, cluster_queue: str) -> dict:
        return self._create(LOCAL_QUEUE, {"apiVersion": KUEUE, "kind": "LocalQueue",
                                          "metadata": {"name": name, "namespace": NS},
                                          "spec": {"clusterQueue": cluster_queue}}, NS)

    def wait_active(self, cluster_queue: str, timeout: float = 30) -> None:
        self.ctx.wait(lambda: is_true(self.ctx.k.get(CLUSTER_QUEUE, cluster_queue), ACTIVE), timeout,
                      f"ClusterQueue {cluster_queue} to be Active")

    def __exit__(self, exc_type, exc, tb):
        k = self.ctx.k
        queues = {name for res, name, _ in self.made if res is LOCAL_QUEUE}
        for job in k.list(JOB, NS)[0]:          # what a scenario that stopped half-way left in its queues
            if labels(job).get(QUEUE_LABEL) in queues:
                k.delete(JOB, meta(job)["name"], NS, propagation="Foreground")
        for wl in k.list(WORKLOAD, NS)[0]:
            if (wl.get("spec") or {}).get("queueName") in queues:
                k.delete(WORKLOAD, meta(wl)["name"], NS)
        for res, name, ns in reversed(self.made):
            k.delete(res, name, ns)
        try:
            self.ctx.wait(lambda: all(k.get_or_none(res, name, ns) is None for res, name, ns in self.made), 90,
                          "the scenario's Kueue objects to be deleted")
        except ScenarioFailed as e:
            if exc_type is None:
                raise
            self.ctx.say(f"  cleanup after the failure: {e}")
            return False
        untouched = meta(k.get(CLUSTER_QUEUE, DEFAULT_CQ)).get("generation") == self.default_generation
        self.ctx.check(untouched, f"the scenario's {len(self.made)} Kueue objects are deleted; ClusterQueue "
                                  f"{DEFAULT_CQ} is untouched")
        return False


# ---------------------------------------------------------------------------- watching

class Watch:
    """Every change of one resource in the demo namespace, from a watch (not polls), in the background:
    (time, ADDED|MODIFIED|DELETED, object).  Objects listed before it started are not events."""

    def __init__(self, ctx: Context, res: Resource, keep: Callable[[dict], bool] = lambda obj: True):
        self.ctx, self.res, self.keep = ctx, res, keep
        self.events: list[tuple[float, str, dict]] = []
        self.synced = threading.Event()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self):
        self.thread.start()
        self.synced.wait(30)
        return self

    def __exit__(self, *exc):
        self.stop.set()

    def _loop(self):
        for typ, obj in informer(self.ctx.k, self.res, NS, stop=self.stop, timeout_seconds=30):
            if typ == "SYNCED":
                self.synced.set()
            elif typ != "SYNC" and self.keep(obj):
                self.events.append((time.time(), typ, obj))

    def uids(self, typ: str, since: float = 0.0) -> list[str]:
        return [meta(o).get("uid") for t, ty, o in list(self.events) if ty == typ and t >= since]

    def of(self, name: str) -> list[tuple[float, str, dict]]:
        return [e for e in list(self.events) if meta(e[2]).get("name") == name]


def rv(obj: dict) -> int:
    return int(meta(obj).get("resourceVersion") or 0)


def workload_events(ctx: Context, workload: str) -> dict[str, list[str]]:
    """Kueue's events on a Workload: reason -> messages (each once, with its count when > 1)."""
    out: dict[str, list[str]] = {}
    for e in ctx.k.list(EVENT, NS, field_selector=f"involvedObject.name={workload}")[0]:
        n = e.get("count") or ((e.get("series") or {}).get("count")) or 1
        out.setdefault(e.get("reason", ""), []).append(f"{e.get('message', '')}" + (f" (x{n})" if n > 1 else ""))
    return out


# ---------------------------------------------------------------------------- an external admission check

@dataclass
class CheckWrite:
    t: float
    state: str
    message: str
    read: dict                 # the Workload as it was when the decision was made
    written_rv: int


@dataclass
class ExternalCheck:
    """A small AdmissionCheck controller of the scenario's own (its AdmissionCheck's controllerName is
    keys.EXTERNAL_CHECK_CONTROLLER).

    It marks its AdmissionCheck Active, then watches Workloads; on every change it asks
    `policy(workload, my_entry)` for (state, message) and, when that differs from its entry, applies it to
    ITS OWN entry of status.admissionChecks with its own field manager, guarded by the resourceVersion it
    decided on (a 409 waits for the next change).  Every write is kept in `writes`."""
    ctx: Context
    name: str
    policy: Callable[[dict, dict], tuple[str, str] | None] | None = None
    writes: list[CheckWrite] = field(default_factory=list)
    conflicts: int = 0

    def __post_init__(self):
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def activate(self) -> None:
        ac = self.ctx.k.get(ADMISSION_CHECK, self.name)
        self.ctx.k.patch_status(ADMISSION_CHECK, self.name, {"status": {"conditions": [{
            "type": ACTIVE, "status": "True", "reason": "Active", "message": "the scenario's external check",
            "observedGeneration": meta(ac).get("generation"),
            "lastTransitionTime": format_time(datetime.now(timezone.utc))}]}})

    def __enter__(self):
        self.activate()
        threading.Thread(target=self._loop, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.stop.set()

    def mine(self, wl: dict | None) -> dict | None:
        return next((c for c in status(wl).get("admissionChecks") or [] if c.get("name") == self.name), None)

    def _loop(self):
        for typ, wl in informer(self.ctx.k, WORKLOAD, NS, stop=self.stop, timeout_seconds=30):
            if typ in ("ADDED", "MODIFIED", "SYNC"):
                self.consider(wl)

    def poke(self, workload: str) -> None:
        """Decide again on a fresh read (after the policy changed)."""
        try:
            self.consider(self.ctx.k.get(WORKLOAD, workload, NS))
        except NotFound:
            pass

    def consider(self, wl: dict) -> None:
        with self.lock:
            entry = self.mine(wl)
            if entry is None or self.policy is None:
                return
            want = self.policy(wl, entry)
            if want is None or want[0] == entry.get("state"):
                return
            state, message = want
            body = {"apiVersion": KUEUE, "kind": "Workload",
                    "metadata": {"name": meta(wl)["name"], "namespace": NS,
                                 "resourceVersion": meta(wl)["resourceVersion"]},
                    "status": {"admissionChecks": [{
                        "name": self.name, "state": state, "message": message,
                        "lastTransitionTime": format_time(datetime.now(timezone.utc))}]}}
            try:
                out = self.ctx.k.apply(WORKLOAD, body, EXTERNAL_CHECK_FIELD_MANAGER, subresource="status")
            except Conflict:
                self.conflicts += 1
                return
            except (NotFound, ApiError, Unreachable):
                return
            self.writes.append(CheckWrite(time.time(), state, message, wl, rv(out)))


def workload_of(ctx: Context, job: str) -> dict | None:
    """The Workload of a Job, read now."""
    return observe.snapshot(ctx.k, NS, job).workload


def check_entry(wl: dict | None, check: str = CHECK_NAME) -> dict:
    """The Workload's status.admissionChecks entry of `check` ({} when there is none)."""
    return next((c for c in status(wl).get("admissionChecks") or [] if c.get("name") == check), {})


def conditions_line(wl: dict | None) -> str:
    """`active=true QuotaReserved=True Admitted=True Evicted=True/AdmissionCheck` for the story."""
    parts = [f"active={str((wl or {}).get('spec', {}).get('active', True)).lower()}"]
    for t in (QUOTA_RESERVED, ADMITTED, EVICTED, DEACTIVATION_TARGET):
        c = condition(wl, t)
        if c is not None:
            parts.append(f"{t}={c.get('status')}" + (f"/{c.get('reason')}" if c.get("status") == "True"
                                                       and t in (EVICTED, DEACTIVATION_TARGET) else ""))
    return " ".join(parts)
