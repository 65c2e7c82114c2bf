"""OpportunisticBatching's pieces (`framework.batch`) and the greedy engine's use of them, without the oracle (the
differential tests check the same against the real kube-scheduler)."""

from __future__ import annotations

import heapq
import random

import pytest
from kplace.models.index import ClusterIndex
from kplace.solver.framework.batch import NodeHeap, signable_profile, signature
from kplace.solver.framework.config import default_config, parse_config
from kplace.solver.greedy import GreedyScheduler, heap_preorder_rank
from kplace.solver.testing import build_snapshot, node, pod

NO_SPREAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
             "profiles": [{"schedulerName": "default-scheduler",
                           "plugins": {"multiPoint": {"disabled": [{"name": "PodTopologySpread"}]}}}]}


def _index(*objs) -> ClusterIndex:
    return ClusterIndex(build_snapshot(list(objs)))


@pytest.mark.parametrize("seed", range(20))
def test_the_node_heap_pops_the_highest_total_first_and_its_first_pop_is_kubes_selected_node(seed):
    rng = random.Random(seed)
    totals = [rng.choice([3, 5, 5, 7, 7, 7]) for _ in range(rng.randint(1, 40))]
    heap = NodeHeap(list(range(len(totals))), totals)
    rank = heap_preorder_rank(len(totals))
    best = max(totals)
    assert heap.pop() == min((i for i, t in enumerate(totals) if t == best), key=lambda i: rank[i])
    popped = [totals[heap.pop()] for _ in range(len(totals) - 1)]
    assert popped == sorted(popped, reverse=True) == heapq.nlargest(len(popped), popped)


def test_no_pod_is_signed_under_the_default_profile_whose_system_spread_defaults_are_unsignable():
    profile = default_config().profile_for("default-scheduler")
    assert not signable_profile(profile, [])
    assert signable_profile(parse_config(NO_SPREAD).profile_for("default-scheduler"), [])


def test_without_spread_identical_pods_share_a_signature_and_any_scheduling_difference_breaks_it():
    index = _index(node("n1"), pod("a", cpu="1", labels={"app": "x"}), pod("b", cpu="1", labels={"app": "x"}),
                   pod("c", cpu="1", labels={"app": "y"}),
                   pod("d", cpu="1", labels={"app": "x"}, spec={"nodeSelector": {"disk": "ssd"}}),
                   pod("e", cpu="1", labels={"app": "x"}, spec={"affinity": {"podAntiAffinity": {
                       "requiredDuringSchedulingIgnoredDuringExecution": [
                           {"topologyKey": "kubernetes.io/hostname", "labelSelector": {}}]}}}))
    profile = parse_config(NO_SPREAD).profile_for("default-scheduler")
    sig = {p.name: signature(profile, p, tuple(index.pod_req[p.idx].tolist())) for p in index.pending}
    assert sig["a"] is not None and sig["a"] == sig["b"]
    assert len({sig["a"], sig["c"], sig["d"]}) == 3  # labels (InterPodAffinity) and the node selector count
    assert sig["e"] is None  # pod anti-affinity cannot be signed


def test_once_the_last_node_is_full_a_batch_takes_the_next_node_of_the_previous_cycles_heap():
    objs = [node(f"n{i}", cpu="4", memory="8Gi") for i in range(6)]
    objs += [pod(f"big-{i}", cpu="3", memory="1Gi") for i in range(4)]
    index = _index(*objs)
    config = parse_config(NO_SPREAD)
    heap = NodeHeap(list(range(6)), [1] * 6)  # six equal nodes: Go's heap pops n0, then n5, n4, n3
    expected = [index.node_names[heap.pop()] for _ in range(4)]
    assert [p.node for p in GreedyScheduler(index, config).run().placements] == expected == ["n0", "n5", "n4", "n3"]
    # a full cycle each time takes the first top node in heap preorder of the new feasible list instead
    without = GreedyScheduler(index, config, batching=False).run()
    assert [p.node for p in without.placements] == ["n0", "n1", "n2", "n3"]


def test_a_nominated_pod_counts_in_the_filters_of_lower_priority_pods_only_and_never_in_scores():
    index = _index(node("n1", cpu="2", memory="4Gi"), node("n2", cpu="2", memory="4Gi"),
                   pod("busy", cpu="2", memory="1Gi", node_name="n2"),
                   pod("nominee", cpu="1", memory="1Gi", priority=100),
                   pod("low", cpu="2", memory="1Gi", priority=10), pod("high", cpu="1", memory="1Gi", priority=500))
    nominee, low, high = (index.pod_by_key[f"default/{n}"] for n in ("nominee", "low", "high"))
    n1 = index.node_id["n1"]
    sched = GreedyScheduler(index, preemption=False)
    sched._add_nomination(nominee, n1)
    assert sched.schedule_one(low).node is None  # the only free node holds room for the nominee
    plain = GreedyScheduler(index, preemption=False)
    assert plain.schedule_one(low).node == n1  # without the nomination it fits
    assert sched.schedule_one(high).node == n1  # a higher-priority pod ignores the nomination


def test_a_nominated_pod_does_not_change_the_scores_of_the_pods_whose_filters_count_it():
    from kplace.solver.trace import trace

    objs = [node("n1", cpu="4", memory="8Gi"), node("n2", cpu="4", memory="8Gi"),
            pod("nominee", cpu="2", memory="2Gi", priority=100),
            pod("low", cpu="1", memory="1Gi", priority=10)]
    index = _index(*objs)
    low = index.pod_by_key["default/low"]
    plain = next(iter(trace(index, pods=[low])))
    with_nomination = GreedyScheduler(index)
    with_nomination._add_nomination(index.pod_by_key["default/nominee"], index.node_id["n1"])
    from kplace.solver.trace import _Cycle

    with_nomination.tracer = cycle = _Cycle(index, None)
    with_nomination.schedule_one(low)
    assert cycle.record["feasible"] == plain["feasible"] == ["n1", "n2"]
    assert cycle.record["scores"] == plain["scores"]


def test_a_pod_rejected_at_prefilter_in_between_ends_the_batch_as_kubes_cycle_count_does():
    objs = [node(f"n{i}", cpu="4", memory="8Gi") for i in range(6)]
    objs += [pod(f"big-{i}", cpu="3", memory="1Gi") for i in range(2)]
    objs.append(pod("broken", cpu="3", memory="1Gi",
                    spec={"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "missing"}}]}))
    objs += [pod(f"big-{i}", cpu="3", memory="1Gi") for i in range(2, 4)]
    plan = GreedyScheduler(_index(*objs), parse_config(NO_SPREAD)).run()
    # as the real kube-scheduler v1.36.3 places them (oracle/, tests/conformance/profiles/batching.yaml)
    assert [p.node for p in plan.placements] == ["n0", "n5", None, "n1", "n4"]
