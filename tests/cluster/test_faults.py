"""Faults of the platform itself: the kube-apiserver killed (SIGKILL) and started again in the middle of
a scale-up and in the middle of a deadline decision, and Kueue killed and started again while a request
is pending.  The controllers resume from their informers' relist; no node is duplicated or leaked; the
deadline protocol's invariants hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from demo.cluster import backends
from k8s import job as jobs
from k8s import workload as workloads
from k8s import heartbeat, hooks
from k8s import resources as R
from k8s.keys import DEADLINE_LEASE_PREFIX, FAKE_CA_LEASE, PROVREQ_UID_ANNOTATION, SERVICE_ACCOUNTS
from k8s.objects import is_true
from scenarios import race
from scenarios.controllers import READY_LINE, Controller
from scenarios.recorder import Recorder
from tests.cluster.conftest import BACKEND, HOOK_DIR, NAME, wait_for

NS = "demo"


def restart(component: str, while_down=None) -> None:
    backends.get(BACKEND).restart(NAME, component, while_down=while_down)


def fake_ca_log(ctx) -> str:
    return next(c for c in ctx.started if c.lease == "fake-ca").log_text()


def pool_nodes(k) -> list[dict]:
    return [n for n in k.list(R.NODE)[0] if n["metadata"]["name"].startswith("aks-gpupool")
            and not n["metadata"].get("deletionTimestamp")]


def test_apiserver_killed_in_the_middle_of_a_scale_up(clean, k, own_fake_ca, unique):
    own_fake_ca("--hook-dir", str(HOOK_DIR), "--initial-backoff", "1s", "--initial-node-group-backoff", "2s")
    name = f"job-fault-{unique}"
    # out of stock for 3s: the first attempt is refused, so the pause point is armed before the scale-up
    clean.submit(name, "2x8", duration="3s", provreq={"fakeCAStockout": "3", "fakeCABootSeconds": "0"})
    pr = wait_for(lambda: next(iter(k.list(R.PROVREQ, NS)[0]), None), 60, what="the ProvisioningRequest")
    key = f"{NS}/{pr['metadata']['name']}"
    hooks.arm(HOOK_DIR, "node-created", key)
    info = hooks.wait_reached(HOOK_DIR, "node-created", key, timeout=60)
    assert info["of"] == 2
    # while one create thread is parked after its node; the other's create is done, in flight or not yet
    # sent, and the scale-up must end with exactly the gang's nodes either way (rolled back and retried)
    restart("kube-apiserver")
    hooks.release(HOOK_DIR, "node-created", key)
    wait_for(lambda: is_true(k.get_or_none(R.PROVREQ, pr["metadata"]["name"], NS), "Provisioned"), 60,
             what="Provisioned=True once the apiserver is back")
    mine = [n for n in pool_nodes(k)
            if (n["metadata"].get("annotations") or {}).get(PROVREQ_UID_ANNOTATION) == pr["metadata"]["uid"]]
    assert len(mine) == 2 and len(pool_nodes(k)) == 2, "exactly the gang's two nodes: none duplicated"
    assert "list/watch" in fake_ca_log(clean), "the fake's informers saw the apiserver go and relisted"
    clean.delete_job(name)
    wait_for(lambda: not pool_nodes(k), 120, what="the pool to drain: no node leaked")


def test_apiserver_killed_in_the_middle_of_a_deadline_decision(clean, k):
    hook_dir = Path(HOOK_DIR) / "deadline"
    ctl = race.race_controller(clean, "race-committed", "committed", hook_dir)
    name = clean.new_name("job-fault")
    key = f"{NS}/{name}"
    hooks.arm(hook_dir, "before-commit", key)
    try:
        with Recorder(clean, name, None, interval=0.2) as rec:
            clean.submit(name, "2x8", deadline=f"{race.DEADLINE}s", provreq={"fakeCAStockout": "true"},
                         annotations={race.CLASS_ANNOTATION: "race-committed"})
            hooks.wait_reached(hook_dir, "before-commit", key, timeout=60)
            restart("kube-apiserver")             # the controller holds a read made before the restart
            # the recorder's own watches relist first (their retry backs off up to 15 s), so that it sees what
            # the released controller writes: the mirror lives only for the cleanup TTL
            wait_for(lambda: rec.tape.synced() and not rec.tape.errors(), 60,
                     what="the recorder's watches to list again after the restart")
            hooks.release(hook_dir, "before-commit", key)
            wait_for(lambda: rec.job_uid and k.get_or_none(R.JOB, name, NS) is None, 120,
                     what="commit, mirror, cleanup after the restart")
        wls = [s.workload for _, s in rec.samples if s.workload]
        seen_jobs = [s.job for _, s in rec.samples if s.job]
        assert any(workloads.committed_timeout(w) for w in wls), "the timeout was committed on the Workload"
        assert not any(is_true(w, "Admitted") for w in wls), "never admitted"
        assert any(jobs.mirrored(j) for j in seen_jobs), "mirrored before cleanup"
        assert not any(jobs.started(j) for j in seen_jobs), "never unsuspended"
        # the garbage collector (kube-controller-manager, through the restart too) removes the Workload
        # and its request once the Job is gone
        wait_for(lambda: not clean.leftovers(), 120, what="the Job's Workload and request to be collected")
    finally:
        ctl.stop()


def test_kueue_killed_while_a_request_is_pending(clean, k):
    name = clean.new_name("job-fault")
    with Recorder(clean, name, None, interval=0.2) as rec:
        clean.submit(name, "1x8", duration="3s", provreq={"fakeCAStockout": "12", "fakeCABootSeconds": "0"})
        wait_for(lambda: any((p.get("status") or {}).get("conditions") for _, s in rec.samples for p in s.provreqs),
                 60, what="the request to be pending (CapacityIsNotFound)")
        restart("kueue")
        wait_for(lambda: is_true(k.get(R.JOB, name, NS), "Complete"), 120,
                 what="the Job to be admitted once capacity is back, and to complete")
    assert rec.ever(lambda s: s.workload is not None and is_true(s.workload, "Admitted"))
    clean.delete_job(name)


WAITING_LINE = "waiting for caches to sync"


@pytest.mark.parametrize("which", ["fake-ca", "deadline"])
def test_a_controller_whose_apiserver_dies_before_its_caches_synced_waits_and_says_so(request, clean, kubeconfig,
                                                                                       which, tmp_path):
    """The controller passed its start-up checks (paused at 'before-caches'); the apiserver is killed and kept
    down; released, the controller starts its watches: it says it waits for its caches, says nothing of being
    ready and renews no heartbeat until the apiserver is back; then it syncs and says ready."""
    k = clean.k
    if which == "fake-ca":
        request.getfixturevalue("no_autoscaler")        # the session's fake autoscaler is stopped meanwhile
        lease, key, args = FAKE_CA_LEASE, "fake-ca", ["fake-ca"]
    else:                                               # an instance of its own beside the session's
        lease = key = DEADLINE_LEASE_PREFIX + "sync-test"
        args = ["deadline", "--class", "sync-test"]
    hook_dir = tmp_path / "hooks"
    hooks.arm(hook_dir, "before-caches", key)
    c = Controller(lease, [*args, "--hook-dir", str(hook_dir), "--as", SERVICE_ACCOUNTS[which]],
                   tmp_path / f"{which}.pid", tmp_path / f"{which}.log")
    c.start(kubeconfig)
    try:
        hooks.wait_reached(hook_dir, "before-caches", key, timeout=60)
        seen: dict = {}

        def while_down():      # any failure is kept and raised after the apiserver is back
            try:
                hooks.release(hook_dir, "before-caches", key)
                wait_for(lambda: WAITING_LINE in c.log_text(), 30, what=f"{which} to say it waits for its caches")
                seen["log"] = c.log_text()
            except BaseException as e:      # noqa: BLE001
                seen["error"] = e
        restart("kube-apiserver", while_down=while_down)
        if "error" in seen:
            raise seen["error"]
        assert READY_LINE not in seen["log"], "it said ready while its caches could not sync"
        waiting = next(line for line in seen["log"].splitlines() if WAITING_LINE in line)
        assert "did not answer" in waiting or "refused" in waiting, f"the waiting line says why: {waiting}"
        wait_for(lambda: READY_LINE in c.log_text(), 60, what=f"{which} to sync once the apiserver is back")
        text = c.log_text()
        assert text.index(WAITING_LINE) < text.index(READY_LINE)
        wait_for(lambda: heartbeat.alive(k, lease), 30, what=f"{which}'s heartbeat once it is ready")
    finally:
        c.stop()
