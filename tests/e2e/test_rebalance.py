"""`kplace rebalance --apply` against a real kube-apiserver and controllers: evictions through the Eviction API with
a PodDisruptionBudget the API server enforces, replacements made by the real ReplicaSet controller and bound where
the plan said."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from kplace.solver.cli import main

from .helpers import (
    bind,
    create,
    deployment,
    get,
    kplace_profile,
    nodes_and_namespace,
    pods,
    running_and_ready,
    wait_for,
)

pytestmark = pytest.mark.slow  # each session starts a control plane: CI's run (--slow), not the fast one

NODES = [f"rb-{i}" for i in range(4)]


@pytest.fixture
def rebalance_namespace(api):
    """Four more simulated nodes and a namespace, only for this test (its pods select the nodes with
    e2e=rebalance); afterwards the namespace is deleted, its pods are gone, then the nodes, and the fixture waits
    until both are gone so the next test can make them again."""
    yield from nodes_and_namespace(api, NODES, "rebalance")


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


class _PodWatch:
    """Watches the namespace's pods from the resourceVersion of a first list, keeping each pod's latest state: the
    fewest pods the PDB counts healthy (bound, Running and Ready, not terminating) in any state seen, and `evicted`,
    set when a pod is first seen terminating (`on_evicted` is called then, from the watch's thread)."""

    def __init__(self, api, ns: str, on_evicted) -> None:
        import threading

        from kubernetes import client, watch

        self.core, self.ns, self.on_evicted = client.CoreV1Api(api), ns, on_evicted
        listed = self.core.list_namespaced_pod(ns)
        self.pods = {p.metadata.name: p for p in listed.items}
        self.min_healthy = self._healthy()
        self.evicted = threading.Event()
        self.first_evicted: str | None = None
        self._watch = watch.Watch()
        self._rv = listed.metadata.resource_version
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _healthy(self) -> int:
        return sum(1 for p in self.pods.values() if p.spec.node_name and p.metadata.deletion_timestamp is None
                   and p.status.phase == "Running"
                   and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or []))

    def _run(self) -> None:
        for event in self._watch.stream(self.core.list_namespaced_pod, self.ns, resource_version=self._rv,
                                        timeout_seconds=600):
            pod = event["object"]
            if event["type"] == "DELETED":
                self.pods.pop(pod.metadata.name, None)
            else:
                self.pods[pod.metadata.name] = pod
            self.min_healthy = min(self.min_healthy, self._healthy())
            gone = pod.metadata.deletion_timestamp is not None or event["type"] == "DELETED"
            if gone and not self.evicted.is_set():
                self.first_evicted = pod.metadata.name
                self.on_evicted()
                self.evicted.set()

    def stop(self) -> None:
        self._watch.stop()


def test_apply_killed_after_its_first_eviction_leaves_the_cluster_consistent_and_a_rerun_finishes_the_plan(
        api, kplace_kubeconfig, tmp_path, rebalance_namespace):
    """SIGKILL as soon as the first eviction shows (the evicted pod terminating): the PDB was never broken, the
    ReplicaSet controller replaces the evicted pod (its replacement, of kplace's schedulerName, left pending or
    bound by the killed run); the same `kplace rebalance --apply` run again on the cluster as it now is places or
    keeps that replacement and makes the remaining moves: all four pods Running on one node, as the goal asks.
    Both runs decide only the test's namespace's pending pods (`-n`)."""
    import signal
    import subprocess
    import sys

    ns = rebalance_namespace
    names = _spread_web_under_a_pdb(api, ns)
    command = [sys.executable, "-m", "kplace.solver.cli", "rebalance", "--kubeconfig", kplace_kubeconfig, "--goal",
               "pack", "--apply", "--policy", _policy(tmp_path, ns), "--config", kplace_profile(tmp_path),
               "--timeout", "60", "--time-limit", "5", "-n", ns, "-o", "json", "--quiet"]
    log = (tmp_path / "killed.log").open("w")
    proc = None
    watch = _PodWatch(api, ns, lambda: proc.send_signal(signal.SIGKILL))
    try:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        wait_for(lambda: watch.evicted.is_set() or proc.poll() is not None, "the first eviction", timeout=120)
        assert watch.evicted.is_set(), (tmp_path / "killed.log").read_text()[-3000:]
        assert proc.wait(timeout=10) == -signal.SIGKILL
        assert watch.first_evicted in names

        def replaced():
            current = pods(api, ns)
            live = [p for p in current if not p["metadata"].get("deletionTimestamp")]
            return (watch.first_evicted not in {p["metadata"]["name"] for p in current} and len(live) == 4
                    and all(running_and_ready(p) or not p["spec"].get("nodeName") for p in live) and live)

        live = wait_for(replaced, "the evicted pod to be gone and replaced by the ReplicaSet controller")
        replacement = [p for p in live if p["metadata"]["name"] not in names]
        assert len(replacement) == 1
        assert replacement[0]["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
        assert watch.min_healthy >= 3  # minAvailable: never broken, not even by the kill

        rerun = subprocess.run(command, capture_output=True, text=True, timeout=300)
        assert rerun.returncode == 0, rerun.stderr[-3000:] + rerun.stdout[-3000:]
        plan = json.loads(rerun.stdout)
        assert plan["apply"]["completed"], plan["apply"]
        left = f"{ns}/{replacement[0]['metadata']['name']}"
        if not replacement[0]["spec"].get("nodeName"):  # the kill came before the killed run bound it
            # -n: pending pods of other tests' namespaces (their scheduler is kplace too) are not placed
            ours = [p for p in plan["placements"] if p["node"]]
            assert [(p["pod"], p["wave"]) for p in ours] == [(left, 1)], plan
            assert {"wave": 1, "action": "bound", "pod": left, "node": ours[0]["node"]} in plan["apply"]["events"]
            assert sorted(m["wave"] for m in plan["moves"]) == [2, 3], plan  # its PDB opens once it runs
        final = pods(api, ns)
        assert len(final) == 4 and all(running_and_ready(p) for p in final), final
        assert len({p["spec"]["nodeName"] for p in final}) == 1, (
            {p["metadata"]["name"]: p["spec"]["nodeName"] for p in final}, replacement[0]["spec"].get("nodeName"),
            plan["moves"], plan["placements"], plan["dropped"])
        assert watch.min_healthy >= 3
    finally:
        watch.stop()
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
