"""Building from the Go module proxy: progress on long steps, the Go environment, module sources,
and outputs moved into the cache only when a whole component succeeded."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from . import versions


class ToolchainError(RuntimeError):
    """A binary cannot be had; the message says what to do."""


def run_out(cmd: list[str], timeout: float = 30) -> str:
    """stdout of a command, "" when it cannot run (used by version probes)."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


class Progress:
    """Prints which component and step is running, with elapsed time, and a heartbeat for long steps."""

    def __init__(self, out=sys.stderr, heartbeat: float = 30.0):
        self.out = out
        self.t0 = time.monotonic()
        self.heartbeat = heartbeat

    def elapsed(self) -> str:
        s = int(time.monotonic() - self.t0)
        return f"{s // 60}m{s % 60:02d}s"

    def say(self, msg: str) -> None:
        print(f"[toolchain {self.elapsed()}] {msg}", file=self.out, flush=True)

    def run(self, step: str, cmd: list[str], cwd: Path | None = None, env: dict | None = None) -> str:
        self.say(step)
        started = time.monotonic()
        done = threading.Event()

        def beat():
            while not done.wait(self.heartbeat):
                self.say(f"  … still {step} ({int(time.monotonic() - started)}s)")

        threading.Thread(target=beat, daemon=True).start()
        try:
            proc = subprocess.run(cmd, cwd=cwd, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except FileNotFoundError as e:
            raise ToolchainError(f"{step}: {e.filename} not found") from e
        finally:
            done.set()
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr or "").strip().splitlines()[-25:])
            raise ToolchainError(f"{step} failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")
        return proc.stdout


def go_env(cgo: bool = False) -> dict[str, str]:
    env = dict(os.environ)
    env.update(GOTOOLCHAIN="local", CGO_ENABLED="1" if cgo else "0", GOFLAGS="-buildvcs=false")
    return env


def check_go(cache: Path) -> str:
    go = shutil.which("go")
    want = f"{versions.GO_MIN[0]}.{versions.GO_MIN[1]}"
    if not go:
        raise ToolchainError(
            f"Go is not installed and the cache at {cache} lacks pinned binaries. Install Go >= {want} "
            "(https://go.dev/doc/install, or your package manager), or point TAU_DEMO_CACHE at a populated cache.")
    out = run_out([go, "env", "GOVERSION"]).strip()
    m = re.match(r"go(\d+)\.(\d+)", out)
    if not m or (int(m.group(1)), int(m.group(2))) < versions.GO_MIN:
        raise ToolchainError(f"Go {out or '?'} is too old: the pinned modules need Go >= {want}")
    return go


def module_dir(progress: Progress, module: str, version: str) -> Path:
    """The source of module@version from the Go module cache (downloaded if needed)."""
    out = progress.run(f"downloading {module}@{version}", ["go", "mod", "download", "-json", f"{module}@{version}"],
                       env=go_env())
    d = json.loads(out).get("Dir")
    if not d:
        raise ToolchainError(f"go mod download {module}@{version} returned no directory: {out[:300]}")
    return Path(d)


def fresh_partial(directory: Path) -> Path:
    """An empty staging directory inside a component's cache folder."""
    p = directory / ".partial"
    shutil.rmtree(p, ignore_errors=True)
    p.mkdir(parents=True)
    return p


def install_outputs(partial: Path, dest: Path, names) -> None:
    """Move finished outputs into place (rename: never a half-written binary in bin/)."""
    dest.mkdir(parents=True, exist_ok=True)
    for n in names:
        os.replace(partial / n, dest / n)
    shutil.rmtree(partial, ignore_errors=True)


def go_install(progress: Progress, step: str, packages: list[str], gobin: Path, ldflags: str = "-s -w") -> None:
    progress.run(step, ["go", "install", "-trimpath", f"-ldflags={ldflags}", *packages],
                 env=go_env() | {"GOBIN": str(gobin)})
