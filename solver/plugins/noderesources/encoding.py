"""CP-SAT objective terms of NodeResourcesFit's and NodeResourcesBalancedAllocation's scores on final loads.

Both scores are functions of the node's final load and the pod's own request (no normalisation), so a pod p on
node n scores F(L_n, r_p), with L_n the node's requested resources in the final state (p included) and F the
plugin's own integer function. The node's contribution to the measure is T_n = Σ_{p on n} F(L_n), over the
window's pods and the pods earlier windows of the run placed on n (E_n, e_n = |E_n|): the measure scores those on
the final state too, so a window that adds load to their node lowers their scores.

- A node that one window group g can use: L_n = L⁰_n + k·r_g with k = y[g, n], so
  T_n = k · F(L⁰_n + k·r_g) + Σ_{q ∈ E_n} F_q(L⁰_n + k·r_g) (less its value at k = 0), tabulated for
  k = 0..ub with the plugin's own function: a table of y[g, n] (`ObjectiveTerm.tables`), which the model builder
  sums with the other plugins' tables of the same variable and encodes once (`framework.encoding.piecewise`: lines
  where the sum is concave, an element otherwise).
- BalancedAllocation (kube 1.36) scores the change of balance the pod makes: F = 50 + ⌊(50 + B(L) − B(L − r))/2⌋
  with B the balance of the loads; on a node one group can use it is tabulated as above (neither concave nor
  convex in general: an element constraint). On a node several groups share it keeps the first-order coefficient.
- A node several groups can use (NodeResourcesFit): the resources' weighted utilisation is one scalar,
  u_n = Σ_r w_r L_nr / (A_nr Σw), and LeastAllocated ≈ 100(1 − u), MostAllocated ≈ 100u (kube's integer
  floors dropped). With U_n = round(1000 u) as an integer expression of the y and C_n = Σ_g y[g, n],
  T_n ≈ (C_n + e_n)(100 − U_n/10) resp. (C_n + e_n) U_n/10, one product variable P_n = C_n·U_n per node
  (AddMultiplicationEquality), within one point of the plugin's score per pod (rounding of per-mille loads and of
  kube's floors). RequestedToCapacityRatio on such a node keeps the first-order coefficient: the score of one pod
  of g on n at the window's start.
"""

from __future__ import annotations

import numpy as np
from ortools.sat.python import cp_model

from ...framework.encoding import (
    SCALE,
    ConstraintContext,
    EncodingContext,
    LinearTerms,
    ObjectiveTerm,
    PluginEncoding,
    node_count,
)
from .args import LEAST, MOST
from .helpers import _columns, allocation, pod_requests
from .scoring import balanced_allocation


def _tables(ctx: EncodingContext, scorer, wanted: list[tuple[int, int, int]], non_zero: bool, resources,
            earlier: list[tuple[object, np.ndarray, np.ndarray]] = ()) -> dict[tuple[int, int], list[int]]:
    """For each (g, n, k_max) of `wanted`: SCALE · weight · (k · F_g(L_k) + Σ_{q ∈ E_n} (F_q(L_k) − F_q(L_0))) for
    k = 0..k_max, with L_k = L⁰_n + k·r_g and E_n the pods earlier windows placed on n, which the measure scores on
    the final state too. F is evaluated in one call per group over all its nodes and counts, and once more per kind
    of earlier pod (`scorer(g)` gives F_g's row function; `earlier` holds, per kind, its row function, its pods
    per node and the resources its scores include per node, `_earlier_kind`))."""
    h = ctx.handle
    by_group: dict[int, list[tuple[int, int]]] = {}
    for gid, n, k_max in wanted:
        by_group.setdefault(gid, []).append((n, k_max))
    out = {}
    unit = SCALE * ctx.weight
    for gid, items in by_group.items():
        g = h.groups[gid]
        nodes = np.array([n for n, _ in items], dtype=np.int64)
        ks = max(k for _, k in items) + 1  # k = 0..k_max
        req, alloc, inc = allocation(h.state, g.rep.idx, nodes, resources, non_zero)
        step = pod_requests(h.state.index, g.rep.idx, resources, non_zero) * _columns(
            h.state.index, resources, non_zero)[1]
        rows = (req[:, None, :] + np.arange(-1, ks - 1)[None, :, None] * step).reshape(-1, req.shape[1])
        alloc_rows = np.repeat(alloc, ks, axis=0)
        value = _at_rows(scorer(g), rows, alloc_rows, inc, ks) * np.arange(ks)[None, :]
        for fn, per_node, included in earlier:
            counts = per_node[nodes]
            if counts.any():
                own = _at_rows(fn, rows, alloc_rows, included[nodes], ks)
                value += counts[:, None] * (own - own[:, :1])
        for i, (n, k_max) in enumerate(items):
            out[gid, n] = (unit * value[i, : k_max + 1]).tolist()
    return out


