"""Kubernetes resource quantities, parsed exactly as apimachinery's `resource.Quantity`.

Grammar (k8s.io/apimachinery/pkg/api/resource/quantity.go):

    quantity        ::= signedNumber suffix
    signedNumber    ::= number | sign number            sign ::= '+' | '-'
    number          ::= digits | digits '.' digits | digits '.' | '.' digits
    suffix          ::= binarySI | decimalExponent | decimalSI
    binarySI        ::= Ki | Mi | Gi | Ti | Pi | Ei      (powers of 1024)
    decimalSI       ::= n | u | m | "" | k | M | G | T | P | E   (powers of 1000)
    decimalExponent ::= ('e' | 'E') signedInteger       (|exponent| ≤ 2³¹−1)

Quirks kept from apimachinery's scanner: a number may be just `.` or a bare sign (both parse as 0), `1.G` is
accepted, `E` alone is the exa suffix while `e` alone is an error, and there is no whitespace inside the
string (the JSON/YAML decoder trims it around the value; `null` is zero).

Values are kept as exact fractions. Like Kubernetes, a non-zero value is rounded *away from zero* to a whole
nano unit at parse time (`0.1n` → `1n`, `-0.1n` → `-1n`), and a binary-suffixed value is capped at 2⁶³−1
(`9Ei` → 9223372036854775807). Conversions to integers round up (`ceil`): `milli_value` is ⌈q·1000⌉ (cpu) and
`value` is ⌈q⌉ (everything else); kplace saturates them to the int64 range, where Go would wrap.
"""

from __future__ import annotations

import math
from fractions import Fraction

_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
_NANO = Fraction(1, 10**9)
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
_INT32_MAX = 2**31 - 1
# Exponents beyond this are computed as if they were this: the value is then either far beyond int64 (and
# saturates wherever it is used) or far below one nano unit (and rounds to ±1n), exactly as with the real one.
_EXP_CLAMP = 400
_CACHE: dict[str, Fraction] = {}


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def _invalid(raw: object, why: str = "") -> QuantityError:
    return QuantityError(f"{raw!r} is not a valid quantity" + (f": {why}" if why else ""))


def _scan(text: str) -> tuple[bool, str, str, str] | None:
    """apimachinery's parseQuantityString: (positive, integer digits, fraction digits, suffix) or None."""
    pos, end, positive = 0, len(text), True
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos = 1
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos]
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos != end:
        return None
    return positive, num, denom, text[suffix_start:]


def parse_quantity(raw: str | int | float | None) -> Fraction:
    """Parse a quantity (`'500Mi'`, `'0.5'`, `'100m'`, `'1e3'`, a bare YAML/JSON number, or null → 0)."""
    if raw is None:
        return Fraction(0)
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        raise _invalid(raw)
    if isinstance(raw, int):
        return Fraction(raw)
    if isinstance(raw, float):
        if not math.isfinite(raw):
            raise _invalid(raw)
        text = repr(raw)
    else:
        text = raw.strip()
    cached = _CACHE.get(text)
    if cached is not None:
        return cached
    result = _parse(text, raw)
    if len(_CACHE) < 65536:
        _CACHE[text] = result
    return result


def _parse(text: str, raw: object) -> Fraction:
    if not text:
        raise _invalid(raw)
    scanned = _scan(text)
    if scanned is None:
        raise _invalid(raw)
    positive, num, denom, suffix = scanned
    mantissa = int((num or "0") + denom)
    scale = -len(denom)
    binary = suffix in _BINARY
    if binary:
        value = Fraction(mantissa << _BINARY[suffix], 10 ** -scale)
    else:
        if suffix in _DECIMAL:
            exponent = _DECIMAL[suffix]
        elif len(suffix) > 1 and suffix[0] in "eE" and _is_signed_int(suffix[1:]):
            exponent = int(suffix[1:])
            if abs(exponent) > _INT32_MAX:
                raise _invalid(raw, "exponent out of range")
            exponent = max(-_EXP_CLAMP, min(_EXP_CLAMP, exponent))
        else:
            raise _invalid(raw, f"unknown suffix {suffix!r}")
        exponent += scale
        value = Fraction(mantissa * 10**exponent) if exponent >= 0 else Fraction(mantissa, 10**-exponent)
    # Non-zero values are rounded up (in magnitude) to a whole nano unit.
    nanos = value / _NANO
    if nanos.denominator != 1:
        value = math.ceil(nanos) * _NANO
    if binary and value > INT64_MAX:
        value = Fraction(INT64_MAX)
    return value if positive else -value


def _is_signed_int(text: str) -> bool:
    digits = text[1:] if text[:1] in ("+", "-") else text
    return bool(digits) and all(c in _DIGITS for c in digits)


def _saturate(v: int) -> int:
    return INT64_MAX if v > INT64_MAX else INT64_MIN if v < INT64_MIN else v


def value(q: Fraction) -> int:
    """`Quantity.Value()`: the value rounded up to an integer."""
    return _saturate(math.ceil(q))


def milli_value(q: Fraction) -> int:
    """`Quantity.MilliValue()`: the value in thousandths, rounded up."""
    return _saturate(math.ceil(q * 1000))


def canonical(resource: str, q: Fraction) -> int:
    """The integer the scheduler works in: millicores for cpu, `Value()` for every other resource."""
    return milli_value(q) if resource == "cpu" else value(q)


def quantity_text(q: Fraction) -> str:
    """An exact quantity string that parses back to `q`: `2`, `1500m`, `250u`, `3n` (no binary suffixes)."""
    for scale, suffix in ((1, ""), (1000, "m"), (10**6, "u"), (10**9, "n")):
        v = q * scale
        if v.denominator == 1:
            return f"{v.numerator}{suffix}"
    return f"{math.ceil(q * 10**9)}n"  # below nano precision: rounded up, as parsing would


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
