"""The independent verifier: plans that must verify, and plans it must reject with the right rule."""

import json

import pytest
from click.testing import CliRunner
from kplace.models.errors import InputError
from kplace.models.index import ClusterIndex
from kplace.models.plan import Eviction, Placement, Plan
from kplace.solver.cli import main
from kplace.solver.greedy import schedule_greedy
from kplace.solver.testing import build_snapshot, node, pod
from kplace.solver.verify import load_plan, verify_plan

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def verify(objects, placements, evictions=()):
    """Rules violated by a plan of (pod, node) pairs (namespace `default` unless given)."""
    index = ClusterIndex(build_snapshot(objects))
    plan = Plan("test", [Placement(p if "/" in p else f"default/{p}", n) for p, n in placements],
                [Eviction(*e) for e in evictions])
    return [(v.pod.split("/")[-1], v.rule) for v in verify_plan(index, plan)]


def zoned(name, zone, **kw):
    return node(name, labels={ZONE: zone}, **kw)


def anti(app, key=HOST, **term):
    return {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key, **term}]}}}


def affinity(app, key=ZONE):
    return {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}]}}}


def spread(app, max_skew=1, key=ZONE, **extra):
    return {"topologySpreadConstraints": [{"maxSkew": max_skew, "topologyKey": key,
                                           "whenUnsatisfiable": "DoNotSchedule",
                                           "labelSelector": {"matchLabels": {"app": app}}, **extra}]}


def ports(*entries):
    return {"containers": [{"name": "c", "ports": [
        {"containerPort": p, "hostPort": p, **({"hostIP": ip} if ip else {}), **({"protocol": proto} if proto else {})}
        for p, ip, proto in entries]}]}


def pdb(name, app, **spec):
    return {"kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": app}}, **spec}}


# --- resources ------------------------------------------------------------------------------------


def test_pods_that_fit_together_verify():
    assert verify([node("n1", cpu="1"), pod("a", cpu="500m"), pod("b", cpu="500m")], [("a", "n1"), ("b", "n1")]) == []


def test_a_node_over_its_cpu_is_rejected_for_the_pod_that_does_not_fit():
    objs = [node("n1", cpu="1"), pod("a", cpu="600m"), pod("b", cpu="600m")]
    assert verify(objs, [("a", "n1"), ("b", "n1")]) == [("b", "NodeResourcesFit")]


def test_bound_pods_count_against_capacity():
    objs = [node("n1", cpu="1"), pod("old", cpu="800m", node_name="n1"), pod("a", cpu="300m")]
    assert verify(objs, [("a", "n1")]) == [("a", "NodeResourcesFit")]


def test_an_extended_resource_the_node_lacks_is_rejected():
    objs = [node("n1"), pod("a", extra={"nvidia.com/gpu": "1"})]
    assert verify(objs, [("a", "n1")]) == [("a", "NodeResourcesFit")]


def test_the_pod_count_limit_counts_bound_pods():
    objs = [node("n1", pods=2), pod("old", node_name="n1"), pod("a"), pod("b")]
    assert verify(objs, [("a", "n1"), ("b", "n1")]) == [("b", "NodeResourcesFit")]


# --- node-local rules -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("taint", "tolerations", "ok"),
    [
        ({"key": "gpu", "value": "yes", "effect": "NoSchedule"}, [], False),
        ({"key": "gpu", "value": "yes", "effect": "NoExecute"}, [], False),
        ({"key": "gpu", "value": "yes", "effect": "PreferNoSchedule"}, [], True),
        ({"key": "gpu", "value": "yes", "effect": "NoSchedule"}, [{"key": "gpu", "operator": "Exists"}], True),
        ({"key": "gpu", "value": "yes", "effect": "NoSchedule"}, [{"key": "gpu", "value": "no"}], False),
    ],
    ids=["an untolerated NoSchedule taint is rejected", "an untolerated NoExecute taint is rejected",
         "a PreferNoSchedule taint does not filter", "an Exists toleration tolerates any value",
         "an Equal toleration with another value does not tolerate"],
)
def test_taints(taint, tolerations, ok):
    objs = [node("n1", taints=[taint]), pod("a", spec={"tolerations": tolerations})]
    assert verify(objs, [("a", "n1")]) == ([] if ok else [("a", "TaintToleration")])


