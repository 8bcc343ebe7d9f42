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

from k8s.keys import (ACTIVE, MODE_ADOPT, MODE_EXTERNAL, MODE_MANAGE, PROVISIONING_READY, TAUCLUSTER_ADOPTED_ANNOTATION,
                      TAUCLUSTER_LABEL, TAUCLUSTER_PROFILE_LABEL)
from k8s.objects import Obj, annotations, condition, deleting, labels, meta
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
BEING_DELETED = "ObjectBeingDeleted"
SETTING_UP = "SettingUp"
CHECK_NOT_ACTIVE = "AdmissionCheckNotActive"
QUEUE_INACTIVE = "ClusterQueueNotActive"


@dataclass(frozen=True)
class SetupWrite:
    verb: str              # "create", "update" (a field put back), "adopt" (labels added), "release" (labels
                           # removed), "delete"
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


def describe(obj: Obj) -> str:
    kind, ns, name = key(obj)
    return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"


def owner(obj: Obj | None) -> str | None:
    """The TauCluster that marked the object as its own, or None."""
    return labels(obj).get(TAUCLUSTER_LABEL)


def _marks_patch(obj: Obj, labels_: dict, annotations_: dict) -> Obj:
    """A patch of the object found that sets only these labels and annotations, at the resourceVersion read."""
    md = meta(obj)
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"),
            "metadata": {"name": md.get("name"), **({"namespace": md["namespace"]} if md.get("namespace") else {}),
                         "resourceVersion": md.get("resourceVersion"), "labels": labels_,
                         "annotations": annotations_}}


def _adopted(found: Obj, taucluster: str, profile: Profile) -> Obj:
    """The object found with the TauCluster's marks added: only its labels change (patched by resourceVersion)."""
    return _marks_patch(found, {**labels(found), **marks(taucluster, profile)},
                        {**annotations(found), TAUCLUSTER_ADOPTED_ANNOTATION: "true"})


def plan_profile(mode: str, taucluster: str, profile: Profile, found: Mapping[Key, Obj]) -> ProfilePlan:
    """The writes for one profile and its readiness, from the objects found under the profile's names."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: must be one of {', '.join(MODES)}")
    actions: list[SetupWrite] = []
    problems: dict[str, list[str]] = {}
    for want in objects(profile, taucluster):
        have = found.get(key(want))
        what = describe(want)
        if have is None:
            if mode == MODE_MANAGE:
                actions.append(SetupWrite("create", want, f"{what} does not exist"))
                problems.setdefault(SETTING_UP, []).append(f"{what} is being created")
            else:
                problems.setdefault(MISSING, []).append(f"{what} does not exist")
            continue
        if deleting(have):      # Kueue keeps an object in use (its resource-in-use finalizer): made again once gone
            held = ", ".join(meta(have).get("finalizers") or []) or "no finalizer"
            problems.setdefault(BEING_DELETED, []).append(f"{what} is being deleted (held by {held}); made again "
                                                          "once it is gone" if mode == MODE_MANAGE else
                                                          f"{what} is being deleted (held by {held})")
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
    for reason in (CLAIMED, NOT_OURS, MISSING, INCOMPATIBLE, BEING_DELETED, SETTING_UP):
        if problems.get(reason):
            return Ready(False, reason, "; ".join(problems[reason]))
    check = found.get((ADMISSION_CHECK.kind, "", profile.check))
    queue = found.get((CLUSTER_QUEUE.kind, "", profile.cluster_queue))
    for obj, reason in ((check, CHECK_NOT_ACTIVE), (queue, QUEUE_INACTIVE)):
        active = condition(obj, ACTIVE) or {}
        if active.get("status") != "True":
            said = active.get("message") or "no Active condition yet"
            return Ready(False, reason, f"{describe(obj)} is not Active: {said}")
    return Ready(True, READY, f"profile {profile.name}: ClusterQueue {profile.cluster_queue} and AdmissionCheck "
                              f"{profile.check} Active")


def adopted(obj: Obj) -> bool:
    """An administrator's object this TauCluster took over (Adopt), not one it made."""
    return annotations(obj).get(TAUCLUSTER_ADOPTED_ANNOTATION) == "true"


def _let_go(obj: Obj, why: str) -> SetupWrite:
    """Give an adopted object back: its labels and mark of ours removed (a merge patch's nulls), nothing else."""
    return SetupWrite("release", _marks_patch(obj, {TAUCLUSTER_LABEL: None, TAUCLUSTER_PROFILE_LABEL: None},
                                              {TAUCLUSTER_ADOPTED_ANNOTATION: None}), why)


def release_all(mode: str, taucluster: str, found: list[Obj]) -> list[SetupWrite]:
    """The TauCluster is being deleted: under Manage the objects it made are deleted; an adopted object (in any
    mode) is given back as it is; External holds nothing."""
    out = []
    for obj in found:
        if owner(obj) != taucluster:
            continue
        if deleting(obj):
            continue                  # already going (Kueue lets an object in use go once nothing uses it)
        if adopted(obj) or mode != MODE_MANAGE:
            out.append(_let_go(obj, f"{describe(obj)}: given back as it is (TauCluster {taucluster} is deleted)"))
        else:
            out.append(SetupWrite("delete", obj, f"{describe(obj)}: made by TauCluster {taucluster}, which is deleted"))
    return out


def conditions(plans: list[ProfilePlan], old: list[Obj], now: str, generation: int | None) -> list[Obj]:
    """status.profiles: per profile its ProvisioningReady condition; the transition time kept while the status
    stays what it was."""
    before = {p.get("name"): next((c for c in p.get("conditions") or [] if c.get("type") == PROVISIONING_READY), {})
              for p in old}
    out = []
    for pl in plans:
        status = "True" if pl.ready.status else "False"
        was = before.get(pl.profile, {})
        since = was.get("lastTransitionTime") if was.get("status") == status else now
        out.append({"name": pl.profile, "conditions": [{
            "type": PROVISIONING_READY, "status": status, "reason": pl.ready.reason, "message": pl.ready.message,
            "lastTransitionTime": since or now, **({"observedGeneration": generation} if generation else {})}]})
    return out


def stale(taucluster: str, wanted: list[Obj], found: list[Obj]) -> list[SetupWrite]:
    """This TauCluster's objects found that are not among the `wanted` ones (the objects() of its profiles: a
    profile removed, a namespace dropped from one): the ones it made to delete, the adopted ones to give back."""
    keep = {key(o) for o in wanted}
    out = []
    for obj in found:
        if owner(obj) != taucluster or key(obj) in keep:
            continue
        why = f"{describe(obj)} (profile {labels(obj).get(TAUCLUSTER_PROFILE_LABEL)}) is no longer wanted by TauCluster " \
              f"{taucluster}"
        out.append(_let_go(obj, why + ": given back") if adopted(obj) else SetupWrite("delete", obj, why))
    return out


def once(writes: list[SetupWrite]) -> list[SetupWrite]:
    """Each write once: profiles that share an object (an AdmissionCheck and its config, say) plan it each; the first
    profile's write stands, in order."""
    seen: set[tuple[str, Key]] = set()
    out = []
    for w in writes:
        if (w.verb, key(w.obj)) not in seen:
            seen.add((w.verb, key(w.obj)))
            out.append(w)
    return out
