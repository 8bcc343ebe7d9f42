"""kubernetes-sigs/kueue#12542: a ProvisioningRequest name over 247 characters loops forever.

Kueue v0.19.2 names a Job's request `<workload>-<check>-<attempt>` and, over 247 characters, cuts it
and appends a hash of the whole name, attempt included (provisioning.go:55-58, controller.go:919-927).
It finds its requests again by `^<prefix>([0-9]+)$`, the prefix being `<workload>-<check>-` cut and
hashed without the attempt (provisioning.go:60-63, 91-95): the hashes differ, the request it just made
is "unused", deleted (controller.go:234-254) and made again (controller.go:256-366), without end.

A Job's name is at most 63 characters, so it takes a long AdmissionCheck name: for a Job of J
characters the Workload is J+10, and an AdmissionCheck of 235-J characters or more loops
(demo/jobs/kueue_names.py).  The scenario makes one such check, shows layer 1 warning at submit,
a control Job one character shorter admitted normally, then the loop, counted from a watch, until
layer 3 (the admission deadline) ends it.
"""

from __future__ import annotations

import time

import yaml

from demo.jobs import kueue_names as names
from demo.jobs.preflight import Gang
from demo.jobs.submit import run_preflight
from demo.jobs.watch import follow
from k8s import job as jobs
from k8s import workload as workloads
from k8s.keys import DEACTIVATED, EVENT_PROVREQ_CREATED, EVICTED, UPSTREAM_PREFIX
from k8s.duration import parse_duration
from k8s.objects import condition, created_at, meta, owned_by
from k8s.resources import POD_TEMPLATE, PROVREQ
from demo.timeline import svg
from demo.timeline.lanes import snapshot_states

from ..kit.harness import NS, Context
from ..kit.recorder import Recorder
from ..kit.scenario import Report, Scenario
from ..kit import toolbox

REPORT = Report(
    number="kubernetes-sigs/kueue#12542",
    title="a ProvisioningRequest name over 247 characters is deleted and re-created without end",
    claim="when <workload>-<check>-<attempt> is over 247 characters Kueue cuts and hashes it (attempt included), "
          "looks it up by a prefix hashed without the attempt, never finds it, and deletes and re-creates it "
          "forever; the Workload is never admitted",
    fixed_in="v0.19.5 (PR #14916), per Kueue's changelog as the issue cites it",
)
NAME = "upstream-12542"
QUEUE = f"{UPSTREAM_PREFIX}12542"
DEADLINE = "20s"
# A request the watch saw this long after it saw the eviction was made after it: a reconcile already under way
# when the Evicted write lands can still make one (the loop made 28 to 61 a second in the runs on record,
# docs/upstream.md, so 2 s of a loop that went on would be dozens of requests).
EVICTION_GRACE = 2.0


def long_check_name(length: int) -> str:
    """An AdmissionCheck name of exactly `length` characters, no dots (a dot at the cut would make the
    hashed name invalid instead of looping)."""
    head = f"{QUEUE}-long-admission-check-"
    return head + "x" * (length - len(head))


def run(ctx: Context) -> None:
    toolbox.begin(ctx, REPORT)
    job, control = ctx.new_name("job-train"), ctx.new_name("job-ctrl")            # 15 and 14 characters
    check = long_check_name(names.shortest_looping_check(job))
    ctx.step(f"Kueue's rule: Job {job} ({len(job)} characters) gets a {names.workload_name_length_for_job(job)}-"
             f"character Workload name; its request name is over {names.MAX_PREFIX_LENGTH} characters with an "
             f"AdmissionCheck of {len(check)} or more. Make one, with its own ClusterQueue and LocalQueue {QUEUE}")
    log, log_path = ctx.event_log(NAME)
    with toolbox.KueueObjects(ctx) as objs:
        objs.admission_check(check)
        objs.cluster_queue(QUEUE, [check])
        objs.local_queue(QUEUE, QUEUE)
        objs.wait_active(QUEUE)
        ctx.step(f"Layer 1: preflight at submit, for {job} and for {control} (one character shorter)")
        _, lines = run_preflight(ctx.k, QUEUE, Gang(1, 8), NS, job_name=job)
        _, ok_lines = run_preflight(ctx.k, QUEUE, Gang(1, 8), NS, job_name=control)
        for line in lines:
            ctx.say(f"  {line}")
        ctx.check(any("WARNING" in x and "kueue#12542" in x for x in lines) and
                  not any("WARNING" in x for x in ok_lines),
                  f"preflight warns for {job} (citing kueue#12542) and not for {control}")
        recorded = {"check": check, "control": admitted_with_one_request(ctx, control, check)}
        recorded["looping"], facts = the_loop(ctx, job, check, log)
        ctx.wait_pool_empty(120)
    (log_path.parent / f"{NAME}-names.yaml").write_text(yaml.safe_dump(recorded, sort_keys=False))
    picture = svg.write(log_path, log_path.with_suffix(".svg"), f"{REPORT.number}: the name loop")
    toolbox.verdict(ctx, REPORT, facts["uids"] > 3,
                f"{facts['created']} ProvisioningRequests created and {facts['deleted']} deleted in "
                f"{facts['span']:.0f}s under one 253-character name, each with a new uid, until the eviction; the "
                f"control, a Job name one character shorter (a 247-character request), was admitted with one request",
                "layer 3, the admission deadline; preflight (layer 1) warns at submit; layer 2 never acts (Kueue "
                "never reads the autoscaler's answer)", str(picture))


