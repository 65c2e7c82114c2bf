"""Pod (anti-)affinity terms, compiled once per pod, and the per-topology-domain counts built from them.

A term T of pod P (kube's framework `AffinityTerm`) is (topologyKey, selector, names, nsSelector):
- `names` = term.namespaces, or {P.namespace} when both `namespaces` and `namespaceSelector` are unset;
- `nsSelector`: nil matches no namespace, `{}` matches every namespace;
- T matches pod Q  ⇔  (Q.ns ∈ names ∨ nsSelector(labels(Q.ns))) ∧ selector(Q.labels); a nil labelSelector
  matches nothing, `{}` matches every pod.

matchLabelKeys / mismatchLabelKeys (KEP-3633): the API server folds them into labelSelector when the pod is
created (`key In [P.labels[key]]`, resp. `key NotIn [...]`, only for keys P carries and only when
labelSelector is set); the scheduler never reads them. Pods in a state file may not have been through that
admission step, so we apply the same merge when compiling, skipping a requirement the selector already
has (a pod exported from a real cluster is therefore not changed).

Counts are keyed by (topologyKey, value) as in kube; here a key maps to an int64 array indexed by the value
ids of `ClusterIndex.label_column(key)`, so "count at (k, node[k])" for many nodes is one fancy-index.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from kplace.models.index import ClusterIndex, PodInfo
from kplace.models.k8s import LabelSelector, LabelSelectorRequirement, PodAffinityTerm
from kplace.models.selectors import Selector

from ...framework.state import ClusterState

CACHE_KEY = "InterPodAffinity"


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    topology_key: str
    selector: Selector
    names: frozenset[str]
    ns_selector: Selector
    weight: int = 0

    def matches(self, namespace: str, labels: Mapping[str, str], ns_labels: Mapping[str, str]) -> bool:
        """Does this term select a pod in `namespace` (whose labels are `ns_labels`) with `labels`?"""
        return (namespace in self.names or self.ns_selector.matches(ns_labels)) and self.selector.matches(labels)


@dataclass(frozen=True, slots=True)
class PodTerms:
    required_affinity: tuple[AffinityTerm, ...]
    required_anti: tuple[AffinityTerm, ...]
    preferred_affinity: tuple[AffinityTerm, ...]
    preferred_anti: tuple[AffinityTerm, ...]


def merged_label_selector(term: PodAffinityTerm, pod_labels: Mapping[str, str]) -> LabelSelector | None:
    """labelSelector with matchLabelKeys (In) and mismatchLabelKeys (NotIn) merged in, as admission does."""
    sel = term.label_selector
    if sel is None or not (term.match_label_keys or term.mismatch_label_keys):
        return sel
    exprs = list(sel.match_expressions)
    have = {(r.key, r.operator, tuple(r.values)) for r in exprs}
    for keys, op in ((term.match_label_keys, "In"), (term.mismatch_label_keys, "NotIn")):
        for key in keys:
            if key in pod_labels and (key, op, (pod_labels[key],)) not in have:
                exprs.append(LabelSelectorRequirement(key=key, operator=op, values=[pod_labels[key]]))
                have.add((key, op, (pod_labels[key],)))
    return LabelSelector(match_labels=dict(sel.match_labels), match_expressions=exprs)


def compile_term(pod: PodInfo, term: PodAffinityTerm, weight: int = 0) -> AffinityTerm:
    own = not term.namespaces and term.namespace_selector is None
    return AffinityTerm(
        topology_key=term.topology_key,
        selector=Selector(merged_label_selector(term, pod.labels)),
        names=frozenset([pod.namespace] if own else term.namespaces),
        ns_selector=Selector(term.namespace_selector),
        weight=weight,
    )


def pod_terms(index: ClusterIndex, pod: PodInfo) -> PodTerms:
    """The compiled terms of `pod`, cached per pod in `index.cache`."""
    cache = index.cache.setdefault(CACHE_KEY, {}).setdefault("terms", {})
    hit = cache.get(pod.idx)
    if hit is None:
        aff = pod.pod.spec.affinity
        pa = aff.pod_affinity if aff else None
        pn = aff.pod_anti_affinity if aff else None
        hit = cache[pod.idx] = PodTerms(
            tuple(compile_term(pod, t) for t in (pa.required_during_scheduling_ignored_during_execution if pa else [])),
            tuple(compile_term(pod, t) for t in (pn.required_during_scheduling_ignored_during_execution if pn else [])),
            tuple(compile_term(pod, w.pod_affinity_term, w.weight)
                  for w in (pa.preferred_during_scheduling_ignored_during_execution if pa else [])),
            tuple(compile_term(pod, w.pod_affinity_term, w.weight)
                  for w in (pn.preferred_during_scheduling_ignored_during_execution if pn else [])),
        )
    return hit


def resolve_namespaces(index: ClusterIndex, term: AffinityTerm) -> frozenset[str] | None:
    """The incoming pod's term namespaces after PreFilter merges namespaceSelector into names:
    names ∪ {ns : nsSelector(labels(ns))}; None (= every namespace) for a `{}` nsSelector."""
    if term.ns_selector.empty:
        return None
    if term.ns_selector.nothing:
        return term.names
    cache = index.cache.setdefault(CACHE_KEY, {}).setdefault("ns", {})
    key = (term.names, term.ns_selector)
    hit = cache.get(key)
    if hit is None:
        hit = cache[key] = term.names | {
            ns for ns, labels in index.namespace_labels.items() if term.ns_selector.matches(labels)
        }
    return hit


def ns_labels_of(index: ClusterIndex, namespace: str) -> Mapping[str, str]:
    return index.namespace_labels.get(namespace) or {}


def matches_all(index: ClusterIndex, terms: tuple[AffinityTerm, ...], pod: PodInfo) -> bool:
    """kube's podMatchesAllAffinityTerms for the incoming pod's own (namespace-resolved) terms; False if none."""
    if not terms:
        return False
    for t in terms:
        ns = resolve_namespaces(index, t)
        if (ns is not None and pod.namespace not in ns) or not t.selector.matches(pod.labels):
            return False
    return True


# --- per-domain counts ------------------------------------------------------------------------------

SPARSE_ADD = 512  # below this many nodes to count, `add_at_domains` adds them one by one (np.add.at)

DomainCounts = dict[str, np.ndarray]
"""topologyKey → int64 count per value id of `label_column(topologyKey)`."""


def add_at_domains(
    index: ClusterIndex, out: DomainCounts, key: str, nodes: np.ndarray | None, per_node: np.ndarray, factor: int = 1
) -> bool:
    """out[key][value of node] += factor · per_node for nodes that carry `key` (`nodes` None = all nodes, else
    `per_node` is aligned with `nodes`). Returns whether any pod was counted (kube creates a map entry)."""
    ids, values = index.label_column(key)
    node_ids = ids if nodes is None else ids[nodes]
    at = np.flatnonzero((node_ids >= 0) & (per_node != 0))
    if not len(at):
        return False
    acc = out.get(key)
    if acc is None:
        acc = out[key] = np.zeros(len(values), dtype=np.int64)
    if len(at) < SPARSE_ADD:  # a few nodes (a group's pods) among many values (hostnames): no dense pass
        np.add.at(acc, node_ids[at], np.asarray(per_node[at], dtype=np.int64) * factor)
    else:
        acc += np.bincount(node_ids[at], weights=per_node[at], minlength=len(values)).astype(np.int64) * factor
    return True


def at_nodes(index: ClusterIndex, counts: DomainCounts, key: str, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(has key, count at (key, node[key])) for each of `nodes`; 0 where the node lacks the key."""
    ids = index.label_column(key)[0][nodes]
    has = ids >= 0
    arr = counts.get(key)
    vals = np.zeros(len(nodes), dtype=np.int64)
    if arr is not None:
        vals[has] = arr[ids[has]]
    return has, vals


