"""ROADEF 2012: the numpy move evaluator (`vectorised.MoveState`) against the exact scorer."""

import random

import numpy as np
import pytest
from kplace.solver.roadef.scoring import score
from kplace.solver.roadef.vectorised import MoveState

from .helpers import exact, load, needs_data, random_shifts


def _state(name, seed=0, moves=0):
    """A MoveState of a real instance, after `moves` random feasible shifts."""
    inst, a0 = load(name)
    rng = random.Random(seed)
    return inst, a0, random_shifts(inst, a0, moves, rng), rng


@needs_data
@pytest.mark.parametrize("name", ["a1_4", "a1_5", "a2_2"])
def test_shift_move_delta_equals_the_scorer_difference(name):
    inst, a0, state, rng = _state(name, seed=11, moves=150)
    base, viol = exact(inst, a0, state.a)
    assert viol == [] and state.objective == base
    checked = 0
    for _ in range(60):
        p = rng.randrange(inst.n_processes)
        cand, delta = state.shift_deltas(p)
        feasible = set(cand.tolist())
        for k in rng.sample(range(len(cand)), min(4, len(cand))):
            new = state.a.copy()
            new[p] = cand[k]
            total, viol = exact(inst, a0, new)
            assert viol == [] and total - base == delta[k]
            checked += 1
        for m in rng.sample(range(inst.n_machines), min(4, inst.n_machines)):
            if m not in feasible and m != state.a[p]:  # every shift left out is infeasible
                new = state.a.copy()
                new[p] = m
                assert exact(inst, a0, new)[1]
    assert checked > 50


@needs_data
@pytest.mark.parametrize("name", ["a1_4", "a1_5", "a2_2"])
def test_swap_move_delta_equals_the_scorer_difference(name):
    inst, a0, state, rng = _state(name, seed=12, moves=150)
    base = state.objective
    checked = same = 0
    for _ in range(60):
        p = rng.randrange(inst.n_processes)
        cand, delta = state.swap_deltas(p)
        for k in rng.sample(range(len(cand)), min(4, len(cand))):
            q = int(cand[k])
            assert state.a[q] != state.a[p]
            same += int(inst.service[q] == inst.service[p])
            new = state.a.copy()
            new[p], new[q] = state.a[q], state.a[p]
            total, viol = exact(inst, a0, new)
            assert viol == [] and total - base == delta[k]
            checked += 1
    assert checked > 50 and (same > 0 or name == "a1_5")  # swaps within a service too (a1_5 has few)


@needs_data
@pytest.mark.parametrize("name", ["a1_4", "a2_2"])
def test_the_room_prefilter_keeps_every_feasible_swap(name):
    inst, _, state, rng = _state(name, seed=13, moves=150)
    kept = 0
    for p in rng.sample(range(inst.n_processes), 60):
        cand, delta = state.swap_deltas(p)
        q1, d1 = state._swap_other_service(p)  # every process a candidate, no prefilter
        q2, d2 = state._swap_same_service(p)
        assert np.array_equal(cand, np.concatenate([q1, q2])) and np.array_equal(delta, np.concatenate([d1, d2]))
        kept += len(cand)
    assert kept > 0


def _transient_over(inst, a0, new):
    """Σ over machines and transient resources of the transient usage above capacity, from scratch."""
    u = np.zeros((inst.n_machines, inst.n_resources), dtype=np.int64)
    np.add.at(u, new, inst.requirement)
    moved = new != a0
    np.add.at(u, a0[moved], inst.requirement[moved])
    return int(np.maximum(u - inst.capacity, 0)[:, inst.transient].sum())


@needs_data
def test_soft_transient_deltas_add_the_weighted_overflow_and_nothing_else_is_relaxed():
    inst, a0, state, rng = _state("a2_2", seed=14, moves=50)
    state.soft = 3.0
    state._all_rooms()
    checked = over_seen = 0
    for _ in range(150):
        p = rng.randrange(inst.n_processes)
        base, base_over = exact(inst, a0, state.a)[0], _transient_over(inst, a0, state.a)
        moves = []  # (apply, argument, assignment after, ΔF)
        cand, delta = state.shift_deltas(p)
        for k in rng.sample(range(len(cand)), min(2, len(cand))):
            new = state.a.copy()
            new[p] = cand[k]
            moves.append((state.apply_shift, int(cand[k]), new, delta[k]))
        cand, delta = state.swap_deltas(p)
        for k in rng.sample(range(len(cand)), min(2, len(cand))):
            new = state.a.copy()
            new[p], new[cand[k]] = state.a[cand[k]], state.a[p]
            moves.append((state.apply_swap, int(cand[k]), new, delta[k]))
        for _, _, new, d in moves:
            total, viol = exact(inst, a0, new)
            assert all(v.startswith("transient") for v in viol)  # only transient capacity is soft
            assert d == pytest.approx(total - base + 3.0 * (_transient_over(inst, a0, new) - base_over), abs=1e-6)
            checked += 1
        if moves:  # walk on, through transiently infeasible assignments
            apply, arg, new, _ = moves[rng.randrange(len(moves))]
            apply(p, arg)
            assert np.array_equal(state.a, new)
            over_seen += int(state.over_t.any())
        assert int(state.over_t.sum()) == _transient_over(inst, a0, state.a)
    assert checked > 200 and over_seen > 0


