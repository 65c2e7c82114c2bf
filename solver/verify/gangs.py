"""Gangs (PodGroups with a gang policy): the plan places none of a gang's pods, or enough that with those
still running (bound, not evicted) they reach its minCount, all in one domain of its topology key when it
has one."""

from __future__ import annotations

from kplace.models.index import ClusterIndex
from kplace.models.snapshot import gangs

from .nodes import Nodes
from .violation import Violation


def check_gangs(index: ClusterIndex, nodes: Nodes, node_of: dict[str, str], evicted: set[str]) -> list[Violation]:
    """Violations of the gangs, one per pod the plan places (`node_of`: pod key → node name)."""
    out = []
    pods = {f"{p.metadata.namespace}/{p.metadata.name}": p for p in index.snapshot.pods}
    for gang in gangs(index.snapshot):
        mine = [k for k in gang.members if k in node_of]
        if not mine:
            continue
        running = [k for k in gang.members if k not in node_of and k not in evicted
                   and pods[k].spec.node_name in nodes.id]
        if len(mine) + len(running) < gang.min_count:
            out += [Violation(k, node_of[k], "GangScheduling", f"PodGroup {gang.key} places "
                              f"{len(mine) + len(running)} of its minCount {gang.min_count} pods")
                    for k in mine]
        elif gang.topology_key is not None:
            placed = [node_of[k] for k in mine] + [pods[k].spec.node_name for k in running]
            domains = {nodes.labels[nodes.id[n]].get(gang.topology_key) for n in placed}
            if len(domains) != 1 or None in domains:
                out += [Violation(k, node_of[k], "GangScheduling", f"PodGroup {gang.key}'s pods are not "
                                  f"in one {gang.topology_key} domain") for k in mine]
    return out
