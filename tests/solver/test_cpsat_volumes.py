"""CP-SAT's volume constraints: one PV per claim, disk conflicts, ReadWriteOncePod and CSI limits between the
pods of one window, on the shipped instances and on small targeted states; every plan passes the verifier."""

from __future__ import annotations

from pathlib import Path

import pytest
from kplace.models import compile_index, load_state
from kplace.models.index import ClusterIndex
from kplace.models.plan import DYNAMIC, Plan
from kplace.solver.cpsat import CpsatOptions, schedule_cpsat
from kplace.solver.framework.config import default_config
from kplace.solver.greedy import schedule_greedy
from kplace.solver.plugins.volumebinding.testdata import claim_volumes, csinode, pv, pvc, storage_class
from kplace.solver.schedule import decide
from kplace.solver.testing import build_snapshot, node, pod
from kplace.solver.verify import verify_plan

INSTANCES = Path(__file__).resolve().parents[2] / "instances"
EBS = "ebs.csi.aws.com"


def _index(*objs) -> ClusterIndex:
    return compile_index(build_snapshot(*objs))


def _cpsat(index: ClusterIndex, window: int = 1000) -> Plan:
    plan = schedule_cpsat(index, options=CpsatOptions(time_limit=5, workers=1, window=window))
    assert all(w["status"] in ("OPTIMAL", "FEASIBLE") for w in plan.windows), plan.windows
    assert not verify_plan(index, plan), [v.to_dict() for v in verify_plan(index, plan)]
    return plan


def _pvs_taken(plan: Plan) -> list[str]:
    return [v for p in plan.placements for v in p.volume_bindings.values() if v != DYNAMIC]


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_both_engines_plans_of_the_volume_instance_verify_and_bind_each_pv_once(engine):
    index = compile_index(load_state([str(INSTANCES / "volumes-small.json")]))
    plan = decide(index, default_config(), engine)
    assert not verify_plan(index, plan)
    taken = _pvs_taken(plan)
    assert len(taken) == len(set(taken)) == 5
    by_pod = {p.pod: p for p in plan.placements}
    for i in range(5):
        p = by_pod[f"default/db-{i}"]
        assert p.volume_bindings[f"default/db-data-{i}"].startswith(f"local-{p.node.replace('-', '')}-")
    assert by_pod["default/db-4-extra"].node == by_pod["default/db-4"].node
    assert by_pod["default/legacy-0"].node is None or by_pod["default/legacy-1"].node is None
    assert all(by_pod[f"default/app-{i}"].volume_bindings == {f"default/app-{i}": DYNAMIC} for i in range(4))
    assert by_pod["default/orphan"].node is None


def test_cpsat_in_one_pod_windows_never_reuses_a_pv_reserved_by_an_earlier_window():
    index = compile_index(load_state([str(INSTANCES / "volumes-small.json")]))
    plan = _cpsat(index, window=1)
    taken = _pvs_taken(plan)
    assert len(taken) == len(set(taken)) == 5


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_the_seed_examples_verify_in_both_engines(engine):
    index = compile_index(load_state([str(INSTANCES / "seed-examples.json")]))
    plan = decide(index, default_config(), engine)
    assert not verify_plan(index, plan) and len(plan.assignment()) == 8


def test_two_pending_pods_with_one_read_write_once_pod_claim_place_only_one():
    index = _index(node("n1"), node("n2"), storage_class("local"), pv("pv1", claim="default/c"),
                   pvc("c", volume="pv1", modes=("ReadWriteOncePod",)),
                   pod("a", spec=claim_volumes("c")), pod("b", spec=claim_volumes("c")))
    plan = _cpsat(index)
    assert len(plan.assignment()) == 1
    assert "ReadWriteOncePod" in next(p.reason for p in plan.placements if p.node is None)


@pytest.mark.parametrize("nodes, placed", [(1, 1), (2, 2)])
def test_two_pods_mounting_one_gce_pd_read_write_never_share_a_node(nodes, placed):
    gce = {"volumes": [{"name": "pd", "gcePersistentDisk": {"pdName": "disk-1"}}]}
    other = {"volumes": [{"name": "pd", "gcePersistentDisk": {"pdName": "disk-1"}}],
             "tolerations": [{"key": "x", "operator": "Exists"}]}  # another group
    index = _index(*[node(f"n{i}") for i in range(nodes)], pod("a", spec=gce), pod("b", spec=gce),
                   pod("c", spec=other))
    plan = _cpsat(index)
    where = [p.node for p in plan.placements if p.node]
    assert len(where) == placed and len(set(where)) == len(where)


