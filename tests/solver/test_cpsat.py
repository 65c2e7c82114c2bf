"""The CP-SAT engine: it places what greedy strands, keeps kube's hard rules, and never trades priority."""

import pytest
from kplace.solver.cpsat import CpsatOptions, schedule_cpsat
from kplace.solver.greedy import schedule_greedy
from kplace.solver.testing import build_state, node, pod
from kplace.solver.verify import verify_plan

OPTS = CpsatOptions(time_limit=5, workers=1)
ZONE = "topology.kubernetes.io/zone"


def _ts(i: int) -> str:
    return f"2024-01-01T00:{i // 60:02d}:{i % 60:02d}Z"


def _placed(plan) -> dict[str, str | None]:
    return {p.pod.split("/", 1)[1]: p.node for p in plan.placements}


def _on(plan) -> dict[str, str]:
    return {pod: n for pod, n in _placed(plan).items() if n is not None}


def _anti(app: str, key: str = "kubernetes.io/hostname") -> dict:
    return {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}]}}}


def _affinity(app: str, key: str = ZONE) -> dict:
    return {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}]}}}


def test_cpsat_places_the_big_pod_that_greedy_spreading_strands():
    state = build_state(
        [node("a", cpu="4"), node("b", cpu="4")],
        [pod("small-1", cpu="2", creation=_ts(1)), pod("small-2", cpu="2", creation=_ts(2)),
         pod("big", cpu="4", creation=_ts(3))],
    )
    greedy = _placed(schedule_greedy(state.index))
    cpsat = schedule_cpsat(state.index, options=OPTS)
    assert greedy["big"] is None
    placed = _placed(cpsat)
    assert all(placed.values())
    assert placed["small-1"] == placed["small-2"] != placed["big"]
    # every pod placed is proven (the window's status); the score stage is a surrogate and claims nothing
    assert cpsat.windows[0]["status"] == "OPTIMAL"
    assert cpsat.windows[0]["stages"][-1]["status"] == "FEASIBLE" and "surrogate" in cpsat.windows[0]["stages"][-1]


def test_a_window_greedy_leaves_short_starts_from_first_fit_decreasing_but_reports_greedys_count():
    state = build_state(
        [node("a", cpu="4"), node("b", cpu="4")],
        [pod("small-1", cpu="2", creation=_ts(1)), pod("small-2", cpu="2", creation=_ts(2)),
         pod("big", cpu="4", creation=_ts(3))],
    )
    placed = schedule_cpsat(state.index, options=OPTS).windows[0]["stages"][0]
    assert placed["status"] == "OPTIMAL (hint places every pod)"  # the biggest pod first leaves room for all
    assert (placed["objective"], placed["greedy"]) == (3, 2.0)


def test_when_the_search_finds_nothing_in_time_a_reordered_pass_that_beats_greedy_is_kept(monkeypatch):
    from kplace.solver.cpsat.component import ComponentResult, ComponentSolver

    def nothing_in_time(self, groups, *a, **k):
        return ComponentResult({}, False, 0, 0, 0, ok=False)
        yield  # a generator of searches (ComponentSolver.searches) that needs none

    monkeypatch.setattr(ComponentSolver, "searches", nothing_in_time)
    state = build_state(
        [node("a", cpu="4"), node("b", cpu="4")],
        [pod("small-1", cpu="2", creation=_ts(1)), pod("small-2", cpu="2", creation=_ts(2)),
         pod("big", cpu="4", creation=_ts(3))],
    )
    plan = schedule_cpsat(state.index, options=OPTS)
    assert plan.windows[0]["status"] == "FEASIBLE"
    assert all(_placed(plan).values())


def test_a_scoped_model_that_leaves_pods_out_reports_the_capacity_bound_not_its_own():
    # 35 one-CPU pods of distinct memory (one group each, scoped to a few nodes) for 30 one-CPU nodes: the
    # scoped model's bound proves nothing for the whole domains, capacity alone bounds the count by 30
    nodes = [node(f"n{i:02d}", cpu="1") for i in range(30)]
    pods = [pod(f"p{i:02d}", cpu="1", memory=f"{100 + i}Mi", creation=_ts(i)) for i in range(35)]
    plan = schedule_cpsat(build_state(nodes, pods).index, options=CpsatOptions(time_limit=5, workers=1, scope=1))
    scoped = [s for s in plan.windows[0]["stages"] if s.get("scoped") and s["stage"] == "placed"]
    assert scoped and all(s["bound"] == 30.0 for s in scoped)
    assert sum(1 for n in _placed(plan).values() if n) == 30


