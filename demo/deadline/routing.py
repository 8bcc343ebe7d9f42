"""The admission-deadline controller's own decisions beside the protocol's (pure; the controller is controller.py):
which Jobs an instance handles, which Job key a Workload's event concerns, what each owner step writes and which
pause point follows it, when it records a take-up on the Workload, and what the controller says about a decision:
every line it logs is made here (`*_line`), so that a line's words are checked by the unit tests and the mutation
gate, and the controller only passes on what it read and wrote.  The protocol itself (when to commit, mirror, arm,
delete) is protocol.py."""

from __future__ import annotations

from datetime import datetime

from k8s import workload as workloads
from k8s.keys import (DEADLINE_ANNOTATION, DEADLINE_CLASS_ANNOTATION, DEFAULT_DEADLINE_CLASS, MIRROR_KEYS,
                      TAKEN_UP_ANNOTATION)
from k8s.objects import annotations, format_time, meta, name_of
from . import protocol as dl
from . import rule as R
from .protocol import Action

QUIET = ("no Workload yet", "nothing to mirror")     # no-op reasons not worth a log line


def handles(job: dict | None, instance: str) -> bool:
    """The instance `instance` handles the Job: its deadline class (default: "default") is the instance's, and
    it carries a deadline or what a mirror wrote."""
    ann = annotations(job)
    if ann.get(DEADLINE_CLASS_ANNOTATION, DEFAULT_DEADLINE_CLASS) != instance:
        return False
    return DEADLINE_ANNOTATION in ann or any(k in ann for k in MIRROR_KEYS)


def handled_keys(jobs: list[dict], instance: str) -> list[str]:
    """The keys ("namespace/name") of the Jobs the instance handles, sorted."""
    return sorted(name_of(j) for j in jobs if handles(j, instance))


def _owners(wl: dict) -> list[dict]:
    return [r for r in meta(wl).get("ownerReferences") or [] if r.get("kind") == "Job" and r.get("controller")]


def owner_keys(wl: dict) -> list[str]:
    """The key of the Job that controls the Workload (its controller owner reference), in the Workload's namespace."""
    return [f"{meta(wl).get('namespace')}/{ref['name']}" for ref in _owners(wl)]


def _workload_owners(pr: dict) -> list[dict]:
    return [r for r in meta(pr).get("ownerReferences") or [] if r.get("kind") == "Workload"]


def owner_workload_uids(pr: dict) -> list[str]:
    """The uids of the Workloads that own a ProvisioningRequest (Kueue makes each request owned by its Workload):
    the index the requests' cache is kept by."""
    return [r["uid"] for r in _workload_owners(pr) if r.get("uid")]


def owner_workloads(pr: dict) -> list[tuple[str, str]]:
    """The key ("namespace/name", in the request's namespace) and the uid of each Workload that owns a
    ProvisioningRequest."""
    return [(f"{meta(pr).get('namespace')}/{r['name']}", r["uid"]) for r in _workload_owners(pr)
            if r.get("name") and r.get("uid")]


def owner_job_uids(wl: dict) -> list[str]:
    """The uids of the Jobs that control the Workload: the index the Workloads' cache is kept by."""
    return [r["uid"] for r in _owners(wl) if r.get("uid")]


def say(d: dl.Decision) -> tuple[str, str | None]:
    """(the gist of a decision that writes nothing, the line to log when the gist changes, None: none).  A WAIT's
    gist is only that it waits, so a resync's new remaining time is not said again."""
    if d.action == Action.WAIT:
        return str(d.action), f"not admitted yet; {d.why}"
    return d.why, None if d.why in QUIET else d.why


def reread(wl: dict | None) -> str:
    """What a live read after a conflict found, for the log."""
    if workloads.admission_won(wl):
        return "Admitted=True"
    return "timeout committed" if workloads.committed_timeout(wl) else "not admitted"


def owner_patch(d: dl.Decision, wl: dict | None, now: datetime, ttl: float) -> tuple[dict, str | None]:
    """(the patch of the owner Job that a MIRROR, ARM_CLEANUP or UNMARK decision writes, the pause point reached
    after it, None: none)."""
    if d.action == Action.MIRROR:
        return dl.mirror_patch(wl["metadata"]["name"], now), "after-mirror"
    if d.action == Action.ARM_CLEANUP:
        return dl.arm_patch(now, ttl), "after-arm"
    if d.action == Action.UNMARK:
        return dl.unmark_patch(), None
    raise ValueError(f"{d.action} writes no patch of the owner Job")


