"""Kubernetes resource quantities, parsed exactly as apimachinery's `resource.Quantity`.

Grammar (k8s.io/apimachinery/pkg/api/resource):

    quantity  ::= signedNumber suffix
    suffix    ::= binarySI | decimalSI | ('e'|'E') signedInteger
    binarySI  ::= Ki | Mi | Gi | Ti | Pi | Ei           (powers of 1024)
    decimalSI ::= n | u | m | "" | k | M | G | T | P | E (powers of 1000)

Values are kept as exact fractions. Like Kubernetes, a value is first rounded up to a whole nano unit,
and conversions to integers round up: `milli_value` is ⌈q·1000⌉ (cpu), `value` is ⌈q⌉ (everything else).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_RE = re.compile(
    r"^(?P<num>[+-]?(?:\d+\.?\d*|\.\d+))"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|[eE](?P<exp>[+-]?\d+)|(?P<dec>[numkMGTPE]?))$"
)
_NANO = Fraction(1, 10**9)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(raw: str | int | float) -> Fraction:
    """Parse a quantity (`'500Mi'`, `'0.5'`, `'100m'`, `'1e3'`, or a bare YAML/JSON number)."""
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        raise QuantityError(f"{raw!r} is not a valid quantity")
    if isinstance(raw, int):
        return Fraction(raw)
    text = repr(raw) if isinstance(raw, float) else raw.strip()
    m = _RE.match(text)
    if m is None:
        raise QuantityError(f"{raw!r} is not a valid quantity")
    number = Fraction(m["num"])
    if m["bin"]:
        value = number * _BINARY[m["bin"]]
    elif m["exp"] is not None:
        exponent = int(m["exp"])
        if abs(exponent) > 100:
            raise QuantityError(f"{raw!r} is not a valid quantity: exponent out of range")
        value = number * Fraction(10) ** exponent
    else:
        value = number * _DECIMAL[m["dec"]]
    # Kubernetes keeps at most nano precision and rounds up (away from zero).
    nanos = value / _NANO
    if nanos.denominator != 1:
        nanos = Fraction(math.ceil(nanos) if nanos > 0 else math.floor(nanos))
    return nanos * _NANO


def value(q: Fraction) -> int:
    """`Quantity.Value()`: the value rounded up to an integer."""
    return math.ceil(q)


def milli_value(q: Fraction) -> int:
    """`Quantity.MilliValue()`: the value in thousandths, rounded up."""
    return math.ceil(q * 1000)


def canonical(resource: str, q: Fraction) -> int:
    """The integer the scheduler works in: millicores for cpu, `Value()` for every other resource."""
    return milli_value(q) if resource == "cpu" else value(q)


def format_quantity(resource: str, amount: int) -> str:
    """Human form of a canonical amount: `1500m`, `2`, `512Mi`, `3Gi`."""
    if resource == "cpu":
        return f"{amount // 1000}" if amount % 1000 == 0 else f"{amount}m"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for suffix, mult in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if amount >= mult and amount % mult == 0:
                return f"{amount // mult}{suffix}"
            if amount >= mult * 10:
                return f"{amount / mult:.1f}{suffix}"
    return str(amount)
