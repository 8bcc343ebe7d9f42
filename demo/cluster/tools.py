"""Running the pinned binaries (kubectl, kwokctl, kind) and applying manifests with kubectl."""

from __future__ import annotations

import subprocess
import yaml

from k8s.keys import FIELD_MANAGER
from ..toolchain.components import bin_path
from .state import ClusterError


def run_tool(binary: str, *args: str, input: str | None = None, env: dict | None = None, check: bool = True,
             timeout: float = 300, shown_args: int = 3) -> subprocess.CompletedProcess:
    """Run a pinned binary; with check, a non-zero exit becomes a ClusterError carrying its output."""
    proc = subprocess.run([str(bin_path(binary)), *args], input=input, env=env, capture_output=True,
                          text=True, timeout=timeout)
    if check and proc.returncode != 0:
        shown = " ".join(a for a in args[:shown_args] if not a.startswith("--kubeconfig"))
        raise ClusterError(f"{binary} {shown} failed:\n{(proc.stderr or proc.stdout).strip()[-3000:]}")
    return proc


def kubectl(kubeconfig: str, *args: str, input: str | None = None, check: bool = True,
            timeout: float = 300) -> subprocess.CompletedProcess:
    return run_tool("kubectl", f"--kubeconfig={kubeconfig}", *args, input=input, check=check, timeout=timeout,
                    shown_args=4)


def apply_docs(kubeconfig: str, docs: list[dict], what: str) -> None:
    """Server-side apply (Kueue's workloads CRD is 1.4 MB, far over the client-side annotation limit)."""
    text = yaml.safe_dump_all(docs, sort_keys=False)
    proc = kubectl(kubeconfig, "apply", "--server-side", "--force-conflicts", f"--field-manager={FIELD_MANAGER}",
                   "-f", "-", input=text, check=False)
    if proc.returncode != 0:
        raise ClusterError(f"applying {what} was refused:\n{(proc.stderr or proc.stdout).strip()}")
