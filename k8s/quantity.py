"""Kubernetes resource quantities ("96", "500m", "900Gi", "1.5", "2e3") as integer milli-units.

The grammar is the one of k8s.io/apimachinery `resource.ParseQuantity`: a signed decimal number
followed by at most one binary suffix (Ki..Ei), decimal suffix (n, u, m, "", k, M..E) or a
decimal exponent (e3, E-2).  Like `Quantity.MilliValue()`, values finer than one milli-unit are
rounded up.  Examples: cpu "500m" -> 500, "2" -> 2000; memory "1Ki" -> 1024000.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

# A Kubernetes quantity's MilliValue() is an int64; anything larger is not a usable amount.
MAX_MILLI = 2**63 - 1

# Exponents beyond this are rejected outright instead of building a gigantic Fraction.
_MAX_EXPONENT = 1000

_SUFFIXES: dict[str, Fraction] = {
    "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30),
    "Ti": Fraction(2**40), "Pi": Fraction(2**50), "Ei": Fraction(2**60),
    "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 10**3), "": Fraction(1),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9),
    "T": Fraction(10**12), "P": Fraction(10**15), "E": Fraction(10**18),
}

_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)|[eE](?P<exponent>[+-]?\d+))?"
)

_HINT = "expected a number with an optional suffix or exponent, e.g. 500m, 2, 1.5, 900Gi, 2e3"


def parse_quantity_exact(value: str | int | float) -> Fraction:
    """The exact value of a quantity, in base units (cores, bytes, devices)."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"invalid quantity {value!r}: {_HINT}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"invalid quantity {value!r}: {_HINT}")
        value = repr(value)
    if not isinstance(value, str):
        raise ValueError(f"invalid quantity {value!r}: {_HINT}")
    m = _QUANTITY.fullmatch(value)
    if not m:
        raise ValueError(f"invalid quantity {value!r}: {_HINT}")
    number = Fraction(m["number"])
    if m["exponent"] is not None:
        exponent = int(m["exponent"])
        if abs(exponent) > _MAX_EXPONENT:
            raise ValueError(f"invalid quantity {value!r}: exponent {exponent} is out of range")
        return number * Fraction(10) ** exponent
    return number * _SUFFIXES[m["suffix"] or ""]


def parse_quantity(value: str | int | float) -> int:
    """A quantity in milli-units, rounded up like `Quantity.MilliValue()`; ValueError on garbage.

    Negative and very large values parse; callers decide whether they make sense (see MAX_MILLI).
    """
    if isinstance(value, str):
        return _parse_text(value)
    return math.ceil(parse_quantity_exact(value) * 1000)


@lru_cache(maxsize=4096)
def _parse_text(value: str) -> int:
    """parse_quantity of a string, memoized: the fake autoscaler's loop reads the same few quantities
    (every node's allocatable, every pod's requests) thousands of times a second at scale."""
    return math.ceil(parse_quantity_exact(value) * 1000)


_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def format_quantity(v: Fraction) -> str:
    """An exact value back as a quantity: 16, 64Gi, 500m."""
    if v.denominator == 1:
        n = int(v)
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            if n >= _BINARY[suffix] and n % _BINARY[suffix] == 0:
                return f"{n // _BINARY[suffix]}{suffix}"
        return str(n)
    milli = v * 1000
    if milli.denominator == 1:
        return f"{int(milli)}m"
    return f"{float(v):g}"


def format_milli(resource: str, milli: int) -> str:
    """A readable amount of `resource` given in milli-units: 16, 500m, 64Gi (binary suffixes for memory)."""
    if milli % 1000:
        return f"{milli}m"
    value = milli // 1000
    if value and (resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")):
        for suffix, power in (("Ei", 60), ("Pi", 50), ("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)):
            if value % (1 << power) == 0:
                return f"{value >> power}{suffix}"
    return str(value)
