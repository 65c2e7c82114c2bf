"""`verify_plan`, the entry point: the plan's moves, placements (with their claim bindings), evictions and
gangs are checked for what they name, then the pods it places are replayed onto the state (the bound pods,
where they are once the moves are done) in the best binding order found."""

from __future__ import annotations

from kplace.models.index import ClusterIndex
from kplace.models.plan import Plan

from .evictions import check_evictions
from .gangs import check_gangs
from .moves import check_moves
from .order import find_order
from .placements import check_placements
from .records import PodTable
from .replay import Replay
from .violation import Violation


def verify_plan(index: ClusterIndex, plan: Plan, allow_pdb_violations: bool = False) -> list[Violation]:
    """Every violation of the plan against the state (an empty list: the plan verifies); with
    `allow_pdb_violations` an eviction may take a PodDisruptionBudget below zero when the plan declares it."""
    replay = Replay(index)
    pods = PodTable(index)
    running = {pi.key: (pods(pi.key), int(pi.node)) for pi in index.pods if pi.node >= 0 and not pi.pending}
    out = check_moves(plan.moves, index, pods, replay, running)

    fails, placed = check_placements(plan.placements, pods, replay.nodes.id)
    out += fails
    fails, replay.volumes.bindings = replay.volumes.claims.check_bindings(placed.with_volumes)
    out += fails
    fails, victims, released, evicted = check_evictions(plan.evictions, index, pods, placed.node_of,
                                                        {m.pod for m in plan.moves}, allow_pdb_violations)
    out += fails
    bound = [b for k, b in running.items() if k not in released]
    gone = [b for k, b in running.items() if k in released]
    out += check_gangs(index, replay.nodes, placed.node_of, evicted)
    out += find_order(replay, bound, placed.todo, victims, gone)
    return out
