"""The TauCluster setup on the real apiserver and the real Kueue v0.19.2, with the cluster's own controller (`cluster
up` runs `tau-demo taucluster` as its ServiceAccount): the demo's TauCluster is ready and preflight reads it; the
ServiceAccount may do what the controller needs and nothing more; the group `taucluster` (scenarios/taucluster/stories.py:
Manage, Adopt with a running Job, External with the audit log, a mode switch, two claims); a `kill -9` while it makes
a profile, after which it converges from the cluster's state alone; while it is down preflight checks the objects
itself and says why; two TauClusters naming one ClusterQueue, otherwise and alike: the later refused (Conflict) and
the queue never written meanwhile (its resourceVersions counted by a watch), the same after a restart, the later
taking over once the first is deleted; a profile's CPU and memory quotas in its ClusterQueue, given or scaled from its
GPUs (3200 GPUs admit 200 gangs by quota); and a cluster without the CRD or an apiserver that does not answer get a
clear error."""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from demo.cluster import setup
from demo.cluster.state import State
from demo.jobs.preflight import Gang
from demo.jobs.submit import run_preflight
from demo.taucluster import plan as P
from demo.taucluster import patches
from demo.taucluster.controller import KINDS, TauClusterController
from demo.taucluster.profile import BadProfile, objects, parse_profile
from k8s import heartbeat
from k8s import taucluster as tauclusters_
from k8s.keys import (DEMO_NAMESPACE, DEMO_TAUCLUSTER, GPU, MODE_ADOPT, MODE_MANAGE, PROFILE, SERVICE_ACCOUNTS,
                      TAUCLUSTER_FINALIZER, TAUCLUSTER_LABEL, TAUCLUSTER_LEASE)
from k8s.objects import labels, meta, spec
from k8s.resources import CLUSTER_QUEUE, RESOURCE_FLAVOR, SUBJECT_ACCESS_REVIEW, TAUCLUSTER
from k8s.paths import REPO
from k8s.quantity import parse_quantity_exact
from k8s.watch import Watch
from scenarios.kit import catalogue
from scenarios.kit.controllers import LOG_MESSAGE
from scenarios.taucluster.stories import gpu_quota, profile_raw
from tests.cluster.conftest import in_force, refusing_policy, relist, scenario_passes, wait_for

@pytest.fixture(scope="module")
def controller(k, demo_cluster, taucluster_crd) -> State:
    """The cluster's own TauCluster controller, running; every TauCluster a test here made is deleted at the end."""
    wait_for(lambda: heartbeat.alive(k, TAUCLUSTER_LEASE), 30, what="the TauCluster controller's heartbeat")
    yield demo_cluster
    setup.start_controller(demo_cluster)          # a test that killed it left it started again; make sure
    for tc in k.list(TAUCLUSTER)[0]:
        if meta(tc)["name"] != DEMO_TAUCLUSTER:
            k.delete(TAUCLUSTER, meta(tc)["name"])
    wait_for(lambda: [meta(t)["name"] for t in k.list(TAUCLUSTER)[0]] == [DEMO_TAUCLUSTER], 60,
             what="only the demo's TauCluster left (each finalizer done)")


def test_the_demo_taucluster_is_ready_and_preflight_takes_its_word(k, controller):
    tc = k.get(TAUCLUSTER, DEMO_TAUCLUSTER)
    reading = tauclusters_.reading(tc, PROFILE, heartbeat.alive(k, TAUCLUSTER_LEASE))
    assert (reading.mode, reading.ready, reading.reason, reading.stale) == (MODE_MANAGE, True, P.READY, "")
    assert "invalid" not in tc["status"], f"a valid TauCluster's status says it is invalid: {tc['status']}"
    for obj in objects(parse_profile(tauclusters_.profile_spec(tc, PROFILE)), DEMO_TAUCLUSTER):
        live = k.get(KINDS[obj["kind"]], meta(obj)["name"], meta(obj).get("namespace"))
        assert labels(live).get(TAUCLUSTER_LABEL) == DEMO_TAUCLUSTER, f"{P.describe(obj)} is not the TauCluster's"
    code, lines = run_preflight(k, PROFILE, Gang(2, 8), DEMO_NAMESPACE)
    assert code == 0 and lines[0] == ("preflight: profile gpu-a100-8 ProvisioningReady=True, as TauCluster demo "
                                      "(Manage mode) reports it"), lines


