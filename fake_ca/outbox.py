"""What the fake autoscaler's controller sends and when (pure; the controller is controller.py, which reads the
caches, calls lifecycle.plan_loop and scaledown, and sends what this module builds): which pod event wakes the
loop, when the status ConfigMap is written again, each ProvisioningRequest status write's body, new node names,
a node's taints with or without ToBeDeleted, and the lines the controller logs about its loop."""

from __future__ import annotations

import random
from datetime import datetime

from k8s import node as nodes_
from k8s.keys import POD_SCHEDULED, TO_BE_DELETED_TAINT
from k8s.objects import condition, created_at, deleting, meta, spec
from k8s.pools import Pool
from k8s.resources import PROVREQ
from . import lifecycle, scaledown, status

RECENT_POD_SECONDS = 10          # loop/trigger.go maxPodChangeAge
STATUS_EVERY = 1.0               # the status ConfigMap's node counts are written at most this often


def wakes(pod: dict, now: datetime) -> bool:
    """loop/trigger.go: a pod (added or changed) created less than RECENT_POD_SECONDS ago that the scheduler could
    not place (not bound, not being deleted, PodScheduled=False) wakes the loop."""
    if spec(pod).get("nodeName") or deleting(pod):
        return False
    c = condition(pod, POD_SCHEDULED)
    created = created_at(pod)
    return bool(c and c.get("status") == "False" and created and
                (now - created).total_seconds() < RECENT_POD_SECONDS)


def templates_by_key(templates: list[dict]) -> dict[tuple, dict]:
    """PodTemplates by (namespace, name), as lifecycle.Cluster reads them."""
    return {(meta(t).get("namespace"), meta(t).get("name")): t for t in templates}


def parse_version(pr: dict, templates: dict) -> tuple:
    """What a request's reading depends on: its resourceVersion and its PodTemplates' (by name), so that a
    remembered reading is used only while neither changed."""
    refs = tuple(sorted(str(((ps or {}).get("podTemplateRef") or {}).get("name")) for ps in
                        spec(pr).get("podSets") or [] if isinstance(ps, dict)))
    return (meta(pr).get("resourceVersion"), tuple((r, meta(templates.get(r)).get("resourceVersion")) for r in refs))


def status_due(doc: dict, last: dict | None, since_last: float) -> bool:
    """Write the status ConfigMap again: something in it changed, and either a node group's scale-up state did
    (or nothing was written yet): at once; or only node counts did, and STATUS_EVERY passed since the last write."""
    if doc == last:
        return False
    urgent = last is None or status.scale_up_states(doc) != status.scale_up_states(last)
    return urgent or since_last >= STATUS_EVERY


def status_write(w: lifecycle.Write, base: dict | None = None) -> tuple[bool, dict]:
    """(server-side apply?, body) of one ProvisioningRequest status write.  An apply carries only the one
    condition (and the class details); an update the whole object as read, without managedFields, with its
    resourceVersion.  `base`: the object as this loop's previous write of the same request returned it, for a
    decision that follows that write (its resourceVersion, its status)."""
    pr = w.provreq if base is None else base
    md = pr["metadata"]
    if w.apply:
        st: dict = {"conditions": [w.condition]}
        if w.details:
            st["provisioningClassDetails"] = w.details
        return True, PROVREQ.new(md["name"], md["namespace"], uid=md["uid"], status=st)
    return False, {**pr, "metadata": {k: v for k, v in md.items() if k != "managedFields"},
                   "status": {**(pr.get("status") or {}), "conditions": w.conditions}}


def written_line(w: lifecycle.Write, out: dict) -> str:
    """The log line of a status write that went through: why, the condition, the new resourceVersion."""
    c = w.condition
    return f"{w.why} [{c['type']}={c['status']}/{c['reason']}, rv {out['metadata'].get('resourceVersion')}]"


def new_names(pool: Pool, count: int, taken: set[str], rng: random.Random) -> list[str]:
    """`count` new node names of the pool (its prefix and six random digits), none of them taken."""
    taken = set(taken)
    names: list[str] = []
    while len(names) < count:
        n = f"{pool.name_prefix}{rng.randrange(10 ** 6):06d}"
        if n not in taken:
            taken.add(n)
            names.append(n)
    return names


def to_be_deleted(now: datetime) -> dict:
    """The ToBeDeleted taint the real autoscaler puts on a node it is about to delete."""
    return {"key": TO_BE_DELETED_TAINT, "value": scaledown.taint_value(now), "effect": "NoSchedule"}


