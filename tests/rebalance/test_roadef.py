"""ROADEF/EURO 2012 machine reassignment: parser, exact scorer (hand-computed and published costs), LNS, CLI."""

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from kplace.models.errors import InputError
from kplace.solver.rebalance.roadef import (
    parse_assignment,
    parse_instance,
    read_assignment,
    read_instance,
    run_roadef,
    score,
    solve,
)
from kplace.solver.rebalance.roadef_cli import roadef_score

DATA = Path(os.environ.get("KPLACE_ROADEF_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"
                           / "roadef2012-machine-reassignment"))
needs_data = pytest.mark.skipif(not (DATA / "model_a1_1.txt").exists(), reason=f"no ROADEF data in {DATA}")

# 2 resources (r0: load weight 10; r1: transient, load weight 100), 3 machines, 2 services, 3 processes.
#   m0: neighborhood 0, location 0, capacity 10/10, safety 8/8, move costs 0 1 2
#   m1: neighborhood 0, location 1, capacity 10/10, safety 8/8, move costs 1 0 3
#   m2: neighborhood 1, location 1, capacity 10/10, safety 5/5, move costs 2 3 0
#   s0: spreadMin 2; s1: spreadMin 1, depends on s0
#   p0: s0, needs 6/2, move cost 7; p1: s0, needs 3/3, move cost 1; p2: s1, needs 4/1, move cost 2
#   balance: r1=0, r2=1, target 2, weight 5; weights: process move 1, service move 10, machine move 100
TINY = """\
2
0 10
1 100
3
0 0 10 10 8 8 0 1 2
0 1 10 10 8 8 1 0 3
1 1 10 10 5 5 2 3 0
2
2 0
1 1 0
3
0 6 2 7
0 3 3 1
1 4 1 2
1
0 1 2 5
1 10 100
"""
INITIAL = "0 1 0\n"


@pytest.fixture
def tiny():
    inst = parse_instance(TINY, "tiny.txt")
    return inst, parse_assignment(INITIAL, inst, "tiny_assignment.txt")


def _kinds(violations):
    return sorted({v.split(":", 1)[0] for v in violations})


def test_parse_tiny(tiny):
    inst, a0 = tiny
    assert (inst.n_resources, inst.n_machines, inst.n_services, inst.n_processes) == (2, 3, 2, 3)
    assert inst.transient.tolist() == [False, True]
    assert inst.load_weight.tolist() == [10, 100]
    assert inst.neighborhood.tolist() == [0, 0, 1] and inst.location.tolist() == [0, 1, 1]
    assert inst.safety[2].tolist() == [5, 5] and inst.capacity[1].tolist() == [10, 10]
    assert inst.machine_move_cost[1].tolist() == [1, 0, 3]
    assert inst.spread_min.tolist() == [2, 1] and inst.dependencies == ((), (0,))
    assert inst.service.tolist() == [0, 0, 1] and inst.requirement[2].tolist() == [4, 1]
    assert inst.process_move_cost.tolist() == [7, 1, 2]
    b = inst.balances[0]
    assert (b.r1, b.r2, b.target, b.weight) == (0, 1, 2, 5)
    assert (inst.weight_process_move, inst.weight_service_move, inst.weight_machine_move) == (1, 10, 100)
    assert a0.tolist() == [0, 1, 0]


def test_initial_objective_by_hand(tiny):
    inst, a0 = tiny
    obj, viol = score(inst, a0, a0)
    assert viol == []
    # usage m0 = 10/3, m1 = 3/3, m2 = 0/0. Load: m0 r0 is 2 over safety 8 → 2 × 10.
    assert obj.load == 20 and obj.load_by_resource == (20, 0)
    # balance 2 × free(r0) − free(r1): m0 2·0−7 → 0, m1 2·7−7 = 7, m2 2·10−10 = 10 → 17 × 5
    assert obj.balance == 85
    assert (obj.process_move, obj.service_move, obj.machine_move) == (0, 0, 0)
    assert obj.total == 105


