"""requirements.lock pins every Python package pyproject.toml asks for, at a version its range allows,
with hashes: a dependency added to pyproject.toml without running ./lock.sh fails here, not on a fresh clone."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]


def locked() -> dict[str, tuple[str, list[str]]]:
    """name -> (version, hashes) from requirements.lock's "name==version \\ --hash=sha256:..." entries."""
    text = (REPO / "requirements.lock").read_text()
    out = {}
    for m in re.finditer(r"^([A-Za-z0-9._-]+)==(\S+)((?:\s*\\\n\s+--hash=sha256:[0-9a-f]{64})*)", text, re.M):
        out[canonicalize_name(m[1])] = (m[2], re.findall(r"sha256:([0-9a-f]{64})", m[3]))
    return out


def wanted() -> list[Requirement]:
    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    specs = data["project"]["dependencies"] + data["project"]["optional-dependencies"]["test"]
    return [Requirement(s) for s in specs + data["build-system"]["requires"]]


def test_every_requirement_is_locked_at_an_allowed_version_with_hashes():
    lock = locked()
    assert len(lock) >= len(wanted())
    for req in wanted():
        name = canonicalize_name(req.name)
        assert name in lock, f"{req} is in pyproject.toml but not in requirements.lock: run ./lock.sh"
        version, hashes = lock[name]
        assert req.specifier.contains(version, prereleases=True), \
            f"requirements.lock has {name}=={version}, outside pyproject.toml's {req}: run ./lock.sh"
        assert hashes, f"{name} has no hash in requirements.lock"


def test_every_locked_entry_has_a_hash():
    """pip --require-hashes refuses the whole file when one entry lacks a hash: count the pins independently."""
    text = (REPO / "requirements.lock").read_text()
    pins = re.findall(r"^[A-Za-z0-9._-]+==", text, re.M)
    assert len(pins) == len(locked())
