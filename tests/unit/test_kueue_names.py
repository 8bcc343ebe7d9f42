"""Kueue v0.19.2's naming (demo/jobs/kueue_names.py) and the preflight warning built on it
(kubernetes-sigs/kueue#12542), checked against names recorded from the real cluster."""

from __future__ import annotations

import copy
import hashlib
import uuid
from pathlib import Path

import pytest
import yaml

from demo.jobs import kueue_names as names
from demo.jobs.preflight import check_profile, check_request_names

HERE = Path(__file__).parent / "recorded"
LONG = yaml.safe_load((HERE / "kueue-names.yaml").read_text())
WORKLOADS = yaml.safe_load((HERE / "workloads.yaml").read_text())
QUEUE = {d["kind"]: d for d in yaml.safe_load_all((HERE / "queue-objects.yaml").read_text())}
CONSUME = "autoscaling.x-k8s.io/consume-provisioning-request"


def recorded_short() -> list[tuple[str, str]]:
    """(workload, request name) pairs of the demo's own check, from admitted Workloads' podSetUpdates."""
    out = set()
    for rec in WORKLOADS:
        for c in rec["workload"].get("status", {}).get("admissionChecks") or []:
            for psu in c.get("podSetUpdates") or []:
                if CONSUME in (psu.get("annotations") or {}):
                    out.add((rec["workload"]["metadata"]["name"], psu["annotations"][CONSUME]))
    return sorted(out)


@pytest.mark.parametrize("job,uid,workload", sorted(
    {(r["job"]["metadata"]["name"], r["job"]["metadata"]["uid"], r["workload"]["metadata"]["name"]) for r in WORKLOADS}
    | {(LONG[c]["job"], LONG[c]["job_uid"], LONG[c]["workload"]) for c in ("control", "looping")}))
def test_workload_names_are_kueues(job, uid, workload):
    assert names.workload_name_for_job(job, uid) == workload
    assert names.workload_name_length_for_job(job) == len(workload)


def test_short_request_names_are_kueues_and_found_again():
    pairs = recorded_short()
    assert pairs, "the recorded Workloads carry their request's name"
    for wl, provreq in pairs:
        assert names.provreq_name(wl, "gpu-provisioning", 1) == provreq
        assert names.kueue_recognises(provreq, wl, "gpu-provisioning")
        assert not names.loses_its_request(len(wl), len("gpu-provisioning"))


def test_recorded_247_character_request_is_kept():
    c = LONG["control"]
    provreq = names.provreq_name(c["workload"], LONG["check"], 1)
    assert provreq == c["provreq"] and len(provreq) == names.MAX_PREFIX_LENGTH == 247
    assert names.kueue_recognises(provreq, c["workload"], LONG["check"]) and c["recognised"]
    assert not names.loses_its_request(len(c["workload"]), len(LONG["check"]))


def test_recorded_long_request_is_cut_and_hashed_with_the_attempt_so_kueue_loses_it():
    c = LONG["looping"]
    wl, check = c["workload"], LONG["check"]
    full = f"{wl}-{check}-1"
    assert len(full) == 248
    assert c["provreq"] == names.provreq_name(wl, check, 1) == full[:247] + "-" + hashlib.sha1(full.encode()).hexdigest()[:5]
    assert len(c["provreq"]) == 253
    # the prefix Kueue looks it up by is hashed without the attempt: a different string, no match
    assert names.provreq_prefix(wl, check) == f"{wl}-{check}-"                 # 247: not cut, no room for digits
    assert not names.kueue_recognises(c["provreq"], wl, check) and not c["recognised"]
    assert names.loses_its_request(len(wl), len(check))


def test_both_cut_the_hashes_differ():
    wl, check = "w" * 100, "c" * 160
    prefix, provreq = names.provreq_prefix(wl, check), names.provreq_name(wl, check, 1)
    assert len(prefix) == len(provreq) == 253 and prefix[:247] == provreq[:247] and prefix != provreq
    assert not names.kueue_recognises(provreq, wl, check)


@pytest.mark.parametrize("job_len", [1, 11, 14, 15, 40, 63])
def test_shortest_looping_check_is_the_exact_boundary(job_len):
    job = ("j" * job_len)
    wl = names.workload_name_for_job(job, str(uuid.uuid4()))
    n = names.shortest_looping_check(job)
    assert n == 235 - job_len
    for length, lost in ((n - 1, False), (n, True), (n + 17, True)):
        check = "c" * length
        assert names.loses_its_request(len(wl), length) is lost
        assert names.kueue_recognises(names.provreq_name(wl, check, 1), wl, check) is not lost


def test_a_tenth_attempt_can_tip_a_borderline_name():
    job, wl_len = "job-train-abcde", 25
    check = "c" * (names.shortest_looping_check(job) - 1)            # 247 characters at attempt 1..9
    assert not names.loses_its_request(wl_len, len(check), 9)
    assert names.loses_its_request(wl_len, len(check), 10)


def test_pod_template_names_are_cut_too():
    provreq = "p" * 240
    assert len(names.pod_template_name(provreq)) == 253
    assert names.pod_template_name("short-1") == "ppt-short-1-main"


# ---------------------------------------------------------------------------- preflight (layer 1)

