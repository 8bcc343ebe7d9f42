"""The design's once-per-cluster setup, told on the real cluster: a TauCluster in each of its three modes.

Each scenario sets up profiles of its own (named tc-..., on the demo's GPU pool), so the demo's TauCluster and its
profile gpu-a100-8 are never touched, and removes everything it made.  The TauCluster controller is the cluster's
own (`cluster up` runs it as its least-privilege ServiceAccount).  Where the apiserver keeps an audit log (the kwok
backend: manifests/kwok/audit-policy.yaml records every write to TauClusters, to the five kinds of Kueue object and
to tau-demo-system's Leases, which is all that ServiceAccount may write), "wrote nothing" is read from it; elsewhere
from the objects' spec generations, labels and annotations, which say less (a write that changed nothing leaves no
trace there).

1. Manage: the profile's objects made; a quota someone edits and a LocalQueue someone deletes put back; a deleted
   AdmissionCheck that Kueue holds reported, and submit refused meanwhile; deleting the TauCluster deletes it all.
2. Adopt: an administrator's compatible objects taken over (labels only) while a Job runs on their queue, which is
   not disturbed; an incompatible object reported with the fields that differ and left untouched (its profile's
   compatible objects adopted all the same); given back.
3. External: readiness reported from the administrator's objects; a broken setup refused at submit with the
   status's reason, nothing created; no write made but the TauCluster's status.
4. A mode switch: External, then Adopt on the same objects, then deleted: taken over, then given back.
5. Two TauClusters claim one profile: the second is refused and touches nothing.
"""

from __future__ import annotations

import copy
import subprocess
import sys
import time
from pathlib import Path

from demo.cluster import kwok
from demo.cluster.state import state_of
from demo.jobs.preflight import Gang
from demo.jobs.submit import run_preflight
from demo.taucluster import plan as P
from demo.taucluster.profile import objects, parse_profile
from demo.timeline import svg
from k8s import audit, poll
from k8s import job as jobs
from k8s import taucluster as tauclusters_
from k8s import workload as workloads
from k8s.keys import (CHECK_CAPACITY, GPU, MODE_ADOPT, MODE_EXTERNAL, MODE_MANAGE, QUEUE_LABEL, SERVICE_ACCOUNTS,
                      TAUCLUSTER_ADOPTED_ANNOTATION, TAUCLUSTER_LABEL, TAUCLUSTER_SCENARIO_PREFIX)
from k8s.manifests import load_manifest
from k8s.objects import Obj, annotations, labels, meta
from k8s.paths import MANIFESTS, shown
from k8s.resources import ADMISSION_CHECK, CLUSTER_QUEUE, JOB, LOCAL_QUEUE, PROVREQ_CONFIG, RESOURCE_FLAVOR, TAUCLUSTER

from ..kit.harness import NS, Context, ScenarioFailed
from ..kit.scenario import Scenario
from ..kit.recorder import Recorder

ADMIN = "an-administrator"                  # the field manager of what "the administrator" applies
CONTROLLER = SERVICE_ACCOUNTS["taucluster"]
KINDS = {r.kind: r for r in (RESOURCE_FLAVOR, PROVREQ_CONFIG, ADMISSION_CHECK, CLUSTER_QUEUE, LOCAL_QUEUE)}
PUT_BACK_WITHIN = 10.0                      # seconds: drift is put back within a watch event and a reconcile
WAIT_READY = 60.0


def profile_raw(tag: str) -> Obj:
    """A profile of the scenario's own, on the demo's GPU pool: the demo profile's settings, its names tc-<tag>."""
    [tc] = load_manifest(MANIFESTS / "taucluster-demo.yaml")
    raw = copy.deepcopy(tc["spec"]["profiles"][0])
    name = f"{TAUCLUSTER_SCENARIO_PREFIX}{tag}"
    raw.update(name=name, clusterQueue=f"{name}-cq", admissionCheck=f"{name}-check")
    raw["flavor"]["name"] = f"{name}-flavor"
    return raw


def describe_all(objs: list[Obj]) -> str:
    return ", ".join(P.describe(o) for o in objs)


