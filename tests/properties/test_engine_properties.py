"""Property tests: on small random states, both engines' plans pass the independent verifier, CP-SAT places at
least what greedy places (lexicographically by priority) and, placing the same, scores at least greedy's measure
(which a from-scratch recomputation confirms), and CP-SAT is deterministic for a seed."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from kplace.models.index import ClusterIndex
from kplace.models.plan import Plan
from kplace.solver.cpsat import CpsatOptions, schedule_cpsat
from kplace.solver.greedy import schedule_greedy
from kplace.solver.plugins.volumebinding.testdata import pv, pvc, storage_class
from kplace.solver.testing import build_snapshot, node, pod
from kplace.solver.verify import verify_plan

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
TAINT = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}
APPS = ("a", "b", "c")

SETTINGS = settings(max_examples=50, deadline=None, derandomize=True, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _term(app: str, key: str) -> dict:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}


@st.composite
def pod_spec(draw, zones: list[str]) -> dict:
    spec: dict = {}
    if draw(st.booleans()):
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    if draw(st.integers(0, 4)) == 0:
        spec["nodeSelector"] = {ZONE: draw(st.sampled_from(zones))}
    return spec


@st.composite
def states(draw) -> list[dict]:
    """2–8 nodes in 1–3 zones (some tainted), 0–3 bound pods, 1–15 pending pods, maybe a PDB, sometimes volumes:
    local PVs and WaitForFirstConsumer claims (ReadWriteOnce or ReadWriteOncePod, local or provisioned) that
    some pending pods mount, and a GCE PD that some mount read-write."""
    n_zones = draw(st.integers(1, 3))
    zones = [f"z{i}" for i in range(n_zones)]
    levels = draw(st.sampled_from([[0, 100], [0, 10, 100], [5, 50]]))
    objs: list[dict] = []
    n_nodes = draw(st.integers(2, 8))
    for i in range(n_nodes):
        objs.append(node(
            f"n{i}", cpu=draw(st.sampled_from(["1", "2", "4"])), memory=draw(st.sampled_from(["2Gi", "4Gi", "8Gi"])),
            pods=draw(st.integers(2, 8)), labels={ZONE: draw(st.sampled_from(zones))},
            taints=[TAINT] if draw(st.integers(0, 3)) == 0 else None))
    for i in range(draw(st.integers(0, 3))):
        app = draw(st.sampled_from(APPS))
        objs.append(pod(f"bound{i}", cpu=draw(st.sampled_from(["100m", "500m"])), memory="256Mi",
                        node_name=f"n{draw(st.integers(0, n_nodes - 1))}", labels={"app": app},
                        priority=min(levels), spec={"tolerations": [{"operator": "Exists"}]}))
    if draw(st.integers(0, 3)) == 0:
        objs.append({"kind": "PodDisruptionBudget", "metadata": {"name": "pdb", "namespace": "default"},
                     "spec": {"selector": {"matchLabels": {"app": draw(st.sampled_from(APPS))}},
                              "maxUnavailable": draw(st.integers(0, 1))}})
    claims: list[str] = []
    if draw(st.integers(0, 3)) == 0:
        objs += [storage_class("local"), storage_class("dyn", provisioner="ebs.csi.aws.com")]
        for j in range(draw(st.integers(1, 3))):
            objs.append(pv(f"pv{j}", node=f"n{draw(st.integers(0, n_nodes - 1))}",
                           size=draw(st.sampled_from(["5Gi", "10Gi"]))))
        for j in range(draw(st.integers(1, 2))):
            claims.append(f"c{j}")
            objs.append(pvc(f"c{j}", size=draw(st.sampled_from(["5Gi", "8Gi"])),
                            cls=draw(st.sampled_from(["local", "local", "dyn"])),
                            modes=draw(st.sampled_from([("ReadWriteOnce",), ("ReadWriteOncePod",)]))))
    for i in range(draw(st.integers(1, 15))):
        app = draw(st.sampled_from(APPS))
        spec = draw(pod_spec(zones))
        if claims and draw(st.integers(0, 2)) == 0:
            spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": draw(st.sampled_from(claims))}}]
        elif claims and draw(st.integers(0, 4)) == 0:
            spec["volumes"] = [{"name": "pd", "gcePersistentDisk": {"pdName": "disk"}}]
        aff: dict = {}
        if draw(st.integers(0, 3)) == 0:
            aff["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [_term(app, HOST)]}
        if draw(st.integers(0, 4)) == 0:
            aff["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [_term(app, ZONE)]}
        if aff:
            spec["affinity"] = aff
        if draw(st.integers(0, 3)) == 0:
            spec["topologySpreadConstraints"] = [{
                "maxSkew": draw(st.integers(1, 2)), "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": app}}}]
        p = pod(f"p{i}", cpu=draw(st.sampled_from(["100m", "250m", "500m", "1"])),
                memory=draw(st.sampled_from(["128Mi", "512Mi", "1Gi"])), labels={"app": app},
                priority=draw(st.sampled_from(levels)), spec=spec)
        if draw(st.integers(0, 4)) == 0:
            p["spec"]["containers"][0]["ports"] = [{"containerPort": 8080, "hostPort": 8080}]
        objs.append(p)
    return objs


def _index(objs: list[dict]) -> ClusterIndex:
    note(json.dumps(objs))
    return ClusterIndex(build_snapshot(objs))


def _cpsat(index: ClusterIndex) -> Plan:
    return schedule_cpsat(index, options=CpsatOptions(time_limit=2, workers=1))


def _assert_verifies(index: ClusterIndex, plan: Plan) -> None:
    violations = verify_plan(index, plan)
    assert not violations, (f"{plan.engine} plan {plan.to_dict()['placements']} evictions "
                            f"{plan.to_dict()['evictions']} violates {[v.to_dict() for v in violations]}")


def _placed_by_priority(index: ClusterIndex, plan: Plan) -> list[int]:
    prio = {p.key: p.priority for p in index.pending}
    levels = sorted(set(prio.values()), reverse=True)
    placed = [p.pod for p in plan.placements if p.node is not None]
    return [sum(1 for k in placed if prio[k] == lvl) for lvl in levels]


def _net_by_priority(index: ClusterIndex, *plans: Plan) -> list[list[int]]:
    """Per plan: pods placed less pods evicted, per priority from the highest (over every plan's levels)."""
    prio = {p.key: p.priority for p in index.pending}
    levels = sorted(set(prio.values()) | {e.priority for p in plans for e in p.evictions}, reverse=True)
    return [[sum(1 for pl in p.placements if pl.node and prio[pl.pod] == lvl)
             - sum(1 for e in p.evictions if e.priority == lvl) for lvl in levels] for p in plans]


@SETTINGS
@given(states())
def test_every_greedy_plan_verifies(objs):
    index = _index(objs)
    _assert_verifies(index, schedule_greedy(index))


@pytest.mark.slow
@SETTINGS
@given(states())
def test_every_cpsat_plan_verifies(objs):
    index = _index(objs)
    _assert_verifies(index, _cpsat(index))


@pytest.mark.slow
@SETTINGS
@given(states())
def test_cpsat_never_does_worse_than_greedy_on_pods_placed_less_pods_evicted_lexicographically_by_priority(objs):
    index = _index(objs)
    cpsat, greedy = _net_by_priority(index, _cpsat(index), schedule_greedy(index))
    assert cpsat >= greedy, f"placed − evicted per priority, highest first: cpsat {cpsat} < greedy {greedy}"


def _disruption(plans: tuple[Plan, ...]) -> list[list[int]]:
    """kube's order of preemption costs, per plan: PDB violations, then victims at each priority, highest first."""
    levels = sorted({e.priority for p in plans for e in p.evictions}, reverse=True)
    return [[sum(e.pdb_violation for e in p.evictions), *(sum(e.priority == lvl for e in p.evictions)
                                                          for lvl in levels)] for p in plans]


@pytest.mark.slow
@SETTINGS
@given(states())
def test_cpsat_never_disrupts_more_than_greedy_when_it_places_the_same_pods(objs):
    index = _index(objs)
    greedy, cpsat = schedule_greedy(index), _cpsat(index)
    if _placed_by_priority(index, greedy) == _placed_by_priority(index, cpsat):
        mine, theirs = _disruption((cpsat, greedy))
        assert mine <= theirs, f"victims (PDB violations, then by priority): cpsat {mine} > greedy {theirs}"
    assert all(e.priority < index.pod_by_key[e.preemptor].priority for e in cpsat.evictions)


@settings(SETTINGS, max_examples=20)
@given(states())
def test_the_same_seed_gives_the_same_cpsat_plan(objs):
    index = _index(objs)
    first, second = _cpsat(index).to_dict(), _cpsat(index).to_dict()
    assert first["placements"] == second["placements"] and first["evictions"] == second["evictions"]


def _measure_from_scratch(index: ClusterIndex, plan: Plan) -> int:
    """The score measure recomputed the slow way: per placed pod, a fresh state holding every other placement
    (no identity classes, no forget/assume), the default profile's filters and scores over every node."""
    import numpy as np
    from kplace.solver.framework import ClusterState, CycleState
    from kplace.solver.framework.config import default_config
    from kplace.solver.framework.runtime import run_filters, run_pre_filter, run_scores

    profile = default_config().profile_for("default-scheduler")
    placed = [(index.pod_by_key[p.pod], index.node_id[p.node]) for p in plan.placements if p.node]
    total = 0
    for i, (target, n) in enumerate(placed):
        state = ClusterState(index)
        for e in plan.evictions:
            state.forget(index.pod_by_key[e.pod])
        for j, (other, m) in enumerate(placed):
            if j != i:
                state.assume(other, m)
        cycle = CycleState()
        pre = run_pre_filter(profile, state, target, cycle)
        nodes = pre.candidates(index.tree_order)
        out = run_filters(profile, state, target, cycle, nodes, pre.skipped)
        feasible = nodes[out.code == 0]
        if n not in feasible:
            feasible = np.append(feasible, n)
        _, totals = run_scores(profile, state, target, cycle, feasible)
        total += int(totals[list(feasible).index(n)])
    return total


@settings(SETTINGS, max_examples=30)
@given(states())
def test_cpsat_scores_at_least_greedys_measure_when_both_place_the_same_pods_and_the_measure_is_recomputable(objs):
    from kplace.solver.framework.config import default_config
    from kplace.solver.measure import plan_measure

    index = _index(objs)
    greedy, cpsat = schedule_greedy(index), _cpsat(index)
    m_greedy, m_cpsat = (plan_measure(index, default_config(), p).total for p in (greedy, cpsat))
    assert m_greedy == _measure_from_scratch(index, greedy)
    assert m_cpsat == _measure_from_scratch(index, cpsat)
    if _placed_by_priority(index, greedy) == _placed_by_priority(index, cpsat) and not greedy.evictions:
        assert m_cpsat >= m_greedy, f"score measure: cpsat {m_cpsat} < greedy {m_greedy}"


@settings(SETTINGS, max_examples=30)
@given(states())
def test_a_multi_window_cpsat_run_that_places_every_pod_measures_at_least_one_greedy_run(objs):
    from kplace.solver.cpsat import CpsatOptions, schedule_cpsat
    from kplace.solver.framework.config import default_config
    from kplace.solver.measure import plan_measure

    index = _index(objs)
    greedy = schedule_greedy(index)
    cpsat = schedule_cpsat(index, options=CpsatOptions(window=2, time_limit=2, workers=1))
    _assert_verifies(index, cpsat)
    everyone = all(p.node for p in greedy.placements) and all(p.node for p in cpsat.placements)
    if everyone and not greedy.evictions and not cpsat.evictions:
        m_greedy, m_cpsat = (plan_measure(index, default_config(), p).total for p in (greedy, cpsat))
        assert m_cpsat >= m_greedy, f"score measure over windows of 2: cpsat {m_cpsat} < greedy {m_greedy}"


# --- regressions the properties found ---------------------------------------------------------------

AFFINITY_TO_A = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("a", ZONE)]}}


