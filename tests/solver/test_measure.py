"""The score measure's shortcut (`runtime.score_at`: no filtering when no plugin's value at the pod's node depends on
other nodes) against the measure's full computation, on states with and without what needs the full one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kplace.models.index import ClusterIndex
from kplace.solver.framework import ClusterState, CycleState
from kplace.solver.framework.config import default_config
from kplace.solver.framework.runtime import run_filters, run_pre_filter, run_scores, score_at
from kplace.solver.measure import pod_measure
from kplace.solver.testing import build_snapshot, node, pod

ZONE = "topology.kubernetes.io/zone"
PREFER = {"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}
SPREAD = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway",
          "labelSelector": {"matchLabels": {"app": "a"}}}


def _full(state: ClusterState, target, n: int) -> tuple[int, dict[str, int]]:
    """m(p) the long way: every node filtered, every plugin scored over the nodes that pass (n added)."""
    profile = default_config().profile_for(target.spec.scheduler_name)
    state.forget(target)
    try:
        cycle = CycleState()
        pre = run_pre_filter(profile, state, target, cycle)
        nodes = pre.candidates(state.index.tree_order)
        feasible = nodes[run_filters(profile, state, target, cycle, nodes, pre.skipped).code == 0]
        if n not in feasible:
            feasible = np.append(feasible, n)
        at = list(feasible).index(n)
        per_plugin, totals = run_scores(profile, state, target, cycle, feasible)
        return int(totals[at]), {k: int(v[at]) * profile.weights.get(k, 1) for k, v in per_plugin.items()}
    finally:
        state.assume(target, n)


@st.composite
def states(draw) -> list[dict]:
    """2–6 nodes, PreferNoSchedule taints on none, some or all of them, and 1–8 bound pods that may tolerate them,
    prefer a zone, or spread softly over zones."""
    taints = draw(st.sampled_from(["none", "some", "all"]))
    n_nodes = draw(st.integers(2, 6))
    objs = [node(f"n{i}", cpu="4", memory="8Gi", labels={ZONE: f"z{i % 2}"},
                 taints=[PREFER] if taints == "all" or (taints == "some" and i % 2) else None)
            for i in range(n_nodes)]
    for i in range(draw(st.integers(1, 8))):
        spec: dict = {}
        if draw(st.booleans()):
            spec["tolerations"] = [{"key": "spot", "operator": "Exists"}]
        if draw(st.integers(0, 2)) == 0:
            zones = draw(st.sampled_from([["z0"], ["z0", "z1"]]))
            spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "preference": {"matchExpressions": [{"key": ZONE, "operator": "In",
                                                                    "values": zones}]}}]}}
        if draw(st.integers(0, 3)) == 0:
            spec["topologySpreadConstraints"] = [SPREAD]
        objs.append(pod(f"p{i}", cpu=draw(st.sampled_from(["100m", "500m", "1"])), memory="512Mi", labels={"app": "a"},
                        node_name=f"n{draw(st.integers(0, n_nodes - 1))}", spec=spec))
    return objs


@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(states())
def test_the_measure_of_every_pod_equals_its_full_computation_with_or_without_the_shortcut(objs):
    index = ClusterIndex(build_snapshot(objs))
    state = ClusterState(index)
    config = default_config()
    for p in index.pods:
        n = state.pod_node[p.idx]
        assert pod_measure(config, state, p, n) == _full(state, p, n), p.key


def _one_pod(taints: list | None, spec: dict) -> tuple[ClusterState, object, int]:
    objs = [node("n0", taints=taints), node("n1"), pod("p", cpu="1", node_name="n0", spec=spec)]
    index = ClusterIndex(build_snapshot(objs))
    return ClusterState(index), index.pods[0], 0


@pytest.mark.parametrize(("taints", "spec", "shortcut"), [
    (None, {}, True),
    ([PREFER], {"tolerations": [{"key": "spot", "operator": "Exists"}]}, True),
    ([PREFER], {}, False),  # one node tainted: TaintToleration normalises over the nodes that pass
    (None, {"topologySpreadConstraints": [SPREAD]}, False),
])
def test_the_shortcut_is_taken_only_when_no_score_depends_on_the_other_nodes(taints, spec, shortcut):
    state, p, n = _one_pod(taints, spec)
    profile = default_config().profile_for(p.spec.scheduler_name)
    state.forget(p)
    assert (score_at(profile, state, p, n) is not None) is shortcut
