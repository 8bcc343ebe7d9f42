"""What Kueue's own provisioning specs share: each spec's Kueue objects (a flavor per node pool, its own
ProvisioningRequestConfig, AdmissionCheck, ClusterQueue and LocalQueue in the namespace kueue-specs), its
Jobs and Workloads, a watch of every Workload and ProvisioningRequest version, the checks the spec makes
(an admission check's state and message, a Workload's conditions and reasons, Kueue's events and its eviction
metric, which requests exist with which attempt numbers), and what the spec showed (SpecResult).

Kueue's suite (test/integration/.../provisioning/provisioning_test.go at v0.19.2) runs in envtest and writes
every ProvisioningRequest condition, the quota reservation and evictions by hand.  Here nothing of Kueue's or
of the autoscaler's is written by hand: the scenario makes Jobs, Workloads and queue objects (what a user
makes), the autoscaler writes the request's conditions, and every spec ends by checking, from the
requests' managedFields, that each condition it saw was written by an autoscaler.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Callable

from demo.cluster import kueue_metrics
from demo.jobs import kueue_names as names
from k8s.pools import Pool, load_pools
from k8s import provreq as provreqs_
from k8s import workload as workloads
from k8s.keys import (BEST_EFFORT_ATOMIC, BOOKING_EXPIRED, CHECK_CAPACITY, CHECK_RESET_PREFIX,
                      DEACTIVATED, DEACTIVATED_DUE_TO_ADMISSION_CHECK, DEMO_POOL, EVENT_CHECK_REJECTED, EVICTED,
                      EVICTED_BY_ADMISSION_CHECK, EVICTED_WORKLOADS_METRIC, FAILED, FIELD_MANAGER,
                      GPU, JOB_NAME_LABEL, PARAM_BOOT_SECONDS, PARAM_FAIL_ATTEMPTS, PARAM_NO_RETRY, PRIORITY_CLASS_LABEL,
                      PROVREQ_CONDITIONS, REQUEUED, REQUEUED_BACKOFF_FINISHED, SPEC_PREFIX, SPECS_NAMESPACE, CheckState)
from k8s.objects import condition, is_true, meta, revision, spec as spec_of
from k8s.paths import POOLS_FILE
from k8s.resources import NAMESPACE, POD, PROVREQ, WORKLOAD
from k8s.watch import Event
from k8s.poll import eventually
from k8s.tape import WATCH_LAG, first_sample, within_lag

from ..kit.harness import Context
from ..kit.live import caught_up
from ..kit.scenario import Spec
from ..kit import toolbox
from ..kit.toolbox import AUTOSCALER_MANAGERS
from .table import SOURCE, SpecResult

STANDALONE = "standalone"          # Kueue's replica_role label of a single manager
METRIC_TIMEOUT = 10.0              # seconds a metric is read again until it shows what the spec wants (or is read at all)
METRIC_INTERVAL = 0.5
RESET_AFTER_REJECTED = f"{CHECK_RESET_PREFIX}. Previously: {CheckState.REJECTED}"


def pools() -> dict[str, Pool]:
    return {p.name: p for p in load_pools(POOLS_FILE)}


def flavor_spec(pool: Pool) -> tuple[dict, list]:
    """A ResourceFlavor for a node pool: its node labels and a toleration of each of its taints (what Kueue then
    puts on the Workload's pods and on the ProvisioningRequest's PodTemplates)."""
    return dict(pool.labels), [{"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect}
                               for t in pool.taints]


def quota(flavor: str, resources: dict[str, str]) -> dict:
    """One flavor of a ClusterQueue's resource group: its nominal quota of each resource."""
    return {"name": flavor, "resources": [{"name": r, "nominalQuota": q} for r, q in resources.items()]}


def gpu_group(flavor: str, gpus: str = "24", **more: str) -> dict:
    """A resource group of CPU, memory and GPUs on one flavor: `gpus` GPUs and CPU and memory to spare (`more`:
    other resources' quota)."""
    return {"coveredResources": ["cpu", "memory", GPU, *more],
            "flavors": [quota(flavor, {"cpu": "288", "memory": "2700Gi", GPU: gpus, **more})]}