def test_one_pod_windows_that_strand_the_big_pod_give_way_to_the_biggest_first_pass_over_the_whole_run():
    state = build_state(
        [node("a", cpu="4"), node("b", cpu="4")],
        [pod("small-1", cpu="2", creation=_ts(1)), pod("small-2", cpu="2", creation=_ts(2)),
         pod("big", cpu="4", creation=_ts(3))],
    )
    plan = schedule_cpsat(state.index, options=CpsatOptions(time_limit=5, workers=1, window=1))
    assert all(_placed(plan).values())
    assert [w["status"] for w in plan.windows] == ["FEASIBLE"] * 3
    assert any("another order" in w for w in plan.warnings)


def test_a_higher_priority_pod_is_never_traded_for_several_lower_priority_ones():
    state = build_state(
        node("a", cpu="4"),
        [pod(f"low-{i}", cpu="1", priority=1, creation=_ts(i)) for i in range(4)],
        pod("high", cpu="3", priority=100, creation=_ts(9)),
    )
    placed = _placed(schedule_cpsat(state.index, options=OPTS))
    assert placed["high"] == "a"
    assert sum(1 for k, v in placed.items() if k.startswith("low") and v) == 1


def test_hostname_anti_affinity_puts_at_most_one_replica_per_node():
    state = build_state(
        [node(f"n{i}") for i in range(3)],
        [pod(f"web-{i}", cpu="100m", labels={"app": "web"}, spec=_anti("web"), creation=_ts(i)) for i in range(4)],
    )
    placed = _placed(schedule_cpsat(state.index, options=OPTS))
    nodes = [n for n in placed.values() if n]
    assert len(nodes) == 3 and len(set(nodes)) == 3
    unplaced = [p for p in schedule_cpsat(state.index, options=OPTS).placements if p.node is None]
    assert "didn't match pod anti-affinity rules" in unplaced[0].reason


def test_anti_affinity_to_a_running_pod_keeps_its_node_out_of_the_domain():
    state = build_state(
        [node("a"), node("b")],
        pod("db", node_name="a", labels={"app": "db"}),
        pod("web", cpu="100m", spec=_anti("db")),
    )
    assert _placed(schedule_cpsat(state.index, options=OPTS))["web"] == "b"


def test_the_first_pod_of_a_self_affine_group_seeds_one_zone_and_the_rest_follow():
    nodes = [node(f"{z}-{i}", cpu="1", labels={ZONE: z}) for z in ("z1", "z2") for i in range(2)]
    pods = [pod(f"cache-{i}", cpu="500m", labels={"app": "cache"}, spec=_affinity("cache"), creation=_ts(i))
            for i in range(6)]
    placed = _placed(schedule_cpsat(build_state(nodes, pods).index, options=OPTS))
    zones = {n.split("-")[0] for n in placed.values() if n}
    assert len(zones) == 1
    assert sum(1 for n in placed.values() if n) == 4  # one zone holds 4 of them


def test_required_affinity_follows_a_running_pod_into_its_zone():
    nodes = [node("z1-a", labels={ZONE: "z1"}), node("z2-a", labels={ZONE: "z2"})]
    state = build_state(nodes, pod("db", node_name="z2-a", labels={"app": "db"}),
                        pod("api", cpu="100m", spec=_affinity("db")))
    assert _placed(schedule_cpsat(state.index, options=OPTS))["api"] == "z2-a"


