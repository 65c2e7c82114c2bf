"""kubectl's conventions, one test each: -o formats on stdout, --output-file, the old spellings with a warning,
kubeconfig and namespaces, output that survives a pipe, and the small things scripts rely on."""

from __future__ import annotations

import json
import os
import stat

import yaml
from click.testing import CliRunner
from kplace.solver.cli import EXIT_UNPLACED, main
from kplace.solver.output import dumps
from kplace.solver.testing import node, pod

LONG = "a-deployment-with-a-rather-long-name-7f9c8d6b5-x2x4q"


def _state(tmp_path, *items, name="state.json"):
    path = tmp_path / name
    path.write_text(dumps({"apiVersion": "v1", "kind": "List", "items": list(items)}), encoding="utf-8")
    return str(path)


def _run(*args, env=None):
    return CliRunner().invoke(main, list(args), env=env)


def test_dash_o_json_and_yaml_print_the_plan_on_stdout(tmp_path):
    state = _state(tmp_path, node("a"), pod("p", cpu="100m"))
    as_json = json.loads(_run("schedule", state, "--engine", "greedy", "-o", "json").stdout)
    as_yaml = yaml.safe_load(_run("schedule", state, "--engine", "greedy", "-o", "yaml").stdout)
    assert as_json["placements"] == as_yaml["placements"]
    assert as_json["placements"][0]["node"] == "a"


def test_dash_o_name_prints_the_placed_pods_as_kubectl_names(tmp_path):
    state = _state(tmp_path, node("a", cpu="1"), pod("p", cpu="500m"), pod("big", cpu="4"))
    res = _run("schedule", state, "--engine", "greedy", "-o", "name")
    assert res.exit_code == 0 and res.stdout.split() == ["pod/default/p"]


def test_dash_o_wide_adds_each_placements_priority(tmp_path):
    state = _state(tmp_path, node("a"), pod("p", cpu="100m", priority=7))
    res = _run("schedule", state, "--engine", "greedy", "-o", "wide")
    assert "priority" in res.stdout and " 7 " in res.stdout


def test_output_file_is_written_atomically_with_the_umask_permissions(tmp_path):
    state = _state(tmp_path, node("a"), pod("p", cpu="100m"))
    out = tmp_path / "plan.json"
    old = os.umask(0o022)
    try:
        res = _run("schedule", state, "--engine", "greedy", "--output-file", str(out))
    finally:
        os.umask(old)
    assert res.exit_code == 0
    assert json.loads(out.read_text())["placements"][0]["node"] == "a"
    assert stat.S_IMODE(out.stat().st_mode) == 0o644


def test_the_old_dash_o_file_and_dash_capital_o_still_work_with_a_deprecation_warning(tmp_path):
    state = _state(tmp_path, node("a"), pod("p", cpu="100m"))
    out = tmp_path / "plan.json"
    res = _run("schedule", state, "--engine", "greedy", "--output", "json", "-o", str(out))
    assert res.exit_code == 0
    assert json.loads(res.stdout)["placements"][0]["node"] == "a" and out.exists()
    assert "-o FILE is deprecated" in res.stderr
    res = _run("inspect", state, "-O", "json")
    assert res.exit_code == 0 and json.loads(res.stdout)["pods"]["pending"] == 1
    assert "-O json is deprecated" in res.stderr


def test_an_unknown_output_format_is_refused_with_the_formats(tmp_path):
    res = _run("inspect", _state(tmp_path, node("a")), "-o", "xml")
    assert res.exit_code == 2 and "table, json, yaml" in res.output


def test_fail_on_unplaced_exits_non_zero_when_a_pod_stays_pending(tmp_path):
    state = _state(tmp_path, node("a", cpu="1"), pod("big", cpu="4"))
    assert _run("schedule", state, "--engine", "greedy").exit_code == 0
    res = _run("schedule", state, "--engine", "greedy", "--fail-on-unplaced")
    assert res.exit_code == EXIT_UNPLACED and "1 of 1 pending pod(s) left unplaced" in res.stderr


