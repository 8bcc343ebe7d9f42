"""The foundation's pure helpers: the one duration parser, timestamps, object accessors."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from k8s.duration import BadDuration, parse_duration
from k8s.objects import (annotations, condition, created_at, deleting, format_time, is_true, labels,
                              meta, name, name_of, owned_by, parse_time, revision, seconds_since, spec, status, transition_time,
                              uid)


@pytest.mark.parametrize("text,seconds", [("90s", 90), ("1m30s", 90), ("2h", 7200), ("1.5m", 90),
                                          ("250ms", 0.25), ("45", 45), ("1h30m", 5400), (" 5s ", 5), ("0.5", 0.5)])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "   ", "soon", "-3", "5x", "m", "1.5.2s", None, "3 s", 90, ["90s"]])
def test_bad_durations_say_what_a_duration_looks_like(text):
    with pytest.raises(BadDuration, match="is not a duration .examples: 90s, 5m, 1h30m."):
        parse_duration(text)


T = datetime(2026, 12, 1, 9, 30, 5, 123456, tzinfo=timezone.utc)


def test_timestamps_round_trip_in_both_precisions():
    assert format_time(T) == "2026-12-01T09:30:05Z"
    assert format_time(T, micro=True) == "2026-12-01T09:30:05.123456Z"
    assert parse_time(format_time(T, micro=True)) == T
    assert parse_time("2026-12-01T09:30:05Z") == T.replace(microsecond=0)
    other_zone = datetime(2026, 12, 1, 10, 30, 5, tzinfo=timezone(timedelta(hours=1)))
    assert format_time(other_zone) == "2026-12-01T09:30:05Z"


@pytest.mark.parametrize("text", [None, "", "yesterday", 12, "2026-13-01T00:00:00Z"])
def test_unreadable_timestamps_read_as_none(text):
    assert parse_time(text) is None


def test_a_timestamp_without_zone_is_utc():
    assert parse_time("2026-12-01T09:30:05") == T.replace(microsecond=0)


def test_a_timestamp_with_an_offset_keeps_its_offset():
    t = parse_time("2026-12-01T10:30:05+01:00")
    assert t == T.replace(microsecond=0) and t.utcoffset() == timedelta(hours=1)


@pytest.fixture
def local_zone_far_from_utc(monkeypatch):
    """The machine's local time zone at UTC+5:30 (a POSIX TZ string: no tz database needed)."""
    monkeypatch.setenv("TZ", "IST-5:30")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_written_timestamps_are_utc_whatever_the_machines_time_zone(local_zone_far_from_utc):
    assert format_time(datetime(2026, 12, 1, 10, 30, 5, tzinfo=timezone(timedelta(hours=1)))) == "2026-12-01T09:30:05Z"
    assert format_time(T, micro=True) == "2026-12-01T09:30:05.123456Z"


WL = {"metadata": {"name": "wl", "namespace": "demo", "labels": {"a": "1"}, "annotations": {"b": "2"},
                   "creationTimestamp": "2026-12-01T09:30:00Z", "uid": "u",
                   "ownerReferences": [{"uid": "job-uid", "controller": True}, {"uid": "other"}]},
      "status": {"conditions": [{"type": "Admitted", "status": "True", "lastTransitionTime": "2026-12-01T09:30:04Z"},
                                {"type": "Evicted", "status": "False"}]}}


def test_now_is_aware_and_in_utc():
    from k8s.objects import utcnow
    before = datetime.now(timezone.utc)
    now = utcnow()
    assert now.tzinfo is not None and now.utcoffset() == timedelta(0)
    assert before <= now <= datetime.now(timezone.utc)


def test_accessors_read_plain_objects():
    assert meta(WL)["name"] == "wl" and labels(WL) == {"a": "1"} and annotations(WL) == {"b": "2"}
    assert name(WL) == "wl" and uid(WL) == "u" and spec(WL) == {} and status(WL) == WL["status"]
    assert name_of(WL) == "demo/wl" and name_of({"metadata": {"name": "n1"}}) == "n1"
    assert name_of({"metadata": {"namespace": "demo"}}) == "demo/?" and name_of({}) == "?"
    assert created_at(WL) == datetime(2026, 12, 1, 9, 30, tzinfo=timezone.utc)
    assert is_true(WL, "Admitted") and not is_true(WL, "Evicted") and not is_true(WL, "Finished")
    assert condition(WL, "Evicted") == {"type": "Evicted", "status": "False"} and condition(WL, "X") is None
    assert transition_time(WL, "Admitted") == datetime(2026, 12, 1, 9, 30, 4, tzinfo=timezone.utc)
    assert transition_time(WL, "Evicted") is None
    assert owned_by(WL, "job-uid") and not owned_by(WL, "other") and owned_by(WL, "other", controller=False)
    assert not owned_by(WL, "")
    assert not deleting(WL) and deleting({"metadata": {"deletionTimestamp": "2026-12-01T09:30:00Z"}})
    now = datetime(2026, 12, 1, 9, 30, 10, tzinfo=timezone.utc)
    assert seconds_since(created_at(WL), now) == 10 and seconds_since(None, now) is None


