"""A fleet run on a live cluster (I/O): set the fleet up (its namespace, its TauCluster, its pools' autoscaler and a
deadline controller of its own), submit its gangs on their schedule, record every change of their objects, wait for
every gang to end, measure, and remove everything it made — at the end, and (through `cleanup`) when interrupted.

    fleet = Fleet(k, kubeconfig, plan, autoscaler, out_dir, say)
    fleet.refuse()        # why it cannot start here, before anything is made
    fleet.start(); fleet.submit_all(); fleet.wait_done(timeout); fleet.finish(); fleet.cleanup()
"""

from __future__ import annotations

import itertools
import json
import re
import urllib.request
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from demo.cluster import procs
from demo.cluster.state import state_of
from demo.jobs.render import job_template, render_job
from demo.taucluster.profile import objects, parse_all
from k8s import heartbeat, metrics, poll
from k8s import taucluster as tc
from k8s.client import Kube
from k8s.errors import NotFound
from k8s.keys import (CA_STATUS, DEADLINE_CLASS_ANNOTATION, FAKE_CA_LEASE, POOL_LABEL, POOL_TABLE, REAL_CA_LEASE,
                      TAUCLUSTER_LABEL, TAUCLUSTER_LEASE)
from k8s.resources import (CLUSTER_QUEUE, CONFIG_MAP, JOB, LOCAL_QUEUE, NAMESPACE, NODE, POD, PROVREQ,
                           RESOURCE_FLAVOR, TAUCLUSTER, WORKLOAD, Resource)
from k8s.objects import meta
from k8s.tape import Tape
from scenarios.kit.controllers import READY_LINE, Controller, controllers_dir

from . import checks, events, measure, report
from .spec import NAMESPACE as FLEET_NS
from .spec import (DEADLINE_CLASS, TAUCLUSTER_NAME, FleetSpec, Plan, plan, pool_name, pools_document, queue_name,
                   taucluster, without_check)

MANAGER = "tau-demo-fleet"
READY_TIMEOUT = 60.0          # seconds for the TauCluster's profiles to be ProvisioningReady
START_TIMEOUT = 300.0         # seconds for a controller to say its caches synced (the real CA lists first)
GONE_TIMEOUT = 300.0          # seconds for what the fleet made to go at cleanup
SUBMITTERS = 8                # clients that create a burst's Jobs at once
PROGRESS_EVERY = 5.0          # seconds between progress lines
COST_EVERY = 2.0              # seconds between samples of the control plane's memory
TRACKED = {JOB.plural: events.JOB, WORKLOAD.plural: events.WORKLOAD, PROVREQ.plural: events.PROVREQ,
           POD.plural: events.POD, NODE.plural: events.NODE}
COMPONENTS = ("kube-apiserver", "etcd", "kueue", "kube-scheduler", "kube-controller-manager", "kwok-controller")


class FleetRefused(RuntimeError):
    """The fleet cannot start on this cluster; nothing was made."""


def _now(read, pid: int) -> float:
    """procs.cpu_seconds or procs.rss_mb of a process, 0 once it is gone (a controller stopped meanwhile)."""
    try:
        return read(pid)
    except (OSError, IndexError, ValueError):
        return 0.0


RESOURCES = {r.kind: r for r in (RESOURCE_FLAVOR, CLUSTER_QUEUE, LOCAL_QUEUE)}
CA_LOOP_METRIC = "cluster_autoscaler_function_duration_seconds"      # function="main": one per loop


def _fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def real_ca_loops(log_text: str, fetch=_fetch) -> dict[str, float] | None:
    """The real autoscaler's loops so far and their mean duration, from its /metrics (whose port `tau-demo real-ca`
    logs); None when they cannot be read."""
    port = re.search(r"metrics 127\.0\.0\.1:(\d+)", log_text)
    if not port:
        return None
    try:
        text = fetch(f"http://127.0.0.1:{port.group(1)}/metrics")
    except OSError:
        return None
    count = metrics.value(text, CA_LOOP_METRIC + "_count", function="main")
    total = metrics.value(text, CA_LOOP_METRIC + "_sum", function="main")
    if not count:
        return None
    return {"loops": count, "seconds": total or 0.0, "mean_loop_seconds": (total or 0.0) / count}


def ca_log_path(log_text: str) -> Path | None:
    """The real autoscaler's own klog file, which `tau-demo real-ca` names in its start line (pure)."""
    m = re.search(r"started cluster-autoscaler pid \d+ \(.*log (\S+?)\)", log_text)
    return Path(m.group(1)) if m else None