def affinity_counts(state: ClusterState, terms: tuple[AffinityTerm, ...]) -> DomainCounts:
    """affinityCounts: every bound pod matching ALL of `terms` adds 1 at (t.key, its node's value) per term t."""
    out: DomainCounts = {}
    if not terms:
        return out
    sigs: set[int] | None = None
    for t in terms:
        s = set(state.matching_signatures(resolve_namespaces(state.index, t), t.selector))
        sigs = s if sigs is None else sigs & s
        if t.selector.nothing:
            sigs = set()
    per_node = state.signature_counts(sorted(sigs or ()))
    for t in terms:
        add_at_domains(state.index, out, t.topology_key, None, per_node)
    return out


def anti_affinity_counts(state: ClusterState, terms: tuple[AffinityTerm, ...]) -> DomainCounts:
    """antiAffinityCounts: for each term t and each bound pod it matches, +1 at (t.key, its node's value)."""
    out: DomainCounts = {}
    for t in terms:
        per_node = state.matching_counts_view(resolve_namespaces(state.index, t), t.selector)
        add_at_domains(state.index, out, t.topology_key, None, per_node)
    return out


def existing_anti_affinity_counts(state: ClusterState, pod: PodInfo) -> DomainCounts:
    """existingAntiAffinityCounts (symmetry): for each bound pod E with required anti-affinity and each of E's
    terms that matches the incoming pod, +1 at (t.key, E's node value). Evaluated once per group of pods
    with identical terms (`ClusterState.affinity_groups`), weighted by the group's pods per node."""
    out: DomainCounts = {}
    index = state.index
    for grp, matching in _groups_matching(state, pod, "anti"):
        if grp.size <= 0:
            continue
        nodes, counts = grp.node_counts()
        for t, _ in matching:
            add_at_domains(index, out, t.topology_key, nodes, counts)
    return out