@dataclass(frozen=True)
class Submitted:
    """A Job a spec submitted, and the names Kueue gives its Workload and that Workload's first request."""
    job: dict
    workload: str
    request: str                      # attempt 1, for the spec's own AdmissionCheck


class SpecEnv:
    """One spec on the cluster: its Kueue objects (made here, deleted at the end, with every Job and Workload
    left in its queue), a watch of the Workloads and ProvisioningRequests of the namespace, and its result."""

    def __init__(self, ctx: Context, spec: Spec):
        self.ctx, self.spec = ctx, spec
        self.name = f"{SPEC_PREFIX}{spec.number}"
        self.objs = toolbox.KueueObjects(ctx)
        self.wls = toolbox.changes(ctx, WORKLOAD, namespace=SPECS_NAMESPACE)
        self.prs = toolbox.changes(ctx, PROVREQ, namespace=SPECS_NAMESPACE)
        self.drivers: list[str] = []
        self.unreached: list[str] = []
        self.flavors: dict[str, str] = {}

    # ------------------------------------------------------------------ the story's frame
    def __enter__(self) -> SpecEnv:
        s = self.spec
        self.ctx.header(f"Kueue v0.19.2 spec {s.number}: {s.title}")
        self.ctx.say(f"  upstream: {SOURCE}:{s.line} (envtest; every condition set by hand)")
        self.ctx.say(f"  here:     {self.ctx.autoscaler} autoscaler; Kueue must: {s.must}")
        # the namespace is one of the demo's objects (manifests/kueue-objects.yaml); made here for a cluster older
        self.ctx.k.apply(NAMESPACE, NAMESPACE.new(SPECS_NAMESPACE), FIELD_MANAGER)
        self.objs.__enter__()
        for w in (self.wls, self.prs):
            w.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        for w in (self.wls, self.prs):
            w.__exit__(exc_type, exc, tb)     # its thread ends at its next event or timeout
        if exc_type is None:
            self.check_writers()
        error = "" if exc_type is None else f"{exc_type.__name__}: {exc}"
        try:
            self.objs.__exit__(exc_type, exc, tb)
        finally:
            checks = [(c.ok, c.what) for c in self.ctx.checks]
            self.ctx.spec_results.append(SpecResult(
                self.spec.number, self.ctx.autoscaler, not error and bool(checks) and all(ok for ok, _ in checks),
                checks, list(self.drivers), list(self.unreached), error))
        return False

    # ------------------------------------------------------------------ Kueue objects
    def flavor(self, pool: str) -> str:
        """A ResourceFlavor of the node pool `pool` (its labels and taints), named after the spec."""
        if pool not in self.flavors:
            labels, tolerations = flavor_spec(pools()[pool])
            name = f"{self.name}-{pool}"
            self.objs.flavor(name, labels, tolerations)
            self.flavors[pool] = name
        return self.flavors[pool]

    def config(self, name: str | None = None, cls: str = BEST_EFFORT_ATOMIC, retry: int = 0, base: int = 2,
               params: dict | None = None, merge: str | None = None) -> str:
        """A ProvisioningRequestConfig: its class, parameters, retryStrategy (retry limit, backoff base)."""
        spec: dict = {"provisioningClassName": cls,
                      "retryStrategy": {"backoffLimitCount": retry, "backoffBaseSeconds": base, "backoffMaxSeconds": 20}}
        if params:
            spec["parameters"] = dict(params)
        if merge:
            spec["podSetMergePolicy"] = merge
        name = name or self.name
        self.objs.provisioning_config(name, spec)
        return name

    def check(self, name: str | None = None, config: str | None = None) -> str:
        """A ProvisioningRequest AdmissionCheck using the config `config`."""
        name = name or self.name
        self.objs.admission_check(name, config=config or self.name)
        return name

    def queue(self, groups: list[dict], checks: list, preemption: dict | None = None) -> str:
        """The spec's ClusterQueue (`groups`: resourceGroups) and a LocalQueue of the same name; waits until Active."""
        self.objs.cluster_queue(self.name, checks, groups, preemption)
        self.objs.local_queue(self.name, self.name, SPECS_NAMESPACE)
        self.objs.wait_active(self.name)
        return self.name

    def standard(self, cls: str = BEST_EFFORT_ATOMIC, retry: int = 0, base: int = 2, params: dict | None = None,
                 merge: str | None = None, gpus: str = "24", preemption: dict | None = None, **more: str) -> str:
        """What most specs use: one flavor (the GPU pool's), one ProvisioningRequest check on it, quota of `gpus`
        GPUs (and of `more` resources); the AdmissionCheck's name."""
        flavor = self.flavor(DEMO_POOL)
        self.config(cls=cls, retry=retry, base=base, params=params, merge=merge)
        check = self.check()
        self.queue([gpu_group(flavor, gpus, **more)], [check], preemption)
        return check

    # ------------------------------------------------------------------ what a user submits
    def job(self, tag: str, pods: int = 1, gpus: int = 1, duration: str = "10s", params: dict | None = None,
            priority: str | None = None, requests: dict | None = None, parallelism: int | None = None) -> Submitted:
        """A Job in the spec's queue: `pods` pods of `gpus` GPUs (the researcher's Job), or of `requests` only (a
        CPU-only Job); `params` reach the autoscaler as ProvisioningRequest parameters; `priority` names a
        WorkloadPriorityClass; `parallelism` overrides the pod count Kueue sees (0: no pod at all)."""
        def shape(job: dict) -> None:
            if priority:
                job["metadata"]["labels"][PRIORITY_CLASS_LABEL] = priority
            if parallelism is not None:       # a Job of parallelism 0 waits for ever (completions=0 would complete it)
                job["spec"]["parallelism"] = parallelism
                job["spec"].pop("completions", None)
            if requests is not None:
                for c in job["spec"]["template"]["spec"]["containers"]:
                    c["resources"] = {"requests": dict(requests)}
        job = self.ctx.submit(self.ctx.new_name(tag), f"{pods}x{gpus}", duration, provreq=params,
                              profile=self.name, namespace=SPECS_NAMESPACE, shape=shape)
        workload = meta(self.workload_of(job))["name"]
        return Submitted(job, workload, self.request_name(workload, 1))

    def workload_of(self, job: dict, timeout: float = 30) -> dict:
        """The Job's Workload once Kueue made it: the one it owns (k8s/workload.of_job), from the watch's store."""
        store = self.wls.stores[WORKLOAD.plural]
        return self.ctx.wait(lambda: workloads.of_job(store.items(), meta(job)["uid"]), timeout,
                             f"Kueue to make the Workload of Job {meta(job)['name']}")

    def admitted_job(self, tag: str, step: str, duration: str, **params: str) -> Submitted:
        """Tell `step`, submit a 1-GPU Job of `duration` (the fake's nodes Ready at once, and `params`), and wait
        until Kueue admits it."""
        self.ctx.step(step)
        sub = self.job(tag, duration=duration, params=fast_boot(self.ctx, **params))
        self.wait_now(sub.workload, workloads.admitted, 90, "Kueue to admit")
        return sub

    def workload_object(self, name: str, podsets: list[dict], annotations: dict | None = None,
                        priority: tuple[str, int] | None = None) -> dict:
        """A Workload made directly (as Kueue's suite makes them): several PodSets, annotations."""
        spec: dict = {"queueName": self.name, "podSets": podsets}
        if priority:
            spec["priorityClassRef"] = {"group": WORKLOAD.group, "kind": "WorkloadPriorityClass", "name": priority[0]}
            spec["priority"] = priority[1]
        obj = WORKLOAD.new(name, SPECS_NAMESPACE, annotations=dict(annotations or {}), spec=spec)
        created = self.ctx.k.create(WORKLOAD, obj, SPECS_NAMESPACE)
        sets = ", ".join(f"{p['name']} x{p['count']}" for p in podsets)
        self.ctx.say(f"  Workload {SPECS_NAMESPACE}/{name} created ({sets})")
        return created

    def new_name(self, tag: str) -> str:
        return f"{tag}-{secrets.token_hex(2)}"

    def request_name(self, workload: str, attempt: int, check: str | None = None) -> str:
        return names.provreq_name(workload, check or self.name, attempt)

    # ------------------------------------------------------------------ reading
    def get(self, workload: str) -> dict | None:
        return self.ctx.live.get(WORKLOAD, workload, SPECS_NAMESPACE)

    def wait_now(self, workload: str, pred: Callable[[dict], object], timeout: float, what: str) -> dict:
        """The Workload, read now, once pred(it) holds; ScenarioFailed after timeout."""
        return self.ctx.wait(lambda: (w := self.get(workload)) is not None and pred(w) and w, timeout,
                             f"{what} ({workload})")

    def caught_up(self, workload: str, obj: dict) -> None:
        """Wait until the watch delivered the version of the Workload that `obj` (a live read) is at."""
        caught_up(lambda: self.versions(workload), obj, self.ctx.wait)

    def wait_seen(self, workload: str, pred: Callable[[dict], object], timeout: float, what: str) -> dict:
        """The first version of the Workload the watch saw for which pred holds (a state Kueue may leave a moment
        later: an eviction, a Retry); ScenarioFailed after timeout."""
        return self.ctx.wait(lambda: (got := first_sample(self.wls.versions(workload), pred)) and got[1], timeout,
                             f"{what} ({workload})")

    def request(self, name: str) -> dict | None:
        return self.ctx.live.get(PROVREQ, name, SPECS_NAMESPACE)

    def wait_request(self, name: str, pred: Callable[[dict], object] = lambda pr: True, timeout: float = 60,
                     what: str = "the request") -> dict:
        """The first version of the request the watch saw for which pred holds (Kueue may delete it a moment
        later: a Rejected check's request goes with the deactivation)."""
        return self.ctx.wait(lambda: (got := first_sample(self.prs.versions(name), pred)) and got[1], timeout,
                             f"{what} ({name})")

    def scheduled_pods(self, job: dict) -> list[dict]:
        """The Job's pods that are bound to a node, read now."""
        pods = self.ctx.live.list(POD, SPECS_NAMESPACE, selector=f"{JOB_NAME_LABEL}={meta(job)['name']}")
        return [p for p in pods if spec_of(p).get("nodeName")]

    def versions(self, workload: str) -> list[tuple[float, dict]]:
        """Every version of the Workload the watch delivered, as samples: `first(env.versions(wl), pred)` asks when
        pred first held of it (k8s/tape.py's query set)."""
        return self.wls.versions(workload)

    def version_seen(self, workload: str, pred: Callable[[dict], object],
                     grace: float = WATCH_LAG) -> tuple[float, dict] | None:
        """The first version of the Workload the watch delivered for which pred holds, and when, given the watch-lag
        grace to deliver a version a live read has already shown (k8s/tape.py within_lag); None if it still has not."""
        return within_lag(lambda: first_sample(self.versions(workload), pred), grace)

    def seen_at(self, workload: str, pred: Callable[[dict], object], grace: float = WATCH_LAG) -> float | None:
        """When: `version_seen`'s time, or None."""
        got = self.version_seen(workload, pred, grace)
        return got[0] if got else None

    def created(self, prefix: str) -> list[str]:
        """The names of the requests whose name starts with `prefix` (a Workload's: `<workload>-<check>-`), in the
        order they were created."""
        return [meta(o)["name"] for _, typ, o in self.prs.of(prefix=prefix) if typ == Event.ADDED]

    def deletion(self, name: str) -> tuple[float, dict] | None:
        """The request's deletion as the watch saw it: (time, its last state, whose resourceVersion is the
        deletion's etcd revision), or None."""
        return next(((t, o) for t, typ, o in self.prs.of(name) if typ == Event.DELETED), None)

    def deleted(self, name: str) -> float | None:
        gone = self.deletion(name)
        return gone[0] if gone else None

    def attempts(self, workload: str, check: str | None = None) -> list[int]:
        check = check or self.name
        return [provreqs_.attempt({"metadata": {"name": n}}, check) or 0
                for n in self.created(names.provreq_prefix(workload, check))]

    def event(self, workload: str, reason: str) -> list[tuple[str, str]]:
        """(type, message) of each of Kueue's events with this reason on the Workload, read now."""
        return [(e.get("type", ""), e.get("message", ""))
                for e in toolbox.events_of(self.ctx, workload, SPECS_NAMESPACE) if e.get("reason") == reason]

    # ------------------------------------------------------------------ what drove it, and who wrote it
    def driven(self, request: str, ctype: str) -> dict | None:
        """The first version of the request the watch saw with the condition `ctype`; recorded as a driver with its
        status, reason and writer (managedFields)."""
        for _, o in self.prs.versions(request):
            c = condition(o, ctype)
            if c is not None:
                writers = provreqs_.condition_writers(o, ctype)
                self.drivers.append(f"{ctype}={c.get('status')}/{c.get('reason')} on attempt "
                                    f"{provreqs_.attempt(o, None)}, by the {self.ctx.autoscaler} autoscaler "
                                    f"(managedFields: {', '.join(writers) or '?'})")
                return o
        return None

    def check_writers(self) -> None:
        """No condition set by hand: every condition of every request version seen was written by an autoscaler."""
        seen: dict[str, set[str]] = {}
        for _, typ, o in list(self.prs.changes):
            for ctype in PROVREQ_CONDITIONS:
                if condition(o, ctype) is not None:
                    seen.setdefault(ctype, set()).update(provreqs_.condition_writers(o, ctype))
        writers = set().union(*seen.values()) if seen else set()
        self.ctx.check(writers <= AUTOSCALER_MANAGERS,
                       "no condition set by hand: every request condition seen was written by the autoscaler ("
                       + ("; ".join(f"{t}: {', '.join(sorted(w))}" for t, w in sorted(seen.items())) or "none seen")
                       + ")")

    def expect_deactivated(self, wl: str, check: str, message: str) -> dict:
        """What the suite asserts of a Workload whose check was Rejected: inactive; the check once Rejected, now
        Pending "Reset to Pending after eviction. Previously: Rejected"; Kueue's Warning event AdmissionCheckRejected
        naming the check (with the condition's message, as Kueue's code writes it); Evicted by deactivation; the
        eviction metric counted once (Deactivated, AdmissionCheck).  Returns the Workload as last read."""
        got = self.wait_now(wl, lambda w: not workloads.active(w), 30, "Kueue to deactivate the Workload")
        self.ctx.check(not workloads.active(got), "the Workload is deactivated (spec.active=false)")
        rejected = self.seen_at(wl, lambda w: check_entry(w, check).get("state") == CheckState.REJECTED)
        got = self.wait_now(wl, lambda w: check_entry(w, check).get("message") == RESET_AFTER_REJECTED, 30,
                            "the check to be reset")
        entry = check_entry(got, check)
        self.ctx.check(rejected is not None and entry.get("state") == CheckState.PENDING,
                       f"the check was Rejected, then {entry.get('state')}: {entry.get('message')!r}")
        note = f'Deactivated due to AdmissionCheck in Rejected state: "{check}"' + (f" ({message})" if message else "")
        seen = eventually(lambda: self.event(wl, EVENT_CHECK_REJECTED), 15) or []
        self.ctx.check(("Warning", note) in seen,
                       f"event {EVENT_CHECK_REJECTED} (Warning): {seen[0][1] if seen else 'none'}"
                       + ("" if ("Warning", note) in seen else f" (want {note!r})"))
        got = self.wait_now(wl, workloads.deactivated, 30, "the eviction")
        self.ctx.check(workloads.evicted_for(got, DEACTIVATED_DUE_TO_ADMISSION_CHECK),
                       f"Evicted={reason_of(got, EVICTED)}: evicted by deactivation")
        self.check_metric(1, cause=EVICTED_BY_ADMISSION_CHECK)
        return got

    def expect_retry(self, wl: str, check: str, attempt: int) -> None:
        """What the suite asserts after attempt `attempt` failed (or its booking expired) with retries left: the
        Workload evicted (AdmissionCheck), the check reset to Pending with retryCount `attempt` and a
        requeueAfterSeconds, the request deleted, the Workload requeued after the backoff (BackoffFinished) and the
        request of the next attempt made."""
        name = self.request_name(wl, attempt, check)
        self.wait_request(name, lambda p: is_true(p, FAILED) or is_true(p, BOOKING_EXPIRED), 60,
                          f"attempt {attempt} to fail")
        got = self.wait_seen(wl, lambda w: workloads.evicted_for(w, EVICTED_BY_ADMISSION_CHECK)
                             and (check_entry(w, check).get("retryCount") or 0) >= attempt, 30,
                             f"the eviction after attempt {attempt}")
        entry = check_entry(got, check)
        self.ctx.check(entry.get("state") == CheckState.PENDING and entry.get("retryCount") == attempt
                       and entry.get("requeueAfterSeconds") is not None,
                       f"after attempt {attempt}: Evicted={reason_of(got, EVICTED)}; the check {entry.get('state')} "
                       f"({entry.get('message')!r}), retryCount {entry.get('retryCount')}, requeueAfterSeconds "
                       f"{entry.get('requeueAfterSeconds')}")
        gone = eventually(lambda: self.deleted(name), 30)
        self.ctx.check(gone is not None, f"request {name} (attempt {attempt}) deleted")
        following = self.request_name(wl, attempt + 1, check)
        self.wait_request(following, timeout=60, what=f"attempt {attempt + 1}")
        requeued = self.seen_at(wl, lambda w: is_true(w, REQUEUED)
                             and (condition(w, REQUEUED) or {}).get("reason") == REQUEUED_BACKOFF_FINISHED)
        self.ctx.check(requeued is not None, f"requeued after the backoff (Requeued=True/{REQUEUED_BACKOFF_FINISHED}); "
                                             f"attempt {attempt + 1} made: {following}")

    def note_unreached(self, what: str) -> None:
        self.unreached.append(what)
        self.ctx.say(f"  not checked here: {what}")

    # ------------------------------------------------------------------ Kueue's eviction metric
    def evicted_metric(self, reason: str = DEACTIVATED, cause: str = "", priority: str = "") -> float:
        """kueue_evicted_workloads_total for this spec's ClusterQueue (a fresh one: Kueue clears a deleted
        ClusterQueue's series), read now; kueue_metrics.MetricsUnavailable when it could not be read (NotServed:
        this cluster's Kueue serves none this process can read)."""
        return kueue_metrics.counter(self.ctx.k, self.ctx.kubeconfig, EVICTED_WORKLOADS_METRIC,
                                     cluster_queue=self.name, reason=reason, underlying_cause=cause,
                                     priority_class=priority, replica_role=STANDALONE)

    def check_metric(self, want: float, reason: str = DEACTIVATED, cause: str = "",
                     timeout: float = METRIC_TIMEOUT) -> None:
        """A check that the metric reads `want` within `timeout`; a metric that could not be read (an error every
        time it was asked at the end) is a failed check that says so.  Only where this cluster's Kueue serves no
        metrics at all (NotServed: another backend) is the metric noted as not checked here."""
        label = f'{EVICTED_WORKLOADS_METRIC}{{cluster_queue="{self.name}",reason="{reason}",underlying_cause="{cause}"}}'
        try:
            ok, what = metric_verdict(lambda: self.evicted_metric(reason, cause), label, want, timeout)
        except kueue_metrics.NotServed as e:
            self.note_unreached(f"the metric {EVICTED_WORKLOADS_METRIC}: {e}")
            return
        self.ctx.check(ok, what)


