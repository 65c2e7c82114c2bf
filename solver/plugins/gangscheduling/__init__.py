"""GangScheduling: the pods of a gang (a PodGroup with a gang policy, `models.snapshot.Gang`) are placed together
or not at all — at least minCount of them, counting those already running — and, with a topology key, all in one
domain of it.

In the greedy engine a pod whose gang has fewer pods than minCount in the state waits in PreEnqueue (`gate`). kube's
own PodGroups (scheduling.k8s.io) without a topology key then go through kube 1.36's pod-group cycle
(`GreedyScheduler.schedule_group`). Scheduler-plugins' coscheduling gangs, and kube's with a topology key (which
kube enforces only with its alpha TopologyAwareWorkloadScheduling), are placed one by one, each pod holding its
node, and at the end of the batch a gang that did not reach minCount releases them all — none binds
(`incomplete`); with a topology key, the first pod's domain holds the others (a PreFilter node subset,
`domain_nodes`). The CP-SAT encoding is in `encoding.py`.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from kplace.models.index import ClusterIndex, PodInfo

PLUGINS: list = []  # the engines apply gangs directly: kube's plugin is alpha and off by default


def gang_of(index: ClusterIndex, pod: PodInfo):
    g = index.gang_of.get(pod.idx)
    return None if g is None else index.gangs[g]


def gate(index: ClusterIndex, pod: PodInfo) -> str | None:
    """The PreEnqueue message of a pod whose gang has fewer pods than its minimum, or that names in
    `spec.schedulingGroup` a PodGroup the state lacks (kube waits for it), else None."""
    gang = gang_of(index, pod)
    if gang is None:
        group = pod.spec.scheduling_group.pod_group_name if pod.spec.scheduling_group is not None else None
        if group and not any(g.metadata.namespace == pod.namespace and g.metadata.name == group
                             for g in index.snapshot.pod_groups if g.kube):
            return f'waiting for pods\'s pod group "{group}" to appear in scheduling queue'  # kube's PreEnqueue
        return None
    if len(gang.members) >= gang.min_count:
        return None
    if gang.kube:
        return "waiting for minCount pods from a gang to appear in scheduling queue"  # kube's PreEnqueue
    return (f"waiting for {gang.min_count - len(gang.members)} more pods of PodGroup {gang.key} "
            f"(minCount {gang.min_count}, {len(gang.members)} exist)")


def domain_nodes(index: ClusterIndex, state, pod: PodInfo) -> np.ndarray | None:
    """For a pod of a gang with a topology key, once some of the gang's pods are on nodes: the nodes of their
    domain (the greedy engine's PreFilter node subset); None otherwise."""
    gang = gang_of(index, pod)
    if gang is None or gang.topology_key is None:
        return None
    ids = index.label_column(gang.topology_key)[0]
    nodes = [int(state.pod_node[index.pod_by_key[k].idx]) for k in gang.members if k in index.pod_by_key]
    taken = {int(ids[n]) for n in nodes if n >= 0 and ids[n] >= 0}
    if not taken:
        return None
    return np.flatnonzero(ids == min(taken)).astype(np.int64)


def incomplete(index: ClusterIndex, placed: dict[int, int]) -> dict[int, str]:
    """The gangs `placed` (pending pod idx → node, the batch's placements) leaves below their minimum, or spread
    over several domains of their topology key: pod idx of every member placed → why none binds."""
    out: dict[int, str] = {}
    for gang in index.gangs:
        members = [index.pod_by_key[k] for k in gang.members if k in index.pod_by_key]
        running = [p for p in members if p.node >= 0]
        mine = [p for p in members if p.idx in placed]
        if not mine:
            continue
        why = None
        if len(running) + len(mine) < gang.min_count:
            why = (f"PodGroup {gang.key}: only {len(running) + len(mine)} of minCount {gang.min_count} pods could "
                   "be placed, so none is bound")
        elif gang.topology_key is not None:
            domains = _domains(index, gang.topology_key, [p.node for p in running] + [placed[p.idx] for p in mine])
            if len(domains) != 1 or None in domains:
                why = f"PodGroup {gang.key}: its pods do not fit in one {gang.topology_key} domain"
        if why is not None:
            out.update(dict.fromkeys((p.idx for p in mine), why))
    return out


def _domains(index: ClusterIndex, key: str, nodes: Iterable[int]) -> set[str | None]:
    return {index.node_labels[n].get(key) for n in nodes}


def preferred_domain(ids: np.ndarray, node: int) -> tuple:
    """A node's domain of a gang's preferred topology key (`ids`: the key's label column): its value, or the node
    itself when it lacks the key."""
    return ("v", int(ids[node])) if ids[node] >= 0 else ("node", node)


def gang_figures(index: ClusterIndex, pod_node: np.ndarray, nodes: dict[int, int | None]) -> tuple[int, int]:
    """(gangs that run, − the preferred-topology domains they use) with some pods on `nodes` (pod idx → node or
    None) and the others where `pod_node` has them: what the CP-SAT objective's gangs and gang-domains stages
    count, for any plan."""
    running, spread = 0, 0
    for gang in index.gangs:
        members = [index.pod_by_key[k] for k in gang.members if k in index.pod_by_key]
        on = [nodes[p.idx] for p in members if nodes.get(p.idx) is not None]
        if not on:
            continue
        running += 1
        if gang.preferred_key is not None:
            ids = index.label_column(gang.preferred_key)[0]
            on += [int(pod_node[p.idx]) for p in members if p.idx not in nodes and pod_node[p.idx] >= 0]
            spread += len({preferred_domain(ids, n) for n in on})
    return running, -spread
