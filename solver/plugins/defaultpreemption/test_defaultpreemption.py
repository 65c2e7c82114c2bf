import json

import pytest
from kplace.instances.generators import generate
from kplace.models import compile_index, load_state
from kplace.models.index import ClusterIndex
from kplace.solver import greedy
from kplace.solver.framework.state import ClusterState
from kplace.solver.greedy import schedule_greedy
from kplace.solver.plugins import defaultpreemption
from kplace.solver.testing import build_snapshot, node, pod


def low(name, cpu, node_name="n1", priority=0, creation=None, labels=None):
    return pod(name, cpu=cpu, node_name=node_name, priority=priority, creation=creation, labels=labels)


def plan_of(*objects, allow_pdb_violations=False):
    return schedule_greedy(ClusterIndex(build_snapshot(*objects)), allow_pdb_violations=allow_pdb_violations)


def victims(plan):
    return sorted(e.pod.split("/")[1] for e in plan.evictions)


T0, T1, T2, T3 = (f"2026-01-01T00:00:0{i}Z" for i in range(4))
PDB = {"kind": "PodDisruptionBudget", "metadata": {"name": "keep", "namespace": "default"},
       "spec": {"selector": {"matchLabels": {"app": "keep"}}, "maxUnavailable": 0},
       "status": {"disruptionsAllowed": 0}}

# (sentence, objects, node the preemptor lands on or None, victims)
CASES = [
    ("A pod evicts only as many lower-priority pods as it needs, reprieving the most important first.",
     [node("n1"), low("a", "900m", creation=T0), low("b", "900m", creation=T1), low("c", "900m", creation=T2),
      low("d", "900m", creation=T3), pod("p", cpu="3", priority=10)], "n1", ["b", "c", "d"]),
    ("Higher-priority victims are reprieved before earlier-started ones.",
     [node("n1"), low("a", "2", priority=5, creation=T1), low("b", "2", creation=T0), pod("p", cpu="2", priority=10)],
     "n1", ["b"]),
    ("Pods of the preemptor's priority or above are never victims.",
     [node("n1"), low("a", "3", priority=10), low("b", "1"), pod("p", cpu="2", priority=10)], None, []),
    ("A node whose lower-priority pods cannot free enough is passed over for one that can.",
     [node("n1"), low("a", "3", priority=20), low("b", "1"), node("n2"), low("c", "4", node_name="n2"),
      pod("p", cpu="2", priority=10)], "n2", ["c"]),
    ("The node whose victims have the lowest highest priority wins.",
     [node("n1"), low("a", "4", priority=5), node("n2"), low("b", "4", node_name="n2", priority=1),
      pod("p", cpu="2", priority=10)], "n2", ["b"]),
    ("A free pod slot is room too: a full node's lowest pod goes even when resources would fit.",
     [node("n1", pods=2), low("a", "100m", creation=T0), low("b", "100m", creation=T1),
      pod("p", cpu="100m", priority=10)], "n1", ["b"]),
    ("A resource kube does not track (no domain, not native) does not stop preemption.",
     [node("n1"), low("a", "4"), pod("p", cpu="2", priority=10, extra={"foo": "1"})], "n1", ["a"]),
    ("A PDB that allows no disruption protects its pods: the preemptor stays pending.",
     [node("n1"), low("a", "4", labels={"app": "keep"}), PDB, pod("p", cpu="2", priority=10)], None, []),
    ("A PDB-protected pod is reprieved first when another victim makes room.",
     [node("n1"), low("a", "2", labels={"app": "keep"}, creation=T1), low("b", "2", creation=T0), PDB,
      pod("p", cpu="2", priority=10)], "n1", ["b"]),
    ("A pod nominated to the node holds its room against a lower-priority preemptor.",
     [node("n1"), low("a", "900m", creation=T0), low("b", "900m", creation=T1), low("c", "900m", creation=T2),
      low("d", "900m", creation=T3), pod("q", cpu="3", priority=20), pod("p", cpu="2", priority=10)],
     None, ["b", "c", "d"]),
    ("A lower-priority preemptor may still take the room left beside a nominated pod.",
     [node("n1"), low("a", "900m", creation=T0), low("b", "900m", creation=T1), low("c", "900m", creation=T2),
      low("d", "900m", creation=T3), pod("q", cpu="3", priority=20), pod("p", cpu="1", priority=10)],
     "n1", ["a", "b", "c", "d"]),
]


