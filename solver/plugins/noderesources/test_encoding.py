"""The resource scores' CP-SAT terms judge the final loads, as the score measure does."""

from __future__ import annotations

from kplace.solver.cpsat import CpsatOptions, schedule_cpsat
from kplace.solver.framework.config import default_config, load_config
from kplace.solver.greedy import schedule_greedy
from kplace.solver.measure import plan_measure
from kplace.solver.testing import build_state, node, pod

OPTS = CpsatOptions(time_limit=5, workers=1)


def _state():
    # b starts busier, so a frozen start-of-window score would send every pod to a
    nodes = [node("a", cpu="8", memory="16Gi"), node("b", cpu="8", memory="16Gi")]
    bound = [pod("old", cpu="1", memory="1Gi", node_name="b")]
    pending = [pod(f"p{i}", cpu="1", memory="2Gi", labels={"app": "x"}) for i in range(6)]
    return build_state(nodes, bound, pending)


def test_least_allocated_spreads_the_window_over_both_nodes_instead_of_piling_on_the_emptier_one():
    index = _state().index
    plan = schedule_cpsat(index, options=OPTS)
    on = [p.node for p in plan.placements]
    assert 2 <= on.count("a") <= 4 and on.count("a") + on.count("b") == 6
    greedy = schedule_greedy(index)
    assert plan_measure(index, default_config(), plan).total >= plan_measure(index, default_config(), greedy).total


def test_most_allocated_packs_the_window_onto_the_busier_node(tmp_path):
    cfg = tmp_path / "sched.yaml"
    cfg.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
                   "- schedulerName: default-scheduler\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n"
                   "      scoringStrategy:\n        type: MostAllocated\n", encoding="utf-8")
    config = load_config(str(cfg))
    index = _state().index
    plan = schedule_cpsat(index, config, OPTS)
    assert {p.node for p in plan.placements} == {"b"}
    greedy = schedule_greedy(index, config)
    assert plan_measure(index, config, plan).total >= plan_measure(index, config, greedy).total


def test_the_window_reports_both_plans_measure_and_never_a_surrogate_optimum():
    plan = schedule_cpsat(_state().index, options=OPTS)
    window = plan.windows[0]
    score = window["stages"][-1]
    assert score["status"] == "FEASIBLE" and "surrogate" in score and "objective" not in score
    assert window["measure"]["cpsat"] >= window["measure"]["greedy"] > 0
    assert "NodeResourcesFit" in window["measure"]["cpsat_per_plugin"]
