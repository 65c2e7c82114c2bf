"""Score strategies over (nodes × resources) matrices: requested `req`, allocatable `alloc`, `inc` (resource
counted for that node) and per-resource weights `w`. All integer maths is Go's int64 maths."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..helper import broken_linear

MAX = 100


def _safe(alloc: np.ndarray) -> np.ndarray:
    return np.where(alloc > 0, alloc, 1)


def _weighted_mean(s: np.ndarray, inc: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Σ s·w / Σ w over counted resources, integer division; 0 when no weight is counted."""
    if inc.all():  # every resource counted on every node: one weight sum for all
        den = int(w.sum())
        return s @ w // den if den > 0 else np.zeros(len(s), dtype=np.int64)
    num = (s * w * inc).sum(axis=1)
    den = (w * inc).sum(axis=1)
    return np.where(den > 0, num // np.where(den > 0, den, 1), 0)


def least_allocated(req: np.ndarray, alloc: np.ndarray, inc: np.ndarray, w: np.ndarray) -> np.ndarray:
    """s_r = (alloc − req)·100 / alloc, or 0 when req > alloc; score = Σ s_r·w_r / Σ w_r."""
    s = np.where(req > alloc, 0, (alloc - req) * MAX // _safe(alloc))
    return _weighted_mean(s, inc, w)


def most_allocated(req: np.ndarray, alloc: np.ndarray, inc: np.ndarray, w: np.ndarray) -> np.ndarray:
    """s_r = min(req, alloc)·100 / alloc; score = Σ s_r·w_r / Σ w_r."""
    s = np.minimum(req, alloc) * MAX // _safe(alloc)
    return _weighted_mean(s, inc, w)


def requested_to_capacity_ratio(
    req: np.ndarray, alloc: np.ndarray, inc: np.ndarray, w: np.ndarray, shape: Sequence[tuple[int, int]]
) -> np.ndarray:
    """u_r = req·100 / alloc (100 when req > alloc); s_r = f(u_r) with f the broken-linear shape (scores ×10).

    Resources with s_r = 0 are left out of the weight sum; score = round(Σ s_r·w_r / Σ w_r), halves away from 0.
    """
    u = np.where(req > alloc, MAX, req * MAX // _safe(alloc))
    s = broken_linear(shape, u.ravel()).reshape(u.shape)
    inc = inc & (s > 0)
    num = (s * w * inc).sum(axis=1)
    den = (w * inc).sum(axis=1)
    return np.where(den > 0, (2 * num + den) // np.where(den > 0, 2 * den, 1), 0)


def balanced_allocation(req: np.ndarray, alloc: np.ndarray, inc: np.ndarray, pod: np.ndarray) -> np.ndarray:
    """kube 1.36's BalancedAllocation: how much placing the pod improves the node's balance. With B the balance
    (`balance`) of the node's requested resources with the pod (`req`) and without it (`req − pod`), the score is
    50 + ⌊(50 + B_with − B_without)/2⌋, in [50, 100] (75 when the pod leaves the balance as it was)."""
    with_pod = balance(req, alloc, inc)
    without = balance(req - np.asarray(pod), alloc, inc)
    return MAX // 2 + (MAX // 2 + with_pod - without) // 2


def balance(req: np.ndarray, alloc: np.ndarray, inc: np.ndarray) -> np.ndarray:
    """f_r = min(1, req/alloc) over counted resources; std = |f_1 − f_2|/2 for two, the population standard
    deviation for more, 0 otherwise; balance = trunc((1 − std)·100). Float operations in kube's order."""
    n, k = req.shape
    frac = np.minimum(req / _safe(alloc), 1.0)
    if k == 2 and inc.all():  # the usual cpu and memory, both counted everywhere: the two-resource branch below
        return np.trunc((1 - np.abs((frac[:, 0] - frac[:, 1]) / 2)) * MAX).astype(np.int64)
    count = inc.sum(axis=1)
    total = np.zeros(n)
    first = np.zeros(n)
    second = np.zeros(n)
    seen = np.zeros(n, dtype=np.int64)
    for j in range(k):
        f = np.where(inc[:, j], frac[:, j], 0.0)
        total = total + f
        first = np.where(inc[:, j] & (seen == 0), f, first)
        second = np.where(inc[:, j] & (seen == 1), f, second)
        seen = seen + inc[:, j]
    std = np.zeros(n)
    two = count == 2
    std[two] = np.abs((first[two] - second[two]) / 2)
    many = count > 2
    if many.any():
        mean = total[many] / count[many]
        acc = np.zeros(int(many.sum()))
        for j in range(k):
            d = frac[many, j] - mean
            acc = acc + np.where(inc[many, j], d * d, 0.0)
        std[many] = np.sqrt(acc / count[many])
    return np.trunc((1 - std) * MAX).astype(np.int64)
