"""What every scenario shares: printing, pauses for a presenter, checks, controllers, the event log.

A scenario is a plain function `run(ctx)` that tells its story with ctx.step(...), makes
things happen on the real cluster, and asserts what a user would notice with
ctx.check(...).  Nothing here fakes the cluster.
"""

from __future__ import annotations

import os
import secrets
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from demo import cluster, heartbeat, kube, observe, procs
from demo.events import EventLog, snapshot_states
from demo.jobs_cli import render_job
from demo.paths import MANIFESTS, REPO
from demo.preflight import Gang

NS = cluster.DEMO_NAMESPACE
POOL_LABEL = "cluster-autoscaler.kwok.nodegroup/name"
READY_LINE = "caches synced; ready"


class ScenarioFailed(AssertionError):
    pass


def poll_until(pred, timeout: float, what: str, interval: float = 0.25):
    """Return pred()'s first truthy value; ScenarioFailed (an AssertionError) after timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise ScenarioFailed(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


@dataclass
class Check:
    ok: bool
    what: str


@dataclass
class Context:
    k: kube.Kube
    kubeconfig: str
    auto: bool = True
    out: object = sys.stdout
    runs_dir: Path = REPO / "runs"
    checks: list[Check] = field(default_factory=list)
    started: list["Controller"] = field(default_factory=list)
    impersonate: bool = False      # run controllers as their least-privilege ServiceAccounts (tests)
    extra_args: dict = field(default_factory=dict)   # per controller kind, e.g. {"fake-ca": ["--booking", "8s"]}
    name: str = ""

    # ------------------------------------------------------------------ telling the story
    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def header(self, title: str) -> None:
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

    def require(self, ok: bool, what: str) -> None:
        """A check the rest of the scenario depends on: stop the scenario when it fails."""
        if not self.check(ok, what):
            raise ScenarioFailed(what)

    # ------------------------------------------------------------------ jobs
    def new_name(self, prefix: str = "job-train") -> str:
        return f"{prefix}-{secrets.token_hex(3)[:5]}"

    def submit(self, name: str, gang: str = "2x8", duration: str = "10s", deadline: str | None = None,
               provreq: dict | None = None, annotations: dict | None = None) -> dict:
        template = cluster.load_manifest(MANIFESTS / "gpu-job.yaml")[0]
        job = render_job(template, name, NS, "gpu-a100-8", Gang.parse(gang), duration, deadline, provreq or {})
        job["metadata"]["annotations"].update(annotations or {})
        created = self.k.create(kube.JOB, job, NS)
        self.say(f"  job {NS}/{name} submitted ({gang} GPU"
                 f"{f', deadline {deadline}' if deadline else ''}"
                 f"{''.join(f', {k}={v}' for k, v in (provreq or {}).items())})")
        return created

    def wait(self, pred, timeout: float, what: str, interval: float = 0.25):
        return poll_until(pred, timeout, what, interval)

    def pool_nodes(self, pool: str = "gpupool") -> list[dict]:
        nodes, _ = self.k.list(kube.NODE, label_selector=f"{POOL_LABEL}={pool}")
        return [n for n in nodes if not n["metadata"].get("deletionTimestamp")]

    def wait_pool_empty(self, timeout: float = 120) -> None:
        self.wait(lambda: not self.pool_nodes(), timeout, "the pool to scale back to 0")

    def delete_job(self, name: str, wait: bool = True) -> None:
        job = self.k.get_or_none(kube.JOB, name, NS)
        if job is None:
            return
        self.k.delete(kube.JOB, name, NS, propagation="Foreground")
        if wait:
            uid = job["metadata"]["uid"]
            self.wait(lambda: not self.k.list(kube.WORKLOAD, NS, label_selector=f"kueue.x-k8s.io/job-uid={uid}")[0]
                      and self.k.get_or_none(kube.JOB, name, NS) is None, 60, f"job {name} and its Workload to go")

    def leftovers(self) -> list[str]:
        """Objects a finished scenario must not leave behind."""
        out = []
        for res in (kube.JOB, kube.WORKLOAD, kube.PROVREQ):
            items, _ = self.k.list(res, NS)
            out += [f"{res.kind} {i['metadata']['name']}" for i in items]
        out += [f"Node {n['metadata']['name']}" for n in self.pool_nodes()]
        return out

    def event_log(self, label: str) -> tuple[EventLog, Path]:
        d = self.runs_dir / time.strftime("%Y%m%d-%H%M%S")
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{label}.jsonl"
        return EventLog(path), path


# ---------------------------------------------------------------------------- recording

class Recorder:
    """Samples one Job's objects in the background: the event log, and facts for checks."""

    def __init__(self, ctx: Context, name: str, log: EventLog | None, interval: float = 0.2):
        self.ctx, self.name, self.log, self.interval = ctx, name, log, interval
        self.stop_ev = threading.Event()
        self.samples: list[tuple[float, observe.Snapshot]] = []
        self.job_uid: str | None = None
        self.t = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stop_ev.set()
        self.t.join(5)

    def _loop(self):
        while not self.stop_ev.is_set():
            try:
                snap = observe.snapshot(self.ctx.k, NS, self.name, self.job_uid)
            except (kube.ApiError, kube.Unreachable):
                time.sleep(self.interval)
                continue
            if snap.job is not None and self.job_uid is None:
                self.job_uid = snap.job["metadata"]["uid"]
            self.samples.append((time.time(), snap))
            if self.log is not None and self.job_uid is not None:   # the story starts when the Job exists
                self.log.record_all(snapshot_states(snap.job, snap.workload, snap.provreqs, snap.pods, snap.nodes))
            self.stop_ev.wait(self.interval)

    def mark(self, label: str, t: float | None = None) -> None:
        if self.log is not None:
            self.log.mark(label, t=t)

    # facts over the samples
    def ever(self, pred) -> bool:
        return any(pred(s) for _, s in self.samples)

    def first(self, pred) -> float | None:
        return next((t for t, s in self.samples if pred(s)), None)

    def provreq_names(self) -> set[str]:
        return {p["metadata"]["name"] for _, s in self.samples for p in s.provreqs}


