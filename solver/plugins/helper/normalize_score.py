"""kube's `DefaultNormalizeScore` and Go's integer division, vectorised."""

from __future__ import annotations

import numpy as np

MAX_NODE_SCORE = 100


def go_div(num: np.ndarray | int, den: np.ndarray | int) -> np.ndarray:
    """Go's int64 `/`: the quotient truncated toward zero (numpy's `//` floors). `den` must be non-zero."""
    num = np.asarray(num, dtype=np.int64)
    den = np.asarray(den, dtype=np.int64)
    q = np.abs(num) // np.abs(den)
    return np.where((num < 0) != (den < 0), -q, q)


def default_normalize_score(
    scores: np.ndarray, reverse: bool = False, max_priority: int = MAX_NODE_SCORE
) -> np.ndarray:
    """Scale raw scores to 0..max_priority by the maximum raw score.

    m = max(scores, 0). If m == 0: every node gets max_priority when `reverse`, else scores stay as they are.
    Otherwise s' = max_priority·s / m (integer division), and s' = max_priority − s' when `reverse`.
    """
    scores = np.asarray(scores, dtype=np.int64)
    m = int(scores.max(initial=0))
    if m == 0:
        return np.full(len(scores), max_priority, dtype=np.int64) if reverse else scores.copy()
    out = go_div(max_priority * scores, m)
    return max_priority - out if reverse else out
