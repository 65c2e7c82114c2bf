import numpy as np
import pytest
from kplace.solver.framework import Code, CycleState
from kplace.solver.plugins.volumebinding.testdata import claim_volumes, pv, pvc, storage_class
from kplace.solver.plugins.volumezone import REASON, VolumeZone, zones_to_set
from kplace.solver.testing import build_state, node, pod

UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
Z = "topology.kubernetes.io/zone"
BETA = "failure-domain.beta.kubernetes.io/zone"
NODES = [node("a", labels={Z: "z1"}), node("b", labels={Z: "z2"}), node("c", labels={BETA: "z2"}), node("d")]

CASES = [
    ("A PV in zone z1 fits only z1 nodes and nodes without zone labels.", {Z: "z1"}, ["S", "UU", "UU", "S"]),
    ("A multi-zone PV value (z1__z2) allows both zones.", {Z: "z1__z2"}, ["S", "S", "UU", "S"]),
    ("A beta PV label falls back to the node's GA label.", {BETA: "z2"}, ["UU", "S", "S", "S"]),
    ("A PV without zone labels fits everywhere.", {}, ["S", "S", "S", "S"]),
    ("A malformed zone value is ignored.", {Z: "z1__"}, ["S", "S", "S", "S"]),
]


@pytest.mark.parametrize(("name", "labels", "want"), CASES, ids=[c[0] for c in CASES])
def test_volume_zone(name, labels, want):
    state = build_state(NODES, storage_class("local"), pv("pv1", claim="default/c", labels=labels),
                        pvc("c", volume="pv1"), pod("p", spec=claim_volumes("c")))
    p = state.index.pending[0]
    pl, cycle = VolumeZone(), CycleState()
    pre = pl.pre_filter(state, p, cycle)
    if not labels or name.startswith("A malformed"):
        assert pre.code == Code.SKIP
        return
    res = pl.filter(state, p, cycle, np.arange(4))
    assert ["S" if c == 0 else "UU" for c in res.code] == want and set(res.code.tolist()) <= {0, int(UU)}
    assert all(res.reasons_of(i) == [REASON] for i, c in enumerate(res.code) if c)


ERRORS = [
    ("A missing claim is unresolvable.", [], 'persistentvolumeclaim "c" not found'),
    ("A claim bound to a missing PV is unresolvable.", [pvc("c", volume="gone")], 'persistentvolume "gone" not found'),
    ("An unbound claim without a class is unresolvable.", [pvc("c", cls=None)],
     "PersistentVolumeClaim had no pv name and storageClass name"),
    ("An unbound Immediate claim has no PV name.", [storage_class("i", mode="Immediate"), pvc("c", cls="i")],
     "PersistentVolume had no name"),
    ("An unbound claim of a missing class is unresolvable.", [pvc("c", cls="x")],
     'storageclass.storage.k8s.io "x" not found'),
]


@pytest.mark.parametrize(("name", "objects", "reason"), ERRORS, ids=[c[0] for c in ERRORS])
def test_volume_zone_pre_filter_errors(name, objects, reason):
    state = build_state(NODES, *objects, pod("p", spec=claim_volumes("c")))
    pre = VolumeZone().pre_filter(state, state.index.pending[0], CycleState())
    assert (pre.code, pre.reason) == (UU, reason)


def test_an_unbound_wait_for_first_consumer_claim_is_skipped():
    state = build_state(NODES, storage_class("local"), pvc("c"), pod("p", spec=claim_volumes("c")))
    assert VolumeZone().pre_filter(state, state.index.pending[0], CycleState()).code == Code.SKIP


def test_zones_to_set_splits_on_double_underscores():
    assert zones_to_set("a__b") == {"a", "b"} and zones_to_set("a") == {"a"} and zones_to_set("a____b") is None
