"""Cooperating ROADEF searches, and solving an instance from its files.

`solve` runs one search (`search.RoadefLNS`) or, with `searches` = k > 1, k of them with seeds seed … seed + k − 1,
one in this process and the others in spawned processes (`_cooperate`): each runs `epoch` (2) phases from the
same assignment, then all continue from the best one (ties to the lowest seed). The exchange points are counted
in phases, not timed, so the trajectory still depends on the seed only; the deadline, on the shared monotonic
clock, decides where it stops. The result is re-checked: an infeasible one (a bug) is never returned.

`run_roadef` is the command's runner: read and check the files, leave a margin of min(5 s, 5 %) of the limit for
a phase that ends late and for writing, solve, write the new assignment atomically, and return the summary (both
objectives term by term, feasibility, the gap to the best-known value of `reference`, the work done).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable

import numpy as np
from kplace.models.errors import InputError

from .instance import Instance, check_assignment, instance_name, read_assignment, read_instance, write_assignment
from .reference import BEST_KNOWN, CHALLENGE_BEST
from .scoring import score, violations
from .search import RoadefLNS, SearchStats


def solve(inst: Instance, initial: np.ndarray, *, time_limit: float = 60.0, seed: int = 0,
          max_iterations: int | None = None, workers: int = 1, searches: int = 1,
          log: Callable[[str], None] | None = None) -> tuple[np.ndarray, SearchStats]:
    """Best assignment found within `time_limit` seconds (feasible: checked, else the initial one). `workers`: CP-SAT
    workers per subproblem; `searches` > 1: that many cooperating searches in parallel processes (`_cooperate`)."""
    if searches > 1:
        a0 = check_assignment(inst, np.asarray(initial), "initial assignment")
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
