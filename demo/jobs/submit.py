"""The submit-time services: preflight against the live cluster, and creating the Job."""

from __future__ import annotations

from fake_ca.pools import PoolsError, pools_from_configmap

from ..k8s.client import Kube
from ..k8s.keys import POOL_TABLE
from ..k8s.resources import JOB
from . import observe
from .preflight import Gang, check_gang, check_profile, check_request_names


def run_preflight(k: Kube, profile: str, gang: Gang, namespace: str,
                  job_name: str | None = None) -> tuple[int, list[str]]:
    """Layer 1: (exit code, lines).  0 ready and fits, 1 not ready / unknown / no pool table, 2 never fits.
    With the Job's name, a warning line when Kueue v0.19.2 would lose its ProvisioningRequest."""
    inputs = observe.preflight_inputs(k, profile, namespace)
    res = check_profile(profile, inputs.local_queue, inputs.cluster_queue, inputs.admission_checks,
                        inputs.prov_configs)
    if res.code:
        return res.code, res.lines
    lines = list(res.lines) + (check_request_names(job_name, res.attempts) if job_name else [])
    if inputs.pool_table is None:
        return 1, lines + [f"preflight: the autoscaler has not published its pool table ({POOL_TABLE[0]}/{POOL_TABLE[1]}); "
                           "start it with `tau-demo fake-ca`"]
    try:
        pools = pools_from_configmap(inputs.pool_table)
    except PoolsError as e:
        return 1, lines + [f"preflight: the published pool table is malformed: {e}"]
    flavor_names = (res.flavor or {}).get("names") or []
    gres = check_gang(gang, pools, observe.flavor(k, flavor_names[0] if flavor_names else None), namespace)
    return gres.code, lines + gres.lines


def create_job(k: Kube, job: dict) -> dict:
    return k.create(JOB, job, job["metadata"]["namespace"])
