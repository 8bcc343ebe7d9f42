"""The controllers a scenario runs: reuse one that already runs (its heartbeat Lease is fresh), or
start one in the background as a host process (`python -m demo ...`) and stop only what was started."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from demo.cluster import procs
from demo.cluster.state import State
from k8s import heartbeat
from k8s.keys import SERVICE_ACCOUNTS, SYSTEM_NAMESPACE, TAUCLUSTER_LEASE
from k8s.paths import REPO, shown, state_root

from .harness import Context, ScenarioFailed

READY_LINE = "caches synced; ready"
LOG_MESSAGE = re.compile(r"^\d\d:\d\d:\d\d (.*)$", re.M)      # a line of cli's log format: HH:MM:SS, the message
# The scenarios and the conformance probes tell one request at a time at the demo's timescale (the fake's 1 s scan
# interval, its 60 s bookings) and bound their waits by it: their fake autoscaler runs unpaced, as fast as its own
# work.  The pacing model (--pace, the fake's default; docs/autoscaler.md D19) is a fleet-scale one: at one request at
# a time the real autoscaler's few writes go at once (client-go's burst of 10 before its 5 a second), which the model's
# 0.8 s a loop does not say; `tau-demo fleet` keeps the pace.
DEMO_FAKE_CA = ["fake-ca", "--no-pace"]

# Every controller this process started and has not stopped, whichever context started it (a scenario run side by
# side gives each scenario a context of its own): what an interrupted command stops (stop_every_started).
_RUNNING: list["Controller"] = []
_RUNNING_LOCK = threading.Lock()


def controller_args(ctx: Context, args: list[str]) -> list[str]:
    """The command line of a controller `args[0]`: the context's extra flags for its kind first, then the caller's
    own, which win where both give a flag (the last one given counts): a test's own fake given `--booking 1s` runs
    with it, not with the session's `--booking 8s`."""
    out = [args[0], *ctx.extra_args.get(args[0], []), *args[1:]]
    if ctx.impersonate and args[0] in SERVICE_ACCOUNTS:     # the real CA runs with the kubeconfig's identity
        out += ["--as", SERVICE_ACCOUNTS[args[0]]]
    return out


@dataclass
class Controller:
    lease: str
    args: list[str]
    pidfile: Path
    logfile: Path
    # a directory made for this instance alone (a race's hook directory): removed as it is stopped, however the run
    # ends (an interrupted command stops every started controller: stop_every_started)
    scratch: Path | None = field(default=None, compare=False)

    def start(self, kubeconfig: str) -> None:
        with _RUNNING_LOCK:
            if self not in _RUNNING:
                _RUNNING.append(self)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        args = list(self.args)
        at = args.index("--") if "--" in args else len(args)      # after "--": the wrapped binary's own flags
        procs.spawn([sys.executable, "-m", "cli", *args[:at], "--kubeconfig", kubeconfig, *args[at:]], self.pidfile,
                    self.logfile, env=env, cwd=REPO)

    def stop(self) -> None:
        procs.stop(self.pidfile)
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
        with _RUNNING_LOCK:
            if self in _RUNNING:
                _RUNNING.remove(self)

    def kill9(self) -> None:
        procs.stop(self.pidfile, timeout=0, sig=signal.SIGKILL)

    def log_text(self) -> str:
        try:
            return self.logfile.read_text(errors="replace")
        except OSError:
            return ""

    def messages(self) -> list[str]:
        """Its log's messages in order, each whole and without its time: a check that reads a line here sees it as
        it was written, not found inside a longer one.  A traceback's lines are left out."""
        return LOG_MESSAGE.findall(self.log_text())


def controllers_dir() -> Path:
    """Pid and log files of the controllers scenarios start: beside the demo cluster's state, else in
    the state root (test runs with their own TAU_DEMO_STATE never share them)."""
    st = State.load()
    d = (st.dir if st else state_root()) / "controllers"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _files(ctx: Context, lease: str) -> tuple[Path, Path]:
    """A controller's pid and log file: named after its Lease, and for a MultiKueue worker's, after the worker too
    (each worker's cluster has its own Lease of the same name)."""
    stem = f"{ctx.cluster}-{lease}" if ctx.cluster else lease
    d = controllers_dir()
    return d / f"{stem}.pid", d / f"{stem}.log"


