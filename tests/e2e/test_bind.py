"""`kplace schedule --kubeconfig --bind api` against a real kube-apiserver: pending pods of a Deployment are bound
where the plan says and run there; a re-run finds nothing left; a stale plan meets the API server's own 409 and 404
answers and binds nothing twice."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from kplace.models import compile_index
from kplace.models.plan import Placement, Plan
from kplace.solver.binder.api import commit_api
from kplace.solver.binder.kube import new_client
from kplace.solver.binder.live import read_cluster
from kplace.solver.cli import main

from .helpers import bind, create, deployment, kplace_profile, namespace, pods, running_and_ready, wait_for

pytestmark = pytest.mark.slow  # each session starts a control plane: CI's run (--slow), not the fast one


def _schedule(kubeconfig: str, ns: str, tmp_path) -> dict:
    """`kplace schedule --bind api` for one namespace's pods (schedulerName kplace)."""
    res = CliRunner().invoke(main, ["schedule", "--kubeconfig", kubeconfig, "--config", kplace_profile(tmp_path),
                                    "--bind", "api", "-n", ns, "-o", "json", "--time-limit", "2", "--quiet"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_schedule_binds_a_deployments_pending_pods_which_then_run_on_the_planned_nodes(api, kplace_kubeconfig,
                                                                                     tmp_path):
    ns = namespace(api, "e2e-bind")
    create(api, deployment("web", 6, cpu="3"), ns)
    wait_for(lambda: len(pods(api, ns)) == 6, "the Deployment's 6 pods")

    data = _schedule(kplace_kubeconfig, ns, tmp_path)
    plan = {p["pod"]: p["node"] for p in data["placements"]}
    assert set(plan) == {f"{ns}/{p['metadata']['name']}" for p in pods(api, ns)}
    assert all(plan.values())
    outcomes = data["commit"]["outcomes"]
    assert sorted((o["pod"], o["result"], o["code"]) for o in outcomes) == sorted(
        (key, "bound", 201) for key in plan)
    running = wait_for(lambda: all(running_and_ready(p) for p in pods(api, ns)) and pods(api, ns),
                       "the bound pods to run")
    assert {f"{ns}/{p['metadata']['name']}": p["spec"]["nodeName"] for p in running} == plan
    # 6 pods of 3 CPUs on 16-CPU nodes: no node holds more than 5, so the plan respected capacity.
    per_node = [list(plan.values()).count(n) for n in set(plan.values())]
    assert max(per_node) <= 5

    again = _schedule(kplace_kubeconfig, ns, tmp_path)
    assert again["placements"] == [] and again["commit"]["outcomes"] == []


def test_a_stale_plan_meets_409_for_a_pod_bound_meanwhile_and_404_for_a_deleted_one_and_binds_only_the_rest(
        api, kplace_kubeconfig):
    from kubernetes import client

    ns = namespace(api, "e2e-stale")
    create(api, deployment("api", 3), ns)
    names = sorted(p["metadata"]["name"] for p in wait_for(lambda: len(pods(api, ns)) == 3 and pods(api, ns),
                                                           "the Deployment's 3 pods"))
    index = compile_index(read_cluster(kplace_kubeconfig))
    plan = Plan("greedy", [Placement(f"{ns}/{name}", "node-0") for name in names])

    bind(api, ns, names[0], "node-2")
    client.CoreV1Api(api).delete_namespaced_pod(names[1], ns)  # pending: gone at once; its ReplicaSet makes a new one
    wait_for(lambda: names[1] not in {p["metadata"]["name"] for p in pods(api, ns)}, "the deleted pod to go")

    kplace = new_client(kplace_kubeconfig)
    summary = commit_api(plan, index, kplace)
    by_pod = {o["pod"]: o for o in summary["outcomes"]}
    assert (by_pod[f"{ns}/{names[0]}"]["result"], by_pod[f"{ns}/{names[0]}"]["code"]) == ("conflict", 409)
    assert 'already assigned to node "node-2"' in by_pod[f"{ns}/{names[0]}"]["message"]
    assert (by_pod[f"{ns}/{names[1]}"]["result"], by_pod[f"{ns}/{names[1]}"]["code"]) == ("not-found", 404)
    assert by_pod[f"{ns}/{names[2]}"]["result"] == "bound" and summary["placed"] == 1
    assert {r["pod"] for r in summary["released"]} == {f"{ns}/{names[0]}", f"{ns}/{names[1]}"}

    repeat = commit_api(plan, index, kplace)
    kplace.close()
    assert repeat["placed"] == 0
    assert {o["result"] for o in repeat["outcomes"]} == {"conflict", "not-found"}
    nodes = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods(api, ns)}
    assert nodes[names[0]] == "node-2" and nodes[names[2]] == "node-0"  # nothing was bound twice
    replacement = set(nodes) - set(names)
    assert len(replacement) == 1 and nodes[replacement.pop()] is None
