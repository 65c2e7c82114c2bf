"""The seam between a score plugin and the CP-SAT model: its term of the objective on the window's final state.

A window model has count variables y[g, n] (pods of group g on node n; `ModelHandle`). A plugin whose score
depends on where the other window pods go (node loads, domain counts) contributes an `ObjectiveTerm`: a linear
expression over y and auxiliary variables it creates, in `SCALE`-ths of the plugin's weighted, normalised
points summed over the window's pods, and the same quantity evaluated on plain counts (for hints and reports).
Static scores (per (pod, node), independent of the other window pods) need no encoding: the model builder
takes them from the plugin's own Score at the window's start.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .plugin import Plugin
from .state import ClusterState

SCALE = 20
"""Objective units per score point: products of counts and per-mille loads stay integral at this scale."""

Counts = dict[int, dict[int, int]]  # group id → node id → pods


class ModelHandle(Protocol):
    """What an encoding may read and add to (the window's `cpsat.variables.Variables`)."""

    model: Any  # cp_model.CpModel
    state: ClusterState  # the window's starting state (bound pods and earlier windows)
    groups: dict[int, Any]  # gid → PodGroup
    y: dict[int, dict[int, Any]]  # gid → node → count variable
    ub: dict[int, dict[int, int]]
    by_node: dict[int, list[tuple[Any, Any]]]  # node → [(group, variable)]
    aux_hints: list[tuple[Any, Callable[[Counts], int]]]


@dataclass
class EncodingContext:
    handle: ModelHandle
    plugin: Plugin  # the profile's configured instance (its args)
    weight: int  # the plugin's weight in the profile
    reference: ClusterState  # the hint's final state: where normalisation ranges are estimated
    matcher: Any  # cpsat.groups.GroupMatcher over the model's groups


@dataclass
class ObjectiveTerm:
    plugin: str
    expr: Any  # cp_model.LinearExprT, to maximise, in SCALE-ths of weighted points
    evaluate: Callable[[Counts], int]  # the same value on counts
    exact: bool = False  # True when expr equals the plugin's part of the measure on every plan
    note: str = ""


class ScoreEncoding(Protocol):
    def __call__(self, ctx: EncodingContext) -> ObjectiveTerm | None: ...


@dataclass
class LinearTerms:
    """Σ coef · var and Σ coef · value(counts) built together."""

    vars: list[Any] = field(default_factory=list)
    coefs: list[int] = field(default_factory=list)
    evals: list[Callable[[Counts], int]] = field(default_factory=list)

    def add(self, var: Any, coef: int, value: Callable[[Counts], int]) -> None:
        if coef:
            self.vars.append(var)
            self.coefs.append(int(coef))
            self.evals.append(value)

    def term(self, plugin: str, *, exact: bool = False, note: str = "") -> ObjectiveTerm | None:
        if not self.vars:
            return None
        from ortools.sat.python import cp_model

        coefs, evals = list(self.coefs), list(self.evals)
        return ObjectiveTerm(plugin, cp_model.LinearExpr.weighted_sum(self.vars, coefs),
                             lambda c: sum(k * f(c) for k, f in zip(coefs, evals, strict=True)), exact, note)


def piecewise(handle: ModelHandle, expr: Any, values: list[int], name: str, count: Callable[[Counts], int],
              maximize: bool = True) -> tuple[Any, Callable[[Counts], int]]:
    """A variable t = values[x] for the integer expression x = `expr` ∈ [0, len(values) − 1].

    When the sequence is concave (maximised) or convex (minimised), t is bounded by the lines through
    consecutive points, t ≤ v_k + (v_{k+1} − v_k)(x − k) for every k (≥ when minimised): at every integer x the
    tightest line passes through v_x, so the optimum sets t = v_x exactly and the LP relaxation is the
    sequence's own interpolation. Otherwise t = values[x] through an element constraint. `count` evaluates x
    on counts; the returned function evaluates t."""
    model = handle.model
    lo, hi = min(values), max(values)
    t = model.new_int_var(lo, hi, name)
    diffs = [b - a for a, b in itertools.pairwise(values)]
    shaped = all(d2 <= d1 for d1, d2 in itertools.pairwise(diffs)) if maximize else \
        all(d2 >= d1 for d1, d2 in itertools.pairwise(diffs))
    if shaped:
        for k, d in enumerate(diffs):
            line = values[k] + d * (expr - k)
            model.add(t <= line) if maximize else model.add(t >= line)
        if len(values) == 1:
            model.add(t == values[0])
    else:
        x = model.new_int_var(0, len(values) - 1, f"{name}_x")
        model.add(x == expr)
        model.add_element(x, values, t)
        handle.aux_hints.append((x, lambda c: min(count(c), len(values) - 1)))

    def value(c: Counts) -> int:
        return values[min(count(c), len(values) - 1)]

    handle.aux_hints.append((t, value))
    return t, value


def node_count(handle: ModelHandle, entries: Iterable[tuple[Any, Any]], n: int) -> Callable[[Counts], int]:
    """Σ over `entries` ((group, var) on node n) of the counts' pods of each group on n."""
    gids = [g.gid for g, _ in entries]
    return lambda c: sum(c.get(gid, {}).get(n, 0) for gid in gids)
