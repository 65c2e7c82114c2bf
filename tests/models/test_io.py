"""Every input form kplace reads, and what the loader does with it."""

import json
from pathlib import Path

import pytest
import yaml
from kplace.models import load_state

INSTANCES = Path(__file__).resolve().parents[2] / "instances"


def node(name, **labels):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def pod(name, ns="default", node_name="", **extra):
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}], **extra}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def untyped(obj):
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}


def write(tmp_path, name, text):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if isinstance(text, str) else json.dumps(text))
    return str(path)


def names(snapshot):
    return sorted(n.metadata.name for n in snapshot.nodes), sorted(p.metadata.name for p in snapshot.pods)


EXPECTED = (["a", "b"], ["p1", "p2"])


def test_a_v1_list_whose_items_carry_kind_is_read(tmp_path):
    doc = {"apiVersion": "v1", "kind": "List", "items": [node("a"), node("b"), pod("p1"), pod("p2", node_name="a")]}
    assert names(load_state([write(tmp_path, "state.json", doc)])) == EXPECTED


def test_typed_lists_whose_items_lack_kind_are_read(tmp_path):
    nodes = {"apiVersion": "v1", "kind": "NodeList", "items": [untyped(node("a")), untyped(node("b"))]}
    pods = {"apiVersion": "v1", "kind": "PodList", "items": [untyped(pod("p1")), untyped(pod("p2"))]}
    assert names(load_state([write(tmp_path, "n.json", nodes), write(tmp_path, "p.json", pods)])) == EXPECTED


def test_single_objects_in_separate_files_are_read(tmp_path):
    paths = [write(tmp_path, f"{o['metadata']['name']}.json", o) for o in (node("a"), node("b"), pod("p1"), pod("p2"))]
    assert names(load_state(paths)) == EXPECTED


def test_a_multi_document_yaml_manifest_is_read(tmp_path):
    text = yaml.safe_dump_all([node("a"), node("b"), None, pod("p1"), pod("p2")])
    assert names(load_state([write(tmp_path, "all.yaml", text)])) == EXPECTED


def test_a_yaml_kubectl_list_is_read(tmp_path):
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [node("a"), node("b"), pod("p1"), pod("p2")]})
    assert names(load_state([write(tmp_path, "state.yml", text)])) == EXPECTED


def test_a_directory_is_read_recursively_and_other_files_are_ignored(tmp_path):
    write(tmp_path, "cluster/nodes/a.yaml", yaml.safe_dump(node("a")))
    write(tmp_path, "cluster/nodes/b.json", node("b"))
    write(tmp_path, "cluster/apps/pods.yaml", yaml.safe_dump_all([pod("p1"), pod("p2")]))
    write(tmp_path, "cluster/README.md", "# not state")
    assert names(load_state([str(tmp_path / "cluster")])) == EXPECTED


def test_files_directories_json_and_yaml_can_be_mixed(tmp_path):
    d = tmp_path / "d"
    write(tmp_path, "d/a.yaml", yaml.safe_dump(node("a")))
    paths = [str(d), write(tmp_path, "b.json", node("b")), write(tmp_path, "p.yaml", yaml.safe_dump_all([pod("p1")])),
             write(tmp_path, "p2.json", {"kind": "PodList", "items": [untyped(pod("p2"))]})]
    assert names(load_state(paths)) == EXPECTED


def test_json_in_a_yaml_file_and_a_list_at_the_top_level_are_read(tmp_path):
    assert names(load_state([write(tmp_path, "x.yaml", [node("a"), node("b"), pod("p1"), pod("p2")])])) == EXPECTED


def test_stdin_is_read_when_the_path_is_a_dash(monkeypatch):
    import io

    doc = {"kind": "List", "items": [node("a"), node("b"), pod("p1"), pod("p2")]}
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(doc)))
    assert names(load_state(["-"])) == EXPECTED


SIMULATOR_EXPORT = {
    # The shape of kube-scheduler-simulator's ResourcesForExport (simulator/export/export.go): items lack kind.
    "pods": [untyped(pod("p1")), untyped(pod("p2", node_name="a"))],
    "nodes": [untyped(node("a")), untyped(node("b"))],
    "pvs": [{"metadata": {"name": "pv1"}, "spec": {"capacity": {"storage": "1Gi"}}}],
    "pvcs": [{"metadata": {"name": "claim", "namespace": "default"}, "spec": {"volumeName": "pv1"}}],
    "storageClasses": [{"metadata": {"name": "standard"}, "provisioner": "k8s.io/minikube-hostpath"}],
    "priorityClasses": [{"metadata": {"name": "high"}, "value": 1000}],
    "namespaces": [{"metadata": {"name": "team-a"}}],
    "schedulerConfig": {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                        "profiles": [{"schedulerName": "default-scheduler"}]},
}


