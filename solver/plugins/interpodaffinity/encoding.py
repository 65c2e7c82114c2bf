"""CP-SAT objective term of InterPodAffinity's score (preferred terms, and existing pods' terms matching the pod)
on the window's final domain counts.

kube scores pod p on node n as raw(n) = Σ over p's preferred terms t of ±w_t·(pods matching t in n's t-domain)
+ Σ over other pods q in the domain of q's terms matching p (preferred ±w, required affinity +hardPodAffinityWeight),
normalised 100·(raw − min)/(max − min) over the nodes p could use. Against a fixed range R_g (max − min estimated
on the hint's final state, `EncodingContext.reference`; Σ|w| when that is 0), a pod of group g gains
ρ_g = 100/R_g points per unit of raw score. Splitting raw(n) by where the other pods come from:

- bound pods: raw⁰_g(n), the plugin's own score at the window's start: a linear term ρ_g·raw⁰_g(n)·y[g, n];
- window pods: a term t of group g (sign s, weight w) that matches group h gives each g-pod s·w per h-pod in its
  t-domain d (its own term) and each h-pod s·w per g-pod there (an existing pod's term matching it). The
  measure normalises each pod's raw score over the nodes it could use, so what counts is whether a pod has a
  match in its domain, not how many: with Z_{g,d} = Σ_{n∈d} y[g, n] and b_{h,d} = [Z_{h,d} ≥ 1] (Z ≤ ub·b, b ≤ Z),
  the window gains ρ_g·s·w·S_{g,h,d}, S the g-pods that share d with some h-pod: S ≤ Z_g, S ≤ ub·b_h for
  affinity (maximised), S ≥ Z_g − ub·(1 − b_h) for anti-affinity (minimised): exact for that count. Within one
  group (h = g): k·[k ≥ 2] pods gain for affinity, and a convex k(k − 1) loss for anti-affinity, which also
  tells two pods sharing a domain from three.

The fixed range and the saturation at one match (kube's normalisation moves with the plan) keep this a
surrogate of the measure.
"""

from __future__ import annotations

from collections import defaultdict

import networkx as nx
import numpy as np
from kplace.models.index import HOSTNAME

from ...framework.encoding import (
    SCALE,
    ConstraintContext,
    EncodingContext,
    LinearTerms,
    ObjectiveTerm,
    PluginEncoding,
    piecewise,
)
from ...framework.plugin import CycleState
from .terms import affinity_counts, pod_terms, resolve_namespaces


def _raw(ctx: EncodingContext, state, g, nodes: np.ndarray) -> np.ndarray | None:
    cycle = CycleState()
    if not ctx.plugin.pre_score(state, g.rep, cycle, nodes):
        return None
    return np.asarray(ctx.plugin.score(state, g.rep, cycle, nodes), dtype=np.int64)


def _present(h, cache: dict, gid: int, key: str, v: int):
    """A boolean equal to [Z_{g,d} ≥ 1]: Z ≤ ub·b and b ≤ Z."""
    k = ("present", gid, key, v)
    if k not in cache:
        b = h.model.new_bool_var(f"ipa_in_{gid}_{v}_{len(cache)}")
        z = sum(h.domains(gid, key)[v])
        h.model.add(z <= h.domain_ub(gid, key, v) * b)
        h.model.add(b <= z)
        h.aux_hints.append((b, lambda cs, gid=gid, key=key, v=v: int(h.hinted_domain(cs, gid, key, v) > 0)))
        cache[k] = b
    return cache[k]


