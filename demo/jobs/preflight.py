"""Layer 1 of the bounded wait: submit-time checks, as pure functions over cluster objects.

0. Who says whether the profile is ready: the TauCluster that sets it up (k8s/taucluster.py), whose status says
   ProvisioningReady per profile with a reason; its word is taken while it is current (its controller's
   heartbeat is fresh and the condition was written for the TauCluster's present spec).  Otherwise, or when no
   TauCluster sets the profile up (a MultiKueue manager, a cluster without the CRD), check 1 is made on the
   objects themselves, and a line says why.
1. The profile (a LocalQueue) is ProvisioningReady: its ClusterQueue has an Active
   AdmissionCheck with controller kueue.x-k8s.io/provisioning-request whose
   ProvisioningRequestConfig exists with a non-empty class.  On a MultiKueue manager
   (`cluster up --multikueue`) its one check is an Active MultiKueue check instead: each worker
   holds the Job with its own provisioning check, and the gang is planned against the pools file
   that each worker's pool table copies.
2. The gang fits the pool's max, read from the pool table the autoscaler publishes, trusted only
   while an autoscaler runs (its heartbeat Lease is fresh); otherwise from the pools file.
3. Given the Job's name: Kueue v0.19.2 can find the ProvisioningRequests it will make for it
   (a warning, not a refusal: kubernetes-sigs/kueue#12542, see kueue_names.py).

`decide` runs them in that order on what observe.preflight_inputs read (PreflightInputs); the reads
are in observe.py, submit.run_preflight joins the two.  These functions only decide.

Exit codes: 0 ready and fits; 1 not ready / unknown profile / bad input; 2 never fits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from fake_ca import planner
from k8s.pools import PoolsError, load_pools, pools_from_configmap
from fake_ca.request import gang_request

from k8s.keys import (ACTIVE, DEMO_NAMESPACE, FAKE_CA_LEASE, GPU, MULTIKUEUE_CONTROLLER, POOL_TABLE,
                      PROVISIONING_CONTROLLER, REAL_CA_LEASE, SYSTEM_NAMESPACE)
from demo.taucluster.profile import BadProfile, parse_profile
from k8s import taucluster as tauclusters_
from k8s.objects import condition
from k8s.paths import shown
from . import kueue_names

KUEUE_DEFAULT_BACKOFF_LIMIT = 3        # ProvisioningRequestConfig retryStrategy.backoffLimitCount, CRD default


class GangError(ValueError):
    pass


MAX_PODS, MAX_GPUS = 1000, 64


@dataclass(frozen=True)
class Gang:
    pods: int
    gpus: int

    @classmethod
    def parse(cls, text: str) -> "Gang":
        m = isinstance(text, str) and re.fullmatch(r"\s*(\d+)\s*[xX×]\s*(\d+)\s*", text)
        if not m:
            raise GangError(f"--gang {text!r}: expected PODSxGPUS, e.g. 2x8")
        pods, gpus = int(m.group(1)), int(m.group(2))
        if pods < 1:
            raise GangError(f"--gang {text!r}: a gang of 0 pods runs nothing; give 1..{MAX_PODS} pods, e.g. 2x8")
        if gpus < 1:
            raise GangError(f"--gang {text!r}: pods of 0 GPUs ask for no GPU capacity, so there is nothing to "
                            f"provision; give 1..{MAX_GPUS} GPUs per pod, e.g. {pods}x8")
        if pods > MAX_PODS or gpus > MAX_GPUS:
            raise GangError(f"--gang {text!r}: at most {MAX_PODS} pods of at most {MAX_GPUS} GPUs each")
        return cls(pods, gpus)

    def __str__(self) -> str:
        return f"{self.pods}x{self.gpus}"


@dataclass
class Result:
    code: int
    lines: list[str] = field(default_factory=list)
    flavor: dict | None = None
    attempts: dict[str, int] = field(default_factory=dict)   # provisioning check -> most attempts Kueue makes
    multikueue: bool = False          # the profile's queue dispatches to MultiKueue workers


def _true(obj, ctype):
    c = condition(obj, ctype)
    if c is None:
        return False, "no condition yet"
    return c.get("status") == "True", c.get("message", "")


def check_profile(profile: str, local_queue: dict | None, cluster_queue: dict | None,
                  admission_checks: dict[str, dict], prov_configs: dict[str, dict]) -> Result:
    """ProvisioningReady for a profile.  Returns code 0 with the flavor of the checked resource group."""
    def no(why: str) -> Result:
        return Result(1, [f"preflight: profile {profile} ProvisioningReady=False: {why}"])

    if local_queue is None:
        return Result(1, [f"preflight: unknown profile {profile!r}: no LocalQueue of that name in the namespace"])
    cq_name = (local_queue.get("spec") or {}).get("clusterQueue")
    if cluster_queue is None:
        return no(f"LocalQueue {profile} points to ClusterQueue {cq_name!r}, which does not exist")
    spec = cluster_queue.get("spec") or {}
    names = [c.get("name") for c in ((spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or [])]
    names += [c for c in spec.get("admissionChecks") or [] if isinstance(c, str)]
    checks = [ac for ac in (admission_checks.get(n) for n in names) if ac]
    prov = [ac for ac in checks if (ac.get("spec") or {}).get("controllerName") == PROVISIONING_CONTROLLER]
    dispatch = [ac for ac in checks if (ac.get("spec") or {}).get("controllerName") == MULTIKUEUE_CONTROLLER]
    if dispatch:
        ac = dispatch[0]        # Kueue allows one MultiKueue check per ClusterQueue, and no provisioning check beside it
        active, msg = _true(ac, ACTIVE)
        if not active:
            return no(f"its MultiKueue AdmissionCheck {ac['metadata']['name']} is not Active ({msg})")
        return Result(0, [f"preflight: profile {profile} ProvisioningReady=True on the MultiKueue workers: "
                          f"AdmissionCheck {ac['metadata']['name']} dispatches the Job, and each worker holds it "
                          "with its own ProvisioningRequest check until its autoscaler has the nodes"],
                      flavor={"names": gpu_flavors(cluster_queue)}, multikueue=True)
    if not prov:
        return no(f"ClusterQueue {cq_name} has no AdmissionCheck with controller {PROVISIONING_CONTROLLER}; "
                  "without it Kueue admits without waiting for capacity")
    attempts = {}
    for ac in prov:
        name = ac["metadata"]["name"]
        active, msg = _true(ac, ACTIVE)
        if not active:
            return no(f"AdmissionCheck {name} is not Active ({msg})")
        params = (ac.get("spec") or {}).get("parameters") or {}
        prc = prov_configs.get(params.get("name"))
        if params.get("kind") != "ProvisioningRequestConfig" or prc is None:
            return no(f"AdmissionCheck {name} parameters do not resolve to a ProvisioningRequestConfig")
        if not ((prc.get("spec") or {}).get("provisioningClassName") or "").strip():
            return no(f"ProvisioningRequestConfig {prc['metadata']['name']} has no provisioningClassName")
        retry = (prc.get("spec") or {}).get("retryStrategy") or {}
        attempts[name] = int(retry.get("backoffLimitCount", KUEUE_DEFAULT_BACKOFF_LIMIT)) + 1
    return Result(0, [f"preflight: profile {profile} ProvisioningReady=True"],
                  flavor={"names": gpu_flavors(cluster_queue)}, attempts=attempts)


def gpu_flavors(cluster_queue: dict | None) -> list[str]:
    """The ResourceFlavors of the ClusterQueue's resource groups that cover GPUs, in order (the first places
    the gang's nodes)."""
    spec = (cluster_queue or {}).get("spec") or {}
    return [f.get("name") for rg in spec.get("resourceGroups") or []
            if GPU in (rg.get("coveredResources") or []) for f in rg.get("flavors") or []]


