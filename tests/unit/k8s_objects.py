"""Realistic API objects (plain dicts) for one Job's life under Kueue v0.19.2.

Shapes follow Kueue v0.19.2 as recorded on the demo cluster: a queue-labelled batch/v1 Job
suspended by Kueue's webhook, its kueue.x-k8s.io/v1beta2 Workload `job-<job>-<hash>`, the
autoscaling.x-k8s.io/v1 ProvisioningRequests `<workload>-gpu-provisioning-<attempt>`, KWOK
nodes made by the fake autoscaler and the Job's pods.  Each `snap_*` function returns the
keyword arguments of `demo.jobs.phases.derive` for one moment.
"""

from __future__ import annotations

import copy
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

FIXTURES = Path(__file__).parent / "fixtures"

NS = "demo"
JOB_NAME = "train-llm"
JOB_UID = "0b6c3f5e-2d1a-4c7e-9d0a-6f1b2c3d4e5f"
WL_NAME = "job-train-llm-7c1e4"
WL_UID = "8e2a1b9c-5f4d-4e3a-b2c1-0d9e8f7a6b5c"
CHECK = "gpu-provisioning"
NODE_A = "aks-gpupool-vmss438424"
NODE_B = "aks-gpupool-vmss913705"
PENDING_MSG = ("couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in "
               "flavor a100-scale, previously considered podsets requests (0) + current podset "
               "request (32) > maximum capacity (16)")
NOT_FOUND_MSG = "Provisioning Request wasn't provisioned: Capacity is not found"


def ts(sec: int) -> str:
    return f"2025-06-01T10:{sec // 60:02d}:{sec % 60:02d}Z"


def epoch(sec: int) -> float:
    """ts(sec) as seconds since the epoch."""
    return datetime(2025, 6, 1, 10, 0, 0, tzinfo=timezone.utc).timestamp() + sec


def cond(ctype: str, status: str, reason: str, message: str = "", at: int = 0, **extra: Any) -> dict:
    return {"type": ctype, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": ts(at), **extra}


def provreq_uid(attempt: int) -> str:
    return f"4f1d2c3b-0000-4000-8000-00000000000{attempt}"


# --------------------------------------------------------------------------------- Job

def job(suspend: bool = True, conditions: list[dict] | None = None, annotations: dict | None = None,
        active: int = 0, succeeded: int = 0, ready: int = 0, parallelism: int = 2,
        completions: int = 2, queue: bool = True) -> dict:
    labels = {"kueue.x-k8s.io/queue-name": "gpu-a100-8"} if queue else {}
    template_spec: dict = {
        "restartPolicy": "Never",
        "containers": [{
            "name": "trainer", "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
            "resources": {"requests": {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8"},
                          "limits": {"nvidia.com/gpu": "8"}},
        }],
    }
    if not suspend:   # what Kueue injects from the ResourceFlavor at start
        template_spec["nodeSelector"] = {"agentpool": "gpupool"}
        template_spec["tolerations"] = [{"key": "sku", "operator": "Equal", "value": "gpu",
                                         "effect": "NoSchedule"}]
    status: dict = {"active": active, "ready": ready, "succeeded": succeeded, "terminating": 0,
                    "uncountedTerminatedPods": {}}
    if conditions:
        status["conditions"] = conditions
    if not suspend:
        status["startTime"] = ts(40)
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": JOB_NAME, "namespace": NS, "uid": JOB_UID, "resourceVersion": "1042",
                     "creationTimestamp": ts(0), "generation": 1 if suspend else 2,
                     "labels": labels, "annotations": dict(annotations or {})},
        "spec": {"parallelism": parallelism, "completions": completions, "completionMode": "Indexed",
                 "backoffLimit": 0, "suspend": suspend, "manualSelector": False,
                 "podReplacementPolicy": "TerminatingOrFailed",
                 "template": {"metadata": {"labels": {"app": "train-llm"}}, "spec": template_spec}},
        "status": status,
    }


# ---------------------------------------------------------------------------- Workload

