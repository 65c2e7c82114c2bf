"""How a window's plan ranks against greedy's, every comparison lexicographic (the first difference decides):

1. pods placed − pods evicted per priority level, from the highest (`net_vectors`): evicting a pod to place one
   of its own priority gains nothing;
2. then, as the objective orders them (`Standing.rank`): gangs that run (more is better), the disruption
   (`disruptions`: PDB violations, then victims per priority from the highest; less is better), preferred
   topology domains a gang spreads over (fewer is better);
3. then, with the default objective and the goal tied, the score measure of the window's pods, and of earlier
   windows' pods on the nodes where the plans differ, on the final state (`window_measures`, `solver.measure`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
from kplace.models.index import ClusterIndex, PodInfo

from ..framework.config import SchedulerConfig
from ..framework.state import ClusterState
from ..measure import measure
from ..plugins.defaultpreemption.encoding import Victims, violating
from ..plugins.gangscheduling import gang_figures
from .groups import PodGroup

Vector = list[tuple[int, int]]  # (priority, count) from the highest priority down


def placed_vector(pods: list[PodInfo], placed: set[int]) -> Vector:
    """(priority, placed count) from the highest priority down: compared lexicographically."""
    levels = sorted({p.priority for p in pods}, reverse=True)
    return [(lvl, sum(1 for p in pods if p.priority == lvl and p.idx in placed)) for lvl in levels]


def attempts_vector(pods: list[PodInfo], attempts: dict) -> Vector:
    """`placed_vector` of a greedy run's attempts."""
    return placed_vector(pods, {i for i, a in attempts.items() if a.node is not None})


def net_vectors(pods: list[PodInfo], *plans: tuple[set[int], list[int]], extra: list[set[int]] = ()
                ) -> list[Vector]:
    """Per plan (placed pod idx, its victims' priorities), then per `extra` plan (placed idx, no victims): (priority,
    pods placed − pods evicted) from the highest priority down, over every level of any plan, compared
    lexicographically: a plan that evicts a pod to place one of the same priority gains nothing."""
    levels = sorted({p.priority for p in pods} | {v for _, victims in plans for v in victims}, reverse=True)
    by = {lvl: [p.idx for p in pods if p.priority == lvl] for lvl in levels}
    return [[(lvl, sum(1 for i in by[lvl] if i in placed) - sum(1 for v in victims if v == lvl)) for lvl in levels]
            for placed, victims in [*plans, *((x, []) for x in extra)]]


def lex_less(a: Vector, b: Vector) -> bool:
    return [c for _, c in a] < [c for _, c in b]


def disruptions(*plans: tuple[list[PodInfo], set[int]]) -> list[list[int]]:
    """Each plan's (victims, PDB-violating victim idx) disruption as a vector compared lexicographically (less is
    better): PDB violations, then the victims at each priority any plan evicts at, from the highest down."""
    levels = sorted({v.priority for victims, _ in plans for v in victims}, reverse=True)
    return [[len(bad), *(sum(1 for v in victims if v.priority == lvl) for lvl in levels)] for victims, bad in plans]


@dataclass
class Standing:
    net: Vector  # pods placed − pods evicted per priority
    rank: tuple  # after pods placed, greater is better: (gangs that run, −disruption, −preferred domains)


def standings(index: ClusterIndex, state: ClusterState, pods: list[PodInfo], nodes: dict[int, int | None],
              evicted: list[PodInfo], victims: Victims | None, fallback: dict) -> tuple[Standing, Standing]:
    """CP-SAT's plan (`nodes`, `evicted`) and greedy's (`fallback` attempts), both on `state`."""
    fb_victims = [v for a in fallback.values() for v, _ in a.evictions]
    cp_net, fb_net = net_vectors(pods, ({i for i, n in nodes.items() if n is not None}, [v.priority for v in evicted]),
                                 ({i for i, a in fallback.items() if a.node is not None},
                                  [v.priority for v in fb_victims]))
    cp_dis, fb_dis = disruptions(
        (evicted, violating(victims, [v.idx for v in evicted]) if victims else set()),
        (fb_victims, {v.idx for a in fallback.values() for v, bad in a.evictions if bad}))
    cp_gangs = gang_figures(index, state.pod_node, nodes)
    fb_gangs = gang_figures(index, state.pod_node, {i: a.node for i, a in fallback.items()})
    return (Standing(cp_net, (cp_gangs[0], [-x for x in cp_dis], cp_gangs[1])),
            Standing(fb_net, (fb_gangs[0], [-x for x in fb_dis], fb_gangs[1])))


def window_measures(config: SchedulerConfig, state: ClusterState, groups: list[PodGroup],
                    nodes: dict[int, int | None], fallback: dict, fallback_state: ClusterState,
                    start: ClusterState) -> dict[str, Any]:
    """The score measure (`solver.measure`) of the window's pods in CP-SAT's plan (on `state`) and in greedy's (on
    its state), and of the pods earlier windows placed (pending in the input, on a node at the window's `start`) on
    the nodes where the two plans differ, in both states: those pods' node-local scores change with what lands on
    their node. Computed once when the two plans put as many of each group's pods on each node (identical pods are
    interchangeable)."""
    of = [(g.gid, p) for g in groups for p in g.pods]
    mine = [(p, nodes[p.idx]) for _, p in of if nodes[p.idx] is not None]
    theirs = [(p, fallback[p.idx].node) for _, p in of if fallback[p.idx].node is not None]
    cp = Counter((gid, nodes[p.idx]) for gid, p in of if nodes[p.idx] is not None)
    fb = Counter((gid, fallback[p.idx].node) for gid, p in of if fallback[p.idx].node is not None)
    if cp == fb:
        m = measure(config, state, mine)
        return {"cpsat": m.total, "greedy": m.total, "cpsat_per_plugin": m.per_plugin,
                "greedy_per_plugin": m.per_plugin}
    changed = np.array(sorted({n for (_, n) in (cp - fb) + (fb - cp)}), dtype=np.int64)
    earlier = start.placed_pending()
    at = start.pod_node[earlier]
    earlier = earlier[np.isin(at, changed) & (state.pod_node[earlier] == at) & (fallback_state.pod_node[earlier] == at)]
    others = [(state.index.pods[q], int(start.pod_node[q])) for q in earlier.tolist()]
    m_cp, m_fb = measure(config, state, mine + others), measure(config, fallback_state, theirs + others)
    return {"cpsat": m_cp.total, "greedy": m_fb.total, "cpsat_per_plugin": m_cp.per_plugin,
            "greedy_per_plugin": m_fb.per_plugin}
