"""The shared metrics module on small states whose figures are computed by hand."""

import pytest
from kplace.models.index import ClusterIndex
from kplace.models.plan import Eviction, Placement, Plan
from kplace.solver.compare.metrics import (
    allocation_metrics,
    final_state,
    fragmentation_metrics,
    node_metrics,
    pending_shapes,
    placed_pods,
    placement_metrics,
    plan_diff,
    reason_group,
    soft_metrics,
    solver_metrics,
)
from kplace.solver.testing import build_snapshot, node, pod

ZONE = "topology.kubernetes.io/zone"


def _index(*objects) -> ClusterIndex:
    return ClusterIndex(build_snapshot(*objects))


def _plan(*pairs, engine="greedy", reason="0/2 nodes are available: 2 Insufficient cpu.") -> Plan:
    return Plan(engine, [Placement(p, n, None if n else reason) for p, n in pairs])


def test_placed_pending_nodes_and_allocation_are_counted_from_the_final_state():
    index = _index(node("a", cpu="4", pods=10), node("b", cpu="4", pods=10),
                   pod("bound", cpu="1", node_name="a"), pod("p", cpu="1"), pod("q", cpu="3"))
    plan = _plan(("default/p", "a"), ("default/q", None))
    state = final_state(index, plan)
    assert placement_metrics(plan) == {
        "pods": 2, "placed": 1, "pending": 1, "evictions": 0, "evictions_by_priority": {}, "pdb_violations": 0,
        "moves": 0,
        "by_priority": {"0": {"placed": 1, "pending": 1}},
        "pending_by_reason": {"Insufficient cpu": 1},
    }
    assert node_metrics(index, state) == {"total": 2, "in_use": 1, "newly_used": 0}
    alloc = allocation_metrics(index, state)
    # cpu: a holds 2 of 4 (0.5), b 0 of 4 → mean 0.25, std 0.25, max 0.5; pods: 2/10 and 0/10
    assert alloc["cpu"] == {"nodes": 2, "mean": 0.25, "std": 0.25, "max": 0.5}
    assert alloc["pods"] == {"nodes": 2, "mean": 0.1, "std": 0.1, "max": 0.2}


def test_evicted_pods_leave_the_final_state():
    index = _index(node("a", cpu="2"), pod("victim", cpu="2", node_name="a", priority=0),
                   pod("vip", cpu="2", priority=100))
    plan = Plan("greedy", [Placement("default/vip", "a", None, 100, True)],
                [Eviction("default/victim", "a", "default/vip")])
    state = final_state(index, plan)
    assert allocation_metrics(index, state)["cpu"]["max"] == 1.0
    assert sorted(state.node_pods[0]) == [index.pod_by_key["default/vip"].idx]


def test_fragmentation_counts_how_many_more_of_each_common_pending_shape_still_fit():
    index = _index(node("a", cpu="4", memory="8Gi"), node("b", cpu="4", memory="8Gi"),
                   node("c", cpu="4", memory="8Gi", unschedulable=True),
                   pod("s1", cpu="1", memory="1Gi"), pod("s2", cpu="1", memory="1Gi"),
                   pod("big", cpu="3", memory="1Gi"))
    shapes = pending_shapes(index)
    assert [c for _, c in shapes] == [2, 1]
    # greedy-like spread: one small pod on each node → 3 free cpu each: 3 + 3 smalls, 1 + 1 bigs
    spread = final_state(index, _plan(("default/s1", "a"), ("default/s2", "b"), ("default/big", None)))
    frag = fragmentation_metrics(index, spread, shapes)
    assert [(f["would_fit"], f["nodes_with_room"]) for f in frag] == [(6, 2), (2, 2)]
    assert frag[0]["shape"] == "cpu=1000m,memory=1024Mi" and frag[0]["pending_in_input"] == 2
    # packed: both on a → a has 2 free, b 4: 2 + 4 smalls, 0 + 1 bigs (the cordoned node never counts)
    packed = final_state(index, _plan(("default/s1", "a"), ("default/s2", "a"), ("default/big", None)))
    assert [f["would_fit"] for f in fragmentation_metrics(index, packed, shapes)] == [6, 1]


def _preferred_node_affinity(*terms):
    return {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": w, "preference": {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [z]}]}}
        for w, z in terms]}}}


def _preferred_pod_term(kind, weight, app, key="kubernetes.io/hostname"):
    return {"affinity": {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": weight, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}}]}}}


def test_soft_constraints_weights_skew_and_prefer_no_schedule_taints():
    nodes = [node("a", labels={ZONE: "x"}), node("b", labels={ZONE: "y"}),
             node("c", labels={ZONE: "y"}, taints=[{"key": "k", "value": "v", "effect": "PreferNoSchedule"}])]
    spread = {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway",
                                             "labelSelector": {"matchLabels": {"app": "s"}}}]}
    pods = [pod("web", cpu="100m", node_name="a", labels={"app": "web"}),
            pod("na", cpu="100m", spec=_preferred_node_affinity((10, "x"), (5, "y"))),
            pod("aff", cpu="100m", spec=_preferred_pod_term("podAffinity", 20, "web")),
            pod("aff-miss", cpu="100m", spec=_preferred_pod_term("podAffinity", 7, "web")),
            pod("anti", cpu="100m", spec=_preferred_pod_term("podAntiAffinity", 30, "web")),
            *(pod(f"s{i}", cpu="100m", labels={"app": "s"}, spec=spread) for i in range(3))]
    index = _index(*nodes, *pods)
    plan = _plan(("default/na", "a"), ("default/aff", "a"), ("default/aff-miss", "b"), ("default/anti", "c"),
                 ("default/s0", "a"), ("default/s1", "a"), ("default/s2", "a"))
    state = final_state(index, plan)
    soft = soft_metrics(index, state, placed_pods(index, plan))
    assert soft["node_affinity"] == {"satisfied": 10, "total": 15, "pods": 1}
    assert soft["pod_affinity"] == {"satisfied": 20, "total": 27, "pods": 2}
    assert soft["pod_anti_affinity"] == {"satisfied": 30, "total": 30, "pods": 1}
    # zone x holds 3 pods of app=s, zone y none: skew 3, maxSkew 1 → excess 2
    assert soft["schedule_anyway_spread"] == {"constraints": 1, "excess": 2, "violated": 1, "max_skew": 3}
    assert soft["prefer_no_schedule"] == {"taints": 1, "pods": 1}


