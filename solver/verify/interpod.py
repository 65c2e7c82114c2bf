"""InterPodAffinity's filter: required pod affinity with kube's first-pod rule, and required anti-affinity both
ways (the pod's own terms, and bound pods' terms that select the pod).

A term T of pod p selects pod q when q's namespace is in T's namespaces or matches its namespaceSelector, and
T's label selector matches q's labels. On node n with value v = labels(n)[T.key]:
- affinity holds when every term has v defined and a bound pod matching all of p's terms in domain v; or,
  when no bound pod anywhere matches them and p matches its own terms (the first pod of its group);
- p's anti-affinity term T fails when a bound pod T selects is in domain v;
- a bound pod's anti-affinity term T that selects p fails when that pod is in domain v.
"""

from __future__ import annotations

from collections import Counter

from .counts import Counts, DomainCount, sources
from .nodes import Nodes
from .records import CompiledPod, Term


class InterPodAffinity:
    """The filter over the replay's counts, with the bound pods' anti-affinity terms counted per domain."""

    def __init__(self, nodes: Nodes, counts: Counts) -> None:
        self.nodes, self.counts = nodes, counts
        self.reset()

    def reset(self) -> None:
        # Bound pods' required anti-affinity: per term, how many pods carry it per value of its key.
        self.anti_terms: dict[Term, Counter[str]] = {}
        self.anti_order: dict[Term, int] = {}  # term → when it was first counted (the order terms are checked in)
        # terms by a label pair every pod they select carries (their first matchLabels pair; None: no such pair)
        self.anti_by_anchor: dict[tuple[str, str] | None, list[Term]] = {}
        self.anti_match: dict[tuple, tuple[dict, list[Term]]] = {}

    def add(self, anti: list[Term], n: int, sign: int) -> None:
        """A pod carrying anti-affinity terms `anti` binds to (sign +1) or leaves (−1) node n."""
        for t in anti:
            value = self.nodes.labels[n].get(t.key)
            if value is not None:
                if t not in self.anti_terms:
                    self.anti_terms[t] = Counter()
                    self.anti_order[t] = len(self.anti_order)
                    self.anti_by_anchor.setdefault(t.selector.anchor, []).append(t)
                self.anti_terms[t][value] += sign

    def term_matches(self, t: Term, q: CompiledPod) -> bool:
        return ((q.ns in t.names or t.ns_selector.matches(self.nodes.ns_labels.get(q.ns, {})))
                and t.selector.matches(q.labels))

    def term_count(self, terms: list[Term], key: str) -> DomainCount:
        """Pods matching every term of `terms`, per value of `key` (on nodes carrying `key`)."""
        terms_t = tuple(terms)
        t0 = terms_t[0]
        srcs = sources(t0.names if t0.ns_selector.nothing else None, t0.selector)
        return self.counts.count(("terms", terms_t, key), key,
                                 lambda q: all(self.term_matches(t, q) for t in terms_t), self.nodes.has_key(key),
                                 srcs)

    def could_seed(self, p: CompiledPod, aff: list[Term]) -> bool:
        """`p` has affinity terms and matches them all, so it could start its group by the first-pod rule."""
        return bool(aff) and all(self.term_matches(t, p) for t in aff)

    def affinity_fails(self, p: CompiledPod, n: int, aff: list[Term]) -> str | None:
        labels = self.nodes.labels[n]
        for t in aff:
            if t.key not in labels:
                return f"node(s) didn't match pod affinity rules (missing topology key {t.key})"
        counts = [self.term_count(aff, t.key) for t in aff]
        if all(c.by_value[labels[t.key]] > 0 for c, t in zip(counts, aff, strict=True)):
            return None
        if all(c.total == 0 for c in counts) and all(self.term_matches(t, p) for t in aff):
            return None  # kube's first-pod rule
        return "node(s) didn't match pod affinity rules"

    def existing_anti_matching(self, p: CompiledPod) -> list[Term]:
        """Bound pods' anti-affinity terms that select `p`, in the order they were first counted (cached per
        namespace and label set; only the terms anchored on no label pair or on one of `p`'s are tried)."""
        key = (p.ns, frozenset(p.labels.items()))
        seen, terms = self.anti_match.get(key, ({}, []))
        grown = False
        for anchor in (None, *p.labels.items()):
            bucket = self.anti_by_anchor.get(anchor)
            if bucket and seen.get(anchor, 0) < len(bucket):
                new = [t for t in bucket[seen.get(anchor, 0):] if self.term_matches(t, p)]
                seen = {**seen, anchor: len(bucket)}
                if new:
                    terms, grown = [*terms, *new], True
                self.anti_match[key] = (seen, terms)
        if grown:
            terms.sort(key=self.anti_order.__getitem__)
        return terms

    def fails(self, p: CompiledPod, n: int, aff: list[Term], anti: list[Term]) -> str | None:
        """Why `p` (with affinity terms `aff`, anti-affinity terms `anti`) may not bind to node n, or None."""
        if aff:
            fail = self.affinity_fails(p, n, aff)
            if fail:
                return fail
        labels = self.nodes.labels[n]
        for t in anti:
            value = labels.get(t.key)
            if value is not None and self.term_count([t], t.key).by_value[value] > 0:
                return f"node(s) didn't satisfy the pod's anti-affinity rule ({t.key}={value})"
        for t in self.existing_anti_matching(p):
            value = labels.get(t.key)
            if value is not None and self.anti_terms[t][value] > 0:
                return f"node(s) didn't satisfy existing pods' anti-affinity rules ({t.key}={value})"
        return None
