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
    e2e=rebalance); afterwards the namespace is deleted, its pods are gone, then the nodes, and the fixture waits
    until both are gone so the next test can make them again."""
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
    wait_for(lambda: ns not in {n["metadata"]["name"] for n in get(api, "/api/v1/namespaces")["items"]}
             and not {n["metadata"]["name"] for n in get(api, "/api/v1/nodes")["items"]} & set(NODES),
             "the namespace and the nodes to be deleted")


def _spread_web_under_a_pdb(api, ns: str) -> list[str]:
    """A Deployment of 4 one-CPU pods, one per node of the test's four, under a PDB that allows one disruption; the
    pods' names."""
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
    _allowed(api, ns, 1)
    return names


def _allowed(api, ns: str, n: int) -> None:
    wait_for(lambda: get(api, f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/web").get("status", {})
             .get("disruptionsAllowed") == n, f"the PDB to allow {n} disruption(s)")


def _policy(tmp_path, ns: str) -> str:
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"apiVersion: kplace.io/v1alpha1\nkind: RebalancePolicy\nevictor:\n"
                      f"  namespaces: {{include: [{ns}]}}\n")
    return str(policy)


def test_apply_evicts_through_the_pdb_and_the_replacements_land_where_the_plan_said(api, kplace_kubeconfig, tmp_path,
                                                                                    rebalance_namespace):
    ns = rebalance_namespace
    names = _spread_web_under_a_pdb(api, ns)
    res = CliRunner().invoke(main, [
        "rebalance", "--kubeconfig", kplace_kubeconfig, "--goal", "pack", "--apply", "--policy", _policy(tmp_path, ns),
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


def test_an_eviction_the_api_server_refuses_for_a_while_is_retried_and_the_plan_completes(
        api, kplace_kubeconfig, tmp_path, rebalance_namespace):
    """The plan comes from an export taken while the PDB allowed one disruption; then the PDB is tightened, so the
    API server answers the first eviction 429 until it is relaxed again a few seconds later."""
    import threading
    import time

    from kubernetes import client

    ns = rebalance_namespace
    _spread_web_under_a_pdb(api, ns)
    state = tmp_path / "state.json"
    exported = CliRunner().invoke(main, ["export", "--kubeconfig", kplace_kubeconfig, "--output-file", str(state)])
    assert exported.exit_code == 0, exported.output
    policy_api = client.PolicyV1Api(api)
    policy_api.patch_namespaced_pod_disruption_budget("web", ns, {"spec": {"minAvailable": 4}})
    _allowed(api, ns, 0)
    relax = threading.Timer(4.0, lambda: policy_api.patch_namespaced_pod_disruption_budget(
        "web", ns, {"spec": {"minAvailable": 3}}))
    relax.start()
    started = time.monotonic()
    try:
        res = CliRunner().invoke(main, [
            "rebalance", str(state), "--kubeconfig", kplace_kubeconfig, "--goal", "pack", "--apply",
            "--policy", _policy(tmp_path, ns), "--config", kplace_profile(tmp_path), "--no-pending",
            "--timeout", "60", "--time-limit", "5", "-o", "json", "--quiet"])
    finally:
        relax.join()
    assert res.exit_code == 0, res.output
    plan = json.loads(res.stdout)
    assert plan["apply"]["completed"], plan["apply"]
    first = next(e for e in plan["apply"]["events"] if e["action"] == "evicted")
    assert first.get("refused_first", 0) >= 1 and time.monotonic() - started >= 4.0
    final = pods(api, ns)
    assert len(final) == 4 and all(running_and_ready(p) for p in final)
    assert len({p["spec"]["nodeName"] for p in final}) == 1
