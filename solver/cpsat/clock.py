"""The clock a search's time budget is counted in, and the CP-SAT solvers that respect it.

Deterministic (the default): budgets are deterministic seconds of CP-SAT search, so the same input and seed give the
same plan whatever the machine's load; each solve also stops after WALL_NET[0] × its budget + WALL_NET[1] seconds
of wall time, a net for a search that would overrun its budget by far (deterministic time can run slower than wall
time on a loaded machine), and `record` says when the net stopped it. Otherwise budgets are wall seconds and the
workers run a parallel portfolio.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ortools.sat.python import cp_model

WALL_NET = (10.0, 5.0)  # under 4× + 2 s, three busy jobs on 2 cores already tripped it (a plan that varied)


@dataclass
class SearchClock:
    deterministic: bool = True
    workers: int = 2
    seed: int = 0
    searched: float = 0.0  # deterministic seconds searched so far

    def now(self) -> float:
        """Seconds on the budget's clock (deterministic search time, or wall time)."""
        return self.searched if self.deterministic else time.perf_counter()

    def solver(self, seconds: float) -> cp_model.CpSolver:
        solver = cp_model.CpSolver()
        p = solver.parameters
        p.random_seed = self.seed
        p.num_workers = max(1, self.workers)
        seconds = max(0.01, seconds)
        if self.deterministic:
            p.interleave_search = True
            p.max_deterministic_time = seconds
            p.max_time_in_seconds = WALL_NET[0] * seconds + WALL_NET[1]
        else:
            p.max_time_in_seconds = seconds
        return solver

    def record(self, solver: cp_model.CpSolver, status: int) -> bool:
        """Count a finished solve; True when the wall-clock net stopped it (its plan is then not reproducible)."""
        self.searched += solver.response_proto.deterministic_time
        return (self.deterministic and status != cp_model.OPTIMAL
                and solver.wall_time >= 0.99 * solver.parameters.max_time_in_seconds)