def test_each_move_cost_by_hand(tiny):
    inst, a0 = tiny
    # p2 m0 → m1: usage m0 6/2, m1 7/4 (no overload); balance only m2: 10 × 5; process move 2 × 1;
    # service move: 1 moved process of s1 × 10; machine move MMC(0, 1) = 1 × 100.
    obj, viol = score(inst, a0, [0, 1, 1])
    assert viol == []
    assert (obj.load, obj.balance, obj.process_move, obj.service_move, obj.machine_move) == (0, 50, 2, 10, 100)
    assert obj.total == 162 and obj.moved_processes == 1
    # p0 and p1 (both s0) swap machines: service move is the max per service (2), not the total;
    # process move 7 + 1; machine move MMC(0, 1) + MMC(1, 0) = 2 × 100.
    obj, viol = score(inst, a0, [1, 0, 0])
    assert viol == []
    assert (obj.load, obj.balance, obj.process_move, obj.service_move, obj.machine_move) == (0, 50, 8, 20, 200)
    assert obj.total == 278


def test_capacity_violation(tiny):
    inst, a0 = tiny
    cap = inst.capacity.copy()
    cap[0, 0] = 9  # m0 runs p0 + p2: 10 of r0
    _, viol = score(dataclasses.replace(inst, capacity=cap), a0, a0)
    assert _kinds(viol) == ["capacity"] and "machine 0 resource 0" in viol[0]


def test_transient_violation(tiny):
    inst, a0 = tiny
    cap = inst.capacity.copy()
    cap[1, 1] = 3  # m1 holds p1 (3 of transient r1) initially
    inst = dataclasses.replace(inst, capacity=cap)
    assert score(inst, a0, a0)[1] == []
    # p1 leaves m1 for m2 and p2 arrives on m1: plain usage 1 ≤ 3, but p1 still counts there: 1 + 3 > 3
    _, viol = score(inst, a0, [0, 2, 1])
    assert _kinds(viol) == ["transient"] and "machine 1 resource 1" in viol[0]


def test_conflict_violation(tiny):
    inst, a0 = tiny
    inst = dataclasses.replace(inst, spread_min=np.array([1, 1]))
    _, viol = score(inst, a0, [0, 0, 1])  # p0 and p1 (service 0) on m0
    assert _kinds(viol) == ["conflict"] and "service 0" in viol[0] and "machine 0" in viol[0]


def test_spread_violation(tiny):
    inst, a0 = tiny
    _, viol = score(inst, a0, [2, 1, 0])  # s0 only in location 1
    assert _kinds(viol) == ["spread"] and "service 0" in viol[0]


def test_dependency_violation(tiny):
    inst, a0 = tiny
    _, viol = score(inst, a0, [0, 1, 2])  # s1 in neighborhood 1, where s0 does not run
    assert _kinds(viol) == ["dependency"] and "neighborhood 1" in viol[0]


def test_lns_on_tiny_instance_is_feasible_and_no_worse(tiny):
    inst, a0 = tiny
    best, _ = solve(inst, a0, time_limit=2, seed=0, max_iterations=30)
    obj, viol = score(inst, a0, best)
    assert viol == [] and obj.total <= 105


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        (TINY.replace("1 100\n", "x 100\n", 1), "tiny.txt:3", "expected an integer for resource 1: transient flag"),
        (TINY.replace("1 100\n", "2 100\n", 1), "tiny.txt:3", "transient flag is 2"),
        (TINY.replace("1 4 1 2\n", "5 4 1 2\n"), "tiny.txt:14", "process 2: service is 5"),
        (TINY.replace("1 1 0\n", "1 1 7\n"), "tiny.txt:10", "service 1: dependency 0 is 7"),
        (TINY.replace("0 1 2 5\n", "0 3 2 5\n"), "tiny.txt:16", "balance 0: r2 is 3"),
        (TINY.replace("1 10 100\n", "1 10\n"), "tiny.txt:17", "unexpected end of file"),
        (TINY + "4\n", "tiny.txt:18", "unexpected extra data '4'"),
        (TINY.replace("0 0 10 10 8 8", "0 0 -1 10 8 8"), "tiny.txt:5", "capacity of resource 0 is -1"),
    ],
)
def test_malformed_model_names_file_and_line(text, where, what):
    with pytest.raises(InputError) as err:
        parse_instance(text, "tiny.txt")
    assert str(err.value).startswith(where + ":") and what in str(err.value)


def test_malformed_assignment(tiny):
    inst, _ = tiny
    with pytest.raises(InputError, match=r"^a.txt:1: unexpected end of file: expected machine of process 2"):
        parse_assignment("0 1", inst, "a.txt")
    with pytest.raises(InputError, match=r"^a.txt:2: machine of process 2 is 3, must be ≤ 2"):
        parse_assignment("0 1\n3\n", inst, "a.txt")
    with pytest.raises(InputError, match=r"^a.txt:1: unexpected extra data"):
        parse_assignment("0 1 0 0", inst, "a.txt")
    with pytest.raises(InputError, match="cannot read"):
        read_instance("/nonexistent/model.txt")