def can(k, verb: str, group: str, resource: str, namespace: str = "", subresource: str = "") -> bool:
    review = SUBJECT_ACCESS_REVIEW.new("", spec={"user": SERVICE_ACCOUNTS["taucluster"], "resourceAttributes": {
        "verb": verb, "group": group, "resource": resource, "namespace": namespace, "subresource": subresource}})
    del review["metadata"]
    return bool((k.create(SUBJECT_ACCESS_REVIEW, review).get("status") or {}).get("allowed"))


def test_the_controller_runs_as_its_service_account_which_may_do_what_it_needs_and_nothing_more(k, controller):
    pid = int(setup.controller_files(controller)[0].read_text().split()[0])
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert b"--as" in argv and SERVICE_ACCOUNTS["taucluster"].encode() in argv, argv
    for resource in ("resourceflavors", "provisioningrequestconfigs", "admissionchecks", "clusterqueues", "localqueues"):
        assert all(can(k, v, "kueue.x-k8s.io", resource) for v in ("list", "watch", "create", "patch", "delete"))
    assert can(k, "patch", "tau-demo.io", "tauclusters", subresource="status")
    assert can(k, "patch", "coordination.k8s.io", "leases", "tau-demo-system")
    assert not any([can(k, "create", "batch", "jobs", DEMO_NAMESPACE), can(k, "patch", "kueue.x-k8s.io", "workloads",
                                                                           DEMO_NAMESPACE),
                    can(k, "create", "", "nodes"), can(k, "delete", "tau-demo.io", "tauclusters"),
                    can(k, "create", "tau-demo.io", "tauclusters"), can(k, "patch", "", "configmaps", "kube-system"),
                    can(k, "patch", "coordination.k8s.io", "leases", "kube-system")]), "it may do more than it needs"


@pytest.mark.parametrize("name", catalogue.members("taucluster"))
def test_taucluster_scenario(clean, controller, name):
    scenario_passes(clean, name)


def test_killed_while_making_a_profile_it_converges_from_the_cluster_and_preflight_checks_the_objects_meanwhile(
        k, controller, unique):
    raw = profile_raw(f"kill{unique}")
    p = parse_profile(raw)
    name = f"tc-kill{unique}"
    pidfile, _ = setup.controller_files(controller)
    k.create(TAUCLUSTER, TAUCLUSTER.new(name, spec={"mode": MODE_MANAGE, "profiles": [raw]}))
    made = objects(p, name)
    # kill -9 as soon as it has made the first object of the profile, before the rest
    wait_for(lambda: k.get_or_none(RESOURCE_FLAVOR, p.flavor) is not None, 30, interval=0.02,
             what="the first object made")
    os.kill(int(pidfile.read_text().split()[0]), signal.SIGKILL)
    wait_for(lambda: not heartbeat.alive(k, TAUCLUSTER_LEASE), 30, what="its heartbeat to go stale")
    # meanwhile: preflight does not take a status nobody keeps at its word; it checks the objects and says why
    code, lines = run_preflight(k, PROFILE, Gang(2, 8), DEMO_NAMESPACE)
    assert code == 0 and lines[0].startswith("preflight: not taking TauCluster demo's status at its word: its "
                                             "controller is not running"), lines
    assert lines[1] == "preflight: profile gpu-a100-8 ProvisioningReady=True", lines
    log = setup.controller_files(controller)[1]
    before = len(log.read_bytes())
    assert setup.start_controller(controller), "it was running again already"
    wait_for(lambda: tauclusters_.ready_condition(k.get(TAUCLUSTER, name), p.name).get("status") == "True"
             if tauclusters_.ready_condition(k.get(TAUCLUSTER, name), p.name) else False, 60,
             what="the profile ready after the restart")
    for obj in made:
        live = k.get(KINDS[obj["kind"]], meta(obj)["name"], meta(obj).get("namespace"))
        assert labels(live).get(TAUCLUSTER_LABEL) == name and not P.differences(obj, live), P.describe(obj)
    k.delete(TAUCLUSTER, name)
    wait_for(lambda: k.get_or_none(TAUCLUSTER, name) is None and not any(
        k.get_or_none(KINDS[o["kind"]], meta(o)["name"], meta(o).get("namespace")) for o in made), 60,
             what="deleted clean")
    # the controller started again said what it watches, and then that the TauCluster is gone, each line whole
    said = LOG_MESSAGE.findall(log.read_bytes()[before:].decode(errors="replace"))
    assert patches.watching_line(list(KINDS)) in said, said[-12:]
    assert patches.finalized_line(name) in said, said[-12:]


