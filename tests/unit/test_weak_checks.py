"""Checks that cannot claim more than they check (issue 37): an upstream report's verdict is no check, a scenario
with no check of its own fails, and Kueue's eviction metric read with a transient error is retried within its bound
and then a failed check that says it could not be read, never a silent pass."""

from __future__ import annotations

import io

import pytest

from demo.cluster.kueue_metrics import MetricsUnavailable, NotServed
from scenarios.kit import toolbox
from scenarios.kit.harness import Context
from scenarios.kueue_specs.kit import METRIC_INTERVAL, METRIC_TIMEOUT, metric_verdict
from scenarios.kit.scenario import Report, Scenario
from scenarios.kit.runner import run_one
from test_poll import Clock

REPORT = Report("kubernetes-sigs/kueue#0", "a report", "it happens", "open")
LABEL = 'kueue_evicted_workloads_total{cluster_queue="spec-6"}'


def context() -> Context:
    return Context(None, "", out=io.StringIO())       # nothing here reads the cluster


def test_a_verdict_is_recorded_and_said_but_is_no_check():
    ctx = context()
    toolbox.verdict(ctx, REPORT, True, "seen twice", "layer 3")
    assert ctx.checks == []
    [v] = ctx.verdicts
    assert (v.number, v.reproduced, v.evidence, v.layer) == (REPORT.number, True, "seen twice", "layer 3")
    assert "REPRODUCES here on Kueue v0.19.2: seen twice" in ctx.out.getvalue()
    assert "PASS" not in ctx.out.getvalue()


def test_a_scenario_whose_only_word_is_a_verdict_fails():
    def run(ctx):
        toolbox.verdict(ctx, REPORT, False, "nothing seen", "none")
    name, ok, detail = run_one(context(), Scenario("upstream-0", "upstream", "a report", run, report=REPORT))
    assert (name, ok) == ("upstream-0", False)
    assert detail.startswith("0 checks passed")


def test_a_scenario_passes_on_its_own_checks_beside_the_verdict():
    def run(ctx):
        ctx.check(True, "observed")
        toolbox.verdict(ctx, REPORT, False, "nothing seen", "none")
    assert run_one(context(), Scenario("upstream-0", "upstream", "a report", run, report=REPORT))[1] is True


def reads(*answers):
    """read() giving each answer in turn (an exception is raised), the last one for ever after; and the calls."""
    calls = []

    def read():
        got = answers[min(len(calls), len(answers) - 1)]
        calls.append(got)
        if isinstance(got, Exception):
            raise got
        return got
    return read, calls


def verdict(read, want=1.0):
    t = Clock()                      # test_poll's fake clock, from 0 here
    t.now = 0.0
    return metric_verdict(read, LABEL, want, clock=t, sleep=t.sleep), t


def test_the_metric_read_at_once():
    read, calls = reads(1.0)
    assert verdict(read)[0] == (True, f"the metric {LABEL} is 1 (want 1)")
    assert len(calls) == 1


def test_a_transient_error_is_read_again_within_the_bound():
    read, calls = reads(MetricsUnavailable("no token: 503"), 0.0, 1.0)
    got, t = verdict(read)
    assert got == (True, f"the metric {LABEL} is 1 (want 1)")
    assert len(calls) == 3 and t.slept == [METRIC_INTERVAL, METRIC_INTERVAL]


def test_a_metric_never_read_is_a_failed_check_saying_so():
    read, calls = reads(MetricsUnavailable("Kueue's metrics on 127.0.0.1:1: refused"))
    got, t = verdict(read)
    assert got == (False, f"could not read the metric {LABEL} within {METRIC_TIMEOUT:g}s: Kueue's metrics on "
                          "127.0.0.1:1: refused (never read)")
    assert t.now == METRIC_TIMEOUT and len(calls) == METRIC_TIMEOUT / METRIC_INTERVAL + 1


def test_an_error_at_the_end_fails_even_after_a_value_was_read():
    read, _ = reads(0.0, MetricsUnavailable("no answer"))
    assert verdict(read)[0] == (False, f"could not read the metric {LABEL} within {METRIC_TIMEOUT:g}s: no answer "
                                       "(last value read: 0, want 1)")