def _read(path: Path | None) -> str:
    try:
        return path.read_text(errors="replace") if path else ""
    except OSError:
        return ""


def requests_by_verb(metrics_text: str) -> dict[str, float]:
    """apiserver_request_total summed by verb, from the apiserver's /metrics text (pure)."""
    out: dict[str, float] = {}
    for line in metrics_text.splitlines():
        if line.startswith("apiserver_request_total{"):
            labels_text, _, value = line[len("apiserver_request_total{"):].rpartition("} ")
            verb = next((p.split("=", 1)[1].strip('"') for p in labels_text.split(",") if p.startswith("verb=")), "")
            out[verb] = out.get(verb, 0.0) + float(value)
    return out


@dataclass
class Fleet:
    k: Kube
    kubeconfig: str
    plan: Plan
    autoscaler: str                       # "fake" or "real"; "none" for a run without the check
    out_dir: Path
    say: object = print
    deadline_flags: tuple[str, ...] = ()  # extra flags of the deadline controller (its rule)
    autoscaler_flags: tuple[str, ...] = ()   # extra flags of the autoscaler (the real CA's go after `--`)
    check: bool = True                    # False: no ProvisioningRequest check, no autoscaler (the admission baseline)
    made: list = field(default_factory=list)            # (resource, name, namespace) in the order made
    controllers: list = field(default_factory=list)
    records: list = field(default_factory=list)
    t0: float = 0.0
    tape: Tape | None = None
    _log: object = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _peaks: dict = field(default_factory=dict)
    _loop_samples: list = field(default_factory=list)     # (t, loops so far, seconds in loops so far): the real CA's
    _cost0: dict = field(default_factory=dict)
    _verbs0: dict = field(default_factory=dict)
    _table_before: dict | None = None
    _status_before: dict | None = None

    # ------------------------------------------------------------------ before anything is made
    def refuse(self) -> None:
        """FleetRefused naming why the fleet cannot start here; nothing is made."""
        why = list(self.plan.refused)
        for lease, who in ((FAKE_CA_LEASE, "the fake autoscaler"), (REAL_CA_LEASE, "the real Cluster Autoscaler")):
            if heartbeat.alive(self.k, lease):
                why.append(f"{who} runs on this cluster (Lease {lease} is fresh): the fleet starts an autoscaler of "
                           "its own with its pools; stop it first")
        if self.check and not heartbeat.alive(self.k, TAUCLUSTER_LEASE):
            why.append("the TauCluster controller is not running (`tau-demo cluster up` starts it)")
        if self.k.get_or_none(TAUCLUSTER, TAUCLUSTER_NAME) is not None:
            why.append(f"TauCluster {TAUCLUSTER_NAME} exists already (an earlier fleet run?): `tau-demo fleet clean` "
                       "removes what a fleet run left")
        if self.k.get_or_none(NAMESPACE, FLEET_NS) is not None and self.k.list(JOB, FLEET_NS)[0]:
            why.append(f"namespace {FLEET_NS} holds Jobs already: `tau-demo fleet clean` removes them")
        if why:
            raise FleetRefused("\n".join(f"  - {w}" for w in why))

    # ------------------------------------------------------------------ setting up
    def start(self) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        pools_file = self.out_dir / "pools.yaml"
        pools_file.write_text(yaml.safe_dump(pools_document(self.plan), sort_keys=False))
        self._table_before = self.k.get_or_none(CONFIG_MAP, POOL_TABLE[1], POOL_TABLE[0])
        self._status_before = self.k.get_or_none(CONFIG_MAP, CA_STATUS[1], CA_STATUS[0])
        self._make(NAMESPACE, NAMESPACE.new(FLEET_NS), None)
        if not self.check:
            self._queues_without_check()
        else:
            self._make(TAUCLUSTER, taucluster(self.plan), None)
            self.say(f"  TauCluster {TAUCLUSTER_NAME}: {self.plan.spec.queues} profiles; waiting for ProvisioningReady")
            poll.until(self._profiles_ready, READY_TIMEOUT,
                       f"TauCluster {TAUCLUSTER_NAME}'s profiles to be ProvisioningReady", 0.5)
            scaler = autoscaler_argv(self.autoscaler, pools_file, self.autoscaler_flags)
            self._controller("fleet-autoscaler", scaler, f"the {self.autoscaler} autoscaler")
            self._controller("fleet-deadline", ["deadline", "--class", DEADLINE_CLASS, "-n", FLEET_NS,
                                                *self.deadline_flags], "the deadline controller")
        self._log = open(self.out_dir / "events.jsonl", "w")
        self.tape = Tape(self.k, [JOB, WORKLOAD, PROVREQ, POD], FLEET_NS, keep=lambda obj: False,
                         on_change=self._changed)
        self.tape.__enter__()
        self._nodes = Tape(self.k, [NODE], node_selector=POOL_LABEL, keep=lambda obj: False, on_change=self._changed)
        self._nodes.__enter__()
        self._cost0, self._verbs0 = self._cost(), requests_by_verb(self.k.raw("/metrics"))
        threading.Thread(target=self._sample_memory, name="fleet-cost", daemon=True).start()

    def _queues_without_check(self) -> None:
        """The fleet's flavors and queues, admitting at quota: no check, no autoscaler, no node (the baseline)."""
        profiles = parse_all(taucluster(self.plan)["spec"]["profiles"])
        for obj in without_check([o for p in profiles for o in objects(p, TAUCLUSTER_NAME)]):
            self.k.apply(RESOURCES[obj["kind"]], obj, MANAGER)
        self.say(f"  {self.plan.spec.queues} ClusterQueues without the ProvisioningRequest check; no autoscaler")

    def _make(self, res: Resource, obj: dict, namespace: str | None) -> None:
        self.k.apply(res, obj, MANAGER)
        self.made.append((res, obj["metadata"]["name"], namespace))

    def _profiles_ready(self) -> bool:
        obj = self.k.get_or_none(TAUCLUSTER, TAUCLUSTER_NAME)
        return bool(obj) and all(tc.reading(obj, queue_name(q), True).ready and not tc.reading(obj, queue_name(q),
                                                                                                True).stale
                                 for q in range(self.plan.spec.queues))

    def _controller(self, stem: str, args: list[str], label: str) -> None:
        d = controllers_dir()
        c = Controller(stem, args, d / f"{stem}.pid", d / f"{stem}.log")
        c.stop()
        c.logfile.unlink(missing_ok=True)
        c.start(self.kubeconfig)
        self.controllers.append(c)
        poll.until(lambda: READY_LINE in c.log_text() or procs.read_pid(c.pidfile) is None, START_TIMEOUT,
                   f"{label} to start (log {c.logfile})", 0.2)
        if procs.read_pid(c.pidfile) is None:
            raise FleetRefused(f"{label} exited at start; see {c.logfile}:\n{c.log_text()[-1500:]}")
        self.say(f"  {label}: started (log {c.logfile})")

    def _changed(self, res: Resource, typ: str, obj: dict) -> None:
        kind = TRACKED.get(res.plural)
        if kind is None or not self.t0:
            return
        r = events.record(time.monotonic() - self.t0, kind, typ, obj)
        with self._lock:
            self.records.append(r)
            if self._log:
                self._log.write(json.dumps(r) + "\n")

    # ------------------------------------------------------------------ the run
    def submit_all(self) -> None:
        """Every gang at its time after the start, with a progress line every PROGRESS_EVERY seconds."""
        self.t0 = time.monotonic()
        threading.Thread(target=self._progress, name="fleet-progress", daemon=True).start()
        spec = self.plan.spec
        tmpl = job_template()

        def submit(g) -> None:
            job = render_job(tmpl, g.name, FLEET_NS, queue_name(g.queue), g.gang, f"{spec.run:g}s",
                             f"{spec.deadline:g}s" if spec.deadline else None, {},
                             {DEADLINE_CLASS_ANNOTATION: DEADLINE_CLASS})
            self.k.create(JOB, job, FLEET_NS)
        # the gangs due at one moment (a burst: all of them) are created by SUBMITTERS clients at once, as many users
        # would; a Poisson stream's gangs one by one, each at its time
        with ThreadPoolExecutor(max_workers=SUBMITTERS) as pool:
            for at, due in itertools.groupby(sorted(self.plan.gangs, key=lambda g: g.at), key=lambda g: g.at):
                wait = self.t0 + at - time.monotonic()
                if wait > 0:
                    poll.pause(wait)
                if poll.cancelled():
                    raise KeyboardInterrupt
                list(pool.map(submit, due))
        self.say(f"  {len(self.plan.gangs)} gangs submitted in {time.monotonic() - self.t0:.1f}s")

    def gangs(self) -> dict[str, events.Gang]:
        with self._lock:
            recs = list(self.records)
        return events.fold(recs, {g.name: g.gang.pods for g in self.plan.gangs})

    def _progress(self) -> None:
        while not self._stop.wait(PROGRESS_EVERY):
            self.say("  " + progress_line(time.monotonic() - self.t0, self.gangs(), len(self.plan.gangs)))

    def wait_done(self, timeout: float) -> list[str]:
        """Until every gang succeeded or timed out; the gangs still unfinished at `timeout`."""
        def unfinished() -> list[str]:
            if not self.check:          # no node ever comes: the baseline ends when Kueue admitted every gang
                return sorted(n for n, g in self.gangs().items() if g.admitted is None)
            return sorted(n for n, g in self.gangs().items() if g.succeeded is None and g.timed_out is None)
        poll.eventually(lambda: not unfinished(), timeout, 1.0)
        return unfinished()

    # ------------------------------------------------------------------ measuring
    def _pids(self) -> dict[str, list[int]]:
        st = state_of(self.kubeconfig)
        found: dict[str, list[int]] = {}
        if st:
            for pid, cmd in procs.running_under(st.dir):
                name = next((c for c in COMPONENTS if c in cmd), None)
                if name:
                    found.setdefault(name, []).append(pid)
        scaler = next((c for c in self.controllers if c.lease == "fleet-autoscaler"), None)
        pid = procs.read_pid(scaler.pidfile) if scaler else None
        if pid:
            found["autoscaler"] = [pid] + _children(pid)
        return found

    def _cost(self) -> dict[str, float]:
        return {name: sum(_now(procs.cpu_seconds, p) for p in pids) for name, pids in self._pids().items()}

    def _sample_memory(self) -> None:
        scaler = next((c for c in self.controllers if c.lease == "fleet-autoscaler"), None)
        while not self._stop.wait(COST_EVERY):
            for name, pids in self._pids().items():
                self._peaks[name] = max(self._peaks.get(name, 0.0), sum(_now(procs.rss_mb, p) for p in pids))
            if scaler is not None and self.autoscaler == "real" and self.t0:
                got = real_ca_loops(scaler.log_text())
                if got:
                    self._loop_samples.append((round(time.monotonic() - self.t0, 3), got["loops"], got["seconds"]))

    def finish(self, unfinished: list[str]) -> tuple[dict, list]:
        """Stop recording, measure and check; write results.json, report.svg and summary.md."""
        self._stop.set()
        cost1, verbs1 = self._cost(), requests_by_verb(self.k.raw("/metrics"))
        scaler = next((c for c in self.controllers if c.lease == "fleet-autoscaler"), None)
        loops = real_ca_loops(scaler.log_text()) if scaler and self.autoscaler == "real" else None
        for t in (self.tape, self._nodes):
            if t is not None:
                t.__exit__(None, None, None)
        with self._lock:
            recs = list(self.records)
            if self._log:
                self._log.close()
                self._log = None
        gangs = events.fold(recs, {g.name: g.gang.pods for g in self.plan.gangs})
        pools = {pool_name(j): m for j, m in enumerate(self.plan.pool_max)}
        m = measure.summary(gangs, recs, measure.out_of_stock_gangs(self.plan.gangs, self.plan.spec.stockout),
                            set(pools))
        m["cost"] = {n: {"cpu": cost1.get(n, 0.0) - self._cost0.get(n, 0.0), "peak_mb": self._peaks.get(n, 0.0)}
                     for n in sorted(set(cost1) | set(self._peaks))}
        m["api_requests"] = {v: verbs1.get(v, 0.0) - self._verbs0.get(v, 0.0) for v in sorted(verbs1)}
        m["unfinished"] = unfinished
        m["autoscaler_loops"] = loops
        m["loop_samples"] = measure.loop_samples(self._loop_samples, recs, set(pools))
        m["ca_loops"] = measure.ca_loops(_read(ca_log_path(scaler.log_text()))) if loops else []
        m["autoscaler"] = self.autoscaler if self.check else "none"
        m["check"] = self.check
        m["deadline_flags"] = list(self.deadline_flags)
        m["autoscaler_flags"] = list(self.autoscaler_flags)
        m["spec"] = {k: v for k, v in vars(self.plan.spec).items()}
        verdicts = checks.all_checks(recs, gangs, m["peak_nodes"], pools)
        verdicts.append(checks.Verdict("every gang ended (succeeded or timed out)" if self.check else
                                       "every gang was admitted (no check: nothing runs)", not unfinished,
                                       f"unfinished: {', '.join(unfinished[:5]) or 'none'}"))
        (self.out_dir / "results.json").write_text(json.dumps(m, indent=1, default=list))
        label = f"{self.autoscaler} autoscaler"
        (self.out_dir / "report.svg").write_text(report.svg([(label, m)], f"Fleet: {self.plan.spec.gangs} gangs, "
                                                                           f"{label}"))
        return m, verdicts

    # ------------------------------------------------------------------ leaving nothing
    def cleanup(self) -> list[str]:
        """Remove everything the run made (also after an interrupt); what is left, as lines (empty: nothing)."""
        self._stop.set()
        for t in (self.tape, getattr(self, "_nodes", None)):
            if t is not None and not t.closed:
                t.__exit__(None, None, None)
        clean(self.k, say=self.say, controllers=self.controllers)
        self._restore()
        return left_behind(self.k)

    def _restore(self) -> None:
        for before, (ns, name) in ((self._table_before, POOL_TABLE), (self._status_before, CA_STATUS)):
            if before is None:
                _delete(self.k, CONFIG_MAP, name, ns)
            else:
                keep = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns},
                        "data": before.get("data") or {}}
                self.k.apply(CONFIG_MAP, keep, restoring_manager(before))