def admitted_with_one_request(ctx: Context, control: str, check: str) -> dict:
    ctx.step(f"Control: {control} is admitted; Kueue keeps its one request")
    with toolbox.changes(ctx, PROVREQ) as w:
        ctx.submit(control, "1x8", deadline="90s", profile=QUEUE)
        wl = ctx.wait(lambda: (s := toolbox.workload_of(ctx, control)) and workloads.admitted(s) and s, 60,
                      f"{control} to be admitted")
        got = _names(job=control, wl=wl, check=check, w=w)
        ctx.check(len(set(w.uids("ADDED"))) == 1 and not w.uids("DELETED") and got["recognised"],
                  f"one request, {len(got['provreq'])} characters, found again by Kueue: …{got['provreq'][-24:]}")
    ctx.delete_job(control)
    return got


def the_loop(ctx: Context, job: str, check: str, log) -> tuple[dict, dict]:
    ctx.step(f"Submit {job} with --deadline {DEADLINE}; count the requests from a watch")
    with toolbox.changes(ctx, PROVREQ) as w:
        def lanes(snap):
            out = snapshot_states(snap, check_name=check)
            looping = len(w.changes) > 6 and w.changes[-1][0] > time.time() - 1
            out["ProvisioningRequest"] = "create/delete loop" if looping else "created" if snap.provreqs else "none"
            return out
        with Recorder(ctx, job, log, lanes=lanes) as rec:
            created = ctx.submit(job, "1x8", deadline=DEADLINE, profile=QUEUE)
            rec.mark("deadline", t=created_at(created).timestamp() + parse_duration(DEADLINE))
            ctx.wait(lambda: len(w.uids("ADDED")) > 3, 30, "more than 3 requests")
            view = follow(ctx.k, NS, job, "finished", timeout=90, out=ctx.out, live=False)
            wl = ctx.wait(lambda: (x := rec.samples[-1][1].workload) and (condition(x, EVICTED) or {}).get(
                "status") == "True" and x, 30, "Kueue's eviction")
            ctx.wait(lambda: not [p for p in ctx.live.list(PROVREQ, NS) if owned_by(p, meta(wl)["uid"])], 30,
                     "the last request to go")
    # over the whole recording, from before the submission until the recorder stopped (it settles at its stop:
    # what its watches still had to deliver of the window reaches it first), not at one moment
    never = not rec.ever(lambda s: workloads.admitted(s.workload) or jobs.started(s.job))
    held = rec.ever(lambda s: workloads.quota_reserved(s.workload))
    evicted_at = rec.first(lambda s: (condition(s.workload, EVICTED) or {}).get("status") == "True")
    made = [(t, o) for t, typ, o in w.changes if typ == "ADDED"]
    before = [o for t, o in made if t <= evicted_at + EVICTION_GRACE]
    late = [o for t, o in made if t > evicted_at + EVICTION_GRACE]
    got = _names(job=job, wl=wl, check=check, w=w)
    ctx.check(len({meta(o)["name"] for o in before}) == 1 and not got["recognised"],
              f"one {len(got['provreq'])}-character name, which Kueue's own pattern does not match: "
              f"…{got['provreq'][-24:]}")
    ctx.check(got["provreq"] == names.provreq_name(meta(wl)["name"], check, 1),
              "it is Kueue's name for attempt 1, cut at 247 and hashed with the attempt in it")
    created = toolbox.workload_events(ctx, meta(wl)["name"]).get(EVENT_PROVREQ_CREATED, [])
    ctx.say(f"  Kueue's events on the Workload: {EVENT_PROVREQ_CREATED}, {len(created)} event object(s), e.g. "
            f"{(created or ['-'])[0][:60]}…")
    ctx.check(never and held, "the Workload held its quota and was never admitted; the Job stayed suspended")
    ctx.check(view.outcome == "failed" and workloads.committed_timeout(wl)
              and (condition(wl, EVICTED) or {}).get("reason") == DEACTIVATED,
              f"layer 3: the admission deadline committed the timeout; Kueue evicted (Deactivated): {view.reason}")
    ctx.check(not late, f"the loop stopped with the eviction ({len(late)} request(s) seen more than "
                        f"{EVICTION_GRACE:g}s after it)")
    ctx.wait(lambda: not any(meta(p)["name"].startswith("ppt-" + meta(wl)["name"])
                             for p in ctx.live.list(POD_TEMPLATE, NS)), 60, "the PodTemplates to be collected")
    ctx.delete_job(job)
    span = (before[-1:] and made[len(before) - 1][0] - made[0][0]) or 0.0
    return got, {"created": len(before), "deleted": len(w.uids("DELETED")), "span": span,
                 "uids": len({meta(o)["uid"] for o in before})}


def _names(job: str, wl: dict, check: str, w: toolbox.Changes) -> dict:
    """What the cluster named things, for tests/unit/recorded/kueue-names.yaml."""
    mine = [o for _, typ, o in w.changes if typ == "ADDED" and owned_by(o, meta(wl)["uid"])]
    provreq = meta(mine[0])["name"] if mine else ""
    return {"job": job, "job_uid": (meta(wl).get("ownerReferences") or [{}])[0].get("uid"),
            "workload": meta(wl)["name"], "provreq": provreq,
            "recognised": names.kueue_recognises(provreq, meta(wl)["name"], check)}


SCENARIOS = (Scenario(NAME, "upstream", REPORT.title, run, report=REPORT),)
