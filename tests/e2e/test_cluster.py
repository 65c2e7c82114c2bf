"""The test control plane itself: real admission and controllers, simulated nodes that keep their leases and run
what is bound to them, and graceful deletion finished as a kubelet would."""

from __future__ import annotations

import pytest

from .helpers import NODES, bind, create, deployment, get, namespace, pods, running_and_ready, wait_for

pytestmark = pytest.mark.slow  # each session starts a control plane: CI's run (--slow), not the fast one


def test_the_simulated_nodes_are_ready_schedulable_and_renew_their_leases(api):
    nodes = get(api, "/api/v1/nodes")["items"]
    assert len(nodes) == NODES
    for node in nodes:
        ready = {c["type"]: c["status"] for c in node["status"]["conditions"]}
        assert ready["Ready"] == "True" and not node["spec"].get("taints")
        assert node["status"]["allocatable"]["cpu"] == "16"
    leases = {lease["metadata"]["name"]: lease for lease in
              get(api, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases")["items"]}
    first = {name: lease["spec"]["renewTime"] for name, lease in leases.items()}
    assert set(first) == {n["metadata"]["name"] for n in nodes}
    wait_for(lambda: all(lease["spec"]["renewTime"] != first[lease["metadata"]["name"]] for lease in
                         get(api, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases")["items"]),
             "every node lease to be renewed", timeout=30)


def test_a_pod_bound_through_the_binding_api_runs_and_its_graceful_deletion_completes(api):
    from kubernetes import client

    ns = namespace(api, "e2e-cluster")
    create(api, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "solo"},
                 "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "pause"}]}}, ns)
    [pod] = pods(api, ns)
    assert pod["status"]["phase"] == "Pending" and not pod["spec"].get("nodeName")
    # Admission ran: the ServiceAccount plugin mounted the token, DefaultTolerationSeconds added tolerations.
    assert pod["spec"]["serviceAccountName"] == "default"
    assert any(v["name"].startswith("kube-api-access-") for v in pod["spec"]["volumes"])
    assert {t["key"] for t in pod["spec"]["tolerations"]} == {"node.kubernetes.io/not-ready",
                                                              "node.kubernetes.io/unreachable"}
    bind(api, ns, "solo", "node-1")
    running = wait_for(lambda: [p for p in pods(api, ns) if running_and_ready(p)], "the bound pod to run")
    assert running[0]["spec"]["nodeName"] == "node-1" and running[0]["status"]["podIP"]
    client.CoreV1Api(api).delete_namespaced_pod("solo", ns)  # default grace period: 30 s, finished by the node
    wait_for(lambda: not pods(api, ns), "the deleted pod to be gone", timeout=20)


def test_a_deployment_gets_its_replicaset_and_pods_from_the_real_controllers(api):
    ns = namespace(api, "e2e-controllers")
    create(api, deployment("web", 3), ns)
    made = wait_for(lambda: len(pods(api, ns)) == 3 and pods(api, ns), "the Deployment's 3 pods")
    owners = {p["metadata"]["ownerReferences"][0]["kind"] for p in made}
    assert owners == {"ReplicaSet"}
    assert all(p["spec"]["schedulerName"] == "kplace" and not p["spec"].get("nodeName") for p in made)