def _at_rows(fn, rows: np.ndarray, alloc_rows: np.ndarray, inc: np.ndarray, ks: int) -> np.ndarray:
    """fn over `rows` (ks loads per node, node by node) as a (nodes, ks) array."""
    return np.asarray(fn(rows, alloc_rows, np.repeat(inc, ks, axis=0)), dtype=np.int64).reshape(-1, ks)


def _earlier_kind(h, fn, pods: list[int], resources, non_zero: bool) -> tuple[object, np.ndarray, np.ndarray]:
    """(row function, pods per node, resources included per node) of earlier pods that score alike."""
    everywhere = np.arange(h.state.n_nodes, dtype=np.int64)
    return (fn, np.bincount(h.state.pod_node[pods], minlength=h.state.n_nodes),
            allocation(h.state, pods[0], everywhere, resources, non_zero)[2])


def _loads(ctx: EncodingContext, entries, n: int, resources, non_zero: bool):
    """(L⁰, {gid: r_g}, allocatable, included) on node n: its load before the window and each group's request."""
    index = ctx.handle.state.index
    tracked = _columns(index, resources, non_zero)[1]
    out = {g.gid: pod_requests(index, g.rep.idx, resources, non_zero) * tracked for g, _ in entries}
    first = entries[0][0]
    req, alloc, inc = allocation(ctx.handle.state, first.rep.idx, np.array([n], dtype=np.int64), resources, non_zero)
    return req[0] - out[first.gid], out, np.where(alloc[0] > 0, alloc[0], 1).astype(float), inc[0]


def _utilisation(ctx: EncodingContext, entries, n: int, resources, weights, non_zero: bool):
    """(U⁰, {gid: d_g}) with U = U⁰ + Σ_g d_g·y[g, n] the weighted per-mille utilisation of node n."""
    base, req, alloc, inc = _loads(ctx, entries, n, resources, non_zero)
    w = np.where(inc, np.asarray(weights, dtype=float), 0.0)
    if w.sum() <= 0:
        return None
    frac = w / (alloc * w.sum())
    return (round(1000 * float((base * frac).sum())),
            {gid: round(1000 * float((r * frac).sum())) for gid, r in req.items()})


def _product(ctx: EncodingContext, entries, n: int, offset: int, coef: dict[int, int], name: str):
    """(P, value) with P = C·V, C = Σ y[g, n], V = offset + Σ coef_g y[g, n]."""
    h = ctx.handle
    m = h.model
    total_ub = sum(h.ub[g.gid][n] for g, _ in entries)
    lin = offset + sum(coef[g.gid] * var for g, var in entries)
    span = abs(offset) + sum(abs(coef[g.gid]) * h.ub[g.gid][n] for g, _ in entries)
    c = m.new_int_var(0, total_ub, f"{name}_count_{n}")
    m.add(c == sum(var for _, var in entries))
    count = node_count(h, entries, n)

    def linear(cs):
        return offset + sum(coef[g.gid] * cs.get(g.gid, {}).get(n, 0) for g, _ in entries)

    val = m.new_int_var(-span, span, f"{name}_lin_{n}")
    m.add(val == lin)
    p = m.new_int_var(-span * total_ub, span * total_ub, f"{name}_prod_{n}")
    m.add_multiplication_equality(p, [c, val])
    h.aux_hints.extend([(c, count), (val, linear), (p, lambda cs: count(cs) * linear(cs))])
    return c, count, p, lambda cs: count(cs) * linear(cs)