def test_namespace_decides_only_that_namespaces_pending_pods_while_bound_pods_of_all_still_count(tmp_path):
    state = _state(tmp_path, node("a", cpu="1"), pod("other-bound", cpu="800m", namespace="other", node_name="a"),
                   pod("mine", cpu="500m", namespace="team"), pod("theirs", cpu="100m", namespace="other"))
    res = _run("schedule", state, "--engine", "greedy", "-n", "team", "-o", "json")
    placements = json.loads(res.stdout)["placements"]
    assert [p["pod"] for p in placements] == ["team/mine"]
    assert placements[0]["node"] is None  # the other namespace's bound pod still takes the room


def test_kubeconfig_comes_from_the_kubeconfig_variable_as_in_kubectl(tmp_path):
    from kplace.solver.binder.testing import FakeApiServer

    with FakeApiServer([node("a"), pod("p", cpu="100m")]) as api:
        path = api.kubeconfig(tmp_path)
        missing = str(tmp_path / "nope")
        res = _run("inspect", "-o", "json", env={"KUBECONFIG": f"{missing}:{path}"})
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["pods"]["pending"] == 1


def test_piped_tables_never_cut_identifiers(tmp_path):
    state = _state(tmp_path, node("a"), pod(LONG, cpu="100m"))
    res = _run("schedule", state, "--engine", "greedy")
    assert f"default/{LONG}" in res.stdout and "…" not in res.stdout


def test_generate_list_needs_no_output_and_generate_says_what_it_wrote(tmp_path):
    res = _run("generate", "list")
    assert res.exit_code == 0 and "perf-basic" in res.stdout
    out = tmp_path / "s.json"
    res = _run("generate", "perf-basic", "--nodes", "3", "--pods", "4", "--output-file", str(out))
    assert res.exit_code == 0 and out.exists()
    assert f"wrote perf-basic to {out}: 3 nodes" in res.stderr and "(4 pending)" in res.stderr
    assert yaml.safe_load(_run("generate", "perf-basic", "--nodes", "2", "--pods", "1", "-o", "yaml").stdout)["items"]


def test_verify_with_the_plan_first_says_the_plan_comes_last(tmp_path):
    state = _state(tmp_path, node("a"), pod("p", cpu="100m"))
    plan = tmp_path / "plan.json"
    _run("schedule", state, "--engine", "greedy", "--output-file", str(plan))
    res = _run("verify", str(plan), state)
    assert res.exit_code == 2 and "the plan comes last" in res.output


def test_compares_difference_column_shows_differences_that_are_neither_better_nor_worse(tmp_path):
    from kplace.solver.compare.render import rows

    base = {"placement": {"placed": 1, "pending": 0, "evictions": 0, "by_priority": {}, "pending_by_reason": {}},
            "nodes": {"in_use": 120, "newly_used": 3}, "allocation": {}, "fragmentation": [],
            "soft": {k: {"satisfied": 0, "total": 0} for k in ("node_affinity", "pod_affinity", "pod_anti_affinity")}
            | {"schedule_anyway_spread": {"excess": 0, "max_skew": 0}, "prefer_no_schedule": {"taints": 0}},
            "score": {"total": 1, "mean_per_pod": 1.0, "pods_scored": 1, "pods_placed": 1},
            "wall_seconds": 1.0, "memory": {"peak_mib": 1.0, "increment_mib": 1.0}}
    other = json.loads(json.dumps(base))
    other["nodes"]["in_use"] = 40
    table = {r[0]: r for r in rows({"greedy": base, "cpsat": other})}
    assert table["in use"][3] == "-80"


def test_schedule_shows_no_progress_display_when_piped_and_quiet_is_accepted(tmp_path):
    state = _state(tmp_path, node("a"), pod("p", cpu="100m"))
    for extra in ([], ["-q"]):
        res = _run("schedule", state, *extra)
        assert res.exit_code == 0 and "CP-SAT windows" not in res.stderr