class Scene:
    """What a scenario makes (TauClusters, an administrator's Kueue objects, Jobs in their queues), removed at its
    end in that order and waited for; and the audit log's writes since it began, where the cluster keeps one."""

    def __init__(self, ctx: Context):
        self.ctx, self.k = ctx, ctx.k
        self.tauclusters: list[str] = []
        self.admin: list[Obj] = []
        st = state_of(ctx.kubeconfig)
        self.audit: Path | None = kwok.audit_log(st) if st is not None and st.backend == "kwok" else None
        self.audit_from = 0

    def __enter__(self):
        self.audit_from = self.audit.stat().st_size if self.audit and self.audit.exists() else 0
        return self

    # ---------------------------------------------------------------- making
    def taucluster(self, name: str, mode: str, *profiles: Obj) -> Obj:
        self.tauclusters.append(name)
        return self.k.create(TAUCLUSTER, TAUCLUSTER.new(name, spec={"mode": mode, "profiles": list(profiles)}))

    def admin_applies(self, objs: list[Obj]) -> list[Obj]:
        """The objects as an administrator applies them from a plain file: no label of a TauCluster's."""
        out = []
        for o in objs:
            o = {**o, "metadata": {k: v for k, v in o["metadata"].items() if k != "labels"}}
            out.append(self.k.apply(KINDS[o["kind"]], o, ADMIN))
            self.admin.append(out[-1])
        return out

    def live(self, obj: Obj) -> Obj | None:
        return self.ctx.live.get(KINDS[obj["kind"]], meta(obj)["name"], meta(obj).get("namespace"))

    def ready(self, name: str, profile: str) -> Obj:
        return tauclusters_.ready_condition(self.ctx.live.get(TAUCLUSTER, name), profile) or {}

    def wait_reason(self, name: str, profile: str, reason: str, timeout: float = WAIT_READY) -> Obj:
        """The profile's ProvisioningReady condition once it says `reason`, for the TauCluster's present spec."""
        def said() -> Obj | None:
            tc = self.ctx.live.get(TAUCLUSTER, name)
            c = tauclusters_.ready_condition(tc, profile) or {}
            current = c.get("observedGeneration") == meta(tc).get("generation")
            return c if current and c.get("reason") == reason else None
        return self.ctx.wait(said, timeout, f"TauCluster {name}'s profile {profile} to read {reason}")

    # ---------------------------------------------------------------- the audit log
    def writes(self) -> list[audit.AuditedWrite] | None:
        """Every write the audit log recorded since the scenario began; None where the cluster keeps no log."""
        if self.audit is None:
            return None
        with open(self.audit, "rb") as f:
            f.seek(self.audit_from)
            return audit.writes(f.read().decode(errors="replace").splitlines())

    def controller_writes_to(self, objs: list[Obj]) -> list[audit.AuditedWrite] | None:
        names = {(KINDS[o["kind"]].plural, meta(o).get("namespace") or "", meta(o)["name"]) for o in objs}
        got = self.writes()
        return None if got is None else [w for w in got if w.user == CONTROLLER
                                         and (w.resource, w.namespace, w.name) in names]

    # ---------------------------------------------------------------- removing
    def __exit__(self, exc_type, exc, tb):
        k, live = self.k, self.ctx.live
        for name in reversed(self.tauclusters):
            k.delete(TAUCLUSTER, name)
        queues = {meta(o)["name"] for o in self.admin if o["kind"] == LOCAL_QUEUE.kind}
        for job in live.list(JOB, NS):
            queue = labels(job).get(QUEUE_LABEL, "")
            if queue.startswith(TAUCLUSTER_SCENARIO_PREFIX) or queue in queues:
                k.delete(JOB, meta(job)["name"], NS, propagation="Foreground")
        try:
            self.ctx.wait(lambda: not any(live.get(TAUCLUSTER, n) for n in self.tauclusters), 90,
                          "the scenario's TauClusters to be gone (their finalizers done)")
            for o in reversed(self.admin):
                k.delete(KINDS[o["kind"]], meta(o)["name"], meta(o).get("namespace"))
            self.ctx.wait(lambda: not self.ctx.leftovers(), 90, "everything the scenario made to be gone")
        except ScenarioFailed as e:
            if exc_type is None:
                raise
            self.ctx.say(f"  cleanup after the failure: {e}")
        return False