def taints_with(node: dict, taint: dict | None) -> list[dict]:
    """The node's taints with `taint` as its ToBeDeleted taint (None: without one), its other taints kept."""
    kept = [t for t in spec(node).get("taints") or [] if t.get("key") != TO_BE_DELETED_TAINT]
    return kept + ([taint] if taint else [])


def pool_lines(nodes: list[dict], deleted: list[str], pools: list[Pool]) -> list[str]:
    """After a scale-down deleted `deleted`: each pool's nodes left out of its maximum."""
    left = [n for n in nodes if meta(n).get("name") not in deleted]
    return [f"scale-down: node pool {p.name}: {len(nodes_.of_pool(left, p.name))}/{p.max_nodes} nodes" for p in pools]


def options_line(o: lifecycle.Options) -> str:
    """The start-up line: the settings that shape the loop, and whether ValidUntilSeconds is honoured."""
    return ("fake-ca: one ProvisioningRequest per loop, loops %.1fs apart when idle (--scan-interval); "
            "request backoff %.0f..%.0fs, node-group backoff %.0f..%.0fs, max node provision time %.0fs, "
            "booking %.0fs, scale-down after %.0fs unneeded and %.0fs after a scale-up, requests deleted %.0fs after "
            "Provisioned/Failed; ValidUntilSeconds %s; %s") % (
        o.scan_interval, o.initial_backoff, o.max_backoff, o.initial_node_group_backoff, o.max_node_group_backoff,
        o.max_node_provision_time, o.booking, o.scale_down_unneeded, o.scale_down_delay_after_add, o.terminal_ttl,
        "HONOURED (differs from the real CA)" if o.honor_valid_until else "ignored (like the real CA)",
        "loops paced as the real CA's (--pace)" if o.pace else "loops NOT paced as the real CA's (--no-pace)")


# ---------------------------------------------------------------------------- what the controller says
# Every other line controller.py logs, word for word (the loop's decisions carry their own `why`).

def pools_line(namespace: str, name: str, pools: list[Pool]) -> str:
    return f"fake-ca: published pool table {namespace}/{name}: " + ", ".join(
        f"{p.name} ({p.min_nodes}..{p.max_nodes} nodes, boot {p.boot_seconds:.0f}s)" for p in pools)


def timed_out_line(why: str, nodes: list[str]) -> str:
    return f"scale-up timed out: {why} ({', '.join(nodes)})"


def nodes_requested_line(key: str, created: list[str], boots_at: str | None) -> str:
    return f"provreq {key}: nodes {', '.join(created)} requested" + (
        "" if boots_at is None else f"; they boot until {boots_at}")


def creating_line(key: str, names: list[str]) -> str:
    return f"provreq {key}: creating {', '.join(names)}"


def creates_failed_line(key: str, errors: list[str], count: int, created: list[str]) -> str:
    """Some of a scale-up's node creates failed: the ones made are deleted, so that it stays atomic."""
    return (f"provreq {key}: {len(errors)} of {count} node creates failed ({'; '.join(errors)}); deleting "
            f"{', '.join(created) or 'nothing'} so the scale-up stays atomic")


def not_written_line(key: str, error: Exception) -> str:
    return (f"provreq {key}: not written ({type(error).__name__}): gone or changed since it was read; the next loop "
            "reads it again")


def not_deleted_line(key: str, error: Exception | None) -> str:
    """A request's delete refused: made again under its name since it was read (None), or another error."""
    if error is None:
        return f"provreq {key}: not deleted: made again since it was read"
    return f"deleting provreq {key} failed ({error}); the next loop tries again"


def node_write_failed_line(what: str, name: str, error: Exception) -> str:
    """A node's delete, taint or annotation (`what`) failed; each is tried again by a later loop."""
    return f"{what} node {name} failed ({error}); the next loop tries again"


def tainting_line(node: str, delay: float) -> str:
    """A scale-down begins: the node tainted ToBeDeleted, deleted once tainted `delay` seconds."""
    return f"scale-down: tainting {node} {TO_BE_DELETED_TAINT}; deleting it in {delay:.0f}s"


def untainting_line(node: str) -> str:
    return f"scale-down: {node} is needed again; removing {TO_BE_DELETED_TAINT}"


def deleting_line(node: str, why: str) -> str:
    return f"scale-down: deleting {node}: {why}"


def status_failed_line(error: Exception) -> str:
    return f"writing the status ConfigMap failed ({error})"


def unreachable_line(error: Exception) -> str:
    return f"apiserver unreachable ({error}); next loop in {LOOP_RETRY:.0f}s"


LOOP_RETRY = 2.0                 # after a loop that failed (the apiserver unreachable, or an error of its own)
LOOP_FAILED = f"loop failed; next loop in {LOOP_RETRY:.0f}s"
