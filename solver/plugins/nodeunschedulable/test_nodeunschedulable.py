import numpy as np
import pytest
from kplace.solver.framework import Code, CycleState
from kplace.solver.plugins.nodeunschedulable import REASON, NodeUnschedulable
from kplace.solver.testing import build_state, node, pod

UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
TOLERATE = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]

CASES = [
    ("A schedulable node accepts any pod.", False, [], Code.SUCCESS),
    ("A cordoned node rejects a pod without a toleration as unresolvable.", True, [], UU),
    ("A cordoned node accepts a pod that tolerates the unschedulable taint.", True, TOLERATE, Code.SUCCESS),
    ("An Exists toleration with an empty key tolerates a cordoned node.", True, [{"operator": "Exists"}], Code.SUCCESS),
    ("A toleration for another effect does not tolerate a cordoned node.", True,
     [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}],
     UU),
]


@pytest.mark.parametrize(("name", "cordoned", "tolerations", "want"), CASES, ids=[c[0] for c in CASES])
def test_node_unschedulable(name, cordoned, tolerations, want):
    state = build_state(node("n1", unschedulable=cordoned), pod("p", spec={"tolerations": tolerations}))
    p = state.index.pending[0]
    result = NodeUnschedulable().filter(state, p, CycleState(), np.array([0]))
    assert Code(result.code[0]) == want
    assert result.reasons_of(0) == ([] if want == Code.SUCCESS else [REASON])