def as_set_up(obj: Obj | None) -> tuple:
    """What a setup write would change: the spec (its generation), the labels and the annotations.  Kueue writes the
    objects' status all along, so their resourceVersions say nothing of who else wrote."""
    return (meta(obj).get("generation"), labels(obj), annotations(obj)) if obj else ()


def gpu_quota(cq: Obj | None) -> str | None:
    for rg in (cq or {}).get("spec", {}).get("resourceGroups") or []:
        for f in rg.get("flavors") or []:
            for r in f.get("resources") or []:
                if r.get("name") == GPU:
                    return r.get("nominalQuota")
    return None


def submit_cli(ctx: Context, profile: str, name: str) -> subprocess.CompletedProcess:
    """`tau-demo submit` as a researcher types it."""
    r = subprocess.run([sys.executable, "-m", "cli", "submit", "--profile", profile, "--gang", "1x8", "--name", name,
                        "--kubeconfig", ctx.kubeconfig], capture_output=True, text=True, timeout=60)
    for line in r.stdout.splitlines() + r.stderr.splitlines():
        ctx.say(f"  {line}")
    return r


# ---------------------------------------------------------------------------------------------- 1. Manage

TITLE_MANAGE = "TauCluster, Manage: the setup made, drift put back, deleted clean"


def manage(ctx: Context) -> None:
    ctx.header(TITLE_MANAGE)
    raw = profile_raw("manage")
    p = parse_profile(raw)
    tc = f"{TAUCLUSTER_SCENARIO_PREFIX}manage"
    with Scene(ctx) as s:
        ctx.step(f"kubectl create TauCluster {tc} (Manage) with one profile, {p.name}")
        t0 = time.monotonic()
        s.taucluster(tc, MODE_MANAGE, raw)
        ready = s.wait_reason(tc, p.name, P.READY)
        made = objects(p, tc)
        live = [s.live(o) for o in made]
        ctx.say(f"  {p.name}: ProvisioningReady=True after {time.monotonic() - t0:.1f}s: {ready.get('message')}")
        ctx.check(all(o is not None and labels(o).get(TAUCLUSTER_LABEL) == tc for o in live),
                  f"it made the profile's {len(made)} objects, each labelled as its own: {describe_all(made)}")
        code, lines = run_preflight(ctx.k, p.name, Gang(1, 8), NS)
        for line in lines:
            ctx.say(f"  {line}")
        ctx.check(code == 0 and lines[0].endswith(f"as TauCluster {tc} (Manage mode) reports it"),
                  "preflight reads the profile's readiness from the TauCluster's status")

        ctx.step(f"Someone edits ClusterQueue {p.cluster_queue}'s GPU quota to 2")
        groups = copy.deepcopy(live[3]["spec"]["resourceGroups"])
        groups[0]["flavors"][0]["resources"][2]["nominalQuota"] = "2"
        edited = ctx.k.patch(CLUSTER_QUEUE, p.cluster_queue, {"spec": {"resourceGroups": groups}})
        t1 = time.monotonic()
        back = ctx.wait(lambda: (cq := s.live(made[3])) is not None and gpu_quota(cq) == str(p.gpu_quota) and cq,
                        PUT_BACK_WITHIN, "the quota to be put back")
        took = time.monotonic() - t1
        writers = s.controller_writes_to([made[3]])
        by = (f"; the audit log shows the controller's patch ({len(writers or [])} write(s) of it to the "
              "ClusterQueue)" if writers is not None else "")
        ctx.check(int(meta(back)["resourceVersion"]) > int(meta(edited)["resourceVersion"])
                  and (writers is None or any(w.verb == "patch" and not w.refused for w in writers)),
                  f"the quota was put back to {p.gpu_quota} after {took:.1f}s (bound {PUT_BACK_WITHIN:.0f}s){by}")

        ctx.step(f"Someone deletes LocalQueue {NS}/{p.name}")
        ctx.k.delete(LOCAL_QUEUE, p.name, NS)
        t1 = time.monotonic()
        again = poll.eventually(lambda: (lq := s.live(made[4])) is not None and not meta(lq).get("deletionTimestamp")
                                and lq, PUT_BACK_WITHIN)
        ctx.check(bool(again) and labels(again).get(TAUCLUSTER_LABEL) == tc,
                  f"the LocalQueue was made again, as the TauCluster's, after {time.monotonic() - t1:.1f}s (bound "
                  f"{PUT_BACK_WITHIN:.0f}s)")

        ctx.step(f"Someone deletes AdmissionCheck {p.check}, which the ClusterQueue uses")
        ctx.k.delete(ADMISSION_CHECK, p.check)
        said = s.wait_reason(tc, p.name, P.BEING_DELETED, 20)
        ctx.check(said.get("status") == "False" and said.get("message") == (
            f"AdmissionCheck {p.check} is being deleted (held by kueue.x-k8s.io/resource-in-use); made again once it "
            "is gone"), f"Kueue holds it (its resource-in-use finalizer) and the profile says so: {said.get('message')}")
        job = ctx.new_name("job-tc")
        r = submit_cli(ctx, p.name, job)
        ctx.check(r.returncode == 1 and f"ProvisioningReady=False ({P.BEING_DELETED})" in r.stdout
                  and ctx.live.get(JOB, job, NS) is None,
                  "submit refuses the profile meanwhile, with the status's reason, and creates nothing")

        ctx.step(f"kubectl delete taucluster {tc}")
        ctx.k.delete(TAUCLUSTER, tc)
        t1 = time.monotonic()
        left = poll.eventually(lambda: [n for n in [f"TauCluster {tc}"] * bool(ctx.live.get(TAUCLUSTER, tc))
                                        + [P.describe(o) for o in made if s.live(o)]], 60, done=lambda got: not got)
        ctx.check(not left, f"the TauCluster and its {len(made)} objects are gone after {time.monotonic() - t1:.1f}s "
                            f"(Kueue lets the check go once its ClusterQueue is gone){f'; left: {left}' if left else ''}")


