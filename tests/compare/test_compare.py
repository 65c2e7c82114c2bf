"""`kplace compare`: the JSON structure, the diff, the engines' costs, the CLI and the report files."""

import json

from click.testing import CliRunner
from kplace.solver.cli import main
from kplace.solver.compare import CompareOptions, run_compare
from kplace.solver.testing import build_snapshot, node, pod

FIGURES = {"engine_seconds", "wall_seconds", "memory", "placement", "nodes", "allocation", "fragmentation", "soft",
           "score", "solver", "timeline", "windows", "warnings"}


def _shape(x):
    """The structure of a JSON value: dict keys recursively, list → its first element's shape."""
    if isinstance(x, dict):
        return {k: _shape(v) for k, v in x.items()}
    return type(x).__name__


def test_greedy_and_cpsat_figures_have_the_same_structure(comparison):
    d = comparison.data
    assert set(d) == {"state", "options", "greedy", "cpsat", "diff"}
    assert set(d["greedy"]) == set(d["cpsat"]) == FIGURES
    for key in ("placement", "nodes", "allocation", "soft", "score"):
        g, c = _shape(d["greedy"][key]), _shape(d["cpsat"][key])
        if key == "placement":  # the reasons differ; their container does not
            g.pop("pending_by_reason"), c.pop("pending_by_reason")
        if key == "score":  # a total is an int, or null only when sampled
            g.pop("total"), c.pop("total")
        assert g == c, key
    assert [f["shape"] for f in d["greedy"]["fragmentation"]] == [f["shape"] for f in d["cpsat"]["fragmentation"]]
    assert d["greedy"]["solver"] is None and d["greedy"]["timeline"] == []
    assert set(d["cpsat"]["solver"]) >= {"objective", "bound", "gap", "statuses", "placed_bound"}
    json.dumps(d)  # JSON-ready


def test_cpsat_places_the_large_pods_greedy_strands_and_the_diff_says_which(comparison):
    d = comparison.data
    g, c = d["greedy"]["placement"], d["cpsat"]["placement"]
    assert c["placed"] > g["placed"]
    only = d["diff"]["placed_only_by_cpsat"]
    assert len(only) == c["placed"] - g["placed"] + len(d["diff"]["placed_only_by_greedy"])
    assert all(p.startswith("frag/large-") for p in only)
    plans = {e: comparison.runs[e].plan.assignment() for e in ("greedy", "cpsat")}
    moved = {m["pod"] for m in d["diff"]["different_node"]}
    assert moved == {p for p in plans["greedy"] if p in plans["cpsat"] and plans["greedy"][p] != plans["cpsat"][p]}
    assert d["diff"]["same_node"] == sum(1 for p, n in plans["greedy"].items() if plans["cpsat"].get(p) == n)


def test_each_engine_reports_wall_time_peak_memory_and_cpsat_a_timeline(comparison):
    for e in ("greedy", "cpsat"):
        run = comparison.data[e]
        assert run["wall_seconds"] >= run["engine_seconds"] > 0
        assert run["memory"]["method"].startswith("peak RSS of a forked child")
        assert run["memory"]["peak_mib"] > 0 and run["memory"]["increment_mib"] >= 0
    timeline = comparison.data["cpsat"]["timeline"]
    assert timeline and all(len(ev) == 4 for ev in timeline)
    assert [ev[0] for ev in timeline] == sorted(ev[0] for ev in timeline)


def test_in_process_mode_measures_python_memory_with_tracemalloc():
    from kplace.models.index import ClusterIndex
    from kplace.solver.framework.config import default_config

    index = ClusterIndex(build_snapshot(node("a", cpu="2"), pod("p", cpu="1"), pod("q", cpu="1")))
    cmp = run_compare(index, default_config(), CompareOptions(time_limit=0.5, isolate=False))
    assert cmp.data["greedy"]["memory"]["method"].startswith("tracemalloc")
    assert cmp.data["cpsat"]["placement"]["placed"] == cmp.data["greedy"]["placement"]["placed"] == 2


def test_cli_json_output_and_report_files(frag_file, tmp_path):
    out = tmp_path / "report"
    result = CliRunner().invoke(main, ["compare", str(frag_file), "--time-limit", "1", "--output", "json",
                                       "--report", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) >= {"greedy", "cpsat", "diff"}
    assert (out / "index.html").is_file() and (out / "compare.json").is_file()
    assert json.loads((out / "compare.json").read_text())["diff"] == data["diff"]


def test_cli_table_output_shows_both_engines(frag_file):
    result = CliRunner().invoke(main, ["compare", str(frag_file), "--time-limit", "0.5"])
    assert result.exit_code == 0, result.output
    assert "greedy (kube-scheduler) vs CP-SAT" in result.output
    assert "placed only by CP-SAT" in result.output


def test_cli_bad_state_is_one_line_and_exit_2(tmp_path):
    result = CliRunner().invoke(main, ["compare", str(tmp_path / "missing.json")])
    assert result.exit_code == 2
    assert "no such file" in result.output