def test_an_unschedulable_node_is_rejected_unless_the_pod_tolerates_it():
    tol = {"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]}
    objs = [node("n1", unschedulable=True), pod("a"), pod("b", spec=tol)]
    assert verify(objs, [("a", "n1"), ("b", "n1")]) == [("a", "NodeUnschedulable")]


def test_node_selector_and_required_node_affinity_must_match():
    req = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}]}}}}
    objs = [node("ssd", labels={"disk": "ssd"}), node("hdd", labels={"disk": "hdd"}),
            pod("sel", spec={"nodeSelector": {"disk": "ssd"}}), pod("aff", spec=req),
            pod("sel2", spec={"nodeSelector": {"disk": "ssd"}}), pod("aff2", spec=req)]
    got = verify(objs, [("sel", "ssd"), ("aff", "ssd"), ("sel2", "hdd"), ("aff2", "hdd")])
    assert got == [("sel2", "NodeAffinity"), ("aff2", "NodeAffinity")]


@pytest.mark.parametrize(
    ("first", "second", "ok"),
    [
        ((80, None, None), (80, None, None), False),
        ((80, "10.0.0.1", None), (80, None, None), False),
        ((80, None, None), (80, "10.0.0.1", None), False),
        ((80, "10.0.0.1", None), (80, "10.0.0.1", None), False),
        ((80, "10.0.0.1", None), (80, "10.0.0.2", None), True),
        ((80, None, "TCP"), (80, None, "UDP"), True),
        ((80, None, None), (81, None, None), True),
    ],
    ids=["the same wildcard port conflicts", "a wildcard wanted after a specific IP conflicts",
         "a specific IP wanted after the wildcard conflicts", "the same specific IP conflicts",
         "different specific IPs do not conflict", "different protocols do not conflict",
         "different ports do not conflict"],
)
def test_host_ports(first, second, ok):
    objs = [node("n1"), pod("a", spec=ports(first)), pod("b", spec=ports(second))]
    assert verify(objs, [("a", "n1"), ("b", "n1")]) == ([] if ok else [("b", "NodePorts")])


# --- inter-pod affinity and anti-affinity ---------------------------------------------------------


def test_anti_affinity_of_the_incoming_pod_rejects_a_node_with_a_matching_pod():
    objs = [node("n1"), node("n2"), pod("db", labels={"app": "db"}, node_name="n1"),
            pod("a", spec=anti("db")), pod("b", spec=anti("db"))]
    assert verify(objs, [("a", "n1"), ("b", "n2")]) == [("a", "InterPodAffinity")]


def test_anti_affinity_of_an_existing_pod_rejects_the_incoming_pod_symmetrically():
    objs = [node("n1"), node("n2"), pod("guard", node_name="n1", spec=anti("web")),
            pod("w1", labels={"app": "web"}), pod("w2", labels={"app": "web"})]
    assert verify(objs, [("w1", "n1"), ("w2", "n2")]) == [("w1", "InterPodAffinity")]


def test_two_pending_pods_with_mutual_anti_affinity_cannot_share_a_zone():
    objs = [zoned("n1", "z1"), zoned("n2", "z1"), zoned("n3", "z2"),
            *(pod(f"w{i}", labels={"app": "web"}, spec=anti("web", ZONE)) for i in range(3))]
    assert verify(objs, [("w0", "n1"), ("w1", "n3")]) == []
    assert verify(objs, [("w0", "n1"), ("w1", "n2"), ("w2", "n3")]) == [("w1", "InterPodAffinity")]


