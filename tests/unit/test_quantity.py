"""Kubernetes quantities as integer milli-units."""

from __future__ import annotations

import pytest

from demo.k8s.quantity import MAX_MILLI, parse_quantity


@pytest.mark.parametrize("text, milli", [
    ("96", 96_000),
    ("500m", 500),
    ("2", 2_000),
    ("1.5", 1_500),
    (".5", 500),
    ("2e3", 2_000_000),
    ("2E3", 2_000_000),
    ("1e-3", 1),
    ("8", 8_000),
    ("1Ki", 1_024_000),
    ("900Gi", 900 * 2**30 * 1000),
    ("1k", 1_000_000),
    ("1M", 10**9),
    ("1E", 10**21),            # exa, not an exponent
    ("100u", 1),               # finer than a milli-unit rounds up, like MilliValue()
    ("1n", 1),
    ("0", 0),
    ("+3", 3_000),
    ("-1", -1_000),            # syntactically fine; callers reject negatives
    (8, 8_000),                # unquoted YAML numbers
    (1.5, 1_500),
])
def test_parses_to_milli_units(text, milli):
    assert parse_quantity(text) == milli


def test_huge_values_parse_beyond_int64():
    assert parse_quantity("1e30") > MAX_MILLI


@pytest.mark.parametrize("garbage", ["", "abc", "1.2.3", "Gi", "8 ", " 8", "1K", "1gi", "1e", "1Kib", "--1",
                                     "1e99999", None, True, [], float("inf")])
def test_garbage_raises_a_clear_value_error(garbage):
    with pytest.raises(ValueError, match="invalid quantity"):
        parse_quantity(garbage)