def check_request_names(job_name: str, attempts: dict[str, int]) -> list[str]:
    """Warnings for Kueue v0.19.2's lost ProvisioningRequest (kubernetes-sigs/kueue#12542): for each
    provisioning check, the first attempt whose request name `<workload>-<check>-<attempt>` is over 247
    characters.  Kueue then cuts and hashes it, cannot find it again, and deletes and re-creates it
    without end; the Workload keeps its quota and is never admitted.  Empty when every name fits."""
    wl_len = kueue_names.workload_name_length_for_job(job_name)
    out = []
    for check, most in sorted(attempts.items()):
        lost = next((a for a in range(1, max(most, 1) + 1) if kueue_names.loses_its_request(wl_len, len(check), a)),
                    None)
        if lost is None:
            continue
        full = wl_len + 1 + len(check) + 1 + len(str(lost))
        shorten = full - kueue_names.MAX_PREFIX_LENGTH
        out.append(f"preflight: WARNING: Kueue v0.19.2 cannot find its own ProvisioningRequest for this Job: "
                   f"<workload>-{check[:24]}{'…' if len(check) > 24 else ''}-{lost} would be {full} characters "
                   f"(over {kueue_names.MAX_PREFIX_LENGTH}), so Kueue cuts and hashes it and then deletes and "
                   f"re-creates it without end (kubernetes-sigs/kueue#12542, fixed by #14916); the Job waits until "
                   f"its admission deadline. A Job name {shorten} character(s) shorter avoids it.")
    return out


