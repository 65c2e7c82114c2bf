"""The PreFilter extensions (kube's AddPod/RemovePod) agree with a PreFilter computed afresh."""

import random

import numpy as np
import pytest
from kplace.instances.generators import generate
from kplace.models.index import ClusterIndex
from kplace.solver.framework.config import default_config
from kplace.solver.framework.plugin import CycleState
from kplace.solver.framework.runtime import run_filters, run_pre_filter, update_pre_filter
from kplace.solver.framework.state import ClusterState
from kplace.solver.plugins.podtopologyspread.spread import pod_constraints
from kplace.solver.testing import build_snapshot

EXTENDED = ("InterPodAffinity", "PodTopologySpread")
PROFILE = next(iter(default_config().profiles.values()))


def _filters(profile, state, pod, cycle, skipped):
    nodes = np.arange(state.n_nodes, dtype=np.int64)
    out = run_filters(profile, state, pod, cycle, nodes, skipped)
    return out.code.tolist(), [out.reasons(i) for i in range(len(nodes))]


def _comparable(index, pod, other) -> bool:
    """kube's extensions differ from a fresh PreFilter on purpose where kube's do: a terminating pod (never
    counted, still subtracted) and a `{}` spread selector (counts nothing, matches every pod added)."""
    return not other.terminating and not any(c.selector.empty for c in pod_constraints(index, pod, "DoNotSchedule", []))


def _round_trips(seed: int):
    """For pending pods whose extended PreFilters run, and up to 6 bound pods each: (filters with the pod removed
    through the extensions, afresh; with it added back through them, in the original cycle)."""
    index = ClusterIndex(build_snapshot(generate("corners", seed=seed)["items"]))
    state = ClusterState(index)
    rng = random.Random(seed)
    bound = [p for p in index.pods if state.pod_node[p.idx] >= 0]
    for pod in index.pending:
        cycle = CycleState()
        pre = run_pre_filter(PROFILE, state, pod, cycle)
        if pre.code != 0 or not set(EXTENDED) - pre.skipped:
            continue
        for other in rng.sample(bound, min(6, len(bound))):
            if not _comparable(index, pod, other):
                continue
            node = int(state.pod_node[other.idx])
            incremental = cycle.clone()
            state.forget(other)
            update_pre_filter(PROFILE, state, pod, incremental, pre.skipped, other, node, -1)
            fresh = CycleState()
            run_pre_filter(PROFILE, state, pod, fresh)
            removed = (_filters(PROFILE, state, pod, incremental, pre.skipped),
                       _filters(PROFILE, state, pod, fresh, pre.skipped))
            state.assume(other, node)
            update_pre_filter(PROFILE, state, pod, incremental, pre.skipped, other, node, +1)
            yield removed, (_filters(PROFILE, state, pod, incremental, pre.skipped),
                            _filters(PROFILE, state, pod, cycle, pre.skipped))


@pytest.mark.parametrize("seed", range(40))
def test_removing_then_adding_a_pod_through_the_extensions_matches_a_fresh_prefilter(seed):
    for (inc_removed, fresh_removed), (inc_back, original) in _round_trips(seed):
        assert inc_removed == fresh_removed
        assert inc_back == original


def test_the_round_trips_include_removals_that_change_the_filters_verdicts():
    changed = sum(removed[0] != back[1] for seed in range(40) for removed, back in _round_trips(seed))
    assert changed >= 10


def test_a_clone_leaves_the_original_prefilter_state_untouched():
    index = ClusterIndex(build_snapshot(generate("perf-pod-anti-affinity", nodes=6, pods=2, seed=0,
                                                 params={"init": "3"})["items"]))
    profile, state = PROFILE, ClusterState(index)
    pod = index.pending[0]
    cycle = CycleState()
    pre = run_pre_filter(profile, state, pod, cycle)
    before = _filters(profile, state, pod, cycle, pre.skipped)
    clone = cycle.clone()
    for other in [p for p in index.pods if state.pod_node[p.idx] >= 0]:
        update_pre_filter(profile, state, pod, clone, pre.skipped, other, int(state.pod_node[other.idx]), -1)
    assert _filters(profile, state, pod, cycle, pre.skipped) == before
    assert _filters(profile, state, pod, clone, pre.skipped) != before  # the clone no longer sees the init pods