def test_score_rejects_wrong_length(tiny):
    inst, a0 = tiny
    with pytest.raises(InputError, match="new assignment"):
        score(inst, a0, [0, 1])


def test_cli_scores_and_exits_1_on_violation(tmp_path):
    model, initial, bad = tmp_path / "model.txt", tmp_path / "a.txt", tmp_path / "new.txt"
    model.write_text(TINY)
    initial.write_text(INITIAL)
    res = CliRunner().invoke(roadef_score, [str(model), str(initial), str(initial)])
    assert res.exit_code == 0, res.output
    assert "105" in res.output and "feasible" in res.output
    bad.write_text("0 1 2\n")
    res = CliRunner().invoke(roadef_score, [str(model), str(initial), str(bad), "--output", "json"])
    assert res.exit_code == 1 and '"feasible": false' in res.output and "dependency" in res.output


@needs_data
@pytest.mark.parametrize("name", ["a1_1", "a1_2", "a1_3", "a1_4", "a1_5", "a2_1", "a2_2"])
def test_scorer_matches_published_original_cost(name):
    inst = read_instance(DATA / f"model_{name}.txt")
    a0 = read_assignment(DATA / f"assignment_{name}.txt", inst)
    obj, viol = score(inst, a0, a0)
    assert viol == []
    assert obj.total == int((DATA / f"original_cost_{name}.txt").read_text().split()[0])


@needs_data
def test_lns_improves_a1_1_and_stays_feasible(tmp_path):
    out = tmp_path / "new_a1_1.txt"
    summary = run_roadef(DATA / "model_a1_1.txt", DATA / "assignment_a1_1.txt", out, time_limit=3, seed=0)
    assert summary["feasible"] and summary["violations"] == []
    assert summary["objective"] < summary["initial"]["total"] == 49_528_750
    inst = read_instance(DATA / "model_a1_1.txt")
    obj, viol = score(inst, read_assignment(DATA / "assignment_a1_1.txt", inst), read_assignment(out, inst))
    assert viol == [] and obj.total == summary["objective"]
    assert not list(tmp_path.glob(".*.tmp"))  # written atomically, no temporary file left behind


@pytest.mark.slow
@needs_data
def test_lns_is_deterministic_for_a_seed():
    inst = read_instance(DATA / "model_a1_2.txt")
    a0 = read_assignment(DATA / "assignment_a1_2.txt", inst)
    runs = [solve(inst, a0, time_limit=60, seed=3, max_iterations=6)[0] for _ in range(2)]
    assert np.array_equal(runs[0], runs[1])


def _state(name, seed=0, moves=0):
    """A MoveState of a real instance, after `moves` random feasible shifts (so that some processes are moved)."""
    import random

    from kplace.solver.rebalance.roadef_ls import MoveState

    inst = read_instance(DATA / f"model_{name}.txt")
    a0 = read_assignment(DATA / f"assignment_{name}.txt", inst)
    state = MoveState(inst, a0, a0)
    rng = random.Random(seed)
    while moves:
        p = rng.randrange(inst.n_processes)
        cand, _ = state.shift_deltas(p)
        if len(cand):
            state.apply_shift(p, int(cand[rng.randrange(len(cand))]))
            moves -= 1
    return inst, a0, state, rng


def _exact(inst, a0, new):
    obj, viol = score(inst, a0, new)
    return obj.total, viol


@needs_data
@pytest.mark.parametrize("name", ["a1_4", "a1_5", "a2_2"])
def test_shift_move_delta_equals_the_scorer_difference(name):
    inst, a0, state, rng = _state(name, seed=11, moves=150)
    base, viol = _exact(inst, a0, state.a)
    assert viol == [] and state.objective == base
    checked = 0
    for _ in range(60):
        p = rng.randrange(inst.n_processes)
        cand, delta = state.shift_deltas(p)
        feasible = set(cand.tolist())
        for k in rng.sample(range(len(cand)), min(4, len(cand))):
            new = state.a.copy()
            new[p] = cand[k]
            total, viol = _exact(inst, a0, new)
            assert viol == [] and total - base == delta[k]
            checked += 1
        for m in rng.sample(range(inst.n_machines), min(4, inst.n_machines)):
            if m not in feasible and m != state.a[p]:  # every shift left out is infeasible
                new = state.a.copy()
                new[p] = m
                assert _exact(inst, a0, new)[1]
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
            total, viol = _exact(inst, a0, new)
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
        base, base_over = _exact(inst, a0, state.a)[0], _transient_over(inst, a0, state.a)
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
            total, viol = _exact(inst, a0, new)
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

    from kplace.solver.rebalance.roadef_ls import MoveState

    inst, a0, state, rng = _state("a2_2", seed=15)
    state.descend(rng, deadline=time.monotonic() + 120)
    start = state.objective
    best_a, best = state.anneal(rng, time.monotonic() + 120, steps=3000, t_start=start * 1e-3,
                                t_end=start * 1e-6, soft=(20.0, 5000.0))
    assert _exact(inst, a0, best_a) == (best, []) and best <= start
    assert state.soft == 0.0 and state.objective == _exact(inst, a0, state.a)[0]
    fresh = MoveState(inst, a0, state.a)
    for name in ("room_m", "room_q", "over_t"):
        assert np.array_equal(getattr(state, name), getattr(fresh, name)), name


