"""ROADEF/EURO Challenge 2012 (Google machine reassignment): parser, exact scorer, local search + CP-SAT LNS.

How an instance maps onto kplace's rebalancing model:

- **machines are nodes**: each has a capacity per resource (allocatable; a hard limit) and a *safety capacity*
  (a soft limit: usage above it is paid for as *load cost*, weighted per resource); machines are grouped into
  **locations** (zones: the failure domain) and **neighborhoods** (the network domain);
- **processes are pods** with a requirement per resource (requests), bound to a machine by the initial
  assignment (the current cluster state);
- **services are owners** (Deployments): *conflict* — two processes of a service never share a machine — is
  required hostname anti-affinity; *spreadMin* — a service spans at least that many distinct locations — is a
  required topology spread over `location`; a *dependency* s → s' — every neighborhood hosting s also hosts
  s' — is required pod affinity at the `neighborhood` level;
- **transient resources** (e.g. disk being copied) count on both the old and the new machine of a moved
  process: the "moving pod counted on both nodes" rule of kplace's rebalance waves;
- **balance costs** (r1, r2, target): on each machine, free r2 should be at least target × free r1 (keep
  room in the right proportions), paid per unit short;
- **move costs** are the disruption budget: a per-process move cost (pod priority / deletion cost), a
  *service move cost* that charges the largest number of moved processes of any one service (a
  maxUnavailable-like cap per owner), and a machine-to-machine move cost (moving across zones costs more).

The objective is the weighted sum of load, balance, process move, service move and machine move costs, exactly
as the challenge's checker computes it (`score`). `solve` (`RoadefLNS.run`) starts from the initial assignment
(which the challenge guarantees is feasible) and combines these searches:

- a best-improvement **descent** over shift moves (one process to another machine) and swap moves (two processes
  on different machines exchange them, within a service too), with exact incremental deltas and feasibility
  (the maths is in `roadef_ls`'s docstring), compiled with numba (`roadef_fast`);
- **annealing** phases (25 million compiled steps, `roadef_fast.anneal`) over the same moves, from the current
  assignment: a random shift or swap is taken with probability min(1, exp(−ΔF/T)), T falling geometrically from
  10⁻³ to 10⁻⁶ of the objective; the best assignment met is kept when it is better;
- **big process rearrangements** (400 per phase, `roadef_fast.rearrange`): a process p of a costly machine goes
  to a machine r where it alone would cost less and which it may fit (transient room C − U⁰ on r, fixed by the
  initial state), after processes on r move out to make room for it (one that can go nowhere goes home after room
  is made there); kept unless the objective rises. On a2_2 the cost is held by a few large processes that fit only
  a few machines others fill, and transient room keeps those others from leaving one by one: this is the move that
  places them;
- **CP-SAT rounds** (large neighbourhood search, 16 per phase): free the processes of a few machines (costly
  machines with machines that have room below their safety capacity, a costly machine and partners with room, a
  neighborhood, a few services, machines linked by moved processes, or
  random ones; once the load and balance costs are 0, where only move costs are left, most rounds take machines
  linked by moved processes, i.e. moved processes with their home machines, so as to bring processes home),
  reassign them optimally among those machines with CP-SAT (every hard constraint, the objective
  restricted to the freed part, linear), keep the result when it does not cost more, then descend from it over
  the machines it touched;
- where there are transient resources, **soft annealing** phases: the same annealing with transient capacity
  soft (each unit over it costs 2 → 500 times the largest load weight over the phase), then repaired to a feasible
  assignment and descended from (`roadef_ls.MoveState.anneal`, numpy, heat-bath); on a2_2, where transient room
  is what blocks the moves, a soft phase goes further than annealing within the feasible region.

After a first descent, where there are transient resources, come eight phases of soft annealing and CP-SAT rounds in
turn, then phases of rearrangements alone until one gains less than 0.05 % of the objective. The order matters on
a2_2: soft annealing first leaves assignments from which rearrangements go far (809 M and 815 M after 60 s of each,
seeds 0 and 1), while after CP-SAT rounds alone or compiled annealing they stall (840 M, 848 M). Then phases of
annealing, soft annealing, rearrangements or CP-SAT rounds follow, each kind drawn with a probability in proportion
to its recent gain per unit of work (at least 15 %, 10 % or 5 % each with two, three or four kinds; the rates of the
kinds not run fade by a quarter each phase, since gains shrink as the search goes on and a rate measured early would
otherwise hold its share): CP-SAT repacks tight machines exactly (a2_1), annealing wins where many small exchanges
add up (a1_2, a1_4), rearrangements where a few machines hold most of the cost (a2_2).
Every assignment kept is re-scored and re-checked by `objective`/`violations` first, so the search is always
feasible; for a given seed and iteration count it is deterministic (work is counted, not timed, and CP-SAT runs
single-threaded on a deterministic time budget); the wall-clock limit only decides where the trajectory stops.
With `searches` = k > 1 (`kplace rebalance --format roadef --workers k`), k such searches with seeds seed … seed +
k − 1 run in parallel processes and all continue from the best assignment every two phases (`_cooperate`), which
keeps that determinism.

Formats (whitespace-separated integers): see /work/shared/data/roadef2012-machine-reassignment/SOURCE.md and
the challenge's problem definition (http://challenge.roadef.org/2012/files/problem_definition_v1.pdf).
"""

