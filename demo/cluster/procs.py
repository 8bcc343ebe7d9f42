"""Host processes started by the demo: detached, with a pid file and a log file.

A pid file holds "<pid> <start-time-ticks>" so that a recycled pid is never mistaken for
our process (and never killed).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

from k8s import poll


def _start_ticks(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # field 22, after the parenthesised command name (which may contain spaces)
    return stat.rsplit(")", 1)[1].split()[19]


def read_pid(pidfile: Path) -> int | None:
    """The pid recorded in pidfile if that very process is still alive."""
    try:
        pid_s, ticks = pidfile.read_text().split()
        pid = int(pid_s)
    except (OSError, ValueError):
        return None
    if _start_ticks(pid) != ticks:
        return None
    try:
        st = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None
    return None if st == "Z" else pid


def read_plain_pid(pidfile: Path) -> int | None:
    """A pid file written by another tool (kwokctl): just a number.  The pid if it is alive."""
    try:
        pid = int(pidfile.read_text().split()[0])
        st = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, ValueError, IndexError):
        return None
    return None if st == "Z" else pid


def write_pid(pidfile: Path, pid: int) -> None:
    pidfile.parent.mkdir(parents=True, exist_ok=True)
    tmp = pidfile.with_suffix(".tmp")
    tmp.write_text(f"{pid} {_start_ticks(pid)}\n")
    os.replace(tmp, pidfile)


def spawn(argv: list[str], pidfile: Path, logfile: Path, env: dict | None = None, cwd: Path | None = None) -> int:
    """Start argv detached (own session, survives the caller), appending to logfile."""
    logfile.parent.mkdir(parents=True, exist_ok=True)
    with open(logfile, "ab") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                env=env, cwd=cwd, start_new_session=True)
    write_pid(pidfile, proc.pid)
    return proc.pid


INTERRUPT_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)   # Ctrl-C, `kill`/`timeout`, a closed terminal


def as_from_a_terminal() -> None:
    """A child's preexec_fn: INTERRUPT_SIGNALS at their defaults, as a terminal's foreground job starts, whatever
    this process ignores (a test runner that a script started with `&` ignores SIGINT, and so would its children:
    cli/interrupt.handled)."""
    for s in INTERRUPT_SIGNALS:
        signal.signal(s, signal.SIG_DFL)


def stop(pidfile: Path, timeout: float = 10.0, sig: int = signal.SIGTERM) -> bool:
    """Stop the process of pidfile (TERM, then KILL after timeout).  True if one was running."""
    pid = read_pid(pidfile)
    if pid is None:
        pidfile.unlink(missing_ok=True)
        return False
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        os.kill(pid, sig)
    # time.sleep, not poll's default: a stop is not cancelled by an interrupt (it is what an interrupt does)
    poll.eventually(lambda: _reap(pid) or read_pid(pidfile) is None, timeout, 0.1, sleep=time.sleep)
    if read_pid(pidfile) is not None:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        time.sleep(0.2)
        _reap(pid)
    pidfile.unlink(missing_ok=True)
    return True


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def running_under(directory: Path) -> list[tuple[int, str]]:
    """Live processes whose executable or arguments lie under `directory`: (pid, command line)."""
    needle = str(directory.resolve())
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = [a.decode(errors="replace") for a in (proc / "cmdline").read_bytes().split(b"\0") if a]
        except OSError:
            continue                     # gone meanwhile, or not ours to read
        if any(a.startswith(needle) or f"={needle}" in a for a in argv):
            out.append((int(proc.name), " ".join(argv)))
    return sorted(out)


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def machine_lock(name: str, waiting: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold a lock shared by every process on this machine (an flock on a file in the temp dir) for the
    block; `waiting` is called once if another process holds it.  The kernel drops it if the holder dies."""
    path = Path(tempfile.gettempdir()) / f"tau-demo-{name}.lock"
    with open(path, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting:
                waiting()
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def port_owner(port: int) -> str:
    """Best effort: which process listens on port (for error messages)."""
    try:
        out = subprocess.run(["ss", "-ltnpH", f"sport = :{port}"], capture_output=True, text=True, timeout=5).stdout
        return out.strip().split("users:")[-1] if "users:" in out else ""
    except (OSError, subprocess.TimeoutExpired):
        return ""


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) a process has used so far, from /proc (OSError: no such process)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")          # utime, stime


def rss_mb(pid: int) -> float:
    """A process's resident memory now, MB, from /proc (OSError: no such process)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0