def test_read_only_gce_pd_mounts_share_a_node():
    ro = {"volumes": [{"name": "pd", "gcePersistentDisk": {"pdName": "disk-1", "readOnly": True}}]}
    plan = _cpsat(_index(node("n1"), pod("a", spec=ro), pod("b", spec=ro)))
    assert len(plan.assignment()) == 2


def _csi_state(nodes: int):
    objs = [*(node(f"n{i}") for i in range(nodes)), *(csinode(f"n{i}", {EBS: 1}) for i in range(nodes)),
            storage_class("gp3", provisioner=EBS)]
    for name in ("a", "b"):
        objs += [pv(f"pv-{name}", cls="gp3", claim=f"default/{name}", csi=(EBS, f"vol-{name}")),
                 pvc(name, cls="gp3", volume=f"pv-{name}"), pod(name, spec=claim_volumes(name))]
    return _index(*objs)


@pytest.mark.parametrize("nodes, placed", [(1, 1), (2, 2)])
def test_a_csi_limit_of_one_takes_one_of_two_pods_with_different_volume_handles(nodes, placed):
    plan = _cpsat(_csi_state(nodes))
    where = [p.node for p in plan.placements if p.node]
    assert len(where) == placed and len(set(where)) == len(where)


def test_pods_sharing_a_csi_volume_count_it_once():
    objs = [node("n1"), csinode("n1", {EBS: 1}), storage_class("gp3", provisioner=EBS),
            pv("pv-a", cls="gp3", claim="default/a", csi=(EBS, "vol-a"), modes=("ReadWriteMany",)),
            pvc("a", cls="gp3", volume="pv-a", modes=("ReadWriteMany",)),
            pod("p", spec=claim_volumes("a")), pod("q", cpu="100m", spec=claim_volumes("a"))]
    assert len(_cpsat(_index(*objs)).assignment()) == 2


def test_two_claims_and_one_pv_place_one_pod_and_bind_the_pv_once():
    index = _index(node("n1"), node("n2"), storage_class("local"), pv("pv1", node="n1"),
                   pvc("c1"), pvc("c2"), pod("a", spec=claim_volumes("c1")),
                   pod("b", cpu="100m", spec=claim_volumes("c2")))
    plan = _cpsat(index)
    assert len(plan.assignment()) == 1 and _pvs_taken(plan) == ["pv1"]


def test_two_claims_compete_for_pvs_without_node_affinity_and_each_gets_its_own():
    index = _index(node("n1"), node("n2"), storage_class("local"), pv("small", size="5Gi"), pv("big", size="50Gi"),
                   pvc("c-big", size="40Gi"), pvc("c-small", size="5Gi"),
                   pod("a", spec=claim_volumes("c-small")), pod("b", cpu="100m", spec=claim_volumes("c-big")))
    plan = _cpsat(index)
    got = {k: v for p in plan.placements for k, v in p.volume_bindings.items()}
    assert got == {"default/c-small": "small", "default/c-big": "big"}


def test_pods_sharing_a_provisioned_claim_land_on_one_node():
    term = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
    anti = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": term}]}}
    index = _index(node("n1"), node("n2"), node("n3"), storage_class("zonal", provisioner=EBS),
                   pvc("shared", cls="zonal"),
                   *(pod(f"p{i}", labels={"app": "x"}, spec={**claim_volumes("shared"), "affinity": anti})
                     for i in range(3)))
    plan = _cpsat(index)
    assert len(plan.assignment()) == 3 and len(set(plan.assignment().values())) == 1
    assert [p.volume_bindings for p in plan.placements] == [{"default/shared": DYNAMIC}, {}, {}]


def test_the_greedy_plan_is_the_hint_and_both_engines_verify_on_local_pvs():
    objs = [node(f"n{i}") for i in range(3)] + [storage_class("local")]
    objs += [pv(f"pv{i}-{k}", node=f"n{i}", size=f"{10 * (k + 1)}Gi") for i in range(3) for k in range(2)]
    objs += [x for i in range(6) for x in (pvc(f"c{i}", size=f"{5 + 5 * (i % 2)}Gi"),
                                           pod(f"p{i}", spec=claim_volumes(f"c{i}")))]
    index = _index(*objs)
    greedy, cpsat = schedule_greedy(index), _cpsat(index)
    assert not verify_plan(index, greedy)
    assert len(cpsat.assignment()) == 6 and len(set(_pvs_taken(cpsat))) == 6
