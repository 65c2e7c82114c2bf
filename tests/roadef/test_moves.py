"""ROADEF 2012: the compiled moves (`moves`) against the exact scorer and the numpy evaluator."""

import random

import numpy as np
import pytest
from kplace.solver.roadef import moves as fast
from kplace.solver.roadef.instance import parse_assignment, parse_instance
from kplace.solver.roadef.moves import FastMoves
from kplace.solver.roadef.scoring import score
from kplace.solver.roadef.vectorised import MoveState

from .helpers import INITIAL, TINY, exact, load, needs_data, random_shifts

STATE = ("a", "U", "T", "moved", "occ", "sl", "nloc", "nb", "missing", "needed", "cnt", "mc", "sc")


def _same_state(f, inst, a0):
    """Whether every counter of `f` equals that of a state rebuilt from its assignment (the log length aside)."""
    fresh = FastMoves(inst, a0, f.a)
    return all(np.array_equal(x, y) for x, y, name in zip(f.S, fresh.S, STATE, strict=False) if name != "sc") and \
        np.array_equal(f.S[12][:2], fresh.S[12][:2])


def _deltas(f, p):
    """Every shift and swap of p as the compiled evaluator scores it: {("shift", m) | ("swap", q): ΔF or None}."""
    u0, u1 = np.empty(f.D[0].shape[1], dtype=np.int64), np.empty(f.D[0].shape[1], dtype=np.int64)
    out = {}
    for m in range(f.D[1].shape[0]):
        if m != f.a[p]:
            d = fast._shift_delta(f.D, f.S, p, m, u0, u1)
            out["shift", m] = None if d == fast._INFEASIBLE else int(d)
    for q in range(len(f.a)):
        if f.a[q] != f.a[p]:
            d = fast._swap_delta(f.D, f.S, p, q, u0, u1)
            out["swap", q] = None if d == fast._INFEASIBLE else int(d)
    return out


def _moved(a, kind, p, x):
    new = a.copy()
    if kind == "shift":
        new[p] = x
    else:
        new[p], new[x] = a[x], a[p]
    return new


def test_every_compiled_move_on_the_tiny_instance_has_the_exact_delta_and_feasibility():
    inst = parse_instance(TINY, "tiny.txt")
    a0 = parse_assignment(INITIAL, inst, "tiny_assignment.txt")
    for start in ([0, 1, 0], [1, 0, 0], [0, 1, 1], [1, 2, 0]):
        f = FastMoves(inst, a0, np.array(start))
        base, viol = exact(inst, a0, start)
        if viol:
            continue
        assert f.objective == base
        for p in range(inst.n_processes):
            for (kind, x), d in _deltas(f, p).items():
                total, viol = exact(inst, a0, _moved(f.a, kind, p, x))
                if d is not None:
                    assert viol == [] and d == total - base
                else:  # infeasible, or a swap of services linked by a dependency across neighborhoods (not tried)
                    s, t = inst.service[p], inst.service[x] if kind == "swap" else -1
                    assert viol or (t >= 0 and f.D[13][s, t] and
                                    inst.neighborhood[f.a[p]] != inst.neighborhood[f.a[x]]), (start, kind, p, x)


@needs_data
@pytest.mark.parametrize("name", ["a1_4", "a2_2"])
def test_compiled_deltas_equal_the_scorer_difference_and_the_numpy_evaluator(name):
    inst, a0 = load(name)
    f = FastMoves(inst, a0, random_shifts(inst, a0, 150, random.Random(21)).a.copy())
    numpy_state = MoveState(inst, a0, f.a)
    base, viol = exact(inst, a0, f.a)
    assert viol == [] and f.objective == base == numpy_state.objective
    rng = random.Random(22)
    checked = 0
    for p in rng.sample(range(inst.n_processes), 25):
        compiled = _deltas(f, p)
        c, d = numpy_state.shift_deltas(p)
        assert {("shift", int(m)): int(x) for m, x in zip(c, d, strict=True)} == \
            {k: v for k, v in compiled.items() if k[0] == "shift" and v is not None}
        c, d = numpy_state.swap_deltas(p)
        assert {("swap", int(q)): int(x) for q, x in zip(c, d, strict=True)} == \
            {k: v for k, v in compiled.items() if k[0] == "swap" and v is not None}
        feasible = [k for k, v in compiled.items() if v is not None]
        for kind, x in rng.sample(feasible, min(3, len(feasible))):
            total, viol = exact(inst, a0, _moved(f.a, kind, p, x))
            assert viol == [] and total - base == compiled[kind, x]
            checked += 1
    assert checked > 30