def test_a_pod_does_not_satisfy_its_own_preferred_affinity():
    index = _index(node("a"), pod("self", cpu="100m", labels={"app": "web"},
                                  spec=_preferred_pod_term("podAffinity", 10, "web")))
    plan = _plan(("default/self", "a"))
    soft = soft_metrics(index, final_state(index, plan), placed_pods(index, plan))
    assert soft["pod_affinity"] == {"satisfied": 0, "total": 10, "pods": 1}


@pytest.mark.parametrize(("reason", "group"), [
    ("0/5 nodes are available: 3 Insufficient cpu, 2 node(s) had untolerated taint {a: b}.",
     "Insufficient cpu; node(s) had untolerated taint {a: b}"),
    ("0/40 nodes are available: 40 Insufficient cpu. preemption: 0/40 nodes are available: 40 No preemption "
     "victims found for incoming pod.", "Insufficient cpu | preemption: No preemption victims found for incoming pod"),
    ("0/2 nodes are available: 2 Too many pods. no new claims to deallocate, preemption: 0/2 nodes are available: 2 "
     "Preemption is not helpful for scheduling.",
     "Too many pods | no new claims to deallocate; preemption: Preemption is not helpful for scheduling"),
    ('0/1 nodes are available: persistentvolumeclaim "x" not found. not found',
     'persistentvolumeclaim "x" not found | not found'),
    ("pod has unresolvable scheduling gates", "pod has unresolvable scheduling gates"),
    (None, "(no reason given)"),
])
def test_pending_reasons_are_grouped_without_node_counts(reason, group):
    assert reason_group(reason) == group


def test_diff_lists_pods_placed_by_one_engine_only_and_pods_on_different_nodes():
    g = _plan(("default/a", "n1"), ("default/b", None), ("default/c", "n1"), ("default/d", "n2"))
    c = _plan(("default/a", "n1"), ("default/b", "n2"), ("default/c", "n3"), ("default/d", None), engine="cpsat")
    assert plan_diff(g, c) == {
        "placed_only_by_greedy": ["default/d"], "placed_only_by_cpsat": ["default/b"],
        "different_node": [{"pod": "default/c", "greedy": "n1", "cpsat": "n3"}], "same_node": 1,
        "evicted_only_by_greedy": [], "evicted_only_by_cpsat": [], "preemptions": [],
    }


def test_diff_lists_each_preemptor_whose_node_or_victims_differ_with_both_engines_victims():
    g = _plan(("default/hi", "n1"), ("default/same", "n2"))
    g.evictions = [Eviction("default/lo-1", "n1", "default/hi", 0), Eviction("default/lo-2", "n1", "default/hi", 5),
                   Eviction("default/lo-3", "n2", "default/same", 0)]
    c = _plan(("default/hi", "n3"), ("default/same", "n2"), engine="cpsat")
    c.evictions = [Eviction("default/lo-4", "n3", "default/hi", 0, pdb_violation=True),
                   Eviction("default/lo-3", "n2", "default/same", 0)]
    (diff,) = plan_diff(g, c)["preemptions"]
    assert diff["pod"] == "default/hi"
    assert diff["greedy"] == {"node": "n1", "victims": [
        {"pod": "default/lo-1", "node": "n1", "priority": 0, "pdb_violation": False},
        {"pod": "default/lo-2", "node": "n1", "priority": 5, "pdb_violation": False}]}
    assert diff["cpsat"] == {"node": "n3", "victims": [
        {"pod": "default/lo-4", "node": "n3", "priority": 0, "pdb_violation": True}]}


def test_solver_metrics_sum_windows_and_read_the_placed_stage_of_each_component():
    stages = [{"stage": "placed", "status": "OPTIMAL", "objective": 5, "bound": 5.0},
              {"stage": "score", "status": "FEASIBLE", "objective": 90, "bound": 100.0},
              {"stage": "placed", "status": "FEASIBLE", "objective": 2, "bound": 4.0},
              {"stage": "score", "status": "OPTIMAL", "objective": 10, "bound": 10.0},
              {"stage": "placed (full domains)", "status": "OPTIMAL", "objective": 3, "bound": 3.0},
              {"stage": "score (full domains)", "status": "OPTIMAL", "objective": 12, "bound": 12.0}]
    plan = Plan("cpsat", windows=[
        {"status": "FEASIBLE", "objective": 102, "bound": 112, "greedy_objective": 95, "stages": stages},
        {"status": "FALLBACK", "objective": 0, "bound": 0, "greedy_objective": 0, "stages": []}])
    s = solver_metrics(plan)
    assert s["placed_objective"] == 8 and s["placed_bound"] == 8  # 5 + the full-domain retry's 3
    assert s["objective"] == 102 and s["bound"] == 112 and s["gap"] == pytest.approx(10 / 112, abs=1e-6)
    assert s["statuses"] == {"FALLBACK": 1, "FEASIBLE": 1}
    assert solver_metrics(Plan("greedy")) is None