from __future__ import annotations

import contextlib
import os
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from kplace.models.errors import InputError

from .roadef_fast import FastMoves
from .roadef_ls import MoveState

# Best-known objective values and the 2012 challenge's best (qualification round), from SOURCE.md of the data
# folder (BK: filipesouzacit/MachineReassignment bestSolution.csv; challenge best: stegua's 2012 blog post).
BEST_KNOWN: dict[str, int] = {
    "a1_1": 44_306_501, "a1_2": 777_532_896, "a1_3": 583_005_717, "a1_4": 247_433_844, "a1_5": 727_578_309,
    "a2_1": 167, "a2_2": 720_671_548, "a2_3": 1_190_713_414, "a2_4": 1_680_609_218, "a2_5": 309_714_522,
}
CHALLENGE_BEST: dict[str, int] = {
    "a1_1": 44_306_501, "a1_2": 777_532_896, "a1_3": 583_005_717, "a1_4": 252_728_589, "a1_5": 727_578_309,
    "a2_1": 198, "a2_2": 816_523_983, "a2_3": 1_306_868_761, "a2_4": 1_681_353_943, "a2_5": 336_170_182,
}


# --------------------------------------------------------------------------------------------------- model


@dataclass(frozen=True)
class Balance:
    """Balance objective: on every machine, target × available(r1) − available(r2), when positive, is paid."""

    r1: int
    r2: int
    target: int
    weight: int


@dataclass(frozen=True, eq=False)
class Instance:
    """A parsed `model_*.txt`. Arrays are int64 (bool for `transient`); indices are 0-based as in the files."""

    transient: np.ndarray  # (R,) bool
    load_weight: np.ndarray  # (R,)
    neighborhood: np.ndarray  # (M,)
    location: np.ndarray  # (M,)
    capacity: np.ndarray  # (M, R)
    safety: np.ndarray  # (M, R)
    machine_move_cost: np.ndarray  # (M, M)
    spread_min: np.ndarray  # (S,)
    dependencies: tuple[tuple[int, ...], ...]  # per service: the services it depends on
    service: np.ndarray  # (P,)
    requirement: np.ndarray  # (P, R)
    process_move_cost: np.ndarray  # (P,)
    balances: tuple[Balance, ...]
    weight_process_move: int
    weight_service_move: int
    weight_machine_move: int
    source: str = ""

    @property
    def n_resources(self) -> int:
        return len(self.load_weight)

    @property
    def n_machines(self) -> int:
        return len(self.neighborhood)

    @property
    def n_services(self) -> int:
        return len(self.spread_min)

    @property
    def n_processes(self) -> int:
        return len(self.service)


@dataclass(frozen=True)
class Objective:
    """The official objective, term by term; every term is already multiplied by its weight."""

    load: int
    balance: int
    process_move: int
    service_move: int
    machine_move: int
    load_by_resource: tuple[int, ...] = ()
    balance_by_rule: tuple[int, ...] = ()
    moved_processes: int = 0

    @property
    def total(self) -> int:
        return self.load + self.balance + self.process_move + self.service_move + self.machine_move

    def as_dict(self) -> dict[str, int]:
        return {
            "total": self.total, "load": self.load, "balance": self.balance, "process_move": self.process_move,
            "service_move": self.service_move, "machine_move": self.machine_move,
            "moved_processes": self.moved_processes,
        }


# -------------------------------------------------------------------------------------------------- parsing


class _Tokens:
    """Whitespace-separated integers with their line numbers, so errors can say `file:line`."""

    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.toks: list[tuple[int, str]] = [
            (lineno, tok) for lineno, line in enumerate(text.splitlines(), 1) for tok in line.split()
        ]
        self.last_line = max(1, len(text.splitlines()))
        self.i = 0

    def where(self) -> str:
        line = self.toks[self.i][0] if self.i < len(self.toks) else self.last_line
        return f"{self.source}:{line}"

    def int(self, what: str, lo: int | None = 0, hi: int | None = None) -> int:
        if self.i >= len(self.toks):
            raise InputError(f"unexpected end of file: expected {what}", source=f"{self.source}:{self.last_line}")
        line, tok = self.toks[self.i]
        try:
            value = int(tok)
        except ValueError:
            raise InputError(f"expected an integer for {what}, got {tok!r}", source=f"{self.source}:{line}") from None
        if lo is not None and value < lo:
            raise InputError(f"{what} is {value}, must be ≥ {lo}", source=f"{self.source}:{line}")
        if hi is not None and value > hi:
            raise InputError(f"{what} is {value}, must be ≤ {hi}", source=f"{self.source}:{line}")
        self.i += 1
        return value

    def end(self, after: str) -> None:
        if self.i < len(self.toks):
            line, tok = self.toks[self.i]
            raise InputError(f"unexpected extra data {tok!r} after {after}", source=f"{self.source}:{line}")


def _read_text(path: str | os.PathLike[str]) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=str(path)) from None
    except UnicodeDecodeError:
        raise InputError("not a text file", source=str(path)) from None