def _both_engines_verify(objs: list[dict]) -> tuple[Plan, Plan]:
    index = ClusterIndex(build_snapshot(objs))
    greedy, cpsat = schedule_greedy(index), _cpsat(index)
    _assert_verifies(index, greedy)
    _assert_verifies(index, cpsat)
    return greedy, cpsat


def test_two_groups_that_match_each_others_affinity_cannot_both_seed_a_zone_by_the_first_pod_rule():
    # p0 (z0 only) and p1 (tolerates the taint on z1's node) both carry app=a and zone affinity to app=a.
    # Each alone may start the group (first-pod rule), but whichever binds second needs the first one in its
    # zone: they cannot seed two zones. CP-SAT used to put p0 in z0 and p1 in z1.
    objs = [node("n0", labels={ZONE: "z1"}, taints=[TAINT]), node("n1", labels={ZONE: "z0"}),
            pod("p0", labels={"app": "a"}, spec={"nodeSelector": {ZONE: "z0"}, "affinity": AFFINITY_TO_A}),
            pod("p1", labels={"app": "a"}, spec={"tolerations": [{"key": "dedicated", "operator": "Exists"}],
                                                 "affinity": AFFINITY_TO_A})]
    _, cpsat = _both_engines_verify(objs)
    assert len({p.node for p in cpsat.placements if p.node}) <= 1


def test_two_groups_cannot_support_each_others_affinity_in_a_zone_neither_can_enter_first():
    # A bound app=a pod in z0 rules the first-pod rule out; h and k (app=a, affinity to app=a, z1 only) would
    # each need the other already in z1. kube places neither; CP-SAT used to place both.
    objs = [node("n0", labels={ZONE: "z0"}), node("n1", labels={ZONE: "z1"}),
            pod("bound", labels={"app": "a"}, node_name="n0"),
            pod("h", labels={"app": "a"}, spec={"nodeSelector": {ZONE: "z1"}, "affinity": AFFINITY_TO_A}),
            pod("k", labels={"app": "a"}, spec={"nodeSelector": {ZONE: "z1"}, "affinity": AFFINITY_TO_A,
                                                "tolerations": [{"key": "x", "operator": "Exists"}]})]
    _, cpsat = _both_engines_verify(objs)
    assert all(p.node is None for p in cpsat.placements)
