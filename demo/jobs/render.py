"""The researcher's Job, rendered from manifests/gpu-job.yaml: suspended, queued, GPU requests,
the admission deadline and ProvisioningRequest parameters as annotations (pure)."""

from __future__ import annotations

import copy
import secrets

from k8s.keys import DEADLINE_ANNOTATION, GPU, POD_COMPLETE_DELAY_ANNOTATION, PROVREQ_PARAM_PREFIX, QUEUE_LABEL
from k8s.manifests import load_manifest
from k8s.paths import MANIFESTS
from .preflight import Gang

JOB_TEMPLATE = MANIFESTS / "gpu-job.yaml"


def new_name(prefix: str = "job-train") -> str:
    return f"{prefix}-{secrets.token_hex(3)[1:]}"       # five random hex digits


def job_template() -> dict:
    return load_manifest(JOB_TEMPLATE)[0]


def render_job(template: dict, name: str, namespace: str, profile: str, gang: Gang, duration: str | None,
               deadline: str | None, provreq: dict[str, str], annotations: dict[str, str] | None = None) -> dict:
    job = copy.deepcopy(template)
    md = job["metadata"]
    md.update(name=name, namespace=namespace)
    md.setdefault("labels", {})[QUEUE_LABEL] = profile
    ann = md.get("annotations") or {}
    if deadline:
        ann[DEADLINE_ANNOTATION] = deadline
    for k, v in provreq.items():
        ann[PROVREQ_PARAM_PREFIX + k] = v
    ann.update(annotations or {})
    md["annotations"] = ann
    spec = job["spec"]
    spec["suspend"] = True
    spec["parallelism"] = spec["completions"] = gang.pods
    pod = spec["template"]
    if duration:
        pod.setdefault("metadata", {}).setdefault("annotations", {})[POD_COMPLETE_DELAY_ANNOTATION] = duration
    for c in pod["spec"]["containers"]:
        c["resources"]["requests"][GPU] = str(gang.gpus)
        c["resources"].setdefault("limits", {})[GPU] = str(gang.gpus)
    return job
