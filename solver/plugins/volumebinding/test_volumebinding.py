import numpy as np
import pytest
from kplace.solver.framework import Code, CycleState
from kplace.solver.greedy import GreedyScheduler
from kplace.solver.plugins.volumebinding import (
    REASON_BIND_CONFLICT,
    REASON_NODE_CONFLICT,
    REASON_PV_NOT_EXIST,
    REASON_UNBOUND_IMMEDIATE,
    VolumeBinding,
    reserve,
)
from kplace.solver.plugins.volumebinding.claims import DYNAMIC, catalog, find_matching_pv
from kplace.solver.plugins.volumebinding.testdata import claim_volumes, pv, pvc, storage_class
from kplace.solver.testing import build_state, node, pod

UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
NODES = [node("n1", labels={"topology.kubernetes.io/zone": "a"}),
         node("n2", labels={"topology.kubernetes.io/zone": "b"})]
LOCAL = storage_class("local")
ZONAL = storage_class("zonal", provisioner="ebs.csi.aws.com", zones=["b"])
IMMEDIATE = storage_class("fast", mode="Immediate", provisioner="ebs.csi.aws.com")


def run(objects, claims=("c",)):
    """(PreFilter result, per node [code, reasons]) for a pod mounting `claims`."""
    state = build_state(NODES, *objects, pod("p", spec=claim_volumes(*claims)))
    p = state.index.pending[0]
    pl, cycle = VolumeBinding(), CycleState()
    pre = pl.pre_filter(state, p, cycle)
    if pre.code != Code.SUCCESS:
        return pre, None
    nodes = np.arange(2) if pre.node_subset is None else pre.node_subset
    res = pl.filter(state, p, cycle, nodes)
    return pre, {state.index.node_names[n]: (Code(res.code[i]), res.reasons_of(i)) for i, n in enumerate(nodes)}


OK = (Code.SUCCESS, [])
CASES = [
    ("A claim bound to a PV without node affinity fits every node.",
     [LOCAL, pv("pv1", claim="default/c"), pvc("c", volume="pv1")], {"n1": OK, "n2": OK}),
    ("A claim bound to a zonal PV fails elsewhere with a node affinity conflict.",
     [LOCAL, {**pv("pv1", claim="default/c"), "spec": {**pv("pv1", claim="default/c")["spec"], "nodeAffinity": {
         "required": {"nodeSelectorTerms": [{"matchExpressions": [
             {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}]}]}}}},
      pvc("c", volume="pv1")],
     {"n1": OK, "n2": (UU, [REASON_NODE_CONFLICT])}),
    ("A claim bound to a local PV fails on other hosts at Filter (kube 1.36's PreFilter does not narrow).",
     [LOCAL, pv("pv1", node="n2", claim="default/c"), pvc("c", volume="pv1")],
     {"n1": (UU, [REASON_NODE_CONFLICT]), "n2": OK}),
    ("A claim bound to a missing PV fails everywhere as bound to a non-existent PV.",
     [LOCAL, pvc("c", volume="gone")], {"n1": (UU, [REASON_PV_NOT_EXIST]), "n2": (UU, [REASON_PV_NOT_EXIST])}),
    ("A WaitForFirstConsumer claim takes a local PV on its node only (no provisioner elsewhere).",
     [LOCAL, pv("pv1", node="n1"), pvc("c")], {"n1": OK, "n2": (UU, [REASON_BIND_CONFLICT])}),
    ("A PV too small for the claim is not a match.",
     [LOCAL, pv("pv1", node="n1", size="1Gi"), pvc("c")],
     {"n1": (UU, [REASON_BIND_CONFLICT]), "n2": (UU, [REASON_BIND_CONFLICT])}),
    ("A PV without the claim's access mode is not a match.",
     [LOCAL, pv("pv1", node="n1"), pvc("c", modes=("ReadWriteMany",))],
     {"n1": (UU, [REASON_BIND_CONFLICT]), "n2": (UU, [REASON_BIND_CONFLICT])}),
    ("A PV of another class is not a match.",
     [LOCAL, storage_class("other"), pv("pv1", node="n1", cls="other"), pvc("c")],
     {"n1": (UU, [REASON_BIND_CONFLICT]), "n2": (UU, [REASON_BIND_CONFLICT])}),
    ("A PV that is already Bound to another claim is not a match.",
     [LOCAL, pv("pv1", node="n1", claim="default/x"), pvc("c")],
     {"n1": (UU, [REASON_BIND_CONFLICT]), "n2": (UU, [REASON_BIND_CONFLICT])}),
    ("A PV pre-bound to this claim is taken even when not Available.",
     [LOCAL, pv("pv1", node="n2", claim="default/c"), pvc("c")], {"n1": (UU, [REASON_BIND_CONFLICT]), "n2": OK}),
    ("Dynamic provisioning honours the class's allowedTopologies.",
     [ZONAL, pvc("c", cls="zonal")], {"n1": (UU, [REASON_BIND_CONFLICT]), "n2": OK}),
    ("Two claims cannot share one PV: the second provisions or fails.",
     [LOCAL, pv("pv1", node="n1"), pvc("c"), pvc("d")],
     {"n1": (UU, [REASON_BIND_CONFLICT]), "n2": (UU, [REASON_BIND_CONFLICT])}),
    ("A claim whose selected node is another node fails there.",
     [storage_class("any", provisioner="ebs.csi.aws.com"),
      pvc("c", cls="any", annotations={"volume.kubernetes.io/selected-node": "n1"})],
     {"n1": OK, "n2": (UU, [REASON_BIND_CONFLICT])}),
    ("A claim whose selected node fails the class's topology fails there too.",
     [ZONAL, pvc("c", cls="zonal", annotations={"volume.kubernetes.io/selected-node": "n1"})],
     {"n1": (UU, [REASON_BIND_CONFLICT]), "n2": (UU, [REASON_BIND_CONFLICT])}),
]


