import numpy as np
import pytest
from kplace.solver.framework import Code, CycleState
from kplace.solver.plugins.nodevolumelimits import REASON, NodeVolumeLimits, attach_limit_key, ebs_handle
from kplace.solver.plugins.volumebinding.testdata import claim_volumes, csinode, pv, pvc, storage_class
from kplace.solver.testing import build_state, node, pod

EBS = "ebs.csi.aws.com"
SC = storage_class("ebs", provisioner=EBS)


def bound(name):  # a claim bound to its own CSI PV
    return [pv(f"pv-{name}", cls="ebs", claim=f"default/{name}", csi=(EBS, f"h-{name}")), pvc(name, cls="ebs",
                                                                                        volume=f"pv-{name}")]


CLAIMS = [o for n in ("a", "b", "c", "d") for o in bound(n)] + [pvc("u1", cls="ebs"), pvc("u2", cls="ebs")]
CASES = [
    ("Fits when the node's attached volumes plus the new one stay within the limit.", 3, [["a"], ["b"]], ["c"],
     Code.SUCCESS),
    ("Fails when the new volume would exceed the driver's limit.", 2, [["a"], ["b"]], ["c"], Code.UNSCHEDULABLE),
    ("A volume already attached on the node is not counted again.", 2, [["a"], ["b"]], ["a"], Code.SUCCESS),
    ("Two pods sharing a volume on the node count it once.", 2, [["a"], ["a"]], ["b"], Code.SUCCESS),
    ("An unbound claim counts once per claim, through its class's provisioner.", 2, [["u1"], ["u1"]], ["u2"],
     Code.SUCCESS),
    ("Unbound claims push the count over the limit like bound ones.", 1, [["u1"]], ["u2"], Code.UNSCHEDULABLE),
    ("A driver without a limit does not limit.", None, [["a"], ["b"]], ["c"], Code.SUCCESS),
]


@pytest.mark.parametrize(("name", "limit", "existing", "wanted", "want"), CASES, ids=[c[0] for c in CASES])
def test_csi_limits(name, limit, existing, wanted, want):
    bound_pods = [pod(f"e{i}", node_name="n1", spec=claim_volumes(*c)) for i, c in enumerate(existing)]
    state = build_state(node("n1"), SC, CLAIMS, csinode("n1", {EBS: limit}), bound_pods,
                        pod("p", spec=claim_volumes(*wanted)))
    p = state.index.pending[0]
    pl, cycle = NodeVolumeLimits(), CycleState()
    assert pl.pre_filter(state, p, cycle).code == Code.SUCCESS
    res = pl.filter(state, p, cycle, np.array([0]))
    assert Code(res.code[0]) == want
    assert res.reasons_of(0) == ([] if want == Code.SUCCESS else [REASON])


def test_a_node_without_csinode_has_no_limit_and_a_missing_claim_is_unresolvable():
    state = build_state(node("n1"), node("n2"), SC, CLAIMS, csinode("n2", {EBS: 0}),
                        pod("p", spec=claim_volumes("a")), pod("q", spec=claim_volumes("gone")))
    p, q = state.index.pending
    assert NodeVolumeLimits().filter(state, p, CycleState(), np.array([0, 1])).code.tolist() == [0, 1]
    res = NodeVolumeLimits().filter(state, q, CycleState(), np.array([0]))
    assert (Code(res.code[0]), res.reasons_of(0)) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                                     ['persistentvolumeclaim "gone" not found'])


def test_inline_ebs_volumes_count_through_csi_migration_when_the_node_has_a_csinode():
    def vol(vid):
        return {"volumes": [{"name": "x", "awsElasticBlockStore": {"volumeID": vid}}]}
    state = build_state(node("n1"), csinode("n1", {EBS: 1}), pod("e", node_name="n1", spec=vol("aws://z/vol-1")),
                        pod("p", spec=vol("vol-2")), pod("q", spec=vol("vol-1")))
    p, q = state.index.pending
    assert NodeVolumeLimits().filter(state, p, CycleState(), np.array([0])).code.tolist() == [1]
    assert NodeVolumeLimits().filter(state, q, CycleState(), np.array([0])).code.tolist() == [0]


def test_a_pod_without_attachable_volumes_is_skipped():
    state = build_state(node("n1"), pod("p", spec={"volumes": [{"name": "e", "emptyDir": {}}]}))
    assert NodeVolumeLimits().pre_filter(state, state.index.pending[0], CycleState()).code == Code.SKIP


def test_attach_limit_keys_are_hashed_past_63_characters():
    assert attach_limit_key("ebs.csi.aws.com") == "attachable-volumes-csi-ebs.csi.aws.com"
    long = attach_limit_key("x" * 60)
    assert long.startswith("attachable-volumes-csi-" + "x" * 23) and len(long) == 23 + 23 + 16
    assert ebs_handle("aws://us-east-1a/vol-9") == "vol-9" and ebs_handle("vol-9") == "vol-9"
