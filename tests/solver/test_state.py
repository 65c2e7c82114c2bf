"""ClusterState: assume/forget keep every derived structure right, and a fork is independent."""

import numpy as np
from kplace.solver.testing import build_state, node, pod

ANTI = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}}
PORT = {"containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 80, "hostPort": 80}]}]}


def _state():
    return build_state([node("a"), node("b")],
                       pod("bound", cpu="1", node_name="a", labels={"app": "db"}, spec=ANTI),
                       [pod(f"p{i}", cpu="1", labels={"app": "db"}, spec={**ANTI, **PORT}) for i in range(2)])


def _snapshot(state):
    sel_counts = [state.matching_counts(None, s) for s in _selectors(state)]
    return (state.requested.tolist(), state.pod_count.tolist(), state.pod_node.tolist(),
            [sorted(x) for x in state.node_pods], {n: dict(c) for n, c in state.ports.items() if c},
            sorted(state.with_required_anti),
            [c.tolist() for c in sel_counts], [(g.size, dict(g.sparse)) for g in state.affinity_groups])


def _selectors(state):
    from kplace.models.k8s import LabelSelector
    from kplace.models.selectors import Selector

    return [Selector(LabelSelector(match_labels={"app": "db"})), Selector(LabelSelector())]


def test_a_fork_changes_independently_of_its_original():
    state = _state()
    before = _snapshot(state)
    fork = state.fork()
    p0, p1 = state.index.pending
    fork.assume(p0, 1)
    fork.assume(p1, 0)
    fork.forget(state.index.bound[0])
    assert _snapshot(state) == before
    state.assume(p0, 0)
    assert fork.pod_node[p0.idx] == 1 and state.pod_node[p0.idx] == 0


def test_assume_then_forget_restores_every_count():
    state = _state()
    before = _snapshot(state)
    p0 = state.index.pending[0]
    state.assume(p0, 1)
    assert state.pod_count.tolist() == [1, 1] and state.ports[1]
    assert np.array_equal(state.matching_counts(None, _selectors(state)[0]), [1, 1])
    state.forget(p0)
    assert _snapshot(state) == before


def test_resources_added_count_only_in_requests_and_pod_counts_and_are_gone_after_the_block():
    state = _state()
    before = _snapshot(state)
    p0, p1 = state.index.pending
    with state.resources_added([(p0, 1), (p1, 1)]):
        assert state.pod_count.tolist() == [1, 2]
        assert state.requested[1].tolist() == (2 * state.index.pod_req[p0.idx]).tolist()
        assert not state.ports[1] and state.pod_node[p0.idx] == -1
        assert np.array_equal(state.matching_counts(None, _selectors(state)[0]), [1, 0])
    assert _snapshot(state) == before


def test_fork_refuses_attributes_it_does_not_know_how_to_copy():
    import pytest

    state = _state()
    state.new_cache = {}
    with pytest.raises(AssertionError, match="new_cache"):
        state.fork()


def test_live_domain_counts_follow_assume_and_forget_and_stay_apart_in_a_fork():
    zones = [node(n, labels={"zone": z}) for n, z in (("a", "z1"), ("b", "z1"), ("c", "z2"), ("d", "z3"))]
    state = build_state(zones, pod("bound", cpu="1", node_name="a", labels={"app": "db"}),
                        [pod(f"p{i}", cpu="1", labels={"app": "db" if i % 3 else "web"}) for i in range(6)])
    ids, values = state.index.label_column("zone")
    dom, size = np.where(ids >= 0, ids, len(values)), len(values) + 1
    counted = np.array([True, True, False, True])  # node c is not counted
    sel = _selectors(state)[0]

    def fresh(s):
        per_node = s.matching_counts(frozenset(["default"]), sel, False)
        return np.bincount(dom[counted], weights=per_node[counted], minlength=size).astype(np.int64)

    def view(s):
        return s.domain_counts_view(frozenset(["default"]), sel, False, "zone", dom, size, counted)

    assert view(state).tolist() == fresh(state).tolist() and not view(state).flags.writeable
    pending = state.index.pending
    for k, p in enumerate(pending):
        state.assume(p, k % 4)
        assert view(state).tolist() == fresh(state).tolist()
    fork = state.fork()
    before = view(state).tolist()
    fork.forget(pending[1])
    fork.forget(state.index.bound[0])
    assert view(fork).tolist() == fresh(fork).tolist() != before
    assert view(state).tolist() == before == fresh(state).tolist()