@contextlib.contextmanager
def in_process(k, controller, name: str, made: list[dict] = ()):
    """The cluster's TauCluster controller stopped while a test drives one in process; after, started again, it deletes
    TauCluster `name` and what it `made` (an Adopt TauCluster left behind would refuse a later profile its shared
    config)."""
    assert setup.stop_controller(controller), "the cluster's TauCluster controller was not running"
    try:
        yield
    finally:
        setup.start_controller(controller)
        wait_for(lambda: heartbeat.alive(k, TAUCLUSTER_LEASE), 30, what="the TauCluster controller's heartbeat")
        k.delete(TAUCLUSTER, name)
        wait_for(lambda: k.get_or_none(TAUCLUSTER, name) is None and not any(
            k.get_or_none(KINDS[o["kind"]], meta(o)["name"], meta(o).get("namespace")) for o in made), 60,
                 what="deleted clean")


def test_a_relist_of_any_one_of_its_watches_looks_at_every_taucluster_again(k):
    """A relist replaces a cache whole and calls no on_change: what changed while a watch was down comes with no event
    of its own.  So each cache's relist alone (every object LISTED, then SYNCED, as its Watch delivers it), the
    TauClusters' and each Kueue kind's, must queue every TauCluster.  In process, the caches filled by hand, nothing
    written.  The tenth sample's `__init____mutmut_14` (the Kueue caches with no on_sync) survived: every test
    relisted the watches together, at a start, where the TauClusters' own relist queued them all."""
    ctl = TauClusterController(k)
    names = {"tc-relist-a", "tc-relist-b"}
    for n in names:
        ctl.tauclusters.put(TAUCLUSTER.new(n, spec={"mode": MODE_ADOPT, "profiles": []}))
    noted: list[str] = []
    ctl.queue.add = lambda key, after=0.0, urgent=False: noted.append(key)
    for kind, store in [(TAUCLUSTER.kind, ctl.tauclusters), *ctl.kueue.items()]:
        noted.clear()
        relist(store, store.items())
        assert set(noted) == names, f"a relist of the {kind} cache alone queued {sorted(set(noted))}"


def test_its_own_write_is_in_its_cache_at_once_and_nothing_else_is(k, controller, unique):
    """In process, the cluster's controller stopped and the cache filled by hand (no watch runs here, so only the
    controller's own writes can change it): one reconcile of a new Adopt TauCluster adds the finalizer and writes the
    status, and its cache then holds that TauCluster exactly as the apiserver last returned it, and nothing else
    (the response of each write is kept: Store.put; the sampled run at 8ee113f kept None instead, unseen)."""
    name = f"tc-own{unique}"
    with in_process(k, controller, name):
        tc = k.create(TAUCLUSTER, TAUCLUSTER.new(name, spec={"mode": MODE_ADOPT,
                                                             "profiles": [profile_raw(f"own{unique}")]}))
        ctl = TauClusterController(k)
        ctl.tauclusters.put(tc)
        ctl.reconcile(name)
        live = k.get(TAUCLUSTER, name)
        assert TAUCLUSTER_FINALIZER in meta(live).get("finalizers", []) and live.get("status"), live
        assert ctl.tauclusters.items() == [live], [meta(c).get("resourceVersion") for c in ctl.tauclusters.items()]