def attempts_of_recorded_profile() -> dict[str, int]:
    r = check_profile("gpu-a100-8", QUEUE["LocalQueue"], QUEUE["ClusterQueue"],
                      {"gpu-provisioning": QUEUE["AdmissionCheck"]},
                      {"gpu-provisioning": QUEUE["ProvisioningRequestConfig"]})
    assert r.code == 0
    return r.attempts


def test_recorded_profile_makes_three_attempts_at_most():
    assert attempts_of_recorded_profile() == {"gpu-provisioning": 3}     # backoffLimitCount 2


def test_no_warning_for_the_demos_names():
    assert check_request_names("job-train-abcde", attempts_of_recorded_profile()) == []
    assert check_request_names("j" * 63, attempts_of_recorded_profile()) == []


def test_warning_for_the_recorded_looping_job_and_not_for_the_control():
    attempts = {LONG["check"]: 3}
    lines = check_request_names(LONG["looping"]["job"], attempts)
    assert len(lines) == 1 and "WARNING" in lines[0] and "kubernetes-sigs/kueue#12542" in lines[0]
    assert "248 characters" in lines[0] and "1 character(s) shorter" in lines[0]
    assert check_request_names(LONG["control"]["job"], attempts) == []


def test_warning_names_the_first_attempt_that_loops():
    check = "c" * (names.shortest_looping_check("job-train-abcde") - 1)
    assert check_request_names("job-train-abcde", {check: 3}) == []
    lines = check_request_names("job-train-abcde", {check: 10})
    assert len(lines) == 1 and f"{'c' * 24}…-10 would be 248 characters" in lines[0]


def test_check_profile_reads_the_crd_default_retry_limit():
    prc = copy.deepcopy(QUEUE["ProvisioningRequestConfig"])
    del prc["spec"]["retryStrategy"]
    r = check_profile("gpu-a100-8", QUEUE["LocalQueue"], QUEUE["ClusterQueue"],
                      {"gpu-provisioning": QUEUE["AdmissionCheck"]}, {"gpu-provisioning": prc})
    assert r.attempts == {"gpu-provisioning": 4}                           # Kueue's CRD default: 3 retries


def test_an_owner_name_too_long_for_a_workload_name_is_cut_to_leave_room_for_the_hash():
    # batch/Job names stop at 63 characters, but Kueue's rule takes any owner name: cut to 247, then -hash
    long_name = "x" * 300
    wl = names.workload_name_for_job(long_name, "uid-1")
    digest = hashlib.sha1(f"Job\nbatch\n{long_name}\nuid-1".encode()).hexdigest()[:5]
    assert wl == ("job-" + long_name)[:247] + "-" + digest and len(wl) == 253
    assert names.workload_name_length_for_job(long_name) == 253
    at_the_limit = "y" * 243                  # job-<243> is exactly 247: not cut
    assert names.workload_name_for_job(at_the_limit, "u").startswith("job-" + at_the_limit + "-")
    assert names.workload_name_length_for_job(at_the_limit) == 253
    assert names.workload_name_length_for_job("y" * 244) == 253


def warning(shown: str, attempt: int, full: int, shorter: int) -> str:
    return (f"preflight: WARNING: Kueue v0.19.2 cannot find its own ProvisioningRequest for this Job: "
            f"<workload>-{shown}-{attempt} would be {full} characters (over 247), so Kueue cuts and hashes it and then "
            f"deletes and re-creates it without end (kubernetes-sigs/kueue#12542, fixed by #14916); the Job waits "
            f"until its admission deadline. A Job name {shorter} character(s) shorter avoids it.")


def test_the_warning_whole_for_each_looping_check_in_name_order():
    """A name that loops from the first attempt on says -1; a check name over 24 characters is shown cut (…);
    the checks are looked at in name order, a check whose names all fit is skipped."""
    fits, alphabet, exactly_24, exactly_25 = "a-fits", "abcdefghijklmnopqrstuvwxyz", "a" * 24, "b" * 25
    job = "x" * 300                                           # its Workload's name is 253 characters: every check loops
    assert check_request_names(job, {exactly_24: 3, alphabet: 1, exactly_25: 2}) == [
        warning(exactly_24, 1, 253 + 1 + 24 + 1 + 1, 33), warning("abcdefghijklmnopqrstuvwx…", 1, 282, 35),
        warning("b" * 24 + "…", 1, 281, 34)]
    short = "job-train-abcde"
    check = "c" * names.shortest_looping_check(short)         # loops from attempt 1 on
    assert check_request_names(short, {fits: 3, check: 3, "zz": 0}) == [warning("c" * 24 + "…", 1, 248, 1)]


def test_only_the_attempts_the_check_allows_are_looked_at():
    """One character short of looping at attempt 1..9, the tenth attempt's name (two digits) loops: only a check
    that allows ten attempts warns; attempts of no retry (0) still make one request."""
    check = "c" * (names.shortest_looping_check("job-train-abcde") - 1)
    assert check_request_names("job-train-abcde", {check: 9}) == []
    assert check_request_names("job-train-abcde", {check: 10}) == [warning("c" * 24 + "…", 10, 248, 1)]
    looping = "c" * names.shortest_looping_check("job-train-abcde")
    assert check_request_names("job-train-abcde", {looping: 0}) == [warning("c" * 24 + "…", 1, 248, 1)]