@pytest.mark.parametrize("rv, want", [("1234", 1234), ("", 0), (None, 0), ("abc", 0), ([1], 0)])
def test_a_resource_version_is_a_number_and_an_unreadable_one_sorts_first(rv, want):
    obj = {"metadata": {"resourceVersion": rv}} if rv is not None else {"metadata": {}}
    assert revision(obj) == want
    assert revision(None) == 0


@pytest.mark.parametrize("obj", [None, {}, {"metadata": None, "status": None}, {"metadata": "x", "status": []},
                                 {"status": {"conditions": None}}, {"status": {"conditions": ["junk", None]}}])
def test_malformed_objects_read_as_empty(obj):
    assert meta(obj) == {} and labels(obj) == {} and annotations(obj) == {}
    assert name(obj) == "" and uid(obj) == "" and spec(obj) == {}
    assert condition(obj, "Admitted") is None and not is_true(obj, "Admitted") and not deleting(obj)


def _obj(name: str, rv: str, uid: str = "u") -> dict:
    return {"metadata": {"name": name, "namespace": "demo", "resourceVersion": rv, "uid": uid}}


def test_a_store_is_replaced_whole_after_a_relist_and_keeps_the_newest_version():
    from k8s.runtime import Store
    changes = []
    s = Store(on_change=lambda typ, o: changes.append((typ, o["metadata"]["name"])))
    for typ, o in [("SYNC", _obj("a", "1")), ("SYNC", _obj("b", "2")), ("SYNCED", {})]:
        s.handle(typ, o)
    assert s.synced.is_set() and sorted(o["metadata"]["name"] for o in s.items()) == ["a", "b"]
    s.put(_obj("a", "5"))                                 # our own write, newer than the watch so far
    s.handle("MODIFIED", _obj("a", "3"))                  # an older event arrives late: ignored
    assert s.get("demo/a")["metadata"]["resourceVersion"] == "5"
    s.handle("MODIFIED", _obj("a", "4", uid="other"))     # a new incarnation replaces the old one
    assert s.get("demo/a")["metadata"]["uid"] == "other"
    s.handle("DELETED", _obj("b", "6"))
    assert s.get("demo/b") is None
    # b vanished while the watch was down: the relist must not keep it; a appears again
    for typ, o in [("SYNC", _obj("c", "9")), ("SYNCED", {})]:
        s.handle(typ, o)
    assert [o["metadata"]["name"] for o in s.items()] == ["c"]
    s.discard("demo/c")
    assert s.items() == [] and changes == [("MODIFIED", "a"), ("MODIFIED", "a"), ("DELETED", "b")]


def test_paths_shown_to_readers_carry_no_home_directory(monkeypatch, tmp_path):
    from k8s.paths import REPO, shown
    monkeypatch.setenv("TAU_DEMO_STATE", str(tmp_path / "state"))
    monkeypatch.setenv("TAU_DEMO_CACHE", str(tmp_path / "cache"))
    assert shown(REPO / "runs" / "x" / "success.svg") == "runs/x/success.svg"
    assert shown(tmp_path / "state" / "clusters" / "c" / "controllers" / "fake-ca.log") == \
        "$TAU_DEMO_STATE/clusters/c/controllers/fake-ca.log"
    assert shown(tmp_path / "cache" / "kind-v0.32.0" / "bin" / "kind") == "$TAU_DEMO_CACHE/kind-v0.32.0/bin/kind"
    assert shown("/etc/hosts") == "/etc/hosts"


def test_poll_returns_at_the_first_empty_answer_or_the_last_complaint_at_the_timeout():
    from demo.cluster.install import _poll
    answers = iter(["starting", "starting", ""])
    assert _poll(lambda: next(answers), 5, 0.01) == ""
    calls = []
    assert _poll(lambda: calls.append(1) or f"not ready ({len(calls)})", 0.2, 0.05) == f"not ready ({len(calls)})"
    assert 2 <= len(calls) <= 6


@pytest.mark.parametrize("seconds,text", [(0.25, "250ms"), (0.9994, "999ms"), (0.9996, "1s"), (1, "1s"), (20.5, "20.5s"),
                                          (21.125, "21.125s"), (59.999, "59.999s"), (60, "1m0s"), (180, "3m0s"),
                                          (121.5, "2m1.5s"), (3600, "1h0m0s"), (3723.25, "1h2m3.25s")])
def test_go_duration_prints_like_go(seconds, text):
    from k8s.duration import go_duration
    assert go_duration(seconds) == text
