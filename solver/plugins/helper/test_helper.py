import numpy as np
import pytest
from kplace.solver.plugins.helper import broken_linear, default_normalize_score, go_div

NORMALIZE = [
    ("All-zero scores stay zero when not reversed.", [0, 0], False, [0, 0]),
    ("All-zero scores become the maximum when reversed.", [0, 0], True, [100, 100]),
    ("Scores scale by the maximum with integer division.", [1, 2, 3], False, [33, 66, 100]),
    ("Reversed scores subtract the truncated scaled value from the maximum.", [1, 2, 3], True, [67, 34, 0]),
]


@pytest.mark.parametrize(("name", "raw", "reverse", "want"), NORMALIZE, ids=[c[0] for c in NORMALIZE])
def test_default_normalize_score(name, raw, reverse, want):
    assert default_normalize_score(np.array(raw), reverse=reverse).tolist() == want


def test_go_division_truncates_toward_zero():
    assert go_div(np.array([7, -7, 7, -7]), np.array([2, 2, -2, -2])).tolist() == [3, -3, -3, 3]


SHAPE = [
    ("Below the first point the function is the first score.", [(10, 20), (50, 100)], [0, 10], [20, 20]),
    ("Above the last point the function is the last score.", [(10, 20), (50, 100)], [51, 100], [100, 100]),
    ("Between points the function interpolates with integer division.", [(0, 0), (30, 100)], [10, 20], [33, 66]),
    ("A falling segment truncates toward zero rather than flooring.", [(0, 100), (30, 0)], [10, 20], [67, 34]),
    ("A single point is constant.", [(50, 70)], [0, 50, 100], [70, 70, 70]),
]


@pytest.mark.parametrize(("name", "shape", "p", "want"), SHAPE, ids=[c[0] for c in SHAPE])
def test_broken_linear(name, shape, p, want):
    assert broken_linear(shape, np.array(p)).tolist() == want
