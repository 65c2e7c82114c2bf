"""`kplace rebalance` on the command line: outputs, plan file, periodic runs, bad policy, and the deprecated
`--format roadef` (now `kplace roadef solve`)."""

import json

import yaml
from click.testing import CliRunner
from kplace.solver.cli import main

from .helpers import node, owned


def _state(tmp_path):
    objs = [node(f"n{i}", cpu="4") for i in range(3)] + [owned(f"web-{i}", cpu="1", node_name=f"n{i}")
                                                        for i in range(3)]
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    return str(path)


def test_json_output_and_the_plan_file_carry_the_same_plan(tmp_path):
    out = tmp_path / "plan.json"
    res = CliRunner().invoke(main, ["rebalance", _state(tmp_path), "-o", "json", "--output-file", str(out)])
    assert res.exit_code == 0, res.output
    printed, written = json.loads(res.output), json.loads(out.read_text())
    assert printed["moves"] == written["moves"] and len(printed["moves"]) == 2
    assert {"goal", "moves", "placements", "before", "after"} <= set(printed)


def test_yaml_and_table_outputs_say_what_was_simulated(tmp_path):
    state = _state(tmp_path)
    res = CliRunner().invoke(main, ["rebalance", state, "-o", "yaml"])
    assert res.exit_code == 0 and yaml.safe_load(res.output)["goal"] == "pack"
    res = CliRunner().invoke(main, ["rebalance", state])
    assert res.exit_code == 0 and "dry run: nothing was evicted" in " ".join(res.output.split())


def test_every_runs_periodically_and_stops_after_the_given_number_of_runs(tmp_path):
    res = CliRunner().invoke(main, ["rebalance", _state(tmp_path), "--every", "10ms", "--runs", "3", "-o", "json"])
    assert res.exit_code == 0, res.output
    assert res.output.count('"goal": "pack"') == 3


def test_a_bad_policy_file_is_one_clear_error_line(tmp_path):
    bad = tmp_path / "p.yaml"
    bad.write_text("kind: RebalancePolicy\nownerMaxUnavailable: lots\n")
    res = CliRunner().invoke(main, ["rebalance", _state(tmp_path), "--policy", str(bad)])
    assert res.exit_code == 2
    assert "p.yaml: ownerMaxUnavailable: must be a positive integer" in res.output


def test_the_deprecated_format_roadef_warns_and_runs_kplace_roadef_solve(tmp_path, monkeypatch):
    import sys
    import types

    calls = []
    fake = types.ModuleType("kplace.solver.roadef.portfolio")

    def fake_run(m, a, o, t, s, searches, log):
        log("  1.0s descent: 170")
        calls.append((m, a, o, t, s, searches))
        return {"objective": 167}

    fake.run_roadef = fake_run
    monkeypatch.setitem(sys.modules, "kplace.solver.roadef.portfolio", fake)
    res = CliRunner().invoke(main, ["rebalance", "--format", "roadef", "m.txt", "a.txt", "--output-file", "new.txt",
                                    "--time-limit", "3", "--workers", "3"])
    assert res.exit_code == 0 and "objective: 167" in res.output
    assert calls == [("m.txt", "a.txt", "new.txt", 3.0, 0, 3)]  # --workers: that many cooperating searches
    assert "kplace: 1.0s descent: 170" in res.stderr and "descent" not in res.stdout  # progress on stderr
    assert res.stderr.startswith("kplace: warning: kplace rebalance --format roadef is deprecated; use kplace roadef "
                                 "solve\n")
    new = CliRunner().invoke(main, ["roadef", "solve", "m.txt", "a.txt", "--output-file", "new.txt", "--time-limit",
                                    "3", "--workers", "3"])
    assert new.exit_code == 0 and new.stdout == res.stdout and calls[-1] == calls[0]
    assert "warning" not in new.stderr
