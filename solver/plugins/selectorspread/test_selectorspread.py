import numpy as np
import pytest
from kplace.solver.framework import CycleState
from kplace.solver.plugins.selectorspread import SelectorSpread, default_selector, normalize
from kplace.solver.testing import build_state, node, pod

Z = "topology.kubernetes.io/zone"
SVC = {"kind": "Service", "metadata": {"name": "web", "namespace": "default"}, "spec": {"selector": {"app": "web"}}}


def run(nodes, objects, p):
    state = build_state(nodes, SVC, objects, p)
    pi = state.index.pending[0]
    pl, cycle = SelectorSpread(), CycleState()
    ids = np.arange(len(nodes))
    assert pl.pre_score(state, pi, cycle, ids)
    return pl.normalize(pl.score(state, pi, cycle, ids), pi, cycle).tolist()




def web(name, n=""):
    return pod(name, node_name=n, labels={"app": "web"})


CASES = [
    ("Without zones the node with fewer matching pods scores higher.",
     [node("a"), node("b"), node("c")], [web("w1", "a"), web("w2", "a"), web("w3", "b")], [0, 50, 100]),
    ("With zones one third is the node term and two thirds the zone term.",
     [node("a", labels={Z: "z1"}), node("b", labels={Z: "z1"}), node("c", labels={Z: "z2"})],
     [web("w1", "a")], [0, 33, 100]),
    ("Pods the selector does not match are not counted.", [node("a"), node("b")],
     [pod("o", node_name="a", labels={"app": "db"})], [100, 100]),
]


@pytest.mark.parametrize(("name", "nodes", "objects", "want"), CASES, ids=[c[0] for c in CASES])
def test_selector_spread(name, nodes, objects, want):
    assert run(nodes, objects, web("new")) == want


def test_a_pod_no_service_or_controller_selects_scores_alike_everywhere():
    assert run([node("a"), node("b")], [web("w1", "a")], pod("x", labels={"app": "other"})) == [100, 100]


def test_the_default_selector_ands_services_and_the_controllers_selector():
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs", "namespace": "default", "uid": "u"},
          "spec": {"replicas": 0, "selector": {"matchLabels": {"tier": "front"}},
                   "template": {"metadata": {"labels": {"app": "web", "tier": "front"}}}}}
    p = pod("p", labels={"app": "web", "tier": "front"})
    p["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": True}]
    state = build_state(node("a"), SVC, rs, p)
    sel = default_selector(state.index, state.index.pending[0].pod)
    assert sel.matches({"app": "web", "tier": "front"}) and not sel.matches({"app": "web"})


def test_normalize_without_counts_gives_the_maximum():
    state = build_state(node("a"), node("b"))
    assert normalize(state.index, np.arange(2), np.zeros(2, dtype=np.int64)).tolist() == [100, 100]