def _single(ctx: EncodingContext, terms: LinearTerms, entries, n: int, table: list[int]) -> None:
    """The exact term of a node one group can use: table[y] (linear when y is a boolean)."""
    g, var = entries[0]
    if len(table) == 2:
        terms.add(var, table[1], node_count(ctx.handle, entries, n))
    else:
        terms.table(g.gid, n, table)


def fit_term(ctx: EncodingContext) -> ObjectiveTerm | None:
    """NodeResourcesFit's score of every window pod on its node's final load (see the module doc)."""
    plugin = ctx.plugin
    names, weights = plugin._names, plugin._weights
    strategy = plugin.config.strategy
    h = ctx.handle
    terms = LinearTerms()
    exact = True
    products = strategy in (LEAST, MOST)
    placed = h.state.placed_pending().tolist()  # earlier windows' pods
    earlier = [_earlier_kind(h, plugin.score_of, placed, names, True)] if placed else []
    per_node = earlier[0][1] if earlier else np.zeros(h.state.n_nodes, dtype=np.int64)
    tables = _tables(ctx, lambda g: plugin.score_of, [
        (g.gid, n, h.ub[g.gid][n] if len(entries) == 1 else 1) for n, entries in h.by_node.items()
        if len(entries) == 1 or not products for g, _ in entries], True, names, earlier)
    for n, entries in h.by_node.items():
        if len(entries) == 1:
            _single(ctx, terms, entries, n, tables[entries[0][0].gid, n])
            continue
        util = _utilisation(ctx, entries, n, names, weights, True) if products else None
        if util is None:
            exact = False
            for g, var in entries:
                terms.add(var, tables[g.gid, n][1], lambda cs, g=g.gid, n=n: cs.get(g, {}).get(n, 0))
            continue
        exact = False
        u0, d = util
        c, count, p, pval = _product(ctx, entries, n, u0, d, "fit")
        k = SCALE * ctx.weight
        e = int(per_node[n])  # earlier pods on n: e·(100 − U/10) resp. e·U/10, linear in the y
        if strategy == LEAST:  # C(100 − U/10) in SCALE-ths: 100k·C − (k/10)·P
            terms.add(c, 100 * k, count)
            terms.add(p, -(k // 10), pval)
        else:  # C·U/10
            terms.add(p, k // 10, pval)
        for g, var in entries if e else ():
            terms.add(var, (-1 if strategy == LEAST else 1) * e * (k // 10) * d[g.gid],
                      lambda cs, g=g.gid, n=n: cs.get(g, {}).get(n, 0))
    return terms.term("NodeResourcesFit", exact=exact,
                      note="" if exact else "nodes shared by several groups: per-mille load products")


def balanced_term(ctx: EncodingContext) -> ObjectiveTerm | None:
    """NodeResourcesBalancedAllocation's score of every window pod on its node's final load (module doc)."""
    plugin = ctx.plugin
    resources = plugin.resources
    h = ctx.handle
    terms = LinearTerms()
    exact = True

    def scorer(g):
        own = pod_requests(h.state.index, g.rep.idx, resources, non_zero=False)
        return lambda req, alloc, inc: balanced_allocation(req, alloc, inc, own)

    index = h.state.index
    counted = {g.gid for g in h.groups.values() if _scored(index, g.rep.idx, resources)}
    on_node = {n: [(g, var) for g, var in entries if g.gid in counted] for n, entries in h.by_node.items()}
    placed = h.state.placed_pending()  # earlier windows' pods, by their requests: they score alike on the same loads
    cols, tracked = _columns(index, resources, False)[:2]
    own = np.where(tracked, index.pod_req[placed][:, cols], 0)  # `pod_requests(..., non_zero=False)` of each
    scored = (index.pod_req[placed] > 0).any(axis=1) & own.any(axis=1)  # `_scored`
    kinds, of = np.unique(own[scored], axis=0, return_inverse=True)
    earlier = [_earlier_kind(h, lambda req, alloc, inc, r=r: balanced_allocation(req, alloc, inc, r),
                             placed[scored][of.ravel() == k].tolist(), resources, False) for k, r in enumerate(kinds)]
    tables = _tables(ctx, scorer, [(g.gid, n, h.ub[g.gid][n] if len(scored) == 1 else 1)
                                   for n, scored in on_node.items() for g, _ in scored], False, resources, earlier)
    for n, scored in on_node.items():
        if not scored:
            continue
        if len(scored) == 1:
            _single(ctx, terms, scored, n, tables[scored[0][0].gid, n])
            continue
        exact = False  # the first-order coefficient: one pod of g on n at the window's start
        for g, var in scored:
            terms.add(var, tables[g.gid, n][1], lambda cs, g=g.gid, n=n: cs.get(g, {}).get(n, 0))
    return terms.term("NodeResourcesBalancedAllocation", exact=exact,
                      note="" if exact else "nodes shared by several groups: first-order coefficients")


def _scored(index, pod_idx: int, resources) -> bool:
    """BalancedAllocation scores the pod (its PreScore skips pods requesting none of the configured resources)."""
    return bool((index.pod_req[pod_idx] > 0).any() and pod_requests(index, pod_idx, resources, non_zero=False).any())


def capacity(ctx: ConstraintContext) -> None:
    """Capacity, for every node n and resource r a group requests: Σ_g req[g, r] · y[g, n] ≤ free[n, r], posted only
    where the variables' bounds alone do not guarantee it; pod slots: Σ_g y[g, n] ≤ maxPods[n] − pods[n].
    With victims on n (`defaultpreemption.encoding`), per priority level ℓ of the groups there, the pods of priority
    ≤ ℓ may use the room of the victims below ℓ only: Σ_{g: prio g ≤ ℓ} req[g, r]·y[g, n] ≤ free[n, r]
    + Σ_{v on n, prio v < ℓ} req[v, r]·e_v (and the same for slots) — no pod gains from an eviction it could not
    have made, as in kube, where a preemptor's victims are all below it."""
    v = ctx.handle
    state, index = v.state, v.state.index
    for n, entries in v.by_node.items():
        if n in v.victims_on:
            _capacity_with_victims(v, n, entries)
            continue
        free = index.alloc[n] - state.requested[n]
        reqs = index.pod_req[[g.rep.idx for g, _ in entries]]
        ubs = np.array([v.ub[g.gid][n] for g, _ in entries], dtype=np.int64)
        variables = [var for _, var in entries]
        worst = ubs @ reqs
        for r in np.flatnonzero(worst > free).tolist():  # only where the bounds alone do not guarantee it
            nz = np.flatnonzero(reqs[:, r] > 0).tolist()
            v.model.add(cp_model.LinearExpr.weighted_sum([variables[i] for i in nz], reqs[nz, r].tolist())
                        <= int(free[r]))
        slots = int(index.max_pods[n] - state.pod_count[n])
        if int(ubs.sum()) > slots:
            v.model.add(cp_model.LinearExpr.sum(variables) <= slots)


def _capacity_with_victims(v, n: int, entries) -> None:
    """`capacity` on a node holding candidate victims: one constraint per priority level of its groups (doc)."""
    state, index = v.state, v.state.index
    free = np.append(index.alloc[n] - state.requested[n], index.max_pods[n] - state.pod_count[n])
    victims = v.victims_on[n]
    for level in sorted({g.priority for g, _ in entries}):
        mine = [(g, var) for g, var in entries if g.priority <= level]
        gone = [(p, e) for p, e in victims if p.priority < level]
        reqs = np.column_stack([index.pod_req[[g.rep.idx for g, _ in mine]], np.ones(len(mine), dtype=np.int64)])
        freed = np.column_stack([index.pod_req[[p.idx for p, _ in gone]], np.ones(len(gone), dtype=np.int64)]) \
            if gone else np.zeros((0, reqs.shape[1]), dtype=np.int64)
        for r in range(reqs.shape[1]):
            uses = [(var, int(q)) for (_, var), q in zip(mine, reqs[:, r], strict=True) if q > 0]
            if not uses:
                continue
            frees = [(e, -int(q)) for (_, e), q in zip(gone, freed[:, r], strict=True) if q > 0]
            v.model.add(cp_model.LinearExpr.weighted_sum([x for x, _ in uses + frees], [c for _, c in uses + frees])
                        <= int(free[r]))


assert SCALE % 20 == 0, "the product forms divide SCALE by 10 and 20"

ENCODINGS = {"NodeResourcesFit": PluginEncoding(constrain=capacity, score=fit_term),
             "NodeResourcesBalancedAllocation": PluginEncoding(score=balanced_term)}
