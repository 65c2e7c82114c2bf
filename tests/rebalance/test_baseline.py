"""The HighNodeUtilization baseline: evicts from underutilised nodes only, then re-places greedily."""

from kplace.solver.rebalance.baseline import high_node_utilization

from .helpers import build_index, node, owned


def test_the_baseline_evicts_from_underutilised_nodes_and_greedy_places_the_pods_elsewhere():
    objs = [node("busy", cpu="10"), node("idle", cpu="10")]
    objs += [owned(f"w{i}", cpu="1", memory="4Gi", node_name="busy") for i in range(6)]
    objs += [owned("lonely", "x", cpu="1", memory="1Gi", node_name="idle")]
    res = high_node_utilization(build_index(*objs))
    assert res.evicted == ["default/lonely"]
    assert res.placed == {"default/lonely": "busy"} and res.nodes_freed == 1


def test_the_baseline_does_nothing_when_every_node_is_underutilised():
    objs = [node("a", cpu="10"), node("b", cpu="10"), owned("w", cpu="1", node_name="a"),
            owned("v", "v", cpu="1", node_name="b")]
    res = high_node_utilization(build_index(*objs))
    assert res.evicted == [] and res.nodes_freed == 0
