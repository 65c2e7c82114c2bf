"""`plan_rebalance`: goals, budgets, never-move rules, safe waves, repair, no oscillation, JSON shape."""

import pytest
from kplace.models.errors import ConfigError
from kplace.solver.rebalance.policy import Policy, Thresholds, load_policy

from .helpers import apply_plan, node, owned, pdb, pod, run

ZONE = "topology.kubernetes.io/zone"


def _thin(n_nodes=4, n_pods=6, cpu="1", owner="web", node_cpu="4", **kw):
    nodes = [node(f"n{i}", cpu=node_cpu) for i in range(n_nodes)]
    pods = [owned(f"{owner}-{i}", owner, cpu=cpu, node_name=f"n{i % n_nodes}", **kw) for i in range(n_pods)]
    return nodes + pods


def _moved(plan):
    return {m["pod"].split("/")[1]: (m["from"], m["to"]) for m in plan["moves"]}


def test_pack_empties_the_least_used_nodes_with_explicit_destinations():
    objs = _thin()
    plan = run(objs, goal="pack")
    assert plan["before"]["non_empty_nodes"] == 4
    assert plan["after"]["non_empty_nodes"] == 2
    assert set(_moved(plan)) == {"web-2", "web-3"}  # n2 and n3 hold one pod each: the cheapest to empty
    assert all(m["to"] in ("n0", "n1") for m in plan["moves"])


def test_the_json_plan_has_goal_moves_placements_before_and_after():
    plan = run([*_thin(), owned("new", "api", cpu="1")], goal="pack")
    assert plan["goal"] == "pack"
    for m in plan["moves"]:
        assert set(m) >= {"pod", "from", "to", "wave"} and m["from"] != m["to"] and m["wave"] >= 1
    assert plan["placements"] == [{"pod": "default/new", "node": plan["placements"][0]["node"], "wave": 1}]
    assert plan["placements"][0]["node"] is not None
    for side in ("before", "after"):
        assert {"non_empty_nodes", "utilisation_spread_percent", "violations"} <= set(plan[side])
    assert plan["dry_run"] is True and "simulated" in plan


def test_running_again_on_the_result_of_a_plan_proposes_nothing_new():
    objs = _thin(6, 9)
    for goal in ("pack", "all"):  # balance proposes nothing on this state, so it would prove nothing here
        first = run(objs, goal=goal)
        assert first["moves"], goal
        again = run(apply_plan(objs, first), goal=goal)
        assert again["moves"] == [], goal


def test_balance_minimises_the_peak_without_thresholds():
    objs = [node("a", cpu="4"), node("b", cpu="4")] + [owned(f"w{i}", cpu="1", node_name="a") for i in range(4)]
    plan = run(objs, goal="balance")
    assert plan["before"]["peak_utilisation_percent"] == 100
    assert plan["after"]["peak_utilisation_percent"] == 50
    assert len(plan["moves"]) == 2


def test_balance_with_thresholds_moves_only_what_brings_nodes_under_target_thresholds():
    policy = Policy(balance=Thresholds({"cpu": 20}, {"cpu": 60}))
    objs = [node("a", cpu="10"), node("b", cpu="10"), node("c", cpu="10")]
    objs += [owned(f"w{i}", cpu="1", node_name="a") for i in range(8)]  # a at 80%: over 60%
    objs += [owned(f"v{i}", "api", cpu="1", node_name="b") for i in range(5)]  # b at 50%: fine
    plan = run(objs, policy, goal="balance")
    assert len(plan["moves"]) == 2  # 80% → 60%: exactly two pods
    assert all(m["from"] == "a" for m in plan["moves"])
    assert plan["after"]["overutilised_nodes"] == 0 and plan["before"]["overutilised_nodes"] == 1


def test_balance_in_deviation_mode_uses_the_mean_plus_target_thresholds():
    policy = Policy(balance=Thresholds({"cpu": 10}, {"cpu": 10}, deviation=True))
    objs = [node("a", cpu="10"), node("b", cpu="10")] + [owned(f"w{i}", cpu="1", node_name="a") for i in range(6)]
    plan = run(objs, policy, goal="balance")  # mean 30%: over 40% is too much, so a goes 60% → 40%
    assert len(plan["moves"]) == 2


def test_max_moves_caps_the_plan():
    plan = run(_thin(6, 9), goal="pack", max_moves=1)
    assert len(plan["moves"]) == 1


def test_max_moves_per_node_caps_moves_off_each_node():
    objs = [node("a", cpu="8"), node("b", cpu="8")] + [owned(f"w{i}", cpu="1", node_name="a") for i in range(3)]
    objs += [owned(f"v{i}", "api", cpu="1", node_name="b") for i in range(2)]
    assert len(run(objs, goal="pack")["moves"]) == 2
    assert run(objs, goal="pack", max_moves_per_node=1)["moves"] == []  # emptying b needs two moves off it