# ---------------------------------------------------------------------------------------------- 2. Adopt

TITLE_ADOPT = "TauCluster, Adopt: an administrator's objects taken over while a Job runs; an incompatible one untouched"


def adopt(ctx: Context) -> None:
    ctx.header(TITLE_ADOPT)
    raw, other_raw = profile_raw("adopt"), profile_raw("adopt-other")
    p, other = parse_profile(raw), parse_profile(other_raw)
    tc = f"{TAUCLUSTER_SCENARIO_PREFIX}adopt"
    with Scene(ctx) as s:
        ctx.step(f"An administrator applies two profiles' objects: {p.name} as the profile wants them, {other.name} "
                 "whose flavor names another node pool")
        mine = s.admin_applies(objects(p, "nobody"))
        theirs = objects(other, "nobody")
        theirs[0]["spec"]["nodeLabels"] = {"agentpool": "otherpool"}
        theirs = s.admin_applies(theirs)
        ctx.wait(lambda: all(s.live(o) and (s.live(o).get("status") or {}).get("conditions") for o in (mine[3],)),
                 30, "Kueue to take the administrator's ClusterQueue up")
        name = ctx.new_name("job-tc")
        log, log_path = ctx.event_log("taucluster-adopt")
        with Recorder(ctx, name, log) as rec:
            ctx.step(f"A 1 × 8-GPU Job runs on the administrator's queue {p.name}")
            ctx.submit(name, "1x8", duration="20s", profile=p.name)
            ctx.wait(lambda: (v := rec.samples[-1][1]) and v.pods and all(
                (q.get("status") or {}).get("phase") == "Running" for q in v.pods), 90, "the Job's pod to run")
            running_at = rec.samples[-1][0]
            pods_before = {meta(q)["uid"] for q in rec.samples[-1][1].pods}
            theirs_before = {P.describe(o): as_set_up(s.live(o)) for o in theirs}

            ctx.step(f"kubectl create TauCluster {tc} (Adopt) naming both profiles")
            s.taucluster(tc, MODE_ADOPT, raw, other_raw)
            rec.mark("TauCluster created (Adopt)")
            ready = s.wait_reason(tc, p.name, P.READY)
            refused = s.wait_reason(tc, other.name, P.INCOMPATIBLE)
            ctx.say(f"  {p.name}: ProvisioningReady=True ({ready.get('message')})")
            ctx.say(f"  {other.name}: ProvisioningReady=False ({refused.get('reason')}): {refused.get('message')}")
            adopted = [s.live(o) for o in mine]
            ctx.check(all(labels(o).get(TAUCLUSTER_LABEL) == tc and annotations(o).get(TAUCLUSTER_ADOPTED_ANNOTATION)
                          == "true" for o in adopted), f"the compatible objects are adopted: {describe_all(mine)}")
            ctx.check(refused.get("message") == f"ResourceFlavor {other.flavor}: spec.nodeLabels.agentpool: want "
                                                "'gpupool', have 'otherpool'",
                      "the incompatible flavor is reported with the field that differs")
            bad_flavor = theirs[0]
            after = as_set_up(s.live(bad_flavor))
            touched = s.controller_writes_to([bad_flavor])
            ctx.check(after == theirs_before[P.describe(bad_flavor)] and not touched,
                      f"the incompatible {P.describe(bad_flavor)} is untouched (the same spec generation, labels and "
                      "annotations" + (", and no write of the controller to it in the audit log)" if touched is not None
                                       else ")") + (f": {after}, {[str(w) for w in touched or []]}"
                                                    if touched or after != theirs_before[P.describe(bad_flavor)] else ""))
            ctx.check(all(labels(s.live(o)).get(TAUCLUSTER_LABEL) == tc for o in theirs[1:]),
                      f"that profile's {len(theirs) - 1} compatible objects are adopted all the same: each object is "
                      "judged on its own fields")
            ctx.wait(lambda: (v := rec.samples[-1][1]).job is not None and jobs.outcome(v.job) == "succeeded", 90,
                     "the Job to succeed")
        # from the pod running until the Job completed (Kueue then finishes the Workload: no longer "running")
        window = [snap for t, snap in rec.samples if t >= running_at and jobs.outcome(snap.job) is None]
        bad = [f"{'evicted' if workloads.evicted(snap.workload) else 'not admitted'} at +{t - running_at:.1f}s"
               for t, snap in rec.samples if t >= running_at and jobs.outcome(snap.job) is None
               and (snap.workload is None or workloads.evicted(snap.workload) or not workloads.admitted(snap.workload))]
        pods_seen = {meta(q)["uid"] for snap in window for q in snap.pods}
        ctx.check(window and not bad,
                  f"the running Job's Workload stayed admitted and was never evicted, in all {len(window)} samples "
                  f"from its pod running until the Job completed{f' ({bad[0]})' if bad else ''}")
        ctx.check(pods_seen == pods_before, f"its pod was never replaced ({len(pods_seen)} pod uid(s) seen)")

        ctx.step(f"kubectl delete taucluster {tc}")
        ctx.k.delete(TAUCLUSTER, tc)
        ctx.wait(lambda: ctx.live.get(TAUCLUSTER, tc) is None, 60, "the TauCluster to be gone")
        given = [s.live(o) for o in mine]
        ctx.check(all(o is not None and TAUCLUSTER_LABEL not in labels(o) and TAUCLUSTER_ADOPTED_ANNOTATION not in
                      annotations(o) for o in given), "the adopted objects are given back as they were, not deleted")
        ctx.delete_job(name)
        ctx.wait_pool_empty(120)
        picture = svg.write(log_path, log_path.with_suffix(".svg"), TITLE_ADOPT)
        ctx.say(f"  timeline: {shown(picture)}")


