"""The held pytest session of the mutation gate (tests/mutation/held.py): a fork of it answers as pytest.main().

Each case runs in a child Python (a second pytest configuration would take this process's output capture),
on a small project of its own: a session fixture that counts its set-ups, a failing test, a test that reads
`capsys`, a module fixture, a test that skips.  For each selection of test ids, the exit code of a fork of the
held session must be pytest.main()'s for the same ids with mutmut's own arguments, and the tests it ran must be
the ones pytest.main() ran, in the same order.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

PROJECT = {
    "tests/conftest.py": """
        import os, pytest
        @pytest.fixture(scope="session")
        def counted():
            with open(os.environ["RAN"], "a") as f:
                f.write("session-setup\\n")
            yield
        @pytest.fixture(autouse=True)
        def _log(request):
            with open(os.environ["RAN"], "a") as f:
                f.write(request.node.nodeid + "\\n")
    """,
    "tests/test_a.py": """
        import pytest
        @pytest.fixture(scope="module")
        def big():
            return list(range(3))
        def test_passes(counted, big):
            assert big == [0, 1, 2]
        def test_fails(counted):
            assert 1 == 2
        def test_prints(capsys):
            print("hello")
            assert capsys.readouterr().out == "hello\\n"
        @pytest.mark.parametrize("n", [1, 2])
        def test_param(n):
            assert n in (1, 2)
        def test_skips():
            pytest.skip("not here")
    """,
    "tests/test_b.py": """
        def test_error_in_setup(missing_fixture):
            pass
        def test_also_passes():
            pass
    """,
}

SELECTIONS = [
    ["tests/test_a.py::test_passes"],
    ["tests/test_a.py::test_passes", "tests/test_a.py::test_prints", "tests/test_a.py::test_param[2]"],
    ["tests/test_a.py::test_fails", "tests/test_a.py::test_passes"],          # -x: stops at the failure
    ["tests/test_a.py::test_passes", "tests/test_b.py::test_error_in_setup", "tests/test_b.py::test_also_passes"],
    ["tests/test_a.py::test_skips"],
    ["tests/test_b.py::test_also_passes", "tests/test_a.py::test_passes", "tests/test_b.py::test_also_passes"],
]

CHILD = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
import pytest
from tests.mutation.held import HeldSession
root, ran, selections = sys.argv[2], os.environ["RAN"], json.loads(sys.argv[3])
args = ["--rootdir=.", "--tb=native", "-x", "-q", "-p", "no:randomly", "-p", "no:random-order",
        "-p", "no:cacheprovider", "-p", "no:unraisableexception", "-p", "no:threadexception"]

def in_fork(fn):
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY); os.dup2(fd, 1); os.dup2(fd, 2)
        os._exit(int(fn()))
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

def lines():
    with open(ran) as f:
        out = f.read().splitlines()
    open(ran, "w").close()
    return out

os.chdir(root)
plain = []
for tests in selections:
    code = in_fork(lambda: pytest.main(args + tests))
    plain.append((code, lines()))
held = HeldSession.collect(args + ["tests"], root)
collected_ran = lines()              # what the main process ran while collecting: nothing
forked = []
for tests in selections:
    code = in_fork(lambda: held.run(held.items(tests)))
    forked.append((code, lines()))
print(json.dumps({"plain": plain, "held": forked, "collected_ran": collected_ran,
                  "unknown": held.items(["tests/test_a.py::nope"]) is None, "ids": sorted(held.by_id)}))
"""


@pytest.mark.subprocess
def test_a_fork_of_the_held_session_answers_as_pytest_main_for_the_same_tests(tmp_path):
    root = tmp_path / "project"
    for rel, text in PROJECT.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    ran = tmp_path / "ran.txt"
    ran.write_text("")
    out = subprocess.run([sys.executable, "-c", CHILD, str(REPO), str(root), json.dumps(SELECTIONS)],
                         env={"RAN": str(ran), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.splitlines()[-1])
    plain, held = got["plain"], got["held"]
    assert [code for code, _ in plain] == [0, 0, 1, 1, 0, 0]      # the cases mean what they say
    for tests, p, h in zip(SELECTIONS, plain, held):
        assert h == p, f"{tests}: held session {h}, pytest.main() {p}"
    assert got["collected_ran"] == []                             # no fixture, no test ran in the main process
    assert got["unknown"] is True                                 # a test it did not collect: pytest.main() then
    assert "tests/test_a.py::test_param[1]" in got["ids"] and len(got["ids"]) == 8
