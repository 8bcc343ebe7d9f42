"""What every scenario shares: printing, pauses for a presenter, checks, controllers, the event log.

A scenario is a plain function `run(ctx)` that tells its story with ctx.step(...), makes
things happen on the real cluster, and asserts what a user would notice with
ctx.check(...).  Nothing here fakes the cluster.  The background recorder of a Job's
objects is in recorder.py, the controllers a scenario starts in controllers.py.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from demo.jobs.preflight import Gang
from demo.jobs.render import job_template, new_name, render_job
from demo.k8s.client import Kube
from demo.k8s.keys import DEMO_NAMESPACE, DEMO_POOL, JOB_UID_LABEL, POOL_LABEL, PROFILE, UPSTREAM_PREFIX
from demo.k8s.resources import ADMISSION_CHECK, CLUSTER_QUEUE, JOB, LOCAL_QUEUE, NODE, PROVREQ, WORKLOAD
from demo.paths import REPO
from demo.timeline.log import EventLog

NS = DEMO_NAMESPACE


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
    k: Kube
    kubeconfig: str
    auto: bool = True
    out: object = sys.stdout
    runs_dir: Path = REPO / "runs"
    checks: list[Check] = field(default_factory=list)
    started: list = field(default_factory=list)     # controllers.Controller started by this context
    impersonate: bool = False      # run controllers as their least-privilege ServiceAccounts (tests)
    extra_args: dict = field(default_factory=dict)   # per controller kind, e.g. {"fake-ca": ["--booking", "8s"]}
    name: str = ""
    autoscaler: str = "fake"       # which autoscaler answers: "fake" (fake_ca) or "real" (`tau-demo real-ca`)
    verdicts: list = field(default_factory=list)     # upstream scenarios: does the report reproduce here?

    def injected(self, params: dict) -> dict:
        """ProvisioningRequest parameters that inject a fault into the fake autoscaler; none against the real
        one (it has no such knobs), so a scenario runs unchanged with --autoscaler real."""
        return {} if self.autoscaler == "real" else dict(params)

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
        return new_name(prefix)

    def submit(self, name: str, gang: str = "2x8", duration: str = "10s", deadline: str | None = None,
               provreq: dict | None = None, annotations: dict | None = None, profile: str = PROFILE) -> dict:
        job = render_job(job_template(), name, NS, profile, Gang.parse(gang), duration, deadline, provreq or {},
                         annotations)
        created = self.k.create(JOB, job, NS)
        self.say(f"  job {NS}/{name} submitted ({gang} GPU"
                 f"{f', deadline {deadline}' if deadline else ''}"
                 f"{''.join(f', {k}={v}' for k, v in (provreq or {}).items())})")
        return created

    def wait(self, pred, timeout: float, what: str, interval: float = 0.25):
        return poll_until(pred, timeout, what, interval)

    def pool_nodes(self, pool: str = DEMO_POOL) -> list[dict]:
        nodes, _ = self.k.list(NODE, label_selector=f"{POOL_LABEL}={pool}")
        return [n for n in nodes if not n["metadata"].get("deletionTimestamp")]

    def wait_pool_empty(self, timeout: float = 120) -> None:
        self.wait(lambda: not self.pool_nodes(), timeout, "the pool to scale back to 0")

    def delete_job(self, name: str, wait: bool = True) -> None:
        job = self.k.get_or_none(JOB, name, NS)
        if job is None:
            return
        self.k.delete(JOB, name, NS, propagation="Foreground")
        if wait:
            uid = job["metadata"]["uid"]
            self.wait(lambda: not self.k.list(WORKLOAD, NS, label_selector=f"{JOB_UID_LABEL}={uid}")[0]
                      and self.k.get_or_none(JOB, name, NS) is None, 60, f"job {name} and its Workload to go")

    def leftovers(self) -> list[str]:
        """Objects a finished scenario must not leave behind."""
        out = []
        for res in (JOB, WORKLOAD, PROVREQ):
            items, _ = self.k.list(res, NS)
            out += [f"{res.kind} {i['metadata']['name']}" for i in items]
        out += [f"Node {n['metadata']['name']}" for n in self.pool_nodes()]
        for res, ns in ((LOCAL_QUEUE, NS), (CLUSTER_QUEUE, None), (ADMISSION_CHECK, None)):   # upstream scenarios'
            out += [f"{res.kind} {i['metadata']['name'][:60]}" for i in self.k.list(res, ns)[0]
                    if i["metadata"]["name"].startswith(UPSTREAM_PREFIX)]
        return out

    def event_log(self, label: str) -> tuple[EventLog, Path]:
        d = self.runs_dir / time.strftime("%Y%m%d-%H%M%S")
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{label}.jsonl"
        return EventLog(path), path