def test_a_spec_it_cannot_read_is_said_invalid_in_its_status_and_nothing_else_is_written(k, controller, unique,
                                                                                          caplog):
    """The CRD's schema refuses what parse_profile refuses, but a TauCluster written under an older CRD (or none) can
    hold what the controller cannot read.  In process, its cache given such a TauCluster (a profile's nodeLabels
    mapping a label to a number), one reconcile writes `status.invalid` naming the field, says so, and writes nothing
    else: no finalizer (the sample at 9188f1f reached that branch with no test: a call of it with an argument
    missing, a TypeError, survived)."""
    caplog.set_level(logging.INFO, logger="taucluster")
    name = f"tc-bad{unique}"
    with in_process(k, controller, name):
        tc = k.create(TAUCLUSTER, TAUCLUSTER.new(name, spec={"mode": MODE_ADOPT,
                                                             "profiles": [profile_raw(f"bad{unique}")]}))
        bad = copy.deepcopy(tc)
        bad["spec"]["profiles"][0]["flavor"]["nodeLabels"] = {"pool": 7}
        why = "spec.profiles[0].flavor.nodeLabels: must map label names to values, at least one, got {'pool': 7}"
        ctl = TauClusterController(k)
        ctl.tauclusters.put(bad)
        assert ctl.reconcile(name) is None, "an invalid spec is looked at again only when it changes"
        live = k.get(TAUCLUSTER, name)
        assert live["status"].get("invalid") == why, live["status"]
        assert TAUCLUSTER_FINALIZER not in meta(live).get("finalizers", []), meta(live)
        said = [r.getMessage() for r in caplog.records if r.name == "taucluster"]
        assert patches.invalid_line(name, BadProfile(why)) in said, said


def test_a_status_the_apiserver_refuses_is_said_naming_its_taucluster_and_written_by_a_later_reconcile(
        k, controller, unique, caplog):
    """In process: a ValidatingAdmissionPolicy makes the apiserver refuse every status write of one TauCluster.  A
    reconcile of that new Adopt TauCluster writes its finalizer, then says its status was not written, naming the
    TauCluster and the apiserver's refusal, and leaves the status unwritten; once the policy is gone the next reconcile
    writes it (no test refused that write: the sample at 9ba656e drew the line naming None for the TauCluster)."""
    caplog.set_level(logging.INFO, logger="taucluster")
    name = f"tc-st{unique}"
    message = f"the status of {name} is refused by a test"
    refusal = refusing_policy(f"refuse-status-{unique}", TAUCLUSTER.group, f"{TAUCLUSTER.plural}/status", "UPDATE",
                              f"object.metadata.name != '{name}'", message)
    with in_process(k, controller, name):
        tc = k.create(TAUCLUSTER, TAUCLUSTER.new(name, spec={"mode": MODE_ADOPT,
                                                             "profiles": [profile_raw(f"st{unique}")]}))
        ctl = TauClusterController(k)
        ctl.tauclusters.put(tc)
        with in_force(k, refusal) as loaded:
            loaded(lambda: k.patch(TAUCLUSTER, name, {"status": {"observedGeneration": 1}}, subresource="status",
                                   dry_run=True))
            ctl.reconcile(name)
            live = k.get(TAUCLUSTER, name)
            assert TAUCLUSTER_FINALIZER in meta(live).get("finalizers", []), meta(live)
            assert not live.get("status"), live["status"]
            said = [r.getMessage() for r in caplog.records if r.name == "taucluster"]
            refused = [line for line in said if line.startswith(f"taucluster {name}: status not written: ")]
            assert refused and message in refused[0], said
        wait_for(lambda: (ctl.reconcile(name), k.get(TAUCLUSTER, name).get("status"))[1], 30,
                 what="a later reconcile to write the status, once the policy is gone")


def with_gpu_quota(cq: dict, quota: str) -> dict:
    """A patch of the ClusterQueue's resource groups with its GPU quota changed, as someone editing it would send."""
    groups = copy.deepcopy(spec(cq)["resourceGroups"])
    for r in (r for g in groups for f in g["flavors"] for r in f["resources"] if r["name"] == GPU):
        r["nominalQuota"] = quota
    return {"spec": {"resourceGroups": groups}}


def test_its_finalizer_written_on_a_stale_read_is_refused_and_looked_at_again_at_once(k, controller, unique):
    """In process, the cluster's controller stopped, its cache filled by hand: a new Adopt TauCluster is edited by
    someone after the controller read it.  Its finalizer patch, guarded by the resourceVersion it read, is refused and
    changes nothing; the controller asks to look again at once (within half a second: the sampled run at 3800efa
    looked again after 1.2 s, unseen); from the fresh read the finalizer goes on."""
    name = f"tc-fin{unique}"
    with in_process(k, controller, name):
        ctl = TauClusterController(k)
        ctl.tauclusters.put(k.create(TAUCLUSTER, TAUCLUSTER.new(name, spec={
            "mode": MODE_ADOPT, "profiles": [profile_raw(f"fin{unique}")]})))
        edited = k.patch(TAUCLUSTER, name, {"metadata": {"labels": {"edited-by": "someone"}}})
        after = ctl.reconcile(name)
        assert after is not None and after <= 0.5, f"a refused finalizer patch is looked at again at once, not {after}"
        live = k.get(TAUCLUSTER, name)
        assert meta(live)["resourceVersion"] == meta(edited)["resourceVersion"], "the stale patch was not refused"
        ctl.tauclusters.put(live)
        ctl.reconcile(name)
        assert TAUCLUSTER_FINALIZER in meta(k.get(TAUCLUSTER, name)).get("finalizers", [])