def affinity_term(ctx: EncodingContext) -> ObjectiveTerm | None:
    h, plugin = ctx.handle, ctx.plugin
    index = h.state.index
    groups = [g for g in h.groups.values() if h.y[g.gid]]
    terms_of = {g.gid: pod_terms(index, g.rep) for g in groups}
    carried = {g.gid: [*((t, t.weight, True) for t in terms_of[g.gid].preferred_affinity),
                       *((t, -t.weight, True) for t in terms_of[g.gid].preferred_anti),
                       *((t, plugin.hard_pod_affinity_weight, False) for t in terms_of[g.gid].required_affinity
                         if plugin.hard_pod_affinity_weight > 0)] for g in groups}
    scored_by_existing = {g.gid: not plugin.ignore_preferred_terms_of_existing_pods
                          or bool(terms_of[g.gid].preferred_affinity or terms_of[g.gid].preferred_anti) for g in groups}
    rate: dict[int, float] = {}
    for g in groups:
        nodes = np.array(sorted(h.y[g.gid]), dtype=np.int64)
        raw = _raw(ctx, ctx.reference, g, nodes)
        spread = int(raw.max() - raw.min()) if raw is not None and len(raw) else 0
        fallback = sum(abs(w) for _, w, _ in carried[g.gid]) or 1
        rate[g.gid] = SCALE * ctx.weight * 100 / (spread or fallback)
    out = LinearTerms()
    for g in groups:  # bound pods: the plugin's own score at the window's start
        nodes = np.array(sorted(h.y[g.gid]), dtype=np.int64)
        raw = _raw(ctx, h.state, g, nodes)
        if raw is None:
            continue
        for n, r in zip(nodes.tolist(), raw.tolist(), strict=True):
            out.add(h.y[g.gid][n], round(rate[g.gid] * r), lambda cs, gid=g.gid, n=n: cs.get(gid, {}).get(n, 0))
    own: dict[tuple[int, int, str], float] = {}  # (g, h, key) → Σ s·w·ρ_g over g's terms matching h
    for g in groups:
        for t, w, is_own in carried[g.gid]:
            names = resolve_namespaces(index, t)
            for m in ctx.matcher.term(t):
                if m.gid not in rate or (names is not None and m.rep.namespace not in names):
                    continue
                if is_own:  # the g-pods' own term
                    own[(g.gid, m.gid, t.topology_key)] = own.get((g.gid, m.gid, t.topology_key), 0.0) + w * rate[g.gid]
                if scored_by_existing[m.gid]:  # the h-pods, scored by g's term as an existing pod's
                    key = (m.gid, g.gid, t.topology_key)
                    own[key] = own.get(key, 0.0) + w * rate[m.gid]
    present: dict = {}
    for (a, b, key), coef in own.items():  # the a-pods gain `coef` each where some b-pod shares their domain
        if round(coef) == 0:
            continue
        da, db = h.domains(a, key), h.domains(b, key)
        for v in sorted(set(da) & set(db)):
            ub = h.domain_ub(a, key, v)
            za = sum(da[v])

            def zcount(cs, a=a, key=key, v=v):
                return h.hinted_domain(cs, a, key, v)

            if a == b:  # the others of the group: k·[k ≥ 2] pods gain, or a k(k − 1) loss for anti-affinity
                if ub < 2:
                    continue
                values = [round(coef * k * (k - 1)) if coef < 0 else (round(coef * k) if k >= 2 else 0)
                          for k in range(ub + 1)]
                t, value = piecewise(h, za, values, f"ipa_{a}_{v}_{len(present)}", zcount)
                present[("self", a, key, v)] = t
                out.add(t, 1, value)
                continue
            pb = _present(h, present, b, key, v)
            s_ = h.model.new_int_var(0, ub, f"ipa_s_{a}_{b}_{v}")

            def hit(cs, a=a, b=b, key=key, v=v):
                return h.hinted_domain(cs, a, key, v) if h.hinted_domain(cs, b, key, v) > 0 else 0

            if coef > 0:  # s ≤ Z_a, s ≤ ub·[Z_b ≥ 1]
                h.model.add(s_ <= za)
                h.model.add(s_ <= ub * pb)
            else:  # s ≥ Z_a − ub·(1 − [Z_b ≥ 1])
                h.model.add(s_ >= za - ub * (1 - pb))
            h.aux_hints.append((s_, hit))
            out.add(s_, round(coef), hit)
    return out.term("InterPodAffinity", note="normalised by the hint's range", domains=True)


