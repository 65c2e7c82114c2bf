"""`kplace run` as a second scheduler against a real kube-apiserver and controllers: it binds a Deployment's pods,
follows scale up and down, uses a node added while it runs and avoids a cordoned one, serves /healthz, /readyz and
/metrics, and exits cleanly on SIGTERM."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import urllib.request

import pytest
from click.testing import CliRunner
from kplace.solver.cli import main

from .helpers import create, deployment, get, kplace_profile, namespace, pods, running_and_ready, wait_for

pytestmark = pytest.mark.slow

NEW_NODE = "run-new"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _http(port: int, path: str) -> tuple[int, str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
        return resp.status, resp.read().decode()


@pytest.fixture
def run_namespace(api):
    """A namespace for the test; afterwards it and the added node are deleted, any cordon is lifted, and the
    fixture waits until they are gone."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    ns = namespace(api, "e2e-run")
    yield ns
    core.delete_namespace(ns)
    wait_for(lambda: not pods(api, ns), "the namespace's pods to be gone")
    for node in get(api, "/api/v1/nodes")["items"]:
        if node["spec"].get("unschedulable"):
            core.patch_node(node["metadata"]["name"], {"spec": {"unschedulable": False}})
    if NEW_NODE in {n["metadata"]["name"] for n in get(api, "/api/v1/nodes")["items"]}:
        core.delete_node(NEW_NODE)
    wait_for(lambda: ns not in {n["metadata"]["name"] for n in get(api, "/api/v1/namespaces")["items"]}
             and NEW_NODE not in {n["metadata"]["name"] for n in get(api, "/api/v1/nodes")["items"]},
             "the namespace and the node to be deleted")


def _all_running(api, ns: str, n: int):
    current = [p for p in pods(api, ns) if not p["metadata"].get("deletionTimestamp")]
    return len(current) == n and all(running_and_ready(p) for p in current) and current


def test_run_binds_a_deployment_follows_scaling_and_node_changes_and_stops_on_sigterm(
        api, kplace_kubeconfig, tmp_path, run_namespace):
    from kubernetes import client

    ns = run_namespace
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    port = _free_port()
    log = (tmp_path / "run.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "kplace.solver.cli", "run", "--kubeconfig", kplace_kubeconfig,
                             "--config", kplace_profile(tmp_path), "--port", str(port), "--bind-address",
                             "127.0.0.1", "--time-limit", "2", "--resync", "5"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: _try(port, "/readyz") == 200, "kplace run to be ready", timeout=60)
        create(api, deployment("web", 6), ns)
        wait_for(lambda: _all_running(api, ns, 6), "the 6 pods to be bound and running")

        apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 10}})
        wait_for(lambda: _all_running(api, ns, 10), "the 10 pods to be bound and running")
        apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 3}})
        wait_for(lambda: _all_running(api, ns, 3), "the Deployment to scale down to 3")

        create(api, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NEW_NODE, "labels": {
            "testcluster.kplace.io/simulated": "true", "kubernetes.io/hostname": NEW_NODE, "e2e": "run"}}})
        wait_for(lambda: any(n["metadata"]["name"] == NEW_NODE and not n["spec"].get("taints")
                             and n["status"].get("allocatable") for n in get(api, "/api/v1/nodes")["items"]),
                 "the new node to be Ready and untainted")
        cordoned = sorted(n["metadata"]["name"] for n in get(api, "/api/v1/nodes")["items"]
                          if n["metadata"]["name"] != NEW_NODE)[0]
        core.patch_node(cordoned, {"spec": {"unschedulable": True}})
        before = {p["metadata"]["name"] for p in pods(api, ns)}
        pinned = deployment("pinned", 2)
        pinned["spec"]["template"]["spec"]["nodeSelector"] = {"e2e": "run"}
        create(api, pinned, ns)
        apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 8}})
        final = wait_for(lambda: _all_running(api, ns, 10), "the 7 new pods to be bound and running")
        new = [p for p in final if p["metadata"]["name"] not in before]
        assert len(new) == 7
        assert all(p["spec"]["nodeName"] != cordoned for p in new)
        assert {p["spec"]["nodeName"] for p in new if p["metadata"]["labels"]["app"] == "pinned"} == {NEW_NODE}
        assert all(p["spec"]["schedulerName"] == "kplace" for p in final)

        state = tmp_path / "state.json"
        exported = CliRunner().invoke(main, ["export", "--kubeconfig", kplace_kubeconfig, "--output-file",
                                             str(state)])
        assert exported.exit_code == 0, exported.output
        _assert_bindings_fit(json.loads(state.read_text()), ns)

        assert _http(port, "/healthz")[0] == 200 and _http(port, "/readyz")[0] == 200
        status, metrics = _http(port, "/metrics")
        assert status == 200
        scheduled = [line for line in metrics.splitlines() if line.startswith("kplace_pods_scheduled_total ")]
        assert scheduled and float(scheduled[0].split()[1]) >= 17, metrics[:2000]
        assert "kplace_windows_total" in metrics

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0, (tmp_path / "run.log").read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()


def _try(port: int, path: str) -> int | None:
    try:
        return _http(port, path)[0]
    except OSError:
        return None


def _assert_bindings_fit(state: dict, ns: str) -> None:
    """Every bound pod of the export is on an existing node, and each node's bound requests fit its allocatable
    CPU and pod count."""
    from kplace.models.quantity import parse_quantity

    objs = state["items"]
    nodes = {o["metadata"]["name"]: o for o in objs if o.get("kind") == "Node"}
    used: dict[str, tuple] = {}
    for pod in (o for o in objs if o.get("kind") == "Pod"):
        node = pod["spec"].get("nodeName")
        if not node:
            assert pod["metadata"]["namespace"] != ns, f"{ns}/{pod['metadata']['name']} is not bound"
            continue
        assert node in nodes, f"{pod['metadata']['name']} is bound to the unknown node {node}"
        cpu = sum(parse_quantity(c.get("resources", {}).get("requests", {}).get("cpu", "0"))
                  for c in pod["spec"]["containers"])
        cores, count = used.get(node, (0, 0))
        used[node] = (cores + cpu, count + 1)
    for node, (cores, count) in used.items():
        alloc = nodes[node]["status"]["allocatable"]
        assert cores <= parse_quantity(alloc["cpu"]) and count <= int(alloc["pods"]), node
