"""Solving a model's lexicographic stages, for the window engine and the rebalancer alike.

Stages s₁ … s_k (`objective.Stage`) are optimised in order on one model: stage i maximises (or minimises) its
expression e_i; once solved at value v_i it is fixed, e_i ≥ v_i (≤ for a minimisation), so every later stage keeps
the earlier stages' optimum (or the best value found in time), and the next stage starts from the last solution.
Every solve runs on one `SearchClock`, so the budgets and the net are counted the same way everywhere. A solve is
`prepare`d (the objective set, the solver's parameters fixed: a `clock.Search`), run wherever (`clock.search`, here
or in an executor's worker) and `finish`ed (counted on the clock); `optimise` does all three here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ortools.sat.python import cp_model

from .clock import Answer, Search, SearchClock, search
from .objective import Stage

Progress = Callable[[float, float, float, str], None]  # (seconds, objective, bound, stage)


class _Callback(cp_model.CpSolverSolutionCallback):
    def __init__(self, hook: Progress, stage: str) -> None:
        super().__init__()
        self._hook, self._stage = hook, stage

    def on_solution_callback(self) -> None:
        self._hook(self.wall_time, self.objective_value, self.best_objective_bound, self._stage)


@dataclass
class StageSolve:
    """One solve of one stage: its answer (values, objective, bound), its status, and what cut it short (the clock's
    net or the wall-clock deadline; None: nothing)."""

    result: Answer
    status: int
    cut: str | None

    @property
    def netted(self) -> bool:
        """The search was cut short: its result is not reproducible."""
        return self.cut is not None

    @property
    def ok(self) -> bool:
        return self.status in (cp_model.OPTIMAL, cp_model.FEASIBLE)

    @property
    def value(self) -> int:
        return round(self.result.objective_value)

    def entry(self, name: str) -> dict[str, Any]:
        """The stage's line in a plan's `stages`: its status and search time (and the net, when it stopped it)."""
        out: dict[str, Any] = {"stage": name, "status": self.result.status_name(self.status),
                               "seconds": round(self.result.wall_time, 4)}
        if self.cut is not None:
            out["limit"] = self.cut  # stopped by the clock's net or the deadline: this stage is not reproducible
        return out


class StageSolver:
    def __init__(self, model: cp_model.CpModel, clock: SearchClock, on_progress: Progress | None = None) -> None:
        self.model, self.clock, self.on_progress = model, clock, on_progress

    def optimise(self, stage: Stage, seconds: float, gap: float = 0.0, light: bool = False,
                 sequential: bool = False) -> StageSolve:
        """Optimise `stage` for `seconds` on the clock, here (`prepare`, `clock.search`, `finish`)."""
        task = self.prepare(stage, seconds, gap, light, sequential)
        return self.finish(stage, task, search(task))

    def prepare(self, stage: Stage, seconds: float, gap: float = 0.0, light: bool = False,
                sequential: bool = False) -> Search:
        """The search that optimises `stage` for `seconds` on the clock, stopping within `gap` (relative) of the
        bound if given. `light` presolves once, without probing: for short searches from a complete hint, where a
        full presolve would take longer than the search. `sequential` searches on one thread, one subsolver,
        without presolve: for the shortest probes from a complete hint, which an interleaved search overruns (its
        first batch runs a chunk of every subsolver before the limit is checked) and a presolve would outlast."""
        (self.model.maximize if stage.maximize else self.model.minimize)(stage.expr)
        solver = self.clock.solver(seconds)
        if gap:
            solver.parameters.relative_gap_limit = gap
        if light:
            solver.parameters.max_presolve_iterations = 1
            solver.parameters.cp_model_probing_level = 0
        if sequential:
            solver.parameters.num_workers = 1
            solver.parameters.interleave_search = False
            solver.parameters.cp_model_presolve = False
        hook = self.on_progress
        return self.clock.task(solver, self.model, _Callback(hook, stage.name) if hook else None)

    def finish(self, stage: Stage, task: Search, answer: Answer) -> StageSolve:
        """The prepared search's answer, counted on the clock (and reported to the progress hook)."""
        cut = self.clock.count(task, answer)
        status = answer.status
        if self.on_progress and status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            self.on_progress(answer.wall_time, answer.objective_value, answer.best_objective_bound, stage.name)
        return StageSolve(answer, status, cut)

    def fix(self, stage: Stage, value: int) -> None:
        """Keep `stage` at `value` (or better) in every later stage."""
        self.model.add(stage.expr >= value) if stage.maximize else self.model.add(stage.expr <= value)

    def hint(self, solve: StageSolve) -> None:
        """The next stage starts from this solve's whole solution."""
        self.model.clear_hints()
        hint = self.model.proto.solution_hint
        hint.vars.extend(range(len(self.model.proto.variables)))
        hint.values.extend(solve.result.solution)
