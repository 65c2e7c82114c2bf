import numpy as np
import pytest
from kplace.solver.framework import Code, CycleState
from kplace.solver.plugins.tainttoleration import REASON, TaintToleration
from kplace.solver.plugins.tainttoleration.helpers import CACHE_KEY, taint_groups
from kplace.solver.testing import build_state, node, pod

UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def taint(key, value="", effect="NoSchedule"):
    return {"key": key, "value": value, "effect": effect}


def tol(key="", value="", effect="", operator="Equal"):
    return {"key": key, "value": value, "effect": effect, "operator": operator}


FILTER = [
    ("A node without taints accepts a pod without tolerations.", [], [], Code.SUCCESS),
    ("A NoSchedule taint rejects a pod without tolerations as unresolvable.", [taint("dedicated", "user1")], [], UU),
    ("An Equal toleration with the same key, value and effect tolerates the taint.",
     [taint("dedicated", "user1")], [tol("dedicated", "user1", "NoSchedule")], Code.SUCCESS),
    ("An Equal toleration with another value does not tolerate the taint.",
     [taint("dedicated", "user1")], [tol("dedicated", "user2", "NoSchedule")], UU),
    ("An empty operator behaves as Equal.",
     [taint("dedicated", "user1")], [tol("dedicated", "user1", operator="")], Code.SUCCESS),
    ("An Exists toleration for the key tolerates any value.",
     [taint("dedicated", "user1")], [tol("dedicated", operator="Exists")], Code.SUCCESS),
    ("An Exists toleration with an empty key tolerates every taint.",
     [taint("a", "1"), taint("b", "2", "NoExecute")], [tol(operator="Exists")], Code.SUCCESS),
    ("A toleration for another effect does not tolerate the taint.",
     [taint("dedicated", "user1")], [tol("dedicated", "user1", "NoExecute")], UU),
    ("A toleration with an empty effect tolerates every effect of that key and value.",
     [taint("dedicated", "user1", "NoExecute")], [tol("dedicated", "user1")], Code.SUCCESS),
    ("An untolerated NoExecute taint rejects the pod as unresolvable.", [taint("evict", "", "NoExecute")], [], UU),
    ("An untolerated PreferNoSchedule taint does not reject the pod.",
     [taint("soft", "x", "PreferNoSchedule")], [], Code.SUCCESS),
    ("A node rejects the pod when one of several taints is untolerated.",
     [taint("a", "1"), taint("b", "2")], [tol("a", "1", "NoSchedule")], UU),
    ("Equal matches an empty toleration value against an empty taint value.",
     [taint("flag")], [tol("flag", "", "NoSchedule")], Code.SUCCESS),
    ("A Gt toleration never matches while the comparison-operator gate is off.",
     [taint("level", "5")], [tol("level", "3", "NoSchedule", operator="Gt")], UU),
    ("A Lt toleration never matches while the comparison-operator gate is off.",
     [taint("level", "5")], [tol("level", "9", "NoSchedule", operator="Lt")], UU),
]


@pytest.mark.parametrize(("name", "taints", "tolerations", "want"), FILTER, ids=[c[0] for c in FILTER])
def test_taint_toleration_filter(name, taints, tolerations, want):
    state = build_state(node("n1", taints=taints), pod("p", spec={"tolerations": tolerations}))
    result = TaintToleration().filter(state, state.index.pending[0], CycleState(), np.array([0]))
    assert Code(result.code[0]) == want
    assert result.reasons_of(0) == ([] if want == Code.SUCCESS else [REASON])


PNS = "PreferNoSchedule"
SCORE = [
    ("Nodes without taints all score 100.", [[], []], [], [0, 0], [100, 100]),
    ("The node with more intolerable PreferNoSchedule taints scores lower, reversed by the maximum.",
     [[], [taint("a", "1", PNS)], [taint("a", "1", PNS), taint("b", "2", PNS)]], [], [0, 1, 2], [100, 50, 0]),
    ("Reverse normalisation truncates 100·raw/max before subtracting.",
     [[], [taint("a", "", PNS)], [taint("a", "", PNS), taint("b", "", PNS), taint("c", "", PNS)]],
     [], [0, 1, 3], [100, 67, 0]),
    ("A tolerated PreferNoSchedule taint does not count.",
     [[taint("a", "1", PNS)], [taint("b", "1", PNS)]], [tol("a", "1", PNS)], [0, 1], [100, 0]),
    ("A toleration with an empty effect tolerates PreferNoSchedule taints too.",
     [[taint("a", "1", PNS)], [taint("b", "1", PNS)]], [tol("a", "1")], [0, 1], [100, 0]),
    ("A NoSchedule toleration does not tolerate a PreferNoSchedule taint.",
     [[taint("a", "1", PNS)], []], [tol("a", "1", "NoSchedule")], [1, 0], [0, 100]),
    ("NoSchedule and NoExecute taints do not count for the score.",
     [[taint("a"), taint("b", "", "NoExecute")], []], [], [0, 0], [100, 100]),
]


@pytest.mark.parametrize(("name", "node_taints", "tolerations", "raw", "want"), SCORE, ids=[c[0] for c in SCORE])
def test_taint_toleration_score(name, node_taints, tolerations, raw, want):
    nodes = [node(f"n{i}", taints=t) for i, t in enumerate(node_taints)]
    state = build_state(nodes, pod("p", spec={"tolerations": tolerations}))
    pl, p, cycle = TaintToleration(), state.index.pending[0], CycleState()
    ids = np.arange(len(nodes))
    assert pl.pre_score(state, p, cycle, ids)
    scores = pl.score(state, p, cycle, ids)
    assert scores.tolist() == raw
    assert pl.normalize(scores, p, cycle).tolist() == want


def test_nodes_with_equal_taints_share_one_group_cached_on_the_index():
    t = [taint("a", "1")]
    state = build_state([node("n0", taints=t), node("n1"), node("n2", taints=t)], pod("p"))
    of_node, groups = taint_groups(state.index)
    assert of_node[0] == of_node[2] != of_node[1]
    assert len(groups) == 2
    assert state.index.cache[CACHE_KEY] is taint_groups(state.index)


def test_filter_answers_for_a_subset_of_nodes_in_the_given_order():
    state = build_state([node("n0", taints=[taint("a")]), node("n1"), node("n2", taints=[taint("a")])], pod("p"))
    result = TaintToleration().filter(state, state.index.pending[0], CycleState(), np.array([2, 1]))
    assert [Code(c) for c in result.code] == [UU, Code.SUCCESS]


def test_sanity_empty_default_node_scores_100():
    state = build_state(node("n1", cpu="4", memory="32Gi", pods=110), pod("p", cpu="100m", memory="500Mi"))
    pl, p, cycle = TaintToleration(), state.index.pending[0], CycleState()
    assert pl.normalize(pl.score(state, p, cycle, np.array([0])), p, cycle).tolist() == [100]
