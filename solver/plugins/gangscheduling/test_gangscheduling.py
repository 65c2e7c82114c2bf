"""Gangs, both engines and the verifier: all of a gang or none, at least minCount counting its running pods, in one
domain of its topology key; kube 1.36's PodGroup (scheduling.k8s.io) and scheduler-plugins' (scheduling.x-k8s.io)."""

from __future__ import annotations

import pytest
from kplace.models.index import ClusterIndex
from kplace.models.plan import Placement, Plan
from kplace.solver.cpsat import CpsatOptions, schedule_cpsat
from kplace.solver.greedy import schedule_greedy
from kplace.solver.testing import build_snapshot, node, pod
from kplace.solver.verify import verify_plan

OPTS = CpsatOptions(time_limit=2, workers=1)
ZONE = "topology.kubernetes.io/zone"


def kube_group(name: str, min_count: int, topology: str | None = None) -> dict:
    spec: dict = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def cosched_group(name: str, min_member: int) -> dict:
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"minMember": min_member}}


def member(name: str, group: str, cpu: str, i: int, label: bool = False) -> dict:
    at = f"2026-01-01T00:00:{i:02d}Z"
    if label:
        return pod(name, cpu=cpu, labels={"scheduling.x-k8s.io/pod-group": group}, creation=at)
    return pod(name, cpu=cpu, spec={"schedulingGroup": {"podGroupName": group}}, creation=at)


def _index(*objs) -> ClusterIndex:
    return ClusterIndex(build_snapshot(list(objs)))


def _on(plan) -> dict[str, str]:
    return {p.pod.split("/", 1)[1]: p.node for p in plan.placements if p.node}


PERMIT_WAIT = ("pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, one or more plugins "
               "asked to wait and no plugin rejected pod")
NO_ROOM = "0/1 nodes are available: 1 Insufficient cpu."


@pytest.mark.parametrize(("label", "held"), [
    # kube's pod-group cycle: three pods fit and wait at Permit, the fourth does not fit; the group fails
    (False, PERMIT_WAIT),
    # coscheduling, one pod at a time: three pods held their nodes, then left at the end of the batch
    (True, "PodGroup default/job: only 3 of minCount 4"),
], ids=["scheduling.k8s.io", "scheduling.x-k8s.io"])
def test_a_gang_that_cannot_reach_its_minimum_places_nobody_in_either_engine(label, held):
    group = cosched_group("job", 4) if label else kube_group("job", 4)
    index = _index(node("a", cpu="3"), group, *(member(f"w{i}", "job", "1", i, label) for i in range(4)))
    assert len(index.gangs) == 1 and index.gangs[0].min_count == 4
    greedy, cpsat = schedule_greedy(index), schedule_cpsat(index, options=OPTS)
    for plan in (greedy, cpsat):
        assert _on(plan) == {} and verify_plan(index, plan) == []
    # the fourth fails kube's filters, and says so; CP-SAT decides the gang as a whole
    assert [p.reason.startswith(held) for p in greedy.placements] == [True, True, True, False]
    assert greedy.placements[3].reason.startswith(NO_ROOM)
    assert all(p.reason.startswith("PodGroup default/job") for p in cpsat.placements)


@pytest.mark.parametrize(("label", "single_placed"), [
    (False, True),  # kube's pod-group cycle undoes the group's assumptions before the next pod
    (True, False),  # coscheduling: the gang holds the node until the end of the batch
], ids=["scheduling.k8s.io", "scheduling.x-k8s.io"])
def test_a_pod_queued_after_a_gang_that_fails_sees_the_node_it_would_have_held_only_under_kube(label, single_placed):
    group = cosched_group("job", 4) if label else kube_group("job", 4)
    index = _index(node("a", cpu="3"), group, *(member(f"w{i}", "job", "1", i, label) for i in range(4)),
                   pod("single", cpu="3", creation="2026-01-01T00:00:09Z"))
    plan = schedule_greedy(index)
    assert _on(plan) == ({"single": "a"} if single_placed else {})
    assert verify_plan(index, plan) == []


