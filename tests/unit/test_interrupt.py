"""An interrupt ends every wait at once and the command exits as interrupted (cli/interrupt.py, k8s/poll.py): the
waits on plain threads, the exit codes, and the whole path with real signals sent to a real child process (its
cluster does not answer, so its cleanup says it failed and names `tau-demo clean`; the exit code is the signal's
all the same)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from cli.interrupt import exit_code, handled
from demo.cluster.procs import INTERRUPT_SIGNALS, as_from_a_terminal
from k8s import poll
from scenarios.kit.runner import CLEAN_COMMAND

from k8s.paths import REPO


@pytest.fixture(autouse=True)
def resumed():
    poll.resume()
    yield
    poll.resume()


def test_a_wait_in_another_thread_ends_as_soon_as_the_process_is_interrupted():
    ended: list = []

    def waiter():
        t0 = time.monotonic()
        try:
            poll.until(lambda: False, 60, "nothing", interval=5)
        except poll.Cancelled:
            ended.append(time.monotonic() - t0)
    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.2)
    assert not ended, "the wait waits until the interrupt"
    poll.cancel()
    t.join(2)
    assert ended and ended[0] < 1.5, ended       # within its 5 s sleep, not at its end


def test_a_cancelled_wait_is_no_exception_a_scenario_would_swallow_and_resume_makes_waits_wait_again():
    poll.cancel()
    with pytest.raises(poll.Cancelled):
        try:
            poll.eventually(lambda: False, 10, 0.1)
        except Exception:          # what run_one and the scenarios catch: not an interrupt
            pytest.fail("Cancelled was taken for an Exception")
    assert poll.cancelled()
    poll.resume()
    assert not poll.cancelled()
    t0 = time.monotonic()
    assert poll.eventually(lambda: False, 0.3, 0.1) is False
    assert time.monotonic() - t0 >= 0.3, "it waited its whole time again"


def test_an_explicit_sleep_is_not_cancelled():
    # a stop (procs.stop) passes time.sleep: what an interrupt does itself is not cut short
    poll.cancel()
    calls = []
    assert poll.eventually(lambda: calls.append(1) or len(calls) >= 3, 5, 0.01, sleep=time.sleep)


def test_a_signal_ignored_at_the_start_stays_ignored_and_the_others_are_handled():
    dfl, ign, own = signal.SIG_DFL, signal.SIG_IGN, signal.default_int_handler
    assert handled({signal.SIGINT: own, signal.SIGTERM: dfl, signal.SIGHUP: dfl}) == list(INTERRUPT_SIGNALS)
    assert handled({signal.SIGINT: own, signal.SIGTERM: dfl, signal.SIGHUP: ign}) == [signal.SIGINT, signal.SIGTERM]
    assert handled({signal.SIGINT: ign, signal.SIGTERM: dfl, signal.SIGHUP: dfl}) == [signal.SIGTERM, signal.SIGHUP]
    assert handled({s: ign for s in INTERRUPT_SIGNALS}) == []


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_the_exit_code_is_the_shells_for_the_signal(sig, code):
    assert exit_code(sig) == code


CHILD = textwrap.dedent("""
    import sys, threading
    from k8s import poll
    from cli.interrupt import cleaning_on_interrupt
    ended = []
    def waiter():
        try:
            poll.until(lambda: False, 60, "nothing", interval=1)
        except poll.Cancelled:
            ended.append(1)
    t = threading.Thread(target=waiter)
    t.start()
    try:
        with cleaning_on_interrupt("the child", sys.argv[1], None):
            try:
                print("ready", flush=True)
                poll.until(lambda: False, 60, "nothing")
            finally:          # a cleanup that waits, as a scenario's does: its wait's Cancelled replaces the signal's
                if sys.argv[2] == "waits":
                    poll.until(lambda: False, 60, "a scenario's cleanup")
    finally:
        t.join(5)
        print("thread ended" if ended else "thread still waiting", flush=True)
""")


@pytest.mark.subprocess
@pytest.mark.parametrize("cleanup", ["waits", "does not wait"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_ends_the_run_and_its_threads_waits_and_exits_with_its_code(sig, cleanup, tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path / "no-such-kubeconfig"), cleanup], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=as_from_a_terminal)
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(sig)
    out = proc.communicate(timeout=30)[0]
    assert proc.returncode == 128 + sig, out
    assert f"the child: interrupted ({signal.Signals(sig).name})" in out, out
    assert "thread ended" in out, out
    assert f"`{CLEAN_COMMAND}` removes what is left" in out, out      # its cluster did not answer: it says so


@pytest.mark.subprocess
def test_a_command_that_makes_nothing_says_so_and_exits_as_interrupted(tmp_path):
    child = CHILD.replace('cleaning_on_interrupt("the child", sys.argv[1], None)',
                          'cleaning_on_interrupt("the child", sys.argv[1], None, makes=False)')
    proc = subprocess.Popen([sys.executable, "-c", child, str(tmp_path / "no-such-kubeconfig"), "waits"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=as_from_a_terminal)
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=30)[0]
    assert proc.returncode == 143, out
    assert "the child: interrupted (SIGTERM); it made nothing" in out and "removing" not in out, out


SLOW_UNDO = '''
import sys, time
from cli.interrupt import on_interrupt

def undo(command, signum):
    print("undoing", flush=True)
    time.sleep(30)

with on_interrupt("the child", undo, cleans=sys.argv[1]):
    print("ready", flush=True)
    time.sleep(60)
'''


@pytest.mark.subprocess
@pytest.mark.parametrize("cleans", ["tau-demo fleet clean", ""])
def test_a_second_ctrl_c_abandons_the_undo_and_names_the_command_that_cleans(cleans):
    proc = subprocess.Popen([sys.executable, "-c", SLOW_UNDO, cleans], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, preexec_fn=as_from_a_terminal)
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGTERM)
    assert proc.stdout.readline().strip() == "undoing"
    proc.send_signal(signal.SIGTERM)                   # ignored while undoing
    proc.send_signal(signal.SIGINT)                    # a second Ctrl-C abandons it
    out = proc.communicate(timeout=30)[0]
    assert proc.returncode == 143, out                 # the first signal's code
    want = "  the child: cleanup abandoned" + (f": `{cleans}` removes what is left" if cleans else "")
    assert out.rstrip().splitlines()[-1] == want, out


def _nohup() -> None:
    as_from_a_terminal()
    signal.signal(signal.SIGHUP, signal.SIG_IGN)      # what `nohup` does before it starts the command


@pytest.mark.subprocess
def test_a_command_started_under_nohup_runs_on_when_its_terminal_closes_and_is_interrupted_by_sigterm(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path / "no-such-kubeconfig"), "does not wait"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=_nohup)
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGHUP)
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(1.5)                                 # SIGHUP ignored, as nohup asked: it runs on
    proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=30)[0]
    assert proc.returncode == 143, out
    assert "the child: interrupted (SIGTERM)" in out and "SIGHUP" not in out, out