def test_max_moves_per_namespace_caps_each_namespace():
    objs = [node("a", cpu="8"), node("b", cpu="8")]
    objs += [owned(f"w{i}", cpu="1", node_name="a", namespace="one") for i in range(3)]
    objs += [owned(f"v{i}", cpu="1", node_name="b", namespace="two") for i in range(2)]
    plan = run(objs, goal="pack", max_moves_per_namespace=1)
    assert plan["moves"] == []


def test_min_gain_drops_moves_that_gain_too_little_per_move():
    objs = _thin(4, 6)
    assert len(run(objs, goal="pack", min_gain=0.5)["moves"]) == 2  # two nodes for two moves: 1 per move
    assert run(objs, goal="pack", min_gain=1.5)["moves"] == []


@pytest.mark.parametrize("case, pod_kw, reason", [
    ("a DaemonSet pod", {"kind": "DaemonSet"}, "DaemonSet pod"),
    ("a pod with emptyDir", {"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}}, "local storage"),
    ("a pod with hostPath", {"spec": {"volumes": [{"name": "v", "hostPath": {"path": "/x"}}]}}, "local storage"),
    ("a system-critical pod", {"spec": {"priorityClassName": "system-cluster-critical"}}, "system-critical"),
    ("a pod annotated evict false", {"annotations": {"descheduler.alpha.kubernetes.io/evict": "false"}},
     "evict: false"),
    ("a pod not safe to evict", {"annotations": {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}},
     "safe-to-evict"),
    ("a mirror pod", {"annotations": {"kubernetes.io/config.mirror": "abc"}}, "mirror"),
])
def test_never_move_rules_keep_the_pod_in_place(case, pod_kw, reason):
    objs = [node("a", cpu="8"), node("b", cpu="8"), owned("big", "x", cpu="2", node_name="a"),
            owned("lonely", "y", cpu="1", node_name="b", **pod_kw)]
    plan = run(objs, goal="pack")
    assert "lonely" not in _moved(plan), case
    assert any(reason in r for r in plan["never_moved"]), plan["never_moved"]


def test_a_bare_pod_and_a_terminating_pod_never_move():
    term = owned("leaving", "y", cpu="1", node_name="b")
    term["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    for lonely, why in ((pod("bare", cpu="1", node_name="b"), "no controller"), (term, "terminating")):
        plan = run([node("a", cpu="8"), node("b", cpu="8"), owned("big", "x", cpu="2", node_name="a"), lonely])
        assert lonely["metadata"]["name"] not in _moved(plan) and any(why in r for r in plan["never_moved"])


def test_the_evict_true_annotation_and_the_policy_let_a_pod_move():
    objs = [node("a", cpu="8"), node("b", cpu="8"), owned("big", "x", cpu="2", node_name="a"),
            pod("bare", cpu="1", node_name="b")]
    objs[-1]["metadata"]["annotations"] = {"descheduler.alpha.kubernetes.io/evict": "true"}
    assert len(run(objs)["moves"]) == 1


def test_daemonset_pods_do_not_keep_a_node_from_counting_as_empty():
    objs = _thin(2, 2) + [owned(f"ds-{i}", "logs", kind="DaemonSet", cpu="100m", node_name=f"n{i}") for i in range(2)]
    plan = run(objs, goal="pack")
    assert plan["before"]["non_empty_nodes"] == 2 and plan["after"]["non_empty_nodes"] == 1


def test_a_pdb_that_allows_no_disruption_pins_its_pods():
    objs = [*_thin(2, 2), pdb("web", "web", min_available=2)]
    plan = run(objs, goal="pack")
    assert plan["moves"] == []
    assert "PodDisruptionBudget allows no disruption" in plan["never_moved"]


def test_each_wave_keeps_every_pdb_at_or_above_zero_disruptions_allowed():
    objs = [node(f"n{i}", cpu="4") for i in range(6)]
    objs += [owned(f"web-{i}", cpu="1", node_name=f"n{i}") for i in range(6)]
    objs += [pdb("web", "web", max_unavailable=1)]
    plan = run(objs, goal="pack", policy=Policy(owner_max_unavailable=100))
    assert len(plan["moves"]) >= 4
    waves = [sum(1 for m in plan["moves"] if m["wave"] == w) for w in range(1, len(plan["waves"]) + 1)]
    assert max(waves) == 1  # one disruption allowed: one move per wave


@pytest.mark.parametrize("status", [True, False], ids=["exported-status", "computed"])
def test_a_pending_pod_a_pdb_selects_opens_its_budget_once_an_earlier_wave_places_it(status):
    """What an interrupted `--apply` leaves: one replica evicted, its replacement pending, so minAvailable 3 of 4
    allows no disruption now (3 healthy); placed in wave 1, it makes 4 healthy, so each later wave may move one."""
    objs = [node(f"n{i}", cpu="4") for i in range(4)]
    objs += [owned(f"web-{i}", cpu="1", node_name=f"n{i}") for i in (1, 2, 3)] + [owned("web-new", cpu="1")]
    guard = pdb("web", "web", min_available=3)
    if status:  # as the disruption controller leaves it
        guard["status"] = {"currentHealthy": 3, "desiredHealthy": 3, "disruptionsAllowed": 0, "expectedPods": 4}
    plan = run([*objs, guard], goal="pack")
    assert [(p["pod"], p["wave"]) for p in plan["placements"]] == [("default/web-new", 1)]
    assert len(plan["moves"]) == 2 and sorted(m["wave"] for m in plan["moves"]) == [2, 3], plan["dropped"]
    assert plan["after"]["non_empty_nodes"] == 1
    assert {m["to"] for m in plan["moves"]} == {plan["placements"][0]["node"]}


def test_a_pending_pod_a_pdb_selects_opens_no_budget_when_the_plan_cannot_place_it():
    objs = [node(f"n{i}", cpu="4") for i in range(4)]
    objs += [owned(f"web-{i}", cpu="1", node_name=f"n{i}") for i in (1, 2, 3)] + [owned("web-new", cpu="8")]
    plan = run([*objs, pdb("web", "web", min_available=3)], goal="pack")
    assert plan["placements"][0]["node"] is None
    assert plan["moves"] == [] and plan["after"]["non_empty_nodes"] == 3
    assert {d["reason"] for d in plan["dropped"]} <= {"PodDisruptionBudget default/web allows no more disruptions"}


def test_the_owner_cap_limits_moves_of_one_workload_per_wave():
    objs = [node(f"n{i}", cpu="8") for i in range(8)] + [owned(f"web-{i}", cpu="1", node_name=f"n{i}")
                                                        for i in range(8)]
    plan = run(objs, goal="pack")  # 25% of 8 replicas: 2 per wave
    per_wave = [sum(1 for m in plan["moves"] if m["wave"] == w) for w in range(1, len(plan["waves"]) + 1)]
    assert len(plan["moves"]) == 7 and max(per_wave) == 2


def test_within_a_wave_a_moving_pod_counts_on_both_its_old_and_new_node():
    # a and b are full; c has room for one pod. Packing onto b needs room that only frees once a pod leaves b.
    objs = [node("a", cpu="2"), node("b", cpu="2"), node("c", cpu="2")]
    objs += [owned("x", "x", cpu="1", node_name="a"), owned("y", "y", cpu="1", node_name="b"),
             owned("z", "z", cpu="2", node_name="c")]
    plan = run(objs, goal="pack")
    assert len(plan["moves"]) == 1
    # Now a chain: to empty c, its pod must go to a node that frees up by another move in an earlier wave.
    objs = [node("a", cpu="4"), node("b", cpu="4"), node("c", cpu="4")]
    objs += [owned("a1", "p", cpu="3", node_name="a"), owned("b1", "q", cpu="1", node_name="b"),
             owned("b2", "r", cpu="2", node_name="b"), owned("c1", "s", cpu="2", node_name="c")]
    plan = run(objs, goal="pack", time_limit=5)
    waves = {m["pod"].split("/")[1]: m["wave"] for m in plan["moves"]}
    assert plan["after"]["non_empty_nodes"] == 2
    for w in range(1, len(plan["waves"]) + 1):  # capacity with both copies counted, per wave
        for n, alloc in (("a", 4000), ("b", 4000), ("c", 4000)):
            cpu = {"a1": 3000, "b1": 1000, "b2": 2000, "c1": 2000}
            start = {"a1": "a", "b1": "b", "b2": "b", "c1": "c"}
            where = dict(start)
            for m in plan["moves"]:
                if m["wave"] < w:
                    where[m["pod"].split("/")[1]] = m["to"]
            arriving = [m["pod"].split("/")[1] for m in plan["moves"] if m["wave"] == w and m["to"] == n]
            load = sum(cpu[p] for p, at in where.items() if at == n) + sum(cpu[p] for p in arriving)
            assert load <= alloc, (w, n, waves)


def test_repair_moves_pods_off_nodes_whose_taint_they_do_not_tolerate():
    objs = [node("a", taints=[{"key": "gpu", "effect": "NoSchedule"}]), node("b")]
    objs += [owned("w", cpu="1", node_name="a")]
    assert run(objs, goal="pack")["moves"] == []  # not a repair goal: left alone
    plan = run(objs, goal="repair")
    assert _moved(plan) == {"w": ("a", "b")}
    assert plan["before"]["violations_by_rule"] == {"taint": 1} and plan["after"]["violations"] == 0


def test_repair_moves_pods_off_nodes_their_required_node_affinity_rejects():
    aff = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["fast"]}]}]}}}}
    objs = [node("a", labels={"pool": "slow"}), node("b", labels={"pool": "fast"}),
            owned("w", cpu="1", node_name="a", spec=aff)]
    plan = run(objs, goal="repair")
    assert _moved(plan) == {"w": ("a", "b")}
    assert plan["before"]["violations_by_rule"] == {"node-affinity": 1}


