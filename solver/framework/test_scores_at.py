"""`run_scores(..., at=i)`: the plugins marked `node_local_score` are scored at nodes[i] alone, and position i of
every plugin's array and of the total is what scoring every node gives."""

from __future__ import annotations

import numpy as np
import pytest
from kplace.models.index import ClusterIndex
from kplace.solver.framework.config import default_config, parse_config
from kplace.solver.framework.plugin import CycleState
from kplace.solver.framework.runtime import run_pre_filter, run_scores
from kplace.solver.framework.state import ClusterState
from kplace.solver.testing import build_snapshot, node, pod

IMAGE = "registry.example/app:1"


def _config(strategy: dict | None):
    if strategy is None:
        return default_config()
    return parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                         "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [
                             {"name": "NodeResourcesFit", "args": {"scoringStrategy": strategy}}]}]})


def _state():
    nodes = [node(f"n{i}", cpu=str(2 + i), memory=f"{4 + 3 * i}Gi", labels={"zone": f"z{i % 2}"},
                  taints=[{"key": "k", "value": "v", "effect": "PreferNoSchedule"}] if i == 3 else None,
                  images=[(IMAGE, 300 * 1024 * 1024)] if i % 2 else None) for i in range(6)]
    bound = [pod(f"b{i}", cpu=f"{300 * i}m", memory=f"{i}Gi", node_name=f"n{i}", labels={"app": "web"})
             for i in range(1, 6)]
    pending = pod("p", cpu="500m", memory="1Gi", labels={"app": "web"}, image=IMAGE)
    return ClusterState(ClusterIndex(build_snapshot(nodes + bound + [pending])))


CASES = [
    ("The default profile (LeastAllocated) gives every node's own scores at that node.", None),
    ("MostAllocated gives every node's own scores at that node.", {"type": "MostAllocated"}),
    ("RequestedToCapacityRatio gives every node's own scores at that node.",
     {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
         "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}}),
]


@pytest.mark.parametrize(("case", "strategy"), CASES, ids=[c for c, _ in CASES])
def test_scoring_at_one_node_gives_what_scoring_every_node_gives_there(case, strategy):
    state = _state()
    profile = _config(strategy).profile_for("default-scheduler")
    target = state.index.pod_by_key["default/p"]
    assert {p.name for p in profile.at("score") if p.node_local_score} == {
        "NodeResourcesFit", "NodeResourcesBalancedAllocation", "ImageLocality"}
    cycle = CycleState()
    nodes = run_pre_filter(profile, state, target, cycle).candidates(state.index.tree_order)
    full_parts, full_total = run_scores(profile, state, target, cycle, nodes)
    assert len(set(full_total.tolist())) > 1  # the nodes differ, so a wrong position would show
    for i in range(len(nodes)):
        parts, total = run_scores(profile, state, target, cycle, nodes, i)
        assert total[i] == full_total[i]
        assert {k: int(v[i]) for k, v in parts.items()} == {k: int(v[i]) for k, v in full_parts.items()}


def test_a_normalising_plugin_still_scores_every_node_when_one_is_wanted():
    state = _state()
    profile = default_config().profile_for("default-scheduler")
    target = state.index.pod_by_key["default/p"]
    cycle = CycleState()
    nodes = run_pre_filter(profile, state, target, cycle).candidates(state.index.tree_order)
    parts, _ = run_scores(profile, state, target, cycle, nodes, 0)
    assert np.count_nonzero(parts["TaintToleration"]) == len(nodes) - 1  # all but the tainted node, normalised