def test_anti_affinity_does_not_apply_on_a_node_without_the_topology_key():
    objs = [node("n1"), node("n2"), pod("db", labels={"app": "db"}, node_name="n1"),
            pod("a", spec=anti("db", "rack"))]
    assert verify(objs, [("a", "n1")]) == []


def test_match_label_keys_restrict_anti_affinity_to_the_pods_own_value():
    term = {"matchLabelKeys": ["version"]}
    objs = [node("n1"), pod("old", labels={"app": "web", "version": "1"}, node_name="n1"),
            pod("new", labels={"app": "web", "version": "2"}, spec=anti("web", **term)),
            pod("same", labels={"app": "web", "version": "1"}, spec=anti("web", **term))]
    assert verify(objs, [("new", "n1"), ("same", "n1")]) == [("same", "InterPodAffinity")]


def test_a_namespace_selector_extends_anti_affinity_to_other_namespaces():
    ns = [{"kind": "Namespace", "metadata": {"name": "prod", "labels": {"env": "prod"}}}]
    by_sel = anti("db", namespaceSelector={"matchLabels": {"env": "prod"}})
    objs = [*ns, node("n1"), pod("db", namespace="prod", labels={"app": "db"}, node_name="n1"),
            pod("own-ns", spec=anti("db")), pod("by-selector", spec=by_sel)]
    assert verify(objs, [("own-ns", "n1"), ("by-selector", "n1")]) == [("by-selector", "InterPodAffinity")]


def test_affinity_needs_a_matching_pod_in_the_same_zone():
    objs = [zoned("n1", "z1"), zoned("n2", "z2"), pod("db", labels={"app": "db"}, node_name="n1"),
            pod("near", spec=affinity("db")), pod("far", spec=affinity("db"))]
    assert verify(objs, [("near", "n1"), ("far", "n2")]) == [("far", "InterPodAffinity")]


def test_affinity_rejects_a_node_without_the_topology_key():
    objs = [zoned("n1", "z1"), node("bare"), pod("db", labels={"app": "db"}, node_name="n1"),
            pod("a", spec=affinity("db"))]
    assert verify(objs, [("a", "bare")]) == [("a", "InterPodAffinity")]


def test_the_first_pod_rule_lets_a_self_matching_pod_start_its_group_alone():
    objs = [zoned("n1", "z1"), zoned("n2", "z2"),
            pod("a", labels={"app": "db"}, spec=affinity("db")), pod("b", labels={"app": "db"}, spec=affinity("db"))]
    assert verify(objs, [("a", "n2"), ("b", "n2")]) == []
    assert verify(objs, [("a", "n1"), ("b", "n2")]) == [("b", "InterPodAffinity")]


def test_the_first_pod_rule_does_not_apply_to_a_pod_that_does_not_match_its_own_terms():
    objs = [zoned("n1", "z1"), pod("a", labels={"app": "web"}, spec=affinity("db"))]
    assert verify(objs, [("a", "n1")]) == [("a", "InterPodAffinity")]


def test_a_final_state_plan_verifies_although_the_supporting_pod_comes_later_in_plan_order():
    # web needs a db pod in its zone; the plan lists web first (a CP-SAT plan describes a final state).
    objs = [zoned("n1", "z1"), zoned("n2", "z2"), pod("other", labels={"app": "db"}, node_name="n2"),
            pod("web", spec=affinity("db")), pod("db", labels={"app": "db"})]
    assert verify(objs, [("web", "n1"), ("db", "n1")]) == []
    assert verify(objs, [("web", "n1"), ("db", "n2")]) == [("web", "InterPodAffinity")]


# --- topology spread ------------------------------------------------------------------------------


def test_spread_rejects_the_pod_that_makes_the_skew_exceed_max_skew():
    objs = [zoned("n1", "z1"), zoned("n2", "z2"), *(pod(f"w{i}", labels={"app": "web"}, spec=spread("web"))
                                                    for i in range(3))]
    assert verify(objs, [("w0", "n1"), ("w1", "n2"), ("w2", "n1")]) == []
    assert verify(objs, [("w0", "n1"), ("w1", "n1"), ("w2", "n1")]) == [("w1", "PodTopologySpread"),
                                                                        ("w2", "PodTopologySpread")]