def check_gang(gang: Gang, pools, flavor: dict | None) -> Result:
    """Does the gang fit a pool's max?  Plans against an empty pool, as the autoscaler would from zero."""
    spec = (flavor or {}).get("spec") or {}
    req = gang_request(gang.pods, gang.gpus, node_selector=spec.get("nodeLabels") or None,
                       tolerations=spec.get("tolerations") or None)
    verdict = planner.plan(req, pools, [], [])
    return Result(0 if verdict.fits else 2, [f"preflight: {verdict.detail()}"])


def check_namespace(namespace: str, exists: bool | None) -> Result | None:
    """A namespace that does not exist (None: could not tell, e.g. forbidden to read it): nothing to check."""
    if exists is False:
        return Result(1, [f"preflight: namespace {namespace!r} does not exist; the demo's profiles (LocalQueues) "
                          f"live in {DEMO_NAMESPACE!r} (list them: kubectl get localqueues -A)"])
    return None


# Which pool table to plan against.  The table in tau-demo-system/tau-demo-node-pools is what the autoscaler
# that published it will do; once no autoscaler runs it is only what the last one did (a benchmark's
# 200-node pool, say), while the next `tau-demo fake-ca` or `tau-demo real-ca` publishes the pools file
# again.  A Job submitted now waits in its queue until an autoscaler starts, so the pools file is the
# answer to "can it ever fit?": preflight uses it and says so.
class PoolsFrom(StrEnum):
    """Where preflight reads the node pools from."""
    TABLE = "table"          # the table the running autoscaler published
    FILE = "file"            # the pools file (no autoscaler runs)
    MISSING = "missing"      # neither: exit 1
AUTOSCALER_LEASES = (FAKE_CA_LEASE, REAL_CA_LEASE)


@dataclass(frozen=True)
class PoolSource:
    use: PoolsFrom
    lines: list[str]


def pool_source(table: dict | None, alive: dict[str, bool | None], pools_file: str) -> PoolSource:
    """Decide whether the published pool table can be trusted.  `alive` maps each autoscaler's heartbeat
    Lease name to True (fresh), False (missing or stale) or None (could not be read)."""
    where = f"{POOL_TABLE[0]}/{POOL_TABLE[1]}"
    leases = " and ".join(f"{SYSTEM_NAMESPACE}/{n}" for n in AUTOSCALER_LEASES)
    if any(alive.get(n) for n in AUTOSCALER_LEASES):
        if table is None:
            return PoolSource(PoolsFrom.MISSING, [f"preflight: the running autoscaler has not published its pool table ({where}) "
                                        "yet; try again in a few seconds"])
        return PoolSource(PoolsFrom.TABLE, [])
    if any(alive.get(n) is None for n in AUTOSCALER_LEASES):     # cannot tell: the table is all there is
        if table is None:
            return PoolSource(PoolsFrom.MISSING, [f"preflight: no pool table published ({where}) and the autoscalers' heartbeat "
                                        f"Leases ({leases}) cannot be read; start one with `tau-demo fake-ca`"])
        return PoolSource(PoolsFrom.TABLE, [f"preflight: note: cannot read the autoscalers' heartbeat Leases ({leases}); "
                                  f"trusting the published pool table {where}"])
    left = f"not trusting the pool table in {where} (what the last one published) and " if table is not None else ""
    return PoolSource(PoolsFrom.FILE, [
        f"preflight: no autoscaler is running (heartbeat Leases {leases} missing or stale): {left}checking against "
        f"{pools_file}, the pools `tau-demo fake-ca` and `tau-demo real-ca` publish by default; the job waits "
        "in its queue until one runs"])


