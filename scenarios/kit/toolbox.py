"""What the scenario families share (upstream, kueue-specs, multikueue, the timeout stories): a report's header and
verdict, extra Kueue objects made and removed, a watch that counts creations and deletions, Kueue's events on a
Workload, and a small external AdmissionCheck controller of the scenario's own.

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

from k8s.errors import ApiError, Conflict, NotFound, Unreachable
from k8s.keys import (ACTIVE, ADMITTED, CA_FIELD_MANAGER, CHECK_NAME, CONFORMANCE_STATIC_LABEL, DEMO_CLUSTER_QUEUE,
                      DEACTIVATION_TARGET, EVICTED, EXTERNAL_CHECK_FIELD_MANAGER, FAKE_CA_FIELD_MANAGER, GPU,
                      KWOK_NODE_ANNOTATION, MANAGED_LABEL, POOL_LABEL, PROVISIONING_CONTROLLER, QUEUE_LABEL,
                      QUOTA_RESERVED)
from k8s.pools import Pool, node_manifest
from k8s import workload as workloads
from k8s.objects import condition, format_time, is_true, labels, meta, revision
from k8s.resources import (ADMISSION_CHECK, CLUSTER_QUEUE, EVENT, JOB, LOCAL_QUEUE, PROVREQ_CONFIG,
                           RESOURCE_FLAVOR, WORKLOAD, WORKLOAD_PRIORITY_CLASS, Resource)
from k8s.watch import Event
from k8s.tape import Tape
from k8s.watch import Watch as BackgroundWatch

from .harness import NAMESPACES, NS, Context, ScenarioFailed
from .scenario import Report


AUTOSCALER_MANAGERS = frozenset({CA_FIELD_MANAGER, FAKE_CA_FIELD_MANAGER})     # who may write a request's conditions


# ---------------------------------------------------------------------------- the report

def about_autoscaler(report: Report) -> bool:
    """A report against the Cluster Autoscaler (kubernetes/autoscaler#...), not against Kueue."""
    return report.number.startswith("kubernetes/autoscaler#")


def subject(ctx: Context, report: Report) -> str:
    """What the report is judged on here: Kueue v0.19.2, or the autoscaler that answered."""
    if not about_autoscaler(report):
        return "Kueue v0.19.2"
    return "the real Cluster Autoscaler 1.36.1" if ctx.autoscaler == "real" else "the fake autoscaler"


def begin(ctx: Context, report: Report) -> None:
    """The scenario's opening: the report's number, what it claims, where it was fixed."""
    ctx.header(f"{report.number}: {report.title}")
    ctx.say(f"  claim:    {report.claim}")
    ctx.say(f"  fixed in: {report.fixed_in}")
    ctx.say(f"  here:     {subject(ctx, report)}" + (" with Kueue v0.19.2" if about_autoscaler(report) else
                                                      " (the pinned release)")
            + ", observed on the cluster, nothing of Kueue's written by hand")


@dataclass
class ReportVerdict:
    number: str
    reproduced: bool
    evidence: str
    layer: str
    picture: str | None = None
    on: str = "Kueue v0.19.2"        # what it was judged on (an autoscaler report: the autoscaler that ran)


def verdict(ctx: Context, report: Report, reproduced: bool, evidence: str, layer: str,
            picture: str | None = None) -> ReportVerdict:
    """Say whether the report reproduces here, with what was observed and which layer bounds it.  The verdict is
    recorded (ctx.verdicts) and said, never counted as a check: either answer is honest, so it cannot fail, and a
    scenario passes only on the checks of what it observed (a scenario with none fails: runner.run_one)."""
    v = ReportVerdict(report.number, reproduced, evidence, layer, picture, subject(ctx, report))
    ctx.verdicts.append(v)
    ctx.say(f"\n  {'REPRODUCES here' if reproduced else 'NOT REPRODUCED here'} on {subject(ctx, report)}: {evidence}")
    ctx.say(f"  caught by: {layer}")
    if picture:
        ctx.say(f"  timeline: {picture}")
    return v


# ---------------------------------------------------------------------------- extra Kueue objects

class KueueObjects:
    """Kueue objects a scenario needs besides the demo's: made at its start, deleted at its end (and
    waited for), newest first, after the Jobs and Workloads left in its queues.  The demo's ClusterQueue is
    read, never written; that it is untouched is checked at the end (its generation)."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.made: list[tuple[Resource, str, str | None]] = []
        self.default_generation = None

    def __enter__(self):
        self.default_generation = meta(self.ctx.live.must(CLUSTER_QUEUE, DEMO_CLUSTER_QUEUE)).get("generation")
        return self

    def _create(self, res: Resource, obj: dict, namespace: str | None = None) -> dict:
        out = self.ctx.k.create(res, obj, namespace)
        self.made.append((res, obj["metadata"]["name"], namespace))
        return out

    def admission_check(self, name: str, controller: str = PROVISIONING_CONTROLLER, config: str | None = CHECK_NAME):
        """An AdmissionCheck; a provisioning one uses the ProvisioningRequestConfig `config` (the demo's by default)."""
        spec: dict = {"controllerName": controller}
        if controller == PROVISIONING_CONTROLLER:
            spec["parameters"] = {"apiGroup": PROVREQ_CONFIG.group, "kind": PROVREQ_CONFIG.kind, "name": config}
        return self._create(ADMISSION_CHECK, ADMISSION_CHECK.new(name, spec=spec))

    def provisioning_config(self, name: str, spec: dict) -> dict:
        """A ProvisioningRequestConfig (made through the apiserver, so the CRD's retryStrategy defaults apply)."""
        return self._create(PROVREQ_CONFIG, PROVREQ_CONFIG.new(name, spec=spec))

    def flavor(self, name: str, node_labels: dict, tolerations: list | None = None) -> dict:
        spec: dict = {"nodeLabels": dict(node_labels)}
        if tolerations:
            spec["tolerations"] = list(tolerations)
        return self._create(RESOURCE_FLAVOR, RESOURCE_FLAVOR.new(name, spec=spec))

    def priority_class(self, name: str, value: int) -> dict:
        return self._create(WORKLOAD_PRIORITY_CLASS, WORKLOAD_PRIORITY_CLASS.new(name, value=value))

    def cluster_queue(self, name: str, checks: list, resource_groups: list | None = None,
                      preemption: dict | None = None) -> dict:
        """A ClusterQueue with `resource_groups` (default: the demo's, its own quota of the same size) and `checks`:
        names, or {name, onFlavors} rules."""
        groups = resource_groups or copy.deepcopy(self.ctx.live.must(CLUSTER_QUEUE, DEMO_CLUSTER_QUEUE)["spec"]["resourceGroups"])
        spec: dict = {"namespaceSelector": {}, "resourceGroups": groups}
        if checks:
            spec["admissionChecksStrategy"] = {"admissionChecks": [c if isinstance(c, dict) else {"name": c}
                                                                   for c in checks]}
        if preemption:
            spec["preemption"] = preemption
        return self._create(CLUSTER_QUEUE, CLUSTER_QUEUE.new(name, spec=spec))

    def local_queue(self, name: str, cluster_queue: str, namespace: str = NS) -> dict:
        return self._create(LOCAL_QUEUE, LOCAL_QUEUE.new(name, namespace, spec={"clusterQueue": cluster_queue}),
                            namespace)

    def wait_active(self, cluster_queue: str, timeout: float = 30) -> None:
        self.ctx.wait(lambda: is_true(self.ctx.live.must(CLUSTER_QUEUE, cluster_queue), ACTIVE), timeout,
                      f"ClusterQueue {cluster_queue} to be Active")

    def __exit__(self, exc_type, exc, tb):
        k, live = self.ctx.k, self.ctx.live
        queues = {(ns, name) for res, name, ns in self.made if res is LOCAL_QUEUE}
        left = []
        for ns in NAMESPACES:                   # what the scenario (or one that stopped half-way) left in its queues
            for job in live.list(JOB, ns):
                if (ns, labels(job).get(QUEUE_LABEL)) in queues:
                    k.delete(JOB, meta(job)["name"], ns, propagation="Foreground")
                    left.append((JOB, meta(job)["name"], ns))
            for wl in live.list(WORKLOAD, ns):
                if (ns, (wl.get("spec") or {}).get("queueName")) in queues:      # with its requests and templates
                    k.delete(WORKLOAD, meta(wl)["name"], ns, propagation="Foreground")
                    left.append((WORKLOAD, meta(wl)["name"], ns))
        if left:                                # their Workloads hold the queues' finalizers
            self.ctx.wait(lambda: all(live.get(*x) is None for x in left), 90, "the scenario's Jobs to go")
        for res, name, ns in reversed(self.made):
            k.delete(res, name, ns)
        try:
            self.ctx.wait(lambda: all(live.get(res, name, ns) is None for res, name, ns in self.made), 90,
                          "the scenario's Kueue objects to be deleted")
        except ScenarioFailed as e:
            if exc_type is None:
                raise
            self.ctx.say(f"  cleanup after the failure: {e}")
            return False
        untouched = meta(live.must(CLUSTER_QUEUE, DEMO_CLUSTER_QUEUE)).get("generation") == self.default_generation
        self.ctx.check(untouched, f"the scenario's {len(self.made)} Kueue objects are deleted; ClusterQueue "
                                  f"{DEMO_CLUSTER_QUEUE} is untouched")
        return False


# ---------------------------------------------------------------------------- watching

def changes(ctx: Context, res: Resource, keep: Callable[[dict], bool] = lambda obj: True,
            namespace: str | None = NS) -> Tape:
    """Every change of one resource in the demo namespace from now on, on a Tape (k8s/tape.py): its `changes`,
    (time, ADDED|MODIFIED|DELETED, object), and the query set over them.  Objects listed before it started are
    not changes."""
    return Tape(ctx.k, (res,), namespace if res.namespaced else None, keep=keep)


def events_of(ctx: Context, workload: str, namespace: str = NS) -> list[dict]:
    """The events recorded on a Workload (Kueue's), read now."""
    return ctx.live.list(EVENT, namespace, fields=f"involvedObject.name={workload}")


def workload_events(ctx: Context, workload: str, namespace: str = NS) -> dict[str, list[str]]:
    """Kueue's events on a Workload: reason -> messages (each once, with its count when > 1)."""
    out: dict[str, list[str]] = {}
    for e in events_of(ctx, workload, namespace):
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
    namespace: str = NS

    def __post_init__(self):
        self.lock = threading.Lock()
        self.watch = BackgroundWatch(self.ctx.k, WORKLOAD, self._event, namespace=self.namespace, listed=True,
                                     timeout_seconds=30)

    def activate(self) -> None:
        ac = self.ctx.live.must(ADMISSION_CHECK, self.name)
        self.ctx.k.patch_status(ADMISSION_CHECK, self.name, {"status": {"conditions": [{
            "type": ACTIVE, "status": "True", "reason": "Active", "message": "the scenario's external check",
            "observedGeneration": meta(ac).get("generation"),
            "lastTransitionTime": format_time(datetime.now(timezone.utc))}]}})

    def __enter__(self):
        self.activate()
        self.watch.start()
        return self

    def __exit__(self, *exc):
        self.watch.stop()

    def mine(self, wl: dict | None) -> dict | None:
        return workloads.admission_check(wl, self.name)

    def _event(self, typ: Event, wl: dict) -> None:
        if typ != Event.DELETED:
            self.consider(wl)

    def poke(self, workload: str) -> None:
        """Decide again on a fresh read (after the policy changed)."""
        try:
            self.consider(self.ctx.live.must(WORKLOAD, workload, self.namespace))
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
            body = WORKLOAD.new(meta(wl)["name"], self.namespace, resourceVersion=meta(wl)["resourceVersion"],
                                status={"admissionChecks": [{
                                    "name": self.name, "state": state, "message": message,
                                    "lastTransitionTime": format_time(datetime.now(timezone.utc))}]})
            try:
                out = self.ctx.k.apply(WORKLOAD, body, EXTERNAL_CHECK_FIELD_MANAGER, subresource="status")
            except Conflict:
                self.conflicts += 1
                return
            except (NotFound, ApiError, Unreachable):
                return
            self.writes.append(CheckWrite(time.time(), state, message, wl, revision(out)))


def workload_of(ctx: Context, job: str, namespace: str = NS) -> dict | None:
    """The Workload of a Job (by name), read now."""
    obj = ctx.live.get(JOB, job, namespace)
    return ctx.live.workload_of(obj) if obj else None


def conditions_line(wl: dict | None) -> str:
    """`active=true QuotaReserved=True Admitted=True Evicted=True/AdmissionCheck` for the story."""
    parts = [f"active={str((wl or {}).get('spec', {}).get('active', True)).lower()}"]
    for t in (QUOTA_RESERVED, ADMITTED, EVICTED, DEACTIVATION_TARGET):
        c = condition(wl, t)
        if c is not None:
            parts.append(f"{t}={c.get('status')}" + (f"/{c.get('reason')}" if c.get("status") == "True"
                                                       and t in (EVICTED, DEACTIVATION_TARGET) else ""))
    return " ".join(parts)


# ---------------------------------------------------------------------------- nodes no autoscaler owns

def free_node(pool: Pool, i: int, name: str | None = None, gpus: int | None = None) -> dict:
    """A GPU node with the pool's shape that no autoscaler owns: the one Node builder's node without the pool
    label, the fake's marks and a providerID (so neither autoscaler takes it for one of its own); `gpus`: another
    GPU count than the pool's."""
    node = node_manifest(pool, name or f"conformance-free-{i}")
    md = node["metadata"]
    for key in (POOL_LABEL, MANAGED_LABEL):
        md["labels"].pop(key)
    md["labels"][CONFORMANCE_STATIC_LABEL] = "true"
    md["annotations"] = {KWOK_NODE_ANNOTATION: "fake"}
    node["spec"].pop("providerID")
    if gpus is not None:
        for part in ("capacity", "allocatable"):
            node["status"][part][GPU] = str(gpus)
    return node
