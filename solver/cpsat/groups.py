"""Groups of identical pending pods (`framework.identical`): one count variable per (group, node) instead of one
boolean per pod."""

from __future__ import annotations

from dataclasses import dataclass, field

from kplace.models.index import ClusterIndex, PodInfo

from ..framework.identical import identity_key, relevant_label_keys


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


def group_pods(index: ClusterIndex, pods: list[PodInfo]) -> list[PodGroup]:
    """Group `pods` (kept in queue order within each group; groups ordered by their first pod)."""
    keys = relevant_label_keys(index)
    by_key: dict[tuple, list[PodInfo]] = {}
    for p in pods:
        by_key.setdefault(identity_key(index, p, keys), []).append(p)
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