def anti_affinity_pairs(index, match) -> set[tuple[int, int, str]]:
    """(g, h, key) with g ≤ h such that g's required anti-affinity term on `key` matches h, or h's matches g."""
    pairs: set[tuple[int, int, str]] = set()
    for g in match.groups:
        for t in pod_terms(index, g.rep).required_anti:
            for h in match.term(t):
                a, b = sorted((g.gid, h.gid))
                pairs.add((a, b, t.topology_key))
    return pairs


def _anti_affinity(v, groups, match) -> None:
    """Required anti-affinity between groups (see `required`), with hostname cliques as cuts."""
    pairs = anti_affinity_pairs(v.state.index, match)
    for a, b, key in pairs:
        if a == b:
            if key == HOSTNAME:
                v.cap_per_node(a, 1)
            else:
                for val, terms in v.domains(a, key).items():
                    if v.domain_ub(a, key, val) > 1:
                        v.model.add(sum(terms) <= 1)
    one_per_node = {g.gid for g in groups if all(u <= 1 for u in v.ub[g.gid].values())}
    graph = nx.Graph()
    for a, b, key in pairs:
        if a == b:
            continue
        if key == HOSTNAME and a in one_per_node and b in one_per_node:
            graph.add_edge(a, b)
            continue
        da, db = v.domains(a, key), v.domains(b, key)
        for val in set(da) & set(db):
            lit = v.model.new_bool_var(f"anti_{a}_{b}_{val}")
            v.model.add(sum(da[val]) <= v.domain_ub(a, key, val) * lit)
            v.model.add(sum(db[val]) <= v.domain_ub(b, key, val) * (1 - lit))
            v.aux_hints.append((lit, lambda c, a=a, key=key, val=val: int(v.hinted_domain(c, a, key, val) > 0)))
    for clique in nx.find_cliques(graph):
        nodes = set().union(*(v.y[g].keys() for g in clique))
        for n in nodes:
            terms = [v.y[g][n] for g in clique if n in v.y[g]]
            if len(terms) > 1:
                v.model.add(sum(terms) <= 1)


def _affinity(v, groups, match) -> None:
    index, state = v.state.index, v.state
    needs = {}
    for g in groups:
        terms = pod_terms(index, g.rep).required_affinity
        if terms and v.y[g.gid]:
            needs[g.gid] = (terms, match.terms(terms))
    support_graph = nx.DiGraph()
    support_graph.add_nodes_from(needs)
    support_graph.add_edges_from((h.gid, gid) for gid, (_, matching) in needs.items() for h in matching
                                 if h.gid != gid)
    component = {gid: i for i, comp in enumerate(nx.strongly_connected_components(support_graph)) for gid in comp}
    seeds: dict[int, list] = defaultdict(list)
    for g in groups:
        if g.gid not in needs:
            continue
        terms, matching = needs[g.gid]
        self_match = any(h is g for h in matching)
        # Support from g's own component only from earlier groups: no cycle of groups waiting for each other.
        others = [h for h in matching if h is not g
                  and (component[h.gid] != component[g.gid] or h.gid < g.gid)]
        fixed = affinity_counts(state, terms)
        first_allowed = self_match and not any(int(arr.sum()) > 0 for arr in fixed.values())
        seed = seed_hints = None
        if first_allowed:
            seed = v.model.new_bool_var(f"seed_{g.gid}")
            seeds[component[g.gid]].append(seed)
            seed_hints = []
            v.aux_hints.append((seed, lambda c, fs=seed_hints: max((f(c) for f in fs), default=0)))
        for t in terms:
            key = t.topology_key
            fixed_at = fixed.get(key)
            firsts = []
            for val in v.domains(g.gid, key):
                if fixed_at is not None and fixed_at[val] > 0:
                    continue
                a = v.presence(g.gid, key, val)
                support = [var for h in others for var in v.domains(h.gid, key).get(val, [])]
                if first_allowed:
                    first = v.model.new_bool_var(f"first_{g.gid}_{key}_{val}")
                    firsts.append(first)
                    v.model.add(sum(support) >= a - first)
                    v.model.add(first <= seed)

                    def hint_first(c, val=val, key=key, g=g, others=others):
                        mine = v.hinted_domain(c, g.gid, key, val)
                        theirs = sum(v.hinted_domain(c, h.gid, key, val) for h in others)
                        return int(mine > 0 and theirs == 0)

                    v.aux_hints.append((first, hint_first))
                    seed_hints.append(hint_first)
                elif support:
                    v.model.add(sum(support) >= a)
                else:
                    v.model.add(a == 0)
            if len(firsts) > 1:
                v.model.add(sum(firsts) <= 1)
    for lits in seeds.values():
        if len(lits) > 1:
            v.model.add(sum(lits) <= 1)