@contextlib.contextmanager
def manage_in_process(k, controller, name: str, raw: dict, ctl: TauClusterController):
    """The cluster's controller stopped (`in_process`); a new Manage TauCluster of `raw` made by `ctl`, its caches
    filled by hand (reconciled, then given what the apiserver lists, until the ClusterQueue is made): yields the
    ClusterQueue."""
    with in_process(k, controller, name, objects(parse_profile(raw), name)):
        ctl.tauclusters.put(k.create(TAUCLUSTER, TAUCLUSTER.new(name, spec={"mode": MODE_MANAGE, "profiles": [raw]})))

        def queue_made() -> dict | None:
            ctl.reconcile(name)
            for kind, res in KINDS.items():         # what a watch would bring: Kueue's answers too
                for obj in k.list(res)[0]:
                    ctl.kueue[kind].put(obj)
            return k.get_or_none(CLUSTER_QUEUE, raw["clusterQueue"])
        yield wait_for(queue_made, 30, what="the in-process controller to make the profile's ClusterQueue")


def test_a_write_on_a_stale_read_is_refused_said_and_made_again_from_a_fresh_read(k, controller, unique, caplog):
    """In process, caches filled by hand: someone edits the ClusterQueue a Manage TauCluster made (its cache gets that
    version), then again (its cache does not).  The update it decides on its stale read is refused (409: it carries
    the resourceVersion it read) and changes nothing; it says so in its own words and looks again at once; given
    the fresh version, its update puts the quota back.  (The sampled run at 3800efa: an update without its
    resourceVersion, and its line logged as `XX%sXX`, went unseen.)"""
    raw = profile_raw(f"stale{unique}")
    ctl = TauClusterController(k)
    name = f"tc-stale{unique}"
    caplog.set_level(logging.INFO, logger="taucluster")
    with manage_in_process(k, controller, name, raw, ctl) as cq:
        ctl.kueue[CLUSTER_QUEUE.kind].put(k.patch(CLUSTER_QUEUE, meta(cq)["name"], with_gpu_quota(cq, "2")))
        again = k.patch(CLUSTER_QUEUE, meta(cq)["name"], with_gpu_quota(cq, "3"))
        caplog.clear()
        assert ctl.reconcile(name) == 0.2, "a refused write is looked at again at once"
        after = k.get(CLUSTER_QUEUE, meta(cq)["name"])
        assert gpu_quota(after) == gpu_quota(again) == "3", "the stale update was not refused"   # Kueue writes status
        said = [r.getMessage() for r in caplog.records if r.name == "taucluster"]
        what = re.escape(f"taucluster {name}: update {P.describe(cq)}")
        assert [m for m in said if re.fullmatch(rf"{what}: .+", m)], said
        assert [m for m in said if re.fullmatch(rf"{what} refused \(.+\); looking again", m)], said

        def put_back() -> bool:         # from a fresh read (Kueue's status writes may make it stale again)
            ctl.kueue[CLUSTER_QUEUE.kind].put(k.get(CLUSTER_QUEUE, meta(cq)["name"]))
            ctl.reconcile(name)
            return gpu_quota(k.get(CLUSTER_QUEUE, meta(cq)["name"])) == gpu_quota(cq)
        wait_for(put_back, 30, what="the quota put back from a fresh read")