def parse_instance(text: str, source: str = "<model>") -> Instance:
    """Parse the text of a `model_*.txt` file; InputError names `source:line` on malformed input."""
    t = _Tokens(text, source)
    n_res = t.int("number of resources R", lo=1)
    transient, load_weight = [], []
    for r in range(n_res):
        transient.append(bool(t.int(f"resource {r}: transient flag", lo=0, hi=1)))
        load_weight.append(t.int(f"resource {r}: load cost weight"))
    n_mach = t.int("number of machines M", lo=1)
    nbh, loc, cap, safe, mmc = [], [], [], [], []
    for m in range(n_mach):
        nbh.append(t.int(f"machine {m}: neighborhood"))
        loc.append(t.int(f"machine {m}: location"))
        cap.append([t.int(f"machine {m}: capacity of resource {r}") for r in range(n_res)])
        safe.append([t.int(f"machine {m}: safety capacity of resource {r}") for r in range(n_res)])
        mmc.append([t.int(f"machine {m}: move cost to machine {m2}") for m2 in range(n_mach)])
    n_svc = t.int("number of services S", lo=0)
    spread, deps = [], []
    for s in range(n_svc):
        spread.append(t.int(f"service {s}: spreadMin"))
        nd = t.int(f"service {s}: number of dependencies", hi=max(0, n_svc))
        deps.append(tuple(t.int(f"service {s}: dependency {k}", hi=n_svc - 1) for k in range(nd)))
    n_proc = t.int("number of processes P", lo=0)
    svc, req, pmc = [], [], []
    for p in range(n_proc):
        if n_svc == 0:
            raise InputError(f"process {p} but no services", source=t.where())
        svc.append(t.int(f"process {p}: service", hi=n_svc - 1))
        req.append([t.int(f"process {p}: requirement of resource {r}") for r in range(n_res)])
        pmc.append(t.int(f"process {p}: process move cost"))
    n_bal = t.int("number of balance objectives B", lo=0)
    balances = []
    for b in range(n_bal):
        r1 = t.int(f"balance {b}: r1", hi=n_res - 1)
        r2 = t.int(f"balance {b}: r2", hi=n_res - 1)
        target = t.int(f"balance {b}: target")
        balances.append(Balance(r1, r2, target, t.int(f"balance {b}: weight")))
    wp = t.int("process move cost weight")
    ws = t.int("service move cost weight")
    wm = t.int("machine move cost weight")
    t.end("the machine move cost weight (the last field)")
    i64 = np.int64
    return Instance(
        transient=np.array(transient, dtype=bool), load_weight=np.array(load_weight, dtype=i64),
        neighborhood=np.array(nbh, dtype=i64), location=np.array(loc, dtype=i64),
        capacity=np.array(cap, dtype=i64).reshape(n_mach, n_res),
        safety=np.array(safe, dtype=i64).reshape(n_mach, n_res),
        machine_move_cost=np.array(mmc, dtype=i64).reshape(n_mach, n_mach),
        spread_min=np.array(spread, dtype=i64), dependencies=tuple(deps),
        service=np.array(svc, dtype=i64), requirement=np.array(req, dtype=i64).reshape(n_proc, n_res),
        process_move_cost=np.array(pmc, dtype=i64), balances=tuple(balances),
        weight_process_move=wp, weight_service_move=ws, weight_machine_move=wm, source=source,
    )


def parse_assignment(text: str, instance: Instance, source: str = "<assignment>") -> np.ndarray:
    """Parse an assignment (one machine index per process, in process order)."""
    t = _Tokens(text, source)
    m_hi = instance.n_machines - 1
    out = np.array([t.int(f"machine of process {p}", hi=m_hi) for p in range(instance.n_processes)], dtype=np.int64)
    t.end(f"the {instance.n_processes} processes of the model")
    return out


def read_instance(path: str | os.PathLike[str]) -> Instance:
    return parse_instance(_read_text(path), str(path))


def read_assignment(path: str | os.PathLike[str], instance: Instance) -> np.ndarray:
    return parse_assignment(_read_text(path), instance, str(path))


def write_assignment(path: str | os.PathLike[str], assignment: Sequence[int] | np.ndarray) -> None:
    """Write an assignment in the challenge's format, atomically (temporary file in the same folder + replace)."""
    path = Path(path)
    text = " ".join(str(int(m)) for m in assignment) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -------------------------------------------------------------------------------------------------- scoring


def _check_assignment(inst: Instance, a: np.ndarray, what: str) -> np.ndarray:
    a = np.asarray(a, dtype=np.int64)
    if a.shape != (inst.n_processes,):
        raise InputError(f"{a.shape[0] if a.ndim == 1 else a.shape} machines for {inst.n_processes} processes",
                         source=what)
    if len(a) and (a.min() < 0 or a.max() >= inst.n_machines):
        bad = int(np.flatnonzero((a < 0) | (a >= inst.n_machines))[0])
        raise InputError(f"process {bad}: machine {int(a[bad])} is not in 0..{inst.n_machines - 1}", source=what)
    return a


def usage(inst: Instance, a: np.ndarray) -> np.ndarray:
    """(M, R) resource usage of assignment `a`."""
    u = np.zeros((inst.n_machines, inst.n_resources), dtype=np.int64)
    np.add.at(u, a, inst.requirement)
    return u


