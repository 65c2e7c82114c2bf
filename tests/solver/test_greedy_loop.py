"""The greedy loop's own mechanics: sampling, rotation, tie-break, queue order, messages."""

import numpy as np
import pytest
from kplace.solver.greedy import GreedyScheduler, heap_preorder_rank, num_feasible_nodes_to_find
from kplace.solver.testing import build_state, node, pod


@pytest.mark.parametrize(
    ("n", "pct", "want"),
    [
        (5, 0, 5),
        (99, 0, 99),
        (100, 0, 100),
        (500, 0, 230),
        (1000, 0, 420),
        (5000, 0, 500),
        (15000, 0, 750),
        (6000, 0, 300),
        (1000, 50, 500),
        (1000, 5, 100),
        (50000, 0, 2500),
    ],
    ids=lambda v: str(v),
)
def test_the_number_of_feasible_nodes_to_find_follows_kubes_adaptive_percentage(n, pct, want):
    assert num_feasible_nodes_to_find(pct, n) == want


def _go_heap_root(scores: list[int]) -> int:
    """Independent oracle: Go's container/heap.Init with Less = (a > b), then the root's original index."""
    h = list(enumerate(scores))

    def less(i, j):
        return h[i][1] > h[j][1]

    def down(i0, n):
        i = i0
        while True:
            j1 = 2 * i + 1
            if j1 >= n:
                break
            j = j1
            if j1 + 1 < n and less(j1 + 1, j1):
                j = j1 + 1
            if not less(j, i):
                break
            h[i], h[j] = h[j], h[i]
            i = j

    n = len(h)
    for i in range(n // 2 - 1, -1, -1):
        down(i, n)
    return h[0][0]


@pytest.mark.parametrize("seed", range(40))
def test_the_order_tie_break_picks_the_node_gos_heap_puts_on_top(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    scores = rng.integers(0, 4, size=n)  # few distinct values: many ties
    state = build_state(node("n0"))
    sched = GreedyScheduler(state.index, state=state)
    assert sched.select(scores) == _go_heap_root(scores.tolist())


def test_preorder_ranks_visit_parent_then_left_then_right_subtree():
    assert heap_preorder_rank(7).tolist() == [0, 1, 4, 2, 3, 5, 6]


def test_round_robin_start_spreads_equal_pods_over_equal_nodes_when_sampling():
    # 200 identical nodes: kube samples 100 feasible nodes per pod and rotates the start by 100 each time.
    nodes = [node(f"n{i:03d}") for i in range(200)]
    pods = [pod(f"p{i}", cpu="100m", memory="100Mi", creation=f"2024-01-01T00:00:{i:02d}Z") for i in range(2)]
    state = build_state(nodes, pods)
    sched = GreedyScheduler(state.index, state=state)
    first = sched.schedule_one(state.index.pending[0])
    assert sched.next_start == 100
    second = sched.schedule_one(state.index.pending[1])
    assert sched.next_start == 0
    assert first.node is not None and second.node is not None
    assert first.node < 100 <= second.node


def test_pods_are_taken_by_priority_then_creation_time():
    state = build_state(
        node("n1", cpu="1"),
        pod("late-high", cpu="1", priority=10, creation="2024-01-01T00:00:09Z"),
        pod("early-low", cpu="1", priority=0, creation="2024-01-01T00:00:01Z"),
        pod("early-high", cpu="1", priority=10, creation="2024-01-01T00:00:02Z"),
    )
    assert [p.name for p in state.index.pending] == ["early-high", "late-high", "early-low"]


def test_an_unplaceable_pod_gets_kubes_fit_error_message_with_sorted_counts():
    state = build_state(
        node("a", cpu="1"),
        node("b", cpu="1"),
        node("c", cpu="8", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
        pod("big", cpu="2"),
    )
    plan = GreedyScheduler(state.index, state=state).run()
    reason = plan.placements[0].reason
    assert plan.placements[0].node is None
    assert reason.startswith("0/3 nodes are available: 1 node(s) had untolerated taint")
    assert "2 Insufficient cpu" in reason
    assert reason.index("1 node(s)") < reason.index("2 Insufficient cpu")  # sorted as strings
    assert "preemption: 0/3 nodes are available:" in reason


@pytest.mark.parametrize(("taint_c", "preemption_part"), [
    (False, "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."),
    (True, "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
           "2 No preemption victims found for incoming pod."),
])
def test_preemptions_message_counts_only_the_statuses_some_node_has(taint_c, preemption_part):
    # Every node rejected as Unschedulable is tried and has no victims (nothing of lower priority runs);
    # nodes rejected as unresolvable are "not helpful", and kube prints that reason only when one such exists.
    taints = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}] if taint_c else None
    state = build_state(node("a", cpu="2"), node("b", cpu="2"), node("c", cpu="2", taints=taints),
                        *(pod(f"running-{n}", cpu="1", node_name=n) for n in "abc"), pod("big", cpu="2"))
    reason = GreedyScheduler(state.index, state=state).run().placements[0].reason
    assert reason.endswith(preemption_part)


def test_a_pod_for_another_scheduler_is_left_alone():
    state = build_state(node("a"), pod("other", spec={"schedulerName": "my-scheduler"}))
    plan = GreedyScheduler(state.index, state=state).run()
    assert plan.placements == []


def test_assumed_pods_use_up_capacity_for_the_next_pod():
    state = build_state(node("a", cpu="1"), [pod(f"p{i}", cpu="600m") for i in range(2)])
    plan = GreedyScheduler(state.index, state=state).run()
    assert [p.node for p in plan.placements] == ["a", None]
    assert "1 Insufficient cpu" in plan.placements[1].reason


def test_pods_with_resource_claims_are_scheduled_with_a_warning_that_dra_is_not_modelled():
    state = build_state(node("a"), pod("gpu", spec={"resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}]}))
    plan = GreedyScheduler(state.index, state=state).run()
    assert plan.placements[0].node == "a"
    assert plan.warnings == ["1 pending pod(s) use resource claims (DRA): the DynamicResources plugin is not "
                             "implemented, so those constraints were not checked"]


def test_a_crowded_clusters_preemptions_verify_where_nominated_nodes_go_to_others_and_placed_pods_are_preempted(
        tmp_path):
    """kube nominates a preemptor's node without binding to it (another pod may take the room first, the preemptor
    then lands elsewhere or nowhere), and a pod placed earlier in the run can be a later preemption's victim."""
    from kplace.instances.generators import generate
    from kplace.models.index import ClusterIndex
    from kplace.models.io import load_state
    from kplace.solver.output import dumps
    from kplace.solver.verify import verify_plan

    path = tmp_path / "crowded.json"
    path.write_text(dumps(generate("scale", nodes=300, pods=3000, seed=2, params={"load": "90", "pending": "600"})))
    index = ClusterIndex(load_state([str(path)]))
    plan = GreedyScheduler(index).run()
    node_of = {p.pod: p.node for p in plan.placements}
    assert any(node_of[e.preemptor] != e.node for e in plan.evictions)
    preempted = [p for p in plan.placements if p.reason and "after this run placed it there" in p.reason]
    assert preempted and all(p.node is None for p in preempted)
    assert not {p.pod for p in preempted} & {e.pod for e in plan.evictions}
    assert verify_plan(index, plan) == []


def test_kept_static_filter_verdicts_give_the_plan_and_reasons_of_filtering_every_node(monkeypatch):
    """From the second pod with the same node keys on, the greedy walk reuses the static filters' verdicts over
    the whole cluster; the plan (nodes, reasons, evictions) is the one a pass over every filter gives."""
    import kplace.solver.greedy as greedy

    taint = [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]
    nodes = [node(f"n{i:04d}", cpu="2", labels={"zone": f"z{i % 3}"}, taints=taint if i % 4 == 0 else None,
                  unschedulable=i % 10 == 7) for i in range(1200)]
    db = {"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}]}
    pods = [pod("running", cpu="2", node_name="n0001", priority=0)]
    pods += [pod(f"web-{i}", cpu="1500m", spec={"nodeSelector": {"zone": "z1"}}) for i in range(300)]
    pods += [pod(f"db-{i}", cpu="1", priority=5, spec=dict(db, nodeSelector={"zone": "z0"})) for i in range(250)]
    pods += [pod(f"huge-{i}", cpu="3", spec=db) for i in range(2)]

    def plan(min_nodes):
        monkeypatch.setattr(greedy, "STATIC_MIN_NODES", min_nodes)
        state = build_state(*nodes, *pods)
        scheduler = GreedyScheduler(state.index, state=state)
        result = scheduler.run()
        return result, [v for v in scheduler._static.values() if v is not None]

    kept, masks = plan(1000)
    full, none = plan(10**9)
    assert masks and not none
    assert [(p.pod, p.node, p.reason) for p in kept.placements] == [(p.pod, p.node, p.reason) for p in full.placements]
    assert kept.evictions == full.evictions
    assert sum(p.node is None for p in kept.placements) >= 2
    huge = next(p.reason for p in kept.placements if p.pod.endswith("huge-1"))
    assert huge.startswith("0/1200 nodes are available: 1080 Insufficient cpu, 120 node(s) were unschedulable.")