def test_do_not_schedule_spread_keeps_zone_skew_within_max_skew():
    nodes = [node(f"{z}-{i}", labels={ZONE: z}) for z in ("z1", "z2") for i in range(2)]
    spread = {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                                             "labelSelector": {"matchLabels": {"app": "s"}}}]}
    pods = [pod(f"s-{i}", cpu="100m", labels={"app": "s"}, spec=spread, creation=_ts(i)) for i in range(5)]
    bound = [pod(f"old-{i}", node_name="z1-0", labels={"app": "s"}) for i in range(2)]
    placed = _placed(schedule_cpsat(build_state(nodes, bound, pods).index, options=OPTS))
    per_zone = {"z1": 2, "z2": 0}
    for n in placed.values():
        if n:
            per_zone[n.split("-")[0]] += 1
    assert abs(per_zone["z1"] - per_zone["z2"]) <= 1
    assert sum(1 for n in placed.values() if n) == 5


def test_a_domain_already_over_max_skew_still_lets_the_group_fill_the_other_domains():
    # z1 holds 3 matching pods (> maxSkew 1); z2 has room for one more pod only. Pods may still go to z2 and
    # z3 (z3 up to min + 1 = 2), so all 3 are placed and none in z1: the skew rule binds only where pods land.
    nodes = [node("z1-0", labels={ZONE: "z1"}), node("z2-0", cpu="300m", labels={ZONE: "z2"}),
             node("z3-0", labels={ZONE: "z3"})]
    spread = {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                                             "labelSelector": {"matchLabels": {"app": "s"}}}]}
    bound = [pod(f"old-{i}", cpu="0", node_name="z1-0", labels={"app": "s"}) for i in range(3)]
    pods = [pod(f"s-{i}", cpu="200m", labels={"app": "s"}, spec=spread, creation=_ts(i)) for i in range(3)]
    plan = schedule_cpsat(build_state(nodes, bound, pods).index, options=OPTS)
    zones = sorted(n.split("-")[0] for n in _placed(plan).values() if n)
    assert zones == ["z2", "z3", "z3"]
    assert plan.windows[0]["stages"][0]["status"].startswith("OPTIMAL")