def test_a_release_on_a_stale_read_is_refused_said_and_made_again_from_a_fresh_read(k, controller, unique, caplog):
    """In process: a Manage TauCluster is deleted while the controller's cache holds an older version of each object
    it made (someone edited them all since).  Its first delete, guarded by that version, is refused (409) and deletes
    nothing; it says so naming its TauCluster and looks again at once; from a fresh read its objects go, then its
    finalizer.  (Reading a draw of the controller's mutants found `_release__mutmut_12` and `_release__mutmut_16`,
    the release's refused line and its look again: no test had a release refused.)"""
    raw = profile_raw(f"rel{unique}")
    ctl = TauClusterController(k)
    name = f"tc-rel{unique}"
    caplog.set_level(logging.INFO, logger="taucluster")
    with manage_in_process(k, controller, name, raw, ctl):
        made = [(res, obj) for kind, res in KINDS.items() for obj in k.list(res)[0] if P.owner(obj) == name]
        assert len(made) == 5, [P.describe(o) for _, o in made]
        for res, obj in made:           # the cache holds each as it is, then each is edited behind it
            ctl.kueue[res.kind].put(obj)
            k.patch(res, meta(obj)["name"], {"metadata": {"labels": {"edited-by": "someone"}}},
                    meta(obj).get("namespace"))
        k.delete(TAUCLUSTER, name)
        ctl.tauclusters.put(k.get(TAUCLUSTER, name))        # being deleted, held by its finalizer
        caplog.clear()
        after = ctl.reconcile(name)
        assert after is not None and after <= 0.5, f"a refused release is looked at again at once, not {after}"
        gone = [P.describe(o) for res, o in made
                if meta(k.get(res, meta(o)["name"], meta(o).get("namespace"))).get("deletionTimestamp")]
        assert not gone, f"deleted on a stale read: {gone}"
        said = [r.getMessage() for r in caplog.records if r.name == "taucluster"]
        refused = rf"{re.escape(f'taucluster {name}: delete ')}.+ refused \(.+\); looking again"
        assert [m for m in said if re.fullmatch(refused, m)], said

        def released() -> bool:         # each look from a fresh read, as the watches would give it
            tc = k.get_or_none(TAUCLUSTER, name)
            if tc is None:
                return True
            fresh = TauClusterController(k)
            fresh.tauclusters.put(tc)
            for kind, res in KINDS.items():
                for obj in k.list(res)[0]:
                    fresh.kueue[kind].put(obj)
            fresh.reconcile(name)
            return False
        wait_for(released, 60, what="its objects, then its finalizer, to go from a fresh read")


def test_a_change_to_a_profiles_object_alone_queues_its_taucluster(k, controller, unique):
    """In process, its watches running and its resync an hour: someone edits the ClusterQueue a Manage TauCluster made;
    the watch's event alone must queue the TauCluster, which puts the quota back within seconds.  (The sampled run at
    3800efa: an event of a Kueue object queued nothing, and the 10 s resync put every drift back in time.)"""
    raw = profile_raw(f"event{unique}")
    ctl = TauClusterController(k, resync=3600.0)
    stop, ready = threading.Event(), threading.Event()
    looks: list = []                # what each reconcile returned: None once ready with nothing to write (no timer)
    reconcile = ctl.reconcile
    ctl.reconcile = lambda key: looks.append(reconcile(key)) or looks[-1]
    with manage_in_process(k, controller, f"tc-event{unique}", raw, ctl) as cq:
        loop = threading.Thread(target=ctl.run, args=(stop, ready), daemon=True)
        loop.start()
        try:
            assert ready.wait(30), "the in-process controller's caches did not sync"

            def quiet() -> bool:            # no look for a second, the last one wanting no other
                n = len(looks)
                time.sleep(1.0)
                return n > 0 and len(looks) == n and looks[-1] is None
            try:
                wait_for(quiet, 60, what="the TauCluster ready, its controller with nothing more to do")
            except Exception as e:
                raise AssertionError(f"{e}; its last looks: {looks[-20:]} of {len(looks)}; status: "
                                     f"{k.get(TAUCLUSTER, f'tc-event{unique}').get('status')}") from None
            k.patch(CLUSTER_QUEUE, meta(cq)["name"], with_gpu_quota(cq, "2"))
            wait_for(lambda: gpu_quota(k.get(CLUSTER_QUEUE, meta(cq)["name"])) == gpu_quota(cq), 10,
                     what="the quota put back on the watch's event alone (the resync is an hour)")
        finally:
            stop.set()
            loop.join(15)


GANG_POD = {"cpu": 8, "memory": 64 * 2**30, "nvidia.com/gpu": 8}      # manifests/gpu-job.yaml's pod; a gang is 2