def metric_verdict(read: Callable[[], float], label: str, want: float, timeout: float = METRIC_TIMEOUT,
                   interval: float = METRIC_INTERVAL, *, clock: Callable[[], float] = time.monotonic,
                   sleep: Callable[[float], object] | None = None) -> tuple[bool, str]:
    """(ok, what) for a check that `read()` gives `want`: read every `interval` seconds until it does or `timeout`
    passes.  A read that fails (kueue_metrics.MetricsUnavailable: no token, no answer) is tried again within the
    bound; failing still at the end, the check fails saying the metric could not be read (never a pass).
    NotServed is raised to the caller (asking again cannot help).  `clock`, `sleep`: a test's fake time (sleep
    None: the wait's own, k8s/poll.py)."""
    last: dict = {"value": None, "error": ""}

    def ask() -> float | None:
        try:
            value = read()
        except kueue_metrics.NotServed:
            raise
        except kueue_metrics.MetricsUnavailable as e:
            last["error"] = str(e)
            return None
        last["value"], last["error"] = value, ""
        return value

    eventually(ask, timeout, interval, done=lambda got: got == want, clock=clock,
               **({} if sleep is None else {"sleep": sleep}))
    value, error = last["value"], last["error"]
    if error:
        return False, (f"could not read the metric {label} within {timeout:g}s: {error}"
                       + (f" (last value read: {value:g}, want {want:g})" if value is not None else " (never read)"))
    return value == want, f"the metric {label} is {value:g} (want {want:g})"


