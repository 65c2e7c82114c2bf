"""`kplace export --kubeconfig` against a real kube-apiserver: the objects it writes are the objects the API server
holds, read in pages through continue tokens."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from kplace.models import load_state
from kplace.solver.cli import main

from .helpers import NODES, PATHS, create, deployment, get, namespace, pods, wait_for

pytestmark = pytest.mark.slow  # each session starts a control plane: CI's run (--slow), not the fast one


def _key(kind, obj):
    meta = obj["metadata"]
    return kind, meta.get("namespace", ""), meta["name"]


def test_export_writes_every_object_the_api_server_lists_and_its_file_loads_as_a_state(api, kplace_kubeconfig,
                                                                                      tmp_path):
    ns = namespace(api, "e2e-export")
    create(api, deployment("web", 4), ns)
    create(api, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
                 "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}}, ns)
    create(api, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "e2e-high"},
                 "value": 1000})
    create(api, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                 "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}, ns)
    wait_for(lambda: len(pods(api, ns)) == 4, "the Deployment's 4 pods")
    # The controllers' status writes settle first, so that only node heartbeats change objects while we read.
    wait_for(lambda: get(api, f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/web").get("status", {})
             .get("expectedPods") == 4, "the disruption controller's status of the PDB")
    wait_for(lambda: all(rs.get("status", {}).get("replicas") == 4 for rs in
                         get(api, f"/apis/apps/v1/namespaces/{ns}/replicasets")["items"]),
             "the ReplicaSet's status")

    out = tmp_path / "state.json"
    res = CliRunner().invoke(main, ["export", "--kubeconfig", kplace_kubeconfig, "--output-file", str(out),
                                    "--page-size", "3"])
    assert res.exit_code == 0, res.output
    exported = json.loads(out.read_text())["items"]
    raw = {kind: get(api, path)["items"] for kind, path in PATHS.items()}

    by_key = {_key(o["kind"], o): o for o in exported}
    assert set(by_key) == {_key(kind, o) for kind, items in raw.items() for o in items}
    compared = 0
    for kind, items in raw.items():
        for obj in items:
            mine = by_key[_key(kind, obj)]
            assert mine["metadata"]["uid"] == obj["metadata"]["uid"]
            if mine["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]:
                assert {k: v for k, v in mine.items() if k not in ("kind", "apiVersion")} == obj
                compared += 1
    assert compared >= len(by_key) - NODES  # only the nodes' heartbeats may change an object between the reads
    kinds = {k for k, _, _ in by_key}
    assert {"Node", "Pod", "PodDisruptionBudget", "PriorityClass", "Namespace", "Service", "ReplicaSet"} <= kinds
    assert ("PodDisruptionBudget", ns, "web") in by_key and ("PriorityClass", "", "e2e-high") in by_key

    state = load_state([str(out)])
    assert len(state.nodes) == NODES
    assert {p.metadata.name for p in state.pending_pods() if p.metadata.namespace == ns} == {
        p["metadata"]["name"] for p in pods(api, ns)}
