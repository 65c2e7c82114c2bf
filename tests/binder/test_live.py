"""Live reads: paginated lists (limit + continue) → the same snapshot the files give; `kplace export`."""

from __future__ import annotations

import json

from click.testing import CliRunner
from kplace.models import load_state
from kplace.solver.binder.kube import list_all, new_client
from kplace.solver.binder.live import read_cluster
from kplace.solver.cli import main
from kplace.solver.testing import node, pod


def _objects(n_pods=7):
    rs = {"kind": "ReplicaSet", "apiVersion": "apps/v1",
          "metadata": {"name": "web-abc", "namespace": "default", "uid": "rs-1"},
          "spec": {"replicas": 9, "selector": {"matchLabels": {"app": "web"}},
                   "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}}}}
    return [node("a"), node("b"), *(pod(f"p{i}", cpu="100m", labels={"app": "web"}) for i in range(n_pods)),
            pod("bound", node_name="a"),
            {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
            {"kind": "PodDisruptionBudget", "metadata": {"name": "pdb", "namespace": "default"},
             "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}, rs]


def test_lists_are_read_in_pages_with_limit_and_continue(fake_api):
    api = fake_api(_objects(7))
    client = new_client(api.kubeconfig_path)
    items, rv = list_all(client, "Pod", page_size=3)
    client.close()
    assert len(items) == 8 and rv
    assert all(i["kind"] == "Pod" and i["apiVersion"] == "v1" for i in items)
    calls = api.calls("GET", "^/api/v1/pods$")
    assert [c["query"].get("limit") for c in calls] == [["3"]] * 3
    assert "continue" not in calls[0]["query"] and all("continue" in c["query"] for c in calls[1:])


def test_an_expired_continue_token_restarts_the_list_without_duplicates(fake_api, monkeypatch):
    api = fake_api(_objects(5))
    client = new_client(api.kubeconfig_path)
    from kplace.solver.binder import kube

    real = kube.list_pages
    expired = []

    def compact_after_first_page(*args, **kwargs):
        for n, page in enumerate(real(*args, **kwargs)):
            yield page
            if n == 0 and not expired:
                expired.append(True)
                api.compact()  # the token's resourceVersion is gone: the next page is 410 Expired

    monkeypatch.setattr(kube, "list_pages", compact_after_first_page)
    items, _ = kube.list_all(client, "Pod", page_size=2)
    client.close()
    assert sorted(i["metadata"]["name"] for i in items) == sorted(["bound", *(f"p{i}" for i in range(5))])
    statuses = [c["query"].get("continue") is not None for c in api.calls("GET", "^/api/v1/pods$")]
    assert statuses[:2] == [False, True] and statuses[2] is False  # the list started over


def test_read_cluster_gives_the_snapshot_the_exported_file_gives_and_does_not_expand_live_workloads(
        fake_api, tmp_path):
    api = fake_api(_objects(7))
    live = read_cluster(api.kubeconfig_path, page_size=2)
    assert len(live.pods) == 8  # the ReplicaSet wants 9 replicas; its controller, not kplace, makes pods
    assert [w.metadata.name for w in live.workloads] == ["web-abc"]
    assert {p.metadata.name for p in live.pending_pods()} == {f"p{i}" for i in range(7)}
    res = CliRunner().invoke(main, ["export", "--kubeconfig", api.kubeconfig_path,
                                    "--output-file", str(tmp_path / "s.json"), "--page-size", "2"])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "s.json").read_text())
    assert data["kind"] == "List" and data["apiVersion"] == "v1"
    kinds = sorted({i["kind"] for i in data["items"]})
    assert kinds == ["Node", "Pod", "PodDisruptionBudget", "PriorityClass", "ReplicaSet"]
    assert all(i["apiVersion"] for i in data["items"])
    from_file = load_state([str(tmp_path / "s.json")])
    assert {p.metadata.name for p in from_file.pods if p.spec.node_name} == {"bound"}
    assert [n.metadata.name for n in from_file.nodes] == [n.metadata.name for n in live.nodes]


def test_export_handles_many_pods_in_pages(fake_api):
    api = fake_api([node("a"), *(pod(f"p{i:04d}") for i in range(1200))])
    res = CliRunner().invoke(main, ["export", "--kubeconfig", api.kubeconfig_path])
    assert res.exit_code == 0
    data = json.loads(res.output)
    assert sum(1 for i in data["items"] if i["kind"] == "Pod") == 1200
    assert len(api.calls("GET", "^/api/v1/pods$")) == 3  # pages of 500


def test_commands_read_the_live_cluster_with_kubeconfig_and_no_files(fake_api):
    api = fake_api(_objects(3))
    res = CliRunner().invoke(main, ["inspect", "--kubeconfig", api.kubeconfig_path, "--output", "json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["pods"]["pending"] == 3


def test_a_bad_kubeconfig_or_an_unreachable_server_is_one_clear_error(tmp_path, fake_api):
    bad = tmp_path / "kc"
    bad.write_text("not: [a kubeconfig")
    res = CliRunner().invoke(main, ["inspect", "--kubeconfig", str(bad)])
    assert res.exit_code == 2 and "cannot load the Kubernetes client configuration" in res.output
    api = fake_api([])
    kc = api.kubeconfig_path
    api.stop()
    res = CliRunner().invoke(main, ["export", "--kubeconfig", kc])
    assert res.exit_code == 2 and "listing Nodes" in res.output


def test_a_refused_list_names_the_kind_in_its_plural(fake_api):
    api = fake_api(_objects(1))
    api.fail("^/apis/scheduling.k8s.io/v1/priorityclasses$", code=403, method="GET")
    res = CliRunner().invoke(main, ["export", "--kubeconfig", api.kubeconfig_path])
    assert res.exit_code == 2 and "listing PriorityClasses: HTTP 403" in res.output
