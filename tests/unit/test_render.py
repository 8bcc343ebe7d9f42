"""The researcher's Job as `tau-demo submit` renders it from manifests/gpu-job.yaml."""

from __future__ import annotations

import copy
import re

from demo.jobs.preflight import Gang
from demo.jobs.render import job_template, new_name, render_job


def render(template=None, **kw):
    args = dict(name="job-train-x", namespace="demo", profile="gpu-a100-8", gang=Gang(2, 8), duration=None,
                deadline=None, provreq={})
    args.update(kw)
    return render_job(job_template() if template is None else template, **args)


def test_the_repository_template_renders_a_suspended_queued_gang():
    job = render(name="job-train-1", namespace="team-a", profile="gpu-h100", gang=Gang(3, 4), duration="45s",
                 deadline="90s", provreq={"ValidUntilSeconds": "60"}, annotations={"team": "vision"})
    assert job == {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "job-train-1", "namespace": "team-a",
                     "labels": {"kueue.x-k8s.io/queue-name": "gpu-h100"},
                     "annotations": {"tau-demo.io/admission-deadline": "90s",
                                     "provreq.kueue.x-k8s.io/ValidUntilSeconds": "60", "team": "vision"}},
        "spec": {"suspend": True, "parallelism": 3, "completions": 3, "backoffLimit": 0,
                 "template": {"metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": "45s"}},
                              "spec": {"restartPolicy": "Never",
                                       "containers": [{"name": "train", "image": "ghcr.io/example/train:latest",
                                                       "resources": {"requests": {"nvidia.com/gpu": "4", "cpu": "8",
                                                                                  "memory": "64Gi"},
                                                                     "limits": {"nvidia.com/gpu": "4"}}}]}}},
    }


def test_without_deadline_duration_or_parameters_the_template_defaults_stay():
    job = render()
    assert job["metadata"]["annotations"] == {}
    assert job["spec"]["template"]["metadata"]["annotations"] == {"pod-complete.stage.kwok.x-k8s.io/delay": "20s"}


def test_rendering_never_changes_the_template():
    template = job_template()
    before = copy.deepcopy(template)
    render(template, gang=Gang(5, 2), duration="1s", deadline="10s", provreq={"noRetry": "true"}, annotations={"a": "b"})
    assert template == before


def minimal_template(suspend=False, annotations=None):
    """A hand-written Job template without labels, pod metadata or limits."""
    md = {"name": "x"}
    if annotations is not None:
        md["annotations"] = annotations
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": md,
            "spec": {"suspend": suspend,
                     "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}},
                                                          {"name": "d", "resources": {"requests": {}}}]}}}}


def test_a_minimal_template_gets_every_field_submit_relies_on():
    job = render(minimal_template(), gang=Gang(4, 2), duration="5s")
    assert job["metadata"] == {"name": "job-train-x", "namespace": "demo",
                               "labels": {"kueue.x-k8s.io/queue-name": "gpu-a100-8"}, "annotations": {}}
    assert job["spec"]["suspend"] is True                       # Kueue starts it, not the apiserver
    assert (job["spec"]["parallelism"], job["spec"]["completions"]) == (4, 4)
    pod = job["spec"]["template"]
    assert pod["metadata"] == {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": "5s"}}
    for c in pod["spec"]["containers"]:                          # every container, limits created if absent
        assert c["resources"]["requests"]["nvidia.com/gpu"] == "2" and c["resources"]["limits"] == {"nvidia.com/gpu": "2"}


def test_annotations_of_the_template_are_kept_and_extended():
    job = render(minimal_template(annotations={"owner": "ml-team"}), deadline="2m")
    assert job["metadata"]["annotations"] == {"owner": "ml-team", "tau-demo.io/admission-deadline": "2m"}
    job = render(minimal_template(annotations=None), deadline="2m")       # `annotations:` left empty in YAML
    assert job["metadata"]["annotations"] == {"tau-demo.io/admission-deadline": "2m"}


def test_new_names_are_the_prefix_and_five_random_hex_digits():
    names = {new_name() for _ in range(20)}
    assert all(re.fullmatch(r"job-train-[0-9a-f]{5}", n) for n in names), names
    assert len(names) > 1
    assert re.fullmatch(r"job-race-[0-9a-f]{5}", new_name("job-race"))