# ---------------------------------------------------------------------------- failing requests, by autoscaler

@dataclass(frozen=True)
class Failing:
    """How a spec makes the autoscaler fail a Workload's requests: its config's class and parameters, the Job's
    pods and request parameters.  The fake: fakeCAFailAttempts=N on the demo's class (attempts 1..N fail, the
    next is provisioned).  The real CA 1.36.1: check-capacity with noRetry, which it fails at once
    (Failed/CapacityIsNotFound) when the pods do not fit; a pod of 16 GPUs fits no node, so every attempt fails."""
    cls: str
    config_params: dict
    gang: tuple[int, int]               # (pods, GPUs per pod)
    job_params: dict


def failing(ctx: Context, attempts: int, gang_real: tuple[int, int] = (1, 16)) -> Failing:
    if ctx.autoscaler == "real":
        return Failing(CHECK_CAPACITY, {PARAM_NO_RETRY: "true"}, gang_real, {})
    return Failing(BEST_EFFORT_ATOMIC, {}, (1, 1), {PARAM_FAIL_ATTEMPTS: str(attempts), PARAM_BOOT_SECONDS: "0"})


def fast_boot(ctx: Context, **more: str) -> dict:
    """Request parameters for the fake: its new nodes Ready at once (like the kwok provider's), and `more`; none
    for the real CA (it has no such knobs)."""
    return ctx.injected({PARAM_BOOT_SECONDS: "0", **more})


