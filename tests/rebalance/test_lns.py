"""The neighbourhood search (`rebalance.lns`): big clusters packed a few nodes at a time, within zones."""

from __future__ import annotations

import pytest
from kplace.models.errors import InputError
from kplace.solver.framework.config import default_config
from kplace.solver.rebalance import Policy, RebalanceOptions, plan_rebalance
from kplace.solver.rebalance.plan import LNS_AUTO_NODES, neighbourhood_size

from .helpers import build_index, node, owned

ZONE = "topology.kubernetes.io/zone"
ANTI = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "spread"}}, "topologyKey": "kubernetes.io/hostname"}]}}


@pytest.fixture(scope="module")
def index():
    """Three zones of 8 nodes of 8 CPU, each with a 1-CPU pod of one of 3 ReplicaSets, every other one with a pod
    of a fourth whose pods cannot share a node (hostname anti-affinity)."""
    objects = []
    for z in range(3):
        for i in range(8):
            name = f"n{z}-{i}"
            objects.append(node(name, cpu="8", labels={"kubernetes.io/hostname": name, ZONE: f"z{z}"}))
            objects.append(owned(f"a-{name}", f"a{i % 3}", cpu="1", node_name=name))
            if i % 2 == 0:
                objects.append(owned(f"b-{name}", "spread", cpu="1", node_name=name, spec={"affinity": ANTI}))
    return build_index(*objects)


def _plan(index, **kw):
    progress = []
    opts = RebalanceOptions(goal=kw.pop("goal", "pack"), time_limit=kw.pop("time_limit", 8), workers=1,
                            neighbourhood=kw.pop("neighbourhood", 12), on_progress=progress.append, **kw)
    return plan_rebalance(index, default_config(), Policy(), opts), progress


def test_the_search_empties_nodes_moving_pods_only_within_their_zone_and_reports_its_rounds(index):
    plan, progress = _plan(index)
    assert plan["after"]["non_empty_nodes"] < plan["before"]["non_empty_nodes"]
    assert plan["model"]["goal_after"] < plan["model"]["goal_before"]
    zone = {n.metadata.name: n.metadata.labels[ZONE] for n in index.nodes}
    assert plan["moves"] and all(zone[m["from"]] == zone[m["to"]] for m in plan["moves"])
    assert plan["violations_after"] == []
    after = {}
    for m in plan["moves"]:
        after[m["pod"]] = m["to"]
    spread = [after.get(f"default/b-{n.metadata.name}", n.metadata.name) for n in index.nodes[::2]]
    assert len(set(spread)) == len(spread)  # the anti-affinity holds
    assert progress and progress[-1]["neighbourhoods"] >= len(progress) and progress[-1]["moves"] > 0
    assert [p["round"] for p in progress] == list(range(1, len(progress) + 1))


def test_the_search_keeps_the_move_budgets(index):
    plan, _ = _plan(index, max_moves=5, max_moves_per_node=2)
    assert 0 < len(plan["moves"]) <= 5
    per_node = {}
    for m in plan["moves"]:
        per_node[m["from"]] = per_node.get(m["from"], 0) + 1
    assert max(per_node.values()) <= 2


def test_the_same_seed_gives_the_same_moves(index):
    a, _ = _plan(index, time_limit=3)
    b, _ = _plan(index, time_limit=3)
    assert a["moves"] == b["moves"]


def test_a_goal_the_search_does_not_implement_is_a_clear_input_error(index):
    with pytest.raises(InputError, match="balance is not implemented as a neighbourhood search"):
        _plan(index, goal="balance")


def test_big_clusters_get_the_search_and_small_ones_the_global_model(index):
    from types import SimpleNamespace

    big = SimpleNamespace(nodes=range(LNS_AUTO_NODES + 1))
    assert neighbourhood_size(index, RebalanceOptions()) == 0
    assert neighbourhood_size(big, RebalanceOptions()) > 0
    assert neighbourhood_size(big, RebalanceOptions(neighbourhood=0)) == 0
    assert neighbourhood_size(index, RebalanceOptions(neighbourhood=7)) == 7


def test_a_process_pool_solves_a_rounds_neighbourhoods_to_the_same_moves(index):
    here, _ = _plan(index, time_limit=3, executor="inprocess")
    pooled, _ = _plan(index, time_limit=3, executor="pool")
    assert here["moves"] and pooled["moves"] == here["moves"]


def test_a_wall_clock_deadline_ends_the_search_with_the_moves_found_so_far_and_says_so(index, monkeypatch):
    """The wall clock jumps past the deadline after the first round: no round follows, its moves are kept."""
    import time

    jump = [0.0]
    real = time.perf_counter
    monkeypatch.setattr(time, "perf_counter", lambda: real() + jump[0])

    def after_round(progress):
        jump[0] = 1e6

    opts = RebalanceOptions(goal="pack", time_limit=60, workers=1, neighbourhood=12, on_progress=after_round,
                            deadline=30.0, executor="inprocess")
    plan = plan_rebalance(index, default_config(), Policy(), opts)
    full, _ = _plan(index, time_limit=60, executor="inprocess")
    stage = plan["model"]["stages"][0]
    assert stage["rounds"] == 1 and stage["deadline"] is True
    assert stage["rounds"] < full["model"]["stages"][0]["rounds"]
    assert plan["moves"] and plan["violations_after"] == []
    assert any("deadline passed" in w for w in plan["warnings"])
    assert "deadline" not in full["model"]["stages"][0]


def test_the_deadline_counts_from_the_start_of_the_search_not_from_the_checks_before_it(index, monkeypatch):
    """The whole-state check before the search is slow on a big cluster: here the clock jumps past the deadline
    while it runs, and the search still gets its rounds; the plan times the checks, the search and the waves, and
    records the goal after each round."""
    import time

    from kplace.solver.rebalance import check

    jump = [0.0]
    real_clock, real_violations = time.perf_counter, check.StateChecker.violations
    monkeypatch.setattr(time, "perf_counter", lambda: real_clock() + jump[0])

    def slow_first_check(self, assign):
        if not self._held:
            jump[0] += 1e6
        return real_violations(self, assign)

    monkeypatch.setattr(check.StateChecker, "violations", slow_first_check)
    opts = RebalanceOptions(goal="pack", time_limit=8, workers=1, neighbourhood=12, deadline=30.0,
                            executor="inprocess")
    plan = plan_rebalance(index, default_config(), Policy(), opts)
    stage = plan["model"]["stages"][0]
    assert "deadline" not in stage and plan["moves"]
    assert plan["timings"]["checks_before"] >= 1e6 > plan["timings"]["search"]
    goals = [p["goal"] for p in stage["progress"]]
    assert len(goals) == stage["rounds"] and goals[-1] == plan["model"]["goal_after"]
    assert goals == sorted(goals, reverse=True) and goals[0] < plan["model"]["goal_before"]