def restoring_manager(cm: dict) -> str:
    """The field manager a ConfigMap the run found is put back with: the one that wrote it last (pure).  Who writes
    the autoscaler's status ConfigMap says whose it is (demo/realca/coexist.status_age): put back under the fleet's own
    name, a fake's leftover would read as a real autoscaler's written just now, and the next fake would refuse to
    start.  The fleet's own name only when the ConfigMap names no writer."""
    fields = [f for f in meta(cm).get("managedFields") or [] if isinstance(f, dict) and f.get("manager")]
    return max(fields, key=lambda f: f.get("time") or "")["manager"] if fields else MANAGER


FLEET_SELECTOR = f"{TAUCLUSTER_LABEL}={TAUCLUSTER_NAME}"


# The fake runs with the timings `tau-demo real-ca` gives the real one (its scan interval, its scale-down after
# unneeded and after a scale-up, and the retry of a request answered CapacityIsNotFound: 1.36.1's defaults, 1 minute
# doubling to 10, where the fake's own 5 s doubling to 20 s would spend the loop's one request on refused requests
# again and again) and the booking of 1.36.1 (10 minutes, not ended by the consuming pods: 1.37's rule, the fake's
# default, lets a finished gang's nodes be taken up at once), so that the two differ in nothing but themselves at
# fleet scale.
FAKE_AS_REAL = ("--scan-interval", "10s", "--scale-down-unneeded", "20s", "--scale-down-delay-after-add", "20s",
                "--initial-backoff", "1m", "--max-backoff", "10m", "--booking", "10m", "--no-booking-consumed")


