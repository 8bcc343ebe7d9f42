"""What every scenario shares: printing, pauses for a presenter, checks, controllers, the event log.

A scenario is a plain function `run(ctx)` that tells its story with ctx.step(...), makes
things happen on the real cluster, and asserts what a user would notice with
ctx.check(...).  Nothing here fakes the cluster.  The background recorder of a Job's
objects is in recorder.py, the controllers a scenario starts in controllers.py.
"""

from __future__ import annotations

import dataclasses
import io
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from demo.jobs.preflight import Gang
from demo.jobs.render import job_template, new_name, render_job
from k8s import node as nodes_
from k8s import poll
from k8s import workload as workloads
from k8s.client import Kube
from k8s.errors import NotFound
from demo.cluster import procs, slots
from k8s.objects import deleting, is_true, meta, owned_by
from k8s.keys import (BOOKING_EXPIRED, DEMO_CLUSTER_QUEUE, DEMO_NAMESPACE, DEMO_POOL, POOL_LABEL, PROFILE, PROVISIONED,
                      SCENARIO_PREFIXES, SPECS_NAMESPACE, TAUCLUSTER_SCENARIO_PREFIX)
from k8s.paths import RUNS
from k8s.resources import (ADMISSION_CHECK, CLUSTER_QUEUE, JOB, LOCAL_QUEUE, NODE, POD, PROVREQ, PROVREQ_CONFIG,
                           RESOURCE_FLAVOR, TAUCLUSTER, WORKLOAD, WORKLOAD_PRIORITY_CLASS)
from demo.timeline.log import EventLog
from .live import LiveReads

NS = DEMO_NAMESPACE
NAMESPACES = (DEMO_NAMESPACE, SPECS_NAMESPACE)      # where scenarios make Jobs, Workloads and LocalQueues


class ScenarioFailed(AssertionError):
    pass


@dataclass(frozen=True)
class Slot:
    """Where a scenario's Jobs go: a namespace, the profile (LocalQueue) there, its ClusterQueue and the node pool its
    flavor places nodes on.  The default is the demo's profile gpu-a100-8, which every scenario shares when they run
    one after another.  Side by side (scenarios/kit/runner.py), each walkthrough scenario but `success` runs in a slot of
    its own, slot_of(its name), which cluster up's TauCluster sets up (manifests/taucluster-demo.yaml, one profile
    each; their pools in manifests/node-pools.yaml): its quota, nodes and pool backoff are nobody else's, and its
    private controllers carry its tag.  `scoped`: the scenario's nodes are its pool's only (the walkthrough's
    scenarios, which use one pool; the other groups use several and see every autoscaler's node)."""
    namespace: str = DEMO_NAMESPACE
    profile: str = PROFILE
    cluster_queue: str = DEMO_CLUSTER_QUEUE
    pool: str = DEMO_POOL
    tag: str = ""                   # "" in the demo's slot; the scenario's name in its own
    scoped: bool = False

    @property
    def node_selector(self) -> str | None:
        """The label selector of the slot's nodes, when scoped."""
        return f"{POOL_LABEL}={self.pool}" if self.scoped else None

    def private(self, name: str) -> str:
        """A name of the scenario's own, for what it starts (a deadline controller's class): the slot's tag added."""
        return f"{name}-{self.tag}" if self.tag else name


def slot_of(scenario: str) -> Slot:
    """The slot of its own a walkthrough scenario runs in side by side (demo/cluster/slots.py: every name wt-<scenario>)."""
    name = slots.slot_name(scenario)
    return Slot(namespace=name, profile=name, cluster_queue=name, pool=name, tag=scenario, scoped=True)


@dataclass
class Check:
    ok: bool
    what: str


