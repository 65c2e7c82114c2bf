"""--bind manifest: v1 Bindings (and policy/v1 Evictions before the pods that need them), YAML or JSON, atomic."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner
from kplace.models import compile_index
from kplace.models.plan import Eviction, Placement, Plan
from kplace.solver.binder import commit
from kplace.solver.binder.manifest import manifest_objects
from kplace.solver.binder.order import commit_order
from kplace.solver.cli import main
from kplace.solver.output import dumps
from kplace.solver.testing import build_snapshot, node, pod


def _index():
    return compile_index(build_snapshot(node("a"), node("b"), pod("p"), pod("q"), pod("r"),
                                        pod("victim", node_name="a")))


def _plan():
    return Plan(engine="greedy", placements=[
        Placement("default/p", "a"), Placement("default/q", None, reason="0/2 nodes are available"),
        Placement("default/r", "a", nominated=True)],
        evictions=[Eviction("default/victim", "a", preemptor="default/r")])


def test_the_yaml_manifest_holds_bindings_in_queue_order_and_each_eviction_just_before_its_preemptor(tmp_path):
    out = tmp_path / "bindings.yaml"
    summary = commit(_plan(), _index(), "manifest", out_file=str(out), fmt="yaml")
    docs = list(yaml.safe_load_all(out.read_text()))
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [
        ("Binding", "p"), ("Eviction", "victim"), ("Binding", "r")]
    assert docs[0] == {"apiVersion": "v1", "kind": "Binding",
                       "metadata": {"name": "p", "namespace": "default", "uid": "uid-p"},
                       "target": {"apiVersion": "v1", "kind": "Node", "name": "a"}}
    assert docs[1]["apiVersion"] == "policy/v1"
    assert docs[1]["deleteOptions"]["preconditions"] == {"uid": "uid-victim"}
    assert summary == {"mode": "manifest", "file": str(out), "format": "yaml", "bindings": 2, "evictions": 1}


def test_the_json_manifest_is_a_v1_list_that_loads_back(tmp_path):
    out = tmp_path / "bindings.json"
    commit(_plan(), _index(), "manifest", out_file=str(out), fmt="json")
    data = json.loads(out.read_text())
    assert data["kind"] == "List" and data["apiVersion"] == "v1"
    assert [i["kind"] for i in data["items"]] == ["Binding", "Eviction", "Binding"]
    assert data["items"] == manifest_objects(_plan(), _index())


def test_a_pod_without_a_uid_gets_a_binding_without_one():
    idx = compile_index(build_snapshot(node("a"), {**pod("p"), "metadata": {"name": "p", "namespace": "ns"}}))
    [obj] = manifest_objects(Plan("greedy", [Placement("ns/p", "a")]), idx)
    assert obj["metadata"] == {"name": "p", "namespace": "ns"}


def test_unplaced_pods_are_not_committed_and_evictions_of_unknown_preemptors_come_first():
    plan = Plan("greedy", [Placement("default/p", "a"), Placement("default/q", None)],
                evictions=[Eviction("default/victim", "a", preemptor="default/q")])
    assert [(s, i.pod) for s, i in commit_order(plan)] == [("evict", "default/victim"), ("bind", "default/p")]


def test_the_manifest_is_written_atomically(tmp_path, monkeypatch):
    out = tmp_path / "bindings.yaml"
    out.write_text("old contents\n")

    from kplace.solver.binder import manifest

    def boom(objects, fmt):
        raise RuntimeError("disk full")

    monkeypatch.setattr(manifest, "render_manifest", boom)
    with pytest.raises(RuntimeError):
        commit(_plan(), _index(), "manifest", out_file=str(out))
    assert out.read_text() == "old contents\n"
    monkeypatch.undo()
    commit(_plan(), _index(), "manifest", out_file=str(out))
    assert out.read_text().startswith("---\napiVersion: v1\nkind: Binding\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bindings.yaml"]  # no temporary file left behind


def test_kplace_schedule_bind_manifest_writes_every_placed_pod(tmp_path):
    state = tmp_path / "state.json"
    state.write_text(dumps({"kind": "List", "items": [node("a", cpu="2"), pod("p", cpu="1"), pod("q", cpu="1"),
                                                       pod("big", cpu="8")]}))
    out = tmp_path / "b.yaml"
    res = CliRunner().invoke(main, ["schedule", str(state), "--engine", "greedy", "--bind", "manifest", "--output-file",
                                    str(out), "--output", "json"])
    assert res.exit_code == 0, res.output
    docs = list(yaml.safe_load_all(out.read_text()))
    assert sorted(d["metadata"]["name"] for d in docs) == ["p", "q"]
    assert json.loads(res.output)["commit"]["bindings"] == 2
    res = CliRunner().invoke(main, ["schedule", str(state), "--engine", "greedy", "--bind", "manifest", "--output-file",
                                    str(out)])
    assert res.exit_code == 0 and "2 Binding(s) and 0 Eviction(s) written" in res.output
