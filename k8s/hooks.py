"""File-based pause points, so scenarios can make race interleavings deterministic.

A controller started with --hook-dir DIR calls `reach(point, key)` at each step boundary.
If the scenario armed that point for that object (DIR/<point>@<key>.arm exists), the
first thread to reach it (only that one: the fake autoscaler creates a gang's nodes on several
threads) removes the arm, records DIR/<point>@<key>.reached (JSON details), then blocks until
the scenario creates DIR/<point>@<key>.release — or kills the controller there.  Without --hook-dir
every call returns at once.  Files work across processes, which a kill -9 test needs.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from pathlib import Path

from k8s import poll

log = logging.getLogger(__name__)

# A pause point's file name at most, of the 255 bytes a file name may have: room for ".reached.<pid>.<thread id>".
# A Kubernetes name may be 253 characters (upstream-12542's are): a longer one is its head and a hash of the key.
NAME_MAX = 200
KEY_HASH = 16


def _base(directory: Path, point: str, key: str) -> str:
    name = f"{point}@{key.replace('/', '_')}"
    if len(name) > NAME_MAX:        # Kubernetes names are ASCII: a character is a byte
        name = f"{name[:NAME_MAX - KEY_HASH - 1]}-{hashlib.sha256(key.encode()).hexdigest()[:KEY_HASH]}"
    return str(Path(directory) / name)


class Hooks:
    def __init__(self, directory: str | Path | None, max_pause: float = 600.0):
        self.dir = Path(directory) if directory else None
        self.max_pause = max_pause

    def reach(self, point: str, key: str, **info) -> None:
        if self.dir is None:
            return
        base = _base(self.dir, point, key)
        try:     # claimed by removing it: of threads reaching the point together, one pauses
            Path(base + ".arm").unlink()
        except FileNotFoundError:
            return
        tmp = Path(f"{base}.reached.{os.getpid()}.{threading.get_ident()}")
        tmp.write_text(json.dumps(info))
        os.replace(tmp, base + ".reached")      # whole or not at all: the scenario reads it at once
        log.info("hook %s for %s: paused until the scenario releases it", point, key)
        release = Path(base + ".release")
        if not poll.eventually(release.exists, self.max_pause, 0.02):
            log.warning("hook %s for %s: not released after %.0fs; going on", point, key, self.max_pause)
            return
        release.unlink(missing_ok=True)
        log.info("hook %s for %s: released", point, key)


# ---------------------------------------------------------------------------- the scenario's side

def arm(directory: Path, point: str, key: str) -> None:
    Path(directory).mkdir(parents=True, exist_ok=True)
    for suffix in (".reached", ".release"):
        Path(_base(directory, point, key) + suffix).unlink(missing_ok=True)
    Path(_base(directory, point, key) + ".arm").write_text("")


def wait_reached(directory: Path, point: str, key: str, timeout: float = 120.0) -> dict:
    p = Path(_base(directory, point, key) + ".reached")

    def reached() -> dict | None:
        try:
            return json.loads(p.read_text()) if p.exists() else None
        except ValueError:
            return None    # not ours: reach() writes it whole
    got = poll.eventually(reached, timeout, 0.02, done=lambda r: r is not None)
    if got is None:
        raise TimeoutError(f"the controller did not reach {point} for {key} within {timeout:.0f}s")
    return got


def parked(directory: Path, point: str, key: str) -> bool:
    """The controller reached the point and has not been released yet."""
    base = _base(directory, point, key)
    return Path(base + ".reached").exists() and not Path(base + ".release").exists()


def release(directory: Path, point: str, key: str) -> None:
    Path(_base(directory, point, key) + ".release").write_text("")


def disarm(directory: Path, point: str, key: str) -> None:
    """Nothing more pauses at the point: its arm removed, and a controller that claimed it a moment before (or is
    paused there) goes on at once.  (The release left behind is removed by the point's next arm.)"""
    base = _base(directory, point, key)
    Path(base + ".arm").unlink(missing_ok=True)
    Path(base + ".release").write_text("")
