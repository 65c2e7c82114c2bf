"""Kubernetes quantities: the grammar, rounding and integer conversions of apimachinery's resource.Quantity.

The cases restate, in our own words, the forms apimachinery's quantity_test.go checks.
"""

from fractions import Fraction as F

import pytest
from kplace.models.quantity import (
    INT64_MAX,
    QuantityError,
    canonical,
    format_quantity,
    milli_value,
    parse_quantity,
    value,
)

KI, MI, GI, TI, PI, EI = (2**10 * 1024**i for i in range(6))

PARSES = [
    # (case, input, exact value)
    ("a bare zero is zero", "0", F(0)),
    ("zero with a nano suffix is zero", "0n", F(0)),
    ("zero with a binary suffix is zero", "0Ki", F(0)),
    ("a plain integer needs no suffix", "1", F(1)),
    ("Ki is 1024", "1Ki", F(KI)),
    ("Mi is 1024 squared", "7Mi", F(7 * MI)),
    ("Gi is 1024 cubed", "6Gi", F(6 * GI)),
    ("Ti is 1024 to the fourth", "5Ti", F(5 * TI)),
    ("Pi is 1024 to the fifth", "4Pi", F(4 * PI)),
    ("Ei is 1024 to the sixth", "3Ei", F(3 * EI)),
    ("n is a billionth", "5n", F(5, 10**9)),
    ("u is a millionth", "4u", F(4, 10**6)),
    ("m is a thousandth", "3m", F(3, 1000)),
    ("k is a thousand (lower case)", "8k", F(8000)),
    ("M is a million", "7M", F(7 * 10**6)),
    ("G is a billion", "6G", F(6 * 10**9)),
    ("T is 10 to the 12", "5T", F(5 * 10**12)),
    ("P is 10 to the 15", "2P", F(2 * 10**15)),
    ("E alone is the exa suffix", "1E", F(10**18)),
    ("a decimal quantity above int64 is not capped", "12E", F(12 * 10**18)),
    ("a lower-case exponent", "1e3", F(1000)),
    ("an upper-case exponent", "1E6", F(10**6)),
    ("a negative exponent", "1E-3", F(1, 1000)),
    ("an exponent with an explicit plus", "1.3E+6", F(1_300_000)),
    ("a fraction with an exponent", "1.2e3", F(1200)),
    ("a zero exponent", "0.5e0", F(1, 2)),
    ("a fraction with a decimal suffix", "100.035k", F(100035)),
    ("a fraction with a mega suffix", "10.035M", F(10_035_000)),
    ("a fraction with a binary suffix", "100.035Ki", F(100035 * 1024, 1000)),
    ("half a mebibyte", "0.5Mi", F(MI // 2)),
    ("a plain decimal fraction", "0.5", F(1, 2)),
    ("trailing zeros in the fraction do not matter", "0.50000", F(1, 2)),
    ("a number may start with the point", ".001", F(1, 1000)),
    ("a number may end with the point", "1.", F(1)),
    ("a number ending with the point may take a suffix", "1.G", F(10**9)),
    ("a lone point is zero, as apimachinery's scanner reads it", ".", F(0)),
    ("a negative lone point is zero", "-.", F(0)),
    ("a leading plus is allowed", "+1.5", F(3, 2)),
    ("a leading minus makes the value negative", "-1.5Gi", F(-3 * GI, 2)),
    ("a value below one nano unit is rounded up to 1n", "0.0000000001", F(1, 10**9)),
    ("a fractional nano is rounded up", "3.001n", F(4, 10**9)),
    ("a tiny exponent form rounds up too", "0.5e-9", F(1, 10**9)),
    ("a negative tiny value rounds away from zero", "-0.1n", F(-1, 10**9)),
    ("a tiny binary value rounds up to whole nanos", "0.000000000001Ki", F(2, 10**9)),
    ("rounding applies to the ninth decimal", "0.00000012345", F(124, 10**9)),
    ("a binary value beyond int64 is capped at 2^63-1", "9Ei", F(INT64_MAX)),
    ("a huge binary mantissa is capped too", "9223372036854775807Ki", F(INT64_MAX)),
    ("surrounding whitespace is trimmed, as the JSON decoder does", " 100m ", F(1, 10)),
    ("an astronomically small exponent still rounds up to 1n", "1e-1000", F(1, 10**9)),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in PARSES], ids=[c[0] for c in PARSES])
def test_a_quantity_string_parses_to_its_exact_value(text, expected):
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(4, F(4)), (0.5, F(1, 2)), (1e-10, F(1, 10**9)), (2**70, F(2**70)), (None, F(0))],
    ids=[
        "a JSON integer is taken exactly",
        "a JSON float is read from its shortest decimal form",
        "a tiny JSON float is rounded up to one nano",
        "a big JSON integer is kept exactly",
        "null is zero, as apimachinery's UnmarshalJSON treats it",
    ],
)
def test_bare_json_and_yaml_numbers_are_quantities(raw, expected):
    assert parse_quantity(raw) == expected