def test_kube_schedules_a_pod_group_by_priority_then_queue_order_so_the_first_pods_take_the_best_nodes():
    # "late" has the higher priority: kube's cycle tries it first, and it takes the emptier node "b"
    late = member("late", "job", "1", 5)
    late["spec"]["priority"] = 10
    index = _index(node("a", cpu="4"), node("b", cpu="8"), kube_group("job", 2), member("early", "job", "3", 0),
                   late)
    plan = schedule_greedy(index)
    assert _on(plan) == {"late": "b", "early": "b"}  # "early" first would take "b" and leave "late" to "a"


def test_the_window_places_a_gang_that_kube_one_pod_at_a_time_leaves_out():
    # kube spreads the two small pods over two nodes, so the gang's second pod finds no room and the gang releases
    # its first; the window puts the small pods together and the gang on the two nodes left
    index = _index(node("a", cpu="4"), node("b", cpu="4"), node("c", cpu="4"),
                   pod("s1", cpu="2", creation="2026-01-01T00:00:00Z"),
                   pod("s2", cpu="2", creation="2026-01-01T00:00:01Z"),
                   kube_group("job", 2), member("w0", "job", "3", 2), member("w1", "job", "3", 3))
    greedy, cpsat = schedule_greedy(index), schedule_cpsat(index, options=OPTS)
    assert set(_on(greedy)) == {"s1", "s2"}
    assert set(_on(cpsat)) == {"s1", "s2", "w0", "w1"}
    assert verify_plan(index, greedy) == [] and verify_plan(index, cpsat) == []


def test_with_pods_placed_at_their_best_the_window_runs_the_most_gangs():
    # 4 CPUs: gang "big" (4 pods) or gangs "a" and "b" (2 pods each) place 4 pods either way; kube takes "big",
    # first in the queue; the window's gangs stage runs two jobs instead of one
    index = _index(node("n", cpu="4"), kube_group("big", 4), kube_group("a", 2), kube_group("b", 2),
                   *(member(f"big-{i}", "big", "1", i) for i in range(4)),
                   *(member(f"a-{i}", "a", "1", 4 + i) for i in range(2)),
                   *(member(f"b-{i}", "b", "1", 6 + i) for i in range(2)))
    greedy, cpsat = schedule_greedy(index), schedule_cpsat(index, options=OPTS)
    assert sorted(_on(greedy)) == [f"big-{i}" for i in range(4)]
    assert sorted(_on(cpsat)) == ["a-0", "a-1", "b-0", "b-1"]
    assert verify_plan(index, cpsat) == []


def test_a_gang_that_prefers_a_topology_lands_in_one_domain_when_it_can_and_kube_ignores_the_preference():
    nodes = [node(f"{z}{i}", cpu="4", labels={ZONE: z}) for z in "ab" for i in range(2)]
    pods = []
    for i in range(4):
        m = member(f"w{i}", "job", "2", i)
        m["metadata"]["annotations"] = {"kueue.x-k8s.io/podset-preferred-topology": ZONE}
        pods.append(m)
    index = _index(*nodes, kube_group("job", 4), *pods)
    assert index.gangs[0].preferred_key == ZONE and index.gangs[0].topology_key is None
    greedy, cpsat = schedule_greedy(index), schedule_cpsat(index, options=OPTS)
    zone = {n["metadata"]["name"]: n["metadata"]["labels"][ZONE] for n in nodes}
    assert len({zone[n] for n in _on(greedy).values()}) == 2  # LeastAllocated spreads it
    assert len(_on(cpsat)) == 4 and len({zone[n] for n in _on(cpsat).values()}) == 1
    assert verify_plan(index, cpsat) == []


@pytest.mark.parametrize(("label", "why"), [
    (False, "waiting for minCount pods from a gang to appear in scheduling queue"),  # kube's PreEnqueue
    (True, "waiting for 1 more pods of PodGroup default/job"),
], ids=["scheduling.k8s.io", "scheduling.x-k8s.io"])
def test_a_gang_with_fewer_pods_than_its_minimum_waits_in_the_queue(label, why):
    group = cosched_group("job", 3) if label else kube_group("job", 3)
    index = _index(node("a", cpu="8"), group, member("w0", "job", "1", 0, label), member("w1", "job", "1", 1, label))
    for plan in (schedule_greedy(index), schedule_cpsat(index, options=OPTS)):
        assert _on(plan) == {}
        assert all(p.reason.startswith(why) for p in plan.placements)