def test_a_profiles_cpu_and_memory_quota_land_in_its_cluster_queue_given_or_scaled_from_its_gpus(k, controller, unique):
    """Issue 39: a profile of 3200 GPUs that gives only gpuQuota (as the demo's files do) gets a ClusterQueue whose CPU
    and memory admit 200 gangs of 2 x (8 GPUs, 8 CPUs, 64Gi) at once, the GPUs binding first (a fixed 256 CPUs and
    2Ti admitted 16); one that gives cpuQuota and memoryQuota gets them as given; both ready, Kueue taking the queues
    as Active."""
    fleet, given = profile_raw(f"fleet{unique}"), profile_raw(f"given{unique}")
    fleet["gpuQuota"] = 3200
    given.update(cpuQuota=1000, memoryQuota="7Ti")
    name = f"tc-quota{unique}"
    k.create(TAUCLUSTER, TAUCLUSTER.new(name, spec={"mode": MODE_MANAGE, "profiles": [fleet, given]}))
    for raw in (fleet, given):
        wait_for(lambda: condition_of(k, name, raw["name"]).get("status") == "True", 60, what=f"{raw['name']} ready")

    def nominal(raw) -> dict:
        [group] = spec(k.get(CLUSTER_QUEUE, raw["clusterQueue"]))["resourceGroups"]
        return {r["name"]: parse_quantity_exact(r["nominalQuota"]) for r in group["flavors"][0]["resources"]}

    held = nominal(fleet)
    assert held == {"cpu": 51200, "memory": 400 * 2**40, "nvidia.com/gpu": 3200}, held
    gangs = {r: int(held[r] // (2 * need)) for r, need in GANG_POD.items()}
    assert gangs["nvidia.com/gpu"] == 200 and min(gangs.values()) == 200, gangs        # the GPUs bind first
    assert nominal(given) == {"cpu": 1000, "memory": 7 * 2**40, "nvidia.com/gpu": 16}, nominal(given)
    made = [o for raw in (fleet, given) for o in objects(parse_profile(raw), name)]
    k.delete(TAUCLUSTER, name)
    wait_for(lambda: k.get_or_none(TAUCLUSTER, name) is None and not any(
        k.get_or_none(KINDS[o["kind"]], meta(o)["name"], meta(o).get("namespace")) for o in made), 60,
             what="deleted clean")


def test_an_apiserver_that_does_not_answer_is_a_clear_error(tmp_path):
    """(A cluster without the TauCluster CRD: tests/cluster/test_attach.py, on a bare cluster.)"""
    kubeconfig = tmp_path / "nowhere.yaml"
    kubeconfig.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "current-context": "x",
                                      "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}],
                                      "clusters": [{"name": "x", "cluster": {"server": "https://127.0.0.1:9"}}],
                                      "users": [{"name": "x", "user": {"token": "t"}}]}))
    r = subprocess.run([sys.executable, "-m", "cli", "taucluster", "--kubeconfig", str(kubeconfig)],
                       capture_output=True, text=True, timeout=60, cwd=REPO)
    assert r.returncode == 1 and "Error: cannot reach the cluster" in r.stderr, r.stderr


WINDOW = 6.0            # seconds a contested object is watched for writes
MOST_WRITES = 2         # in a window, by anyone: none of ours (no spec, no label), Kueue's status writes at most


class Writes:
    """Every change to one ClusterQueue, as a watch sees it (each is a new resourceVersion)."""

    def __init__(self, k, name: str):
        self.name, self.seen = name, []
        self.watch = Watch(k, CLUSTER_QUEUE, self._on)

    def _on(self, typ, obj) -> None:
        if meta(obj).get("name") == self.name:
            self.seen.append((str(typ), meta(obj).get("resourceVersion"), meta(obj).get("generation"),
                              dict(labels(obj)), spec(obj)))

    def __enter__(self):
        self.watch.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.watch.__exit__(*exc)

    def over_a_window(self, before) -> list:
        """Watch for WINDOW seconds; the changes seen from the start, each checked to be no write of a spec or a
        label (the object `before` as it was)."""
        time.sleep(WINDOW)
        ours = [s for s in self.seen if s[0] != "MODIFIED" or s[2] != meta(before).get("generation")
                or s[3] != labels(before) or s[4] != spec(before)]
        assert not ours, f"ClusterQueue {self.name} written meanwhile: {ours}"
        assert len(self.seen) <= MOST_WRITES, f"ClusterQueue {self.name}: {len(self.seen)} writes in {WINDOW}s"
        return self.seen


def condition_of(k, tc: str, profile: str) -> dict:
    return tauclusters_.ready_condition(k.get(TAUCLUSTER, tc), profile) or {}