@dataclass
class Context:
    k: Kube
    kubeconfig: str
    auto: bool = True
    out: object = sys.stdout
    runs_dir: Path = RUNS
    checks: list[Check] = field(default_factory=list)
    started: list = field(default_factory=list)     # controllers.Controller started by this context
    impersonate: bool = False      # run controllers as their least-privilege ServiceAccounts (tests)
    extra_args: dict = field(default_factory=dict)   # per controller kind, e.g. {"fake-ca": ["--booking", "8s"]}
    name: str = ""
    autoscaler: str = "fake"       # which autoscaler answers: "fake" (fake_ca) or "real" (`tau-demo real-ca`)
    verdicts: list = field(default_factory=list)     # upstream scenarios: does the report reproduce here?
    title: str = ""                # the scenario being told (its header), for the live page
    spec_results: list = field(default_factory=list)     # Kueue's specs: what each one showed (kueue_specs.kit)
    cluster: str = ""              # a MultiKueue worker's context: the worker's name (its controllers' files say it)
    slot: Slot = field(default_factory=Slot)     # where its Jobs go (Slot)
    namespaces: tuple[str, ...] = NAMESPACES     # where scenarios make Jobs, Workloads, LocalQueues: leftovers() looks

    @property
    def live(self) -> LiveReads:
        """What is now (scenarios/kit/live.py): the one way a story reads the cluster live; writes stay on `k`."""
        return LiveReads(self.k)

    def child(self, slot: Slot, out=None) -> "Context":
        """The context of one scenario run side by side: its own slot, output, checks and started controllers (the
        connection, the settings, the run's verdicts and spec results and the controllers the run started are
        shared)."""
        return dataclasses.replace(self, slot=slot, out=out if out is not None else io.StringIO(), checks=[],
                                   started=[], title="")

    def injected(self, params: dict) -> dict:
        """ProvisioningRequest parameters that inject a fault into the fake autoscaler; none against the real
        one (it has no such knobs), so a scenario runs unchanged with --autoscaler real."""
        return {} if self.autoscaler == "real" else dict(params)

    # ------------------------------------------------------------------ telling the story
    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def header(self, title: str) -> None:
        self.title = title
        self.say()
        self.say("=" * 78)
        self.say(f"  {title}")
        self.say("=" * 78)

    def step(self, text: str) -> None:
        self.say(f"\n▶ {text}")
        if not self.auto and sys.stdin.isatty():
            input("  (press Enter) ")

    def check(self, ok: bool, what: str) -> bool:
        self.checks.append(Check(bool(ok), what))
        self.say(f"  {'PASS' if ok else 'FAIL'}  {what}")
        return bool(ok)

    def hold(self, seconds: float, why: str) -> None:
        """Let `seconds` pass on purpose, `why` saying what for: an observation window (an absence is judged over
        all of it), or the pacing an experiment sets.  Never a grace for a write's effect to show: that is waited
        for by its resourceVersion (live.caught_up).  The one pause of a story (tests/unit/test_story_reads.py)."""
        if seconds > 0:
            time.sleep(seconds)

    def require(self, ok: bool, what: str) -> None:
        """A check the rest of the scenario depends on: stop the scenario when it fails."""
        if not self.check(ok, what):
            raise ScenarioFailed(what)

    # ------------------------------------------------------------------ jobs
    def new_name(self, prefix: str = "job-train") -> str:
        return new_name(prefix)

    def submit(self, name: str, gang: str = "2x8", duration: str = "10s", deadline: str | None = None,
               provreq: dict | None = None, annotations: dict | None = None, profile: str | None = None,
               namespace: str | None = None, shape=None) -> dict:
        """Submit the researcher's Job (manifests/gpu-job.yaml) to the slot's profile (or `profile` in `namespace`).
        `shape(job)`, if given, changes the rendered Job before it is created (another pod shape, labels)."""
        profile, namespace = profile or self.slot.profile, namespace or self.slot.namespace
        job = render_job(job_template(), name, namespace, profile, Gang.parse(gang), duration, deadline, provreq or {},
                         annotations)
        if shape is not None:
            shape(job)
        created = self.k.create(JOB, job, namespace)
        what = f"{gang} GPU"
        if shape is not None:         # say what was submitted, not what the gang said
            c = job["spec"]["template"]["spec"]["containers"][0]
            what = f"{job['spec'].get('parallelism')} pod(s) of " + ", ".join(
                f"{r} {q}" for r, q in (c.get("resources", {}).get("requests") or {}).items())
        self.say(f"  job {namespace}/{name} submitted ({what}"
                 f"{f', deadline {deadline}' if deadline else ''}"
                 f"{''.join(f', {k}={v}' for k, v in (provreq or {}).items())})")
        return created

    def wait(self, pred, timeout: float, what: str, interval: float = 0.25):
        """pred()'s first truthy value; ScenarioFailed after `timeout` (the story stops there; a check that must
        be able to fail waits with poll.eventually instead)."""
        try:
            return poll.until(pred, timeout, what, interval)
        except poll.WaitTimedOut as e:
            raise ScenarioFailed(str(e)) from None

    def slot_args(self) -> list[str]:
        """What `tau-demo submit` and `preflight` need to be told to use the slot ([] on the demo's)."""
        same = (self.slot.profile, self.slot.namespace) == (PROFILE, DEMO_NAMESPACE)
        return [] if same else ["--profile", self.slot.profile, "-n", self.slot.namespace]

    def pool_nodes(self, pool: str | None = None) -> list[dict]:
        """The pool's live nodes (the slot's by default), read now."""
        pool = pool or self.slot.pool
        return nodes_.of_pool(self.live.list(NODE, selector=f"{POOL_LABEL}={pool}"), pool)

    def autoscaler_nodes(self) -> list[dict]:
        """The live nodes of every pool (the autoscaler's node groups), read now."""
        return [n for n in self.live.list(NODE, selector=POOL_LABEL) if nodes_.live(n)]

    def wait_pool_empty(self, timeout: float = 120) -> None:
        """Until the slot's pool is back to 0 (scoped), or every pool (the other groups use several); if not,
        the failure says what holds the nodes that are left (their pods, the requests still booked)."""
        left = self.pool_nodes if self.slot.scoped else self.autoscaler_nodes
        what = f"pool {self.slot.pool} to scale back to 0" if self.slot.scoped else "the pools to scale back to 0"
        try:
            self.wait(lambda: not left(), timeout, what)
        except ScenarioFailed as e:
            raise ScenarioFailed(f"{e}; {self.what_holds(left())}") from None

    def what_holds(self, nodes: list[dict]) -> str:
        """The nodes left, each with the pods bound to it, and the requests whose capacity is still booked
        (Provisioned=True, BookingExpired not True), read now: what a pool that does not drain is waiting on."""
        names = {meta(n)["name"] for n in nodes}
        pods: dict[str, list[str]] = {}
        for p in self.live.list(POD):
            if (p.get("spec") or {}).get("nodeName") in names:
                pods.setdefault(p["spec"]["nodeName"], []).append(
                    f"{meta(p)['namespace']}/{meta(p)['name']} ({(p.get('status') or {}).get('phase')})")
        booked = [f"{meta(pr)['namespace']}/{meta(pr)['name']}" for pr in self.live.list(PROVREQ)
                  if is_true(pr, PROVISIONED) and not is_true(pr, BOOKING_EXPIRED)]
        shown = [f"{meta(n)['name']} ({'Ready' if nodes_.ready(n) else 'NotReady'}; "
                 f"pods: {', '.join(pods.get(meta(n)['name'], [])) or 'none'})" for n in nodes]
        started = [f"{c.lease} {'running' if procs.read_pid(c.pidfile) else 'NOT RUNNING'} (log {c.logfile}: "
                   f"{(c.log_text().strip().splitlines() or ['none'])[-1][-200:]})" for c in self.started]
        return (f"left: {'; '.join(shown) or 'none'}; requests still booked: {', '.join(booked) or 'none'}"
                + (f"; controllers this scenario started: {'; '.join(started)}" if started else ""))

    def delete_job(self, name: str, wait: bool = True, namespace: str | None = None) -> None:
        namespace = namespace or self.slot.namespace
        job = self.live.get(JOB, name, namespace)
        if job is None:
            return
        uid = job["metadata"]["uid"]
        # its Workloads' ProvisioningRequests go after them (the garbage collector's, owned by the Workload)
        wl_uids = {meta(w)["uid"] for w in self.live.list(WORKLOAD, namespace, selector=workloads.job_selector(uid))}
        self.k.delete(JOB, name, namespace, propagation="Foreground")
        if not wait:
            return

        def left() -> list[tuple[str, dict]]:
            return [(res.kind, o) for res, o in [(JOB, self.live.get(JOB, name, namespace)), *(
                (WORKLOAD, w) for w in self.live.list(WORKLOAD, namespace, selector=workloads.job_selector(uid))), *(
                (PROVREQ, p) for p in self.live.list(PROVREQ, namespace)
                if any(owned_by(p, u, controller=False) for u in wl_uids))] if o]
        try:
            self.wait(lambda: not left(), 60, f"job {name}, its Workload and its requests to go")
        except ScenarioFailed as e:      # what holds them: a finalizer no controller removed, a dependent not gone
            def pod_kind(p: dict) -> str:
                node = p["spec"].get("nodeName")
                gone = " (gone)" if node and self.live.get(NODE, node) is None else ""
                return f"Pod ({(p.get('status') or {}).get('phase')}, on node {node or 'none'}{gone})"
            pods = self.live.list(POD, namespace, selector=f"batch.kubernetes.io/controller-uid={uid}")
            raise ScenarioFailed(f"{e}; left: " + "; ".join(
                f"{kind} {meta(o)['name']} (deleting: {'yes' if deleting(o) else 'no'}, finalizers: "
                f"{', '.join(meta(o).get('finalizers') or []) or 'none'})"
                for kind, o in [*left(), *((pod_kind(p), p) for p in pods)])) from None

    def left_objects(self) -> list[tuple]:
        """Everything a finished scenario must not leave behind, as (resource, name, namespace or None), read now:
        the Jobs, Workloads and ProvisioningRequests of the scenarios' namespaces, every autoscaler's live nodes,
        and the Kueue objects, TauClusters and pods the upstream scenarios, Kueue's specs, the taucluster group and
        the gangs group make (by their names' prefixes).  What leftovers() lists and `tau-demo clean` removes (runner.clean)."""
        out: list[tuple] = []
        for ns in self.namespaces:
            for res in (JOB, WORKLOAD, PROVREQ):
                out += [(res, i["metadata"]["name"], ns) for i in self.live.list(res, ns)]
        out += [(NODE, n["metadata"]["name"], None) for n in self.autoscaler_nodes()]
        scoped = [(LOCAL_QUEUE, ns) for ns in self.namespaces] + [(POD, ns) for ns in self.namespaces] + [
            (res, None) for res in (CLUSTER_QUEUE, ADMISSION_CHECK, RESOURCE_FLAVOR, PROVREQ_CONFIG,
                                    WORKLOAD_PRIORITY_CLASS)]
        for res, ns in scoped:     # the upstream scenarios', the Kueue specs', the taucluster and gangs groups' objects
            out += [(res, i["metadata"]["name"], ns) for i in self.live.list(res, ns)
                    if i["metadata"]["name"].startswith(SCENARIO_PREFIXES)]
        try:
            out += [(TAUCLUSTER, i["metadata"]["name"], None) for i in self.live.list(TAUCLUSTER)
                    if i["metadata"]["name"].startswith(TAUCLUSTER_SCENARIO_PREFIX)]
        except NotFound:              # a cluster without the TauCluster CRD (a MultiKueue manager's) has none
            pass
        return out

    def leftovers(self) -> list[str]:
        """Objects a finished scenario must not leave behind (left_objects), as 'Kind name'."""
        return [f"{res.kind} {name[:60]}" for res, name, _ in self.left_objects()]

    def event_log(self, label: str) -> tuple[EventLog, Path]:
        d = self.runs_dir / time.strftime("%Y%m%d-%H%M%S")
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{label}.jsonl"
        return EventLog(path), path
