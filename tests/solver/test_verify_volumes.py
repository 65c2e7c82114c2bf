"""The verifier's volume checks: each violation a plan can commit is reported, and good plans pass."""

from __future__ import annotations

import json

import pytest
from kplace.models import compile_index
from kplace.models.errors import InputError
from kplace.models.plan import DYNAMIC, Placement, Plan
from kplace.solver.plugins.volumebinding.testdata import claim_volumes, csinode, pv, pvc, storage_class
from kplace.solver.testing import build_snapshot, node, pod
from kplace.solver.verify import load_plan, verify_plan

ZONE = "topology.kubernetes.io/zone"
EBS = "ebs.csi.aws.com"
NODES = [node("n1", labels={ZONE: "a"}), node("n2", labels={ZONE: "b"})]
LOCAL, ZONAL = storage_class("local"), storage_class("zonal", provisioner=EBS, zones=["a"])


def rules(objs, *placements: Placement) -> list[tuple[str, str]]:
    index = compile_index(build_snapshot(*NODES, *objs))
    return [(v.pod, v.rule) for v in verify_plan(index, Plan("test", list(placements)))]


def P(name: str, node_name: str | None, **bindings: str) -> Placement:
    return Placement(f"default/{name}", node_name, volume_bindings={f"default/{k}": v for k, v in bindings.items()})


DELAYED = [LOCAL, pv("pv1", node="n1"), pv("pv2", node="n2"), pvc("c"), pod("p", spec=claim_volumes("c"))]


def test_a_good_local_binding_verifies():
    assert rules(DELAYED, P("p", "n1", c="pv1")) == []


@pytest.mark.parametrize("why, objs, placements", [
    ("a claim bound in the state whose PV's node affinity rejects the node",
     [LOCAL, pv("pv1", node="n1", claim="default/c"), pvc("c", volume="pv1"), pod("p", spec=claim_volumes("c"))],
     [P("p", "n2")]),
    ("a newly bound PV whose node affinity rejects the node", DELAYED, [P("p", "n2", c="pv1")]),
    ("an unbound claim the plan binds to nothing", DELAYED, [P("p", "n1")]),
    ("an unbound Immediate claim", [storage_class("now", mode="Immediate", provisioner=EBS), pvc("c", cls="now"),
                                    pod("p", spec=claim_volumes("c"))], [P("p", "n1")]),
    ("a dynamic claim outside the class's allowedTopologies",
     [ZONAL, pvc("c", cls="zonal"), pod("p", spec=claim_volumes("c"))], [P("p", "n2", c=DYNAMIC)]),
])
def test_volume_binding_rejects_in_the_replay(why, objs, placements):
    assert ("default/p", "VolumeBinding") in rules(objs, *placements), why


@pytest.mark.parametrize("why, objs, binding", [
    ("a PV smaller than the claim", [LOCAL, pv("pv1", node="n1", size="1Gi"), pvc("c"),
                                     pod("p", spec=claim_volumes("c"))], "pv1"),
    ("a PV bound to another claim", [LOCAL, pv("pv1", node="n1", claim="default/other"), pvc("c"),
                                     pod("p", spec=claim_volumes("c"))], "pv1"),
    ("a PV of another class", [LOCAL, pv("pv1", node="n1", cls="other"), pvc("c"),
                               pod("p", spec=claim_volumes("c"))], "pv1"),
    ("a PV without the claim's access mode", [LOCAL, pv("pv1", node="n1"), pvc("c", modes=("ReadWriteMany",)),
                                              pod("p", spec=claim_volumes("c"))], "pv1"),
    ("a PV that does not exist", DELAYED, "nope"),
    ("a class that cannot provision", DELAYED, DYNAMIC),
])
def test_a_new_binding_must_match_its_claim(why, objs, binding):
    assert ("default/p", "VolumeBinding") in rules(objs, P("p", "n1", c=binding)), why


def test_one_pv_cannot_serve_two_claims():
    objs = [LOCAL, pv("pv1", node="n1"), pvc("c1"), pvc("c2"), pod("a", spec=claim_volumes("c1")),
            pod("b", spec=claim_volumes("c2"))]
    got = rules(objs, P("a", "n1", c1="pv1"), P("b", "n1", c2="pv1"))
    assert ("default/b", "VolumeBinding") in got and ("default/a", "VolumeBinding") not in got


