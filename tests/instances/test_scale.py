"""`kplace generate scale`: pools, zones, GPU nodes, DaemonSets, Deployments with spread and anti-affinity,
priorities and PDBs, bound pods consistent with capacity, taints and anti-affinity, the pending count asked for,
streamed output identical to the built List."""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import pytest
from click.testing import CliRunner
from kplace.instances.generators import generate, stream
from kplace.instances.scale import GPU, POOL, POOLS
from kplace.models import load_state
from kplace.models.errors import InputError
from kplace.models.requests import pod_requests
from kplace.solver.cli import main
from kplace.solver.output import write_list

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def _load(doc: dict, tmp_path):
    path = tmp_path / "state.json"
    path.write_text(json.dumps(doc))
    return load_state([str(path)])


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    doc = generate("scale", nodes=300, pods=3000, seed=1, params={})
    return doc, _load(doc, tmp_path_factory.mktemp("scale"))


@pytest.mark.parametrize(("nodes", "pods", "pending", "expected"), [
    (100, 1000, "0.2", lambda app: round(0.2 * app)),
    (100, 1000, "150", lambda app: 150),
    (100, 1000, "0", lambda app: 0),
    (40, 300, "0.5", lambda app: round(0.5 * app)),
    (20, 30, "0.2", lambda app: 0),  # fewer pods than the DaemonSets need: no Deployment pod at all
])
def test_the_pending_count_is_the_fraction_or_count_of_deployment_pods_asked_for(nodes, pods, pending, expected,
                                                                                   tmp_path):
    doc = generate("scale", nodes=nodes, pods=pods, seed=0, params={"pending": pending})
    ann = doc["metadata"]["annotations"]
    snap = _load(doc, tmp_path)
    ds = [p for p in snap.pods if p.metadata.namespace in ("kube-system", "monitoring")]
    app = [p for p in snap.pods if p.metadata.namespace.startswith("team-")]
    n_pending = sum(1 for p in app if not p.spec.node_name)
    assert len(snap.nodes) == nodes
    assert len(snap.pods) == max(pods, len(ds)) and int(ann["kplace.io/daemonset-pods"]) == len(ds)
    assert n_pending == expected(len(app)) + int(ann["kplace.io/overflow"])
    assert int(ann["kplace.io/overflow"]) <= 0.02 * len(app) + 1
    assert all(p.spec.node_name for p in ds)


@pytest.mark.parametrize(("pool", "cpu", "memory_gi", "gpus", "share"), [(p[0], p[2], p[3], p[5], p[6]) for p in POOLS])
def test_every_pool_has_its_share_of_the_nodes_its_shape_and_its_taint(state, pool, cpu, memory_gi, gpus, share):
    _, snap = state
    nodes = [n for n in snap.nodes if n.metadata.labels[POOL] == pool]
    assert abs(len(nodes) - share * 3) <= 1
    assert all(n.allocatable["cpu"] == cpu and n.allocatable["memory"] == memory_gi * 2**30 for n in nodes)
    assert all(n.allocatable.get(GPU, 0) == gpus for n in nodes)
    assert all(bool(n.spec.taints) == bool(gpus) for n in nodes)
    zones = Counter(n.metadata.labels[ZONE] for n in nodes)
    assert set(zones) == {"zone-a", "zone-b", "zone-c"} and max(zones.values()) - min(zones.values()) <= 1


def test_every_node_runs_the_daemonsets_and_gpu_nodes_the_device_plugin(state):
    _, snap = state
    on = defaultdict(set)
    for p in snap.pods:
        if p.metadata.namespace in ("kube-system", "monitoring"):
            on[p.spec.node_name].add(p.metadata.labels["app"])
    for n in snap.nodes:
        expected = {"kube-proxy", "node-exporter"} | ({"nvidia-device-plugin"} if n.spec.taints else set())
        assert on[n.metadata.name] == expected


def test_bound_pods_fit_their_nodes_gpu_pods_only_on_gpu_nodes_and_web_replicas_on_distinct_nodes(state):
    _, snap = state
    nodes = {n.metadata.name: n for n in snap.nodes}
    used: dict[str, Counter] = defaultdict(Counter)
    hosts = defaultdict(list)
    for p in snap.pods:
        if not p.spec.node_name:
            continue
        n = nodes[p.spec.node_name]
        used[n.metadata.name].update({**pod_requests(p), "pods": 1})
        tier = p.metadata.labels.get("tier")
        if tier is not None:
            assert (tier == "gpu") == bool(n.spec.taints), p.metadata.name
        if tier == "web":
            hosts[p.metadata.labels["app"]].append(n.metadata.name)
    for name, u in used.items():
        alloc = nodes[name].allocatable
        assert u["cpu"] <= alloc["cpu"] * 1000 and u["memory"] <= alloc["memory"] and u["pods"] <= alloc["pods"]
        assert u.get(GPU, 0) <= alloc.get(GPU, 0)
    assert hosts and all(len(h) == len(set(h)) for h in hosts.values())