def test_spread_counts_bound_pods_but_not_other_namespaces_or_terminating_pods():
    bound = pod("b", labels={"app": "web"}, node_name="n1")
    other_ns = pod("o", namespace="other", labels={"app": "web"}, node_name="n2")
    objs = [zoned("n1", "z1"), zoned("n2", "z2"), bound, other_ns, pod("w", labels={"app": "web"}, spec=spread("web"))]
    assert verify(objs, [("w", "n1")]) == [("w", "PodTopologySpread")]
    assert verify(objs, [("w", "n2")]) == []


def test_spread_with_fewer_domains_than_min_domains_takes_the_global_minimum_as_zero():
    objs = [zoned("n1", "z1"), zoned("n2", "z2"), pod("b", labels={"app": "web"}, node_name="n2"),
            *(pod(f"w{i}", labels={"app": "web"}, spec=spread("web", minDomains=3)) for i in range(2))]
    # z2 has 1 and z1 would have 1: without minDomains the skew is 1; with globalMin 0 it is 1 + 1 = 2 for w1.
    assert verify(objs, [("w0", "n1")]) == []
    assert verify(objs, [("w0", "n1"), ("w1", "n1")]) == [("w1", "PodTopologySpread")]


def test_spread_rejects_a_node_without_the_topology_key():
    objs = [node("bare"), pod("w", labels={"app": "web"}, spec=spread("web"))]
    assert verify(objs, [("w", "bare")]) == [("w", "PodTopologySpread")]


def test_spread_ignores_domains_the_pod_cannot_use_under_the_honor_affinity_policy():
    # z2 is excluded by the nodeSelector, so its zero count does not hold the minimum down.
    objs = [zoned("n1", "z1", extra=None), node("n2", labels={ZONE: "z2", "pool": "other"}),
            *(pod(f"w{i}", labels={"app": "web"}, spec={**spread("web"), "nodeSelector": {ZONE: "z1"}})
              for i in range(3))]
    assert verify(objs, [("w0", "n1"), ("w1", "n1"), ("w2", "n1")]) == []
    ignore = [o for o in objs if o["kind"] == "Node"]
    ignore += [pod(f"w{i}", labels={"app": "web"}, spec={**spread("web", nodeAffinityPolicy="Ignore"),
                                                         "nodeSelector": {ZONE: "z1"}}) for i in range(2)]
    assert verify(ignore, [("w0", "n1"), ("w1", "n1")]) == [("w1", "PodTopologySpread")]


# --- evictions ------------------------------------------------------------------------------------


def _preemption_state(*extra):
    return [node("n1", cpu="1"), pod("low", cpu="800m", priority=1, labels={"app": "low"}, node_name="n1"),
            pod("high", cpu="800m", priority=10), *extra]


def test_an_eviction_frees_the_victims_resources_for_its_preemptor():
    got = verify(_preemption_state(), [("high", "n1")], [("default/low", "n1", "default/high", 1)])
    assert got == []
    assert verify(_preemption_state(), [("high", "n1")]) == [("high", "NodeResourcesFit")]


def test_an_eviction_needs_a_victim_of_strictly_lower_priority():
    objs = [node("n1", cpu="1"), pod("low", cpu="800m", priority=10, node_name="n1"),
            pod("high", cpu="800m", priority=10)]
    got = verify(objs, [("high", "n1")], [("default/low", "n1", "default/high", 10)])
    assert ("low", "Preemption") in got


def test_an_eviction_needs_a_pending_preemptor_of_the_state():
    objs = [*_preemption_state(), pod("bound-high", priority=10, node_name="n1")]
    for preemptor in ("default/ghost", "default/bound-high"):
        got = verify(objs, [("high", "n1")], [("default/low", "n1", preemptor, 1)])
        assert ("low", "Preemption") in got


