"""kube's `BuildBrokenLinearFunction` (piecewise-linear utilisation → score), vectorised."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .normalize_score import go_div


def broken_linear(shape: Sequence[tuple[int, int]], p: np.ndarray) -> np.ndarray:
    """f(p) through the points (utilisation_i, score_i), utilisations strictly increasing.

    f(p) = score_0 for p ≤ u_0; score_{n−1} for p > u_{n−1}; otherwise, with i the first point with p ≤ u_i,
    f(p) = score_{i−1} + (score_i − score_{i−1})·(p − u_{i−1}) / (u_i − u_{i−1}), Go integer division
    (truncated toward zero, which matters on falling segments).
    """
    p = np.asarray(p, dtype=np.int64)
    util = np.array([u for u, _ in shape], dtype=np.int64)
    score = np.array([s for _, s in shape], dtype=np.int64)
    i = np.searchsorted(util, p, side="left")  # first i with util[i] >= p
    out = np.where(i >= len(util), score[-1], score[0]).astype(np.int64)
    mid = (i > 0) & (i < len(util))
    if mid.any():
        j = i[mid]
        du = util[j] - util[j - 1]
        out[mid] = score[j - 1] + go_div((score[j] - score[j - 1]) * (p[mid] - util[j - 1]), du)
    return out
