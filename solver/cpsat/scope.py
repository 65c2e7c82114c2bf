"""What each model of a window holds. A group's scope is its best `scope` nodes by kube's total at the window's
start (at least 4 per pod; twice as many with a goal), plus every node the hint and greedy use; nodes outside a
scope still count as constants in every rule (spread minima, affinity support). Groups tied by a rule, sharing a
node or sharing a PodDisruptionBudget's budget form one connected component (networkx): an independent model."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
from kplace.models.index import ClusterIndex

from ..plugins import encodings
from ..plugins.defaultpreemption.encoding import Victims
from .domains import GroupDomain
from .groups import GroupMatcher, PodGroup


def group_scope(group: PodGroup, domain: GroupDomain, hint: dict[int, int], scope: int, objective: str
                ) -> np.ndarray:
    """The group's best `scope` nodes by coefficient (at least 4 per pod), plus `hint`'s. With a goal (pack,
    balance) twice as many: which nodes are used is then what the search optimises, and on vbp's 40-bin
    instances 32 nodes per group left one bin more than the optimum where 64 reach it."""
    k = max(scope * (1 if objective == "default" else 2), 4 * group.size)
    if len(domain.nodes) <= k:
        return domain.nodes
    order = np.argsort(-domain.rank, kind="stable")[:k]
    chosen = set(domain.nodes[order].tolist()) | set(hint)
    return np.array(sorted(chosen), dtype=np.int64)


def components(index: ClusterIndex, groups: list[PodGroup], scope: dict[int, np.ndarray], match: GroupMatcher,
               victims: Victims | None = None) -> list[list[PodGroup]]:
    """Connected components of the graph joining groups tied by a rule (networkx), a shared node, or candidate
    victims under one PodDisruptionBudget (its budget is shared)."""
    graph = nx.Graph()
    graph.add_nodes_from(g.gid for g in groups)
    if victims is not None:
        for members in victims.pdbs.values():
            hosts = {victims.node[i] for i in members}
            tied = [g.gid for g in groups if hosts.intersection(scope[g.gid].tolist())]
            graph.add_edges_from(itertools.pairwise(tied))
    for encoding in encodings().values():
        if encoding.ties is not None:
            graph.add_edges_from(encoding.ties(index, match))
    first: dict[int, int] = {}  # groups sharing a node meet there: each joins the node's first group
    shared: set[tuple[int, int]] = set()
    for g in groups:
        for n in scope[g.gid].tolist():
            h = first.setdefault(n, g.gid)
            if h != g.gid:
                shared.add((h, g.gid))
    graph.add_edges_from(shared)
    by_gid = {g.gid: g for g in groups}
    comps = sorted(sorted(c) for c in nx.connected_components(graph))
    return [[by_gid[i] for i in c] for c in comps]