def test_a_wrong_value_fails_with_the_value():
    read, _ = reads(0.0)
    assert verdict(read)[0] == (False, f"the metric {LABEL} is 0 (want 1)")


def test_a_metric_this_cluster_does_not_serve_is_not_asked_again():
    read, calls = reads(NotServed("Kueue serves no metrics on loopback on the kind backend"))
    with pytest.raises(NotServed):
        verdict(read)
    assert len(calls) == 1


def test_a_log_line_whose_format_does_not_fit_is_reported_as_lost(monkeypatch):
    # what every cluster test checks of the processes' logs after it (tests/cluster/conftest.py every_line_logged):
    # logging's own report of a line it could not format, made here by logging itself, is found and named
    import contextlib
    import logging
    from tests.cluster.conftest import logging_errors
    monkeypatch.setattr(logging, "raiseExceptions", True)       # logging's default: it reports what it drops
    log = logging.Logger("tau-test-lost-line")      # outside the logging tree: no handler of pytest's sees it
    log.addHandler(logging.StreamHandler(io.StringIO()))
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        log.warning("%s", "taucluster demo: kept")
        log.warning("%S", "taucluster demo: update ClusterQueue gpu refused")
        log.warning(None, "taucluster demo: dropped")
    lost = logging_errors("12:00:00 taucluster demo: kept\n" + stderr.getvalue())
    assert len(lost) == 2, lost
    assert lost[0] == "Message: '%S' Arguments: ('taucluster demo: update ClusterQueue gpu refused',)", lost
    assert lost[1].startswith("Message: None"), lost
    assert logging_errors("12:00:00 taucluster demo: kept\n12:00:01 deadline: ready\n") == []


def test_an_exception_a_loop_survived_is_found_with_the_line_that_said_it_and_the_exception():
    # what every cluster test checks of the processes' logs after it (tests/cluster/conftest.py
    # every_line_logged): k8s.runtime's loop, which survives a reconcile's exception, writes it with its traceback
    # in cli's format, and the check finds it, with the line that said it and the exception, among cli's lines
    import logging
    import threading
    from k8s import runtime
    from tests.cluster.conftest import tracebacks
    text = io.StringIO()
    handler = logging.StreamHandler(text)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))     # cli's
    runtime.log.addHandler(handler)
    stop = threading.Event()

    def reconcile(key: str) -> float | None:
        stop.set()
        raise TypeError("legacy_commit_line() missing 1 required positional argument: 'conflict'")
    queue = runtime.WorkQueue()
    queue.add("demo/job-race")
    try:
        runtime.run_loop(queue, reconcile, stop, resync=0.05, keys=lambda: [])
    finally:
        runtime.log.removeHandler(handler)
    log = "12:00:00 deadline demo/job-race: mirrored\n" + text.getvalue()
    for after in ("", "12:00:03 deadline demo/job-race: done\n"):        # the log's last lines, or more after them
        [raised] = tracebacks(log + after)
        said, exception = raised.split(" -> ")
        assert said.endswith(f" demo/job-race: {runtime.RECONCILE_FAILED}"), raised
        assert exception == "TypeError: legacy_commit_line() missing 1 required positional argument: 'conflict'", raised
    assert tracebacks("12:00:00 deadline demo/job-race: mirrored\n12:00:01 deadline: ready\n") == []


def test_an_exception_logged_in_this_process_is_seen_and_an_error_without_one_is_not():
    # the same check for the controllers a cluster test runs in its own process (conftest.Raised on the root logger)
    import logging
    from tests.cluster.conftest import Raised
    seen = Raised()
    logging.getLogger().addHandler(seen)
    try:
        logging.getLogger("deadline").error("demo/job: refused; will try again")     # said, no exception: not it
        for name in ("k8s.watch", "aiohttp.server"):                                  # a library's: not it
            try:
                {}["metadata"]
            except KeyError:
                logging.getLogger(name).exception("handling DELETED job-1")
    finally:
        logging.getLogger().removeHandler(seen)
    assert seen.seen == ["in this process, k8s.watch: handling DELETED job-1 -> KeyError: 'metadata'"], seen.seen


