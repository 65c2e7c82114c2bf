"""VolumeRestrictions as CP-SAT constraints over a window's final state.

Disk conflicts (GCE PD / EBS / iSCSI / RBD used read-write): o[g, n] is 1 whenever a pod of g is on n
(`Variables.occupied`); a group conflicting with itself gets y[g, n] ≤ 1, and conflicting groups form a graph
whose maximal cliques C give Σ_{g∈C} o[g, n] ≤ 1. ReadWriteOncePod claim k: Σ_{g uses k} placed[g] ≤ 1, and ≤ 0
when a placed pod already uses k.
"""

from __future__ import annotations

from collections import defaultdict

import networkx as nx

from ...framework.encoding import ConstraintContext, PluginEncoding
from . import needs_check, pods_conflict, rwop_claims


def restrictions(ctx: ConstraintContext) -> None:
    """Disk conflicts and ReadWriteOncePod claims between window pods (module doc)."""
    _disk_conflicts(ctx.handle, ctx.groups, ctx.filters)
    _read_write_once_pod(ctx.handle, ctx.groups, ctx.filters)


def _disk_conflicts(v, groups, filters: dict[int, set[str]]) -> None:
    """Groups whose inline volumes conflict never share a node."""
    disks = [g for g in groups if v.y[g.gid] and any(needs_check(x) for x in g.rep.pod.spec.volumes)]
    graph = nx.Graph()
    for i, g in enumerate(disks):
        for h in disks[i:]:
            if not ({"VolumeRestrictions"} & (filters[g.gid] | filters[h.gid])):
                continue
            if not pods_conflict(g.rep.pod, h.rep.pod) and not pods_conflict(h.rep.pod, g.rep.pod):
                continue
            if h is g:
                v.cap_per_node(g.gid, 1)
            else:
                graph.add_edge(g.gid, h.gid)
    for clique in nx.find_cliques(graph):
        for n in set().union(*(v.y[g].keys() for g in clique)):
            lits = [v.occupied(g, n) for g in clique if n in v.y[g]]
            if len(lits) > 1:
                v.model.add(sum(lits) <= 1)


def _read_write_once_pod(v, groups, filters: dict[int, set[str]]) -> None:
    """A ReadWriteOncePod claim serves one pod: none when a placed pod uses it, else at most one window pod."""
    users: dict[str, list] = defaultdict(list)
    for g in groups:
        if v.y[g.gid] and g.rep.pod.spec.volumes and "VolumeRestrictions" in filters[g.gid]:
            for key in rwop_claims(v.state.index, g.rep.pod)[0]:
                users[key].append(g)
    for key, gs in users.items():
        cap = 0 if v.state.pvc_users[key] > 0 else 1
        if cap == 0 or sum(g.size for g in gs) > 1:
            v.model.add(sum(v.placed[g.gid] for g in gs) <= cap)


ENCODINGS = {"VolumeRestrictions": PluginEncoding(constrain=restrictions)}