def objective(inst: Instance, initial: np.ndarray, new: np.ndarray, u: np.ndarray | None = None) -> Objective:
    """The official objective of `new` (moves counted against `initial`); no constraint checks."""
    if u is None:
        u = usage(inst, new)
    load_r = np.maximum(u - inst.safety, 0).sum(axis=0) * inst.load_weight
    bal = []
    for b in inst.balances:
        avail1 = inst.capacity[:, b.r1] - u[:, b.r1]
        avail2 = inst.capacity[:, b.r2] - u[:, b.r2]
        bal.append(int(np.maximum(b.target * avail1 - avail2, 0).sum()) * b.weight)
    moved = new != initial
    pm = int(inst.process_move_cost[moved].sum()) * inst.weight_process_move
    per_service = np.bincount(inst.service[moved], minlength=max(1, inst.n_services))
    sm = int(per_service.max()) * inst.weight_service_move
    mm = int(inst.machine_move_cost[initial, new].sum()) * inst.weight_machine_move
    return Objective(int(load_r.sum()), sum(bal), pm, sm, mm, tuple(int(x) for x in load_r), tuple(bal),
                     int(moved.sum()))


def violations(inst: Instance, initial: np.ndarray, new: np.ndarray, u: np.ndarray | None = None) -> list[str]:
    """Every hard-constraint violation of `new`, one readable line each (empty when feasible)."""
    out: list[str] = []
    if u is None:
        u = usage(inst, new)
    moved = new != initial
    tu = u.copy()  # transient usage: a moved process also counts on its initial machine
    np.add.at(tu, initial[moved], inst.requirement[moved])
    for m, r in zip(*np.nonzero(u > inst.capacity), strict=True):
        out.append(f"capacity: machine {m} resource {r}: usage {u[m, r]} > capacity {inst.capacity[m, r]}")
    over_t = (tu > inst.capacity) & (u <= inst.capacity) & inst.transient[None, :]
    for m, r in zip(*np.nonzero(over_t), strict=True):
        out.append(f"transient: machine {m} resource {r}: usage {tu[m, r]} counting processes moved away "
                   f"> capacity {inst.capacity[m, r]}")
    by_service: dict[int, list[int]] = {}
    for p, s in enumerate(inst.service.tolist()):
        by_service.setdefault(s, []).append(p)
    nbh_of: dict[int, set[int]] = {}
    for s, procs in sorted(by_service.items()):
        machines = new[procs]
        uniq, counts = np.unique(machines, return_counts=True)
        for m, c in zip(uniq.tolist(), counts.tolist(), strict=True):
            if c > 1:
                out.append(f"conflict: service {s}: {c} processes on machine {m}")
        n_loc = len(np.unique(inst.location[machines]))
        if n_loc < inst.spread_min[s]:
            out.append(f"spread: service {s}: {n_loc} distinct locations < spreadMin {inst.spread_min[s]}")
        nbh_of[s] = set(inst.neighborhood[machines].tolist())
    for s, deps in enumerate(inst.dependencies):
        for d in deps:
            missing = sorted(nbh_of.get(s, set()) - nbh_of.get(d, set()))
            for n in missing:
                out.append(f"dependency: service {s} runs in neighborhood {n} but service {d} it depends on does not")
    return out


def score(instance: Instance, initial: Sequence[int] | np.ndarray, new: Sequence[int] | np.ndarray,
          ) -> tuple[Objective, list[str]]:
    """Exact official objective of `new` against `initial`, and the list of hard-constraint violations."""
    a0 = _check_assignment(instance, np.asarray(initial), "initial assignment")
    a = _check_assignment(instance, np.asarray(new), "new assignment")
    u = usage(instance, a)
    return objective(instance, a0, a, u), violations(instance, a0, a, u)


