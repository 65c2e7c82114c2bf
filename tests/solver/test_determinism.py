"""Deterministic mode: the same input and seed give the same plan whatever the machine's load. Load is simulated by
a wall clock that runs fast (every read of time.perf_counter advances it by a second), which the budgets of a
deterministic run must not read."""

from __future__ import annotations

import itertools
import time

import pytest
from kplace.models.index import ClusterIndex
from kplace.solver.cpsat import CpsatOptions, schedule_cpsat
from kplace.solver.framework.config import default_config
from kplace.solver.rebalance import Policy, RebalanceOptions, plan_rebalance
from kplace.solver.testing import build_snapshot, hard_model, node, pod


def _state():
    nodes = [node(f"n{i}", cpu=str(2 + i % 3), labels={"topology.kubernetes.io/zone": f"z{i % 2}"}) for i in range(8)]
    anti = {"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 50, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "a0"}},
                                           "topologyKey": "kubernetes.io/hostname"}}]}}}
    pods = [pod(f"p{i:02d}", cpu=f"{300 + 170 * (i % 5)}m", labels={"app": f"a{i % 3}"},
                spec=anti if i % 3 == 0 else None) for i in range(30)]
    return ClusterIndex(build_snapshot(nodes + pods))


def _owned(name, node_name, cpu="500m"):
    p = pod(name, cpu=cpu, node_name=node_name, labels={"app": "web"})
    p["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                                         "uid": "uid-web", "controller": True}]
    return p


@pytest.fixture
def loaded_clock(monkeypatch):
    """time.perf_counter jumps one second per call, as on a machine where everything else is very slow."""
    ticks = itertools.count()
    real = time.perf_counter

    def slow():
        return real() + next(ticks)

    def install():
        monkeypatch.setattr(time, "perf_counter", slow)

    return install


def test_a_cpsat_run_of_several_windows_gives_the_same_plan_when_the_wall_clock_runs_fast(loaded_clock):
    opts = CpsatOptions(time_limit=2, window=10, workers=2, seed=3)
    quiet = [(p.pod, p.node) for p in schedule_cpsat(_state(), options=opts).placements]
    loaded_clock()
    loaded = [(p.pod, p.node) for p in schedule_cpsat(_state(), options=opts).placements]
    assert loaded == quiet


def test_a_rebalance_gives_the_same_moves_when_the_wall_clock_runs_fast(loaded_clock):
    objs = [node(f"n{i}", cpu=str(4 + 2 * (i % 3))) for i in range(24)]
    objs += [_owned(f"web-{i:02d}", f"n{i % 24}", cpu=f"{250 + 130 * (i % 7)}m") for i in range(60)]

    def moves():
        plan = plan_rebalance(ClusterIndex(build_snapshot(objs)), default_config(), Policy(),
                              RebalanceOptions(goal="pack", time_limit=2, workers=2, seed=1))
        return [(m["pod"], m["from"], m["to"]) for m in plan["moves"]]

    quiet = moves()
    assert quiet  # the state has something to pack
    loaded_clock()
    assert moves() == quiet


def test_the_net_stops_a_runaway_search_by_the_cpu_time_it_used_and_says_its_plan_is_not_reproducible(monkeypatch):
    from kplace.solver.cpsat import clock

    monkeypatch.setattr(clock, "CPU_NET", (0.0, 0.5))  # any search: half a CPU second
    c = clock.SearchClock(deterministic=True, workers=2, seed=0)
    started = time.process_time()
    _, netted = c.solve(c.solver(1000.0), hard_model())
    assert netted and time.process_time() - started < 20
    assert 0 < c.searched < 1000.0


def test_a_search_within_its_budget_is_not_netted_however_much_wall_time_passes(monkeypatch):
    """Wall time passes without CPU time (each solution's callback sleeps, as a process on a loaded machine waits
    for a core): a net on the wall clock would stop the search, the CPU-time net does not."""
    import time as clock_time

    from kplace.solver.cpsat import clock
    from ortools.sat.python import cp_model

    class Sleepy(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self):
            clock_time.sleep(1.5)

    monkeypatch.setattr(clock, "CPU_NET", (0.0, 1.0))  # any search: one CPU second
    c = clock.SearchClock(deterministic=True, workers=1, seed=0)
    started = clock_time.monotonic()
    model = cp_model.CpModel()
    xs = [model.new_bool_var(f"x{i}") for i in range(12)]
    model.add(sum(xs) <= 5)
    model.maximize(sum((i % 4 + 1) * x for i, x in enumerate(xs)))
    solver, stops = c.solver(5.0), []
    stop = solver.stop_search
    solver.stop_search = lambda: (stops.append(True), stop())
    status, netted = c.solve(solver, model, Sleepy())
    assert clock_time.monotonic() - started > 1.0  # more wall time than the net allows CPU time
    assert status == cp_model.OPTIMAL and not netted and stops == []
