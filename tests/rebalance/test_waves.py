"""Each move no wave can take says which rule held it back."""

from __future__ import annotations

from kplace.solver.rebalance import Policy
from kplace.solver.rebalance.check import StateChecker
from kplace.solver.rebalance.waves import Step, build_waves

from .helpers import build_index, node, owned, pdb


def _waves(objs, moves):
    index = build_index(*objs)
    start = {pi.key: int(pi.node) for pi in index.pods if pi.node >= 0}
    steps = [Step(f"default/{name}", index.node_id[src], index.node_id[dst]) for name, src, dst in moves]
    return build_waves(index, StateChecker(index), Policy(), steps, start, set())


def test_a_swap_between_two_full_nodes_is_dropped_for_capacity_naming_the_resource_and_node():
    objs = [node("a", cpu="2"), node("b", cpu="2"), owned("x", "web", cpu="2", node_name="a"),
            owned("y", "api", cpu="2", node_name="b")]
    waves = _waves(objs, [("x", "a", "b"), ("y", "b", "a")])
    reasons = {s.pod: why for s, why in waves.dropped}
    assert reasons == {"default/x": "capacity: cpu on b while the pods leaving it still run (both copies counted)",
                       "default/y": "capacity: cpu on a while the pods leaving it still run (both copies counted)"}


def test_a_move_a_pdb_has_no_budget_for_is_dropped_naming_the_pdb():
    objs = [node("a"), node("b"), owned("x", "web", cpu="1", node_name="a"), pdb("guard", "web", max_unavailable=0)]
    waves = _waves(objs, [("x", "a", "b")])
    assert [why for _, why in waves.dropped] == ["PodDisruptionBudget default/guard allows no more disruptions"]
