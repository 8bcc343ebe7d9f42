"""Every unit test starts from the same state of the pure modules' caches.

fake_ca.params memoizes the parsing of a request's parameters, k8s.quantity that of quantity
strings (lru_cache).  Without a fresh cache a
test would read results computed by an earlier test, and in the mutation stage, where each mutant's
tests run in a fork of the process that already ran every test once, the parsing code of a mutant would
never run at all.

In a mutant's run (mutmut forks a process per mutant and runs the tests that reach the mutated function, with
`-x`), those tests run fastest first, by the durations mutmut recorded for them: a mutant that a quick test kills is
told before the slow tests run.  The verdict is the same in any order (killed: a test failed).
"""

from __future__ import annotations

import math
import os
import sys

import pytest

from k8s import quantity
from fake_ca import params


@pytest.fixture(autouse=True)
def _fresh_parameter_cache():
    params._parse.cache_clear()
    quantity._parse_text.cache_clear()
    yield


def mutmut_durations() -> dict[str, float] | None:
    """In a mutant's own run, the seconds mutmut's stats recorded per test (in the process it forked from: nothing
    to read); else None (the unit stage, and mutmut's own runs of every test)."""
    if "__mutmut_" not in os.environ.get("MUTANT_UNDER_TEST", ""):
        return None
    state = sys.modules.get("mutmut.state")
    return state.state().duration_by_test if state else None


def pytest_collection_modifyitems(items):
    durations = mutmut_durations()
    if durations:
        items.sort(key=lambda item: durations.get(item.nodeid, math.inf))