@needs_data
def test_compiled_annealing_returns_its_exact_best_keeps_exact_counters_and_is_deterministic():
    inst, a0 = load("a1_4")
    runs = []
    for _ in range(2):
        f = FastMoves(inst, a0)
        start = f.objective
        best_a, best = f.anneal(200_000, start * 1e-3, start * 1e-6, seed=7)
        assert exact(inst, a0, best_a) == (best, []) and best < start
        assert exact(inst, a0, f.a) == (f.objective, []) and _same_state(f, inst, a0)
        runs.append(best_a)
    assert np.array_equal(runs[0], runs[1])


@needs_data
def test_annealing_work_is_counted_in_ticks_so_a_phase_makes_fewer_steps_where_more_draws_are_evaluated():
    one, evaluated, taken_more = fast.TICKS
    steps = {}
    for name in ("a2_1", "a2_2"):  # two thirds of a2_1's draws pass the prefilter, about 2 % of a2_2's
        inst, a0 = load(name)
        f = FastMoves(inst, a0)
        start = f.objective
        _, _, taken, steps[name] = fast.anneal(f.D, f.S, 1_000_000, start * 1e-3, start * 1e-6, 3)
        # the walk stops at the first step that reaches the budget: spent = steps + 9·evaluated + 7·taken
        assert steps[name] * one + taken * (evaluated + taken_more) < 1_000_000 + sum(fast.TICKS)
        assert steps[name] * (one + evaluated) + taken * taken_more >= 1_000_000
    assert steps["a2_1"] < 0.5 * steps["a2_2"]


@needs_data
def test_compiled_descents_over_every_process_stop_where_the_numpy_evaluator_finds_no_improving_move():
    inst, a0 = load("a2_2")
    f = FastMoves(inst, a0)
    start = f.objective
    rounds = [f.descend(np.random.default_rng(i).permutation(inst.n_processes), seed=i)[0] for i in range(2)]
    while rounds[-1] and len(rounds) < 20:  # until a whole pass makes no move
        rounds.append(f.descend(np.arange(inst.n_processes), seed=len(rounds))[0])
    assert rounds[0] > 0 and rounds[-1] == 0
    assert exact(inst, a0, f.a) == (f.objective, []) and f.objective < start and _same_state(f, inst, a0)
    numpy_state = MoveState(inst, a0, f.a)
    for p in range(inst.n_processes):
        assert all((d >= 0).all() for _, d in (numpy_state.shift_deltas(p), numpy_state.swap_deltas(p)))


@needs_data
def test_a_descent_cut_short_returns_the_rest_of_its_queue_and_resumes_to_an_exact_feasible_end():
    inst, a0 = load("a1_4")
    parts = FastMoves(inst, a0)
    moves, left = parts.descend(np.random.default_rng(1).permutation(inst.n_processes), seed=3, max_pops=50)
    assert moves > 0 and len(left) > 0
    while len(left):
        _, left = parts.descend(left, seed=4, max_pops=50)
    assert exact(inst, a0, parts.a) == (parts.objective, []) and parts.objective < score(inst, a0, a0)[0].total


@needs_data
def test_compiled_rearrangements_improve_a2_2_beyond_its_descent_optimum_exactly_and_deterministically():
    inst, a0 = load("a2_2")
    ends = []
    for _ in range(2):
        f = FastMoves(inst, a0)
        f.descend(np.arange(inst.n_processes), seed=0)
        local = f.objective
        assert f.rearrange(60, seed=1) > 0
        assert f.objective < local and exact(inst, a0, f.a) == (f.objective, []) and _same_state(f, inst, a0)
        ends.append(f.a.copy())
    assert np.array_equal(*ends)