def test_repair_separates_pods_that_violate_required_anti_affinity():
    anti = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}}
    objs = [node("a"), node("b"), owned("db-0", "db", cpu="1", node_name="a", spec=anti),
            owned("db-1", "db", cpu="1", node_name="a", spec=anti)]
    plan = run(objs, goal="repair")
    assert len(plan["moves"]) == 1 and plan["moves"][0]["to"] == "b"
    assert plan["after"]["violations"] == 0


def test_repair_rebalances_a_do_not_schedule_spread_that_is_now_skewed():
    spread = {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                                             "labelSelector": {"matchLabels": {"app": "web"}}}]}
    objs = [node("a", labels={ZONE: "z1"}), node("b", labels={ZONE: "z2"})]
    objs += [owned(f"web-{i}", cpu="1", node_name="a", spec=spread) for i in range(3)]
    plan = run(objs, goal="repair")
    assert plan["before"]["violations_by_rule"].get("spread", 0) > 0
    assert plan["after"]["violations"] == 0
    assert [m["to"] for m in plan["moves"]] == ["b"]


def test_pending_pods_are_placed_in_the_same_model_and_moves_make_room():
    objs = [node("a", cpu="4"), node("b", cpu="4"), owned("x", "x", cpu="2", node_name="a"),
            owned("y", "y", cpu="2", node_name="b"), owned("big", "big", cpu="4")]
    plan = run(objs, goal="pack")
    assert plan["placements"][0]["node"] is not None
    assert len(plan["moves"]) == 1
    assert plan["placements"][0]["wave"] > plan["moves"][0]["wave"]  # the room is made first