def take_up_patch(d: dl.Decision, job: dict, wl: dict, counting: dl.Counting) -> dict | None:
    """The merge patch (metadata only, no resourceVersion) that records on the Workload the earliest take-up the
    controller knows (`counting.seen`: its memory and the requests), so that a controller restarted after a retry
    rewrote the take-up's time still counts from the first one (rule.py); None: nothing to write.  Only while
    step 1 waits (a commit ends the count; a Workload admitted, deactivated or without a deadline needs none), only
    under the rule taken-up, and only to move the record earlier: never when the Workload already records that
    take-up or an earlier one, nor over a malformed record (rule.due counts that Job from submission; a time that
    cannot be read cannot be told later or earlier).  So the record only ever moves earlier, and a reconcile
    writes it only when it would change."""
    if d.action != Action.WAIT or counting.seen is None:
        return None
    try:
        if R.rule_of(job, counting.rule) != R.Rule.TAKEN_UP:
            return None
        recorded = R.recorded_take_up(wl)
    except R.BadDeadline:
        return None
    if recorded is not None and recorded <= counting.seen:
        return None
    return {"metadata": {"annotations": {TAKEN_UP_ANNOTATION: format_time(counting.seen, micro=True)}}}


# ---------------------------------------------------------------------------- what the controller says
# Each line is what `log` prints for one event of controller.py, "deadline <namespace/name>: " first.

def decided_line(key: str, attempt: int, wl: dict | None, d: dl.Decision) -> str | None:
    """Step 1's decision: after a conflict (`attempt` > 0) what the live re-read found and the decision; a commit's
    reason; None: a decision that writes nothing, said by `say` only when its gist changes."""
    if attempt:
        return f"deadline {key}: re-read: {reread(wl)}; {d.why}"
    return f"deadline {key}: {d.why}" if d.action == Action.COMMIT else None


def no_op_line(key: str, line: str) -> str:
    return f"deadline {key}: {line}"


def commit_refused_line(key: str, conflict: bool, wl_name: str, resource_version: str | None) -> str:
    """The commit was refused: 409 (the Workload is not at the version decided on) or 404 (it is gone)."""
    if conflict:
        return f"deadline {key}: 409 conflict on Workload rv {resource_version}; reading again"
    return f"deadline {key}: Workload {wl_name} is gone (404); reading again"


def committed_line(key: str, wl_name: str, seconds: float) -> str:
    return (f"deadline {key}: committed timeout on Workload {wl_name} (spec.active=false; the write took "
            f"{seconds * 1000:.0f} ms)")


def still_conflicting_line(key: str, attempts: int) -> str:
    return f"deadline {key}: still conflicting after {attempts} attempts; will retry"


def take_up_line(key: str, wl_name: str, patch: dict, error: Exception | None) -> str:
    """The take-up recorded on the Workload, or why it could not be (tried again at the next look)."""
    if error is not None:
        return f"deadline {key}: could not record the take-up on Workload {wl_name} ({error}); will try again"
    return (f"deadline {key}: recorded the take-up {patch['metadata']['annotations'][TAKEN_UP_ANNOTATION]} on "
            f"Workload {wl_name} (a restart counts from it)")


def step_line(key: str, d: dl.Decision) -> str:
    """An owner step (or a legacy step) about to be written: its reason."""
    return f"deadline {key}: {d.why}"


def owner_conflict_line(key: str) -> str:
    return f"deadline {key}: Job changed under us (409); reading again"


def legacy_commit_line(key: str, conflict: bool) -> str:
    """The legacy protocol's deactivation, after it marked the owner: written, or refused (409)."""
    if conflict:
        return f"deadline {key}: LEGACY: 409 conflict deactivating the Workload; the owner keeps its terminal mark"
    return f"deadline {key}: LEGACY: Workload deactivated"


LEGACY_WARNING = ("deadline: running the LEGACY protocol (mark owner, then deactivate, then TTL cleanup). It reports "
                  "running jobs failed and deletes them; it exists only to reproduce that bug.")


def start_line(namespace: str | None, instance: str, protocol: str, rule: str, outer_factor: float, ttl: float,
               resync: float, workers: int) -> str:
    """What the controller watches and how it decides, said once at start."""
    return (f"deadline: watching Jobs, Workloads and ProvisioningRequests in {namespace or 'all namespaces'} (class "
            f"{instance}, protocol {protocol}, rule {rule}, outer bound {outer_factor:g} deadlines, cleanup TTL "
            f"{ttl:.0f}s, resync {resync:.0f}s, {workers} workers)")