# ---------------------------------------------------------------------------- controllers

SERVICE_ACCOUNTS = {"fake-ca": "system:serviceaccount:tau-demo-system:fake-ca",
                    "deadline": "system:serviceaccount:tau-demo-system:deadline"}


def controller_args(ctx: "Context", args: list[str]) -> list[str]:
    out = list(args) + list(ctx.extra_args.get(args[0], []))
    if ctx.impersonate:
        out += ["--as", SERVICE_ACCOUNTS[args[0]]]
    return out


@dataclass
class Controller:
    lease: str
    args: list[str]
    pidfile: Path
    logfile: Path

    def start(self, kubeconfig: str) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        procs.start([sys.executable, "-m", "demo", *self.args, "--kubeconfig", kubeconfig], self.pidfile,
                    self.logfile, env=env, cwd=REPO)

    def stop(self) -> None:
        procs.stop(self.pidfile)

    def kill9(self) -> None:
        import signal
        procs.stop(self.pidfile, timeout=0, sig=signal.SIGKILL)

    def log_text(self) -> str:
        try:
            return self.logfile.read_text(errors="replace")
        except OSError:
            return ""


def controllers_dir() -> Path:
    st = cluster.State.load()
    base = st.dir if st else Path(os.environ.get("TMPDIR", "/tmp")) / "tau-demo"
    d = base / "controllers"
    d.mkdir(parents=True, exist_ok=True)
    return d


def ensure_controller(ctx: Context, lease: str, args: list[str], label: str) -> Controller | None:
    """Use a controller that already runs (its Lease is fresh), else start one in the background."""
    if heartbeat.alive(ctx.k, lease):
        ctx.say(f"  {label}: already running (Lease tau-demo-system/{lease} is fresh); using it")
        return None
    d = controllers_dir()
    c = Controller(lease, controller_args(ctx, args), d / f"{lease}.pid", d / f"{lease}.log")
    c.start(ctx.kubeconfig)
    ctx.started.append(c)
    ctx.wait(lambda: heartbeat.alive(ctx.k, lease) or (procs.read_pid(c.pidfile) is None and "dead"), 30,
             f"{label} to start (log {c.logfile})")
    if procs.read_pid(c.pidfile) is None:
        raise ScenarioFailed(f"{label} exited at start; see {c.logfile}:\n{c.log_text()[-1500:]}")
    ctx.say(f"  {label}: started in the background (log {c.logfile})")
    return c


def start_private(ctx: Context, lease: str, args: list[str], label: str) -> Controller:
    """A controller instance of the scenario's own (race instances): always freshly started."""
    d = controllers_dir()
    c = Controller(lease, controller_args(ctx, args), d / f"{lease}.pid", d / f"{lease}.log")
    c.stop()
    c.logfile.unlink(missing_ok=True)
    c.start(ctx.kubeconfig)
    ctx.started.append(c)
    ctx.wait(lambda: READY_LINE in c.log_text() or (procs.read_pid(c.pidfile) is None and "dead"), 30,
             f"{label} to start (log {c.logfile})")
    if procs.read_pid(c.pidfile) is None:
        raise ScenarioFailed(f"{label} exited at start; see {c.logfile}:\n{c.log_text()[-1500:]}")
    return c


def stop_started(ctx: Context) -> None:
    for c in reversed(ctx.started):
        c.stop()
    ctx.started.clear()
