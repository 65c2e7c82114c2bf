"""Pure taint/toleration maths for TaintToleration.

Nodes share few distinct taint lists, so each index groups its nodes by taint tuple once
(`taint_groups`) and every per-pod question is answered per group, then broadcast to nodes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from kplace.models.index import ClusterIndex
from kplace.models.k8s import Taint, Toleration
from kplace.models.tolerations import tolerates

DO_NOT_SCHEDULE = ("NoSchedule", "NoExecute")
CACHE_KEY = "TaintToleration/groups"


def taint_groups(index: ClusterIndex) -> tuple[np.ndarray, list[tuple[Taint, ...]]]:
    """(group_of_node, groups): `groups[g]` is one distinct taint list, `group_of_node[n]` its index for node n."""
    hit = index.cache.get(CACHE_KEY)
    if hit is None:
        ids: dict[tuple, int] = {}
        groups: list[tuple[Taint, ...]] = []
        of_node = np.empty(len(index.nodes), dtype=np.int64)
        for n, taints in enumerate(index.node_taints):
            key = tuple((t.key, t.value, t.effect) for t in taints)
            g = ids.get(key)
            if g is None:
                g = ids[key] = len(groups)
                groups.append(tuple(taints))
            of_node[n] = g
        hit = index.cache[CACHE_KEY] = (of_node, groups)
    return hit  # type: ignore[return-value]


def first_untolerated(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """The first NoSchedule/NoExecute taint that no toleration tolerates, or None (FindMatchingUntoleratedTaint)."""
    for taint in taints:
        if taint.effect in DO_NOT_SCHEDULE and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def prefer_no_schedule_tolerations(tolerations: Sequence[Toleration]) -> list[Toleration]:
    """Tolerations that can matter for scoring: effect PreferNoSchedule or empty (all effects)."""
    return [t for t in tolerations if t.effect in ("", "PreferNoSchedule")]


def count_intolerable_prefer_no_schedule(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> int:
    """raw = #taints with effect PreferNoSchedule that none of `tolerations` tolerates."""
    return sum(
        1 for taint in taints
        if taint.effect == "PreferNoSchedule" and not any(tolerates(t, taint) for t in tolerations)
    )


def untolerated_mask(index: ClusterIndex, tolerations: Sequence[Toleration], nodes: np.ndarray) -> np.ndarray:
    """Per node of `nodes`: True when some NoSchedule/NoExecute taint is not tolerated."""
    of_node, groups = taint_groups(index)
    bad = np.array([first_untolerated(g, tolerations) is not None for g in groups], dtype=bool)
    return bad[of_node[nodes]]


def prefer_no_schedule_counts(index: ClusterIndex, tolerations: Sequence[Toleration], nodes: np.ndarray) -> np.ndarray:
    """Per node of `nodes`: the raw TaintToleration score (intolerable PreferNoSchedule taints)."""
    of_node, groups = taint_groups(index)
    tols = prefer_no_schedule_tolerations(tolerations)
    per_group = np.array([count_intolerable_prefer_no_schedule(g, tols) for g in groups], dtype=np.int64)
    return per_group[of_node[nodes]]
