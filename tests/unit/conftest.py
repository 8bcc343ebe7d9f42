"""Every unit test starts from the same state of the pure modules' caches.

fake_ca.params memoizes the parsing of a request's parameters, k8s.quantity that of quantity
strings (lru_cache).  Without a fresh cache a
test would read results computed by an earlier test, and in the mutation stage, where each mutant's
tests run in a fork of the process that already ran every test once, the parsing code of a mutant would
never run at all.
"""

from __future__ import annotations

import pytest

from k8s import quantity
from fake_ca import params


@pytest.fixture(autouse=True)
def _fresh_parameter_cache():
    params._parse.cache_clear()
    quantity._parse_text.cache_clear()
    yield
