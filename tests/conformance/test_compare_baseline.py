"""`kplace compare --baseline kube-scheduler`: the real kube-scheduler's placements beside both engines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from kplace.solver.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("instance", ["affinity-small.json", "volumes-small.json"])
def test_compare_with_the_kube_scheduler_baseline_reports_its_plan_and_the_greedy_engines_agreement(oracle, tmp_path,
                                                                                                    instance):
    out = CliRunner().invoke(main, ["compare", str(ROOT / "instances" / instance), "--baseline",
                                    "kube-scheduler", "--time-limit", "2", "-o", "json", "--report",
                                    str(tmp_path / "r")])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    kube = data["kube"]
    assert kube["version"].startswith("v1.")
    assert kube["violations"] == [] and kube["greedy_agrees"] and kube["greedy_disagrees_on"] == []
    assert kube["placement"]["placed"] == data["greedy"]["placement"]["placed"]
    assert kube["score"]["total"] == data["greedy"]["score"]["total"]
    assert "agrees with the real kube-scheduler on every pod" in (tmp_path / "r" / "index.html").read_text()


def test_compare_with_the_kube_scheduler_baseline_says_how_to_build_the_oracle_when_it_is_missing(monkeypatch):
    monkeypatch.setenv("KPLACE_ORACLE", "/nonexistent/kube-oracle")
    out = CliRunner().invoke(main, ["compare", str(ROOT / "instances" / "affinity-small.json"), "--baseline",
                                    "kube-scheduler"])
    assert out.exit_code != 0 and "make -C oracle" in out.output and "Traceback" not in out.output
