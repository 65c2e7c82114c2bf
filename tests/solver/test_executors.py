"""Executors: a window's independent components searched in this process, in a local process pool or on a local
Ray instance give the same plan for the same seed (deterministic mode), and a bad executor is one clear line."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from kplace.instances.generators import generate
from kplace.models import load_state
from kplace.models.index import ClusterIndex
from kplace.solver.cli import main
from kplace.solver.cpsat import CpsatOptions, schedule_cpsat
from kplace.solver.cpsat.clock import SearchClock, search
from kplace.solver.executors import Chooser, ExecutorError, InProcess, ProcessPool
from kplace.solver.testing import hard_model


@pytest.fixture(scope="module")
def tenants_state(tmp_path_factory):
    doc = generate("scale", nodes=120, pods=900, seed=2, params={"tenants": "3", "pending": "120"})
    path = tmp_path_factory.mktemp("tenants") / "state.json"
    path.write_text(json.dumps(doc))
    return str(path)


def _plan(state: str, executor: str):
    plan = schedule_cpsat(ClusterIndex(load_state([state])),
                          options=CpsatOptions(time_limit=2, workers=1, seed=5, executor=executor))
    return plan, [(p.pod, p.node) for p in plan.placements]


@pytest.fixture(scope="module")
def in_process(tenants_state):
    return _plan(tenants_state, "inprocess")


def test_the_tenants_state_gives_a_window_of_several_independent_components(in_process):
    plan, placements = in_process
    assert plan.windows[0]["components"] >= 3
    assert any(node for _, node in placements)


def test_the_process_pool_gives_the_same_plan_as_solving_in_process(tenants_state, in_process):
    assert _plan(tenants_state, "pool")[1] == in_process[1]


@pytest.mark.slow
def test_a_local_ray_instance_of_two_cpus_gives_the_same_plan_as_solving_in_process(tenants_state, in_process):
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'kplace[ray]')")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        assert _plan(tenants_state, "ray")[1] == in_process[1]
    finally:
        ray.shutdown()


def test_a_search_run_in_a_worker_process_answers_as_the_same_search_run_here():
    clock = SearchClock(workers=1, seed=4)
    model = hard_model()
    task = clock.task(clock.solver(0.3), model)
    here = InProcess().map(search, [task])[0]
    pool = ProcessPool(1, size=1)
    try:
        there = pool.map(search, [task.portable()])[0]
    finally:
        pool.close()
    assert (there.status, there.objective_value, there.best_objective_bound, there.solution) == \
        (here.status, here.objective_value, here.best_objective_bound, here.solution)
    assert there.deterministic_time == here.deterministic_time


def test_a_task_that_fails_in_the_pool_gives_its_exception_in_its_place_and_the_others_their_results():
    pool = ProcessPool(1, size=1)
    try:
        out = pool.map(int, ["7", "seven", "8"])
    finally:
        pool.close()
    assert out[0] == 7 and isinstance(out[1], ValueError) and out[2] == 8


def test_auto_solves_in_process_for_one_component_and_with_a_pool_for_several_when_cores_allow(monkeypatch):
    from kplace.solver import executors

    monkeypatch.setattr(executors, "usable_cores", lambda: 4)
    chooser = Chooser("auto", cpus_per_task=2)
    assert chooser(1).name == "inprocess" and chooser(3).name == "pool"
    assert Chooser("auto", cpus_per_task=4)(3).name == "inprocess"  # one search at a time: no pool
    chooser.close()


def test_an_unknown_executor_is_refused_in_one_line():
    with pytest.raises(ExecutorError, match="--executor must be one of"):
        Chooser("threads", 1)


def test_the_cli_says_in_one_line_when_ray_is_asked_for_and_missing(monkeypatch, tmp_path):
    import builtins

    real = builtins.__import__

    def no_ray(name, *a, **k):
        if name == "ray":
            raise ImportError("no ray")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    state = tmp_path / "s.json"
    state.write_text('{"apiVersion": "v1", "kind": "List", "items": []}')
    result = CliRunner().invoke(main, ["schedule", str(state), "--executor", "ray", "-q"])
    assert result.exit_code == 2
    assert "pip install 'kplace[ray]'" in result.output and "Traceback" not in result.output
