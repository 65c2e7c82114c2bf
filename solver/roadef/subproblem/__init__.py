"""One CP-SAT round of the large neighbourhood search: free some processes among some machines and reassign them
optimally there.

The model (`variables`, `constraints`, `objective`) has every hard constraint of the instance and the official
objective restricted to the freed part, which is linear once the fixed processes' usage is a constant; it is
hinted with the current assignment, so CP-SAT starts from a feasible solution and a result is never worse. `solve`
builds it in one order (the order fixes the model, hence the search, for a seed) and runs CP-SAT on a
deterministic time budget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from . import constraints, objective
from .variables import Subproblem, assignment_variables

if TYPE_CHECKING:
    from ..search import RoadefLNS

__all__ = ["Subproblem", "build", "solve"]


def build(search: RoadefLNS, machines: list[int], freed: list[int]) -> Subproblem:
    """The model of freeing `freed` (processes on `machines`) in `search`'s current assignment."""
    sp = Subproblem(search, machines, freed)
    assignment_variables(sp)
    objective.move_costs(sp)
    for m in machines:
        constraints.capacity(sp, m)
        objective.load_cost(sp, m)
        objective.balance_cost(sp, m)
    constraints.conflict_and_spread(sp)
    constraints.dependencies(sp)
    objective.service_move_cost(sp)
    sp.model.Minimize(sum(sp.terms))
    for v, val in sp.hints:
        sp.model.AddHint(v, val)
    return sp


def solve(search: RoadefLNS, machines: list[int], freed: list[int], wall: float) -> tuple[np.ndarray | None, bool]:
    """(the new assignment, or None when CP-SAT found none; whether it is optimal for the subproblem). CP-SAT runs
    `search.workers` workers (interleaved search when more than one, still deterministic) for `search.sub_dtime`
    deterministic seconds, at most `wall` seconds, seeded from `search.rng`."""
    from ortools.sat.python import cp_model

    sp = build(search, machines, freed)
    solver = cp_model.CpSolver()
    prm = solver.parameters
    prm.num_workers = search.workers
    if search.workers > 1:
        prm.interleave_search = True
    prm.max_deterministic_time = search.sub_dtime
    prm.max_time_in_seconds = max(0.05, wall)
    prm.random_seed = search.rng.randrange(1 << 30)
    status = solver.Solve(sp.model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, False
    new = search.a.copy()
    for (p, m), v in sp.x.items():
        if solver.BooleanValue(v):
            new[p] = m
    return new, status == cp_model.OPTIMAL
