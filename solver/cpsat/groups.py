"""Groups of identical pending pods: one count variable per (group, node) instead of one boolean per pod.

Two pods are identical to the scheduler when everything any plugin reads is equal: namespace, priority,
scheduler, requests (actual and non-zero), host ports, tolerations, node selector, affinity, spread
constraints, images, volumes — and their values for every label key that some selector in the state
refers to. Labels no selector reads (a StatefulSet's `pod-name`, say) do not split a group. Pods with generic
ephemeral volumes each own a claim, so each is a group of its own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from kplace.models.index import ClusterIndex, PodInfo


@dataclass(eq=False)
class PodGroup:
    gid: int
    pods: list[PodInfo]  # in queue order
    rep: PodInfo = field(init=False)

    def __post_init__(self) -> None:
        self.rep = self.pods[0]

    @property
    def size(self) -> int:
        return len(self.pods)

    @property
    def priority(self) -> int:
        return self.rep.priority

    def __repr__(self) -> str:
        return f"PodGroup({self.gid}, {self.rep.key} x{self.size})"


def _selector_keys(sel) -> set[str]:
    if sel is None:
        return set()
    return set(sel.match_labels) | {r.key for r in sel.match_expressions}


def relevant_label_keys(index: ClusterIndex) -> frozenset[str]:
    """Every label key that some selector in the state reads (cached on the index)."""
    hit = index.cache.get("cpsat.relevant_keys")
    if hit is not None:
        return hit  # type: ignore[return-value]
    keys: set[str] = set()
    for pi in index.pods:
        spec = pi.pod.spec
        aff = spec.affinity
        for pa in (aff.pod_affinity, aff.pod_anti_affinity) if aff else ():
            if pa is None:
                continue
            terms = [*pa.required_during_scheduling_ignored_during_execution,
                     *(w.pod_affinity_term for w in pa.preferred_during_scheduling_ignored_during_execution)]
            for t in terms:
                keys |= _selector_keys(t.label_selector) | set(t.match_label_keys) | set(t.mismatch_label_keys)
        for c in spec.topology_spread_constraints:
            keys |= _selector_keys(c.label_selector) | set(c.match_label_keys)
    snap = index.snapshot
    for svc in snap.services:
        keys |= set(svc.spec.selector)
    for w in snap.workloads:
        keys |= _selector_keys(w.spec.selector)
    for pdb in snap.pdbs:
        keys |= _selector_keys(pdb.spec.selector)
    out = frozenset(keys)
    index.cache["cpsat.relevant_keys"] = out
    return out


def group_key(index: ClusterIndex, pod: PodInfo, keys: frozenset[str]) -> tuple:
    spec = pod.pod.spec
    dump = json.dumps(
        spec.model_dump(
            mode="json",
            include={"tolerations", "node_selector", "affinity", "topology_spread_constraints", "volumes",
                     "scheduler_name", "preemption_policy", "overhead", "node_name", "scheduling_gates"},
        ),
        sort_keys=True,
        default=str,
    )
    # Generic ephemeral volumes give each pod its own claim (`<pod>-<volume>`): such pods are never identical.
    own_claims = tuple(f"{pod.name}-{v.name}" for v in spec.volumes if v.ephemeral is not None)
    return (
        pod.namespace,
        pod.priority,
        own_claims,
        tuple(index.pod_req[pod.idx].tolist()),
        tuple(index.pod_nonzero[pod.idx].tolist()),
        tuple(sorted(pod.host_ports)),
        tuple(pod.images),
        tuple(sorted((k, v) for k, v in pod.labels.items() if k in keys)),
        dump,
    )


def group_pods(index: ClusterIndex, pods: list[PodInfo]) -> list[PodGroup]:
    """Group `pods` (kept in queue order within each group; groups ordered by their first pod)."""
    keys = relevant_label_keys(index)
    by_key: dict[tuple, list[PodInfo]] = {}
    for p in pods:
        by_key.setdefault(group_key(index, p, keys), []).append(p)
    return [PodGroup(i, members) for i, members in enumerate(by_key.values())]


class GroupMatcher:
    """Which groups a pod-affinity term or a spread selector selects, via an inverted (key, value) index.

    A term with matchLabels only needs to look at the groups carrying its first label pair; the full term
    is then checked on those candidates alone. Results are cached per (term/selector, namespaces).
    """

    def __init__(self, index: ClusterIndex, groups: list[PodGroup]) -> None:
        self.index = index
        self.groups = groups
        self._by_label: dict[tuple[str, str], list[PodGroup]] = {}
        for g in groups:
            for kv in g.rep.labels.items():
                self._by_label.setdefault(kv, []).append(g)
        self._cache: dict[tuple, list[PodGroup]] = {}

    def _candidates(self, selector) -> list[PodGroup]:
        if selector.nothing:
            return []
        if selector.labels:
            return self._by_label.get(selector.labels[0], [])
        for key, op, values in selector.exprs:
            if op == "In" and len(values) == 1:
                return self._by_label.get((key, next(iter(values))), [])
        return self.groups

    def term(self, term) -> list[PodGroup]:
        """Groups whose representative a pod (anti-)affinity term matches (namespaces resolved)."""
        from ..plugins.interpodaffinity.terms import resolve_namespaces

        key = ("term", term)
        hit = self._cache.get(key)
        if hit is None:
            ns = resolve_namespaces(self.index, term)
            hit = [g for g in self._candidates(term.selector)
                   if (ns is None or g.rep.namespace in ns) and term.selector.matches(g.rep.labels)]
            self._cache[key] = hit
        return hit

    def terms(self, terms) -> list[PodGroup]:
        """Groups matching every one of `terms`."""
        if not terms:
            return []
        ids = None
        for t in terms:
            found = {g.gid for g in self.term(t)}
            ids = found if ids is None else ids & found
        return [g for g in self.groups if g.gid in ids]

    def selector(self, namespace: str, selector) -> list[PodGroup]:
        """Groups in `namespace` whose labels match a (spread) selector."""
        key = ("sel", namespace, selector)
        hit = self._cache.get(key)
        if hit is None:
            hit = [g for g in self._candidates(selector)
                   if g.rep.namespace == namespace and selector.matches(g.rep.labels)]
            self._cache[key] = hit
        return hit
