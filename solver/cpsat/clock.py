"""The clock a search's time budget is counted in, and the CP-SAT solvers that respect it.

Deterministic (the default): budgets are deterministic seconds of CP-SAT search, so the same input and seed give the
same plan whatever the machine's load. A net stops a search that would overrun its budget by far: once the process
has used CPU_NET[0] × budget × workers + CPU_NET[1] seconds of CPU time since the solve began, a watchdog thread
stops it, and `solve` says so. The net counts CPU time, not wall time, because the work a deterministic second
stands for takes a roughly constant number of CPU seconds, whereas the wall time it takes grows with the machine's
load (a wall-clock net tripped on a loaded machine and the same seed gave another plan). Otherwise budgets are wall
seconds and the workers run a parallel portfolio.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from ortools.sat.python import cp_model

CPU_NET = (10.0, 5.0)  # CPU seconds per deterministic second and worker, and a constant


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
        else:
            p.max_time_in_seconds = seconds
        return solver

    def solve(self, solver: cp_model.CpSolver, model: cp_model.CpModel,
              callback: cp_model.CpSolverSolutionCallback | None = None) -> tuple[int, bool]:
        """Solve `model` and count its search time: (status, whether the net stopped it, so that its plan is not
        reproducible). CP-SAT releases the GIL while it searches, so the watchdog thread runs beside it."""
        if not self.deterministic:
            return solver.solve(model, callback), False
        p = solver.parameters
        limit = time.process_time() + CPU_NET[0] * p.max_deterministic_time * p.num_workers + CPU_NET[1]
        done, netted = threading.Event(), threading.Event()

        def watch() -> None:
            while not done.wait(0.05):
                if time.process_time() > limit:
                    netted.set()
                    solver.stop_search()
                    return

        watchdog = threading.Thread(target=watch, name="cpsat-net", daemon=True)
        watchdog.start()
        try:
            status = solver.solve(model, callback)
        finally:
            done.set()
            watchdog.join()
        self.searched += solver.response_proto.deterministic_time
        return status, netted.is_set() and status != cp_model.OPTIMAL
