"""The kind path's files, checked with the built toolchain (the workflow linted, the release images pinned)."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from demo.cluster import kind as backend_kind
from demo.cluster.backend import UpOptions
from demo.cluster.state import ClusterError
from k8s.manifests import load_manifest
from k8s.paths import REPO
from demo.toolchain import components as toolchain
from demo.toolchain import versions


def test_kind_smoke_workflow_lints_clean():
    r = subprocess.run([str(toolchain.bin_path("actionlint")), str(REPO / ".github/workflows/kind-smoke.yml")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def readme_laptop_commands() -> list[str]:
    """The commands of the kind instructions for a laptop in docs/backends.md (the code block after "On a laptop:")."""
    text = (REPO / "docs" / "backends.md").read_text()
    start = text.index("On a laptop:")
    block = text[text.index("```bash", start) + len("```bash"):text.index("```", text.index("```bash", start) + 3)]
    return [c.strip() for line in block.strip().splitlines() for c in line.split("&&") if c.strip()]


def test_kind_workflow_runs_the_readme_commands_on_the_kind_backend():
    commands = readme_laptop_commands()
    assert commands == ["TAU_DEMO_BACKEND=kind ./setup.sh", "AUTO=1 ./scenario.sh"]
    wf = yaml.safe_load((REPO / ".github/workflows/kind-smoke.yml").read_text())
    steps = wf["jobs"]["kind-smoke"]["steps"]
    runs = [s["run"].strip() for s in steps if "run" in s]
    assert [r for r in runs if r in commands] == commands, "the workflow runs the README's commands, in order"
    assert not any("env" in s for s in steps if s.get("run", "").strip() in commands), "with no extra environment"


def test_kueue_release_manifests_use_the_pinned_release_image():
    docs = backend_kind.kueue_release_docs()
    deploy = next(d for d in docs if d["kind"] == "Deployment")
    images = [c["image"] for c in deploy["spec"]["template"]["spec"]["containers"]]
    assert images == [versions.KUEUE_IMAGE]
    text = yaml.safe_dump_all(docs)
    assert backend_kind.KUEUE_DEV_IMAGE_PREFIX not in text


def test_in_cluster_kwok_uses_the_pinned_release_image_and_manages_fake_nodes():
    docs = load_manifest(toolchain.share_path(toolchain.KWOK_MANIFESTS, "kwok-in-cluster.yaml"))
    deploy = next(d for d in docs if d["kind"] == "Deployment")
    assert [c["image"] for c in deploy["spec"]["template"]["spec"]["containers"]] == [versions.KWOK_IMAGE]
    assert "kwok.x-k8s.io/node=fake" in yaml.safe_dump_all(docs)


def test_kind_backend_without_docker_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("TAU_DEMO_STATE", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))          # no docker client at all, as on a machine without Docker
    from demo.cluster.backend import docker_answers
    assert not docker_answers()
    with pytest.raises(ClusterError, match="needs a running Docker engine"):
        backend_kind.BACKEND.up("kind-test", UpOptions())