def test_deployments_carry_spread_anti_affinity_priorities_and_pdbs(state):
    doc, snap = state
    assert {c.metadata.name: c.value for c in snap.priority_classes} == {
        "platform-critical": 1000000, "prod-high": 10000, "prod": 1000, "batch-low": 100}
    tiers = Counter(p.metadata.labels.get("tier") for p in snap.pods)
    assert {"web", "service", "worker", "batch", "gpu"} <= set(tiers)
    for p in snap.pods:
        tier = p.metadata.labels.get("tier")
        if tier == "web":
            anti = p.spec.affinity.pod_anti_affinity.required_during_scheduling_ignored_during_execution
            assert anti[0].topology_key == HOST
        elif tier == "service":
            keys = {(c.topology_key, c.when_unsatisfiable) for c in p.spec.topology_spread_constraints}
            assert keys == {(ZONE, "DoNotSchedule"), (HOST, "ScheduleAnyway")}
    web_sizes = Counter(p.metadata.labels["app"] for p in snap.pods if p.metadata.labels.get("tier") == "web")
    assert {b.metadata.name for b in snap.pdbs} == {app for app, n in web_sizes.items() if n >= 20}
    assert int(doc["metadata"]["annotations"]["kplace.io/pdbs"]) == len(snap.pdbs)


@pytest.mark.parametrize("load", [30, 60, 80])
def test_bound_pods_fill_about_the_load_asked_for_off_the_gpu_pool(load, tmp_path):
    snap = _load(generate("scale", nodes=600, pods=6000, seed=2, params={"load": str(load)}), tmp_path)
    general = {n.metadata.name: n for n in snap.nodes if not n.spec.taints}
    asked = sum(pod_requests(p).get("cpu", 0) for p in snap.pods if p.spec.node_name in general)
    capacity = sum(n.allocatable["cpu"] * 1000 for n in general.values())
    assert abs(100 * asked / capacity - load) <= 6


def test_the_same_seed_gives_the_same_state_and_another_seed_another():
    a = json.dumps(generate("scale", nodes=50, pods=400, seed=3, params={}))
    assert json.dumps(generate("scale", nodes=50, pods=400, seed=3, params={})) == a
    assert json.dumps(generate("scale", nodes=50, pods=400, seed=4, params={})) != a


def test_the_streamed_list_holds_the_same_objects_and_annotations_as_the_built_one(tmp_path):
    import io

    built = generate("scale", nodes=60, pods=500, seed=5, params={"pending": "40"})
    items, annotations = stream("scale", nodes=60, pods=500, seed=5, params={"pending": "40"})
    buf = io.StringIO()
    kinds = write_list(buf, items, annotations)
    streamed = json.loads(buf.getvalue())
    assert streamed["items"] == built["items"]
    assert streamed["metadata"]["annotations"] == built["metadata"]["annotations"]
    assert kinds["Pod"] == 500 and kinds["pending"] == int(annotations["kplace.io/pending"])


def test_cli_generate_scale_streams_atomically_and_takes_pending_as_a_flag(tmp_path):
    out = tmp_path / "big.json"
    res = CliRunner().invoke(main, ["generate", "scale", "--nodes", "50", "--pods", "400", "--pending", "30",
                                    "--output-file", str(out)])
    assert res.exit_code == 0, res.output
    assert "50 nodes, 400 pods (30 pending)" in res.output
    snap = load_state([str(out)])
    assert sum(1 for p in snap.pods if not p.spec.node_name) == 30
    assert [p.name for p in tmp_path.iterdir()] == ["big.json"]  # no temporary file left behind
    res = CliRunner().invoke(main, ["generate", "dcm", "--pending", "3", "--output-file", str(out)])
    assert res.exit_code == 2 and "no parameter 'pending'" in res.output


@pytest.mark.parametrize(("params", "match"), [({"pending": "1.5"}, "neither a fraction"),
                                               ({"pending": "x"}, "not a number"),
                                               ({"load": "120"}, "outside 0..100"),
                                               ({"zones": "0"}, "outside 1..26")])
def test_bad_scale_params_are_clear(params, match):
    with pytest.raises(InputError, match=match):
        generate("scale", nodes=10, pods=10, seed=0, params=params)


def test_tenants_deal_every_node_to_one_tenant_and_every_deployment_pod_selects_and_tolerates_its_tenant(tmp_path):
    doc = generate("scale", nodes=200, pods=1500, seed=3, params={"tenants": "4"})
    snap = _load(doc, tmp_path)
    tenant_of = {n.metadata.name: n.metadata.labels["kplace.io/tenant"] for n in snap.nodes}
    assert sorted(set(tenant_of.values())) == [f"tenant-{k}" for k in range(4)]
    for n in snap.nodes:  # each node tainted with its own tenant
        assert any(t.key == "kplace.io/tenant" and t.value == tenant_of[n.metadata.name] and t.effect == "NoSchedule"
                   for t in n.spec.taints)
    zones = defaultdict(set)
    for n in snap.nodes:
        zones[tenant_of[n.metadata.name]].add(n.metadata.labels[ZONE])
    assert all(len(z) == 3 for z in zones.values())  # every tenant has nodes in every zone
    app = [p for p in snap.pods if p.metadata.namespace.startswith("team-")]
    for p in app:
        tenant = f"tenant-{int(p.metadata.namespace.removeprefix('team-')) % 4}"
        assert p.spec.node_selector["kplace.io/tenant"] == tenant
        assert any(t.key == "kplace.io/tenant" and t.value == tenant for t in p.spec.tolerations)
        if p.spec.node_name:
            assert tenant_of[p.spec.node_name] == tenant
    assert doc["metadata"]["annotations"]["kplace.io/tenants"] == "4"
    assert "kplace.io/tenants" not in generate("scale", nodes=50, pods=300, seed=3, params={})["metadata"][
        "annotations"]