def test_a_preemptor_placed_elsewhere_or_nowhere_frees_its_victims_room_from_the_start():
    # kube nominates the node and does not bind to it: another pod may take the room first.
    objs = [*_preemption_state(pod("mid", cpu="800m", priority=5)), node("n2")]
    evict = [("default/low", "n1", "default/high", 1)]
    assert verify(objs, [("mid", "n1"), ("high", "n2")], evict) == []
    assert verify(objs, [("mid", "n1")], evict) == []
    assert verify(objs, [("mid", "n1")]) == [("mid", "NodeResourcesFit")]


def test_a_pod_may_rely_for_affinity_on_a_victim_whose_preemptor_went_elsewhere_until_a_pod_needs_it_gone():
    # web binds next to db; then high preempts db and mid takes the room before high, which lands on n2.
    objs = [zoned("n1", "z1", cpu="1"), zoned("n2", "z2"),
            pod("db", cpu="800m", priority=1, labels={"app": "db"}, node_name="n1"),
            pod("web", priority=5, spec=affinity("db")), pod("mid", cpu="800m", priority=5),
            pod("high", cpu="800m", priority=10)]
    evict = [("default/db", "n1", "default/high", 1)]
    assert verify(objs, [("web", "n1"), ("mid", "n1"), ("high", "n2")], evict) == []
    assert verify(objs, [("mid", "n1"), ("web", "n1"), ("high", "n2")], evict) == [("web", "InterPodAffinity")]


def test_an_eviction_of_a_pod_that_is_not_bound_there_is_rejected():
    objs = [*_preemption_state(), node("n2")]
    got = verify(objs, [("high", "n1")], [("default/low", "n2", "default/high", 1)])
    assert ("low", "Preemption") in got


def test_an_eviction_that_takes_a_pdb_below_zero_is_rejected():
    objs = _preemption_state(pdb("keep-low", "low", maxUnavailable=0))
    got = verify(objs, [("high", "n1")], [("default/low", "n1", "default/high", 1)])
    assert got == [("low", "PodDisruptionBudget")]


def test_evictions_within_the_pdb_budget_verify():
    objs = _preemption_state(pdb("keep-low", "low", maxUnavailable=1))
    assert verify(objs, [("high", "n1")], [("default/low", "n1", "default/high", 1)]) == []


def test_a_pod_bound_before_a_preemption_may_rely_on_the_victim_for_affinity():
    # Greedy order: web binds next to db, then high preempts db. Victims leave when their preemptor binds.
    objs = [zoned("n1", "z1", cpu="1"), pod("db", cpu="800m", priority=1, labels={"app": "db"}, node_name="n1"),
            pod("web", priority=5, spec=affinity("db")), pod("high", cpu="800m", priority=10)]
    assert verify(objs, [("web", "n1"), ("high", "n1")], [("default/db", "n1", "default/high", 1)]) == []


# --- plan integrity -------------------------------------------------------------------------------


def test_unknown_pods_nodes_duplicates_and_bound_pods_are_rejected():
    objs = [node("n1"), pod("a"), pod("bound", node_name="n1")]
    got = verify(objs, [("ghost", "n1"), ("a", "nowhere"), ("a", "n1"), ("bound", "n1")])
    assert got == [("ghost", "UnknownPod"), ("a", "UnknownNode"), ("a", "DuplicatePod"), ("bound", "NotPending")]


def test_unplaced_pods_are_not_checked():
    assert verify([node("n1", cpu="1"), pod("a", cpu="8")], [("a", None)]) == []


