"""What observe's reads mean (demo/jobs/observed.py), on plain objects recorded on the real cluster and on the
errors k8s.client raises: which Job a read found, a yes/no read that may be refused, why the TauClusters cannot
be read, and which ClusterQueue and ResourceFlavor preflight reads next."""

from __future__ import annotations

from pathlib import Path

import yaml

from demo.jobs import observed
from demo.jobs.preflight import PreflightInputs
from k8s.errors import ApiError, Conflict, NotFound
from k8s.resources import TAUCLUSTER

REC = {d["kind"]: d for d in yaml.safe_load_all((Path(__file__).parent / "recorded" / "queue-objects.yaml").read_text())}


def job(uid: str) -> dict:
    return {"metadata": {"name": "train", "namespace": "demo", "uid": uid}}


def test_the_job_read_is_the_one_asked_for_only_with_its_uid():
    assert observed.is_the_job(job("u1"), "u1")
    assert observed.is_the_job(job("u1"), None), "no uid asked for: any Job of that name"
    assert observed.is_the_job(job("u1"), ""), "an empty uid asks for none either"
    assert not observed.is_the_job(job("u2"), "u1"), "made again under the same name: not the one followed"
    assert not observed.is_the_job(None, "u1") and not observed.is_the_job(None, None)


def refused(e: Exception):
    def read() -> bool:
        raise e
    return read


def test_a_yes_no_read_says_no_on_a_404_and_cannot_tell_on_any_other_refusal():
    assert observed.yes_no(lambda: True) is True and observed.yes_no(lambda: False) is False
    assert observed.yes_no(refused(NotFound(404, "NotFound", "namespaces \"x\" not found"))) is False
    assert observed.yes_no(refused(ApiError(403, "Forbidden", "cannot get namespaces"))) is None
    assert observed.yes_no(refused(Conflict(409, "Conflict", "x"))) is None


def test_why_the_tauclusters_cannot_be_read():
    assert observed.tauclusters_unread(NotFound(404, "NotFound", "the server could not find the requested resource")) \
        == f"the TauCluster CRD ({TAUCLUSTER.crd_name}) is not installed here"
    assert observed.tauclusters_unread(ApiError(403, "Forbidden", "no")) == \
        "the TauClusters cannot be read (403 Forbidden: no)"


def test_the_cluster_queue_is_read_from_the_local_queue():
    assert observed.cluster_queue_of(REC["LocalQueue"]) == REC["LocalQueue"]["spec"]["clusterQueue"] != ""
    assert observed.cluster_queue_of(None) == ""
    assert observed.cluster_queue_of({"spec": None}) == ""
    assert observed.cluster_queue_of({"spec": {"clusterQueue": None}}) == ""


def test_the_flavor_read_is_the_cluster_queues_first_gpu_flavor():
    cq = REC["ClusterQueue"]
    assert observed.gpu_flavor_of(cq) == cq["spec"]["resourceGroups"][0]["flavors"][0]["name"]
    two = {"spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "cpu-only"}]},
                                       {"coveredResources": ["nvidia.com/gpu"],
                                        "flavors": [{"name": "a100"}, {"name": "h100"}]}]}}
    assert observed.gpu_flavor_of(two) == "a100"
    assert observed.gpu_flavor_of(None) is None
    assert observed.gpu_flavor_of({"spec": {"resourceGroups": [{"coveredResources": ["cpu"],
                                                                 "flavors": [{"name": "c"}]}]}}) is None


def test_objects_by_name_and_a_namespace_that_does_not_exist():
    a, b = {"metadata": {"name": "a"}, "x": 1}, {"metadata": {"name": "b"}}
    assert observed.keyed_by_name([a, b]) == {"a": a, "b": b}
    assert observed.keyed_by_name([]) == {}
    assert observed.no_namespace() == PreflightInputs(None, None, {}, {}, None, {}, namespace_exists=False)
