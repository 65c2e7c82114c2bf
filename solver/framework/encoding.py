"""The seam between a plugin and the CP-SAT model of a window (`PluginEncoding`, one per plugin folder).

A window model has count variables y[g, n] (pods of group g on node n; `ModelHandle`). A plugin contributes what
applies of:
- `ties(index, matcher)`: pairs of groups its hard rules tie together, edges of the networkx graph whose
  connected components are solved as independent models;
- `constrain(ctx)`: its cross-pod predicates as constraints over the final state (node-local predicates need
  none: they prune domains through the plugin's own Filter);
- `prune(plugin, state, group, cycle, nodes)`: for a cross-pod filter, the nodes it rejects because of pods
  that will not move (its Filter is not run on the domain; the model decides the rest);
- `score(ctx)`: when its score depends on where the other window pods go (node loads, domain counts), an
  `ObjectiveTerm`: a linear expression over y and auxiliary variables it creates, in `SCALE`-ths of the plugin's
  weighted, normalised points summed over the window's pods, and the same quantity evaluated on plain counts
  (for hints and reports). Static scores (per (pod, node), independent of the other window pods) need no
  encoding: the model builder takes them from the plugin's own Score at the window's start.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

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

    def domains(self, gid: int, key: str) -> dict[int, list[Any]]:
        """Value id of label `key` → g's variables on nodes with that value."""

    def domain_ub(self, gid: int, key: str, value: int) -> int:
        """The most pods of g that domain (key, value) can hold."""

    def hinted_domain(self, counts: Counts, gid: int, key: str, value: int) -> int:
        """g's pods in domain (key, value) under `counts`."""


@dataclass
class EncodingContext:
    handle: ModelHandle
    plugin: Plugin  # the profile's configured instance (its args)
    weight: int  # the plugin's weight in the profile
    reference: ClusterState  # the hint's final state: where normalisation ranges are estimated
    matcher: Any  # cpsat.groups.GroupMatcher over the model's groups


@dataclass
class ObjectiveTerm:
    """A plugin's term: `expr` plus, for each variable y[g, n] in `tables`, the count function tables[g, n][k]
    (k = 0..ub, k = y[g, n]). The model builder sums every plugin's table of one variable and encodes the sum once
    (`piecewise`: one element or one set of lines per variable, however many plugins score it)."""

    plugin: str
    expr: Any  # cp_model.LinearExprT, to maximise, in SCALE-ths of weighted points
    evaluate: Callable[[Counts], int]  # the value of `expr` on counts (the tables not included)
    exact: bool = False  # True when expr and the tables equal the plugin's part of the measure on every plan
    note: str = ""
    domains: bool = False  # True when it counts pods per topology domain, tying pods on different nodes
    tables: dict[tuple[int, int], list[int]] = field(default_factory=dict)  # (gid, node) → value per count


class ScoreEncoding(Protocol):
    def __call__(self, ctx: EncodingContext) -> ObjectiveTerm | None: ...


@dataclass
class ConstraintContext:
    handle: ModelHandle
    groups: list[Any]  # the model's PodGroups
    matcher: Any  # cpsat.groups.GroupMatcher over them
    profile: Any  # the profile of the model's pods (framework.config.Profile)
    filters: dict[int, set[str]]  # gid → the filter plugins enabled for that group's pods
    volume_hint: dict[str, str] = field(default_factory=dict)  # claim key → the hint's PV (or DYNAMIC)


@dataclass(frozen=True)
class PluginEncoding:
    ties: Callable[[Any, Any], set[tuple[int, int]]] | None = None
    constrain: Callable[[ConstraintContext], Any] | None = None  # may return what the engine reads back
    score: ScoreEncoding | None = None
    prune: Callable[..., Any] | None = None  # (plugin, state, group, cycle, nodes) → mask of nodes to keep