def test_a_greedy_plan_verifies():
    objs = [zoned(f"n{i}", f"z{i % 2}", cpu="2") for i in range(4)]
    objs += [pod(f"w{i}", cpu="500m", labels={"app": "web"}, spec={**spread("web"), **anti("web")}) for i in range(5)]
    index = ClusterIndex(build_snapshot(objs))
    plan = schedule_greedy(index)
    assert sum(p.node is not None for p in plan.placements) == 4
    assert verify_plan(index, plan) == []


# --- loading plans and the CLI --------------------------------------------------------------------

STATE = {"apiVersion": "v1", "kind": "List", "items": [node("n1", cpu="1"), pod("a", cpu="600m"),
                                                         pod("b", cpu="600m")]}


def _write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_a_plan_written_by_to_dict_loads_back(tmp_path):
    plan = Plan("cpsat", [Placement("default/a", "n1"), Placement("default/b", None, "no room")],
                [Eviction("default/x", "n1", "default/a", 3, False)])
    loaded = load_plan(_write(tmp_path, "plan.json", plan.to_dict()))
    assert loaded.engine == "cpsat"
    assert [(p.pod, p.node, p.reason) for p in loaded.placements] == [("default/a", "n1", None),
                                                                       ("default/b", None, "no room")]
    assert loaded.evictions == plan.evictions


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ("{not json", "invalid JSON"),
        ("[]", "a plan is a JSON object"),
        ({"engine": "x"}, "placements: missing"),
        ({"placements": [{"pod": "default/a"}]}, "placements[0].node"),
        ({"placements": [{"pod": "a", "node": "n1"}]}, "placements[0].pod"),
        ({"placements": [], "evictions": [{"pod": "default/a", "node": "n1"}]}, "evictions[0].preemptor"),
    ],
    ids=["broken JSON", "not an object", "no placements", "a placement without node",
         "a pod without namespace", "an eviction without preemptor"],
)
def test_a_malformed_plan_is_an_input_error_naming_the_file_and_field(tmp_path, content, field):
    path = _write(tmp_path, "plan.json", content)
    with pytest.raises(InputError) as err:
        load_plan(path)
    assert path in str(err.value) and field in str(err.value)


def test_kplace_verify_exits_0_for_a_valid_plan_and_1_for_a_violating_one(tmp_path):
    state = _write(tmp_path, "state.json", STATE)
    good = _write(tmp_path, "good.json", {"engine": "x", "placements": [{"pod": "default/a", "node": "n1"},
                                                                         {"pod": "default/b", "node": None}]})
    bad = _write(tmp_path, "bad.json", {"engine": "x", "placements": [{"pod": "default/a", "node": "n1"},
                                                                       {"pod": "default/b", "node": "n1"}]})
    ok = CliRunner().invoke(main, ["verify", state, good])
    assert ok.exit_code == 0 and "plan verified" in ok.output
    res = CliRunner().invoke(main, ["verify", state, bad, "--output", "json"])
    assert res.exit_code == 1
    out = json.loads(res.output)
    assert out["ok"] is False and [v["rule"] for v in out["violations"]] == ["NodeResourcesFit"]


def test_kplace_verify_reports_a_malformed_plan_in_one_line_with_exit_code_2(tmp_path):
    state = _write(tmp_path, "state.json", STATE)
    bad = _write(tmp_path, "plan.json", {"placements": [{"pod": "default/a", "node": 7}]})
    res = CliRunner().invoke(main, ["verify", state, bad])
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and "plan.json" in lines[0] and "placements[0].node" in lines[0]
    assert "Traceback" not in res.output


def test_a_first_pod_rule_seed_listed_after_a_pod_it_matches_is_bound_first():
    # plain (app=db) is listed first; seed (app=db, zone affinity to app=db) must bind before it, by kube's
    # first-pod rule, in another zone. Found by the property tests (CP-SAT plans list pods in queue order).
    objs = [zoned("n1", "z1"), zoned("n2", "z2"), pod("plain", labels={"app": "db"}),
            pod("seed", labels={"app": "db"}, spec=affinity("db"))]
    assert verify(objs, [("plain", "n2"), ("seed", "n1")]) == []
