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
started after it stops at once. In deterministic mode the watchdog stops it, the search carrying the seconds left
(CP-SAT is given no wall limit: its presolve shortens itself under one, silently, so a loaded machine would get
another plan); otherwise CP-SAT's own wall limit is set to the time left. A search the deadline cut is not
reproducible, and `solve` says so (`Cut.DEADLINE`); a run the deadline never reaches is as deterministic as without
one.

A search can also run elsewhere (`solver.executors`): `Search` is one solve as data (the model and the solver's
parameters in protobuf text format, since ortools' Python protos neither pickle nor parse binary), `search` runs it
with the net in whatever process holds it, and the clock that built it counts its `Answer` (`SearchClock.count`).
CP-SAT sees the same proto and parameters wherever it runs, so a deterministic search gives the same answer.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ortools.sat.python import cp_model
from ortools.sat.python import cp_model_helper as cmh

CPU_NET = (10.0, 5.0)  # CPU seconds per deterministic second and worker, and a constant


class Cut:
    """Why a search stopped before its own limit (None: it did not): the CPU net, or the wall-clock deadline."""

    NET = "cpu-net"
    DEADLINE = "deadline"


@dataclass
class Search:
    """One solve as data: `model` (a CpModel, in this process, or its proto in text format) and the solver's
    parameters (text format); `deadline_limited`: (wall-clock mode) the wall limit among them is the deadline's;
    `deadline_in`: (deterministic mode) the seconds left to the deadline when the search was made, which the
    watchdog enforces wherever it runs."""

    model: cp_model.CpModel | str
    parameters: str
    deterministic: bool
    deadline_limited: bool
    callback: Any = None  # a CpSolverSolutionCallback, in this process only (it does not travel)
    deadline_in: float | None = None

    def portable(self) -> Search:
        """The search as plain strings, to send to another process."""
        model = self.model if isinstance(self.model, str) else str(self.model.proto)
        return Search(model, self.parameters, self.deterministic, self.deadline_limited, deadline_in=self.deadline_in)


@dataclass
class Answer:
    """What a search found: CP-SAT's response (its text format, from another process) and whether the net or the
    deadline (deterministic mode) stopped it."""

    response: Any  # cmh.CpSolverResponse, or its text format
    netted: bool
    late: bool = False
    _parsed: Any = field(default=None, repr=False)

    def portable(self) -> Answer:
        text = self.response if isinstance(self.response, str) else str(self.response)
        return Answer(text, self.netted, self.late)

    @property
    def proto(self) -> cmh.CpSolverResponse:
        if self._parsed is None:
            if isinstance(self.response, str):
                self._parsed = cmh.CpSolverResponse()
                self._parsed.parse_text_format(self.response)
            else:
                self._parsed = self.response
        return self._parsed

    @property
    def status(self) -> int:
        return int(self.proto.status)

    @property
    def objective_value(self) -> float:
        return self.proto.objective_value

    @property
    def best_objective_bound(self) -> float:
        return self.proto.best_objective_bound

    @property
    def wall_time(self) -> float:
        return self.proto.wall_time

    @property
    def deterministic_time(self) -> float:
        return self.proto.deterministic_time

    @property
    def solution(self) -> list[int]:
        return list(self.proto.solution)

    def value(self, expression: Any) -> int:
        """The value of a variable, literal or linear expression of the model in the solution."""
        return cmh.ResponseHelper.value(self.proto, expression)

    @staticmethod
    def status_name(status: int) -> str:
        return cmh.CpSolverStatus(status).name


def search(task: Search) -> Answer:
    """Run `task` here (in a worker, or in the caller's process), with the CPU net in deterministic mode; a model
    in text format is parsed first, and the answer goes back as text."""
    if isinstance(task.model, str):
        model = cp_model.CpModel()
        if not model.proto.parse_text_format(task.model):
            raise ValueError("the model sent to the search does not parse")
    else:
        model = task.model
    solver = cp_model.CpSolver()
    if not solver.parameters.parse_text_format(task.parameters):
        raise ValueError("the solver parameters sent to the search do not parse")
    _, netted, late = watched(solver, model, task.callback, task.deterministic, task.deadline_in)
    answer = Answer(solver.response_proto, netted, late)
    return answer if task.model is model else answer.portable()


def watched(solver: cp_model.CpSolver, model: cp_model.CpModel, callback: cp_model.CpSolverSolutionCallback | None,
            deterministic: bool, deadline_in: float | None = None) -> tuple[int, bool, bool]:
    """Solve with the net and the deadline (`deadline_in` seconds from now) in deterministic mode: (status, whether
    the net stopped the search, whether the deadline did). CP-SAT releases the GIL while it searches, so the
    watchdog thread runs beside it; the CPU time counted is this process's."""
    if not deterministic:
        return solver.solve(model, callback), False, False
    p = solver.parameters
    limit = time.process_time() + CPU_NET[0] * p.max_deterministic_time * p.num_workers + CPU_NET[1]
    deadline = None if deadline_in is None else time.perf_counter() + deadline_in
    done, netted, late = threading.Event(), threading.Event(), threading.Event()

    def watch() -> None:
        while not done.wait(0.02):
            if time.process_time() > limit:
                netted.set()
            elif deadline is not None and time.perf_counter() >= deadline:
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
    return status, netted.is_set(), late.is_set()


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
        # wall-clock mode: the deadline's wall limit, when it is the search's tightest (deterministic mode: the
        # watchdog enforces it, `task`)
        solver.deadline_limited = False
        if self.deadline is not None and not self.deterministic:
            left = max(0.0, self.deadline - time.perf_counter())
            solver.deadline_limited = left < p.max_time_in_seconds
            p.max_time_in_seconds = left if solver.deadline_limited else p.max_time_in_seconds
        return solver

    def past_deadline(self) -> bool:
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def child(self) -> SearchClock:
        """A clock for one of several independent models searched side by side: the same settings and deadline,
        its own count from zero (the caller adds it back with `absorb`, in a fixed order)."""
        return SearchClock(self.deterministic, self.workers, self.seed, deadline=self.deadline)

    def absorb(self, child: SearchClock) -> None:
        self.searched += child.searched
        self.cuts += child.cuts

    def task(self, solver: cp_model.CpSolver, model: cp_model.CpModel,
             callback: cp_model.CpSolverSolutionCallback | None = None) -> Search:
        """The solve `solver` is set up for (`solver()`), as a `Search` to run anywhere."""
        left = None
        if self.deterministic and self.deadline is not None:
            left = max(0.0, self.deadline - time.perf_counter())
        return Search(model, str(solver.parameters), self.deterministic, solver.deadline_limited, callback, left)

    def count(self, task: Search, answer: Answer) -> str | None:
        """Count a search's time; what cut it short so that its plan is not reproducible (`Cut.NET`,
        `Cut.DEADLINE` or None)."""
        status = answer.status
        if status in (cp_model.OPTIMAL, cp_model.INFEASIBLE, cp_model.MODEL_INVALID):
            cut = None
        elif self.deterministic:
            cut = Cut.NET if answer.netted else Cut.DEADLINE if answer.late else None
        else:
            cut = Cut.DEADLINE if task.deadline_limited else None
        if self.deterministic:
            self.searched += answer.deterministic_time
        self.cuts += cut == Cut.DEADLINE
        return cut

    def solve(self, solver: cp_model.CpSolver, model: cp_model.CpModel,
              callback: cp_model.CpSolverSolutionCallback | None = None) -> tuple[int, str | None]:
        """Solve `model` here and count its search time: (status, what cut it short, as `count`)."""
        task = self.task(solver, model)
        status, netted, late = watched(solver, model, callback, self.deterministic, task.deadline_in)
        return status, self.count(task, Answer(solver.response_proto, netted, late))