def admission() -> dict:
    return {
        "clusterQueue": "gpu-a100",
        "podSetAssignments": [{
            "name": "main", "count": 2,
            "flavors": {"cpu": "a100-scale", "memory": "a100-scale", "nvidia.com/gpu": "a100-scale"},
            "resourceUsage": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "16"},
        }],
    }


def check(state: str, message: str = "", at: int = 0, **extra: Any) -> dict:
    return {"name": CHECK, "state": state, "message": message, "lastTransitionTime": ts(at), **extra}


def workload(conditions: list[dict] | None = None, admitted: dict | None = None,
             checks: list[dict] | None = None, active: bool = True, annotations: dict | None = None,
             requeue_state: dict | None = None) -> dict:
    status: dict = {"conditions": conditions or []}
    if admitted is not None:
        status["admission"] = admitted
    status["admissionChecks"] = checks if checks is not None else [check("Pending", at=2)]
    if requeue_state:
        status["requeueState"] = requeue_state
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {
            "name": WL_NAME, "namespace": NS, "uid": WL_UID, "generation": 1, "resourceVersion": "1077",
            "creationTimestamp": ts(1), "finalizers": ["kueue.x-k8s.io/resource-in-use"],
            "labels": {"kueue.x-k8s.io/job-uid": JOB_UID},
            "annotations": dict(annotations or {}),
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": JOB_NAME, "uid": JOB_UID,
                                 "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {
            "active": active, "queueName": "gpu-a100-8", "priority": 0,
            "podSets": [{"name": "main", "count": 2, "template": job()["spec"]["template"]}],
        },
        "status": status,
    }


# ------------------------------------------------------------------ ProvisioningRequest

def provreq(attempt: int = 1, conditions: list[dict] | None = None, wl_name: str = WL_NAME,
            wl_uid: str = WL_UID) -> dict:
    name = f"{wl_name}-{CHECK}-{attempt}"
    return {
        "apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
        "metadata": {"name": name, "namespace": NS, "uid": provreq_uid(attempt),
                     "creationTimestamp": ts(10 + 30 * attempt),
                     "labels": {"kueue.x-k8s.io/managed": "true"},
                     "ownerReferences": [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                                          "name": wl_name, "uid": wl_uid, "controller": True,
                                          "blockOwnerDeletion": True}]},
        "spec": {"provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
                 "podSets": [{"podTemplateRef": {"name": f"ppt-{name}-main"}, "count": 2}]},
        "status": {"conditions": conditions or []},
    }


# --------------------------------------------------------------------------- nodes, pods

def node(name: str, uid_of_provreq: str | None = None, pool: str = "gpupool", deleting: bool = False) -> dict:
    meta: dict = {"name": name, "uid": f"node-{name}", "creationTimestamp": ts(30),
                  "labels": {"kubernetes.io/hostname": name, "type": "kwok", "agentpool": pool,
                             "cluster-autoscaler.kwok.nodegroup/name": pool},
                  "annotations": {"kwok.x-k8s.io/node": "fake"}}
    if uid_of_provreq:
        meta["annotations"]["fake-ca.tau-demo.io/provreq-uid"] = uid_of_provreq
    if deleting:
        meta["deletionTimestamp"] = ts(59)
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta,
            "spec": {"taints": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "96", "memory": "900Gi", "nvidia.com/gpu": "8", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}


def pod(index: int, node_name: str | None = None, phase: str = "Pending", unschedulable: str = "") -> dict:
    conditions = []
    if node_name:
        conditions.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": ts(45)})
    elif unschedulable:
        conditions.append({"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                           "message": unschedulable, "lastTransitionTime": ts(44)})
    spec: dict = {"containers": [{"name": "trainer", "image": "registry.k8s.io/e2e-test-images/agnhost:2.53"}],
                  "nodeSelector": {"agentpool": "gpupool"}, "restartPolicy": "Never"}
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{JOB_NAME}-{index}-x{index}k9q", "namespace": NS,
                     "labels": {"batch.kubernetes.io/job-name": JOB_NAME,
                                "batch.kubernetes.io/job-completion-index": str(index)},
                     "annotations": {"autoscaling.x-k8s.io/consume-provisioning-request": f"{WL_NAME}-{CHECK}-1"},
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": JOB_NAME,
                                          "uid": JOB_UID, "controller": True, "blockOwnerDeletion": True}]},
        "spec": spec,
        "status": {"phase": phase, "conditions": conditions},
    }


