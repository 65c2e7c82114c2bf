"""ROADEF 2012: the search (`search.RoadefLNS`, `portfolio.solve`, `portfolio.run_roadef`): feasible, better,
deterministic for a seed, and its phases in the order the docstrings say."""

import dataclasses
import time

import numpy as np
import pytest
from kplace.solver.roadef.instance import read_assignment, read_instance
from kplace.solver.roadef.neighbourhoods import pick_machines
from kplace.solver.roadef.portfolio import run_roadef, solve
from kplace.solver.roadef.scoring import score
from kplace.solver.roadef.search import RoadefLNS

from .helpers import DATA, exact, load, needs_data


def test_lns_on_tiny_instance_is_feasible_and_no_worse(tiny):
    inst, a0 = tiny
    best, _ = solve(inst, a0, time_limit=2, seed=0, max_iterations=30)
    obj, viol = score(inst, a0, best)
    assert viol == [] and obj.total <= 105



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
    inst, a0 = load("a1_2")
    runs = [solve(inst, a0, time_limit=60, seed=3, max_iterations=6)[0] for _ in range(2)]
    assert np.array_equal(runs[0], runs[1])


@pytest.mark.slow
@needs_data
def test_search_alternates_annealing_and_cp_sat_phases_and_stays_feasible():
    inst, a0 = load("a2_1")
    best, stats = solve(inst, a0, time_limit=300, seed=1, max_iterations=100)
    obj, viol = score(inst, a0, best)
    assert viol == [] and stats.lns_rounds > 0 and stats.anneal_steps > 0
    assert stats.iterations >= 100 and obj.total == stats.history[-1][1] < score(inst, a0, a0)[0].total


def test_once_load_and_balance_costs_are_zero_cp_sat_rounds_mostly_bring_moved_processes_home(tiny):
    inst, a0 = tiny
    free = dataclasses.replace(inst, safety=inst.capacity.copy(),
                               balances=tuple(dataclasses.replace(b, weight=0) for b in inst.balances))
    moved = np.array([1, 0, 0])  # p0 and p1 exchanged: feasible, only move costs are paid
    assert score(free, a0, moved)[1] == []
    search = RoadefLNS(free, a0, seed=0)
    search.a = moved.copy()
    search._refresh()
    assert search.machine_cost.sum() == 0 and search.obj > 0
    picks = [pick_machines(search)[1] for _ in range(200)]
    with_moved = sum(any(moved[p] != a0[p] for p in freed) for freed in picks)
    assert with_moved >= 0.55 * len(picks)  # the neighbourhood of moved processes and their home machines
    for _ in range(20):
        search.lns_round(time.monotonic() + 60)
        assert score(free, a0, search.a)[1] == []
    assert search.obj == score(free, a0, search.a)[0].total == 0  # both processes are home again


def test_no_phase_of_rearrangements_is_chosen_while_no_machine_has_a_load_or_balance_cost(tiny):
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
    inst, a0 = load("a2_2")
    search = RoadefLNS(inst, a0, seed=0)
    search.local_search(time.monotonic() + 120)
    local = search.obj
    search.rearrange(time.monotonic() + 120, attempts=30)
    assert search.obj < local and exact(inst, a0, search.a) == (search.obj, [])


@pytest.mark.slow
def test_with_transient_resources_the_search_opens_with_soft_annealing_and_cp_sat_rounds_in_turn(tiny):
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
    inst, a0 = load("a2_2")
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
    assert exact(inst, a0, search.a) == (search.obj, [])


@pytest.mark.slow
@needs_data
def test_two_cooperating_searches_are_feasible_better_and_deterministic_for_a_seed():
    inst, a0 = load("a1_2")
    runs = [solve(inst, a0, time_limit=120, seed=5, searches=2, max_iterations=4) for _ in range(2)]
    (first, stats), (second, _) = runs
    assert np.array_equal(first, second)
    obj, viol = score(inst, a0, first)
    assert viol == [] and obj.total < score(inst, a0, a0)[0].total
    assert stats.iterations >= 8  # both searches' work is counted