@dataclass
class PreflightInputs:
    """What preflight reads from the cluster (observe.preflight_inputs), as plain objects."""
    local_queue: dict | None
    cluster_queue: dict | None
    admission_checks: dict[str, dict]
    prov_configs: dict[str, dict]
    pool_table: dict | None           # the ConfigMap the autoscaler publishes, or None
    autoscalers: dict[str, bool | None]   # heartbeat Lease -> fresh?  (None: could not be read)
    namespace_exists: bool | None = True
    flavor: dict | None = None        # the ClusterQueue's first GPU ResourceFlavor (gpu_flavors), if it exists
    tauclusters: list[dict] = field(default_factory=list)     # every TauCluster
    tauclusters_unread: str = ""      # why they could not be read ("" when they were), e.g. no TauCluster CRD
    setup_alive: bool | None = False  # the TauCluster controller's heartbeat Lease is fresh (None: unreadable)


@dataclass
class SetupVerdict:
    """What check_setup found: the profile's readiness (Result), and for a status taken at its word, the flavor
    (labels and tolerations) the profile's ResourceFlavor holds, so the gang is planned on that."""
    result: Result
    flavor: dict | None = None


def check_setup(profile: str, namespace: str, inputs: PreflightInputs) -> SetupVerdict:
    """ProvisioningReady as the TauCluster that sets the profile up reports it, when that report is current;
    check_profile on the objects otherwise, with a line saying why."""
    tc = tauclusters_.claimant(inputs.tauclusters, profile, namespace)
    reading = tauclusters_.reading(tc, profile, inputs.setup_alive) if tc is not None else None
    if reading is None or reading.stale:
        if reading is not None:
            why = f"not taking TauCluster {reading.taucluster}'s status at its word: {reading.stale}"
        else:
            why = inputs.tauclusters_unread or f"no TauCluster sets profile {profile} up in namespace {namespace}"
        res = check_profile(profile, inputs.local_queue, inputs.cluster_queue, inputs.admission_checks,
                            inputs.prov_configs)
        res.lines = [f"preflight: {why}; checking the profile's Kueue objects directly", *res.lines]
        return SetupVerdict(res, inputs.flavor)
    said = f"TauCluster {reading.taucluster} ({reading.mode} mode)"
    if not reading.ready:
        return SetupVerdict(Result(1, [f"preflight: profile {profile} ProvisioningReady=False ({reading.reason}): "
                                f"{reading.message} ({said})"]))
    try:
        wanted = parse_profile(tauclusters_.profile_spec(tc, profile))
    except BadProfile as e:
        return SetupVerdict(Result(1, [f"preflight: profile {profile}: TauCluster {reading.taucluster} says it is ready, but "
                                f"its spec cannot be read: {e}"]))
    return SetupVerdict(Result(0, [f"preflight: profile {profile} ProvisioningReady=True, as {said} reports it"],
                        flavor={"names": [wanted.flavor]}, attempts={wanted.check: wanted.retry.backoff_limit_count + 1}),
                 {"spec": {"nodeLabels": dict(wanted.node_labels), "tolerations": [dict(t) for t in wanted.tolerations]}})


def decide(inputs: PreflightInputs, profile: str, gang: Gang, namespace: str, pools_file: Path,
           job_name: str | None = None) -> Result:
    """All of layer 1 on what was read: the namespace, the profile, the request names (given the Job's name),
    which pool table to trust (pool_source), and whether the gang fits it.  Code 0 ready and fits, 1 not
    ready / unknown / no or malformed pool table, 2 never fits.  `pools_file` (a local file, not the
    cluster) is read only when no autoscaler runs."""
    ns = check_namespace(namespace, inputs.namespace_exists)
    if ns is not None:
        return ns
    setup = check_setup(profile, namespace, inputs)
    res = setup.result
    if res.code:
        return Result(res.code, res.lines)
    lines = list(res.lines) + (check_request_names(job_name, res.attempts) if job_name else [])
    if res.multikueue:          # the workers' tables are on the workers: the file they copy
        lines.append(f"preflight: the workers' autoscalers publish their pool tables on the workers; checking "
                     f"against {shown(pools_file)}, which each worker's table copies")
        table = None
    else:
        source = pool_source(inputs.pool_table, inputs.autoscalers, shown(pools_file))
        lines += source.lines
        if source.use == PoolsFrom.MISSING:
            return Result(1, lines)
        table = inputs.pool_table if source.use == PoolsFrom.TABLE else None
    try:
        pools = pools_from_configmap(table) if table is not None else load_pools(pools_file)
    except PoolsError as e:
        what = "the published pool table" if table is not None else "the pools file"
        return Result(1, lines + [f"preflight: {what} is malformed: {e}"])
    gres = check_gang(gang, pools, setup.flavor)
    return Result(gres.code, lines + gres.lines)
