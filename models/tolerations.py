"""Toleration matching (k8s.io/api/core/v1 toleration.go), a pure function shared by every engine."""

from __future__ import annotations

from .k8s import Taint, Toleration


def tolerates(t: Toleration, taint: Taint, comparison_operators: bool = False) -> bool:
    """T tolerates X when effects match (or T's is empty), keys match (or T's is empty, with Exists),
    and the operator test passes: Equal/empty compares values, Exists always passes, Lt/Gt (alpha gate
    TaintTolerationComparisonOperators, off by default) compare int64 values `X < T` / `X > T`.
    """
    if t.effect and t.effect != taint.effect:
        return False
    if t.key and t.key != taint.key:
        return False
    op = t.operator or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return t.value == taint.value
    if not comparison_operators:
        return False
    try:
        have, want = int(taint.value), int(t.value)
    except ValueError:
        return False
    return have < want if op == "Lt" else have > want


def tolerated_by_any(tolerations: list[Toleration], taint: Taint) -> bool:
    return any(tolerates(t, taint) for t in tolerations)