def prune(plugin, state, group, cycle, nodes):
    """Nodes the Filter rejects because of bound pods alone (required anti-affinity either way), and nodes
    lacking a required affinity term's key: the rest is the model's."""
    from . import REASON_ANTI_AFFINITY, REASON_EXISTING_ANTI_AFFINITY

    keep = np.ones(len(nodes), dtype=bool)
    res = plugin.filter(state, group.rep, cycle, nodes)
    for text, mask in res.reasons:
        if text in (REASON_ANTI_AFFINITY, REASON_EXISTING_ANTI_AFFINITY):
            keep &= ~mask
    for term in group.rep.required_affinity:
        keep &= state.index.label_column(term.topology_key)[0][nodes] >= 0
    return keep


def ties(index, match) -> set[tuple[int, int]]:
    """Groups a required (anti-)affinity term of one matches."""
    edges: set[tuple[int, int]] = set()
    for g in match.groups:
        terms = pod_terms(index, g.rep)
        for t in (*terms.required_anti, *terms.required_affinity):
            edges.update((g.gid, h.gid) for h in match.term(t) if h is not g)
    return edges


def required(ctx: ConstraintContext) -> None:
    """Required anti-affinity (term of g, key K, matching group h), per value v of K:
        h = g:  Y[g, v] ≤ 1;   h ≠ g:  Y[g, v] ≤ |g|·b_v,  Y[h, v] ≤ |h|·(1 − b_v)   (never together)
      On the hostname key, groups that pairwise exclude each other and are themselves one-per-node form a
      graph; each maximal clique C gives Σ_{g∈C} y[g, n] ≤ 1 (networkx `find_cliques`).
    Required affinity (terms T of g; H = other groups matching all of T; F = bound pods matching all of T), per
      term and value v with F[v] = 0:   Σ_{h∈H} Y[h, v] ≥ a[g, v] − first[g, v],   Σ_v first[g, v] ≤ 1
      where a[g, v] ⇐ Y[g, v] > 0, and first exists only when no bound pod matches anywhere and g matches its
      own terms (kube's first-pod rule): one domain may be seeded by g itself; every other domain needs a pod
      of another matching group (g's own pods may then join, as each later pod finds the earlier ones).
      Across groups, support must come from pods placed earlier, so it may not go round in a cycle: in the
      graph h → g (h ∈ H of g), a group in g's own strongly connected component supports g only if it comes
      first (lower gid); and a seed is the first pod matching its terms anywhere, so at most one group per
      component seeds (Σ seed[g] ≤ 1, first[g, v] ≤ seed[g]).
    Final-state forms of kube's sequential checks: for groups of identical pods, a final state satisfies them
    exactly when some order of placing the pods passes kube's filter at every step."""
    _anti_affinity(ctx.handle, ctx.groups, ctx.matcher)
    _affinity(ctx.handle, ctx.groups, ctx.matcher)


ENCODINGS = {"InterPodAffinity": PluginEncoding(ties=ties, constrain=required, score=affinity_term, prune=prune)}
