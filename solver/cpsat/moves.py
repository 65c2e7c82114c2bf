"""`--allow-moves N`: running pods move to make room before anything is evicted, then the CP-SAT engine
schedules what is left, preemption included, on the state after the moves.

1. The rebalancer's admit model (`kplace rebalance --goal admit`: at most N moves, only pods a controller
   recreates and the policy lets move, PDB-safe waves) places what it can of the pending pods by priority with
   the fewest, cheapest moves. Gang members are left to step 2, which places gangs whole.
2. On the state after its moves and placements, CP-SAT schedules the other pending pods. The pods step 1
   moved or placed are not victims there: their priority is raised above every pending pod's in that copy
   of the state (a move or a placement is never undone by an eviction).
3. The combined plan replaces the plan without moves when it is better: more pods placed less pods evicted,
   by priority from the highest; or as many and less disruption, evictions first (PDB violations, then
   victims by priority from the highest), then moves: a move costs less than an eviction, more than nothing.
"""

from __future__ import annotations

import dataclasses
import logging

from kplace.models.index import ClusterIndex
from kplace.models.plan import Move, Placement, Plan

from ..framework.config import SchedulerConfig
from .options import CpsatOptions
from .window import schedule_cpsat

log = logging.getLogger(__name__)

PROTECTED = 2**31 - 1  # the priority moved and admitted pods get in step 2's copy of the state


def _net(plan: Plan, levels: list[int]) -> list[int]:
    """Pods placed less pods evicted at each priority level, from the highest."""
    return [sum(1 for p in plan.placements if p.node is not None and p.priority == lvl)
            - sum(1 for e in plan.evictions if e.priority == lvl) for lvl in levels]


def _disruption(plan: Plan, levels: list[int]) -> list[int]:
    """PDB violations, victims at each level from the highest, then moves (less is better)."""
    return [sum(e.pdb_violation for e in plan.evictions),
            *(sum(1 for e in plan.evictions if e.priority == lvl) for lvl in levels), len(plan.moves)]


def better(a: Plan, b: Plan) -> bool:
    """Whether plan `a` beats plan `b`: net placed by priority, then disruption (see the module docstring)."""
    levels = sorted({p.priority for p in [*a.placements, *b.placements]}
                    | {e.priority for e in [*a.evictions, *b.evictions]}, reverse=True)
    na, nb = _net(a, levels), _net(b, levels)
    if na != nb:
        return na > nb
    return _disruption(a, levels) < _disruption(b, levels)


def _after_moves(index: ClusterIndex, moved: dict[str, str], placed: dict[str, str]) -> ClusterIndex:
    """The state once the moves and placements are done, with those pods out of preemption's reach."""
    pods = []
    for p in index.snapshot.pods:
        key = f"{p.metadata.namespace}/{p.metadata.name}"
        node = moved.get(key) or placed.get(key)
        if node is not None:
            p = p.model_copy(update={"spec": p.spec.model_copy(update={"node_name": node, "priority": PROTECTED})})
        pods.append(p)
    return ClusterIndex(dataclasses.replace(index.snapshot, pods=pods))


def with_moves(index: ClusterIndex, config: SchedulerConfig, plan: Plan, opts: CpsatOptions, max_moves: int
               ) -> Plan:
    """`plan` (CP-SAT's without moves), or the better plan that moves at most `max_moves` running pods first.
    The moves' search has `opts.time_limit` seconds of its own: half for the admit model, half for step 2."""
    if max_moves <= 0 or (all(p.node is not None for p in plan.placements) and not plan.evictions):
        return plan
    from ..rebalance import Policy, RebalanceOptions, plan_rebalance

    gang_members = {k for g in index.gangs for k in g.members}
    wanted = frozenset(p.pod for p in plan.placements if p.pod not in gang_members)
    if not wanted:
        return plan
    half = max(0.5, opts.time_limit / 2)
    admit = plan_rebalance(index, config, Policy(), RebalanceOptions(
        goal="admit", max_moves=max_moves, time_limit=half, workers=opts.workers, seed=opts.seed,
        deterministic=opts.deterministic, only_pending=wanted))
    if not admit["moves"]:
        return plan
    moved = {m["pod"]: m["to"] for m in admit["moves"]}
    placed = {p["pod"]: p["node"] for p in admit["placements"] if p["node"]}
    rest = _after_moves(index, moved, placed)
    later = schedule_cpsat(rest, config, dataclasses.replace(opts, time_limit=half, on_progress=None,
                                                             on_window=None))
    first = {p.pod: p for p in plan.placements}
    placements = [Placement(k, n, None, first[k].priority) for k, n in placed.items()]
    placements += [dataclasses.replace(p, priority=first[p.pod].priority) for p in later.placements
                   if p.pod in first and p.pod not in placed]
    moves = [Move(m["pod"], m["from"], m["to"], m["wave"], list(m["admits"])) for m in admit["moves"]]
    combined = Plan(engine=plan.engine, placements=placements, evictions=later.evictions, moves=moves,
                    windows=later.windows, warnings=[*plan.warnings, *later.warnings, *admit["warnings"]],
                    seconds=plan.seconds + admit["seconds"] + later.seconds)
    if not better(combined, plan):
        return plan
    order = {p.pod: i for i, p in enumerate(plan.placements)}
    combined.placements.sort(key=lambda p: order[p.pod])
    return combined