def test_a_pod_naming_a_pod_group_the_state_lacks_waits_for_it_as_kube_does():
    index = _index(node("a", cpu="8"), kube_group("other", 1), member("w0", "job", "1", 0), pod("single", cpu="1"))
    plan = schedule_greedy(index)
    assert _on(plan) == {"single": "a"}
    assert plan.placements[0].reason == 'waiting for pods\'s pod group "job" to appear in scheduling queue'


def test_running_pods_of_a_gang_count_towards_its_minimum():
    index = _index(node("a", cpu="2"), node("b", cpu="1"), kube_group("job", 3),
                   pod("w0", cpu="1", node_name="a", spec={"schedulingGroup": {"podGroupName": "job"}}),
                   member("w1", "job", "1", 1), member("w2", "job", "1", 2))
    for plan in (schedule_greedy(index), schedule_cpsat(index, options=OPTS)):
        assert set(_on(plan)) == {"w1", "w2"}


def test_a_gang_with_a_topology_key_lands_in_one_domain_or_not_at_all():
    nodes = [node(f"{z}{i}", cpu="2", labels={ZONE: z}) for z in ("x", "y") for i in range(2)]
    fits = _index(*nodes, kube_group("job", 2, ZONE), *(member(f"w{i}", "job", "2", i) for i in range(2)))
    for plan in (schedule_greedy(fits), schedule_cpsat(fits, options=OPTS)):  # greedy: the first pod's zone holds
        assert len(_on(plan)) == 2 and len({n[0] for n in _on(plan).values()}) == 1  # the second
        assert verify_plan(fits, plan) == []
    too_big = _index(*nodes, kube_group("job", 3, ZONE), *(member(f"w{i}", "job", "2", i) for i in range(3)))
    for plan in (schedule_greedy(too_big), schedule_cpsat(too_big, options=OPTS)):
        assert _on(plan) == {} and verify_plan(too_big, plan) == []


def test_the_verifier_rejects_a_plan_that_places_part_of_a_gang():
    index = _index(node("a", cpu="8"), kube_group("job", 2), member("w0", "job", "1", 0), member("w1", "job", "1", 1))
    partial = Plan(engine="test", placements=[Placement("default/w0", "a", None, 0),
                                              Placement("default/w1", None, "left out", 0)])
    assert [(v.pod, v.rule) for v in verify_plan(index, partial)] == [("default/w0", "GangScheduling")]


def test_a_pod_group_that_needs_preemption_waits_nominated_then_binds_once_its_victims_are_gone():
    # kube's cycle keeps w0's victim in its state, so w1 needs preemption too: on "a" again (tied with "b", where
    # kube picks at random and kplace takes the first), whose victim w0 already evicted. The group passes Permit
    # with both assumed, waits for the preemption, and binds on its retry.
    from kplace.solver.trace import trace

    gang = []
    for i in range(2):
        m = member(f"w{i}", "job", "2", i + 1)
        m["spec"]["priority"] = 100
        gang.append(m)
    index = _index(node("a", cpu="4"), node("b", cpu="4"), pod("low1", cpu="3", node_name="a"),
                   pod("low2", cpu="3", node_name="b"), kube_group("job", 2), *gang)
    cycles = [(c["pod"][8:], c["attempt"], c["node"], c["nominated"], c["victims"]) for c in trace(index)]
    assert cycles == [("w0", 1, None, "a", ["default/low1"]), ("w1", 1, None, "a", []),
                      ("w0", 2, "a", None, []), ("w1", 2, "a", None, [])]
    plan = schedule_greedy(index)
    assert [e.pod for e in plan.evictions] == ["default/low1"] and verify_plan(index, plan) == []


def test_the_oracle_runs_with_kubes_pod_group_gates_exactly_when_a_pod_names_a_pod_group():
    from kplace.solver.oracle import POD_GROUP_GATES, oracle_flags

    kube = _index(node("a"), kube_group("job", 1), member("w0", "job", "1", 0))
    cosched = _index(node("a"), cosched_group("job", 1), member("w0", "job", "1", 0, label=True))
    assert oracle_flags(kube) == POD_GROUP_GATES and oracle_flags(cosched) == ()
