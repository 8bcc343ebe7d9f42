"""Success path: a 2 × 8-GPU Job stays suspended while quota is reserved and capacity is
provisioned; both nodes appear together; Kueue admits as soon as they are requested, and the
pods wait in Pod scheduling while the nodes boot, as on a real cloud; both pods start together;
the pool scales back to 0."""

from __future__ import annotations

from demo.jobs import phases
from demo.jobs.preflight import Gang
from demo.jobs.submit import run_preflight
from demo.jobs.watch import follow
from demo.timeline import svg
from fake_ca.request import pod_requests
from k8s import job as jobs
from k8s import node as nodes_
from k8s.keys import GPU
from k8s.objects import parse_time, revision
from k8s.paths import shown
from k8s.resources import JOB, NODE
from k8s.tape import by_revision

from ..kit.harness import Context
from ..kit.scenario import Scenario
from ..kit.recorder import Recorder

TITLE = "Success path: a 2 × 8-GPU gang starts only when both nodes exist"


def _ts(text: str | None) -> float | None:
    t = parse_time(text)
    return t.timestamp() if t else None


def run(ctx: Context) -> None:
    ctx.header(TITLE)

    ctx.step("Preflight (layer 1): is the profile ProvisioningReady, and can the gang ever fit?")
    code, lines = run_preflight(ctx.k, ctx.slot.profile, Gang(2, 8), ctx.slot.namespace)
    for line in lines:
        ctx.say(line)
    ctx.require(code == 0, "preflight passes")
    ctx.say(phases.pool_line(ctx.slot.pool, ctx.pool_nodes(), 2))
    ctx.require(not ctx.pool_nodes(), "the GPU pool starts empty")

    name = ctx.new_name()
    log, log_path = ctx.event_log("success")
    with Recorder(ctx, name, log) as rec:
        ctx.step("Submit a 2 × 8-GPU Job" + (" (the kwok provider's nodes are Ready at once)" if ctx.autoscaler == "real"
                                             else " (the pool's VMs take ~15s to boot once requested)"))
        ctx.submit(name, "2x8", duration="10s")
        ctx.step(f"tau-demo watch {name}")
        view = follow(ctx.k, ctx.slot.namespace, name, "finished", timeout=180, out=ctx.out, live=False)
        rec.seen(lambda s: jobs.outcome(s.job) == view.outcome)     # the recorder's watch may be a moment behind
        final = rec.samples[-1][1] if rec.samples else None

    ctx.step("What happened, checked on the objects")
    ctx.check(view.outcome == "succeeded", "the Job succeeded (2/2 completions)")
    pods = (final.pods if final else [])
    used = sorted({p["spec"].get("nodeName") for p in pods if p["spec"].get("nodeName")})
    nodes = {n["metadata"]["name"]: n for _, s in rec.samples for n in s.nodes}
    made = [_ts(nodes[n]["metadata"]["creationTimestamp"]) for n in used if n in nodes]
    starts = [_ts(p["status"].get("startTime")) for p in pods if p["status"].get("startTime")]
    ctx.check(len(used) == 2 and len(made) == 2, f"the two pods ran on two new nodes ({', '.join(used)})")
    pod_gpus = [pod_requests(p["spec"]).get(GPU) for p in pods]
    node_gpus = [(nodes[n].get("status") or {}).get("allocatable", {}).get(GPU) for n in used if n in nodes]
    per_node = sorted(sum(1 for p in pods if p["spec"].get("nodeName") == n) for n in used)
    ctx.check(pod_gpus == [8000, 8000] and node_gpus == ["8", "8"] and per_node == [1, 1],
              f"each pod asked for 8 GPUs ({pod_gpus} milli-GPUs) and had a node of 8 GPUs to itself "
              f"(allocatable {node_gpus}, pods per node {per_node})")
    if len(made) == 2:
        ctx.check(abs(made[0] - made[1]) <= 1, f"both nodes were created together ({abs(made[0] - made[1]):.0f}s apart)")
    unsuspended = rec.first(lambda s: jobs.started(s.job))
    both_ready = rec.first(lambda s: sum(1 for n in s.nodes if n["metadata"]["name"] in used
                                         and nodes_.ready(n)) == 2)
    # in etcd's order, not in the order the recorder's watches delivered it (the Jobs' watch may deliver the
    # unsuspension a moment before the nodes' watch delivers the nodes made before it): both nodes were made at an
    # earlier revision than the Job's first unsuspended version
    order = by_revision(rec.tape.changes)
    made_at = [revision(o) for _, typ, o in order if o.get("kind") == NODE.kind and typ == "ADDED"
               and o["metadata"]["name"] in used]
    unsuspended_at = next((revision(o) for _, _, o in order if o.get("kind") == JOB.kind and jobs.started(o)), None)
    ctx.check(unsuspended_at is not None and len(made_at) == 2 and max(made_at) < unsuspended_at,
              "the Job stayed suspended until both nodes existed")
    if ctx.autoscaler != "real":          # the kwok provider's nodes are Ready at once: nothing boots
        waited = f"{both_ready - unsuspended:.0f}s" if unsuspended and both_ready else "?"
        ctx.check(unsuspended is not None and both_ready is not None and unsuspended < both_ready,
                  f"Kueue admitted before the nodes were Ready: the pods waited {waited} in Pod scheduling "
                  "while the VMs booted")
    if len(starts) == 2 and made:
        ctx.check(abs(starts[0] - starts[1]) <= 2, f"both pods started together ({abs(starts[0] - starts[1]):.0f}s apart)")
        ctx.check(min(starts) >= max(made), "neither pod started before both nodes existed")
    else:
        ctx.check(False, f"both pods report a start time (got {len(starts)})")

    ctx.step("The pool scales back to 0 once the nodes are unneeded")
    ctx.wait_pool_empty(120)
    ctx.say(phases.pool_line(ctx.slot.pool, ctx.pool_nodes(), 2))
    ctx.check(not ctx.pool_nodes(), "the pool is back to 0 nodes")
    ctx.delete_job(name)
    picture = svg.write(log_path, log_path.with_suffix(".svg"), TITLE)
    ctx.say(f"  timeline: {shown(picture)}")


SCENARIOS = (
    Scenario("success", "success", "a 2 × 8-GPU gang: quota, capacity, nodes, pods, done", run),
)
