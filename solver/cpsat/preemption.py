"""Preemption in a window (the model's side is `plugins/defaultpreemption/encoding`): when the window considers
candidate victims, whether greedy's evictions are a plan the model can represent, and each eviction's preemptor."""

from __future__ import annotations

from kplace.models.index import PodInfo

from ..framework.state import ClusterState
from ..plugins.defaultpreemption.encoding import Victims, candidates, may_preempt, violating
from .groups import PodGroup
from .options import ProfileOf


def window_victims(state: ClusterState, groups: list[PodGroup], profile: ProfileOf, objective: str,
                   greedy_placed: int) -> Victims | None:
    """The candidate victims when the window may need them: the default objective and greedy without preemption
    leaving some pod out."""
    if objective != "default" or greedy_placed == sum(g.size for g in groups):
        return None
    victims = candidates(state, [g.rep for g in groups], profile)
    return victims if victims.pods else None


def representable(attempts: dict, victims: Victims) -> bool:
    """Whether greedy's plan's evictions are all candidates of the model."""
    return all(v.idx in victims.node for a in attempts.values() for v, _ in a.evictions)


def preemptors(pods: list[PodInfo], nodes: dict[int, int | None], evicted: list[PodInfo], victims: Victims | None,
               profile: ProfileOf) -> list[tuple[PodInfo, int, PodInfo, bool]]:
    """(victim, node, preemptor, violates a PDB) per evicted pod: its preemptor is the window pod of highest
    priority on its node that may preempt (the first in queue order among equals)."""
    if not evicted:
        return []
    bad = violating(victims, [v.idx for v in evicted]) if victims is not None else set()
    out = []
    for v in evicted:
        node = victims.node[v.idx]
        there = [p for p in pods if nodes[p.idx] == node and p.priority > v.priority and may_preempt(p, profile(p))]
        out.append((v, node, max(there, key=lambda p: p.priority), v.idx in bad))
    return out