# ------------------------------------------------------------------------- snapshots

def _snap(job_=None, workload_=None, provreqs=(), pods=(), nodes=()) -> dict:
    return {"job": job_, "workload": workload_, "provreqs": list(provreqs), "pods": list(pods),
            "nodes": list(nodes)}


def other_node() -> dict:
    """A node of the same pool booked for some other ProvisioningRequest."""
    return node("aks-gpupool-vmss000001", uid_of_provreq="99999999-aaaa-4bbb-8ccc-dddddddddddd")


def snap_fresh() -> dict:
    return _snap(job())


def snap_pending() -> dict:
    return _snap(job(), workload(
        conditions=[cond("QuotaReserved", "False", "Pending", PENDING_MSG, at=2),
                    cond("PodsReady", "False", "WaitForStart", "Not all pods are ready or succeeded", at=1)]))


def _reserved_conditions() -> list[dict]:
    return [cond("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue gpu-a100", at=5),
            cond("PodsReady", "False", "WaitForStart", "Not all pods are ready or succeeded", at=1)]


def snap_reserved_check_pending() -> dict:
    pr = provreq(1, [cond("Accepted", "True", "Accepted", "", at=11),
                     cond("Provisioned", "False", "CapacityIsNotFound", "Capacity is not found", at=12)])
    return _snap(job(), workload(_reserved_conditions(), admission(),
                                 [check("Pending", NOT_FOUND_MSG, at=12)]), [pr], nodes=[other_node()])


def snap_check_retry() -> dict:
    pr = provreq(1, [cond("Accepted", "True", "Accepted", "", at=11),
                     cond("Failed", "True", "CapacityNotFound", "ValidUntilSeconds passed: capacity not found", at=40)])
    return _snap(job(), workload(_reserved_conditions(), admission(),
                                 [check("Retry", "ValidUntilSeconds passed: capacity not found", at=40,
                                        requeueAfterSeconds=5)]), [pr])


def snap_retry_backoff() -> dict:
    """After the Retry eviction: quota released, ProvReq deleted, waiting for requeueAt."""
    conditions = [
        cond("QuotaReserved", "False", "Pending", "At least one admission check is false", at=41),
        cond("Evicted", "True", "AdmissionCheck", "At least one admission check is false", at=41),
        cond("Requeued", "False", "AdmissionCheck", "At least one admission check is false", at=41),
    ]
    return _snap(job(), workload(conditions, None,
                                 [check("Pending", "Reset to Pending after eviction. Previously: Retry",
                                        at=41, retryCount=1)],
                                 requeue_state={"count": 1, "requeueAt": ts(45)}))


def _provisioned_provreq() -> dict:
    return provreq(1, [cond("Accepted", "True", "Accepted", "", at=11),
                       cond("Provisioned", "True", "Provisioned", "Provisioning Request was successfully provisioned.", at=30)])


def _admitted_workload(extra: list[dict] | None = None) -> dict:
    conditions = _reserved_conditions() + [
        cond("Admitted", "True", "Admitted", "The workload is admitted", at=31)] + (extra or [])
    return workload(conditions, admission(), [check("Ready", "", at=31)])


def _booked_nodes() -> list[dict]:
    return [node(NODE_B, provreq_uid(1)), node(NODE_A, provreq_uid(1)), other_node()]


def snap_admitted_pods_pending() -> dict:
    unsched = "0/3 nodes are available: 3 node(s) had untolerated taint {sku: gpu}."
    return _snap(job(suspend=False, active=2), _admitted_workload(), [_provisioned_provreq()],
                 [pod(0, unschedulable=unsched), pod(1, unschedulable=unsched)], _booked_nodes())