def test_a_claim_the_pod_does_not_use_or_an_already_bound_claim_cannot_be_bound():
    objs = [*DELAYED, pv("pv3", claim="default/done"), pvc("done", volume="pv3"),
            pod("q", spec=claim_volumes("done"))]
    assert ("default/p", "VolumeBinding") in rules(objs, P("p", "n1", c="pv1", x="pv2"))
    assert ("default/q", "VolumeBinding") in rules(objs, P("q", "n1", done="pv3"))


def test_pods_sharing_a_provisioned_claim_must_share_its_node():
    zonal = storage_class("any", provisioner=EBS)
    objs = [zonal, pvc("c", cls="any"), pod("a", spec=claim_volumes("c")), pod("b", spec=claim_volumes("c"))]
    assert rules(objs, P("a", "n1", c=DYNAMIC), P("b", "n1")) == []
    assert rules(objs, P("a", "n1", c=DYNAMIC), P("b", "n2")) == [("default/b", "VolumeBinding")]


def test_disk_conflicts_on_a_node_are_rejected_and_read_only_mounts_are_not():
    rw = {"volumes": [{"name": "pd", "gcePersistentDisk": {"pdName": "d"}}]}
    ro = {"volumes": [{"name": "pd", "gcePersistentDisk": {"pdName": "d", "readOnly": True}}]}
    assert rules([pod("a", spec=rw), pod("b", spec=rw)], P("a", "n1"), P("b", "n1")) == [
        ("default/b", "VolumeRestrictions")]
    assert rules([pod("a", spec=rw), pod("b", spec=rw)], P("a", "n1"), P("b", "n2")) == []
    assert rules([pod("a", spec=ro), pod("b", spec=ro)], P("a", "n1"), P("b", "n1")) == []
    assert rules([pod("a", spec=rw), pod("b", spec=rw, node_name="n1")], P("a", "n1")) == [
        ("default/a", "VolumeRestrictions")]


def test_a_read_write_once_pod_claim_serves_one_pod():
    objs = [LOCAL, pv("pv1", claim="default/c"), pvc("c", volume="pv1", modes=("ReadWriteOncePod",)),
            pod("a", spec=claim_volumes("c")), pod("b", spec=claim_volumes("c"))]
    assert rules(objs, P("a", "n1"), P("b", "n2")) == [("default/b", "VolumeRestrictions")]
    bound = [*objs[:3], pod("a", spec=claim_volumes("c"), node_name="n1"), objs[4]]
    assert rules(bound, P("b", "n2")) == [("default/b", "VolumeRestrictions")]


def test_csi_attach_limits_count_unique_volumes_per_driver():
    objs = [csinode("n1", {EBS: 1}), storage_class("gp3", provisioner=EBS)]
    for name in ("a", "b"):
        objs += [pv(f"pv-{name}", cls="gp3", claim=f"default/{name}", csi=(EBS, f"vol-{name}")),
                 pvc(name, cls="gp3", volume=f"pv-{name}"), pod(name, spec=claim_volumes(name))]
    assert rules(objs, P("a", "n1"), P("b", "n1")) == [("default/b", "NodeVolumeLimits")]
    assert rules(objs, P("a", "n1"), P("b", "n2")) == []  # n2 has no CSINode: no limit
    shared = [*objs, pod("a2", spec=claim_volumes("a"))]
    assert rules(shared, P("a", "n1"), P("a2", "n1")) == []  # one volume, counted once


def test_volume_zone_labels_of_a_bound_pv_must_match_the_node():
    objs = [LOCAL, pv("pv1", zone="a", claim="default/c"), pvc("c", volume="pv1"), pod("p", spec=claim_volumes("c"))]
    assert rules(objs, P("p", "n2")) == [("default/p", "VolumeZone")]
    assert rules(objs, P("p", "n1")) == []


def test_load_plan_reads_volume_bindings_and_rejects_bad_ones(tmp_path):
    good = tmp_path / "plan.json"
    good.write_text(json.dumps({"placements": [
        {"pod": "default/p", "node": "n1", "volume_bindings": {"default/c": "pv1"}}]}))
    assert load_plan(good).placements[0].volume_bindings == {"default/c": "pv1"}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"placements": [{"pod": "default/p", "node": "n1", "volume_bindings": ["pv1"]}]}))
    with pytest.raises(InputError, match="volume_bindings"):
        load_plan(bad)
