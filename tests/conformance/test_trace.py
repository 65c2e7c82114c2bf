"""The greedy engine's cycle records (`solver.trace`), which the differential tests compare with the real
kube-scheduler's: they describe the plan the engine makes, and lockstep follows another scheduler's ties."""

from __future__ import annotations

from kplace.instances.generators import generate
from kplace.models.index import ClusterIndex
from kplace.solver.greedy import schedule_greedy
from kplace.solver.oracle import lockstep
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


def _crowded() -> ClusterIndex:
    """120 full nodes, each with one victim of priority 5 but n110, whose victim has priority 1 (the best
    candidate), and a pending pod of priority 10: 120 potential nodes, of which kube's walk checks 100."""
    objs = [node(f"n{i:03d}", cpu="1", memory="1Gi") for i in range(120)]
    objs += [pod(f"v{i:03d}", cpu="1", node_name=f"n{i:03d}", priority=1 if i == 110 else 5) for i in range(120)]
    return _index([*objs, pod("p", cpu="1", priority=10)])


def test_the_candidate_walk_follows_the_order_and_offset_the_other_scheduler_reports():
    index = _crowded()
    names = [f"n{i:03d}" for i in range(120)]
    own, bound = trace(index)  # the victim's deletion requeues p: its second cycle binds it to the nominated node
    assert own["nominated"] == "n000" and own["preemption_walk"] == {"offset": 0, "nodes": names}  # n110 unwalked
    assert bound["node"] == "n000" and bound["preemption_walk"] is None
    walk = {"offset": 50, "nodes": names}  # from 50 the walk's 100 nodes reach n110
    shifted, _ = trace(index, follow=lambda p: {"node": None, "nominated": None, "preemption_walk": walk})
    assert shifted["nominated"] == "n110" and shifted["victims"] == ["default/v110"]
    assert shifted["preemption_walk"] == walk
    walk = {"offset": 0, "nodes": names[::-1]}  # kube's map order, reversed: n110 is the 10th
    reordered, _ = trace(index, follow=lambda p: {"preemption_walk": walk})
    assert reordered["nominated"] == "n110" and reordered["preemption_walk"] == walk


def test_lockstep_follows_kubes_walk_and_reports_one_over_other_potential_nodes():
    index = _crowded()
    names = [f"n{i:03d}" for i in range(120)]
    walk = {"offset": 50, "nodes": names}
    kube = list(trace(index, follow=lambda p: {"preemption_walk": walk}))  # a kube that walked from 50
    assert kube[0]["nominated"] == "n110" and kube[1]["node"] == "n110"
    assert lockstep(index, None, kube).differences == []
    other = [{**kube[0], "preemption_walk": {"offset": 50, "nodes": names[1:]}}, kube[1]]  # kube's lacks n000
    differences = lockstep(index, None, other).differences
    assert ('default/p: preemption_walk: {"nodes": {"kplace": 120, "kube": 119}, "offset": {"kplace": 0, "kube": 50}, '
            '"only here": {"kplace": ["n000"], "kube": []}}') in differences
    assert 'default/p: nominated: kube "n110" vs kplace "n000"' in differences  # greedy walked its own from 0
