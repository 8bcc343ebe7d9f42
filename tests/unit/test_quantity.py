"""Kubernetes quantities as integer milli-units."""

from __future__ import annotations

from fractions import Fraction

import pytest

from k8s.quantity import MAX_MILLI, format_milli, format_quantity, parse_quantity, parse_quantity_exact


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


def test_exponents_up_to_1000_parse_and_larger_ones_are_refused():
    assert parse_quantity("1e1000") == 10**1003
    assert parse_quantity("1e-1000") == 1           # rounded up to one milli-unit
    with pytest.raises(ValueError, match=r"^invalid quantity '1e1001': exponent 1001 is out of range$"):
        parse_quantity("1e1001")
    with pytest.raises(ValueError, match=r"^invalid quantity '1e-1001': exponent -1001 is out of range$"):
        parse_quantity("1e-1001")


@pytest.mark.parametrize("value, text", [
    (Fraction(0), "0"),
    (Fraction(16), "16"),
    (Fraction(1000), "1000"),                 # decimal thousands stay plain numbers
    (Fraction(2**10), "1Ki"),
    (Fraction(3 * 2**10), "3Ki"),
    (Fraction(2**20), "1Mi"),
    (Fraction(2**30), "1Gi"),
    (Fraction(512 * 2**30), "512Gi"),
    (Fraction(2**40), "1Ti"),
    (Fraction(2**50), "1Pi"),
    (Fraction(2**60), "1Ei"),
    (Fraction(2**61), "2Ei"),
    (Fraction(2**10 + 1), "1025"),
    (Fraction(1, 2), "500m"),
    (Fraction(3, 2), "1500m"),
    (Fraction(1, 3000), "0.000333333"),       # finer than a milli-unit: a plain decimal
])
def test_format_quantity_gives_the_shortest_exact_form(value, text):
    assert format_quantity(value) == text
    if value != Fraction(1, 3000):
        assert parse_quantity_exact(text) == value     # and it reads back as the same amount


@pytest.mark.parametrize("resource, milli, text", [
    ("cpu", 500, "500m"),
    ("cpu", 16_000, "16"),
    ("cpu", 1_500, "1500m"),
    ("nvidia.com/gpu", 1024 * 1000, "1024"),          # binary suffixes only for byte amounts
    ("memory", 0, "0"),
    ("memory", 1000 * 1000, "1000"),
    ("memory", 2**10 * 1000, "1Ki"),
    ("memory", 3 * 2**10 * 1000, "3Ki"),
    ("memory", 2**20 * 1000, "1Mi"),
    ("memory", 64 * 2**30 * 1000, "64Gi"),
    ("memory", 2**40 * 1000, "1Ti"),
    ("memory", 2**50 * 1000, "1Pi"),
    ("memory", 2**60 * 1000, "1Ei"),
    ("memory", 2**30 * 1000 + 1, "1073741824001m"),
    ("ephemeral-storage", 2**30 * 1000, "1Gi"),
    ("hugepages-2Mi", 2**21 * 1000, "2Mi"),
])
def test_format_milli_is_readable_per_resource(resource, milli, text):
    assert format_milli(resource, milli) == text
