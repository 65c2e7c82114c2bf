"""CP-SAT objective term of PodTopologySpread's score (ScheduleAnyway and the system default constraints) on the
window's final domain counts.

kube scores pod p on node n as raw(n) = Σ_c cnt_c(n)·w_c + (maxSkew_c − 1), w_c = ln(#domains_c + 2), and
normalises 100·(max + min − raw)/max over the nodes p could use. In the final state with p taken out,
cnt_c(n) = C_d − [p matches c] for n's domain d, where C_d counts the pods matching c's selector in d. Against
a fixed max (estimated from the hint's final state, `EncodingContext.reference`), each placed carrier of c
loses 100·w_c/max points per other matching pod in its domain, so the window's loss is

    Σ_c (100·w_c / max_c) · Σ_d φ · Z_d (B_d + Z_d − 1),   Z_d = Σ_{h matching c} Σ_{n ∈ d} y[h, n],

with B_d the bound pods matching c in d and φ = (carriers' pods that match c) / (window pods matching c):
exact in Z_d when every window pod matching c carries c (a Deployment's replicas), a pro-rata share
otherwise. Z(B + Z − 1) is convex, so its negation is encoded by tangent lines (`piecewise`): exact at integer
counts. Carriers that do not match their own selector lose 100·w_c/max per bound pod in their domain: a linear
term. The estimated max (kube's min term is left out) is what keeps this a surrogate of the measure.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from ...framework.encoding import (
    SCALE,
    ConstraintContext,
    EncodingContext,
    LinearTerms,
    ObjectiveTerm,
    PluginEncoding,
    piecewise,
)
from .spread import compile_constraints, has_all_keys, included, matching_per_node, pod_constraints, score_state


def spread_term(ctx: EncodingContext) -> ObjectiveTerm | None:
    h, plugin = ctx.handle, ctx.plugin
    index = h.state.index
    carriers: dict[tuple, list] = {}  # (namespace, selector, key) → [(group, constraint)]
    max_raw: dict[int, float] = {}
    for g in h.groups.values():
        if not h.y[g.gid]:
            continue
        constraints = pod_constraints(index, g.rep, "ScheduleAnyway", plugin.default_constraints)
        if not constraints:
            continue
        require_all = bool(g.rep.spread_constraints) or not plugin.system_defaulted
        nodes = np.flatnonzero(has_all_keys(index, constraints)).astype(np.int64)
        if len(nodes) == 0:
            continue
        max_raw[g.gid] = float(score_state(ctx.reference, g.rep, constraints, require_all, nodes).raw.max())
        for c in constraints:
            carriers.setdefault((g.rep.namespace, c.selector, c.key), []).append((g, c))
    terms = LinearTerms()
    for (namespace, selector, key), members in carriers.items():
        g0, c = members[0]
        ids, values = index.label_column(key)
        eligible = included(index, g0.rep, c, frozenset([key]))
        n_domains = int(eligible.sum()) if key == "kubernetes.io/hostname" else len(np.unique(ids[eligible]))
        w = math.log(n_domains + 2)
        bound = np.bincount(ids[eligible], weights=matching_per_node(h.state, g0.rep, c)[eligible],
                            minlength=len(values)).astype(np.int64)
        matched = [] if c.selector.empty or c.selector.nothing else ctx.matcher.selector(namespace, selector)
        matched = [m for m in matched if h.y.get(m.gid)]
        matched_ids = {m.gid for m in matched}
        own = sum(g.size for g, _ in members if g.gid in matched_ids)
        share = own / sum(m.size for m in matched) if matched else 0.0
        rate = {g.gid: SCALE * ctx.weight * 100 * w / max_raw[g.gid] for g, _ in members if max_raw.get(g.gid, 0) > 0}
        if not rate:
            continue
        coef = sum(rate.values()) / len(rate)
        for g, _ in members:  # carriers outside the matched set: a pod per bound match in the domain
            if g.gid in matched_ids or g.gid not in rate:
                continue
            for n, var in h.y[g.gid].items():
                if ids[n] >= 0:
                    terms.add(var, -round(rate[g.gid] * bound[ids[n]]),
                              lambda cs, gid=g.gid, n=n: cs.get(gid, {}).get(n, 0))
        if not matched or share <= 0:
            continue
        counted = np.zeros(len(values), dtype=bool)  # domains with an eligible node
        counted[ids[eligible]] = True
        per_domain: dict[int, list] = {}
        for m in matched:
            for v, ys in h.domains(m.gid, key).items():
                if counted[v]:
                    per_domain.setdefault(v, []).extend((m.gid, var) for var in ys)
        for v, entries in per_domain.items():
            ub = sum(h.domain_ub(gid, key, v) for gid in {gid for gid, _ in entries})
            b = int(bound[v])
            values_k = [-round(coef * share * k * (b + k - 1)) for k in range(ub + 1)]
            if all(x == 0 for x in values_k):
                continue
            expr = sum(var for _, var in entries)
            gids = {gid for gid, _ in entries}

            def count(cs, gids=gids, key=key, v=v):
                return sum(h.hinted_domain(cs, gid, key, v) for gid in gids)

            t, value = piecewise(h, expr, values_k, f"spread_{len(h.aux_hints)}", count)
            terms.add(t, 1, value)
    return terms.term("PodTopologySpread", note="normalised by the hint's maximum", domains=True)


def do_not_schedule(ctx: ConstraintContext) -> None:
    """DoNotSchedule spread (constraint c of g; counts over eligible nodes, same namespace, matching c's selector):
      C_v = F_v + Σ_{h matching} Y[h, v];  m ≤ C_v for every domain v (m = 0 with fewer domains than minDomains);
      a[g, v] ⇒ C_v − m ≤ maxSkew.  When g is the only window group the selector matches and F_v ≤ maxSkew, the
      implication holds unconditionally (with Y[g, v] = 0, C_v − m = F_v − m ≤ maxSkew as m ≥ 0), so it is posted
      without the enforcement literal: the same integer solutions, a much tighter linear relaxation.
    The final-state form of kube's sequential check, exact for groups of identical pods."""
    v, groups, match = ctx.handle, ctx.groups, ctx.matcher
    defaults = _defaults(ctx.profile)
    index, state = v.state.index, v.state
    for g in groups:
        constraints = pod_constraints(index, g.rep, "DoNotSchedule", defaults)
        if not constraints or not v.y[g.gid]:
            continue
        keys = frozenset(c.key for c in constraints)
        for k, c in enumerate(constraints):
            ids, values = index.label_column(c.key)
            eligible = included(index, g.rep, c, keys)
            present = np.flatnonzero(np.bincount(ids[eligible], minlength=len(values)) > 0)
            fixed = np.bincount(ids[eligible], weights=matching_per_node(state, g.rep, c)[eligible],
                                minlength=len(values)).astype(np.int64)
            members = match.selector(g.rep.namespace, c.selector)
            count: dict[int, list] = defaultdict(list)
            for h in members:
                for n, var in v.y[h.gid].items():
                    if eligible[n] and ids[n] >= 0:
                        count[int(ids[n])].append(var)
            window_total = sum(h.size for h in members)
            if len(present) < c.min_domains:
                m = 0
            else:
                m = v.model.new_int_var(0, int(fixed[present].min()) + window_total, f"min_{g.gid}_{k}")
                for val in present.tolist():
                    v.model.add(m <= int(fixed[val]) + sum(count.get(val, [])))

                def hint_min(cnt, members=members, present=present, fixed=fixed, ids=ids, eligible=eligible):
                    tot = fixed.copy()
                    for h in members:
                        for n, c_ in cnt.get(h.gid, {}).items():
                            if n in v.y[h.gid] and eligible[n] and ids[n] >= 0:
                                tot[ids[n]] += c_
                    return int(tot[present].min())

                v.aux_hints.append((m, hint_min))
            alone = [h.gid for h in members] == [g.gid]
            for val in v.domains(g.gid, c.key):
                ct = v.model.add(int(fixed[val]) + sum(count.get(val, [])) - m <= c.max_skew)
                if not (alone and fixed[val] <= c.max_skew):
                    ct.only_enforce_if(v.presence(g.gid, c.key, val))

def _defaults(profile) -> list:
    """The profile's PodTopologySpread default constraints (none when the plugin is disabled)."""
    plugin = next((p for p in profile.at("filter") if p.name == "PodTopologySpread"), None)
    return plugin.default_constraints if plugin is not None else []


def prune(plugin, state, group, cycle, nodes):
    """Nodes lacking a DoNotSchedule constraint's key (the Filter's UnschedulableAndUnresolvable): the skew
    itself is the model's."""
    from . import REASON_NODE_LABEL_NOT_MATCH

    keep = np.ones(len(nodes), dtype=bool)
    for text, mask in plugin.filter(state, group.rep, cycle, nodes).reasons:
        if text == REASON_NODE_LABEL_NOT_MATCH:
            keep &= ~mask
    return keep


def ties(index, match) -> set[tuple[int, int]]:
    """Groups a DoNotSchedule constraint's selector of one matches."""
    edges: set[tuple[int, int]] = set()
    for g in match.groups:
        for c in compile_constraints(g.rep.spread_constraints, g.rep.labels, "DoNotSchedule"):
            edges.update((g.gid, h.gid) for h in match.selector(g.rep.namespace, c.selector) if h is not g)
    return edges


ENCODINGS = {"PodTopologySpread": PluginEncoding(ties=ties, constrain=do_not_schedule, score=spread_term, prune=prune)}
