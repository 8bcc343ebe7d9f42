"""mutmut 3.8.1's `run`, each mutant's tests run in a pytest session collected once, not in a new pytest.main().

    .venv/bin/python tests/mutation/held.py run --max-children 2 [NAME...]     # what report.py runs

mutmut forks one process per mutant from a process that has imported every test module and run every test
once, and each fork calls pytest.main() with the tests that run the mutated function.  That call costs about
85 ms before the first test runs (measured at 9188f1f: reading the options, registering some 37 plugins,
finding their fixtures, collecting the test files again), and a mutant's tests take less than that for most
of the gate's 16,840 mutants: the fixed cost was about 60% of the gate.

Here the main process, just before the first fork, configures pytest with the very arguments mutmut's
children use (PytestRunner: `--rootdir=. --tb=native -x -q -p no:randomly -p no:random-order`, the test
selection, `pytest_add_cli_args`), starts its session and collects every test of the selection once, as
pytest.main() does up to its test loop.  Each mutant's fork then runs pytest's own test loop
(`pytest_runtestloop`, with every plugin's wrappers) over its tests, in mutmut's order, and pytest's own
session finish, and maps the outcome to pytest.main()'s exit codes: 0 passed, 1 a test failed (`-x`
stops at the first), 2 interrupted, 3 an internal error.  What a fork inherits is a configured,
collected session that has run no test: the fixtures of every scope are set up in the fork, as before.  The
fork gets a global output capture of its own (the one the main process started would be shared by two
forks running side by side) and its output goes where mutmut sends it.

Anything else mutmut does is its own: the mutants, the stats run that matches tests to functions, the clean
run and the forced failure (each a pytest.main() of its own, before the session is made), the limits of CPU
and wall-clock time, the verdicts.  Where the held session cannot answer as pytest.main() would (a test
mutmut names that the session did not collect, a collection that failed), that mutant's fork calls
pytest.main() as mutmut does.  It patches mutmut's PytestRunner and ForkRunner, so it refuses any mutmut
but 3.8.1, and mutmut's fork server (`process_isolation = "forkserver"`), which it does not patch.
"""

from __future__ import annotations

import os
import sys

MUTMUT = "3.8.1"            # the version whose runner this patches (requirements.lock pins it)
PYTEST_MAJOR = "9."         # the pytest whose session it drives


class HeldSession:
    """A configured pytest session with the selection collected, made once in mutmut's main process."""

    def __init__(self, config, session, rootpath: str) -> None:
        self.config, self.session, self.rootpath = config, session, rootpath
        self.by_id = {item.nodeid: item for item in session.items}

    @classmethod
    def collect(cls, args: list[str], rootpath: str) -> HeldSession | None:
        """pytest.main(args) up to its test loop, in `rootpath` (mutmut's mutants/); None when the collection
        failed (then every fork calls pytest.main() itself, as mutmut does)."""
        import pytest
        from _pytest.config import _prepareconfig
        from _pytest.main import Session
        os.environ["PYTEST_VERSION"] = pytest.__version__
        here = os.getcwd()
        os.chdir(rootpath)
        try:
            config = _prepareconfig(args, [], prog="pytest.main()")
            session = Session.from_config(config)
            session.exitstatus = pytest.ExitCode.OK
            config._do_configure()
            config.hook.pytest_sessionstart(session=session)
            config.hook.pytest_collection(session=session)
        finally:
            os.chdir(here)
        if session.testsfailed:              # a collection error: pytest.main() would stop before any test
            config._ensure_unconfigure()
            return None
        return cls(config, session, rootpath)

    def items(self, tests: list[str]) -> list | None:
        """The collected items of these test ids, in this order, each once; None if one is not collected."""
        out, seen = [], set()
        for t in tests:
            item = self.by_id.get(t)
            if item is None:
                return None
            if t not in seen:
                seen.add(t)
                out.append(item)
        return out

    def run(self, items: list, quiet: bool = True) -> int:
        """In a fork: pytest's test loop over `items`, then its session finish; pytest.main()'s exit code.
        `quiet`: what the fork writes goes nowhere (the session's terminal writes to the main process's output)."""
        import pytest
        from _pytest.outcomes import Exit
        config, session = self.config, self.session
        os.chdir(self.rootpath)
        capman = config.pluginmanager.getplugin("capturemanager")
        if capman is not None:               # the main process's capture, given back its output...
            capman.stop_global_capturing()
        if quiet:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
        if capman is not None:               # ...and one of this fork's own, started and suspended as pytest.main()'s
            capman.start_global_capturing()
            capman.suspend_global_capture()
        session.items = items
        session.testscollected = len(items)
        try:
            config.hook.pytest_runtestloop(session=session)
            status = pytest.ExitCode.TESTS_FAILED if session.testsfailed else (
                pytest.ExitCode.OK if items else pytest.ExitCode.NO_TESTS_COLLECTED)
        except session.Failed:               # -x: the first failure stops the loop
            status = pytest.ExitCode.TESTS_FAILED
        except (KeyboardInterrupt, Exit) as e:
            code = getattr(e, "returncode", None)
            status = code if code is not None else pytest.ExitCode.INTERRUPTED
        except BaseException:
            status = pytest.ExitCode.INTERNAL_ERROR
        session.exitstatus = status
        try:
            config.hook.pytest_sessionfinish(session=session, exitstatus=status)
        except Exit as e:
            if e.returncode is not None:
                status = e.returncode
        except BaseException:
            status = pytest.ExitCode.INTERNAL_ERROR
        return int(status)

    def close(self) -> None:
        capman = self.config.pluginmanager.getplugin("capturemanager")
        if capman is not None:
            capman.stop_global_capturing()
        self.config._ensure_unconfigure()


