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

import numpy as np

from ...framework.encoding import SCALE, EncodingContext, LinearTerms, ObjectiveTerm, piecewise
from ...framework.plugin import CycleState
from .terms import pod_terms, resolve_namespaces


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
    return out.term("InterPodAffinity", note="normalised by the hint's range")


ENCODINGS = {"InterPodAffinity": affinity_term}