def test_two_pods_wanting_the_same_host_port_never_share_a_node():
    ports = {"containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 80, "hostPort": 8080}]}]}
    state = build_state([node("a"), node("b")], [pod(f"p{i}", spec=ports, creation=_ts(i)) for i in range(3)])
    placed = _placed(schedule_cpsat(state.index, options=OPTS))
    nodes = [n for n in placed.values() if n]
    assert sorted(nodes) == ["a", "b"]


def test_later_windows_see_the_placements_of_earlier_windows():
    state = build_state(node("a", cpu="2"), [pod(f"p{i}", cpu="1", creation=_ts(i)) for i in range(3)])
    plan = schedule_cpsat(state.index, options=CpsatOptions(window=1, time_limit=5, workers=1))
    assert len(plan.windows) == 3
    assert [p.node for p in plan.placements] == ["a", "a", None]


def test_pack_uses_as_few_nodes_as_bin_packing_allows():
    # items 3,3,2,2,2 into bins of 6: the optimum is 2 bins; LeastAllocated spreading uses more.
    nodes = [node(f"n{i}", cpu="6", memory="6Gi") for i in range(5)]
    sizes = [3, 3, 2, 2, 2]
    pods = [pod(f"p{i}", cpu=str(s), memory=f"{s}Gi", creation=_ts(i)) for i, s in enumerate(sizes)]
    state = build_state(nodes, pods)
    plan = schedule_cpsat(state.index, options=CpsatOptions(time_limit=5, workers=1, objective="pack"))
    used = {p.node for p in plan.placements if p.node}
    assert len(used) == 2
    greedy_used = {p.node for p in schedule_greedy(state.index).placements if p.node}
    assert len(greedy_used) > 2


def test_balance_lowers_the_peak_utilisation():
    nodes = [node("a", cpu="4"), node("b", cpu="4")]
    pods = [pod(f"p{i}", cpu="1", creation=_ts(i)) for i in range(4)]
    plan = schedule_cpsat(build_state(nodes, pods).index,
                          options=CpsatOptions(time_limit=5, workers=1, objective="balance"))
    per_node = {"a": 0, "b": 0}
    for p in plan.placements:
        per_node[p.node] += 1
    assert per_node == {"a": 2, "b": 2}


def test_the_same_seed_gives_the_same_plan():
    nodes = [node(f"n{i}", cpu=str(2 + i % 3)) for i in range(6)]
    pods = [pod(f"p{i}", cpu=f"{300 + 170 * (i % 5)}m", labels={"app": f"a{i % 3}"}, creation=_ts(i))
            for i in range(20)]
    state = build_state(nodes, pods)
    opts = CpsatOptions(time_limit=2, workers=2, seed=7)
    first = [(p.pod, p.node) for p in schedule_cpsat(state.index, options=opts).placements]
    second = [(p.pod, p.node) for p in schedule_cpsat(state.index, options=opts).placements]
    assert first == second


def test_identical_pods_become_one_group_and_independent_pools_separate_models():
    gpu = {"nodeSelector": {"pool": "gpu"}}
    nodes = [node("cpu-1", labels={"pool": "cpu"}), node("gpu-1", labels={"pool": "gpu"})]
    pods = [pod(f"web-{i}", cpu="100m", labels={"app": "web"}, spec={"nodeSelector": {"pool": "cpu"}},
                creation=_ts(i)) for i in range(5)]
    pods += [pod(f"train-{i}", cpu="100m", spec=gpu, creation=_ts(10 + i)) for i in range(3)]
    window = schedule_cpsat(build_state(nodes, pods).index, options=OPTS).windows[0]
    assert window["groups"] == 2
    assert window["components"] == 2


def test_a_window_that_needs_preemption_evicts_in_its_own_model_and_names_the_preemptor():
    state = build_state(
        node("a", cpu="2"),
        pod("victim", cpu="2", node_name="a", priority=0),
        pod("urgent", cpu="2", priority=1000),
    )
    plan = schedule_cpsat(state.index, options=OPTS)
    assert plan.windows[0]["status"] != "FALLBACK"
    assert [s["stage"] for s in plan.windows[0]["stages"]][:2] == ["placed", "disruption (victims by priority)"]
    assert _placed(plan)["urgent"] == "a"
    assert [(e.pod, e.node, e.preemptor) for e in plan.evictions] == [("default/victim", "a", "default/urgent")]
    assert next(p for p in plan.placements if p.pod == "default/urgent").nominated  # the binder evicts first
    assert verify_plan(state.index, plan) == []


def test_the_window_places_a_batch_of_preemptors_with_fewer_evictions_than_kube_one_pod_at_a_time():
    # kube puts "small" on the empty node (its best score), so "big" must evict "low"; the window puts "small"
    # beside "low" and "big" on the empty node: nobody is evicted
    state = build_state(
        node("a", cpu="2"), node("b", cpu="2"),
        pod("low", cpu="1", node_name="b", priority=10),
        pod("small", cpu="1", priority=1000, creation=_ts(0)),
        pod("big", cpu="2", priority=1000, creation=_ts(1)),
    )
    greedy = schedule_greedy(state.index)
    assert [e.pod for e in greedy.evictions] == ["default/low"]
    plan = schedule_cpsat(state.index, options=OPTS)
    assert _on(plan) == {"small": "b", "big": "a"} and plan.evictions == []


def test_preemption_in_the_window_evicts_the_fewest_pods_of_the_lowest_priority_it_can():
    state = build_state(
        node("a", cpu="2"), node("b", cpu="2"), node("c", cpu="2"),
        pod("mid", cpu="2", node_name="a", priority=500),
        pod("low-1", cpu="1", node_name="b", priority=10), pod("low-2", cpu="1", node_name="b", priority=10),
        pod("low-3", cpu="2", node_name="c", priority=10),
        pod("urgent", cpu="2", priority=1000),
    )
    plan = schedule_cpsat(state.index, options=OPTS)
    assert _on(plan) == {"urgent": "c"} and [e.pod for e in plan.evictions] == ["default/low-3"]
    assert verify_plan(state.index, plan) == []


def _pdb(name: str, labels: dict, allowed: int) -> dict:
    return {"kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": labels}, "maxUnavailable": allowed},
            "status": {"disruptionsAllowed": allowed, "expectedPods": 1, "currentHealthy": 1, "desiredHealthy": 1}}


