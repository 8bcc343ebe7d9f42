"""What a TauCluster does about one profile's objects, by mode (pure): the writes, and the profile's readiness.

- **Manage** makes what is missing, puts back a field of its own objects that someone changed, deletes its objects
  of a profile that is gone; an object of the profile's names that it did not make is never touched (reported).
- **Adopt** takes over an object an administrator made when it holds every wanted field (it only adds the
  TauCluster's labels); an incompatible one is reported with the fields that differ and left as it is; it makes
  nothing and deletes nothing.
- **External** writes nothing: it only says whether the objects found are what the profile needs.

**Claims** (`refusals()`): every profile of every TauCluster claims the objects it names, and each object has one
holder: the TauCluster whose label it carries, if that one still claims it, else the earliest claim (the TauCluster's
creationTimestamp, then its name, then the profile's place in its spec): a rule over what is stored, so it reads the
same after a restart.  A profile is refused (`Conflict`) when it names an object that another TauCluster holds (even
with the same contents: an object has one TauCluster, whose labels say whose it is and who deletes it), or that an
earlier profile of its own TauCluster sets up otherwise (the CRD refuses that one already); a refused profile writes
nothing at all.  So no object is ever set up by two claims in turn.  An object another TauCluster marked as its own
is left alone in every mode too.  Readiness (`ProvisioningReady`) is True only when every object is there as
wanted, the AdmissionCheck is Active and the ClusterQueue is Active; otherwise the first reason found, with a
message naming the objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from k8s.keys import (ACTIVE, MODE_ADOPT, MODE_EXTERNAL, MODE_MANAGE, PROVISIONING_READY, TAUCLUSTER_ADOPTED_ANNOTATION,
                      TAUCLUSTER_CONFLICT, TAUCLUSTER_LABEL, TAUCLUSTER_PROFILE_LABEL)
from k8s.objects import Obj, annotations, condition, deleting, labels, meta, spec
from k8s.resources import ADMISSION_CHECK, CLUSTER_QUEUE

from .profile import BadProfile, Profile, differences, divergences, marks, objects, parse_all

MODES = (MODE_MANAGE, MODE_ADOPT, MODE_EXTERNAL)
Key = tuple[str, str, str]                  # (kind, namespace or "", name)

# the reasons of ProvisioningReady, in the order a profile's problems are reported
READY = "Ready"
CLAIMED = TAUCLUSTER_CONFLICT          # an object of the profile is another claim's (was ClaimedByAnotherTauCluster)
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


def plan_profile(mode: str, taucluster: str, profile: Profile, found: Mapping[Key, Obj],
                 refused: Sequence[str] = ()) -> ProfilePlan:
    """The writes for one profile and its readiness, from the objects found under the profile's names; `refused`:
    why its claims are refused (refusals()), and then it writes nothing."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: must be one of {', '.join(MODES)}")
    if refused:
        return ProfilePlan(profile.name, (), Ready(False, CLAIMED, "; ".join(refused)))
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


# ---------------------------------------------------------------------------------------------- claims

@dataclass(frozen=True)
class Claim:
    """A profile's claim on one Kueue object: the object it wants and its place in line."""
    taucluster: str
    created: str            # the TauCluster's creationTimestamp (RFC 3339, in one format: it sorts as text)
    index: int              # the profile's place in its TauCluster's spec.profiles
    profile: str
    want: Obj
    place: int = 0          # the object's place among its profile's objects (the order they are made in)

    @property
    def order(self) -> tuple[str, str, int]:
        return self.created, self.taucluster, self.index


def claims(tauclusters: list[Obj]) -> list[Claim]:
    """Every claim of every TauCluster that is not being deleted (one being deleted gives its objects up) and whose
    profiles read (a TauCluster refused as invalid does nothing, so it holds nothing)."""
    out = []
    for tc in tauclusters:
        if deleting(tc):
            continue
        try:
            profiles = parse_all(spec(tc).get("profiles"))
        except BadProfile:
            continue
        name, created = str(meta(tc).get("name")), str(meta(tc).get("creationTimestamp") or "")
        out += [Claim(name, created, i, p.name, want, place) for i, p in enumerate(profiles)
                for place, want in enumerate(objects(p, name))]
    return out


def _contrast(mine: Obj, theirs: Obj, whose: str) -> list[str]:
    """The fields in which two wanted objects differ, either way ("spec.x: profile a wants 16, this one 32")."""
    seen = {path: (have, want) for path, want, have in divergences(mine, theirs)}
    for path, want, have in divergences(theirs, mine):
        seen.setdefault(path, (want, have))
    return [f"{path}: {whose} wants {t!r}, this profile {m!r}" for path, (t, m) in seen.items()]


def refusals(tauclusters: list[Obj], found: Mapping[Key, Obj]) -> dict[tuple[str, str], list[str]]:
    """(TauCluster, profile) -> why its claims are refused, one line per object it may not have; a profile not in it
    is not refused.  Each object's holder: the claimant whose label the object found carries, else the earliest claim
    (creationTimestamp, name, place in its spec).  Refused: a claim of another TauCluster than the holder, whatever
    it wants, and a claim of the holder's own TauCluster that wants the object otherwise than its first claim does
    (profiles of one TauCluster may share an object that they want alike: the walkthrough's slots share a check)."""
    by_key: dict[Key, list[Claim]] = {}
    for c in sorted(claims(tauclusters), key=lambda c: c.order):
        by_key.setdefault(key(c.want), []).append(c)
    out: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for k, line in by_key.items():
        if len({c.taucluster for c in line}) == 1 and len({c.profile for c in line}) == 1:
            continue
        labelled = owner(found.get(k))
        holder = labelled if any(c.taucluster == labelled for c in line) else line[0].taucluster
        first = next(c for c in line if c.taucluster == holder)
        for c in line:
            if c is first:
                continue
            what, diffs = describe(c.want), _contrast(c.want, first.want, f"profile {first.profile}")
            if c.taucluster != holder:
                why = (f"{what} is TauCluster {holder}'s (its profile {first.profile} holds it); " +
                       (f"this profile wants it otherwise: {'; '.join(diffs)}" if diffs else
                        "this profile wants it alike, but an object is held by one TauCluster"))
            elif diffs:
                why = f"{what} is set up by profile {first.profile} of this TauCluster otherwise: {'; '.join(diffs)}"
            else:
                continue
            out.setdefault((c.taucluster, c.profile), []).append((c.place, why))
    return {who: [why for _, why in sorted(lines)] for who, lines in out.items()}