def autoscaler_argv(autoscaler: str, pools_file: Path, flags: tuple[str, ...] = ()) -> list[str]:
    """The `tau-demo` command of the fleet's autoscaler (pure): the real CA's own flags go after `--`."""
    if autoscaler == "real":
        return ["real-ca", "--pools", str(pools_file), *(["--", *flags] if flags else [])]
    return ["fake-ca", "--pools", str(pools_file), *FAKE_AS_REAL, *flags]


def measure_again(run_dir: Path) -> tuple[dict, list]:
    """A run's measures and invariants computed again from its event log (events.jsonl) and its plan (the spec in
    results.json) by this code: what `fleet measure` prints.  The control plane's cost and the autoscaler's loops,
    read from processes during the run, are kept as they were."""
    was = json.loads((run_dir / "results.json").read_text())
    raw = dict(was["spec"], shapes=tuple(tuple(x) for x in was["spec"]["shapes"]),
               stockout=tuple(was["spec"]["stockout"]))
    p = plan(FleetSpec(**raw))
    recs = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines() if line.strip()]
    gangs = events.fold(recs, {g.name: g.gang.pods for g in p.gangs})
    pools = {pool_name(j): most for j, most in enumerate(p.pool_max)}
    m = {**was, **measure.summary(gangs, recs, measure.out_of_stock_gangs(p.gangs, p.spec.stockout), set(pools))}
    return m, checks.all_checks(recs, gangs, m["peak_nodes"], pools)


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def progress_line(elapsed: float, gangs: dict[str, events.Gang], total: int) -> str:
    """One progress line (pure)."""
    count = lambda attr: sum(1 for g in gangs.values() if getattr(g, attr) is not None)     # noqa: E731
    return (f"fleet {elapsed:5.0f}s: submitted {count('submitted')}/{total} · reserved {count('reserved')} · "
            f"provisioned {count('provisioned')} · admitted {count('admitted')} · running {count('running')} · "
            f"succeeded {count('succeeded')} · timed out {count('timed_out')}")