INVALID = [
    ("two decimal points", "1.1.M"),
    ("a sign in the middle", "1+1.0M"),
    ("mi is not a suffix", "0.1mi"),
    ("am is not a suffix", "0.1am"),
    ("letters only", "aoeu"),
    ("i alone is not a suffix", ".5i"),
    ("an integer with i", "1i"),
    ("a negative with i", "-3.01i"),
    ("an exponent with no digits", "-3.01e-"),
    ("a lower-case e with nothing after it", "1e"),
    ("an exponent outside int32", "1e4294967297"),
    ("the empty string", ""),
    ("K is not a suffix (kilo is lower case)", "1K"),
    ("ki is not a suffix (kibi is Ki)", "1ki"),
    ("a fractional exponent", "1e3.5"),
    ("a unit written after a space", "1 Gi"),
    ("a made-up suffix", "12x"),
    ("a percentage", "50%"),
]


@pytest.mark.parametrize("text", [c[1] for c in INVALID], ids=[c[0] for c in INVALID])
def test_a_malformed_quantity_is_rejected(text):
    with pytest.raises(QuantityError, match="is not a valid quantity"):
        parse_quantity(text)


@pytest.mark.parametrize(
    "raw", [True, [1], {"a": 1}, float("inf"), float("nan")],
    ids=["a boolean", "a list", "a mapping", "infinity", "not a number"],
)
def test_values_that_are_not_strings_or_numbers_are_rejected(raw):
    with pytest.raises(QuantityError):
        parse_quantity(raw)


CONVERSIONS = [
    # (case, text, value(), milli_value())
    ("a whole number converts exactly", "2", 2, 2000),
    ("millicores convert exactly to milli", "1500m", 2, 1500),
    ("value rounds a fraction up", "1.2", 2, 1200),
    ("milli_value rounds sub-milli amounts up", "1500u", 1, 2),
    ("one nano is one milli when rounded up", "1n", 1, 1),
    ("negative values round towards positive infinity", "-1.5", -1, -1500),
    ("memory in Mi converts to bytes", "512Mi", 512 * MI, 512 * MI * 1000),
    ("an exponent form converts", "1e3", 1000, 1_000_000),
    ("a value beyond int64 saturates", "12E", INT64_MAX, INT64_MAX),
]


@pytest.mark.parametrize(("text", "val", "milli"), [c[1:] for c in CONVERSIONS], ids=[c[0] for c in CONVERSIONS])
def test_integer_conversions_round_up_as_kubernetes_does(text, val, milli):
    q = parse_quantity(text)
    assert value(q) == val
    assert milli_value(q) == milli


def test_cpu_is_counted_in_millicores_and_everything_else_in_units():
    q = parse_quantity("250m")
    assert canonical("cpu", q) == 250
    assert canonical("memory", parse_quantity("1Gi")) == GI
    assert canonical("nvidia.com/gpu", parse_quantity("2")) == 2
    assert canonical("ephemeral-storage", q) == 1  # a quarter byte is one byte, rounded up


@pytest.mark.parametrize(
    ("resource", "amount", "text"),
    [("cpu", 1500, "1500m"), ("cpu", 2000, "2"), ("memory", 512 * MI, "512Mi"), ("memory", 3 * GI, "3Gi"),
     ("memory", 100, "100"), ("pods", 110, "110"), ("memory", 15 * GI + 1, "15.0Gi")],
    ids=["fractional cpu shows millicores", "whole cpu shows cores", "memory shows Mi", "memory shows Gi",
         "small memory shows bytes", "counts show as integers", "large inexact memory shows one decimal"],
)
def test_amounts_are_shown_in_the_units_people_write(resource, amount, text):
    assert format_quantity(resource, amount) == text