@pytest.mark.parametrize(("name", "objects", "want"), CASES, ids=[c[0] for c in CASES])
def test_volume_binding_filter(name, objects, want):
    claims = ("c", "d") if name.startswith("Two claims") else ("c",)
    pre, got = run(objects, claims)
    assert pre.code == Code.SUCCESS
    assert got == want


PREFILTER = [
    ("A missing claim rejects the pod as unresolvable.", [LOCAL], 'persistentvolumeclaim "c" not found'),
    ("An unbound Immediate claim rejects the pod.", [IMMEDIATE, pvc("c", cls="fast")], REASON_UNBOUND_IMMEDIATE),
    ("A claim of a missing class counts as unbound immediate.", [pvc("c", cls="nope")], REASON_UNBOUND_IMMEDIATE),
    ("A pre-bound claim (volumeName without bind-completed) counts as unbound immediate.",
     [LOCAL, pv("pv1"), {**pvc("c"), "spec": {**pvc("c")["spec"], "volumeName": "pv1"}}], REASON_UNBOUND_IMMEDIATE),
    ("A claim being deleted rejects the pod.",
     [LOCAL, {**pvc("c"), "metadata": {**pvc("c")["metadata"], "deletionTimestamp": "2024-01-01T00:00:00Z"}}],
     'persistentvolumeclaim "c" is being deleted'),
    ("A Lost claim rejects the pod.",
     [LOCAL, {**pvc("c", volume="pv9"), "status": {"phase": "Lost"}}],
     'persistentvolumeclaim "c" bound to non-existent persistentvolume "pv9"'),
]


@pytest.mark.parametrize(("name", "objects", "reason"), PREFILTER, ids=[c[0] for c in PREFILTER])
def test_volume_binding_pre_filter_rejections(name, objects, reason):
    pre, _ = run(objects)
    assert (pre.code, pre.reason) == (UU, reason)


def test_a_pod_without_claims_is_skipped():
    state = build_state(NODES, pod("p"))
    assert VolumeBinding().pre_filter(state, state.index.pending[0], CycleState()).code == Code.SKIP


def test_the_smallest_matching_pv_wins_then_the_name():
    state = build_state(NODES, LOCAL, pv("big", size="50Gi"), pv("b", size="10Gi"), pv("a", size="10Gi"), pvc("c"))
    claim = catalog(state.index).pvcs["default/c"]
    assert find_matching_pv(state.index, claim, 0) == "a"
    assert find_matching_pv(state.index, claim, 0, excluded={"a"}) == "b"


def test_a_claim_reserve_gave_a_pv_is_bound_to_it_for_the_next_pod():
    state = build_state(NODES, LOCAL, pv("pv1", node="n1"), pv("pv2", node="n2"), pvc("c"),
                        pod("p", spec=claim_volumes("c")), pod("q", spec=claim_volumes("c")))
    plan = GreedyScheduler(state.index, state=state).run()
    got = {p.pod: p for p in plan.placements}
    assert got["default/p"].node == "n1" and got["default/q"].node == "n1"
    q = state.index.pending[1]
    claims = VolumeBinding().pre_filter(state, q, CycleState())
    assert claims.code == Code.SUCCESS
    res = VolumeBinding().filter(state, q, CycleState(), np.arange(2))
    assert res.reasons_of(1) == [REASON_NODE_CONFLICT]


def test_reserve_takes_the_pv_so_a_second_claim_cannot_have_it():
    state = build_state(NODES, LOCAL, pv("pv1", node="n1"), pvc("c"), pvc("d"),
                        pod("p", spec=claim_volumes("c")), pod("q", spec=claim_volumes("d")))
    plan = GreedyScheduler(state.index, state=state).run()
    got = {p.pod: (p.node, p.volume_bindings) for p in plan.placements}
    assert got["default/p"] == ("n1", {"default/c": "pv1"})
    assert got["default/q"][0] is None and REASON_BIND_CONFLICT in plan.placements[1].reason
    assert state.pv_claims == {"pv1": "default/c"}


def test_reserve_gives_a_provisioned_claim_its_node_and_a_second_user_follows_it():
    state = build_state(NODES, storage_class("any", provisioner="ebs.csi.aws.com"), pvc("c", cls="any"),
                        pod("p", spec=claim_volumes("c")))
    p = state.index.pending[0]
    state.assume(p, 1)
    assert reserve(state, p, 1) == {"default/c": DYNAMIC}
    assert state.pvc_selected_node == {"default/c": "n2"}
    q = build_state(NODES, storage_class("any", provisioner="ebs.csi.aws.com"), pvc("c", cls="any"),
                    pod("q", spec=claim_volumes("c")))
    q.pvc_selected_node["default/c"] = "n2"
    res = VolumeBinding().filter(q, q.index.pending[0], CycleState(), np.arange(2))
    assert [Code(c) for c in res.code] == [UU, Code.SUCCESS]


def test_a_generic_ephemeral_volume_is_planned_with_the_claim_the_controller_would_create():
    eph = {"volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}]}
    state = build_state(NODES, storage_class("std", provisioner="ebs.csi.aws.com", zones=["a"], default=True),
                        pod("p", spec=eph))
    plan = GreedyScheduler(state.index, state=state).run()
    assert (plan.placements[0].node, plan.placements[0].volume_bindings) == ("n1", {"default/p-scratch": DYNAMIC})
