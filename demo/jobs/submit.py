"""The submit-time services: preflight against the live cluster and creating the Job (I/O).  What `submit`
says when it creates nothing (refusal, create_refused) is submit_refusal.py's (pure), named here too for the
command line."""

from __future__ import annotations

from pathlib import Path

from k8s.client import Kube
from k8s.resources import JOB
from k8s.paths import POOLS_FILE
from . import observe
from .preflight import Gang, decide
from .submit_refusal import create_refused, refusal

__all__ = ["run_preflight", "create_job", "refusal", "create_refused"]


def run_preflight(k: Kube, profile: str, gang: Gang, namespace: str,
                  pools_file: Path = POOLS_FILE, job_name: str | None = None) -> tuple[int, list[str]]:
    """Layer 1: (exit code, lines).  0 ready and fits, 1 not ready / unknown / no pool table, 2 never fits.

    The published pool table is used only while an autoscaler's heartbeat Lease is fresh; with none
    running, `pools_file` (what the next autoscaler will publish) is, and a line says so.  With the
    Job's name, a warning line when Kueue v0.19.2 would lose its ProvisioningRequest.
    The reads are observe.preflight_inputs; the decisions preflight.decide."""
    res = decide(observe.preflight_inputs(k, profile, namespace), profile, gang, namespace, pools_file, job_name)
    return res.code, res.lines


def create_job(k: Kube, job: dict) -> dict:
    return k.create(JOB, job, job["metadata"]["namespace"])