def test_two_tauclusters_naming_one_cluster_queue_the_later_is_refused_and_the_queue_never_fought_over(
        k, controller, unique):
    """The later claim (by creationTimestamp; the queue already carries the first's label) is refused with Conflict,
    naming the first TauCluster, its profile, the queue and the fields; it writes nothing at all; nobody writes the
    queue over a window, nor after the controller restarts; deleting the first lets the later take over; a third
    TauCluster wanting the queue exactly as the holder does is refused all the same."""
    a, b = profile_raw(f"cqa{unique}"), profile_raw(f"cqb{unique}")
    b.update(clusterQueue=a["clusterQueue"], gpuQuota=a["gpuQuota"] * 2)
    pa, pb = parse_profile(a), parse_profile(b)
    first, second, third = f"tc-first{unique}", f"tc-second{unique}", f"tc-third{unique}"
    cq = pa.cluster_queue
    k.create(TAUCLUSTER, TAUCLUSTER.new(first, spec={"mode": MODE_MANAGE, "profiles": [a]}))
    wait_for(lambda: condition_of(k, first, pa.name).get("status") == "True", 60, what=f"{first} ready")
    before = k.get(CLUSTER_QUEUE, cq)
    with Writes(k, cq) as writes:
        k.create(TAUCLUSTER, TAUCLUSTER.new(second, spec={"mode": MODE_MANAGE, "profiles": [b]}))
        wait_for(lambda: condition_of(k, second, pb.name).get("reason") == P.CLAIMED, 30, what=f"{second} refused")
        said = condition_of(k, second, pb.name)
        quota = "spec.resourceGroups[0].flavors[0].resources[2].nominalQuota"
        assert said["status"] == "False" and said["reason"] == "Conflict" and said["message"].startswith(
            f"ClusterQueue {cq} is TauCluster {first}'s (its profile {pa.name} holds it); this profile wants it "
            f"otherwise: ") and f"{quota}: profile {pa.name} wants '16', this profile '32'" in said["message"], said
        writes.over_a_window(before)
        assert condition_of(k, first, pa.name).get("status") == "True"
        mine = [o for o in objects(pb, second) if P.key(o) != P.key(before)]
        assert not [P.describe(o) for o in mine if k.get_or_none(KINDS[o["kind"]], meta(o)["name"],
                                                                  meta(o).get("namespace"))], "the refused one wrote"
        # the decision is the stored objects': the same after a restart
        assert setup.stop_controller(controller) and setup.start_controller(controller)
        wait_for(lambda: heartbeat.alive(k, TAUCLUSTER_LEASE), 30, what="the restarted controller's heartbeat")
        writes.over_a_window(before)
        assert condition_of(k, second, pb.name) == said and condition_of(k, first, pa.name).get("status") == "True"
    # the first goes: the later claim takes the queue over, as it wants it
    k.delete(TAUCLUSTER, first)
    wait_for(lambda: condition_of(k, second, pb.name).get("status") == "True", 90, what=f"{second} taking over")
    taken = k.get(CLUSTER_QUEUE, cq)
    assert labels(taken).get(TAUCLUSTER_LABEL) == second and not P.differences(objects(pb, second)[3], taken)
    # a third wants the queue (and all the rest) exactly as the second does: refused all the same
    with Writes(k, cq) as writes:
        k.create(TAUCLUSTER, TAUCLUSTER.new(third, spec={"mode": MODE_ADOPT, "profiles": [b]}))
        wait_for(lambda: condition_of(k, third, pb.name).get("reason") == P.CLAIMED, 30, what=f"{third} refused")
        said = condition_of(k, third, pb.name)
        assert said["status"] == "False" and said["message"].startswith(
            f"ResourceFlavor {pb.flavor} is TauCluster {second}'s (its profile {pb.name} holds it); this profile wants "
            "it alike, but an object is held by one TauCluster; "), said
        writes.over_a_window(taken)
        assert condition_of(k, second, pb.name).get("status") == "True"
    for name in (third, second):
        k.delete(TAUCLUSTER, name)
    wait_for(lambda: not any(k.get_or_none(TAUCLUSTER, n) for n in (first, second, third)) and not any(
        k.get_or_none(KINDS[o["kind"]], meta(o)["name"], meta(o).get("namespace"))
        for o in objects(pa, first) + objects(pb, second)), 90, what="all deleted clean")
