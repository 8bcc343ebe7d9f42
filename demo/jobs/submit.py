"""The submit-time services: preflight against the live cluster, creating the Job, and what `submit` says
when it creates nothing (refusal, create_refused: pure, on what the cluster answered)."""

from __future__ import annotations

from pathlib import Path

from k8s.client import Kube
from k8s.errors import ApiError, Conflict, Invalid, NotFound
from k8s.keys import DEMO_NAMESPACE
from k8s.resources import JOB
from k8s.paths import POOLS_FILE
from . import observe
from .preflight import Gang, decide


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


def exists_message(namespace: str, name: str) -> str:
    return (f"a Job named {namespace}/{name} already exists; nothing was created. Choose another --name, "
            f"or delete it first: kubectl delete job -n {namespace} {name}")


def no_namespace_message(namespace: str) -> str:
    return (f"namespace {namespace!r} does not exist; nothing was created. The demo's profiles live in "
            f"{DEMO_NAMESPACE!r} (kubectl get localqueues -A)")


def refusal(namespace: str, name: str, namespace_exists: bool | None, job_exists: bool) -> str | None:
    """Why submit creates nothing, from what it read before creating (None: go on).  A namespace that
    cannot be read (None, e.g. forbidden) is no reason: the create will say."""
    if namespace_exists is False:
        return no_namespace_message(namespace)
    if job_exists:
        return exists_message(namespace, name)
    return None


def create_refused(e: ApiError, namespace: str, name: str) -> str:
    """What submit says when the API refuses the create itself: 409 AlreadyExists is a name race lost
    (the Job was created after the check), 404 a namespace deleted meanwhile, 422 or a webhook's denial
    the cluster's reason."""
    if isinstance(e, Conflict):
        return exists_message(namespace, name)
    if isinstance(e, NotFound):
        return no_namespace_message(namespace)
    if isinstance(e, Invalid):
        return f"the cluster refused the Job: {e.message}"
    return str(e)
