import numpy as np
import pytest
from kplace.solver.framework import Code, CycleState
from kplace.solver.plugins.volumebinding.testdata import claim_volumes, pvc, storage_class
from kplace.solver.plugins.volumerestrictions import (
    REASON_DISK_CONFLICT,
    REASON_RWOP_CONFLICT,
    VolumeRestrictions,
)
from kplace.solver.testing import build_state, node, pod

U, UU = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def GCE(pd, ro=False):
    return {"name": "v", "gcePersistentDisk": {"pdName": pd, "readOnly": ro}}


def EBS(vid, ro=False):
    return {"name": "v", "awsElasticBlockStore": {"volumeID": vid, "readOnly": ro}}


def ISCSI(iqn, ro=False):
    return {"name": "v", "iscsi": {"targetPortal": "t:3260", "iqn": iqn, "readOnly": ro}}


def RBD(mons, image, pool=None, ro=False):
    return {"name": "v", "rbd": {"monitors": mons, "image": image, "readOnly": ro,
                                 **({"pool": pool} if pool else {})}}


CASES = [
    ("The same GCE PD read-write conflicts.", GCE("d"), GCE("d"), U),
    ("The same GCE PD read-only on both sides does not conflict.", GCE("d", True), GCE("d", True), Code.SUCCESS),
    ("The same GCE PD read-only on one side only conflicts.", GCE("d", True), GCE("d"), U),
    ("Different GCE PDs do not conflict.", GCE("d"), GCE("e"), Code.SUCCESS),
    ("The same EBS volume conflicts even read-only.", EBS("vol-1", True), EBS("vol-1", True), U),
    ("Different EBS volumes do not conflict.", EBS("vol-1"), EBS("vol-2"), Code.SUCCESS),
    ("The same iSCSI IQN read-write conflicts.", ISCSI("iqn.a"), ISCSI("iqn.a"), U),
    ("The same iSCSI IQN read-only on both sides does not conflict.", ISCSI("iqn.a", True), ISCSI("iqn.a", True),
     Code.SUCCESS),
    ("RBD images sharing a monitor, pool and image conflict.", RBD(["m1", "m2"], "img"), RBD(["m2"], "img"), U),
    ("RBD images without a shared monitor do not conflict.", RBD(["m1"], "img"), RBD(["m2"], "img"), Code.SUCCESS),
    ("RBD images in different pools do not conflict.", RBD(["m1"], "img", "a"), RBD(["m1"], "img", "b"),
     Code.SUCCESS),
    ("A GCE PD never conflicts with an EBS volume.", GCE("x"), EBS("x"), Code.SUCCESS),
]


@pytest.mark.parametrize(("name", "existing", "wanted", "want"), CASES, ids=[c[0] for c in CASES])
def test_disk_conflicts(name, existing, wanted, want):
    state = build_state(node("n1"), pod("bound", node_name="n1", spec={"volumes": [existing]}),
                        pod("p", spec={"volumes": [wanted]}))
    p = state.index.pending[0]
    pl, cycle = VolumeRestrictions(), CycleState()
    assert pl.pre_filter(state, p, cycle).code == Code.SUCCESS
    res = pl.filter(state, p, cycle, np.array([0]))
    assert Code(res.code[0]) == want
    assert res.reasons_of(0) == ([] if want == Code.SUCCESS else [REASON_DISK_CONFLICT])


SC = storage_class("std", provisioner="ebs.csi.aws.com")


def test_a_read_write_once_pod_claim_in_use_fails_every_node():
    state = build_state(node("n1"), node("n2"), SC, pvc("c", cls="std", modes=("ReadWriteOncePod",)),
                        pod("user", node_name="n1", spec=claim_volumes("c")), pod("p", spec=claim_volumes("c")))
    p = state.index.pending[0]
    pl, cycle = VolumeRestrictions(), CycleState()
    assert pl.pre_filter(state, p, cycle).code == Code.SUCCESS
    res = pl.filter(state, p, cycle, np.array([0, 1]))
    assert [Code(c) for c in res.code] == [U, U]
    assert res.reasons_of(1) == [REASON_RWOP_CONFLICT]
    state.forget(state.index.pod_by_key["default/user"])  # a preemption victim frees the claim
    assert pl.filter(state, p, cycle, np.array([0, 1])).code.tolist() == [0, 0]


def test_an_unused_read_write_once_pod_claim_is_skipped_and_a_missing_claim_is_unresolvable():
    state = build_state(node("n1"), SC, pvc("c", cls="std", modes=("ReadWriteOncePod",)),
                        pod("p", spec=claim_volumes("c")), pod("q", spec=claim_volumes("nope")))
    p, q = state.index.pending
    assert VolumeRestrictions().pre_filter(state, p, CycleState()).code == Code.SKIP
    pre = VolumeRestrictions().pre_filter(state, q, CycleState())
    assert (pre.code, pre.reason) == (UU, 'persistentvolumeclaim "nope" not found')