def _unread_removals(seed: int):
    """(plugin, its Filter's codes and reasons on every node before, after) for each filter plugin that says it
    does not read a bound pod (`Plugin.filter_reads`), that pod removed through the extensions."""
    index = ClusterIndex(build_snapshot(generate("corners", seed=seed)["items"]))
    state = ClusterState(index)
    rng = random.Random(seed)
    bound = [p for p in index.pods if state.pod_node[p.idx] >= 0]
    nodes = np.arange(state.n_nodes, dtype=np.int64)

    def verdict(plugin, cycle):
        res = plugin.filter(state, pod, cycle, nodes)
        return res.code.tolist(), [res.reasons_of(i) for i in range(len(nodes))]

    for pod in index.pending:
        cycle = CycleState()
        pre = run_pre_filter(PROFILE, state, pod, cycle)
        if pre.code != 0:
            continue
        plugins = [p for p in PROFILE.at("filter") if p.name not in pre.skipped]
        for other in rng.sample(bound, min(8, len(bound))):
            unread = [p for p in plugins if not p.filter_reads(state, pod, cycle, other)]
            before = [verdict(p, cycle) for p in unread]
            node = int(state.pod_node[other.idx])
            removed = cycle.clone()
            state.forget(other)
            update_pre_filter(PROFILE, state, pod, removed, pre.skipped, other, node, -1)
            after = [verdict(p, removed) for p in unread]
            state.assume(other, node)
            yield from ((p.name, b, a) for p, b, a in zip(unread, before, after, strict=True))


@pytest.mark.parametrize("seed", range(40))
def test_a_filter_that_does_not_read_a_pod_gives_the_same_verdict_without_it(seed):
    for name, before, after in _unread_removals(seed):
        assert before == after, name


def test_the_unread_removals_include_pods_the_pod_reading_filters_ignore():
    names = {name for seed in range(40) for name, _, _ in _unread_removals(seed)}
    assert {"InterPodAffinity", "PodTopologySpread"} <= names


def _static_verdicts(seed: int):
    """(plugin, pending pod's `node_keys`, its Filter's codes on every node) for each static filter
    (`Plugin.static_filter`): on the loaded state, then with every pending pod assumed where it first fits."""
    index = ClusterIndex(build_snapshot(generate("corners", seed=seed)["items"]))
    state = ClusterState(index)
    nodes = np.arange(state.n_nodes, dtype=np.int64)
    static = [p for p in PROFILE.at("filter") if p.static_filter]

    def verdicts():
        for pod in index.pending:
            cycle = CycleState()
            pre = run_pre_filter(PROFILE, state, pod, cycle)
            for p in static:
                if pre.code == 0 and p.name not in pre.skipped:
                    yield p.name, index.node_keys(pod), p.filter(state, pod, cycle, nodes).code.tolist()

    before = list(verdicts())
    for pod in index.pending:
        out = run_filters(PROFILE, state, pod, CycleState(), nodes, set())
        if (out.code == 0).any():
            state.assume(pod, int(nodes[out.code == 0][0]))
    return before, list(verdicts())


@pytest.mark.parametrize("seed", range(40))
def test_a_static_filter_gives_pods_with_the_same_node_keys_the_same_verdict_whatever_the_state(seed):
    before, after = _static_verdicts(seed)
    assert before == after
    by_key: dict = {}
    for name, keys, codes in before:
        assert by_key.setdefault((name, keys), codes) == codes, name


def test_the_static_verdicts_include_pods_that_share_keys_and_verdicts_that_differ_between_nodes():
    runs = [_static_verdicts(seed)[0] for seed in range(40)]
    shared = sum(len(run) - len({(name, keys) for name, keys, _ in run}) for run in runs)
    assert shared >= 50
    assert {name for run in runs for name, _, codes in run if len(set(codes)) > 1} >= {
        "NodeUnschedulable", "TaintToleration", "NodeAffinity"}
