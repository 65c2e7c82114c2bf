"""`kplace explain` and the kube sanity example."""

import json

from click.testing import CliRunner
from kplace.solver.cli import main
from kplace.solver.explain import explain_pod
from kplace.solver.framework.config import default_config
from kplace.solver.testing import build_state, node, pod


def test_an_empty_perf_node_and_the_default_perf_pod_score_471_in_total():
    state = build_state(node("perf-0", cpu="4", memory="32Gi", pods=110), pod("p", cpu="100m", memory="500Mi"))
    result = explain_pod(state.index, default_config(), "default/p", candidates="all")
    entry = result["nodes"][0]
    assert entry["scores"]["NodeResourcesFit"] == 97
    assert entry["scores"]["NodeResourcesBalancedAllocation"] == 74  # kube 1.36: the balance change, from 75
    assert entry["scores"]["TaintToleration"] == 100
    assert entry["total"] == 471
    assert result["selected"] == "perf-0"


def test_explain_runs_every_filter_on_every_node_and_names_kube_reasons():
    taint = [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]
    state = build_state(node("small", cpu="1"), node("tainted", cpu="1", taints=taint), node("ok", cpu="8"),
                        pod("p", cpu="2"))
    result = explain_pod(state.index, default_config(), "default/p")
    by_name = {n["name"]: n for n in result["nodes"]}
    assert by_name["small"]["filters"]["NodeResourcesFit"]["reasons"] == ["Insufficient cpu"]
    # the tainted node fails two plugins, and both are reported
    assert by_name["tainted"]["filters"]["TaintToleration"]["code"] == "UnschedulableAndUnresolvable"
    # 2 CPUs exceed the node's whole allocatable: kube makes that unresolvable, not just unschedulable
    assert by_name["tainted"]["filters"]["NodeResourcesFit"]["code"] == "UnschedulableAndUnresolvable"
    assert not by_name["small"]["scores"] and by_name["ok"]["scores"]
    assert result["selected"] == "ok"


def test_the_explain_command_prints_the_documented_json(tmp_path):
    state_file = tmp_path / "state.json"
    items = [node("n1"), node("n2", cpu="8"), pod("web", cpu="100m")]
    state_file.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    out = CliRunner().invoke(main, ["explain", str(state_file), "--pod", "default/web", "--output", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["pod"] == "default/web" and data["selected"] in ("n1", "n2")
    assert {"name", "feasible", "filters", "scores", "total"} <= set(data["nodes"][0])


def test_explaining_an_unknown_pod_is_one_clear_line(tmp_path):
    state_file = tmp_path / "state.json"
    state_file.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [node("n1")]}))
    out = CliRunner().invoke(main, ["explain", str(state_file), "--pod", "default/nope"])
    assert out.exit_code == 2
    assert "no pod 'default/nope' in the state" in out.output
    assert "Traceback" not in out.output


def _preemption_state(tmp_path):
    items = [node("n1"), node("n2"),
             pod("lo-a", cpu="3", node_name="n1", priority=0), pod("lo-b", cpu="1", node_name="n1", priority=0),
             pod("mid", cpu="4", node_name="n2", priority=5), pod("hi", cpu="2", priority=10)]
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def test_explain_shows_kubes_preemption_candidates_ranked_by_its_criteria(tmp_path):
    out = CliRunner().invoke(main, ["explain", str(_preemption_state(tmp_path)), "--pod", "default/hi", "-o", "json"])
    assert out.exit_code == 0, out.output
    pre = json.loads(out.output)["preemption"]
    assert pre["node"] == "n1"
    assert [v["pod"] for v in pre["victims"]] == ["default/lo-a"]
    first, second = pre["candidates"]
    assert (first["node"], first["chosen"], first["highest_priority"]) == ("n1", True, 0)
    assert (second["node"], second["chosen"], second["highest_priority"], second["pods"]) == (
        "n2", False, 5, ["default/mid"])


def test_explain_in_a_plan_names_the_plans_victims_beside_what_kube_would_evict(tmp_path):
    out = CliRunner().invoke(main, ["explain", str(_preemption_state(tmp_path)), "--pod", "default/hi",
                                    "--engine", "greedy"])
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    assert "The plan evicts default/lo-a (priority 0) for it" in text
    assert "would evict default/lo-a (priority 0) on n1" in text