# ---------------------------------------------------------------------------------------------- 3. External

TITLE_EXTERNAL = "TauCluster, External: readiness reported, a broken setup refused at submit, no write made"


def external(ctx: Context) -> None:
    ctx.header(TITLE_EXTERNAL)
    raw = profile_raw("external")
    p = parse_profile(raw)
    tc = f"{TAUCLUSTER_SCENARIO_PREFIX}external"
    with Scene(ctx) as s:
        ctx.step(f"An administrator applies profile {p.name}'s objects; kubectl create TauCluster {tc} (External)")
        applied = s.admin_applies(objects(p, "nobody"))
        s.taucluster(tc, MODE_EXTERNAL, raw)
        ready = s.wait_reason(tc, p.name, P.READY)
        ctx.check(ready.get("status") == "True", f"ProvisioningReady=True: {ready.get('message')}")
        code, lines = run_preflight(ctx.k, p.name, Gang(1, 8), NS)
        for line in lines:
            ctx.say(f"  {line}")
        ctx.check(code == 0 and lines[0].endswith(f"as TauCluster {tc} (External mode) reports it"),
                  "preflight reads the readiness from the TauCluster's status")

        ctx.step(f"The administrator changes ProvisioningRequestConfig {p.check}'s class to check-capacity")
        config = applied[1]
        ctx.k.apply(PROVREQ_CONFIG, {**config, "metadata": {"name": meta(config)["name"]},
                                     "spec": {**config["spec"], "provisioningClassName": CHECK_CAPACITY}}, ADMIN)
        said = s.wait_reason(tc, p.name, P.INCOMPATIBLE)
        ctx.say(f"  {p.name}: ProvisioningReady=False ({said.get('reason')}): {said.get('message')}")
        job = ctx.new_name("job-tc")
        r = submit_cli(ctx, p.name, job)
        ctx.check(r.returncode == 1 and f"ProvisioningReady=False ({P.INCOMPATIBLE})" in r.stdout
                  and "provisioningClassName" in r.stdout and ctx.live.get(JOB, job, NS) is None,
                  "tau-demo submit is refused with the status's reason and the field, and creates nothing")

        ctx.step("The administrator puts the class back")
        ctx.k.apply(PROVREQ_CONFIG, {**config, "metadata": {"name": meta(config)["name"]}}, ADMIN)
        again = s.wait_reason(tc, p.name, P.READY)
        ctx.check(again.get("status") == "True", f"the profile is ready again: {again.get('message')}")

        ctx.step("What the TauCluster controller wrote during all of this")
        now = {P.describe(o): as_set_up(s.live(o)) for o in applied}
        before = {P.describe(o): as_set_up(o) for o in applied}
        before[P.describe(config)] = (meta(config).get("generation", 0) + 2, labels(config), annotations(config))
        writes = s.writes()
        if writes is None:
            ctx.check(now == before, "no write to the profile's objects: each holds the spec, labels and annotations "
                                     "the administrator left (this cluster keeps no audit log, so a write that "
                                     "changed nothing would not show)")
        else:
            mine = [w for w in writes if w.user == CONTROLLER]
            for w in mine:
                ctx.say(f"  {w}")
            wrong = [w for w in mine if not (w.resource == f"{TAUCLUSTER.plural}/status" and w.name == tc)
                     and w.resource != "leases"]
            ctx.check(now == before and not wrong and any(w.name == tc for w in mine),
                      f"the audit log shows {len(mine)} write(s) of the controller, each its TauCluster's status or its "
                      "heartbeat Lease: nothing written to the profile's objects or the TauCluster's spec")
        if writes is not None and not any(w.user == CONTROLLER and w.name == tc for w in writes):
            raise ScenarioFailed("the audit log shows no write of the controller at all: it is not recording")