def snap_admitted_job_still_suspended() -> dict:
    return _snap(job(), _admitted_workload(), [_provisioned_provreq()], [], _booked_nodes())


def snap_pods_running() -> dict:
    return _snap(job(suspend=False, active=2, ready=2), _admitted_workload(), [_provisioned_provreq()],
                 [pod(0, NODE_B, "Running"), pod(1, NODE_A, "Running")], _booked_nodes())


def snap_job_complete() -> dict:
    done = [cond("SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods", at=70),
            cond("Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods", at=70)]
    wl = _admitted_workload([cond("Finished", "True", "Succeeded", "Job finished successfully", at=70)])
    return _snap(job(suspend=False, conditions=done, succeeded=2), wl, [_provisioned_provreq()],
                 [pod(0, NODE_B, "Succeeded"), pod(1, NODE_A, "Succeeded")], _booked_nodes())


def mirror_annotations() -> dict:
    """What the admission-deadline controller writes on the Job after committing a timeout."""
    return {"tau-demo.io/admission-deadline": "60s",
            "tau-demo.io/terminal-reason": "AdmissionTimeout",
            "tau-demo.io/terminal-time": "2025-06-01T10:01:01.250000Z",
            "tau-demo.io/terminal-workload": WL_NAME,
            "tau-demo.io/cleanup-after": "2025-06-01T10:06:01.250000Z"}


DECISION = {"tau-demo.io/admission-decision": "timed-out",
            "tau-demo.io/admission-decision-time": "2025-06-01T10:01:01.000000Z"}


def snap_deadline() -> dict:
    """Deactivated by the admission-deadline controller while the ProvReq was pending."""
    conditions = [
        cond("QuotaReserved", "False", "Pending", "The workload is deactivated", at=61),
        cond("Evicted", "True", "Deactivated", "The workload is deactivated", at=61),
        cond("Requeued", "False", "Deactivated", "The workload is deactivated", at=61),
        cond("PodsReady", "False", "WaitForStart", "Not all pods are ready or succeeded", at=1),
    ]
    wl = workload(conditions, None, [check("Pending", NOT_FOUND_MSG, at=12)], active=False,
                  annotations=DECISION)
    j = job(annotations=mirror_annotations())
    return _snap(j, wl, [], [], [])


def snap_deadline_while_queued() -> dict:
    """Deactivated by the deadline before quota was ever reserved."""
    conditions = [cond("QuotaReserved", "False", "Pending", PENDING_MSG, at=2),
                  cond("Evicted", "True", "Deactivated", "The workload is deactivated", at=61)]
    wl = workload(conditions, None, active=False, annotations=DECISION)
    return _snap(job(annotations=mirror_annotations()), wl)


REJECT_MSG = "ValidUntilSeconds passed: capacity not found (attempt 3 of 3)"


def snap_rejected() -> dict:
    """The third attempt failed: check Rejected, Kueue deactivated and evicted the workload."""
    conditions = _reserved_conditions() + [
        cond("Evicted", "True", "DeactivatedDueToAdmissionCheck",
             f"The workload is deactivated due to rejected admission check(s): {CHECK}", at=90)]
    pr = provreq(3, [cond("Accepted", "True", "Accepted", "", at=71), cond("Failed", "True", "CapacityNotFound", REJECT_MSG, at=90)])
    wl = workload(conditions, admission(), [check("Rejected", REJECT_MSG, at=90, retryCount=2)], active=False)
    return _snap(job(), wl, [pr])


def load_fixture(name: str) -> dict:
    """A snapshot stored as YAML under fixtures/ (keys job, workload, provreqs, pods, nodes)."""
    with open(FIXTURES / name, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    return {k: copy.deepcopy(data.get(k)) if k in ("job", "workload") else list(data.get(k) or [])
            for k in ("job", "workload", "provreqs", "pods", "nodes")}
