"""`kplace inspect` through click's CliRunner: what it prints, and how it fails on bad input."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from kplace.solver.cli import main

INSTANCES = Path(__file__).resolve().parents[2] / "instances"


def run(*args, input=None):
    return CliRunner().invoke(main, ["inspect", *args], input=input)


def state(*items):
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)})


def node(name, zone="z1", pool="general", taints=None, **alloc):
    return {"kind": "Node", "metadata": {"name": name, "labels": {
        "topology.kubernetes.io/zone": zone, "cloud.google.com/gke-nodepool": pool,
        "node.kubernetes.io/instance-type": "n2-standard-4"}},
        "spec": {"taints": taints or []},
        "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110", **alloc}}}


def pod(name, ns="default", node_name="", cpu="500m", gpu=None, **spec):
    req = {"cpu": cpu, "memory": "1Gi", **({"nvidia.com/gpu": gpu} if gpu else {})}
    s = {"containers": [{"name": "c", "resources": {"requests": req, "limits": {
        k: v for k, v in req.items() if k == "nvidia.com/gpu"}}}], **spec}
    if node_name:
        s["nodeName"] = node_name
    return {"kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": {"app": name.split("-")[0]}},
            "spec": s, "status": {"phase": "Running" if node_name else "Pending"}}


CLUSTER = state(
    node("a", zone="z1"), node("b", zone="z2"),
    node("gpu-1", zone="z1", pool="gpu", taints=[{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
         **{"nvidia.com/gpu": "2"}),
    {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
    pod("web-1", node_name="a"), pod("web-2", node_name="b"), pod("web-3"),
    pod("train-1", ns="ml", gpu="1", node_name="gpu-1"), pod("train-2", ns="ml", gpu="1", priorityClassName="high"),
    {"kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"},
     "spec": {"minAvailable": 0, "selector": {"matchLabels": {"app": "web"}}}},
)


def test_the_json_summary_counts_nodes_pods_resources_and_pdbs():
    result = run("-", "--output", "json", input=CLUSTER)
    assert result.exit_code == 0, result.output
    s = json.loads(result.output)
    assert s["nodes"]["total"] == 3
    assert s["nodes"]["by_zone"] == {"z1": 2, "z2": 1}
    assert s["nodes"]["by_pool"] == {"general": 2, "gpu": 1}
    assert s["nodes"]["taints"] == {"nvidia.com/gpu:NoSchedule": 1}
    assert s["pods"]["bound"] == 3 and s["pods"]["pending"] == 2
    assert s["pods"]["by_namespace"] == {"default": {"bound": 2, "pending": 1}, "ml": {"bound": 1, "pending": 1}}
    assert s["pods"]["by_priority"] == {"1000": {"bound": 0, "pending": 1}, "0": {"bound": 3, "pending": 1}}
    res = {r["resource"]: r for r in s["resources"]}
    assert (res["cpu"]["allocatable"], res["cpu"]["requested"], res["cpu"]["pending"]) == (12000, 1500, 1000)
    assert (res["nvidia.com/gpu"]["allocatable"], res["nvidia.com/gpu"]["requested"]) == (2, 1)
    assert (res["pods"]["allocatable"], res["pods"]["requested"], res["pods"]["pending"]) == (330, 3, 2)
    assert res["memory"]["display"]["allocatable"] == "48" and res["memory"]["unit"] == "GiB"
    assert res["cpu"]["display"]["requested"] == "1.5" and res["cpu"]["unit"] == "cores"
    shape = s["nodes"]["by_shape"][0]
    assert set(shape) == {"instance_type", "allocatable", "nodes", "label"} and isinstance(shape["nodes"], int)
    assert s["pdbs"] == [{"pdb": "default/web", "minAvailable": 0, "maxUnavailable": None,
                          "disruptionsAllowed": 2, "fromStatus": False}]
    assert s["warnings"] == []


def test_the_table_shows_every_section_a_kubectl_user_looks_for():
    result = run("-", input=CLUSTER)
    assert result.exit_code == 0, result.output
    for text in ("3 nodes", "3 pods bound", "2 pending", "Nodes by shape", "n2-standard-4", "Nodes by zone",
                 "Nodes by pool", "nvidia.com/gpu:NoSchedule", "Allocatable vs requested", "Pods by namespace",
                 "Pods by priority", "PodDisruptionBudgets", "default/web", "2 (computed)"):
        assert text in result.output, text


def test_warnings_are_shown_after_the_tables():
    result = run("-", input=state(node("a"), pod("p-1", node_name="gone")))
    assert result.exit_code == 0
    assert "warning: 1 pod(s) are bound to node 'gone', which is not in the state; ignored" in result.output


@pytest.mark.parametrize("name", ["demo-cluster.json", "perf-basic-small.json", "affinity-small.json"])
def test_every_shipped_instance_can_be_inspected(name):
    result = run(str(INSTANCES / name), "-o", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["pods"]["pending"] > 0


def test_state_files_and_stdin_are_combined(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("nodes.yaml").write_text("kind: Node\nmetadata: {name: a}\nstatus: {allocatable: {cpu: '2', pods: 9}}\n")
    result = run("nodes.yaml", "-", "-o", "json", input=state(pod("p-1", node_name="a")))
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["pods"]["bound"] == 1


# --- bad inputs, each named after its defect: one line on stderr, exit code 2, no traceback ---------------

BAD = {
    "bad-quantity.json": (
        state({"kind": "Pod", "metadata": {"name": "web-3", "namespace": "default"},
               "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "12x"}}}]}}),
        "bad-quantity.json: Pod default/web-3: spec.containers[0].resources.requests.cpu: "
        "'12x' is not a valid quantity"),
    "bad-node-quantity.yaml": (
        "kind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {memory: 16GB}}\n",
        "bad-node-quantity.yaml: Node n1: status.allocatable.memory: '16GB' is not a valid quantity"),
    "bad-toleration-operator.yaml": (
        "kind: Pod\nmetadata: {name: a, namespace: prod}\nspec:\n  containers: [{name: c}]\n"
        "  tolerations: [{key: k, operator: Equals, value: v}]\n",
        "bad-toleration-operator.yaml: Pod prod/a: spec.tolerations[0].operator: "
        "'Equals' is not one of 'Equal', 'Exists', 'Lt', 'Gt' or ''"),
    "bad-taint-effect.yaml": (
        "kind: Node\nmetadata: {name: n1}\nspec: {taints: [{key: a, effect: NoSchedul}]}\n",
        "bad-taint-effect.yaml: Node n1: spec.taints[0].effect: "
        "'NoSchedul' is not one of 'NoSchedule', 'PreferNoSchedule' or 'NoExecute'"),
    "taint-without-effect.yaml": (
        "kind: Node\nmetadata: {name: n1}\nspec: {taints: [{key: a}]}\n",
        "taint-without-effect.yaml: Node n1: spec.taints[0].effect: is required"),
    "selector-in-without-values.yaml": (
        "kind: PodDisruptionBudget\nmetadata: {name: pdb1, namespace: prod}\n"
        "spec: {minAvailable: 1, selector: {matchExpressions: [{key: app, operator: In}]}}\n",
        "selector-in-without-values.yaml: PodDisruptionBudget prod/pdb1: spec.selector.matchExpressions[0]: "
        "values must be non-empty for operator In"),
    "pdb-min-available-not-a-number.yaml": (
        "kind: PodDisruptionBudget\nmetadata: {name: p, namespace: x}\nspec: {minAvailable: five}\n",
        "pdb-min-available-not-a-number.yaml: PodDisruptionBudget x/p: spec.minAvailable: "
        "'five' is not an integer or a percentage"),
    "port-not-an-integer.yaml": (
        "kind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, ports: [{containerPort: eighty}]}]}\n",
        "port-not-an-integer.yaml: Pod default/a: spec.containers[0].ports[0].containerPort: input should be a "
        "valid integer, unable to parse string as an integer (got 'eighty')"),
    "missing-priority-class.yaml": (
        "kind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c}], priorityClassName: gold}\n",
        "missing-priority-class.yaml: Pod default/a: spec.priorityClassName: no PriorityClass with name 'gold' "
        "was found"),
    "duplicate-node-differing.yaml": (
        "kind: Node\nmetadata: {name: n1}\n---\nkind: Node\nmetadata: {name: n1, labels: {a: b}}\n",
        "duplicate-node-differing.yaml: Node n1: defined twice with different contents "
        "(first in duplicate-node-differing.yaml)"),
    "truncated.json": ('{"kind": "Pod", \n', "truncated.json: invalid JSON at line 2 column 1: "
                                            "Expecting property name enclosed in double quotes"),
    "unclosed-flow-mapping.yaml": ("kind: Pod\nmetadata: {name: a\n",
                                   "unclosed-flow-mapping.yaml: invalid YAML at line 3 column 1: "
                                   "did not find expected ',' or '}'"),
    "no-kind.json": ('{"metadata": {"name": "x"}}', "no-kind.json: object has no 'kind'"),
    "scalar-document.yaml": ("- 1\n", "scalar-document.yaml: expected a Kubernetes object or list, found int"),
    "list-item-without-kind.json": ('{"kind": "List", "items": [{"metadata": {"name": "x"}}]}',
                                    "list-item-without-kind.json: items[0]: item in a v1 List has no 'kind'"),
    "unnamed-node.yaml": ("kind: Node\nmetadata: {}\n",
                          "unnamed-node.yaml: Node <unnamed>: metadata.name: metadata.name or metadata.generateName "
                          "is required"),
    "metadata-is-a-list.yaml": ("kind: Pod\nmetadata: [1]\n",
                                "metadata-is-a-list.yaml: Pod default/<unnamed>: metadata: input should be a valid "
                                "dictionary or instance of ObjectMeta (got [1])"),
}


@pytest.mark.parametrize("filename", sorted(BAD))
def test_a_bad_input_fails_with_one_line_naming_file_object_and_field(filename, tmp_path, monkeypatch):
    text, message = BAD[filename]
    monkeypatch.chdir(tmp_path)
    Path(filename).write_text(text)
    result = run(filename)
    assert result.exit_code == 2
    assert result.output == f"kplace: error: {message}\n"
    assert "Traceback" not in result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)


def test_a_missing_path_is_reported_by_name():
    result = run("no/such/state.json")
    assert (result.exit_code, result.output) == (2, "kplace: error: no/such/state.json: no such file or directory\n")


def test_an_empty_directory_is_reported(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("empty").mkdir()
    result = run("empty")
    assert (result.exit_code, result.output) == (
        2, "kplace: error: empty: directory holds no .json, .yaml or .yml files\n")


def test_a_bad_object_read_from_stdin_is_reported_as_stdin():
    result = run("-", input='{"kind": "Node", "metadata": {"name": "n"}, "status": {"capacity": {"cpu": "x"}}}')
    assert result.exit_code == 2
    assert result.output == "kplace: error: <stdin>: Node n: status.capacity.cpu: 'x' is not a valid quantity\n"
