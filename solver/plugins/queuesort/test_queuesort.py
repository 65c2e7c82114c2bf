import random

import pytest
from kplace.solver.plugins.queuesort import PrioritySort
from kplace.solver.testing import build_state, node, pod

T0, T1 = "2024-01-01T00:00:00Z", "2024-01-01T00:00:05Z"
CASES = [
    ("A higher priority goes first regardless of age.", (10, T1), (0, T0), True),
    ("A lower priority goes later regardless of age.", (0, T0), (10, T1), False),
    ("With equal priority the older pod goes first.", (5, T0), (5, T1), True),
    ("With equal priority the newer pod goes later.", (5, T1), (5, T0), False),
    ("A missing priority counts as zero.", (None, T0), (-1, T0), True),
    ("A pod without a timestamp goes after one with a timestamp at equal priority.", (0, None), (0, T1), False),
]


@pytest.mark.parametrize(("name", "a", "b", "want"), CASES, ids=[c[0] for c in CASES])
def test_priority_sort_less(name, a, b, want):
    state = build_state(node("n1"), pod("a", priority=a[0], creation=a[1]), pod("b", priority=b[0], creation=b[1]))
    pa, pb = (next(p for p in state.index.pods if p.name == n) for n in ("a", "b"))
    assert PrioritySort.less(pa, pb) is want
    assert PrioritySort.less(pb, pa) is not want


def test_sort_key_orders_pods_as_the_index_pending_queue():
    rng = random.Random(7)
    pods = [pod(f"p{i}", priority=rng.choice([None, 0, 5, 10]),
                creation=rng.choice([None, T0, T1, "2023-12-31T23:59:59Z"])) for i in range(40)]
    state = build_state(node("n1"), pods)
    pending = list(state.index.pending)
    shuffled = pending[:]
    rng.shuffle(shuffled)
    assert [p.key for p in sorted(shuffled, key=PrioritySort.sort_key)] == [p.key for p in pending]


def test_priority_sort_implements_only_queue_sort():
    assert PrioritySort.has("queue_sort")
    assert not PrioritySort.has("filter")