def test_explain_in_the_plan_says_which_pods_took_the_node_a_pod_fits_alone(tmp_path):
    state = _state(tmp_path, node("g1", cpu="8", extra={"nvidia.com/gpu": "1"}), node("c1", cpu="8"),
                   pod("train-a", cpu="1", extra={"nvidia.com/gpu": "1"}),
                   pod("train-b", cpu="1", extra={"nvidia.com/gpu": "1"}))
    alone = json.loads(_run("explain", state, "--pod", "train-b", "-o", "json").stdout)
    assert alone["selected"] == "g1"  # alone against the running cluster, the GPU node is free
    res = _run("explain", state, "--pod", "train-b", "--engine", "greedy", "-o", "json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["plan"]["node"] is None and "Insufficient nvidia.com/gpu" in out["plan"]["reason"]
    assert out["taken_by_other_pods"] == {"g1": ["default/train-a"]}
    assert out["alone"]["selected"] == "g1" and out["in_plan"]["selected"] is None
    assert _run("explain", state, "--pod", "train-b", "--in-plan").exit_code == 2  # needs a plan or an engine


def test_both_engines_give_a_pod_they_both_leave_pending_the_same_kind_of_reason(tmp_path):
    from kplace.solver.compare.metrics import reason_group

    state = _state(tmp_path, node("a", cpu="1"), pod("big", cpu="4"))
    reasons = {}
    for engine in ("greedy", "cpsat"):
        placements = json.loads(_run("schedule", state, "--engine", engine, "-o", "json").stdout)["placements"]
        reasons[engine] = reason_group(placements[0]["reason"])
    assert reasons["greedy"] == reasons["cpsat"] and "preemption:" in reasons["cpsat"]


def test_the_windows_table_carries_a_legend_of_its_terms(tmp_path):
    res = _run("schedule", _state(tmp_path, node("a"), pod("p", cpu="100m")))
    assert "groups: sets of identical pods" in res.stdout and "Glossary" in res.stdout


def test_rebalance_on_the_shipped_demo_proposes_moves_with_destinations():
    from pathlib import Path

    demo = Path(__file__).resolve().parents[2] / "instances" / "rebalance-demo.json"
    res = _run("rebalance", str(demo), "--time-limit", "2", "-o", "json")
    assert res.exit_code == 0, res.output
    plan = json.loads(res.stdout)
    assert plan["moves"] and all(m["to"] for m in plan["moves"])
    assert plan["after"]["non_empty_nodes"] < plan["before"]["non_empty_nodes"]


def test_allow_pdb_violations_lets_either_engine_evict_a_protected_pod_and_verify_accepts_it_only_so(tmp_path):
    pdb = {"kind": "PodDisruptionBudget", "metadata": {"name": "db", "namespace": "default"},
           "spec": {"selector": {"matchLabels": {"app": "db"}}, "maxUnavailable": 0},
           "status": {"disruptionsAllowed": 0, "expectedPods": 1, "currentHealthy": 1, "desiredHealthy": 1}}
    state = _state(tmp_path, node("a", cpu="2"), pod("guarded", cpu="2", node_name="a", labels={"app": "db"}),
                   pdb, pod("urgent", cpu="2", priority=1000))
    for engine in ("cpsat", "greedy"):
        kept = json.loads(_run("schedule", state, "--engine", engine, "-o", "json", "-q").stdout)
        assert kept["evictions"] == [] and kept["placements"][0]["node"] is None
        plan = tmp_path / f"{engine}.json"
        res = _run("schedule", state, "--engine", engine, "--allow-pdb-violations", "-o", "json", "-q",
                   "--output-file", str(plan))
        evicted = json.loads(plan.read_text())["evictions"]
        assert res.exit_code == 0 and [(e["pod"], e["pdb_violation"]) for e in evicted] == [("default/guarded", True)]
        assert _run("verify", state, str(plan)).exit_code == 1
        assert _run("verify", state, str(plan), "--allow-pdb-violations").exit_code == 0