def _group_terms(index: ClusterIndex, grp, kind: str, hard_weight: int) -> list[tuple[AffinityTerm, int]]:
    et = pod_terms(index, index.pods[grp.rep])
    if kind == "anti":
        return [(t, 0) for t in et.required_anti]
    weighted = [(t, hard_weight) for t in (et.required_affinity if hard_weight > 0 else ())]
    weighted += [(t, t.weight) for t in et.preferred_affinity]
    weighted += [(t, -t.weight) for t in et.preferred_anti]
    return weighted


def _groups_matching(state: ClusterState, pod: PodInfo, kind: str, hard_weight: int = 0) -> list[tuple]:
    """[(group, [(term, weight), ...])] for the groups of bound pods having terms (of `kind`: "anti" for
    required anti-affinity, "score" for what InterPodAffinity scores) that match the incoming pod.

    Matching depends only on the incoming pod's signature (namespace, labels) and on the groups' terms, which
    never change, and groups are only ever appended; so the result is cached per signature and extended with
    the groups created since. Cache entries are replaced, never mutated, so forked states may share them.
    """
    cache = state.plugin_cache.setdefault(f"InterPodAffinity.{kind}.{hard_weight}", {})
    sig = int(state.sig_of_pod[pod.idx])
    checked, found = cache.get(sig, (0, ()))
    groups = state.affinity_groups
    if checked < len(groups):
        index = state.index
        ns_labels = ns_labels_of(index, pod.namespace)
        new = []
        for gid in _candidate_groups(state, cache, kind, hard_weight, pod, checked):
            grp = groups[gid]
            if kind == "anti" and not grp.required_anti:
                continue
            matching = tuple((t, w) for t, w in _group_terms(index, grp, kind, hard_weight)
                             if t.matches(pod.namespace, pod.labels, ns_labels))
            if matching:
                new.append((gid, matching))
        found = (*found, *new)
        cache[sig] = (len(groups), found)
    return [(groups[gid], matching) for gid, matching in found]


_GROUPS_BY_LABEL = "groups by label"  # the cache entry of `_candidate_groups`' index


def _candidate_groups(state: ClusterState, cache: dict, kind: str, hard_weight: int, pod: PodInfo,
                      start: int) -> list[int]:
    """The groups from id `start` on whose terms (of `kind`) can match the pod, ascending: a term whose selector
    has `key = value` labels needs the pod to carry the first; the others are candidates for every pod.

    The index, (groups indexed, {(key, value) or None: group ids}), is extended as groups are created and
    replaced, never mutated, so forked states may share it."""
    groups = state.affinity_groups
    done, by_label = cache.get(_GROUPS_BY_LABEL, (0, {}))
    if done < len(groups):
        by_label = dict(by_label)
        index = state.index
        for gid in range(done, len(groups)):
            keys = {t.selector.anchor
                    for t, _ in _group_terms(index, groups[gid], kind, hard_weight) if not t.selector.nothing}
            for key in keys:
                by_label[key] = (*by_label.get(key, ()), gid)
        cache[_GROUPS_BY_LABEL] = (len(groups), by_label)
    out: set[int] = set()
    for key in (None, *pod.labels.items()):
        gids = by_label.get(key, ())
        out.update(gids[bisect_left(gids, start):])
    return sorted(out)


def preferred_scores(
    state: ClusterState, pod: PodInfo, terms: PodTerms, hard_weight: int
) -> tuple[DomainCounts, bool]:
    """InterPodAffinity's PreScore map T[(key, value)] and whether any contribution was made.

    - incoming preferred affinity (anti-affinity) term t: +w (−w) per bound pod it matches, over all pods;
    - for each bound pod E with pod (anti-)affinity and each of E's terms matching the incoming pod:
      required affinity +hard_weight (when > 0), preferred affinity +w, preferred anti-affinity −w.
    Each contribution lands at (t.key, value of the node the bound pod runs on), if that node has the key.
    """
    index = state.index
    out: DomainCounts = {}
    touched = False
    for sign, group in ((1, terms.preferred_affinity), (-1, terms.preferred_anti)):
        for t in group:
            per_node = state.matching_counts_view(resolve_namespaces(index, t), t.selector)
            touched |= add_at_domains(index, out, t.topology_key, None, per_node, sign * t.weight)
    for grp, weighted in _groups_matching(state, pod, "score", hard_weight):
        if grp.size <= 0:
            continue
        nodes, counts = grp.node_counts()
        for t, w in weighted:
            touched |= add_at_domains(index, out, t.topology_key, nodes, counts, w)
    return out, touched
