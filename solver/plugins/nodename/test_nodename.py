import numpy as np
import pytest
from kplace.solver.framework import Code, CycleState
from kplace.solver.plugins.nodename import REASON, NodeName, fits
from kplace.solver.testing import build_state, node, pod

UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE

CASES = [
    ("A pod that names no node fits every node.", "", [Code.SUCCESS, Code.SUCCESS]),
    ("A pod that names the first node fits only the first node.", "n1", [Code.SUCCESS, UU]),
    ("A pod that names the second node fits only the second node.", "n2", [UU, Code.SUCCESS]),
    ("A pod that names a node missing from the cluster fits no node.", "ghost", [UU, UU]),
]


@pytest.mark.parametrize(("name", "wanted", "want"), CASES, ids=[c[0] for c in CASES])
def test_node_name_filter(name, wanted, want):
    p = pod("p", spec={"nodeName": wanted} if wanted else None)
    p["status"]["phase"] = "Pending"
    state = build_state([node("n1"), node("n2")], p)
    pi = state.index.pods[0]
    result = NodeName().filter(state, pi, CycleState(), np.array([0, 1]))
    assert [Code(c) for c in result.code] == want
    for i, w in enumerate(want):
        assert result.reasons_of(i) == ([] if w == Code.SUCCESS else [REASON])


FITS = [
    ("An empty requested name fits any node.", "n1", "", True),
    ("An equal requested name fits.", "n1", "n1", True),
    ("A different requested name does not fit.", "n1", "n2", False),
]


@pytest.mark.parametrize(("name", "node_name", "wanted", "want"), FITS, ids=[c[0] for c in FITS])
def test_fits(name, node_name, wanted, want):
    assert fits(node_name, wanted) is want
