"""Binding claims before pods: the manifest's PV/PVC objects, the API flow against the fake PV controller and
provisioner, the bind timeout, dry runs; the fake server's PV/PVC GET and PATCH."""

from __future__ import annotations

import json
import time

import yaml
from kplace.models import compile_index
from kplace.models.plan import DYNAMIC, Placement, Plan
from kplace.solver.binder import commit
from kplace.solver.binder.api import commit_api
from kplace.solver.binder.kube import new_client
from kplace.solver.binder.retry import RetryPolicy
from kplace.solver.plugins.volumebinding.testdata import claim_volumes, pv, pvc, storage_class
from kplace.solver.testing import build_snapshot, node, pod

FAST = RetryPolicy(attempts=3, base=0.01, cap=0.05, timeout=2.0)
EBS = "ebs.csi.aws.com"


def _objects():
    c1 = pvc("c1")
    c1["metadata"]["uid"] = "uid-c1"
    return [node("a"), node("b"), storage_class("local"), storage_class("gp3", provisioner=EBS),
            pv("pv1", node="a"), c1, pvc("c2", cls="gp3"),
            pod("p", spec=claim_volumes("c1")), pod("q", spec=claim_volumes("c2")), pod("r", spec=claim_volumes("c2"))]


def _plan():
    return Plan("greedy", [Placement("default/p", "a", volume_bindings={"default/c1": "pv1"}),
                           Placement("default/q", "b", volume_bindings={"default/c2": DYNAMIC}),
                           Placement("default/r", "b")])


def _commit(api, plan=None, **kw):
    index = compile_index(build_snapshot(*_objects()))
    client = new_client(api.kubeconfig_path)
    try:
        return commit_api(plan or _plan(), index, client, retry=FAST, sleep=time.sleep, **kw)
    finally:
        client.close()


def test_the_manifest_binds_each_claim_just_before_the_pod_with_objects_kubectl_apply_merges(tmp_path):
    out = tmp_path / "bindings.yaml"
    summary = commit(_plan(), compile_index(build_snapshot(*_objects())), "manifest", out_file=str(out))
    docs = list(yaml.safe_load_all(out.read_text()))
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [
        ("PersistentVolume", "pv1"), ("Binding", "p"), ("PersistentVolumeClaim", "c2"), ("Binding", "q"),
        ("Binding", "r")]
    assert docs[0] == {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
                       "spec": {"claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                             "namespace": "default", "name": "c1", "uid": "uid-c1"}}}
    assert docs[2] == {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                       "metadata": {"name": "c2", "namespace": "default",
                                    "annotations": {"volume.kubernetes.io/selected-node": "b"}}}
    assert summary["bindings"] == 3 and summary["evictions"] == 0 and summary["volumes"] == 2


def test_the_api_binds_the_claims_then_the_pods(fake_api):
    api = fake_api(_objects())
    summary = _commit(api)
    assert summary["placed"] == 3
    assert summary["counts"] == {"volume:bound": 2, "bind:bound": 3}
    c1 = api.get("PersistentVolumeClaim", "c1")
    assert c1["spec"]["volumeName"] == "pv1" and c1["status"]["phase"] == "Bound"
    assert api.get("PersistentVolume", "pv1")["spec"]["claimRef"]["uid"] == "uid-c1"
    c2 = api.get("PersistentVolumeClaim", "c2")
    assert c2["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == "b"
    assert c2["status"]["phase"] == "Bound"
    provisioned = api.get("PersistentVolume", c2["spec"]["volumeName"])
    assert provisioned["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0][
        "values"] == ["b"]
    paths = [(c["method"], c["path"]) for c in api.calls() if c["method"] in ("PATCH", "POST")]
    assert paths.index(("PATCH", "/api/v1/persistentvolumes/pv1")) < paths.index(
        ("POST", "/api/v1/namespaces/default/pods/p/binding"))
    assert paths.index(("PATCH", "/api/v1/namespaces/default/persistentvolumeclaims/c2")) < paths.index(
        ("POST", "/api/v1/namespaces/default/pods/q/binding"))
    patch = json.loads(next(c["body"] for c in api.calls("PATCH", "persistentvolumes/pv1")))
    assert patch["metadata"]["resourceVersion"]  # a precondition: a PV changed meanwhile is a conflict


def test_a_claim_that_does_not_bind_in_time_keeps_its_pod_back(fake_api):
    api = fake_api(_objects(), pv_controller=False)
    summary = _commit(api, Plan("greedy", [_plan().placements[0]]), bind_timeout=0.3)
    outcomes = {(o["step"], o["pod"]): o for o in summary["outcomes"]}
    assert outcomes[("volume", "default/p")]["result"] == "timeout"
    assert outcomes[("bind", "default/p")]["result"] == "skipped"
    assert summary["placed"] == 0 and not api.calls("POST", "binding")
    assert api.get("PersistentVolume", "pv1")["spec"]["claimRef"]["name"] == "c1"  # left for the PV controller


def test_a_slow_pv_controller_is_waited_for(fake_api):
    api = fake_api(_objects(), pv_controller_delay=0.3)
    summary = _commit(api, Plan("greedy", [_plan().placements[0]]))
    assert summary["counts"] == {"volume:bound": 1, "bind:bound": 1}


def test_a_pv_taken_by_another_claim_is_a_conflict_and_the_pod_is_not_bound(fake_api):
    objs = _objects()
    objs[4] = pv("pv1", node="a", claim="default/someone-else")
    api = fake_api(objs)
    summary = _commit(api, Plan("greedy", [_plan().placements[0]]))
    assert [(o["step"], o["result"]) for o in summary["outcomes"]] == [("volume", "conflict"), ("bind", "skipped")]


def test_a_dry_run_validates_the_patches_and_changes_nothing(fake_api):
    api = fake_api(_objects())
    summary = _commit(api, dry_run=True)
    assert summary["counts"] == {"volume:patched": 2, "bind:bound": 3}
    assert "claimRef" not in api.get("PersistentVolume", "pv1")["spec"]
    assert api.get("PersistentVolumeClaim", "c1")["status"]["phase"] == "Pending"
    assert all(c["query"].get("dryRun") == ["All"] for c in api.calls("PATCH"))


def _request(api, method, path, body=None, ctype="application/merge-patch+json"):
    return api.request(method, path, body, ctype=ctype)


def test_the_fake_server_gets_and_patches_pvs_and_pvcs_strictly(fake_api):
    api = fake_api(_objects(), pv_controller=False)
    code, body = _request(api, "GET", "/api/v1/persistentvolumes/pv1")
    assert code == 200 and body["kind"] == "PersistentVolume"
    assert _request(api, "GET", "/api/v1/persistentvolumes/nope")[0] == 404
    assert _request(api, "GET", "/api/v1/namespaces/default/persistentvolumeclaims/c1")[1]["kind"] == \
        "PersistentVolumeClaim"
    stale = {"metadata": {"resourceVersion": "1"}, "spec": {"claimRef": {"name": "c1", "namespace": "default"}}}
    assert _request(api, "PATCH", "/api/v1/persistentvolumes/pv1", stale)[0] == 409
    assert _request(api, "PATCH", "/api/v1/persistentvolumes/pv1", [], ctype="application/json-patch+json")[0] == 415
    code, body = _request(api, "PATCH", "/api/v1/namespaces/default/persistentvolumeclaims/c1",
                          {"metadata": {"annotations": {"x": "y"}}})
    assert code == 200 and body["metadata"]["annotations"]["x"] == "y"
    assert api.get("PersistentVolumeClaim", "c1")["status"]["phase"] == "Pending"  # no controller