def ensure_controller(ctx: Context, lease: str, args: list[str], label: str, timeout: float = 30) -> Controller | None:
    """Use a controller that already runs (its Lease is fresh), else start one in the background."""
    if heartbeat.alive(ctx.k, lease):
        ctx.say(f"  {label}: already running (Lease {SYSTEM_NAMESPACE}/{lease} is fresh); using it")
        return None
    c = Controller(lease, controller_args(ctx, args), *_files(ctx, lease))
    c.start(ctx.kubeconfig)
    ctx.started.append(c)
    ctx.wait(lambda: heartbeat.alive(ctx.k, lease) or (procs.read_pid(c.pidfile) is None and "dead"), timeout,
             f"{label} to start (log {shown(c.logfile)})")
    if procs.read_pid(c.pidfile) is None:
        raise ScenarioFailed(f"{label} exited at start; see {c.logfile}:\n{c.log_text()[-1500:]}")
    ctx.say(f"  {label}: started in the background (log {shown(c.logfile)})")
    return c


def start_private(ctx: Context, lease: str, args: list[str], label: str, timeout: float = 30,
                  scratch: Path | None = None) -> Controller:
    """A controller instance of the scenario's own (race instances): always freshly started; `scratch`, a directory
    made for it, goes when it is stopped."""
    c = Controller(lease, controller_args(ctx, args), *_files(ctx, lease))
    c.stop()
    c.scratch = scratch
    c.logfile.unlink(missing_ok=True)
    c.start(ctx.kubeconfig)
    ctx.started.append(c)
    ctx.wait(lambda: READY_LINE in c.log_text() or (procs.read_pid(c.pidfile) is None and "dead"), timeout,
             f"{label} to start (log {shown(c.logfile)})")
    if procs.read_pid(c.pidfile) is None:
        raise ScenarioFailed(f"{label} exited at start; see {c.logfile}:\n{c.log_text()[-1500:]}")
    return c


RACE_TTL = "5s"         # the cleanup TTL of a race's private deadline controller


def race_controller(ctx: Context, cls: str, protocol: str = "committed", hooks: bool = False) -> Controller:
    """A deadline controller of the scenario's own (its class `cls`, in its slot's namespace), freshly started:
    what a race pauses without stalling the shared one.  With `hooks`, its pause points are read from a directory
    made for it (`.scratch`, for k8s.hooks to arm and release), removed as it is stopped."""
    args = ["deadline", "--class", cls, "--protocol", protocol, "--cleanup-ttl", RACE_TTL, "--resync", "1s",
            "--namespace", ctx.slot.namespace]
    hook_dir = Path(tempfile.mkdtemp(prefix="tau-hooks-")) if hooks else None
    if hook_dir:
        args += ["--hook-dir", str(hook_dir)]
    try:
        return start_private(ctx, f"deadline-{cls}", args, f"deadline controller ({cls}, {protocol})",
                             scratch=hook_dir)
    except BaseException:
        if hook_dir:
            shutil.rmtree(hook_dir, ignore_errors=True)
        raise


def stop_started(ctx: Context) -> None:
    for c in reversed(ctx.started):
        c.stop()
    ctx.started.clear()


def stop_every_started() -> list[str]:
    """Stop every controller this process started and has not stopped (an interrupted command: its scenarios'
    contexts may not have come to their own stop); their Leases, as the names of what was stopped."""
    with _RUNNING_LOCK:
        running = list(reversed(_RUNNING))
    for c in running:
        c.stop()
    return [c.lease for c in running]


def orphans() -> list[tuple[str, int]]:
    """Controllers that scenarios started in the background and that still run with no run to stop them (their pid
    files beside the demo cluster's state, the process alive): (pid file's name, pid).  The TauCluster controller,
    whose files lie there too, is the cluster's (`cluster up` starts it), never an orphan."""
    with _RUNNING_LOCK:
        ours = {c.pidfile for c in _RUNNING}
    return [(p.stem, pid) for p in sorted(controllers_dir().glob("*.pid"))
            if p not in ours and p.stem != TAUCLUSTER_LEASE and (pid := procs.read_pid(p)) is not None]


def stop_orphans() -> list[str]:
    """Stop every controller orphans() finds; what was stopped, as 'name (pid N)'."""
    out = []
    for stem, pid in orphans():
        procs.stop(controllers_dir() / f"{stem}.pid")
        out.append(f"{stem} (pid {pid})")
    return out