def _fleet_nodes(k: Kube) -> list[str]:
    return [n["metadata"]["name"] for n in k.list(NODE, label_selector=POOL_LABEL)[0]
            if (n["metadata"].get("labels") or {}).get(POOL_LABEL, "").startswith("fleet-p")]


def _delete(k: Kube, res: Resource, name: str, namespace: str | None = None, **kw) -> None:
    """Delete, gone already being as good as deleted."""
    try:
        k.delete(res, name, namespace, **kw)
    except NotFound:
        pass


def clean(k: Kube, say=print, controllers: list | None = None) -> None:
    """Remove what a fleet run made (this one's or an earlier one's): its controllers, its Jobs and the rest of its
    namespace, its TauCluster (whose controller removes the Kueue objects it made), its pools' nodes."""
    d = controllers_dir()
    for c in controllers or [Controller(s, [], d / f"{s}.pid", d / f"{s}.log") for s in ("fleet-autoscaler",
                                                                                          "fleet-deadline")]:
        c.stop()
    if k.get_or_none(NAMESPACE, FLEET_NS) is not None:
        for j in k.list(JOB, FLEET_NS)[0]:
            _delete(k, JOB, j["metadata"]["name"], FLEET_NS, propagation="Background")
        poll.until(lambda: not k.list(WORKLOAD, FLEET_NS)[0] and not k.list(POD, FLEET_NS)[0], GONE_TIMEOUT,
                   "the fleet's Workloads and pods to go", 1.0)
        for pr in k.list(PROVREQ, FLEET_NS)[0]:
            _delete(k, PROVREQ, pr["metadata"]["name"], FLEET_NS)
    if k.get_or_none(TAUCLUSTER, TAUCLUSTER_NAME) is None:      # a run without the check made its queues itself
        for res in (LOCAL_QUEUE, CLUSTER_QUEUE, RESOURCE_FLAVOR):
            for obj in k.list(res, FLEET_NS if res is LOCAL_QUEUE else None, label_selector=FLEET_SELECTOR)[0]:
                _delete(k, res, obj["metadata"]["name"], obj["metadata"].get("namespace"))
    if k.get_or_none(TAUCLUSTER, TAUCLUSTER_NAME) is not None:
        k.delete(TAUCLUSTER, TAUCLUSTER_NAME)
        poll.until(lambda: k.get_or_none(TAUCLUSTER, TAUCLUSTER_NAME) is None, GONE_TIMEOUT,
                   f"TauCluster {TAUCLUSTER_NAME} to go", 0.5)
    for n in _fleet_nodes(k):
        _delete(k, NODE, n)
    if k.get_or_none(NAMESPACE, FLEET_NS) is not None:
        k.delete(NAMESPACE, FLEET_NS)
        poll.until(lambda: k.get_or_none(NAMESPACE, FLEET_NS) is None, GONE_TIMEOUT,
                   f"namespace {FLEET_NS} to go", 1.0)
    poll.until(lambda: not _fleet_nodes(k), GONE_TIMEOUT, "the fleet's nodes to go", 0.5)


def left_behind(k: Kube) -> list[str]:
    """What a fleet run made that is still there, read now (empty: nothing)."""
    out = []
    if k.get_or_none(NAMESPACE, FLEET_NS) is not None:
        out.append(f"namespace {FLEET_NS}")
    if k.get_or_none(TAUCLUSTER, TAUCLUSTER_NAME) is not None:
        out.append(f"TauCluster {TAUCLUSTER_NAME}")
    for res in (CLUSTER_QUEUE, RESOURCE_FLAVOR):
        out += [f"{res.kind} {q['metadata']['name']}" for q in k.list(res, label_selector=FLEET_SELECTOR)[0]]
    out += [f"Node {n}" for n in _fleet_nodes(k)]
    d = controllers_dir()
    out += [f"controller {s} (pid {pid})" for s in ("fleet-autoscaler", "fleet-deadline")
            if (pid := procs.read_pid(d / f"{s}.pid")) is not None]
    return out
