import numpy as np
import pytest
from kplace.solver.framework import Code, CycleState
from kplace.solver.plugins.nodeconditions import (
    REASON_DISK,
    REASON_MEMORY,
    REASON_NETWORK,
    REASON_NOT_READY,
    REASON_PID,
    REASON_UNSCHEDULABLE,
    CheckNodeCondition,
    CheckNodeDiskPressure,
    CheckNodeMemoryPressure,
    CheckNodePIDPressure,
)
from kplace.solver.testing import build_state, node, pod

UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def with_conditions(conds, **kw):
    n = node("n1", **kw)
    n["status"]["conditions"] = [{"type": t, "status": s} for t, s in conds]
    return n


CASES = [
    ("A Ready node passes CheckNodeCondition.", CheckNodeCondition, [("Ready", "True")], None, []),
    ("A NotReady node fails CheckNodeCondition.", CheckNodeCondition, [("Ready", "False")], None, [REASON_NOT_READY]),
    ("An Unknown Ready condition fails CheckNodeCondition.", CheckNodeCondition, [("Ready", "Unknown")], None,
     [REASON_NOT_READY]),
    ("NetworkUnavailable not False fails CheckNodeCondition.", CheckNodeCondition,
     [("Ready", "True"), ("NetworkUnavailable", "True")], None, [REASON_NETWORK]),
    ("A BestEffort pod fails on a node under memory pressure.", CheckNodeMemoryPressure,
     [("MemoryPressure", "True")], None, [REASON_MEMORY]),
    ("A pod with a memory request passes a node under memory pressure.", CheckNodeMemoryPressure,
     [("MemoryPressure", "True")], "64Mi", []),
    ("Any pod fails on a node under disk pressure.", CheckNodeDiskPressure, [("DiskPressure", "True")], "64Mi",
     [REASON_DISK]),
    ("Any pod fails on a node under PID pressure.", CheckNodePIDPressure, [("PIDPressure", "True")], "64Mi",
     [REASON_PID]),
    ("PIDPressure False passes.", CheckNodePIDPressure, [("PIDPressure", "False")], None, []),
]


@pytest.mark.parametrize(("name", "plugin", "conds", "memory", "reasons"), CASES, ids=[c[0] for c in CASES])
def test_node_condition_predicates(name, plugin, conds, memory, reasons):
    state = build_state(with_conditions(conds), pod("p", memory=memory))
    res = plugin().filter(state, state.index.pending[0], CycleState(), np.array([0]))
    assert Code(res.code[0]) == (UU if reasons else Code.SUCCESS)
    assert res.reasons_of(0) == reasons


def test_check_node_condition_reports_a_cordoned_node_too():
    state = build_state(with_conditions([("Ready", "False")], unschedulable=True), pod("p"))
    res = CheckNodeCondition().filter(state, state.index.pending[0], CycleState(), np.array([0]))
    assert res.reasons_of(0) == [REASON_NOT_READY, REASON_UNSCHEDULABLE]