# --------------------------------------------------------------------------------------------------- search


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

    Work is counted in units of about 0.5 ms: one numpy soft-annealing step, FAST_TICKS of compiled annealing;
    LNS_WORK and BPR_WORK are the units one CP-SAT round and one rearrangement count for.
    `benchmarks/bench_roadef_work.py` times them: close for annealing and CP-SAT rounds, while a soft step takes
    1.5–2 units and a rearrangement on a1_4 about 3.

    `run(time_limit, max_iterations)` returns the best assignment found; it is feasible at every step
    (a subproblem's solution is only accepted when every hard constraint holds, and the starting point is
    the initial assignment). `seed` fixes the neighbourhoods and CP-SAT's seeds; CP-SAT works on a
    deterministic time budget per subproblem, single-threaded unless `workers` > 1 (then with interleaved,
    still deterministic, search).
    """

    def __init__(self, inst: Instance, initial: np.ndarray, *, seed: int = 0, workers: int = 1,
                 sub_dtime: float = 0.2, log: Callable[[str], None] | None = None) -> None:
        self.inst = inst
        self.a0 = _check_assignment(inst, np.asarray(initial), "initial assignment").copy()
        self.a = self.a0.copy()
        self.rng = random.Random(seed)
        self.workers = max(1, workers)
        self.sub_dtime = sub_dtime
        self.log = log
        self.LNS_WORK = 600
        self.BPR_WORK = 20
        self.FAST_TICKS = 3500  # compiled annealing ticks (roadef_fast.TICKS) per unit
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
        self.hot_share = 0.35  # rounds of `_hot_and_roomy` (while load or balance costs remain)
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
        cost = (np.maximum(self.U - inst.safety, 0) * inst.load_weight).sum(axis=1)
        for b in inst.balances:
            av1 = inst.capacity[:, b.r1] - self.U[:, b.r1]
            av2 = inst.capacity[:, b.r2] - self.U[:, b.r2]
            cost = cost + np.maximum(b.target * av1 - av2, 0) * b.weight
        self.machine_cost = cost
        order = np.argsort(a, kind="stable")
        bounds = np.cumsum(np.bincount(a, minlength=inst.n_machines))
        self.procs_on = np.split(order, bounds[:-1])

    # ---- neighbourhoods

    def _pick_machines(self) -> tuple[list[int], list[int]]:
        """(machines K, processes F currently on K that are freed)."""
        rng, inst = self.rng, self.inst
        n_m = inst.n_machines
        target = max(2, int(self.max_free))
        kind = rng.random()
        first: list[int] = []
        preferred: list[int] = []
        head_n = 0  # leading machines of `pool` chosen on purpose (not shuffled)
        moved = np.flatnonzero(self.a != self.a0)
        # machines linked by moved processes (current and initial machines); most rounds once the load and balance
        # costs are 0, where only bringing processes home is left to gain
        linked_share = 0.15 if self.machine_cost.sum() > 0 else 0.6
        if rng.random() < linked_share and len(moved):
            p = int(moved[rng.randrange(len(moved))])
            first = [int(self.a[p]), int(self.a0[p])]
            seen_m = set(first)
            i, count = 0, 0
            while i < len(first) and count < target and len(first) < max(2, target // 3):
                m = first[i]
                i += 1
                count += len(self.procs_on[m])
                on = self.procs_on[m]
                away = np.flatnonzero((self.a0 == m) & (self.a != m))
                links = [int(x) for x in self.a0[on[self.a0[on] != m]]] + [int(x) for x in self.a[away]]
                rng.shuffle(links)
                for m2 in links:
                    if m2 not in seen_m:
                        seen_m.add(m2)
                        first.append(m2)
            preferred = [int(q) for m in first for q in self.procs_on[m] if self.a[q] != self.a0[q]]
            pool = list(range(n_m))
        elif kind < self.hot_share and self.machine_cost.sum() > 0:
            return self._hot_and_roomy(target)
        elif kind < 0.45 and self.machine_cost.sum() > 0:  # a costly machine and partners
            first = [self._draw(self.machine_cost.astype(float))]
            pool = list(range(n_m))
            if rng.random() < 0.6:  # partners with room where the costly machine is short of it
                hot = first[0]
                short = (self.U[hot] - inst.safety[hot]) > 0
                if not short.any():
                    short = np.ones(inst.n_resources, dtype=bool)
                room = np.maximum(inst.safety[:, short] - self.U[:, short], 0) / np.maximum(inst.safety[:, short], 1)
                slack = room.sum(axis=1) + 1e-9
                slack[hot] = 0.0
                pool = []
                cum = np.cumsum(slack)
                for _ in range(min(n_m, 6)):
                    pool.append(min(n_m - 1, int(np.searchsorted(cum, rng.random() * cum[-1], side="right"))))
                head_n = len(pool)
                pool += list(range(n_m))
        elif kind < 0.6:  # machines of one neighborhood (moves inside keep dependencies)
            n = self.nbh[rng.randrange(n_m)]
            pool = list(self.machines_of_nb[n])
            if len(pool) < 2:
                pool = list(range(n_m))
        elif kind < 0.8 and inst.n_services:  # processes of a few services
            pool = list(range(n_m))
            for _ in range(rng.randint(1, 3)):
                s = rng.randrange(inst.n_services)
                preferred.extend(self.svc_procs[s].tolist())
            first = sorted({int(self.a[p]) for p in preferred})
            rng.shuffle(first)
            first = first[: max(2, target // 4)]
            preferred = [p for p in preferred if int(self.a[p]) in set(first)]
        else:  # random machines
            pool = list(range(n_m))
        head, tail = pool[:head_n], pool[head_n:]
        rng.shuffle(tail)
        pool = head + tail
        machines: list[int] = []
        seen: set[int] = set()
        count = 0
        # wide: many machines, a sample of their processes (routes processes between many machines at once)
        wide = n_m > 8 and rng.random() < self.wide_share
        n_wide = rng.randint(min(n_m, 10), min(n_m, 40))
        for m in [*first, *pool]:
            if m in seen:
                continue
            seen.add(m)
            machines.append(m)
            count += len(self.procs_on[m])
            if wide:
                if len(machines) >= n_wide:
                    break
            elif len(machines) >= 2 and (count >= target or len(machines) >= max(2, target // 3)):
                break
        procs = [int(p) for m in machines for p in self.procs_on[m]]
        if len(procs) > target:
            if wide and not preferred and rng.random() < 0.5:  # processes of costly machines first
                preferred = [p for p in procs if self.machine_cost[self.a[p]] > 0]
            pref = set(preferred)
            head = [p for p in procs if p in pref]
            rest = [p for p in procs if p not in pref]
            rng.shuffle(head)
            rng.shuffle(rest)
            procs = (head + rest)[:target]
        return machines, sorted(procs)

    def _draw(self, w: np.ndarray) -> int:
        """An index drawn with probability ∝ the non-negative weights `w` (their sum > 0)."""
        return min(len(w) - 1, int(np.searchsorted(np.cumsum(w), self.rng.random() * w.sum(), side="right")))

    def _hot_and_roomy(self, target: int) -> tuple[list[int], list[int]]:
        """K machines, about `target` processes in all: half drawn ∝ machine cost (load + balance), half ∝ relative
        room below safety capacity Σ_r max(0, SC[m,r] − U[m,r]) / SC[m,r]; every process on them is freed (the
        processes of the costly ones first when there are more than `target`). Several costly machines at once let
        CP-SAT exchange their large processes and send the small ones to the roomy machines."""
        rng, inst = self.rng, self.inst
        n_m = inst.n_machines
        per = max(1.0, inst.n_processes / n_m)
        k = min(n_m, max(2, round(target / per)))
        cost = self.machine_cost.astype(float)
        room = (np.maximum(inst.safety - self.U, 0) / np.maximum(inst.safety, 1)).sum(axis=1) + 1e-9
        machines: list[int] = []
        for w, n in ((cost, max(1, k // 2)), (room, k)):
            w = w.copy()
            w[machines] = 0.0
            while len(machines) < n and w.sum() > 0:
                m = self._draw(w)
                machines.append(m)
                w[m] = 0.0
        procs = [int(p) for m in machines for p in self.procs_on[m]]
        if len(procs) > target:
            hot = [p for p in procs if self.machine_cost[self.a[p]] > 0]
            rest = [p for p in procs if self.machine_cost[self.a[p]] == 0]
            rng.shuffle(hot)
            rng.shuffle(rest)
            procs = (hot + rest)[:target]
        return machines, sorted(procs)

    # ---- subproblem

    def _solve_subproblem(self, machines: list[int], freed: list[int], wall: float) -> tuple[np.ndarray | None, bool]:
        from ortools.sat.python import cp_model

        inst, a, a0 = self.inst, self.a, self.a0
        req = self.req_list
        n_res = inst.n_resources
        trans = [r for r in range(n_res) if inst.transient[r]]
        cap = {m: inst.capacity[m].tolist() for m in machines}
        f_u = {m: self.U[m].copy() for m in machines}
        f_t = {m: self.T[m].copy() for m in machines}
        for p in freed:
            m = int(a[p])
            f_u[m] -= self.req[p]
            if a0[p] != m:
                f_t[m] -= self.req[p]
        f_u = {m: v.tolist() for m, v in f_u.items()}
        f_t = {m: v.tolist() for m, v in f_t.items()}
        freed_set = set(freed)
        by_svc: dict[int, list[int]] = {}
        for p in freed:
            by_svc.setdefault(int(inst.service[p]), []).append(p)
        base_machines: dict[int, set[int]] = {}
        base_locs: dict[int, set[int]] = {}
        base_nbs: dict[int, set[int]] = {}

        def base(s: int) -> None:
            if s in base_machines:
                return
            ms = [int(a[p]) for p in self.svc_procs[s].tolist() if p not in freed_set]
            base_machines[s] = set(ms)
            base_locs[s] = {self.loc[m] for m in ms}
            base_nbs[s] = {self.nbh[m] for m in ms}

        model = cp_model.CpModel()
        x: dict[tuple[int, int], cp_model.IntVar] = {}
        hints: list[tuple[cp_model.IntVar, int]] = []
        obj_terms: list = []
        for s, procs in by_svc.items():
            base(s)
            for p in procs:
                a0p = int(a0[p])
                row = []
                for m in machines:
                    if m in base_machines[s]:
                        continue
                    if any(req[p][r] > cap[m][r] - f_u[m][r] for r in range(n_res)):
                        continue
                    if a0p != m and any(req[p][r] > cap[m][r] - f_t[m][r] for r in trans):
                        continue
                    v = model.NewBoolVar(f"x{p}_{m}")
                    x[p, m] = v
                    row.append(v)
                    hints.append((v, int(a[p] == m)))
                    c = (int(self.pm_w[p]) if m != a0p else 0) + int(self.mm_w[a0p, m])
                    if c:
                        obj_terms.append(c * v)
                model.AddExactlyOne(row)
        cand: dict[int, list[int]] = {m: [] for m in machines}
        for p, m in x:
            cand[m].append(p)
        # capacity, transient capacity, load and balance costs
        for m in machines:
            ps = cand[m]
            for r in range(n_res):
                room = cap[m][r] - f_u[m][r]
                if sum(req[p][r] for p in ps) > room:
                    model.Add(sum(req[p][r] * x[p, m] for p in ps if req[p][r]) <= room)
            for r in trans:
                room = cap[m][r] - f_t[m][r]
                movers = [p for p in ps if a0[p] != m and req[p][r]]
                if sum(req[p][r] for p in movers) > room:
                    model.Add(sum(req[p][r] * x[p, m] for p in movers) <= room)
            for r in self.objective_terms:
                sc = int(inst.safety[m, r])
                hi = f_u[m][r] + sum(req[p][r] for p in ps)
                if min(hi, cap[m][r]) <= sc:
                    continue
                over = model.NewIntVar(0, cap[m][r] - sc if cap[m][r] > sc else 0, f"over{m}_{r}")
                model.Add(over >= f_u[m][r] - sc + sum(req[p][r] * x[p, m] for p in ps if req[p][r]))
                obj_terms.append(int(inst.load_weight[r]) * over)
                hints.append((over, max(0, int(self.U[m, r]) - sc)))
            for b in inst.balances:
                if b.weight == 0:
                    continue
                const = b.target * (cap[m][b.r1] - f_u[m][b.r1]) - (cap[m][b.r2] - f_u[m][b.r2])
                coefs = [(p, req[p][b.r2] - b.target * req[p][b.r1]) for p in ps]
                if const + sum(c for _, c in coefs if c > 0) <= 0:
                    continue
                bal = model.NewIntVar(0, max(0, const + sum(c for _, c in coefs if c > 0)), f"bal{m}")
                model.Add(bal >= const + sum(c * x[p, m] for p, c in coefs if c))
                obj_terms.append(b.weight * bal)
                cur = b.target * (cap[m][b.r1] - int(self.U[m, b.r1])) - (cap[m][b.r2] - int(self.U[m, b.r2]))
                hints.append((bal, max(0, cur)))
        # conflict and spread
        for s, procs in by_svc.items():
            for m in machines:
                vs = [x[p, m] for p in procs if (p, m) in x]
                if len(vs) > 1:
                    model.AddAtMostOne(vs)
            need = int(inst.spread_min[s]) - len(base_locs[s])
            if need > 0:
                by_loc: dict[int, list] = {}
                for p in procs:
                    for m in machines:
                        if (p, m) in x and self.loc[m] not in base_locs[s]:
                            by_loc.setdefault(self.loc[m], []).append((p, m))
                ys = []
                for lo, pms in by_loc.items():
                    y = model.NewBoolVar(f"y{s}_{lo}")
                    model.Add(y <= sum(x[pm] for pm in pms))
                    ys.append(y)
                    hints.append((y, int(any(a[p] == m for p, m in pms))))
                model.Add(sum(ys) >= need)
        # dependencies, over the neighborhoods the freed processes can leave or reach
        nbs = sorted({self.nbh[m] for m in machines})
        presence: dict[tuple[int, int], object] = {}

        def pres(s: int, n: int):
            key = (s, n)
            if key in presence:
                return presence[key]
            base(s)
            if n in base_nbs[s]:
                val: object = 1
            else:
                xs = [(p, m) for p in by_svc.get(s, []) for m in machines if self.nbh[m] == n and (p, m) in x]
                if not xs:
                    val = 0
                else:
                    v = model.NewBoolVar(f"n{s}_{n}")
                    for pm in xs:
                        model.AddImplication(x[pm], v)
                    model.Add(v <= sum(x[pm] for pm in xs))
                    hints.append((v, int(any(a[p] == m for p, m in xs))))
                    val = v
            presence[key] = val
            return val

        pairs = {(s, d) for s in by_svc for d in inst.dependencies[s]}
        pairs |= {(s2, s) for s in by_svc for s2 in self.rdeps[s]}
        for s, d in sorted(pairs):
            for n in nbs:
                ps_, pd = pres(s, n), pres(d, n)
                if isinstance(ps_, int) and ps_ == 0:
                    continue
                if isinstance(pd, int) and pd == 1:
                    continue
                model.Add(ps_ <= pd)
        # service move cost: the largest number of moved processes of one service
        if inst.weight_service_move:
            others = self.moved_per_svc.copy()
            others[list(by_svc)] = 0
            z = model.NewIntVar(int(others.max()), inst.n_processes, "z")
            for s, procs in by_svc.items():
                base_moved = int(self.moved_per_svc[s]) - sum(1 for p in procs if a[p] != a0[p])
                terms = []
                const = base_moved
                for p in procs:
                    key = (p, int(a0[p]))
                    if key in x:
                        const += 1
                        terms.append(-x[key])
                    else:
                        const += 1
                model.Add(z >= const + sum(terms))
            obj_terms.append(inst.weight_service_move * z)
            hints.append((z, int(self.moved_per_svc.max())))
        model.Minimize(sum(obj_terms))
        for v, val in hints:
            model.AddHint(v, val)
        solver = cp_model.CpSolver()
        prm = solver.parameters
        prm.num_workers = self.workers
        if self.workers > 1:
            prm.interleave_search = True
        prm.max_deterministic_time = self.sub_dtime
        prm.max_time_in_seconds = max(0.05, wall)
        prm.random_seed = self.rng.randrange(1 << 30)
        status = solver.Solve(model)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return None, False
        new = a.copy()
        for (p, m), v in x.items():
            if solver.BooleanValue(v):
                new[p] = m
        return new, status == cp_model.OPTIMAL

    # ---- fast local moves

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
        machines, freed = self._pick_machines()
        if not freed:
            return
        new, optimal = self._solve_subproblem(machines, freed, deadline - time.monotonic())
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


def solve(inst: Instance, initial: np.ndarray, *, time_limit: float = 60.0, seed: int = 0,
          max_iterations: int | None = None, workers: int = 1, searches: int = 1,
          log: Callable[[str], None] | None = None) -> tuple[np.ndarray, SearchStats]:
    """Best assignment found within `time_limit` seconds (feasible: checked, else the initial one). `workers`: CP-SAT
    workers per subproblem; `searches` > 1: that many cooperating searches in parallel processes (`_cooperate`)."""
    if searches > 1:
        a0 = _check_assignment(inst, np.asarray(initial), "initial assignment")
        best, stats = _cooperate(inst, a0, time_limit, seed, max_iterations, workers, searches, log)
    else:
        deadline = time.monotonic() + time_limit  # building the search (compiling its moves, once) counts too
        search = RoadefLNS(inst, initial, seed=seed, workers=workers, log=log)
        best = search.run(max(0.0, deadline - time.monotonic()), max_iterations)
        a0, stats = search.a0, search.stats
    if violations(inst, a0, best):  # pragma: no cover - a bug; never output an infeasible assignment
        if log:
            log("BUG: the search ended on an infeasible assignment; returning the initial one")
        best = a0.copy()
    return best, stats


def _search_worker(conn, inst: Instance, initial: np.ndarray, seed: int, workers: int, deadline: float) -> None:
    """A cooperating search in its own process (`_cooperate`): descend, then, for each (assignment, phases,
    max_iterations) received, adopt the assignment, run the phases and send back (assignment, objective, counts);
    None ends it. `deadline` is on the shared monotonic clock."""
    search = RoadefLNS(inst, initial, seed=seed, workers=workers)
    search.begin(deadline)
    conn.send((search.a, search.obj, 0, 0, 0))
    while (msg := conn.recv()) is not None:
        a, phases, max_iterations = msg
        search.adopt(a)
        for _ in range(phases):
            if not search.phase(max_iterations):
                break
        st = search.stats
        conn.send((search.a, search.obj, st.iterations, st.lns_rounds, st.anneal_steps))


def _cooperate(inst: Instance, a0: np.ndarray, time_limit: float, seed: int, max_iterations: int | None,
               workers: int, searches: int, log: Callable[[str], None] | None,
               epoch: int = 2) -> tuple[np.ndarray, SearchStats]:
    """`searches` searches with seeds seed, seed + 1, …, one in this process and the others in spawned processes,
    synchronised every `epoch` phases: each runs its phases from the same assignment, then all continue from the
    best one (ties to the lowest index). The exchange points are counted in phases, not timed, so the trajectory
    still depends on the seed only (the deadline decides where it stops)."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    deadline = time.monotonic() + time_limit
    pipes, procs = [], []
    for i in range(1, searches):
        here, there = ctx.Pipe()
        proc = ctx.Process(target=_search_worker, args=(there, inst, a0, seed + i, workers, deadline), daemon=True)
        proc.start()
        pipes.append(here)
        procs.append(proc)
    main = RoadefLNS(inst, a0, seed=seed, workers=workers, log=log)
    counts = [(0, 0, 0)] * len(pipes)
    try:
        main.begin(deadline)
        while True:
            results = [(main.a, main.obj)]
            for i, conn in enumerate(pipes):
                a, obj, *counts[i] = conn.recv()
                results.append((a, obj))
            k = min(range(len(results)), key=lambda j: (results[j][1], j))
            before = main.obj
            if results[k][1] < before:
                main.adopt(results[k][0])
                main._note(f"search {k}", before)
            if time.monotonic() >= deadline - 0.05 or (max_iterations is not None
                                                        and main.stats.iterations >= max_iterations):
                break
            for conn in pipes:
                conn.send((main.a, epoch, max_iterations))
            for _ in range(epoch):
                if not main.phase(max_iterations):
                    break
    finally:
        for conn in pipes:
            with contextlib.suppress(OSError):  # a worker that is gone already
                conn.send(None)
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():  # pragma: no cover
                proc.terminate()
    st = main.stats
    for it, rounds, steps in counts:
        st.iterations += it
        st.lns_rounds += rounds
        st.anneal_steps += steps
    return main.a.copy(), st


