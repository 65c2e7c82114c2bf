"""The scheduling queue of one batch (`framework.queue`) and the greedy engine's loop over it: who is retried, when,
and in which order, as kube-scheduler 1.36 does with its clock standing still (the differential tests compare the
same cycles with the real scheduler's)."""

from __future__ import annotations

import pytest
from kplace.models.errors import ConfigError
from kplace.models.index import ClusterIndex
from kplace.solver.framework.config import parse_config
from kplace.solver.framework.queue import ASSIGNED_POD_ADD, ASSIGNED_POD_DELETE, BatchQueue, backoff_seconds
from kplace.solver.greedy import GreedyScheduler
from kplace.solver.testing import build_snapshot, node, pod
from kplace.solver.trace import trace

AFFINITY_TO_DB = {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}}
ANTI_AFFINITY_TO_DB = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}}


def _index(*objs) -> ClusterIndex:
    return ClusterIndex(build_snapshot(list(objs)))


def _cycles(index: ClusterIndex) -> list[tuple[str, int, str | None]]:
    return [(c["pod"].split("/")[1], c["attempt"], c["node"]) for c in trace(index)]


def test_a_pod_whose_required_affinity_target_comes_later_in_the_queue_is_placed_on_its_retry():
    index = _index(node("n1", cpu="4", memory="8Gi"), node("n2", cpu="4", memory="8Gi"),
                   pod("app", cpu="1", spec=AFFINITY_TO_DB, creation="2026-01-01T00:00:00Z"),
                   pod("db", cpu="1", labels={"app": "db"}, creation="2026-01-01T00:00:01Z"))
    db_node = _cycles(index)[1][2]
    assert _cycles(index) == [("app", 1, None), ("db", 1, db_node), ("app", 2, db_node)]
    plan = GreedyScheduler(index).run()
    assert {p.pod: p.node for p in plan.placements} == {"default/app": db_node, "default/db": db_node}


def test_a_pod_rejected_for_a_reason_no_pod_event_changes_waits_out_the_batch():
    index = _index(node("n1", cpu="4", memory="8Gi"),
                   pod("picky", cpu="1", spec={"nodeSelector": {"disk": "ssd"}}, creation="2026-01-01T00:00:00Z"),
                   pod("other", cpu="1", creation="2026-01-01T00:00:01Z"))
    assert _cycles(index) == [("picky", 1, None), ("other", 1, "n1")]


def test_a_pod_bound_that_matches_no_term_of_a_waiting_pod_does_not_requeue_it():
    index = _index(node("n1", cpu="4", memory="8Gi"),
                   pod("app", cpu="1", spec=AFFINITY_TO_DB, creation="2026-01-01T00:00:00Z"),
                   pod("web", cpu="1", labels={"app": "web"}, creation="2026-01-01T00:00:01Z"))
    assert _cycles(index) == [("app", 1, None), ("web", 1, "n1")]


def test_a_preemptor_is_retried_once_its_victims_are_gone_and_takes_its_nominated_node():
    index = _index(node("n1", cpu="2", memory="4Gi"), pod("low", cpu="2", node_name="n1", priority=1),
                   pod("high", cpu="2", priority=100))
    cycles = list(trace(index))
    assert [(c["pod"], c["attempt"], c["nominated"], c["node"]) for c in cycles] == [
        ("default/high", 1, "n1", None), ("default/high", 2, None, "n1")]
    assert cycles[0]["victims"] == ["default/low"] and cycles[1]["feasible"] == ["n1"]


def test_a_victims_deletion_requeues_the_pods_it_may_make_room_for_in_priority_order():
    # "wait" may not preempt and fails first; the preemption for "high" then deletes "low", which may make room for
    # "wait" too: both retry, the higher priority first, and both fit in the room "low" left
    index = _index(node("n1", cpu="2", memory="4Gi"), pod("low", cpu="2", node_name="n1", priority=1),
                   pod("wait", cpu="1", priority=100, spec={"preemptionPolicy": "Never"}),
                   pod("high", cpu="1", priority=50))
    assert _cycles(index) == [("wait", 1, None), ("high", 1, None), ("wait", 2, "n1"), ("high", 2, "n1")]


def test_backoff_doubles_with_each_failure_up_to_the_maximum():
    assert [backoff_seconds(c, 1, 10) for c in range(1, 7)] == [1, 2, 4, 8, 10, 10]
    assert [backoff_seconds(c, 3, 3) for c in range(1, 4)] == [3, 3, 3]


def test_the_backoff_queue_pops_by_expiry_then_priority_then_failure_order():
    index = _index(*(pod(n, cpu="1", priority=p) for n, p in (("a", 1), ("b", 5), ("c", 5), ("d", 9))))
    a, b, c, d = (index.pod_by_key[f"default/{n}"] for n in "abcd")
    queue = BatchQueue([], 1, 10)
    yes = lambda *_: True  # noqa: E731 - every hint says the event may help
    queue.failed(d, frozenset({"NodeResourcesFit"}))
    queue.event(ASSIGNED_POD_DELETE, a, yes)
    assert queue.pop() is d
    for p in (c, a, b, d):  # d's second failure backs off 2 s, the others' first 1 s
        queue.failed(p, frozenset({"NodeResourcesFit"}))
    queue.event(ASSIGNED_POD_DELETE, a, yes)
    assert [queue.pop() for _ in range(5)] == [c, b, a, d, None]


