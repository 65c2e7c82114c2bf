"""The ROADEF 2012 search of one process: descent, annealing, rearrangements and CP-SAT large neighbourhood search.

`RoadefLNS` starts from the initial assignment (which the challenge guarantees is feasible) and combines:

- a best-improvement **descent** over shift moves (one process to another machine) and swap moves (two processes
  on different machines exchange them, within a service too), with exact incremental deltas and feasibility
  (the maths is in `vectorised`'s docstring), compiled with numba (`moves`);
- **annealing** phases (compiled, `moves.anneal`) over the same moves, from the current assignment: a random shift
  or swap is taken with probability min(1, exp(−ΔF/T)), T falling geometrically from 10⁻³ to 10⁻⁶ of the
  objective; the best assignment met is kept when it is better;
- **big process rearrangements** (400 per phase, `moves.rearrange`): a process p of a costly machine goes to a
  machine r where it alone would cost less and which it may fit (transient room C − U⁰ on r, fixed by the initial
  state), after processes on r move out to make room for it (one that can go nowhere goes home after room is made
  there); kept unless the objective rises. This places large processes that fit only a few machines others fill,
  where transient room keeps those others from leaving one by one;
- **CP-SAT rounds** (large neighbourhood search, 16 per phase): free the processes of a few machines
  (`neighbourhoods`), reassign them optimally among those machines with CP-SAT (`subproblem`: every hard
  constraint, the objective restricted to the freed part, linear), keep the result when it does not cost more,
  then descend from it over the machines it touched;
- where there are transient resources, **soft annealing** phases: the same annealing with transient capacity soft
  (each unit over it costs 2 → 500 times the largest load weight over the phase), then repaired to a feasible
  assignment and descended from (`vectorised.MoveState.anneal`, numpy, heat-bath).

After a first descent, where there are transient resources, come eight phases of soft annealing and CP-SAT rounds
in turn, then phases of rearrangements alone until one gains less than 0.05 % of the objective (soft annealing
first leaves assignments from which rearrangements go far). Then phases of annealing, soft annealing,
rearrangements or CP-SAT rounds follow, each kind drawn with a probability in proportion to its recent gain per
unit of work, rate_k ← ½ rate_k + ½ gain/work (at least 15 %, 10 % or 5 % each with two, three or four kinds; the
rates of the kinds not run fade by a quarter each phase, since gains shrink as the search goes on and a rate
measured early would otherwise hold its share); no rearrangements while no machine has load or balance cost.
Every assignment kept is re-scored and re-checked by `scoring.objective`/`violations` first, so the search is
always feasible; for a given seed and iteration count it is deterministic (work is counted, not timed, and CP-SAT
runs single-threaded on a deterministic time budget); the wall-clock limit only decides where the trajectory
stops. Measured results and what each kind of phase does on which instance: docs/benchmarks.md (ROADEF section).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import subproblem
from .instance import Instance, check_assignment
from .moves import FastMoves
from .neighbourhoods import pick_machines
from .scoring import machine_costs, objective, usage, violations
from .vectorised import MoveState


@dataclass
class SearchStats:
    iterations: int = 0
    improvements: int = 0
    optimal_subproblems: int = 0
    shift_moves: int = 0
    anneal_steps: int = 0
    lns_rounds: int = 0
    history: list[tuple[float, int]] = field(default_factory=list)  # (seconds, objective) at each improvement


class RoadefLNS:
    """Descent, annealing, rearrangements and CP-SAT large neighbourhood search from the initial assignment (see
    the module docstring).

    Work is counted in units meant to take about 0.5 ms each: one numpy soft-annealing step, FAST_TICKS of compiled
    annealing; LNS_WORK and BPR_WORK are the units one CP-SAT round and one rearrangement count for
    (`benchmarks/bench_roadef_work.py` measures what they take; the figures are in docs/benchmarks.md).

    `run(time_limit, max_iterations)` returns the best assignment found; it is feasible at every step
    (a subproblem's solution is only accepted when every hard constraint holds, and the starting point is
    the initial assignment). `seed` fixes the neighbourhoods and CP-SAT's seeds; CP-SAT works on a
    deterministic time budget per subproblem, single-threaded unless `workers` > 1 (then with interleaved,
    still deterministic, search).
    """

    def __init__(self, inst: Instance, initial: np.ndarray, *, seed: int = 0, workers: int = 1,
                 sub_dtime: float = 0.2, log: Callable[[str], None] | None = None) -> None:
        self.inst = inst
        self.a0 = check_assignment(inst, np.asarray(initial), "initial assignment").copy()
        self.a = self.a0.copy()
        self.rng = random.Random(seed)
        self.workers = max(1, workers)
        self.sub_dtime = sub_dtime
        self.log = log
        self.LNS_WORK = 600
        self.BPR_WORK = 20
        self.FAST_TICKS = 3500  # compiled annealing ticks (moves.TICKS) per unit
        self.FAST_CHUNK = 4_000_000  # compiled annealing ticks between deadline checks
        self.BPR_CHUNK = 5  # rearrangements between deadline checks
        self.DESCENT_CHUNK = 2000  # processes a descent evaluates between deadline checks
        s_count = inst.n_services
        order = np.argsort(inst.service, kind="stable")
        bounds = np.cumsum(np.bincount(inst.service, minlength=s_count))
        self.svc_procs = np.split(order, bounds[:-1]) if s_count else []
        self.rdeps: list[list[int]] = [[] for _ in range(s_count)]
        for s, deps in enumerate(inst.dependencies):
            for d in deps:
                self.rdeps[d].append(s)
        self.pm_w = inst.process_move_cost * inst.weight_process_move
        self.mm_w = inst.machine_move_cost * inst.weight_machine_move
        self.req = inst.requirement
        self.req_list = inst.requirement.tolist()
        self.nbh = inst.neighborhood.tolist()
        self.loc = inst.location.tolist()
        self.machines_of_nb: dict[int, list[int]] = {}
        for m, n in enumerate(self.nbh):
            self.machines_of_nb.setdefault(n, []).append(m)
        self.objective_terms = [r for r in range(inst.n_resources) if inst.load_weight[r] > 0]
        self.max_free = min(inst.n_processes, 40)
        self.wide_share = 0.5
        self.hot_share = 0.35  # rounds of `neighbourhoods.hot_and_roomy` (while load or balance costs remain)
        self.anneal_steps = 10000  # steps of one annealing phase
        self.t_start, self.t_end = 1e-3, 1e-6  # annealing temperatures, relative to the objective
        self.lns_rounds = 16  # CP-SAT rounds of one phase (about the same work as an annealing phase)
        # soft-transient annealing: a unit of transient usage over capacity costs 2 → 500 times the largest load
        # weight over the phase (an option only where there are transient resources)
        w = float(max(1, int(inst.load_weight.max()) if inst.n_resources else 1))
        self.soft_weights = (2.0 * w, 500.0 * w)
        self.kinds = ["anneal", "lns", "bpr"] + (["soft"] if inst.transient.any() else [])
        self.bpr_attempts = 400  # big process rearrangements of one phase
        self.fade = 0.75  # each phase, the rates of the kinds not run are multiplied by this
        # first phases where there are transient resources: soft annealing and CP-SAT rounds in turn
        self.prelude = 8 if "soft" in self.kinds else 0
        # then rearrangements alone until a phase of them gains less than this share of the objective
        self.bpr_first, self.bpr_first_gain = True, 5e-4
        self.stats = SearchStats()
        self._refresh()
        self.moves = MoveState(inst, self.a0, self.a)  # soft annealing
        self.fast = FastMoves(inst, self.a0)  # descent, annealing, rearrangements

    # ---- state

    def _refresh(self) -> None:
        inst, a = self.inst, self.a
        self.U = usage(inst, a)
        moved = a != self.a0
        self.T = self.U.copy()
        np.add.at(self.T, self.a0[moved], self.req[moved])
        self.moved_per_svc = np.bincount(inst.service[moved], minlength=max(1, inst.n_services))
        self.obj = objective(inst, self.a0, a, self.U).total
        self.machine_cost = machine_costs(inst, self.U)
        order = np.argsort(a, kind="stable")
        bounds = np.cumsum(np.bincount(a, minlength=inst.n_machines))
        self.procs_on = np.split(order, bounds[:-1])

    # ---- main loop

    def _fast_state(self) -> FastMoves:
        if not np.array_equal(self.fast.a, self.a):
            self.fast.load(self.a)
        return self.fast

    def _seed(self) -> int:
        return self.rng.randrange(1 << 31)

    def local_search(self, deadline: float, queue: list[int] | None = None) -> int:
        """Shift/swap descent (`FastMoves.descend`) over `queue` (default: every process in random order), kept
        when the exact scorer agrees (feasible, not worse); returns the moves made."""
        fast = self._fast_state()
        if queue is None:
            queue = list(range(self.inst.n_processes))
            self.rng.shuffle(queue)
        left, n = np.asarray(queue, dtype=np.int64), 0
        while len(left) and time.monotonic() < deadline:
            moves, left = fast.descend(left, self._seed(), self.DESCENT_CHUNK)
            n += moves
        if n and self._accept(fast.a.copy()):
            self.stats.shift_moves += n
            return n
        return 0

    def _accept(self, new: np.ndarray) -> bool:
        """Take `new` as the current assignment when the exact scorer finds it feasible and not worse."""
        u = usage(self.inst, new)
        total = objective(self.inst, self.a0, new, u).total
        if total > self.obj:
            return False
        if violations(self.inst, self.a0, new, u):  # pragma: no cover - a bug in a move or subproblem model
            if self.log:
                self.log(f"BUG: an infeasible assignment at iteration {self.stats.iterations}; ignored")
            return False
        self.a = np.array(new, dtype=np.int64)
        self._refresh()
        return True

    def anneal(self, deadline: float, steps: int, soft: bool = False) -> None:
        """One annealing phase from the current assignment, `steps` work units; keeps its best if it is better.
        Compiled Metropolis annealing (`FastMoves.anneal`, FAST_TICKS per unit, in chunks so that the
        deadline is kept), or with `soft` the heat-bath annealing of `MoveState.anneal` with transient capacity
        soft during the phase (`soft_weights`), then repaired."""
        if soft:
            ms = self.moves
            if not np.array_equal(ms.a, self.a):
                ms.load(self.a)
            best_a, best = ms.anneal(self.rng, deadline, steps, self.obj * self.t_start, self.obj * self.t_end,
                                     self.soft_weights)
        else:
            fast = self._fast_state()
            total = steps * self.FAST_TICKS
            chunks = max(1, -(-total // self.FAST_CHUNK))
            ratio = (self.t_end / self.t_start) ** (1.0 / chunks)
            t0 = self.obj * self.t_start
            best_a, best = self.a, self.obj
            for _ in range(chunks):
                if time.monotonic() > deadline:
                    break
                a, obj = fast.anneal(-(-total // chunks), t0, t0 * ratio, self._seed())
                if obj < best:
                    best_a, best = a, obj
                t0 *= ratio
        self.stats.anneal_steps += steps
        if best < self.obj:
            self._accept(best_a)

    def rearrange(self, deadline: float, attempts: int) -> None:
        """One phase of big process rearrangements (`FastMoves.rearrange`, in chunks so that the deadline is kept);
        keeps the result when it is better."""
        fast = self._fast_state()
        done = 0
        while done < attempts and time.monotonic() < deadline:
            n = min(self.BPR_CHUNK, attempts - done)
            fast.rearrange(n, self._seed())
            done += n
        if fast.objective < self.obj:
            self._accept(fast.a.copy())

    def lns_round(self, deadline: float) -> None:
        """One CP-SAT subproblem; a better result is followed by a descent over the machines it touched."""
        self.stats.iterations += 1
        self.stats.lns_rounds += 1
        machines, freed = pick_machines(self)
        if not freed:
            return
        new, optimal = subproblem.solve(self, machines, freed, deadline - time.monotonic())
        if optimal:
            self.stats.optimal_subproblems += 1
            self.max_free = min(self.max_free * 1.05 + 1, 400, self.inst.n_processes)
        else:
            self.max_free = max(8, self.max_free * 0.9)
        if new is None:
            return
        before = self.obj
        if self._accept(new) and self.obj < before:
            touched = sorted({int(p) for m in machines for p in self.procs_on[m]})
            self.local_search(deadline, touched)

    def run(self, time_limit: float, max_iterations: int | None = None) -> np.ndarray:
        """Descent, then phases (`phase`) until the time limit or `max_iterations` (`stats.iterations`)."""
        self.begin(time.monotonic() + time_limit)
        while self.phase(max_iterations):
            pass
        return self.a.copy()

    def begin(self, deadline: float) -> None:
        """Start the clock (the search stops at `deadline`) and descend from the current assignment."""
        self.deadline = deadline
        self.started = time.monotonic()
        self.stats.history.append((0.0, self.obj))
        before = self.obj
        self.local_search(deadline)
        self._note("descent", before)
        self.rate = {k: float("inf") for k in self.kinds}

    def adopt(self, a: np.ndarray) -> None:
        """Continue from assignment `a` (another search's better one; feasible, checked by its scorer)."""
        if not np.array_equal(a, self.a):
            self.a = np.array(a, dtype=np.int64)
            self._refresh()

    def _note(self, what: str, before: int) -> None:
        if self.obj < before:
            self.stats.improvements += 1
            self.stats.history.append((time.monotonic() - self.started, self.obj))
            if self.log:
                self.log(f"{time.monotonic() - self.started:7.1f}s {what}: {self.obj:,}")

    def phase(self, max_iterations: int | None = None) -> bool:
        """One phase of annealing, soft annealing (where there are transient resources), big process rearrangements
        or CP-SAT rounds; False when the time or the work (`max_iterations`) is up. Each kind is chosen with a
        probability in proportion to its recent gain per unit of work, at least `floor` each (0.15 with two kinds,
        0.1 with three, 0.05 with four), after `prelude` phases of soft annealing and CP-SAT rounds in turn (where
        there are transient resources) and phases of rearrangements alone until one gains less than
        `bpr_first_gain` of the objective; rearrangements only while a machine has load or balance cost (they start
        from one). Work is counted, not timed (in the units of the class docstring), so that
        the trajectory depends on the seed only."""
        deadline, rate = self.deadline, self.rate
        if time.monotonic() >= deadline - 0.05:
            return False
        if max_iterations is not None and self.stats.iterations >= max_iterations:
            return False
        # rearrangements start from a machine with load or balance cost: none left, none to make
        kinds = [k for k in self.kinds if k != "bpr" or self.machine_cost.sum() > 0]
        if self.prelude > 0:  # soft annealing and CP-SAT rounds in turn
            kind = ("soft", "lns")[self.prelude % 2]
            self.prelude -= 1
        elif self.bpr_first and "bpr" in kinds:  # rearrangements alone while they gain enough
            kind = "bpr"
        elif any(rate[k] == float("inf") for k in kinds):  # try each kind once
            kind = self.rng.choice([k for k in kinds if rate[k] == float("inf")])
        else:  # in proportion to the recent gain per unit of work, each at least `floor` of the phases
            floor = {2: 0.15, 3: 0.1}.get(len(kinds), 0.05)
            total = sum(rate[k] for k in kinds)
            shares = [rate[k] / total if total > 0 else 1.0 / len(kinds) for k in kinds]
            shares = [min(1.0 - floor * (len(shares) - 1), max(floor, x)) for x in shares]
            x = self.rng.random() * sum(shares)
            kind = kinds[-1]
            for k, sh in zip(kinds, shares, strict=True):
                if x < sh:
                    kind = k
                    break
                x -= sh
        before = self.obj
        left = float("inf") if max_iterations is None else max_iterations - self.stats.iterations
        if kind in ("anneal", "soft"):
            steps = int(min(self.anneal_steps, left * self.LNS_WORK))
            self.anneal(deadline, steps, soft=kind == "soft")
            self.stats.iterations += -(-steps // self.LNS_WORK)
            work = steps
        elif kind == "bpr":
            attempts = int(min(self.bpr_attempts, left * self.LNS_WORK / self.BPR_WORK))
            self.rearrange(deadline, attempts)
            self.stats.iterations += -(-attempts * self.BPR_WORK // self.LNS_WORK)
            work = max(1, attempts * self.BPR_WORK)
        else:
            rounds = int(min(self.lns_rounds, left))
            for _ in range(rounds):
                if time.monotonic() > deadline - 0.05:
                    break
                self.lns_round(deadline)
            work = rounds * self.LNS_WORK
        gain = (before - self.obj) / work
        if kind == "bpr" and before - self.obj < self.bpr_first_gain * before:
            self.bpr_first = False
        for k in rate:  # what is not measured again fades: gains shrink as the search goes on
            if k != kind and rate[k] != float("inf"):
                rate[k] *= self.fade
        rate[kind] = gain if rate[kind] == float("inf") else 0.5 * rate[kind] + 0.5 * gain
        self._note(kind, before)
        return True