def instance_name(model_path: str | os.PathLike[str]) -> str:
    stem = Path(model_path).stem
    return stem[len("model_"):] if stem.startswith("model_") else stem


def run_roadef(model_path: str | os.PathLike[str], assignment_path: str | os.PathLike[str],
               out_path: str | os.PathLike[str], time_limit: float = 300.0, seed: int = 0, *,
               workers: int = 1, searches: int = 1, log: Callable[[str], None] | None = None) -> dict:
    """Solve one instance from files; write the new assignment (atomically); return a summary dict."""
    start = time.monotonic()
    inst = read_instance(model_path)
    a0 = read_assignment(assignment_path, inst)
    initial_obj, initial_viol = score(inst, a0, a0)
    if initial_viol:
        raise InputError(f"the initial assignment is infeasible ({initial_viol[0]})", source=str(assignment_path))
    # what the search may take: the rest of the limit, less a margin for a phase that ends late and for writing
    budget = max(0.1, time_limit - (time.monotonic() - start) - min(5.0, 0.05 * time_limit))
    best, stats = solve(inst, a0, time_limit=budget, seed=seed, workers=workers, searches=searches, log=log)
    write_assignment(out_path, best)
    final_obj, final_viol = score(inst, a0, best)
    name = instance_name(model_path)
    bk = BEST_KNOWN.get(name)
    return {
        "instance": name,
        "initial": initial_obj.as_dict(),
        "final": final_obj.as_dict(),
        "objective": final_obj.total,
        "feasible": not final_viol,
        "violations": final_viol,
        "best_known": bk,
        "gap_percent": (100.0 * (final_obj.total - bk) / bk) if bk else None,
        "challenge_best": CHALLENGE_BEST.get(name),
        "seconds": round(time.monotonic() - start, 2),
        "iterations": stats.iterations,
        "lns_rounds": stats.lns_rounds,
        "anneal_steps": stats.anneal_steps,
        "improvements": stats.improvements,
        "seed": seed,
        "searches": searches,
        "output": str(out_path),
    }
