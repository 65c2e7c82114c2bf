"""InterPodAffinity: required pod affinity / anti-affinity (Filter) and preferred terms (Score), as kube-scheduler.

PreFilter builds three maps keyed by (topologyKey, value) (see `terms`): affinityCounts, antiAffinityCounts and
existingAntiAffinityCounts; it returns Skip when the pod has no required terms and no bound pod's required
anti-affinity selects it. Filter on node n, in kube's order:
1. every required affinity term's key is on n, and each term has count > 0 at (key, n[key]) — unless
   affinityCounts is empty and the pod matches all its own terms (first pod of a group); else UU;
2. no required anti-affinity term has count > 0 at (key, n[key]); else U;
3. no label (k, v) of n has existingAntiAffinityCounts > 0; else U.
Score: raw(n) = Σ_k T[(k, n[k])] over the PreScore map T; normalised 100·(raw − min)/(max − min), truncated
(all 0 when max = min). Args: `hardPodAffinityWeight` (0..100, default 1), `ignorePreferredTermsOfExistingPods`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from kplace.models.errors import ConfigError
from kplace.models.index import PodInfo

from ...framework import MAX_NODE_SCORE, Code, CycleState, FilterResult, Plugin, PreFilterResult
from ...framework.queue import ASSIGNED_POD_ADD, ASSIGNED_POD_DELETE
from ...framework.state import ClusterState
from .terms import (
    DomainCounts,
    affinity_counts,
    anti_affinity_counts,
    at_nodes,
    existing_anti_affinity_counts,
    matches_all,
    ns_labels_of,
    pod_terms,
    preferred_scores,
)

REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

_PRE_FILTER = "PreFilterInterPodAffinity"
_PRE_SCORE = "PreScoreInterPodAffinity"


def parse_args(args: dict[str, Any] | None) -> tuple[int, bool]:
    """InterPodAffinityArgs (camelCase) → (hardPodAffinityWeight, ignorePreferredTermsOfExistingPods)."""
    args = dict(args or {})
    unknown = sorted(set(args) - {"hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"})
    if unknown:
        raise ConfigError(f"InterPodAffinityArgs: unknown field(s) {', '.join(map(repr, unknown))}")
    weight = args.get("hardPodAffinityWeight", 1)
    if weight is None:
        weight = 1
    if isinstance(weight, bool) or not isinstance(weight, int) or not 0 <= weight <= 100:
        raise ConfigError(f"InterPodAffinityArgs.hardPodAffinityWeight: {weight!r} not in valid range [0, 100]")
    ignore = args.get("ignorePreferredTermsOfExistingPods", False)
    if not isinstance(ignore, bool):
        raise ConfigError(f"InterPodAffinityArgs.ignorePreferredTermsOfExistingPods: must be a boolean, got {ignore!r}")
    return weight, ignore


class _FilterState:
    """PreFilter state: per topology key, counts per value of (affinity) bound pods matching all the pod's
    required affinity terms, (anti) matches of its anti-affinity terms, (existing) bound pods whose required
    anti-affinity terms match the pod."""

    __slots__ = ("affinity", "affinity_terms", "anti", "anti_keys", "anti_terms", "existing", "reads",
                 "self_match")

    def __init__(self, affinity_terms, affinity: DomainCounts, self_match: bool, anti_terms, anti: DomainCounts,
                 existing: DomainCounts, reads: dict | None = None) -> None:
        self.affinity_terms = affinity_terms
        self.affinity = affinity
        self.self_match = self_match
        self.anti_terms = anti_terms
        self.anti_keys = list(dict.fromkeys(t.topology_key for t in anti_terms))
        self.anti = anti
        self.existing = existing
        # `filter_reads`' answers per (signature, terms group): they depend on the terms alone, so clones share them
        self.reads: dict[tuple[int, int], bool] = {} if reads is None else reads

    @property
    def first_pod_ok(self) -> bool:
        """kube's escape for the first of a series of pods with affinity to themselves: no pod matches all the
        terms anywhere, and the pod matches its own terms."""
        return self.self_match and not any(a.any() for a in self.affinity.values())

    def clone(self) -> _FilterState:
        return _FilterState(self.affinity_terms, {k: v.copy() for k, v in self.affinity.items()}, self.self_match,
                            self.anti_terms, {k: v.copy() for k, v in self.anti.items()},
                            {k: v.copy() for k, v in self.existing.items()}, self.reads)


def _bump(index, counts: DomainCounts, key: str, node: int, delta: int) -> None:
    """counts[key][value of node's key] += delta, when the node carries the key."""
    ids, values = index.label_column(key)
    v = ids[node]
    if v < 0:
        return
    arr = counts.get(key)
    if arr is None:
        arr = counts[key] = np.zeros(len(values), dtype=np.int64)
    arr[v] += delta


def matches_all_terms(terms, other: PodInfo) -> bool:
    """kube's podMatchesAllAffinityTerms as queueing hints call it: no namespace labels (a namespaceSelector
    matches only when it is `{}`); False when there are no terms."""
    return bool(terms) and all(t.matches(other.namespace, other.labels, {}) for t in terms)


class InterPodAffinity(Plugin):
    name = "InterPodAffinity"
    hint_events = frozenset({ASSIGNED_POD_ADD, ASSIGNED_POD_DELETE})

    def queueing_hint(self, event: str, pod: PodInfo, other: PodInfo, index) -> bool:
        """A pod added helps when it matches all of the pod's required affinity terms; a pod deleted, when it
        matches all of the pod's required anti-affinity terms or the pod matches all of the deleted one's."""
        mine = pod_terms(index, pod)
        if event == ASSIGNED_POD_ADD:
            return matches_all_terms(mine.required_affinity, other)
        return (matches_all_terms(mine.required_anti, other)
                or matches_all_terms(pod_terms(index, other).required_anti, pod))

    def __init__(self, args: dict[str, Any] | None = None) -> None:
        super().__init__(args)
        self.hard_pod_affinity_weight, self.ignore_preferred_terms_of_existing_pods = parse_args(args)

    def pre_filter(self, state: ClusterState, pod: PodInfo, cycle: CycleState) -> PreFilterResult:
        terms = pod_terms(state.index, pod)
        existing = existing_anti_affinity_counts(state, pod)
        if not terms.required_affinity and not terms.required_anti and not existing:
            return PreFilterResult.skip()
        affinity = affinity_counts(state, terms.required_affinity)
        self_match = matches_all(state.index, terms.required_affinity, pod)
        anti = anti_affinity_counts(state, terms.required_anti)
        cycle[_PRE_FILTER] = _FilterState(terms.required_affinity, affinity, self_match, terms.required_anti, anti,
                                          existing)
        return PreFilterResult()

    def update_pre_filter(self, state: ClusterState, pod: PodInfo, cycle: CycleState, other: PodInfo, node: int,
                          delta: int) -> None:
        """kube's updateWithPod: `other`'s required anti-affinity terms that match the pod change `existing`; if
        `other` matches all the pod's required affinity terms, each term's key changes `affinity`; each of the
        pod's anti-affinity terms that `other` matches changes `anti` — by delta at the node's value."""
        s: _FilterState | None = cycle.get(_PRE_FILTER)
        if s is None:
            return
        index = state.index
        ns_labels = ns_labels_of(index, pod.namespace)
        for t in pod_terms(index, other).required_anti:
            if t.matches(pod.namespace, pod.labels, ns_labels):
                _bump(index, s.existing, t.topology_key, node, delta)
        if s.affinity_terms and matches_all(index, s.affinity_terms, other):
            for t in s.affinity_terms:
                _bump(index, s.affinity, t.topology_key, node, delta)
        for t in s.anti_terms:
            if matches_all(index, (t,), other):
                _bump(index, s.anti, t.topology_key, node, delta)

    def filter_reads(self, state: ClusterState, pod: PodInfo, cycle: CycleState, other: PodInfo) -> bool:
        """`other` changes a count the Filter reads (`update_pre_filter`'s conditions): one of its required
        anti-affinity terms selects the pod, it matches all the pod's required affinity terms, or it matches one
        of the pod's required anti-affinity terms."""
        s: _FilterState | None = cycle.get(_PRE_FILTER)
        if s is None:
            return False
        # The answer depends on `other` only through its namespace and labels (its signature) and its terms (its
        # terms group): kept per pair for the cycle, as preemption asks it of every lower-priority pod.
        group = state.terms_group(other)
        key = None if group is None else (int(state.sig_of_pod[other.idx]), group)
        hit = s.reads.get(key) if key is not None else None
        if hit is None:
            index = state.index
            ns_labels = ns_labels_of(index, pod.namespace)
            hit = (any(t.matches(pod.namespace, pod.labels, ns_labels) for t in pod_terms(index, other).required_anti)
                   or (bool(s.affinity_terms) and matches_all(index, s.affinity_terms, other))
                   or any(matches_all(index, (t,), other) for t in s.anti_terms))
            if key is not None:
                s.reads[key] = hit
        return hit

    def filter(self, state: ClusterState, pod: PodInfo, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        s: _FilterState | None = cycle.get(_PRE_FILTER)
        n = len(nodes)
        if s is None:
            return FilterResult.success(n)
        index = state.index
        code = np.zeros(n, dtype=np.int8)
        fail_aff = np.zeros(n, dtype=bool)
        if s.affinity_terms:
            missing = np.zeros(n, dtype=bool)
            empty = np.zeros(n, dtype=bool)
            for t in s.affinity_terms:
                has, cnt = at_nodes(index, s.affinity, t.topology_key, nodes)
                missing |= ~has
                empty |= has & (cnt <= 0)
            fail_aff = missing if s.first_pod_ok else missing | empty
        fail_anti = np.zeros(n, dtype=bool)
        for key in s.anti_keys:
            if key in s.anti:
                has, cnt = at_nodes(index, s.anti, key, nodes)
                fail_anti |= has & (cnt > 0)
        fail_anti &= ~fail_aff
        fail_existing = np.zeros(n, dtype=bool)
        for key in s.existing:
            has, cnt = at_nodes(index, s.existing, key, nodes)
            fail_existing |= has & (cnt > 0)
        fail_existing &= ~(fail_aff | fail_anti)
        code[fail_aff] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        code[fail_anti | fail_existing] = Code.UNSCHEDULABLE
        reasons = [
            (text, mask)
            for text, mask in (
                (REASON_AFFINITY, fail_aff),
                (REASON_ANTI_AFFINITY, fail_anti),
                (REASON_EXISTING_ANTI_AFFINITY, fail_existing),
            )
            if mask.any()
        ]
        return FilterResult(code, reasons)

    def pre_score(self, state: ClusterState, pod: PodInfo, cycle: CycleState, nodes: np.ndarray) -> bool:
        terms = pod_terms(state.index, pod)
        has_preferred = bool(terms.preferred_affinity or terms.preferred_anti)
        if self.ignore_preferred_terms_of_existing_pods and not has_preferred:
            return False
        scores, touched = preferred_scores(state, pod, terms, self.hard_pod_affinity_weight)
        if not touched:
            return False
        cycle[_PRE_SCORE] = scores
        return True

    def score(self, state: ClusterState, pod: PodInfo, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        scores: DomainCounts = cycle.get(_PRE_SCORE) or {}
        raw = np.zeros(len(nodes), dtype=np.int64)
        for key in scores:
            raw += at_nodes(state.index, scores, key, nodes)[1]
        return raw

    def normalize(self, scores: np.ndarray, pod: PodInfo, cycle: CycleState) -> np.ndarray:
        return normalize_min_max(scores)


def normalize_min_max(scores: np.ndarray) -> np.ndarray:
    """100·(raw − min)/(max − min) in float64, truncated; all 0 when max = min."""
    scores = np.asarray(scores, dtype=np.int64)
    if len(scores) == 0:
        return scores
    lo, hi = int(scores.min()), int(scores.max())
    if hi == lo:
        return np.zeros(len(scores), dtype=np.int64)
    return (float(MAX_NODE_SCORE) * ((scores - lo).astype(np.float64) / float(hi - lo))).astype(np.int64)


PLUGINS = [InterPodAffinity]