# ---------------------------------------------------------------------------------------------- 4. a mode switch

TITLE_SWITCH = "TauCluster, a mode switch: External, then Adopt on the same objects, then deleted"


def mode_switch(ctx: Context) -> None:
    ctx.header(TITLE_SWITCH)
    raw = profile_raw("switch")
    p = parse_profile(raw)
    tc = f"{TAUCLUSTER_SCENARIO_PREFIX}switch"
    with Scene(ctx) as s:
        ctx.step(f"An administrator's objects for {p.name}; TauCluster {tc} in External mode")
        applied = s.admin_applies(objects(p, "nobody"))
        s.taucluster(tc, MODE_EXTERNAL, raw)
        s.wait_reason(tc, p.name, P.READY)
        ctx.check(not any(TAUCLUSTER_LABEL in labels(s.live(o)) for o in applied), "External: ready, nothing labelled")
        ctx.step("kubectl patch: spec.mode Adopt")
        ctx.k.patch(TAUCLUSTER, tc, {"spec": {"mode": MODE_ADOPT}})
        still = s.wait_reason(tc, p.name, P.READY)
        taken = poll.eventually(lambda: all(labels(s.live(o)).get(TAUCLUSTER_LABEL) == tc for o in applied), 20)
        ctx.check(taken and still.get("observedGeneration") == 2,
                  f"Adopt: the same {len(applied)} objects are taken over, the profile ready for the new spec "
                  f"(generation {still.get('observedGeneration')})")
        ctx.step(f"kubectl delete taucluster {tc}")
        ctx.k.delete(TAUCLUSTER, tc)
        ctx.wait(lambda: ctx.live.get(TAUCLUSTER, tc) is None, 60, "the TauCluster to be gone")
        ctx.check(all((o := s.live(a)) is not None and TAUCLUSTER_LABEL not in labels(o) for a in applied),
                  "deleted: the objects are given back as they were, none deleted")