def test_every_move_on_the_tiny_instance_has_the_exact_delta_and_feasibility(tiny):
    from kplace.solver.rebalance.roadef_ls import MoveState

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
    from kplace.solver.rebalance.roadef_ls import MoveState

    fresh = MoveState(inst, a0, state.a)
    for name in ("U", "T", "moved", "mc", "occ", "sl", "nloc", "nb", "missing", "needed", "room_m", "room_q", "over_t"):
        assert np.array_equal(getattr(state, name), getattr(fresh, name)), name
    assert state.move_sum == fresh.move_sum and state.objective == fresh.objective == _exact(inst, a0, state.a)[0]


@needs_data
@pytest.mark.parametrize("name", ["a1_4", "a2_2"])
def test_descent_is_exact_feasible_and_reaches_a_local_optimum(name):
    import time

    inst, a0, state, rng = _state(name)
    before = state.objective
    assert state.descend(rng, deadline=time.monotonic() + 120) > 0
    total, viol = _exact(inst, a0, state.a)
    assert viol == [] and total == state.objective < before
    for p in rng.sample(range(inst.n_processes), 40):  # no improving shift or swap is left
        assert all((d >= 0).all() for _, d in (state.shift_deltas(p), state.swap_deltas(p)))


@needs_data
def test_annealing_stays_feasible_and_returns_its_exact_best():
    import time

    inst, a0, state, rng = _state("a1_2")
    start = state.objective
    best_a, best = state.anneal(rng, time.monotonic() + 120, steps=1500, t_start=start * 1e-3, t_end=start * 1e-6)
    assert _exact(inst, a0, state.a) == (state.objective, [])  # the state ends feasible and exact
    assert _exact(inst, a0, best_a) == (best, []) and best < start


@pytest.mark.slow
@needs_data
def test_search_alternates_annealing_and_cp_sat_phases_and_stays_feasible():
    inst = read_instance(DATA / "model_a2_1.txt")
    a0 = read_assignment(DATA / "assignment_a2_1.txt", inst)
    best, stats = solve(inst, a0, time_limit=300, seed=1, max_iterations=100)
    obj, viol = score(inst, a0, best)
    assert viol == [] and stats.lns_rounds > 0 and stats.anneal_steps > 0
    assert stats.iterations >= 100 and obj.total == stats.history[-1][1] < score(inst, a0, a0)[0].total


def test_once_load_and_balance_costs_are_zero_cp_sat_rounds_mostly_bring_moved_processes_home(tiny):
    import time

    from kplace.solver.rebalance.roadef import RoadefLNS

    inst, a0 = tiny
    free = dataclasses.replace(inst, safety=inst.capacity.copy(),
                               balances=tuple(dataclasses.replace(b, weight=0) for b in inst.balances))
    moved = np.array([1, 0, 0])  # p0 and p1 exchanged: feasible, only move costs are paid
    assert score(free, a0, moved)[1] == []
    search = RoadefLNS(free, a0, seed=0)
    search.a = moved.copy()
    search._refresh()
    assert search.machine_cost.sum() == 0 and search.obj > 0
    picks = [search._pick_machines()[1] for _ in range(200)]
    with_moved = sum(any(moved[p] != a0[p] for p in freed) for freed in picks)
    assert with_moved >= 0.55 * len(picks)  # the neighbourhood of moved processes and their home machines
    for _ in range(20):
        search.lns_round(time.monotonic() + 60)
        assert score(free, a0, search.a)[1] == []
    assert search.obj == score(free, a0, search.a)[0].total == 0  # both processes are home again


