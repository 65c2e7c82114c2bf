import pytest
from kplace.solver.plugins.schedulinggates import SchedulingGates
from kplace.solver.testing import build_state, node, pod

CASES = [
    ("A pod without scheduling gates is enqueued.", [], (True, "")),
    ("A pod with one gate waits and names it.", ["example.com/a"],
     (False, "waiting for scheduling gates: [example.com/a]")),
    ("A pod with several gates lists them space-separated in order.", ["b", "a"],
     (False, "waiting for scheduling gates: [b a]")),
]


@pytest.mark.parametrize(("name", "gates", "want"), CASES, ids=[c[0] for c in CASES])
def test_scheduling_gates(name, gates, want):
    state = build_state(node("n1"), pod("p", spec={"schedulingGates": [{"name": g} for g in gates]}))
    p = next(pi for pi in state.index.pods if pi.name == "p")
    assert SchedulingGates().pre_enqueue(p) == want


def test_scheduling_gates_only_implements_pre_enqueue():
    assert SchedulingGates.has("pre_enqueue")
    assert not SchedulingGates.has("filter")