@needs_data
def test_soft_annealing_returns_a_feasible_exact_best_and_leaves_the_state_hard():
    import time

    inst, a0, state, rng = _state("a2_2", seed=15)
    state.descend(rng, deadline=time.monotonic() + 120)
    start = state.objective
    best_a, best = state.anneal(rng, time.monotonic() + 120, steps=3000, t_start=start * 1e-3,
                                t_end=start * 1e-6, soft=(20.0, 5000.0))
    assert exact(inst, a0, best_a) == (best, []) and best <= start
    assert state.soft == 0.0 and state.objective == exact(inst, a0, state.a)[0]
    fresh = MoveState(inst, a0, state.a)
    for name in ("room_m", "room_q", "over_t"):
        assert np.array_equal(getattr(state, name), getattr(fresh, name)), name


def test_every_move_on_the_tiny_instance_has_the_exact_delta_and_feasibility(tiny):
    inst, a0 = tiny
    for start in ([0, 1, 0], [1, 0, 0], [0, 1, 1]):
        state = MoveState(inst, a0, np.array(start))
        base = score(inst, a0, start)[0].total
        assert state.objective == base
        for p in range(inst.n_processes):
            cand, delta = state.shift_deltas(p)
            shifts = dict(zip(cand.tolist(), delta.tolist(), strict=True))
            for m in range(inst.n_machines):
                if m == start[p]:
                    continue
                new = np.array(start)
                new[p] = m
                obj, viol = score(inst, a0, new)
                assert (m in shifts) == (not viol)
                if m in shifts:
                    assert shifts[m] == obj.total - base
            cand, delta = state.swap_deltas(p)
            for q, d in zip(cand.tolist(), delta.tolist(), strict=True):
                new = np.array(start)
                new[p], new[q] = start[q], start[p]
                obj, viol = score(inst, a0, new)
                assert viol == [] and d == obj.total - base


@needs_data
def test_move_counters_equal_a_rebuild_after_random_shifts_and_swaps():
    inst, a0, state, rng = _state("a1_4", seed=5, moves=100)
    for _ in range(100):
        p = rng.randrange(inst.n_processes)
        cand, _ = state.swap_deltas(p)
        if len(cand):
            state.apply_swap(p, int(cand[rng.randrange(len(cand))]))
    fresh = MoveState(inst, a0, state.a)
    for name in ("U", "T", "moved", "mc", "occ", "sl", "nloc", "nb", "missing", "needed", "room_m", "room_q", "over_t"):
        assert np.array_equal(getattr(state, name), getattr(fresh, name)), name
    assert state.move_sum == fresh.move_sum and state.objective == fresh.objective == exact(inst, a0, state.a)[0]


@needs_data
@pytest.mark.parametrize("name", ["a1_4", "a2_2"])
def test_descent_is_exact_feasible_and_reaches_a_local_optimum(name):
    import time

    inst, a0, state, rng = _state(name)
    before = state.objective
    assert state.descend(rng, deadline=time.monotonic() + 120) > 0
    total, viol = exact(inst, a0, state.a)
    assert viol == [] and total == state.objective < before
    for p in rng.sample(range(inst.n_processes), 40):  # no improving shift or swap is left
        assert all((d >= 0).all() for _, d in (state.shift_deltas(p), state.swap_deltas(p)))


@needs_data
def test_annealing_stays_feasible_and_returns_its_exact_best():
    import time

    inst, a0, state, rng = _state("a1_2")
    start = state.objective
    best_a, best = state.anneal(rng, time.monotonic() + 120, steps=1500, t_start=start * 1e-3, t_end=start * 1e-6)
    assert exact(inst, a0, state.a) == (state.objective, [])  # the state ends feasible and exact
    assert exact(inst, a0, best_a) == (best, []) and best < start
