"""What a TauCluster does about one profile's objects, by mode (pure): the writes, and the profile's readiness.

- **Manage** makes what is missing, puts back a field of its own objects that someone changed, deletes its objects
  of a profile that is gone; an object of the profile's names that it did not make is never touched (reported).
- **Adopt** takes over an object an administrator made when it holds every wanted field (it only adds the
  TauCluster's labels); an incompatible one is reported with the fields that differ and left as it is; it makes
  nothing and deletes nothing.
- **External** writes nothing: it only says whether the objects found are what the profile needs.

In every mode an object another TauCluster marked as its own is left alone and the profile is not ready: two
TauClusters cannot claim one profile.  Readiness (`ProvisioningReady`) is True only when every object is there as
wanted, the AdmissionCheck is Active and the ClusterQueue is Active; otherwise the first reason found, with a
message naming the objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from k8s.keys import ACTIVE, MODE_ADOPT, MODE_EXTERNAL, MODE_MANAGE, TAUCLUSTER_LABEL, TAUCLUSTER_PROFILE_LABEL
from k8s.objects import Obj, condition, labels, meta
from k8s.resources import ADMISSION_CHECK, CLUSTER_QUEUE

from .profile import Profile, differences, marks, objects

MODES = (MODE_MANAGE, MODE_ADOPT, MODE_EXTERNAL)
Key = tuple[str, str, str]                  # (kind, namespace or "", name)

# the reasons of ProvisioningReady, in the order a profile's problems are reported
READY = "Ready"
CLAIMED = "ClaimedByAnotherTauCluster"
NOT_OURS = "NotMadeByThisTauCluster"
MISSING = "ObjectMissing"
INCOMPATIBLE = "IncompatibleObject"
SETTING_UP = "SettingUp"
CHECK_NOT_ACTIVE = "AdmissionCheckNotActive"
QUEUE_INACTIVE = "ClusterQueueNotActive"


@dataclass(frozen=True)
class SetupWrite:
    verb: str              # "create", "update" (a field put back), "adopt" (labels added), "delete"
    obj: Obj               # the object to write (for "delete": the one found)
    why: str


@dataclass(frozen=True)
class Ready:
    status: bool
    reason: str
    message: str


@dataclass(frozen=True)
class ProfilePlan:
    profile: str
    actions: tuple[SetupWrite, ...]
    ready: Ready


def key(obj: Obj) -> Key:
    return str(obj.get("kind")), str(meta(obj).get("namespace") or ""), str(meta(obj).get("name"))


def _what(obj: Obj) -> str:
    kind, ns, name = key(obj)
    return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"


def owner(obj: Obj | None) -> str | None:
    """The TauCluster that marked the object as its own, or None."""
    return labels(obj).get(TAUCLUSTER_LABEL)


def _adopted(found: Obj, taucluster: str, profile: Profile) -> Obj:
    """The object found with the TauCluster's marks added: only its labels change (patched by resourceVersion)."""
    md = meta(found)
    return {"apiVersion": found.get("apiVersion"), "kind": found.get("kind"),
            "metadata": {"name": md.get("name"), **({"namespace": md["namespace"]} if md.get("namespace") else {}),
                         "resourceVersion": md.get("resourceVersion"),
                         "labels": {**labels(found), **marks(taucluster, profile)}}}


def plan_profile(mode: str, taucluster: str, profile: Profile, found: Mapping[Key, Obj]) -> ProfilePlan:
    """The writes for one profile and its readiness, from the objects found under the profile's names."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: must be one of {', '.join(MODES)}")
    actions: list[SetupWrite] = []
    problems: dict[str, list[str]] = {}
    for want in objects(profile, taucluster):
        have = found.get(key(want))
        what = _what(want)
        if have is None:
            if mode == MODE_MANAGE:
                actions.append(SetupWrite("create", want, f"{what} does not exist"))
                problems.setdefault(SETTING_UP, []).append(f"{what} is being created")
            else:
                problems.setdefault(MISSING, []).append(f"{what} does not exist")
            continue
        who = owner(have)
        if who is not None and who != taucluster:
            problems.setdefault(CLAIMED, []).append(f"{what} is TauCluster {who}'s")
            continue
        diffs = differences(want, have)
        if who == taucluster and mode == MODE_MANAGE:
            if diffs:
                actions.append(SetupWrite("update", {**want, "metadata": {**want["metadata"],
                                                                      "resourceVersion": meta(have).get("resourceVersion")}},
                                      f"{what} changed, put back: {'; '.join(diffs)}"))
                problems.setdefault(SETTING_UP, []).append(f"{what} is being put back")
            continue
        if who is None and mode == MODE_MANAGE:
            problems.setdefault(NOT_OURS, []).append(f"{what} exists and was not made by TauCluster {taucluster} "
                                                     "(adopt it, or delete it)")
            continue
        if diffs:
            problems.setdefault(INCOMPATIBLE, []).append(f"{what}: {'; '.join(diffs)}")
            continue
        if who is None and mode == MODE_ADOPT:
            actions.append(SetupWrite("adopt", _adopted(have, taucluster, profile), f"{what} is compatible: adopted"))
    return ProfilePlan(profile.name, tuple(actions), _readiness(profile, found, problems))


def _readiness(profile: Profile, found: Mapping[Key, Obj], problems: dict[str, list[str]]) -> Ready:
    for reason in (CLAIMED, NOT_OURS, MISSING, INCOMPATIBLE, SETTING_UP):
        if problems.get(reason):
            return Ready(False, reason, "; ".join(problems[reason]))
    check = found.get((ADMISSION_CHECK.kind, "", profile.check))
    queue = found.get((CLUSTER_QUEUE.kind, "", profile.cluster_queue))
    for obj, reason in ((check, CHECK_NOT_ACTIVE), (queue, QUEUE_INACTIVE)):
        active = condition(obj, ACTIVE) or {}
        if active.get("status") != "True":
            said = active.get("message") or "no Active condition yet"
            return Ready(False, reason, f"{_what(obj)} is not Active: {said}")
    return Ready(True, READY, f"profile {profile.name}: ClusterQueue {profile.cluster_queue} and AdmissionCheck "
                              f"{profile.check} Active")


def stale(taucluster: str, wanted: list[Obj], found: list[Obj]) -> list[SetupWrite]:
    """Manage: this TauCluster's objects found that are not among the `wanted` ones (the objects() of its
    profiles: a profile removed, a namespace dropped from one; none when the TauCluster is being deleted), to
    delete."""
    keep = {key(o) for o in wanted}
    return [SetupWrite("delete", obj, f"{_what(obj)} (profile {labels(obj).get(TAUCLUSTER_PROFILE_LABEL)}) is no longer "
                                  f"wanted by TauCluster {taucluster}")
            for obj in found if owner(obj) == taucluster and key(obj) not in keep]