LOST = "--- Logging error ---\nMessage: None\nArguments: ('deadline: watching',)\n"


def test_the_logs_are_read_from_where_they_were_last_read_and_a_file_made_again_from_its_start(tmp_path):
    # the sampled run at 8ee113f: a race's own deadline controller removes its log and starts again; the new file,
    # longer than the old one, was read from the old one's length on, and the lost start line went unseen
    from tests.cluster.conftest import LogReader
    (tmp_path / "controllers").mkdir()
    old = tmp_path / "controllers" / "deadline-race-legacy.log"
    old.write_text("12:00:00 deadline: ready\n" + LOST)                 # an earlier session's
    reader = LogReader(tmp_path)
    reader.skip()
    assert reader.lost() == []
    with open(old, "a") as f:
        f.write("12:00:01 deadline: ready\n")
    assert reader.lost() == []
    old.unlink()
    old.write_text(LOST + "12:00:02 deadline: ready\n" * 20)            # made again, longer than before
    assert reader.lost() == ["deadline-race-legacy.log: Message: None Arguments: ('deadline: watching',)"]
    assert reader.lost() == []                                            # each loss is reported once
    with open(old, "a") as f:
        f.write(LOST)
    (tmp_path / "fake-ca.log").write_text(LOST)                           # a new file, read whole
    assert sorted(reader.lost()) == ["deadline-race-legacy.log: Message: None Arguments: ('deadline: watching',)",
                                     "fake-ca.log: Message: None Arguments: ('deadline: watching',)"]
    old.write_text(LOST)                                                  # the same file, shorter: read whole
    assert reader.lost() == ["deadline-race-legacy.log: Message: None Arguments: ('deadline: watching',)"]
    old.write_text("a" * 600 + "\n")
    assert reader.lost() == []
    old.write_text("a" * 256 + LOST)                                      # the same first bytes, but shorter
    assert reader.lost() == ["deadline-race-legacy.log: Message: None Arguments: ('deadline: watching',)"]


def test_a_controllers_messages_are_read_whole_so_a_line_inside_a_longer_one_is_not_it(tmp_path):
    """Controller.messages: each log line's message without its HH:MM:SS, whole, a traceback's lines left out; so a
    check `line in c.messages()` fails on `XXlineXX` (what `log.info("XX%sXX", line)` writes), where `line in
    c.log_text()` passed."""
    from scenarios.kit.controllers import Controller
    c = Controller("fake-ca", ["fake-ca"], tmp_path / "pid", tmp_path / "log")
    assert c.messages() == [], "no log file yet: no message"
    c.logfile.write_text("05:20:01 fake-ca: caches synced; ready\nTraceback (most recent call last):\n"
                         "  File \"x.py\", line 1\n05:20:02 XXscale-down: deleting n-1: unneededXX\n")
    assert c.messages() == ["fake-ca: caches synced; ready", "XXscale-down: deleting n-1: unneededXX"]
    assert "scale-down: deleting n-1: unneeded" in c.log_text()
    assert "scale-down: deleting n-1: unneeded" not in c.messages()


def test_a_controllers_own_flags_win_over_the_contexts_extra_flags_for_its_kind():
    # the cluster tests' session gives every fake `--booking 8s`; a test's own fake given `--booking 1s` must run
    # with 1 s (click takes the last of a flag given twice): before, the session's came last, and won
    from scenarios.kit.controllers import controller_args
    ctx = context()
    ctx.extra_args = {"fake-ca": ["--booking", "8s", "--hook-dir", "/h"]}
    args = controller_args(ctx, ["fake-ca", "--booking", "1s", "--scale-down-delay-after-add", "15s"])
    assert args == ["fake-ca", "--booking", "8s", "--hook-dir", "/h", "--booking", "1s",
                    "--scale-down-delay-after-add", "15s"]
    assert controller_args(ctx, ["deadline", "--class", "c"])[:3] == ["deadline", "--class", "c"]
