"""`kplace rebalance --apply` against a real kube-apiserver and controllers: evictions through the Eviction API with
a PodDisruptionBudget the API server enforces, replacements made by the real ReplicaSet controller and bound where
the plan said."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from kplace.solver.cli import main

from .helpers import bind, create, deployment, get, kplace_profile, namespace, pods, running_and_ready, wait_for

pytestmark = pytest.mark.slow  # each session starts a control plane: CI's run (--slow), not the fast one

NODES = [f"rb-{i}" for i in range(4)]


@pytest.fixture
def rebalance_namespace(api):
    """Four more simulated nodes and a namespace, only for this test (its pods select the nodes with
    e2e=rebalance); afterwards the namespace is deleted, its pods are gone, then the nodes are deleted."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    for name in NODES:
        create(api, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
            "testcluster.kplace.io/simulated": "true", "kubernetes.io/hostname": name, "e2e": "rebalance"}}})
    wait_for(lambda: all(not n["spec"].get("taints") and n["status"].get("allocatable")
                         for n in get(api, "/api/v1/nodes")["items"] if n["metadata"]["name"] in NODES),
             "the new nodes to be Ready and untainted")
    ns = namespace(api, "e2e-rebalance")
    yield ns
    core.delete_namespace(ns)
    wait_for(lambda: not pods(api, ns), "the namespace's pods to be gone")
    for name in NODES:
        core.delete_node(name)


def test_apply_evicts_through_the_pdb_and_the_replacements_land_where_the_plan_said(api, kplace_kubeconfig, tmp_path,
                                                                                    rebalance_namespace):
    ns = rebalance_namespace
    web = deployment("web", 4, cpu="1")
    web["spec"]["template"]["spec"]["nodeSelector"] = {"e2e": "rebalance"}
    create(api, web, ns)
    names = sorted(p["metadata"]["name"] for p in wait_for(lambda: len(pods(api, ns)) == 4 and pods(api, ns),
                                                           "the Deployment's 4 pods"))
    for name, node in zip(names, NODES, strict=True):  # one per node: three nodes can be emptied
        bind(api, ns, name, node)
    wait_for(lambda: all(running_and_ready(p) for p in pods(api, ns)), "the pods to run")
    create(api, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
                 "spec": {"minAvailable": 3, "selector": {"matchLabels": {"app": "web"}}}}, ns)
    wait_for(lambda: get(api, f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/web").get("status", {})
             .get("disruptionsAllowed") == 1, "the PDB to allow one disruption")

    policy = tmp_path / "policy.yaml"
    policy.write_text(f"apiVersion: kplace.io/v1alpha1\nkind: RebalancePolicy\nevictor:\n"
                      f"  namespaces: {{include: [{ns}]}}\n")
    res = CliRunner().invoke(main, [
        "rebalance", "--kubeconfig", kplace_kubeconfig, "--goal", "pack", "--apply", "--policy", str(policy),
        "--config", kplace_profile(tmp_path), "--no-pending", "--timeout", "60", "--time-limit", "5", "-o", "json",
        "--quiet"])
    assert res.exit_code == 0, res.output
    plan = json.loads(res.stdout)
    assert plan["apply"]["completed"], plan["apply"]
    moves = plan["moves"]
    assert len(moves) == 3 and len({m["to"] for m in moves}) == 1
    assert len({m["wave"] for m in moves}) == 3  # the PDB allows one disruption at a time
    [target] = {m["to"] for m in moves}
    final = pods(api, ns)
    assert len(final) == 4 and all(running_and_ready(p) for p in final)
    assert {p["spec"]["nodeName"] for p in final} == {target}
    moved = {m["pod"].split("/")[1] for m in moves}
    assert moved <= set(names) and not moved & {p["metadata"]["name"] for p in final}