def test_no_phase_of_rearrangements_is_chosen_while_no_machine_has_a_load_or_balance_cost(tiny):
    import time

    from kplace.solver.rebalance.roadef import RoadefLNS

    inst, a0 = tiny
    free = dataclasses.replace(inst, safety=inst.capacity.copy(), transient=np.zeros(2, dtype=bool),
                               balances=tuple(dataclasses.replace(b, weight=0) for b in inst.balances))
    search = RoadefLNS(free, a0, seed=0)
    assert "bpr" in search.kinds and search.machine_cost.sum() == 0
    kinds = []
    search.rearrange = lambda *_: kinds.append("bpr")
    search.anneal = lambda *_, **__: kinds.append("anneal")
    search.lns_round = lambda *_: kinds.append("lns")
    search.begin(time.monotonic() + 60)
    for _ in range(30):
        assert search.phase()
    assert "bpr" not in kinds and {"anneal", "lns"} <= set(kinds)
    search.machine_cost[0] = 1  # a machine with a cost: rearrangements are tried again (first, as never yet)
    search.phase()
    assert kinds[-1] == "bpr"


@needs_data
def test_big_process_rearrangements_improve_a2_2_beyond_its_descent_optimum_exactly():
    import time

    from kplace.solver.rebalance.roadef import RoadefLNS

    inst = read_instance(DATA / "model_a2_2.txt")
    a0 = read_assignment(DATA / "assignment_a2_2.txt", inst)
    search = RoadefLNS(inst, a0, seed=0)
    search.local_search(time.monotonic() + 120)
    local = search.obj
    search.rearrange(time.monotonic() + 120, attempts=30)
    assert search.obj < local and _exact(inst, a0, search.a) == (search.obj, [])


@pytest.mark.slow
def test_with_transient_resources_the_search_opens_with_soft_annealing_and_cp_sat_rounds_in_turn(tiny):
    import time

    from kplace.solver.rebalance.roadef import RoadefLNS

    inst, a0 = tiny  # r1 is transient
    search = RoadefLNS(inst, a0, seed=0)
    search.begin(time.monotonic() + 60)
    seen = []
    for _ in range(4):
        assert search.phase()
        seen.append((search.stats.anneal_steps > 0, search.stats.lns_rounds > 0))
    assert seen == [(True, False), (True, True), (True, True), (True, True)] and search.prelude == 4
    plain = RoadefLNS(dataclasses.replace(inst, transient=np.zeros(2, dtype=bool)), a0, seed=0)
    assert plain.prelude == 0 and "soft" not in plain.kinds


@pytest.mark.slow
@needs_data
def test_rearrangements_run_alone_until_a_phase_of_them_gains_less_than_the_threshold():
    import time

    from kplace.solver.rebalance.roadef import RoadefLNS

    inst = read_instance(DATA / "model_a2_2.txt")
    a0 = read_assignment(DATA / "assignment_a2_2.txt", inst)
    search = RoadefLNS(inst, a0, seed=0)
    assert search.prelude == 8  # a2_2 has transient resources: soft annealing and CP-SAT rounds come first
    search.prelude, search.bpr_attempts = 0, 40
    search.begin(time.monotonic() + 300)
    for _ in range(3):  # on a2_2 the first phases of rearrangements gain far more than 0.05 % each
        before = search.obj
        assert search.phase()
        assert search.bpr_first and before - search.obj >= 5e-4 * before
    assert search.stats.lns_rounds == search.stats.anneal_steps == 0
    search.bpr_first_gain = 1.0  # no phase gains that much: the next one ends rearrangements alone
    search.phase()
    assert not search.bpr_first
    for _ in range(6):
        search.phase()
    assert search.stats.lns_rounds + search.stats.anneal_steps > 0  # the other kinds are tried in turn
    assert _exact(inst, a0, search.a) == (search.obj, [])


@pytest.mark.slow
@needs_data
def test_two_cooperating_searches_are_feasible_better_and_deterministic_for_a_seed():
    inst = read_instance(DATA / "model_a1_2.txt")
    a0 = read_assignment(DATA / "assignment_a1_2.txt", inst)
    runs = [solve(inst, a0, time_limit=120, seed=5, searches=2, max_iterations=4) for _ in range(2)]
    (first, stats), (second, _) = runs
    assert np.array_equal(first, second)
    obj, viol = score(inst, a0, first)
    assert viol == [] and obj.total < score(inst, a0, a0)[0].total
    assert stats.iterations >= 8  # both searches' work is counted
