"""The clock a search's time budget is counted in, and the CP-SAT solvers that respect it.

Deterministic (the default): budgets are deterministic seconds of CP-SAT search, so the same input and seed give the
same plan whatever the machine's load. A net stops a search that would overrun its budget by far: once the process
has used CPU_NET[0] × budget × workers + CPU_NET[1] seconds of CPU time since the solve began, a watchdog thread
stops it, and `solve` says so. The net counts CPU time, not wall time, because the work a deterministic second
stands for takes a roughly constant number of CPU seconds, whereas the wall time it takes grows with the machine's
load (a wall-clock net tripped on a loaded machine and the same seed gave another plan). Otherwise budgets are wall
seconds and the workers run a parallel portfolio.

A wall-clock `deadline` (a `time.perf_counter()` instant, the end of the whole decision's budget) caps every
search besides, so a search running when the deadline passes stops there with its best solution so far, and one
started after it stops at once. In deterministic mode the watchdog stops it (CP-SAT is given no wall limit: its
presolve shortens itself under one, silently, so a loaded machine would get another plan); otherwise CP-SAT's own
wall limit is set to the time left. A search the deadline cut is not reproducible, and `solve` says so
(`Cut.DEADLINE`); a run the deadline never reaches is as deterministic as without one.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from ortools.sat.python import cp_model

CPU_NET = (10.0, 5.0)  # CPU seconds per deterministic second and worker, and a constant


class Cut:
    """Why a search stopped before its own limit (None: it did not): the CPU net, or the wall-clock deadline."""

    NET = "cpu-net"
    DEADLINE = "deadline"


@dataclass
class SearchClock:
    deterministic: bool = True
    workers: int = 2
    seed: int = 0
    searched: float = 0.0  # deterministic seconds searched so far
    deadline: float | None = None  # perf_counter instant every search stops by (None: none)
    cuts: int = 0  # searches the deadline cut

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
        # wall-clock mode: the deadline's wall limit, when it is the search's tightest (deterministic mode: `solve`'s
        # watchdog enforces it)
        solver.deadline_limited = False
        if self.deadline is not None and not self.deterministic:
            left = max(0.0, self.deadline - time.perf_counter())
            solver.deadline_limited = left < p.max_time_in_seconds
            p.max_time_in_seconds = left if solver.deadline_limited else p.max_time_in_seconds
        return solver

    def past_deadline(self) -> bool:
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def solve(self, solver: cp_model.CpSolver, model: cp_model.CpModel,
              callback: cp_model.CpSolverSolutionCallback | None = None) -> tuple[int, str | None]:
        """Solve `model` and count its search time: (status, what cut it short so that its plan is not
        reproducible: `Cut.NET`, `Cut.DEADLINE` or None). CP-SAT releases the GIL while it searches, so the watchdog
        thread runs beside it."""
        if not self.deterministic:
            status = solver.solve(model, callback)
            return status, self._deadline_cut(solver, status)
        p = solver.parameters
        limit = time.process_time() + CPU_NET[0] * p.max_deterministic_time * p.num_workers + CPU_NET[1]
        done, netted, late = threading.Event(), threading.Event(), threading.Event()

        def watch() -> None:
            while not done.wait(0.02):
                if time.process_time() > limit:
                    netted.set()
                elif self.past_deadline():
                    late.set()
                else:
                    continue
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
        proven = status in (cp_model.OPTIMAL, cp_model.INFEASIBLE, cp_model.MODEL_INVALID)
        if netted.is_set() and not proven:
            return status, Cut.NET
        return status, (self._cut_by_deadline() if late.is_set() and not proven else None)

    def _cut_by_deadline(self) -> str:
        self.cuts += 1
        return Cut.DEADLINE

    def _deadline_cut(self, solver: cp_model.CpSolver, status: int) -> str | None:
        """Wall-clock mode: DEADLINE when the search ended unproven and the deadline's limit was the tighter one."""
        if status in (cp_model.OPTIMAL, cp_model.INFEASIBLE, cp_model.MODEL_INVALID) or not solver.deadline_limited:
            return None
        return self._cut_by_deadline()
