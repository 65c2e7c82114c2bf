"""The greedy engine's cycle records (`solver.trace`), which the differential tests compare with the real
kube-scheduler's: they describe the plan the engine makes, and lockstep follows another scheduler's ties."""

from __future__ import annotations

from kplace.instances.generators import generate
from kplace.models.index import ClusterIndex
from kplace.solver.greedy import schedule_greedy
from kplace.solver.testing import build_snapshot, node, pod
from kplace.solver.trace import trace


def _index(objs) -> ClusterIndex:
    return ClusterIndex(build_snapshot(objs))


def test_each_pods_last_cycle_records_the_node_the_greedy_plan_chose_for_it():
    index = ClusterIndex(build_snapshot(generate("corners", seed=344)["items"]))
    plan = {p.pod: p.node for p in schedule_greedy(index).placements}
    cycles = list(trace(index))
    gated = {p.key for p in index.pending if p.pod.spec.scheduling_gates}
    assert list(dict.fromkeys(c["pod"] for c in cycles)) == [k for k in plan if k not in gated]
    assert len(cycles) > len(plan) - len(gated)  # this state's events requeue pods: they have later cycles
    last = {c["pod"]: c for c in cycles}
    for c in cycles:
        assert c["attempt"] == sum(1 for d in cycles[: cycles.index(c) + 1] if d["pod"] == c["pod"])
        if c["node"] is not None:
            assert c["node"] in c["top"] and c["node"] in c["feasible"] and c is last[c["pod"]]
    for key, c in last.items():
        assert (c["node"] or c["nominated"]) == plan[key]


def test_the_top_nodes_are_exactly_the_feasible_nodes_with_the_highest_total():
    index = _index([node(f"n{i}", cpu="4", memory="8Gi") for i in range(4)] + [pod("p", cpu="1", memory="1Gi")])
    (c,) = trace(index)
    best = max(c["scores"].values())
    assert sorted(c["top"]) == sorted(n for n, s in c["scores"].items() if s == best) == [f"n{i}" for i in range(4)]
    assert all(sum(c["plugin_scores"][n].values()) == c["scores"][n] for n in c["scores"])


def test_lockstep_takes_the_other_schedulers_node_when_it_is_tied_at_the_top_and_ignores_it_otherwise():
    objs = [node("n0", cpu="4", memory="8Gi"), node("n1", cpu="4", memory="8Gi"), node("small", cpu="1", memory="1Gi"),
            pod("p", cpu="500m", memory="512Mi")]
    index = _index(objs)
    (own,) = trace(index)
    other = next(n for n in own["top"] if n != own["node"])
    (tied,) = trace(index, follow=lambda p: other)
    assert tied["node"] == other and tied["lockstep"]
    (lower,) = trace(index, follow=lambda p: "small")
    assert lower["node"] == own["node"] and not lower["lockstep"]


def test_a_pod_that_fits_nowhere_records_each_nodes_failing_plugin_and_kubes_message():
    index = _index([node("n0", cpu="1", memory="1Gi", taints=[{"key": "k", "effect": "NoSchedule"}]),
                    node("n1", cpu="4", memory="4Gi"), pod("busy", cpu="3", memory="1Gi", node_name="n1"),
                    pod("p", cpu="2", memory="1Gi")])
    (c,) = trace(index)
    assert c["node"] is None and c["feasible"] == [] and c["top"] == []
    assert c["filters"]["n0"]["plugin"] == "TaintToleration" and c["filters"]["n0"]["code"] == \
        "UnschedulableAndUnresolvable"
    assert c["filters"]["n1"] == {"code": "Unschedulable", "plugin": "NodeResourcesFit",
                                  "reasons": ["Insufficient cpu"]}
    assert c["message"].startswith("0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint")
