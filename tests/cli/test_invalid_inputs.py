"""What the API server would reject, and inputs built to break a parser, get one line naming the file, the object
and the field, and exit 2 — never a traceback; what the API server would accept with a warning gets a warning."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner
from kplace.solver.cli import main


def _node(name="a", **alloc):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110", **alloc}}}


def _pod(name="p", node_name="", **spec):
    container = spec.pop("container", {"name": "c", "image": "x"})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [container], **({"nodeName": node_name} if node_name else {}), **spec}}


def _list(*items):
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)})


SPREAD = {"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "a"}}}
PDB = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b", "namespace": "default"}}
BOMB = "\n".join(["a: &a [x, x, x, x, x, x, x, x, x, x]",
                  *(f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 10) + "]" for i in range(8)),
                  "kind: List", "items: *i"])

REJECTED = [
    ("JSON nested 100,000 deep", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("a 5,000-digit JSON number", '{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "a"}, '
                                  '"status": {"allocatable": {"cpu": ' + "9" * 5000 + "}}}]}", "digits"),
    ("a priority of 2**63", _list(_node(), _pod(priority=2**63)), "spec.priority"),
    ("an empty topologyKey in a spread constraint",
     _list(_node(), _pod(topologySpreadConstraints=[{**SPREAD, "topologyKey": ""}])),
     "topologySpreadConstraints[0].topologyKey"),
    ("minDomains with ScheduleAnyway",
     _list(_node(), _pod(topologySpreadConstraints=[{**SPREAD, "topologyKey": "zone", "minDomains": 2,
                                                     "whenUnsatisfiable": "ScheduleAnyway"}])), "minDomains"),
    ("an empty anti-affinity topologyKey",
     _list(_node(), _pod(affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
         {"labelSelector": {}, "topologyKey": ""}]}})), "topologyKey"),
    ("a negative request", _list(_node(), _pod(container={"name": "c", "image": "x",
                                                           "resources": {"requests": {"cpu": "-1"}}})),
     "greater than or equal to 0"),
    ("a negative allocatable", _list(_node(memory="-8Gi")), "status.allocatable.memory"),
    ("hostPort 70000", _list(_node(), _pod(container={"name": "c", "image": "x", "ports": [
        {"containerPort": 80, "hostPort": 70000}]})), "hostPort"),
    ("a Gt toleration with a non-integer value",
     _list(_node(), _pod(tolerations=[{"key": "k", "operator": "Gt", "value": "high"}])), "must be an integer"),
    ("a PDB with a negative minAvailable", _list({**PDB, "spec": {"minAvailable": -1}}), "minAvailable"),
    ("a PDB with both fields", _list({**PDB, "spec": {"minAvailable": 1, "maxUnavailable": 1}}), "both"),
    ("a PriorityClass above 10^9", _list({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                          "metadata": {"name": "huge"}, "value": 2_000_000_000}),
     "no greater than 1000000000"),
    ("an empty file", "", "the file is empty"),
    ("a YAML billion laughs", BOMB, "YAML aliases expand"),
]


@pytest.mark.parametrize(("case", "text", "expected"), REJECTED, ids=[c[0] for c in REJECTED])
def test_input_the_api_server_would_reject_gets_one_line_and_exit_2(tmp_path, case, text, expected):
    path = tmp_path / ("state.yaml" if case.startswith("a YAML") else "state.json")
    path.write_text(text, encoding="utf-8")
    started = time.monotonic()
    res = CliRunner().invoke(main, ["schedule", str(path), "--engine", "greedy"])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and len(lines[0]) < 400, lines
    assert str(path) in lines[0] and expected in lines[0]
    assert time.monotonic() - started < 10


def test_a_score_weight_beyond_int32_in_the_configuration_is_refused(tmp_path):
    state = tmp_path / "s.json"
    state.write_text(_list(_node(), _pod()), encoding="utf-8")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
                   "- schedulerName: default-scheduler\n  plugins:\n    score:\n      enabled:\n"
                   "      - {name: NodeResourcesFit, weight: 100000000000000000000}\n", encoding="utf-8")
    res = CliRunner().invoke(main, ["schedule", str(state), "--config", str(cfg)])
    assert res.exit_code == 2 and "weight" in res.output and "Traceback" not in res.output


def test_a_deeply_nested_plan_is_refused_in_one_line(tmp_path):
    state, plan = tmp_path / "s.json", tmp_path / "plan.json"
    state.write_text(_list(_node()), encoding="utf-8")
    plan.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    res = CliRunner().invoke(main, ["verify", str(state), str(plan)])
    assert res.exit_code == 2 and "nested too deeply" in res.output and "Traceback" not in res.output


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_pods_and_no_nodes_leave_every_pod_pending_with_kubes_message(tmp_path, engine):
    state = tmp_path / "s.json"
    state.write_text(_list(_pod("p"), _pod("q")), encoding="utf-8")
    res = CliRunner().invoke(main, ["schedule", str(state), "--engine", engine, "--output", "json"])
    assert res.exit_code == 0, res.output
    placements = json.loads(res.output)["placements"]
    assert [p["node"] for p in placements] == [None, None]
    assert all("0/0 nodes are available" in p["reason"] for p in placements)


def test_items_null_and_a_pod_on_a_missing_node_are_accepted_with_warnings(tmp_path):
    empty, state = tmp_path / "empty.json", tmp_path / "s.json"
    empty.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": None}), encoding="utf-8")
    state.write_text(_list(_node(), _pod("stray", node_name="gone")), encoding="utf-8")
    res = CliRunner().invoke(main, ["inspect", str(empty), str(state), "--output", "json"])
    assert res.exit_code == 0, res.output
    warnings = " ".join(json.loads(res.output)["warnings"])
    assert "items is null" in warnings and "'gone'" in warnings