def patch() -> None:
    """Make mutmut's fork runner run each mutant's tests in a session held by its main process."""
    from importlib.metadata import version
    import pytest
    if version("mutmut") != MUTMUT or not pytest.__version__.startswith(PYTEST_MAJOR):
        raise SystemExit(f"[mutation] tests/mutation/held.py drives mutmut {MUTMUT}'s runner and pytest "
                         f"{PYTEST_MAJOR}x; here are mutmut {version('mutmut')} and pytest {pytest.__version__}: "
                         f"check it against their code before changing its pins")
    from mutmut.configuration import ProcessIsolation, config
    from mutmut.runners.harness import PytestRunner
    from mutmut.workers.isolation import ForkRunner

    held: list[HeldSession] = []            # the one session, once the first fork is near
    plain_run_tests = PytestRunner.run_tests
    plain_startup, plain_shutdown = ForkRunner.startup, ForkRunner.shutdown

    def startup(self) -> None:
        if config().process_isolation != ProcessIsolation.FORK:
            raise SystemExit("[mutation] tests/mutation/held.py patches mutmut's fork runner only, not its fork server")
        runner = self.test_runner
        # what a fork's pytest.main() gets (PytestRunner.execute_pytest), the whole selection for its tests
        args = ["--rootdir=.", "--tb=native"] + runner._pytest_args_regular_run([]) + runner._pytest_add_cli_args
        session = HeldSession.collect(args, os.path.abspath("mutants"))
        if session is None:
            print("[mutation] the held session's collection failed: each mutant runs its own pytest.main()", flush=True)
        else:
            held.append(session)
            print(f"[mutation] one pytest session holds the {len(session.by_id)} tests: each mutant's run is "
                  f"a fork of it (tests/mutation/held.py)", flush=True)
        plain_startup(self)                   # gc.freeze(): the forks share the session's memory

    def shutdown(self) -> None:
        plain_shutdown(self)
        while held:
            held.pop().close()

    def run_tests(self, *, mutant_name, tests):
        items = held[0].items(list(tests)) if held and mutant_name is not None else None
        if items is None:
            return plain_run_tests(self, mutant_name=mutant_name, tests=tests)
        return held[0].run(items, quiet=not config().debug)   # as mutmut's own forks: their output nowhere

    PytestRunner.run_tests = run_tests
    ForkRunner.startup, ForkRunner.shutdown = startup, shutdown


def main() -> None:
    patch()
    from mutmut.__main__ import cli
    sys.argv[0] = "mutmut"
    cli()


if __name__ == "__main__":
    main()