@dataclass
class LinearTerms:
    """Σ coef · var and Σ coef · value(counts) built together."""

    vars: list[Any] = field(default_factory=list)
    coefs: list[int] = field(default_factory=list)
    evals: list[Callable[[Counts], int]] = field(default_factory=list)
    tables: dict[tuple[int, int], list[int]] = field(default_factory=dict)

    def add(self, var: Any, coef: int, value: Callable[[Counts], int]) -> None:
        if coef:
            self.vars.append(var)
            self.coefs.append(int(coef))
            self.evals.append(value)

    def table(self, gid: int, n: int, values: list[int]) -> None:
        """values[k]: the term's value when y[gid, n] = k (see `ObjectiveTerm`)."""
        self.tables[gid, n] = values

    def term(self, plugin: str, *, exact: bool = False, note: str = "", domains: bool = False
             ) -> ObjectiveTerm | None:
        if not self.vars and not self.tables:
            return None
        from ortools.sat.python import cp_model

        coefs, evals = list(self.coefs), list(self.evals)
        return ObjectiveTerm(plugin, cp_model.LinearExpr.weighted_sum(self.vars, coefs),
                             lambda c: sum(k * f(c) for k, f in zip(coefs, evals, strict=True)), exact, note, domains,
                             dict(self.tables))


TOLERANCE = 0.01  # lines are used while they undervalue no count by more than this share of the table's span
DENSE = 16  # counts up to this get a breakpoint each; beyond, breakpoints grow by half each time


def breakpoints(size: int) -> list[int]:
    """0..DENSE, then ⌈1.5×⌉ steps, and size − 1: where a shaped `piecewise` puts its lines."""
    out, k = list(range(min(size, DENSE + 1))), DENSE
    while k < size - 1:
        k = min(size - 1, math.ceil(k * 1.5))
        out.append(k)
    return out


def piecewise(handle: ModelHandle, expr: Any, values: list[int], name: str, count: Callable[[Counts], int],
              maximize: bool = True) -> tuple[Any, Callable[[Counts], int]]:
    """A variable t = f(x) for the integer expression x = `expr` ∈ [0, len(values) − 1], f(k) = values[k].

    When the sequence is concave (maximised) or convex (minimised) — up to TOLERANCE, for kube's integer floors —
    t is bounded by the lines through consecutive breakpoints b_i (`breakpoints`: every count up to DENSE, then
    sparser), t ≤ v_{b_i} + (v_{b_{i+1}} − v_{b_i})(x − b_i)/(b_{i+1} − b_i) (≥ when minimised): the optimum sets
    t to the tightest line at x, which is f itself on every breakpoint of a concave f and errs on the side of
    the optimisation elsewhere (below f when maximised); the LP relaxation is that interpolation.
    Otherwise t = values[x] through an element constraint. `count` evaluates x on counts; the returned
    function evaluates t the same way the model does."""
    model = handle.model
    points = breakpoints(len(values))
    segments = list(itertools.pairwise(points))
    vals = np.asarray(values, dtype=np.int64)
    lines = vals
    if segments:  # what the lines allow at each count: min (max when minimised) over every line
        lo, hi = np.array(segments, dtype=np.int64).T[:, :, None]  # one row per line, one column per count
        num = vals[lo] * (hi - lo) + (vals[hi] - vals[lo]) * (np.arange(len(values)) - lo)
        at = num // (hi - lo) if maximize else -(-num // (hi - lo))
        lines = at.min(axis=0) if maximize else at.max(axis=0)
    off = int(((vals - lines) if maximize else (lines - vals)).max(initial=0))
    if off <= TOLERANCE * int(vals.max() - vals.min()):  # concave (convex) up to kube's floors: lines, LP tight
        table = lines.tolist()
        t = model.new_int_var(min(table), max(table), name)
        for a, b in segments:
            line = values[a] * (b - a) + (values[b] - values[a]) * (expr - a)  # (b − a)·t against it
            model.add((b - a) * t <= line) if maximize else model.add((b - a) * t >= line)
        if not segments:
            model.add(t == values[0])
    else:
        table = list(values)
        t = model.new_int_var(min(table), max(table), name)
        x = model.new_int_var(0, len(values) - 1, f"{name}_x")
        model.add(x == expr)
        model.add_element(x, values, t)
        handle.aux_hints.append((x, lambda c: min(count(c), len(values) - 1)))

    def value(c: Counts) -> int:
        return table[min(count(c), len(table) - 1)]

    handle.aux_hints.append((t, value))
    return t, value


def node_count(handle: ModelHandle, entries: Iterable[tuple[Any, Any]], n: int) -> Callable[[Counts], int]:
    """Σ over `entries` ((group, var) on node n) of the counts' pods of each group on n."""
    gids = [g.gid for g, _ in entries]
    return lambda c: sum(c.get(gid, {}).get(n, 0) for gid in gids)
