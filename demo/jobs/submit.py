"""The submit-time services: preflight against the live cluster, and creating the Job."""

from __future__ import annotations

from pathlib import Path

from fake_ca.pools import PoolsError, load_pools, pools_from_configmap

from ..k8s.client import Kube
from ..k8s.resources import JOB
from ..paths import POOLS_FILE, shown
from . import observe
from .preflight import MISSING, TABLE, Gang, check_gang, check_namespace, check_profile, check_request_names, pool_source


def run_preflight(k: Kube, profile: str, gang: Gang, namespace: str,
                  pools_file: Path = POOLS_FILE, job_name: str | None = None) -> tuple[int, list[str]]:
    """Layer 1: (exit code, lines).  0 ready and fits, 1 not ready / unknown / no pool table, 2 never fits.

    The published pool table is used only while an autoscaler's heartbeat Lease is fresh; with none
    running, `pools_file` (what the next autoscaler will publish) is, and a line says so.  With the
    Job's name, a warning line when Kueue v0.19.2 would lose its ProvisioningRequest."""
    inputs = observe.preflight_inputs(k, profile, namespace)
    ns = check_namespace(namespace, inputs.namespace_exists)
    if ns is not None:
        return ns.code, ns.lines
    res = check_profile(profile, inputs.local_queue, inputs.cluster_queue, inputs.admission_checks,
                        inputs.prov_configs)
    if res.code:
        return res.code, res.lines
    lines = list(res.lines) + (check_request_names(job_name, res.attempts) if job_name else [])
    source = pool_source(inputs.pool_table, inputs.autoscalers, shown(pools_file))
    lines += source.lines
    if source.use == MISSING:
        return 1, lines
    try:
        pools = pools_from_configmap(inputs.pool_table) if source.use == TABLE else load_pools(pools_file)
    except PoolsError as e:
        what = "the published pool table" if source.use == TABLE else "the pools file"
        return 1, lines + [f"preflight: {what} is malformed: {e}"]
    flavor_names = (res.flavor or {}).get("names") or []
    gres = check_gang(gang, pools, observe.flavor(k, flavor_names[0] if flavor_names else None), namespace)
    return gres.code, lines + gres.lines


def create_job(k: Kube, job: dict) -> dict:
    return k.create(JOB, job, job["metadata"]["namespace"])