def test_a_plan_never_introduces_a_violation_in_any_wave():
    anti = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}}
    objs = [node(f"n{i}", cpu="4") for i in range(4)] + [owned(f"web-{i}", cpu="1", node_name=f"n{i}", spec=anti)
                                                         for i in range(3)]
    objs += [owned("api-0", "api", cpu="1", node_name="n3")]
    plan = run(objs, goal="pack")
    assert plan["after"]["violations"] == 0
    assert plan["after"]["non_empty_nodes"] == 3  # the web replicas stay one per node


def test_a_bad_policy_file_is_an_error_naming_the_file_and_field(tmp_path):
    bad = tmp_path / "policy.yaml"
    bad.write_text("kind: RebalancePolicy\nevictor:\n  evictDaemonSetPods: maybe\n")
    with pytest.raises(ConfigError, match=r"policy.yaml: evictor.evictDaemonSetPods: must be true or false"):
        load_policy(str(bad))
    bad.write_text("kind: RebalancePolicy\nbalance:\n  thresholds: {cpu: 70}\n  targetThresholds: {cpu: 50}\n")
    with pytest.raises(ConfigError, match="above targetThresholds"):
        load_policy(str(bad))
    bad.write_text("kind: RebalancePolicy\nsurprise: 1\n")
    with pytest.raises(ConfigError, match="surprise: unknown field"):
        load_policy(str(bad))


def test_a_descheduler_policy_is_read_for_its_evictor_and_thresholds(tmp_path):
    f = tmp_path / "d.yaml"
    f.write_text("""apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  pluginConfig:
  - name: DefaultEvictor
    args: {evictDaemonSetPods: true, evictLocalStoragePods: true}
  - name: LowNodeUtilization
    args: {thresholds: {cpu: 20}, targetThresholds: {cpu: 50}, useDeviationThresholds: true}
""")
    p = load_policy(str(f))
    assert p.evictor.evict_daemonset and p.evictor.evict_local_storage
    assert p.balance is not None and p.balance.deviation and p.balance.target == {"cpu": 50.0}


def test_the_plan_reports_the_score_measure_of_what_it_moves_before_and_after():
    plan = run(_thin(), goal="pack")
    score = plan["score"]
    assert score["pods"] == len(plan["moves"]) == score["after"]["pods"] == score["moved_pods_before"]["pods"]
    assert score["after"]["total"] > 0 and "NodeResourcesFit" in score["after"]["per_plugin"]
    # packing fills nodes, so kube's LeastAllocated scores the moved pods lower than where they were
    fit = "NodeResourcesFit"
    assert score["after"]["per_plugin"][fit] < score["moved_pods_before"]["per_plugin"][fit]
