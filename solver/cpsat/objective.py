"""The objective, lexicographic in this order of importance, solved as stages:

1. pods placed, by priority, less the pods evicted: maximise Σ_g W[prio g] · placed[g] − Σ_v W[prio v] · e_v, where
   for priority levels ℓ₀ < ℓ₁ < … with N_i window pods and V_i candidate victims at level i, W[ℓ₀] = 1 and
   W[ℓ_i] = (N_{i−1} + V_{i−1} + 1) · W[ℓ_{i−1}] — one more pod of a level outweighs every pod of all lower levels,
   so a higher-priority pod is never traded, and evicting a pod to place one of its own priority gains nothing.
   (When those weights would not fit in 62 bits, each level is its own stage, highest first.)
2. with preemption, the disruption (`plugins.defaultpreemption.encoding`): minimise Σ_v W[v]·e_v, victims weighted
   lexicographically by priority (one victim of a level outweighs every victim of the levels below), PDB
   violations, when allowed, above all of them;
3. with the placement (and disruption) fixed at its optimum, the goal, if any:
   - pack: minimise the number of non-empty nodes (used[n] ⇐ y[g, n] > 0 on nodes empty at the start,
     with Σ_g req[g, r] · y[g, n] ≤ free[n, r] · used[n], the strong form of bin packing's capacity);
   - balance: minimise the peak utilisation u (per mille) over nodes and over cpu and memory:
     1000 · (requested[n, r] + Σ_g req[g, r] · y[g, n]) ≤ u · alloc[n, r];
4. the profile's score on the window's final state, with the goal fixed: maximise
   SCALE · Σ_{g,n} c[g, n] · y[g, n] (the static plugins, see `domains`) + Σ_i T_i, where T_i is each
   state-dependent plugin's own term (`framework.encoding`, in the plugin's folder): its weighted score of every
   window pod on the final loads and domain counts. Where a term is not exact (kube's normalisation over the
   nodes a pod could have used is not linear; nodes several groups share use products of rounded loads), this
   stage is a *surrogate* of the plan's score measure (`solver.measure`): its status is never reported as the
   plan's optimum, and the window compares the measure of its plan with greedy's.
A goal stage takes 80% of the time left, the placement stage 60%, the last stage the rest.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from kplace.models.index import HOSTNAME
from ortools.sat.python import cp_model

from ..framework.encoding import SCALE, TOLERANCE, ObjectiveTerm, piecewise
from .domains import GroupDomain
from .groups import PodGroup
from .variables import EVICTED, Variables

LIMIT = 2**62


@dataclass
class Stage:
    name: str
    expr: cp_model.LinearExprT
    maximize: bool
    evaluate: Callable[[dict[int, dict[int, int]]], int]  # the same expression on a hint (y counts)
    best: int | None = None  # a known optimum (every pod placed), when one is known without search
    share: float = 0.6  # fraction of the remaining time this stage may use (the last stage uses all of it)
    surrogate: str = ""  # what the stage optimises instead of the measure it stands for ("" when exact)


def _eval_linear(weights: dict[int, dict[int, int]]) -> Callable[[dict[int, dict[int, int]]], int]:
    def f(counts: dict[int, dict[int, int]]) -> int:
        return sum(w.get(n, 0) * c for gid, w in weights.items() for n, c in counts.get(gid, {}).items())
    return f


def placement_stages(v: Variables, groups: list[PodGroup]) -> list[Stage]:
    victims = {i: v.state.index.pods[i].priority for i in v.evict}
    levels = sorted({g.priority for g in groups} | set(victims.values()))
    per_level = {lvl: sum(g.size for g in groups if g.priority == lvl) + sum(p == lvl for p in victims.values())
                 for lvl in levels}
    weight, w = {}, 1
    for lvl in levels:
        weight[lvl] = w
        w *= per_level[lvl] + 1
    if w < LIMIT:
        return [_placed_stage("placed", v, groups, weight, victims)]
    return [
        _placed_stage(f"placed[priority={lvl}]", v, [g for g in groups if g.priority == lvl], {lvl: 1},
                      {i: p for i, p in victims.items() if p == lvl})
        for lvl in reversed(levels)
    ]


def _weighted(weights: dict[int, dict[int, int]], v: Variables) -> cp_model.LinearExpr:
    variables, coeffs = [], []
    for gid, w in weights.items():
        ys = v.y[gid]
        for n, c in w.items():
            if c:
                variables.append(ys[n])
                coeffs.append(c)
    return cp_model.LinearExpr.weighted_sum(variables, coeffs)


def _placed_stage(name: str, v: Variables, groups: list[PodGroup], weight: dict[int, int],
                  victims: dict[int, int] | None = None) -> Stage:
    """Σ_g W[prio g]·placed[g] − Σ_v W[prio v]·e_v: pods placed, less the victims, by priority (module doc, 1.)."""
    w = {g.gid: {n: weight[g.priority] for n in v.y[g.gid]} for g in groups}
    placed = _eval_linear(w)
    gone = {i: weight[p] for i, p in (victims or {}).items()}
    expr = _weighted(w, v)
    if gone:
        expr = expr - cp_model.LinearExpr.weighted_sum([v.evict[i] for i in gone], list(gone.values()))

    def evaluate(counts, gone=gone):
        return placed(counts) - sum(c for i, c in gone.items() if counts.get(EVICTED, {}).get(i))

    return Stage(name, expr, True, evaluate, best=sum(weight[g.priority] * g.size for g in groups))


def score_terms(v: Variables, groups: list[PodGroup], domains: dict[int, GroupDomain]) -> tuple[object, dict]:
    """SCALE · Σ c[g, n] · y[g, n] over the static plugins, and the coefficients per group and node."""
    weights: dict[int, dict[int, int]] = {}
    coef = np.zeros(len(v.state.index.nodes), dtype=np.int64)  # one group's coefficients, by node id
    for g in groups:
        d = domains[g.gid]
        coef[d.nodes] = d.coef
        nodes = list(v.y[g.gid])
        weights[g.gid] = dict(zip(nodes, coef[nodes].tolist(), strict=True))
        coef[d.nodes] = 0
    scaled = {gid: {n: SCALE * c for n, c in w.items()} for gid, w in weights.items()}
    return _weighted(scaled, v), weights, scaled


def score_stage(v: Variables, groups: list[PodGroup], domains: dict[int, GroupDomain],
                terms: list[ObjectiveTerm], normalised: list[str]) -> Stage:
    """The static coefficients plus every state-dependent plugin's term (see the module doc); `normalised` names
    the static plugins whose NormalizeScore runs over nodes the final state decides (taken at the window's start)."""
    expr, weights, scaled = score_terms(v, groups, domains)
    v.coefficients = weights
    static = _eval_linear(scaled)
    evals = [t.evaluate for t in terms]
    tabled, values, approximated = count_tables(v, terms)
    evals.extend(values)
    inexact = sorted([*(f"{t.plugin} ({t.note})" if t.note else t.plugin for t in terms if not t.exact),
                      *(f"{name} (normalised at the window's start)" for name in normalised)])
    if approximated:
        inexact.append(f"{approximated} count tables (by lines through breakpoints, concave within "
                       f"{TOLERANCE:.0%} of their span)")
    return Stage("score", expr + sum(t.expr for t in terms) + cp_model.LinearExpr.sum(tabled), True,
                 lambda c: static(c) + sum(f(c) for f in evals),
                 surrogate="final-state score; not exact for " + ", ".join(inexact) if inexact else "")


def count_tables(v: Variables, terms: list[ObjectiveTerm]) -> tuple[list, list, int]:
    """Every term's count tables (`ObjectiveTerm.tables`) summed per variable, T[g, n](k) = Σ_i tables_i[g, n][k],
    each sum encoded once by `piecewise` as t[g, n] = T[g, n](y[g, n]): (the t variables, their values on counts,
    how many sums the lines approximate somewhere instead of matching them on every count)."""
    summed: dict[tuple[int, int], np.ndarray] = {}
    for term in terms:
        for key, table in term.tables.items():
            row = np.asarray(table, dtype=np.int64)
            summed[key] = summed[key] + row if key in summed else row
    tvars, values, approximated = [], [], 0
    for (gid, n), table in summed.items():
        def count(c, gid=gid, n=n):
            return c.get(gid, {}).get(n, 0)
        t, value = piecewise(v, v.y[gid][n], table.tolist(), f"score_{gid}_{n}", count)
        approximated += any(value({gid: {n: k}}) != int(x) for k, x in enumerate(table.tolist()))
        tvars.append(t)
        values.append(value)
    return tvars, values, approximated


def goal_stage(v: Variables, goal: str) -> Stage | None:
    """The stage for pack or balance; None for the default objective."""
    state, index = v.state, v.state.index
    if goal == "pack":
        used_terms, hints = [], []
        for n, entries in v.by_node.items():
            if state.pod_count[n] > 0:
                continue
            used = v.model.new_bool_var(f"used_{n}")
            for g, var in entries:
                v.model.add(var <= v.ub[g.gid][n] * used)
            # Capacity only on a used node (bin packing's strong form: it tightens the LP bound a lot).
            free = index.alloc[n] - state.requested[n]
            for r in range(len(index.resources)):
                terms = [(int(index.pod_req[g.rep.idx, r]), var) for g, var in entries if index.pod_req[g.rep.idx, r]]
                if terms:
                    v.model.add(cp_model.LinearExpr.weighted_sum([t for _, t in terms], [c for c, _ in terms])
                                <= int(free[r]) * used)
            used_terms.append(used)
            v.aux_hints.append((used, lambda c, n=n, es=entries: int(any(c.get(g.gid, {}).get(n, 0) for g, _ in es))))
            hints.append(n)

        def evaluate(counts, nodes=tuple(hints)):
            return sum(1 for n in nodes if any(c.get(n, 0) for c in counts.values()))

        _break_node_symmetry(v, dict(zip(hints, used_terms, strict=True)))
        stage = Stage("pack (empty nodes used)", cp_model.LinearExpr.sum(used_terms), False, evaluate)
        return stage
    if goal == "balance":
        cols = [index.rid["cpu"], index.rid["memory"]]
        base = np.zeros(len(index.nodes))
        for r in cols:
            with np.errstate(divide="ignore", invalid="ignore"):
                util = np.where(index.alloc[:, r] > 0, 1000 * state.requested[:, r] / index.alloc[:, r], 0)
            base = np.maximum(base, util)
        floor = int(np.ceil(base.max())) if len(base) else 0
        peak = v.model.new_int_var(floor, max(floor, 1000), "peak_per_mille")
        for n, entries in v.by_node.items():
            for r in cols:
                alloc = int(index.alloc[n, r])
                if alloc <= 0:
                    continue
                load = int(state.requested[n, r]) + sum(int(index.pod_req[g.rep.idx, r]) * var for g, var in entries)
                v.model.add(1000 * load <= peak * alloc)

        def evaluate(counts):
            worst = floor
            for n, entries in v.by_node.items():
                for r in cols:
                    alloc = int(index.alloc[n, r])
                    if alloc <= 0:
                        continue
                    load = int(state.requested[n, r]) + sum(
                        int(index.pod_req[g.rep.idx, r]) * counts.get(g.gid, {}).get(n, 0) for g, _ in entries)
                    worst = max(worst, -(-1000 * load // alloc))
            return worst

        v.aux_hints.append((peak, evaluate))
        return Stage("balance (peak utilisation, per mille)", peak, False, evaluate)
    return None


def _break_node_symmetry(v: Variables, used: dict[int, cp_model.IntVar]) -> None:
    """Empty nodes that no rule tells apart are interchangeable: same allocatable, labels (but the hostname),
    taints and cordon, and the same variables with the same bounds and score coefficients for every group.
    Within such a class (in node-tree order) used[n₁] ≥ used[n₂] ≥ …; hints are relabelled into that order
    (`Variables.symmetric`). Skipped when any group has volumes (a local PV names its node)."""
    if any(g.rep.pod.spec.volumes for g in v.groups.values()):
        return
    index = v.state.index
    coef = v.coefficients
    rank = {int(n): i for i, n in enumerate(index.tree_order.tolist())}
    classes: dict[tuple, list[int]] = {}
    for n in sorted(used, key=rank.__getitem__):
        labels = tuple(sorted((k, val) for k, val in index.node_labels[n].items() if k != HOSTNAME))
        taints = tuple((t.key, t.value, t.effect) for t in index.node_taints[n])
        groups = tuple(sorted((g.gid, v.ub[g.gid][n], coef.get(g.gid, {}).get(n, 0)) for g, _ in v.by_node[n]))
        key = (tuple(index.alloc[n].tolist()), int(index.max_pods[n]), labels, taints, bool(index.unschedulable[n]),
               groups)
        classes.setdefault(key, []).append(n)
    for nodes in classes.values():
        if len(nodes) < 2:
            continue
        for a, b in itertools.pairwise(nodes):
            v.model.add(used[a] >= used[b])
        v.symmetric.append(nodes)


def disruption_stage(v: Variables, priority: dict[int, int], pdbs: dict[int, list[int]] | None = None,
                     allowed: dict[int, int] | None = None) -> Stage | None:
    """Minimise the disruption (module doc, 2.): `priority` of each victim with an e_v; `pdbs`/`allowed` (PDB →
    its candidates, its budget) when violations are allowed, each violation then weighing more than every victim.
    When those weights would not fit in 62 bits every victim weighs 1 (fewest victims). None without victims."""
    if not v.evict:
        return None
    levels = sorted({priority[i] for i in v.evict})
    weight, w = {}, 1
    for lvl in levels:
        weight[lvl] = w
        w *= sum(1 for i in v.evict if priority[i] == lvl) + 1
    if w >= LIMIT:
        weight, w = dict.fromkeys(levels, 1), len(v.evict) + 1
    coef = {i: weight[priority[i]] for i in v.evict}
    expr = cp_model.LinearExpr.weighted_sum([v.evict[i] for i in coef], list(coef.values()))
    over: list[tuple[list[int], int, object]] = []
    for b, members in (pdbs or {}).items():
        mine = [i for i in members if i in v.evict]
        if len(mine) > (allowed or {}).get(b, 0):
            viol = v.model.new_int_var(0, len(mine), f"pdb_violations_{b}")
            v.model.add(viol >= sum(v.evict[i] for i in mine) - allowed[b])
            over.append((mine, allowed[b], viol))
            expr += w * viol

    def evaluate(counts, coef=coef, over=tuple(over), w=w):
        gone = counts.get(EVICTED, {})
        return sum(c for i, c in coef.items() if gone.get(i)) + w * sum(
            max(0, sum(1 for i in mine if gone.get(i)) - budget) for mine, budget, _ in over)

    for mine, budget, viol in over:
        v.aux_hints.append((viol, lambda c, mine=mine, budget=budget: max(
            0, sum(1 for i in mine if c.get(EVICTED, {}).get(i)) - budget)))
    return Stage("disruption (victims by priority)", expr, False, evaluate, best=0)


def gang_stage(v: Variables) -> Stage | None:
    """Σ_G z_G, the gangs that run (`plugins/gangscheduling`), maximised once pods placed are fixed: the same pods
    in more, smaller gangs admit more jobs. None without gangs to complete in the model."""
    if not v.gangs:
        return None

    def evaluate(counts, gangs=v.gangs):
        return sum(1 for _, gids in gangs if any(sum(counts.get(gid, {}).values()) for gid in gids))

    return Stage("gangs", cp_model.LinearExpr.sum([z for z, _ in v.gangs]), True, evaluate, share=0.3)


def gang_domain_stage(v: Variables) -> Stage | None:
    """Σ u_{G,d}: the domains of their preferred topology key the gangs use (Kueue's podset-preferred-topology),
    minimised after pods placed, gangs and disruption. None when no gang prefers a topology."""
    if not v.gang_domains:
        return None

    def evaluate(counts, terms=v.gang_domains):
        return sum(1 for _, nodes, gids in terms
                   if any(cnt for gid in gids for n, cnt in counts.get(gid, {}).items() if n in nodes))

    return Stage("gang domains", cp_model.LinearExpr.sum([u for u, _, _ in v.gang_domains]), False, evaluate,
                 share=0.3)


def objective_stages(v: Variables, groups: list[PodGroup], domains: dict[int, GroupDomain], goal: str,
                     terms: list[ObjectiveTerm], normalised: list[str], disruption: Stage | None = None
                     ) -> list[Stage]:
    stages = placement_stages(v, groups)
    gangs = gang_stage(v)
    if gangs is not None:
        stages.append(gangs)
    if disruption is not None:
        stages.append(disruption)
    domains_used = gang_domain_stage(v)
    if domains_used is not None:
        stages.append(domains_used)
    score = score_stage(v, groups, domains, terms, normalised)
    goal_s = goal_stage(v, goal)
    if goal_s is None:
        return [*stages, score]
    goal_s.share = 0.8
    return [*stages, goal_s, score]