def test_the_window_never_evicts_what_a_pdb_protects_unless_violations_are_allowed():
    objs = [node("a", cpu="2"), pod("guarded", cpu="2", node_name="a", priority=0, labels={"app": "db"}),
            _pdb("db", {"app": "db"}, 0), pod("urgent", cpu="2", priority=1000)]
    state = build_state(*objs)
    plan = schedule_cpsat(state.index, options=OPTS)
    assert _on(plan) == {} and plan.evictions == []
    allowed = schedule_cpsat(state.index, options=CpsatOptions(time_limit=2, allow_pdb_violations=True))
    assert _on(allowed) == {"urgent": "a"}
    assert [(e.pod, e.pdb_violation) for e in allowed.evictions] == [("default/guarded", True)]


def test_a_pod_that_may_not_preempt_evicts_nobody_in_the_window():
    state = build_state(node("a", cpu="2"), pod("victim", cpu="2", node_name="a", priority=0),
                        pod("polite", cpu="2", priority=1000, spec={"preemptionPolicy": "Never"}))
    plan = schedule_cpsat(state.index, options=OPTS)
    assert _on(plan) == {} and plan.evictions == []


@pytest.mark.parametrize("objective", ["default", "pack", "balance"])
def test_an_empty_window_is_not_an_error(objective):
    plan = schedule_cpsat(build_state(node("a")).index, options=CpsatOptions(objective=objective))
    assert plan.placements == [] and plan.windows == []


def test_windows_that_together_place_fewer_than_greedy_give_way_to_the_greedy_plan(monkeypatch):
    from kplace.solver.cpsat import window as window_mod

    state = build_state(node("a", cpu="2"), [pod(f"p{i}", cpu="1", creation=_ts(i)) for i in range(2)])
    real = window_mod.CpsatScheduler.solve_window

    def wasteful(self, pods, seconds):  # a first window that leaves its pod out although it fits
        window, placements, evictions = real(self, pods, seconds)
        if pods[0].name == "p0":
            self.state.forget(pods[0])
            placements[0].node = None
            placements[0].reason = "left out"
        return window, placements, evictions

    monkeypatch.setattr(window_mod.CpsatScheduler, "solve_window", wasteful)
    plan = schedule_cpsat(state.index, options=CpsatOptions(window=1, time_limit=5, workers=1))
    assert [p.node for p in plan.placements] == ["a", "a"]
    assert all(w["status"] == "FALLBACK" for w in plan.windows)
    assert "fewer pods than one greedy run" in plan.warnings[-1]


@pytest.mark.parametrize("executor", ["inprocess", "auto"])  # the greedy run here, or forked beside the windows
def test_windows_that_place_every_pod_but_score_below_one_greedy_run_give_way_to_greedys_plan(monkeypatch, executor):
    from kplace.solver.cpsat import whole_run
    from kplace.solver.cpsat import window as window_mod
    from kplace.solver.executors import usable_cores

    state = build_state([node("a", cpu="4"), node("b", cpu="4")],
                        [pod(f"p{i}", cpu="1", creation=_ts(i)) for i in range(2)])
    real = window_mod.CpsatScheduler.solve_window

    def piled(self, pods, seconds):  # every window's pod on a, where greedy spreads them
        window, placements, evictions = real(self, pods, seconds)
        for p, pl in zip(pods, placements, strict=True):
            self.state.forget(p)
            self.state.assume(p, self.index.node_id["a"])
            pl.node = "a"
        return window, placements, evictions

    forked = []
    real_result = whole_run.GreedyRun.result
    monkeypatch.setattr(whole_run.GreedyRun, "result", lambda self, timeout=None: (
        forked.append(self.forked), real_result(self, timeout))[1])
    monkeypatch.setattr(window_mod.CpsatScheduler, "solve_window", piled)
    plan = schedule_cpsat(state.index, options=CpsatOptions(window=1, time_limit=5, workers=1, executor=executor))
    greedy = schedule_greedy(state.index)
    assert forked[0] == (executor == "auto" and usable_cores() >= 2)
    assert plan.assignment() == greedy.assignment() == {"default/p0": "a", "default/p1": "b"}
    assert all(w["status"] == "FALLBACK" for w in plan.windows)
    assert "scores higher on the score measure" in plan.warnings[-1]
