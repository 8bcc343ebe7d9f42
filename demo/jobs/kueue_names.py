"""Kueue v0.19.2's names for a Job's Workload and its ProvisioningRequests, reimplemented (pure).

Kueue names the Workload of a batch/Job `job-<job>-<5 hex>` and each ProvisioningRequest
`<workload>-<check>-<attempt>`.  A name over 247 characters is cut at 247 and given a `-<5 hex of
sha1>` suffix, so it is at most 253 (a DNS subdomain).  To find its own request again Kueue matches
`^<prefix>([0-9]+)$`, where the prefix is `<workload>-<check>-` put through the same cut.  When the
full name is over 247 the hash in the request's name covers the attempt number but the hash in the
prefix does not, so nothing matches: Kueue deletes the request it just made and makes it again,
without end (kubernetes-sigs/kueue#12542, fixed by #14916).

Sources, sigs.k8s.io/kueue@v0.19.2:
  pkg/controller/admissionchecks/provisioning/controller.go:63-67     objNameHashLength, objNameMaxPrefixLength
  pkg/controller/admissionchecks/provisioning/controller.go:919-927   limitObjectName
  pkg/controller/admissionchecks/provisioning/provisioning.go:55-63   ProvisioningRequestName, ...NamePrefix
  pkg/controller/admissionchecks/provisioning/provisioning.go:65-68   the PodTemplate `ppt-<request>-<podset>`
  pkg/controller/admissionchecks/provisioning/provisioning.go:70-95   matchesWorkloadAndCheck, getAttemptRegex
  pkg/controller/jobframework/workload_names.go:32-118                 GetWorkloadNameForOwnerWithGVK
                                                                      (ShortWorkloadNames off, the default)
"""

from __future__ import annotations

import hashlib
import re

HASH_LENGTH = 5                               # objNameHashLength
MAX_PREFIX_LENGTH = 252 - HASH_LENGTH         # objNameMaxPrefixLength = 247
MAX_WORKLOAD_NAME = 253                       # workload_names.go: a DNS subdomain (63 with ShortWorkloadNames)
POD_TEMPLATE_PREFIX = "ppt"
JOB_PODSET = "main"                           # the one PodSet of a batch/Job


def limit_object_name(full: str) -> str:
    """limitObjectName: unchanged up to 247 characters, else the first 247 + '-' + 5 hex of sha1(full)."""
    if len(full) <= MAX_PREFIX_LENGTH:
        return full
    return f"{full[:MAX_PREFIX_LENGTH]}-{hashlib.sha1(full.encode()).hexdigest()[:HASH_LENGTH]}"


def workload_name_for_job(job_name: str, job_uid: str) -> str:
    """`job-<name>` (cut to leave room for the hash) + '-' + 5 hex of sha1("Job\\nbatch\\n<name>\\n<uid>")."""
    prefix = f"job-{job_name}"[:MAX_WORKLOAD_NAME - 1 - HASH_LENGTH]
    digest = hashlib.sha1(f"Job\nbatch\n{job_name}\n{job_uid}".encode()).hexdigest()[:HASH_LENGTH]
    return f"{prefix}-{digest}"


def workload_name_length_for_job(job_name: str) -> int:
    """The length of the Workload name, known before the Job exists (the uid only changes the hash)."""
    return len(workload_name_for_job(job_name, ""))


def provreq_name(workload: str, check: str, attempt: int) -> str:
    """ProvisioningRequestName: the name Kueue gives the request of `attempt`."""
    return limit_object_name(f"{workload}-{check}-{attempt}")


def provreq_prefix(workload: str, check: str) -> str:
    """getProvisioningRequestNamePrefix: the prefix Kueue looks its requests up by."""
    return limit_object_name(f"{workload}-{check}-")


def pod_template_name(provreq: str, podset: str = JOB_PODSET) -> str:
    return limit_object_name(f"{POD_TEMPLATE_PREFIX}-{provreq}-{podset}")


def kueue_recognises(provreq: str, workload: str, check: str) -> bool:
    """matchesWorkloadAndCheck: does Kueue take `provreq` for a request of this Workload and check?"""
    return re.fullmatch(re.escape(provreq_prefix(workload, check)) + r"([0-9]+)", provreq) is not None


def loses_its_request(workload_len: int, check_len: int, attempt: int = 1) -> bool:
    """True when Kueue v0.19.2 cannot find the request it made (the create/delete loop): exactly when
    `<workload>-<check>-<attempt>` is longer than 247 characters (then the hashes differ or the
    prefix has no room for the digits)."""
    return workload_len + 1 + check_len + 1 + len(str(attempt)) > MAX_PREFIX_LENGTH


def shortest_looping_check(job_name: str, attempt: int = 1) -> int:
    """The length of the shortest AdmissionCheck name whose requests Kueue v0.19.2 loses for this Job."""
    return MAX_PREFIX_LENGTH + 1 - workload_name_length_for_job(job_name) - 2 - len(str(attempt))