# ---------------------------------------------------------------------------------------------- 5. two claims

TITLE_CLAIMS = "TauCluster, two claims on one profile: the second is refused"


def two_claims(ctx: Context) -> None:
    ctx.header(TITLE_CLAIMS)
    raw = profile_raw("claimed")
    p = parse_profile(raw)
    first, second = f"{TAUCLUSTER_SCENARIO_PREFIX}first", f"{TAUCLUSTER_SCENARIO_PREFIX}second"
    with Scene(ctx) as s:
        ctx.step(f"TauCluster {first} (Manage) sets {p.name} up")
        s.taucluster(first, MODE_MANAGE, raw)
        s.wait_reason(first, p.name, P.READY)
        made = objects(p, first)
        first_left = {P.describe(o): as_set_up(s.live(o)) for o in made}
        ctx.step(f"TauCluster {second} (Adopt) names the same profile")
        s.taucluster(second, MODE_ADOPT, raw)
        said = s.wait_reason(second, p.name, P.CLAIMED)
        ctx.say(f"  {second}: ProvisioningReady=False ({said.get('reason')}): {said.get('message')[:120]}…")
        ctx.check(said.get("message", "").startswith(f"ResourceFlavor {p.flavor} is TauCluster {first}'s"),
                  "the second claim is refused, naming the first")
        ctx.check({P.describe(o): as_set_up(s.live(o)) for o in made} == first_left
                  and s.ready(first, p.name).get("status") == "True",
                  "the first keeps the profile, ready, its objects untouched")
        for name in (second, first):
            ctx.k.delete(TAUCLUSTER, name)
        left = poll.eventually(lambda: [f"TauCluster {n}" for n in (first, second) if ctx.live.get(TAUCLUSTER, n)]
                               + [P.describe(o) for o in made if s.live(o)], 60, done=lambda got: not got)
        ctx.check(not left, "both deleted: the first deleted what it made, the second had nothing to give back"
                            + (f"; left: {left}" if left else ""))


SCENARIOS = (
    Scenario("taucluster-manage", "taucluster", "Manage: the profile made, drift put back, a held check refused at "
             "submit, deleted clean", manage),
    Scenario("taucluster-adopt", "taucluster", "Adopt: compatible objects taken while a Job runs undisturbed; an "
             "incompatible one reported, untouched; given back", adopt),
    Scenario("taucluster-external", "taucluster", "External: readiness reported, a broken setup refused at submit, "
             "no write made (the audit log)", external),
    Scenario("taucluster-mode-switch", "taucluster", "a mode switch: External, then Adopt, then deleted", mode_switch),
    Scenario("taucluster-two-claims", "taucluster", "two TauClusters claim one profile: the second is refused",
             two_claims),
)