def test_a_pod_that_failed_with_an_error_is_never_retried_within_the_batch():
    index = _index(pod("a", cpu="1"))
    queue = BatchQueue([], 1, 10)
    queue.failed(index.pods[0], frozenset())
    queue.event(ASSIGNED_POD_ADD, index.pods[0], lambda *_: True)
    assert queue.pop() is None and queue.pending() == []


def test_a_pod_group_cycle_takes_its_pods_from_activeq_backoffq_and_the_error_queue_alike():
    index = _index(*(pod(n, cpu="1") for n in ("queued", "backing-off", "errored", "other")))
    queued, backing_off, errored, other = index.pods
    queue = BatchQueue([queued, other], 1, 10)
    queue.tick()
    queue.failed(backing_off, frozenset({"NodeResourcesFit"}), group="ns/job")
    queue.failed(errored, frozenset(), group="ns/job")
    assert queue.take([queued, backing_off, errored]) == [queued, backing_off, errored]
    assert queue.pop() is other and queue.pop() is None


def test_a_failed_pod_group_is_retried_only_after_a_pod_was_bound_or_deleted_since_its_cycle():
    index = _index(pod("w0", cpu="1"), pod("w1", cpu="1"))
    w0, w1 = index.pods
    queue = BatchQueue([], 1, 10)
    queue.tick()
    for p in (w0, w1):  # one rejected by a filter, one waiting at Permit when the group failed
        queue.failed(p, frozenset({"NodeResourcesFit"}) if p is w0 else frozenset(), group="ns/job")
    queue.group_done("ns/job")
    assert queue.pop() is None  # nothing changed: the same cycle would fail the same way
    queue.changed()
    assert queue.pop() is w0


def test_a_moved_nomination_requeues_only_pods_of_no_higher_priority():
    index = _index(*(pod(n, cpu="1", priority=p) for n, p in (("low", 1), ("high", 9), ("moved", 5))))
    low, high, moved = index.pods
    queue = BatchQueue([], 1, 10)
    for p in (low, high):
        queue.failed(p, frozenset({"NodeResourcesFit"}))
    queue.event(ASSIGNED_POD_DELETE, moved, lambda *_: True, at_most=moved.priority)
    assert queue.pop() is low and queue.pop() is None and queue.pending() == [high]


HINTS = [  # (plugin, event, waiting pod's spec/labels, the event's pod, may help)
    ("InterPodAffinity", ASSIGNED_POD_ADD, AFFINITY_TO_DB, {"app": "db"}, True),
    ("InterPodAffinity", ASSIGNED_POD_ADD, AFFINITY_TO_DB, {"app": "web"}, False),
    ("InterPodAffinity", ASSIGNED_POD_DELETE, ANTI_AFFINITY_TO_DB, {"app": "db"}, True),
    ("InterPodAffinity", ASSIGNED_POD_DELETE, AFFINITY_TO_DB, {"app": "db"}, False),
    ("NodeResourcesFit", ASSIGNED_POD_DELETE, {}, {}, True),
    ("PodTopologySpread", ASSIGNED_POD_ADD, {"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "db"}}}]}, {"app": "db"}, True),
    ("PodTopologySpread", ASSIGNED_POD_ADD, {"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": {"app": "db"}}}]}, {"app": "db"}, False),
]


@pytest.mark.parametrize(("plugin", "event", "spec", "labels", "helps"), HINTS)
def test_each_plugins_queueing_hint_answers_as_kubes_does(plugin, event, spec, labels, helps):
    index = _index(node("n1", cpu="4", memory="8Gi"), pod("waiting", cpu="1", spec=spec),
                   pod("other", cpu="1", labels=labels, node_name="n1"))
    sched = GreedyScheduler(index)
    waiting, other = index.pod_by_key["default/waiting"], index.pod_by_key["default/other"]
    assert sched._hint(plugin, event, waiting, other) is helps


def test_a_deleted_pod_frees_host_ports_only_for_a_pod_that_wants_one_of_them():
    ports = {"containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 80, "hostPort": 8080}]}]}
    index = _index(node("n1", cpu="4", memory="8Gi"), pod("wants", spec=ports), pod("other", spec=ports),
                   pod("portless", cpu="1"))
    sched = GreedyScheduler(index)
    wants, other, portless = (index.pod_by_key[f"default/{n}"] for n in ("wants", "other", "portless"))
    assert sched._hint("NodePorts", ASSIGNED_POD_DELETE, wants, other)
    assert not sched._hint("NodePorts", ASSIGNED_POD_DELETE, wants, portless)


@pytest.mark.parametrize(("initial", "maximum"), [(0, 10), (5, 2), ("1", 10)])
def test_a_configuration_with_impossible_backoffs_is_refused_with_the_field_named(initial, maximum):
    raw = {"kind": "KubeSchedulerConfiguration", "podInitialBackoffSeconds": initial, "podMaxBackoffSeconds": maximum}
    with pytest.raises(ConfigError, match=r"cfg.yaml: pod(Initial|Max)BackoffSeconds"):
        parse_config(raw, "cfg.yaml")