# 2 resources (r0: load weight 10; r1: load weight 0), 3 machines, 3 services of one process each.
#   m0: capacity 10/1, safety 4/1; m1 and m2: capacity 10/10, safety 10/10
#   p0: 8/0 on m0 (4 over safety: load 40); p1: 4/5 on m1; p2: 3/5 on m2; p1 and p2 cannot go to m0 (r1)
#   p0 fits m1 only once p1 has gone to m2: a shift of cost 0 then one of gain 40, which no descent makes
BLOCKED = """\
2
0 10
0 0
3
0 0 10 1 4 1 0 0 0
0 0 10 10 10 10 0 0 0
0 0 10 10 10 10 0 0 0
3
1 0
1 0
1 0
3
0 8 0 1
1 4 5 {cost}
2 3 5 {cost}
0
1 0 0
"""


def _blocked(cost):
    inst = parse_instance(BLOCKED.format(cost=cost), "blocked.txt")
    a0 = parse_assignment("0 1 2\n", inst)
    return inst, a0, FastMoves(inst, a0)


def test_a_big_process_rearrangement_makes_room_that_no_descent_move_makes():
    inst, a0, f = _blocked(cost=0)
    assert f.objective == 40 and f.descend(np.arange(3), seed=0)[0] == 0
    assert f.relocate(0, 1)
    assert f.a.tolist() == [1, 2, 2]  # p1 went to m2 to make room, then p0 to m1
    assert exact(inst, a0, f.a) == (f.objective, []) and f.objective == 1  # p0's move cost


def test_a_big_process_rearrangement_that_costs_more_than_it_gains_is_undone_counter_by_counter():
    *_, f = _blocked(cost=100)
    before = [x.copy() for x in f.S]
    for target in (1, 2):  # each needs a move of cost 100 first; 40 is all there is to gain
        assert not f.relocate(0, target)
        assert f.a.tolist() == [0, 1, 2] and f.objective == 40
        assert all(np.array_equal(x, y) for x, y in zip(before[:13], f.S[:13], strict=True))  # the log aside


# 2 resources (r0: load weight 10; r1: load weight 0), 4 machines, 4 services of one process each.
#   m0: capacity 10/1, safety 4/1; m1, m2: capacity 10/10, safety 10/10; m3: capacity 10/4, safety 10/4
#   p0: 8/0 on m0 (load 40); p1: 5/5 on m1, started on m2; p2: 7/2 on m2, started on m3; p3: 3/2 on m3
#   p0 fits m1 only once p1 leaves it, p1 fits only m2 (its home) once p2 leaves it, and p2 fits only m3 (its home)
CHAIN = """\
2
0 10
0 0
4
0 0 10 1 4 1 0 0 0 0
0 0 10 10 10 10 0 0 0 0
0 0 10 10 10 10 0 0 0 0
0 0 10 4 10 4 0 0 0 0
4
1 0
1 0
1 0
1 0
4
0 8 0 1
1 5 5 0
2 7 2 0
3 3 2 0
0
1 0 0
"""


def test_a_rearrangement_sends_home_a_process_that_can_go_nowhere_else_after_making_room_there():
    inst = parse_instance(CHAIN, "chain.txt")
    a0 = parse_assignment("0 2 3 3\n", inst)
    f = FastMoves(inst, a0, np.array([0, 1, 2, 3]))
    assert f.objective == 40 and f.descend(np.arange(4), seed=0)[0] == 0
    assert not f.relocate(0, 1, chain=False)  # p1 has nowhere to go
    assert f.a.tolist() == [0, 1, 2, 3]
    assert f.relocate(0, 1)
    assert f.a.tolist() == [1, 2, 3, 3]  # p2 home, then p1 home, then p0 to m1
    assert exact(inst, a0, f.a) == (f.objective, []) and f.objective == 1