def after_by_revision(before: tuple[float, dict] | None, after: tuple[float, dict] | None, claim: str,
                      missing: str) -> tuple[bool, str]:
    """Did the write `after` come after the write `before` (each as a watch saw it: (time, object))?  Judged by
    etcd revision: the two reach this process on two watches, whose order of arrival proves nothing; the times
    they were seen are said too.  `missing` says what was not seen when one is None.  (ok, what was seen)"""
    if before is None or after is None:
        return False, f"{claim} ({missing})"
    return revision(after[1]) > revision(before[1]), (
        f"{claim}: etcd revision {revision(before[1])}, then {revision(after[1])} "
        f"(seen {after[0] - before[0]:+.2f}s apart)")


# ---------------------------------------------------------------------------- small readers of a Workload

def check_entry(wl: dict | None, check: str) -> dict:
    return workloads.admission_check(wl, check) or {}


def reason_of(wl: dict | None, ctype: str) -> str:
    """`True/Reason` (or `False/Reason`) of a Workload condition, `-` when absent."""
    c = condition(wl, ctype)
    return f"{c.get('status')}/{c.get('reason')}" if c else "-"


def flavors_of(wl: dict | None) -> list[dict]:
    """status.admission.podSetAssignments[].flavors."""
    return [psa.get("flavors") or {} for psa in ((wl or {}).get("status") or {}).get("admission", {}).get(
        "podSetAssignments") or []]
