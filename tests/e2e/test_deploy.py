"""deploy/'s manifests against a real kube-apiserver: every object is accepted by its admission and validation (a
server-side dry run; deploy/rbac.yaml is really created by the `kplace_kubeconfig` fixture), and deploy/rbac.yaml's
ClusterRole holds no list or create rule kplace could run without: with any one of them removed, kplace, run as
its ServiceAccount, is refused (403) on a call it makes."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from kplace.solver.cli import main

from .helpers import DEPLOY, allowed, create, deployment, kplace_profile, manifest, namespace, pods, wait_for

pytestmark = pytest.mark.slow  # each session starts a control plane: CI's run (--slow), not the fast one

API_OBJECTS = ["kplace-run.yaml", "extender.yaml", "kubeconfig.yaml", "rebalance-cronjob.yaml"]


def test_every_manifest_in_deploy_is_accepted_by_the_api_server(api, kplace_kubeconfig):
    shown = {p.name for p in DEPLOY.glob("*.yaml")}
    # extender-config.yaml is kube-scheduler's own configuration file, not an API object.
    assert shown == {*API_OBJECTS, "rbac.yaml", "extender-config.yaml"}
    kinds = []
    for name in API_OBJECTS:
        for obj in manifest(name):
            create(api, obj, dry_run="All")  # raises on any refusal (validation, admission, unknown kind)
            kinds.append(obj["kind"])
    assert sorted(kinds) == ["ConfigMap", "CronJob", "Deployment", "Deployment", "Service"]


def _rule_probe(rule: dict) -> tuple[str, str, str, str]:
    """(verb, resource, group, subresource) of a rule, for a SubjectAccessReview."""
    resource, _, sub = rule["resources"][0].partition("/")
    return rule["verbs"][0], resource, rule["apiGroups"][0], sub


def _run_as_kplace(kplace_kubeconfig: str, ns: str, pod: str, tmp_path) -> list[str]:
    """What kplace, as deploy/rbac.yaml's ServiceAccount, was refused: export, then a dry-run `schedule --bind
    api` of NS's pending pod, then a dry-run eviction of that pod."""
    from kplace.solver.binder.kube import new_client
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    refused = []
    res = CliRunner().invoke(main, ["export", "--kubeconfig", kplace_kubeconfig,
                                    "--output-file", str(tmp_path / "state.json")])
    if res.exit_code != 0:
        refused.append(f"export: {res.output.strip()[-300:]}")
        return refused  # schedule reads the cluster the same way
    res = CliRunner().invoke(main, ["schedule", "--kubeconfig", kplace_kubeconfig, "--config",
                                    kplace_profile(tmp_path), "--bind", "api", "--dry-run", "-n", ns, "-o", "json",
                                    "--time-limit", "2", "--quiet"])
    assert res.stdout, res.output  # exit 1 when a Binding was refused, with the plan and its outcomes on stdout
    refused += [f"binding: {o['message']}" for o in json.loads(res.stdout)["commit"]["outcomes"] if o["code"] == 403]
    kplace = new_client(kplace_kubeconfig)
    try:
        client.CoreV1Api(kplace).create_namespaced_pod_eviction(pod, ns, {
            "apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": ns}},
            dry_run="All")
    except ApiException as exc:
        if exc.status == 403:
            refused.append(f"eviction: {exc.reason}")
    finally:
        kplace.close()
    return refused


def test_removing_any_rule_of_the_cluster_role_that_the_tests_exercise_gets_kplace_refused(api, kplace_kubeconfig,
                                                                                           tmp_path):
    from kubernetes import client

    rbac = client.RbacAuthorizationV1Api(api)
    [role] = [o for o in manifest("rbac.yaml") if o["kind"] == "ClusterRole"]
    ns = namespace(api, "e2e-rbac")
    create(api, deployment("lone", 1), ns)
    [pod] = [p["metadata"]["name"] for p in wait_for(lambda: pods(api, ns), "the Deployment's pod")]
    assert _run_as_kplace(kplace_kubeconfig, ns, pod, tmp_path) == []  # the whole role: nothing refused

    # The rules for calls no end-to-end test makes (watch, get, patch: `kplace run`, preemption, claims) are kept
    # for their code paths; every rule that lists or creates is exercised here.
    exercised = [i for i, r in enumerate(role["rules"]) if {"list", "create"} & set(r["verbs"])]
    assert len(exercised) == 8
    try:
        for i in exercised:
            rules = role["rules"][:i] + role["rules"][i + 1:]
            rbac.patch_cluster_role("kplace", {"rules": rules})
            wait_for(lambda i=i: not allowed(api, *_rule_probe(role["rules"][i])), f"rule {i} to be removed")
            refused = _run_as_kplace(kplace_kubeconfig, ns, pod, tmp_path)
            assert refused, f"kplace needed nothing of rule {i}: {role['rules'][i]}"
    finally:
        rbac.patch_cluster_role("kplace", {"rules": role["rules"]})
        wait_for(lambda: all(allowed(api, *_rule_probe(r)) for r in role["rules"]), "the whole role again")