def test_the_kube_scheduler_simulator_export_is_read_with_its_scheduler_config(tmp_path):
    snap = load_state([write(tmp_path, "export.json", SIMULATOR_EXPORT)])
    assert names(snap) == EXPECTED
    assert [pv.metadata.name for pv in snap.pvs] == ["pv1"]
    assert [c.metadata.name for c in snap.pvcs] == ["claim"]
    assert [s.metadata.name for s in snap.storage_classes] == ["standard"]
    assert [c.value for c in snap.priority_classes] == [1000]
    assert "team-a" in {n.metadata.name for n in snap.namespaces}
    assert snap.scheduler_config["kind"] == "KubeSchedulerConfiguration"


def test_a_simulator_export_with_null_lists_is_read(tmp_path):
    doc = {"pods": None, "nodes": [untyped(node("a"))], "pvs": None, "schedulerConfig": None}
    assert names(load_state([write(tmp_path, "export.json", doc)])) == (["a"], [])


def test_an_unknown_kind_is_skipped_with_a_warning(tmp_path):
    snap = load_state([write(tmp_path, "x.yaml", yaml.safe_dump_all(
        [node("a"), {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web",
                                                                                          "namespace": "shop"}}]))])
    assert names(snap) == (["a"], [])
    where = tmp_path / "x.yaml"
    assert snap.warnings == [f"{where}: Ingress shop/web: kind Ingress is not used for scheduling; skipped"]


def test_kinds_of_a_kubectl_get_all_that_the_scheduler_does_not_read_are_skipped_quietly(tmp_path):
    cm = {"kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}
    assert load_state([write(tmp_path, "x.json", {"kind": "List", "items": [cm]})]).warnings == []


def test_objects_named_by_generate_name_get_distinct_deterministic_names(tmp_path):
    gen = {"kind": "Pod", "metadata": {"generateName": "pod-"}, "spec": {"containers": [{"name": "c"}]}}
    path = write(tmp_path, "x.yaml", yaml.safe_dump_all([gen, gen, gen]))
    first = [p.metadata.name for p in load_state([path]).pods]
    assert len(set(first)) == 3 and all(n.startswith("pod-") and len(n) == 9 for n in first)
    assert [p.metadata.name for p in load_state([path]).pods] == first


def test_an_identical_duplicate_is_merged_with_a_warning(tmp_path):
    snap = load_state([write(tmp_path, "a.json", node("a")), write(tmp_path, "b.json", node("a"))])
    assert len(snap.nodes) == 1
    assert snap.warnings == ["Node a appears more than once; the copies are identical"]


def test_a_pod_bound_to_a_node_that_is_not_in_the_state_is_reported_and_holds_nothing(tmp_path):
    snap = load_state([write(tmp_path, "x.json", {"kind": "List", "items": [node("a"), pod("p", node_name="gone")]})])
    assert snap.warnings == ["1 pod(s) are bound to node 'gone', which is not in the state; ignored"]
    assert snap.bound_pods() == [] and snap.pending_pods() == []


def test_namespaces_used_by_objects_exist_with_their_name_label(tmp_path):
    snap = load_state([write(tmp_path, "x.json", pod("p", ns="shop"))])
    labels = snap.namespace_labels()
    assert labels["shop"] == {"kubernetes.io/metadata.name": "shop"}


def test_api_server_defaulting_is_applied_on_read(tmp_path):
    raw = pod("p", tolerations=[{"key": "k", "value": "v"}])
    raw["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1", "memory": "1Gi"}}
    raw["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 80}]
    p = load_state([write(tmp_path, "p.json", raw)]).pods[0]
    assert p.spec.containers[0].resources.requests["cpu"] == 1
    assert p.spec.tolerations[0].operator == "Equal"
    assert p.spec.containers[0].ports[0].protocol == "TCP"
    assert p.spec.scheduler_name == "default-scheduler"
    assert p.spec.priority == 0 and p.spec.preemption_policy == "PreemptLowerPriority"


@pytest.mark.parametrize("name", ["demo-cluster.json", "perf-basic-small.json", "affinity-small.json"])
def test_every_shipped_instance_loads_without_warnings(name):
    snap = load_state([str(INSTANCES / name)])
    assert snap.nodes and snap.pods and snap.warnings == []
    assert (INSTANCES / name).stat().st_size < 1_000_000
