import pytest
from kplace.solver.testing import build_snapshot, node, pod


def with_conditions(conds, taints=None):
    n = node("n1", taints=taints)
    n["status"]["conditions"] = [{"type": t, "status": s} for t, s in conds]
    return n


CASES = [
    ("A Ready node gets no taint.", [("Ready", "True")], set()),
    ("A NotReady node gets not-ready NoSchedule and NoExecute.", [("Ready", "False")],
     {("node.kubernetes.io/not-ready", "NoSchedule"), ("node.kubernetes.io/not-ready", "NoExecute")}),
    ("An Unknown Ready condition gets unreachable NoSchedule and NoExecute.", [("Ready", "Unknown")],
     {("node.kubernetes.io/unreachable", "NoSchedule"), ("node.kubernetes.io/unreachable", "NoExecute")}),
    ("Memory pressure gets memory-pressure NoSchedule.", [("Ready", "True"), ("MemoryPressure", "True")],
     {("node.kubernetes.io/memory-pressure", "NoSchedule")}),
    ("Disk and PID pressure and an unavailable network each get their taint.",
     [("DiskPressure", "True"), ("PIDPressure", "True"), ("NetworkUnavailable", "True")],
     {("node.kubernetes.io/disk-pressure", "NoSchedule"), ("node.kubernetes.io/pid-pressure", "NoSchedule"),
      ("node.kubernetes.io/network-unavailable", "NoSchedule")}),
    ("A pressure condition that is False gets nothing.", [("MemoryPressure", "False")], set()),
]


@pytest.mark.parametrize(("name", "conds", "want"), CASES, ids=[c[0] for c in CASES])
def test_condition_taints_are_added_at_load_time(name, conds, want):
    snap = build_snapshot(with_conditions(conds))
    assert {(t.key, t.effect) for t in snap.nodes[0].spec.taints} == want
    assert bool([w for w in snap.warnings if "node lifecycle controller" in w]) == bool(want)


def test_an_existing_taint_is_not_duplicated_and_no_warning_is_given():
    taints = [{"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}]
    snap = build_snapshot(with_conditions([("MemoryPressure", "True")], taints))
    assert len(snap.nodes[0].spec.taints) == 1 and not snap.warnings


def test_a_not_ready_node_takes_only_pods_that_tolerate_it():
    from kplace.solver.greedy import GreedyScheduler
    from kplace.solver.testing import build_state

    tol = [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}]
    state = build_state(with_conditions([("Ready", "False")]), pod("a"), pod("b", spec={"tolerations": tol}))
    plan = GreedyScheduler(state.index, state=state).run()
    assert {p.pod: p.node for p in plan.placements} == {"default/a": None, "default/b": "n1"}


def test_unbound_claims_without_a_class_get_the_default_class():
    sc = {"kind": "StorageClass", "metadata": {"name": "std", "annotations": {
        "storageclass.kubernetes.io/is-default-class": "true"}}, "provisioner": "x"}
    claim = {"kind": "PersistentVolumeClaim", "metadata": {"name": "c", "namespace": "default"}, "spec": {}}
    snap = build_snapshot(sc, claim)
    assert snap.pvcs[0].spec.storage_class_name == "std"