@pytest.mark.parametrize(("objects", "where", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_greedy_preemption_picks_kubes_victims(objects, where, want):
    plan = plan_of(*objects)
    placed = {p.pod.split("/")[1]: p.node for p in plan.placements}
    assert placed["p"] == where
    assert victims(plan) == want


def test_allowing_pdb_violations_lets_the_preemptor_evict_a_protected_pod():
    plan = plan_of(node("n1"), low("a", "4", labels={"app": "keep"}), PDB, pod("p", cpu="2", priority=10),
                   allow_pdb_violations=True)
    assert victims(plan) == ["a"]
    assert [e.pdb_violation for e in plan.evictions] == [True]


SHAPES = ([("priority-overload", 8, 30, s, {}) for s in range(8)] + [("preemption-pdb", 8, 20, s, {}) for s in range(8)]
          + [("corners", None, None, s, {}) for s in range(30)]
          + [("scale", 60, 600, s, {"load": "95", "pending": "150"}) for s in range(4)])


@pytest.mark.parametrize(("workload", "nodes", "pods", "seed", "params"), SHAPES)
def test_the_room_shortcuts_pick_the_same_victims_as_the_filters_dry_run(workload, nodes, pods, seed, params,
                                                                         monkeypatch, tmp_path):
    """The room decides alone where the filters read no pod, or none of those the dry run removes or the nominated
    pods add (`inert`)."""
    path = tmp_path / "state.json"
    path.write_text(json.dumps(generate(workload, nodes=nodes, pods=pods, seed=seed, params=params)))
    fast = schedule_greedy(compile_index(load_state([str(path)])))
    monkeypatch.setattr(defaultpreemption._Fits, "by_room", lambda self, node: False)
    monkeypatch.setattr(defaultpreemption._Fits, "inert", lambda self, pods: False)
    monkeypatch.setattr(greedy, "inert", lambda *args: False)  # the nominated pods' dry runs too
    slow = schedule_greedy(compile_index(load_state([str(path)])))
    assert [(p.pod, p.node, p.reason) for p in fast.placements] == [(p.pod, p.node, p.reason) for p in slow.placements]
    assert fast.evictions == slow.evictions


@pytest.mark.parametrize("seed", [1, 2])
def test_the_walks_statuses_settled_by_arithmetic_are_those_the_dry_runs_give(monkeypatch, seed):
    """Crowded production-shaped states (many preemptors, many nodes with no room): the same plan, messages
    included, with the arithmetic (`_QuickStatuses`) and with every node of the walk dry-run."""
    state = generate("scale", nodes=200, pods=2000, seed=seed, params={"load": "90", "pending": "300"})
    index = ClusterIndex(build_snapshot(state["items"] if isinstance(state, dict) else state))
    quick = schedule_greedy(index).to_dict()
    real = defaultpreemption._QuickStatuses.__init__

    def nothing_known(self, *args):
        real(self, *args)
        self.known[:] = False

    monkeypatch.setattr(defaultpreemption._QuickStatuses, "__init__", nothing_known)
    slow = schedule_greedy(index).to_dict()
    assert quick["placements"] == slow["placements"] and quick["evictions"] == slow["evictions"]
    assert any("preemption:" in (p["reason"] or "") for p in quick["placements"])


@pytest.mark.parametrize("seed", range(3))
def test_the_lower_priority_room_kept_up_to_date_equals_one_counted_afresh(seed):
    index = ClusterIndex(build_snapshot(generate("scale", nodes=80, pods=800, seed=seed, params={"pending": "100"})
                                        ["items"]))
    state = ClusterState(index)
    priorities = sorted(set(index.pod_priority.tolist()))
    cols = list(range(index.pod_req.shape[1]))
    for p in priorities:
        defaultpreemption.lower_priority_room(state, p, cols)  # cached
    bound = [p for p in index.pods if state.pod_node[p.idx] >= 0]
    for k, pending in enumerate(index.pending[:20]):  # two nodes change between calls: brought up to date
        state.assume(pending, k % state.n_nodes)
        state.forget(bound[k])
        for p in priorities:
            kept = defaultpreemption.lower_priority_room(state, p, cols)
            afresh = state.fork()
            afresh.plugin_cache = {}
            fresh = defaultpreemption.lower_priority_room(afresh, p, cols)
            assert kept[0].tolist() == fresh[0].tolist()
            assert all(kept[1][c].tolist() == fresh[1][c].tolist() for c in cols)


@pytest.mark.parametrize(("workload", "nodes", "pods", "seed", "params"),
                         [s for s in SHAPES if s[0] in ("priority-overload", "scale")])
def test_the_encodings_candidates_and_the_room_they_free_are_those_counted_pod_by_pod(workload, nodes, pods, seed,
                                                                                      params, tmp_path):
    from kplace.solver.cpsat.options import profile_of
    from kplace.solver.framework.config import default_config
    from kplace.solver.plugins.defaultpreemption import encoding

    path = tmp_path / "state.json"
    path.write_text(json.dumps(generate(workload, nodes=nodes, pods=pods, seed=seed, params=params)))
    index = compile_index(load_state([str(path)]))
    profile = profile_of(default_config())
    reps = index.pending[::7]
    got = encoding.candidates(ClusterState(index), reps, profile)
    top = max(r.priority for r in reps if encoding.may_preempt(r, profile(r)))
    selecting = encoding.selectors(index, reps, profile)
    want = [p for p in index.pods if p.node >= 0 and not p.pending and p.priority < top
            and encoding._inert(index, p) and not encoding._selected_by(index, p, selecting)]
    assert got.pods and [v.key for v in got.pods] == [v.key for v in want]
    for priority in sorted({r.priority for r in reps}):
        counted = {}
        for v in got.pods:
            if v.priority < priority:
                row = counted.setdefault(int(v.node), [0] * (index.pod_req.shape[1] + 1))
                for r, q in enumerate([*index.pod_req[v.idx].tolist(), 1]):
                    row[r] += q
        assert {n: row.tolist() for n, row in encoding.freed_on(got, index, priority).items()} == counted
