"""`kplace roadef solve|score` on the command line, the deprecated spellings (`kplace rebalance --format roadef`,
`kplace roadef-score`: the same result after one warning line), and the one-line error without numba."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner
from kplace.solver.cli import main

from .helpers import DATA, INITIAL, TINY, needs_data, tiny_instance


@pytest.fixture
def files(tmp_path):
    model, initial = tmp_path / "model_tiny.txt", tmp_path / "assignment_tiny.txt"
    model.write_text(TINY)
    initial.write_text(INITIAL)
    return str(model), str(initial)


@pytest.fixture(scope="module")
def compiled():
    """Every compiled move compiled (or loaded from numba's cache) before a timed run, so that none of its time
    limit goes to compiling."""
    from kplace.solver.roadef.moves import FastMoves

    inst, a0 = tiny_instance()
    fast = FastMoves(inst, a0)
    fast.descend(np.arange(inst.n_processes), 0)
    fast.anneal(1000, 1.0, 0.01, 0)
    fast.rearrange(5, 0)


def _run(*args):
    return CliRunner().invoke(main, list(args))


def test_roadef_is_a_command_group_with_solve_and_score():
    res = _run("roadef", "--help")
    assert res.exit_code == 0 and "solve" in res.output and "score" in res.output
    assert "roadef " in _run("--help").output and "roadef-score" not in _run("--help").output  # the alias is hidden


def test_score_and_the_deprecated_roadef_score_print_the_same_after_one_warning(files, tmp_path):
    model, initial = files
    bad = tmp_path / "new.txt"
    bad.write_text("0 1 2\n")
    for new, code in ((initial, 0), (str(bad), 1)):
        for fmt in ("table", "json"):
            res = _run("roadef", "score", model, initial, new, "-o", fmt)
            old = _run("roadef-score", model, initial, new, "-o", fmt)
            assert res.exit_code == old.exit_code == code, res.output
            assert res.stdout == old.stdout and res.stderr == ""
            assert old.stderr == "kplace: warning: kplace roadef-score is deprecated; use kplace roadef score\n"
    res = _run("roadef", "score", model, initial, initial)
    assert "105" in res.stdout and "feasible" in res.stdout
    res = _run("roadef", "score", model, initial, str(bad), "--output", "json")
    assert '"feasible": false' in res.stdout and "dependency" in res.stdout


def _summary(stdout: str) -> dict:
    out = json.loads(stdout)
    for key in ("seconds", "iterations", "lns_rounds", "anneal_steps", "improvements", "output"):  # the work done
        out.pop(key)
    return out


def test_solve_and_the_deprecated_rebalance_format_roadef_give_the_same_result(files, tmp_path, compiled):
    model, initial = files
    new, old_new = tmp_path / "new.txt", tmp_path / "old.txt"
    res = _run("roadef", "solve", model, initial, "--output-file", str(new), "--time-limit", "1", "--workers", "1",
               "--seed", "3", "-o", "json")
    old = _run("rebalance", "--format", "roadef", model, initial, "--output-file", str(old_new), "--time-limit", "1",
               "--workers", "1", "--seed", "3", "-o", "json")
    assert res.exit_code == old.exit_code == 0, res.output + old.output
    assert _summary(res.stdout) == _summary(old.stdout)
    assert new.read_text() == old_new.read_text()
    summary = _summary(res.stdout)
    assert summary["feasible"] and summary["instance"] == "tiny" and summary["seed"] == 3
    assert summary["objective"] <= summary["initial"]["total"] == 105
    warning = "kplace: warning: kplace rebalance --format roadef is deprecated; use kplace roadef solve\n"
    assert old.stderr.startswith(warning) and warning not in res.stderr
    assert old.stderr.count("warning") == 1
    table = _run("roadef", "solve", model, initial, "--output-file", str(new), "--time-limit", "1", "--workers", "1")
    assert table.exit_code == 0 and f"objective: {summary['objective']}" in table.stdout
    scored = _run("roadef", "score", model, initial, str(new), "-o", "json")
    assert json.loads(scored.stdout)["objective"]["total"] == summary["objective"]


def test_solve_needs_an_output_file_and_two_files(files):
    model, initial = files
    res = _run("roadef", "solve", model, initial)
    assert res.exit_code == 2 and "--output-file" in res.output
    res = _run("roadef", "solve", model, "--output-file", "x.txt")
    assert res.exit_code == 2 and "ASSIGNMENT" in res.output
    old = _run("rebalance", "--format", "roadef", model, "--output-file", "x.txt")
    assert old.exit_code == 2 and "--format roadef needs MODEL ASSIGNMENT" in old.output


def test_a_malformed_model_is_one_error_line(tmp_path, files):
    _, initial = files
    bad = tmp_path / "model_bad.txt"
    bad.write_text("2\n0 x\n")
    res = _run("roadef", "solve", str(bad), initial, "--output-file", str(tmp_path / "n.txt"))
    assert res.exit_code == 2 and "model_bad.txt:2" in res.stderr and "Traceback" not in res.output


_WITHOUT_NUMBA = "import sys; sys.modules['numba'] = None; from kplace.solver.cli import main; main()"


def _without_numba(*args):
    return subprocess.run([sys.executable, "-c", _WITHOUT_NUMBA, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "200"})


def test_without_numba_solve_is_one_clear_error_line_and_score_still_works(files, tmp_path):
    model, initial = files
    new = str(tmp_path / "new.txt")
    res = _without_numba("roadef", "solve", model, initial, "--output-file", new)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr == ("kplace: error: the ROADEF search needs numba, which is not installed: "
                          "pip install 'kplace[roadef]'\n")
    old = _without_numba("rebalance", "--format", "roadef", model, initial, "--output-file", new)
    assert old.returncode == 2 and old.stderr.splitlines() == [
        "kplace: warning: kplace rebalance --format roadef is deprecated; use kplace roadef solve",
        "kplace: error: the ROADEF search needs numba, which is not installed: pip install 'kplace[roadef]'"]
    scored = _without_numba("roadef", "score", model, initial, initial)
    assert scored.returncode == 0 and "feasible" in scored.stdout and scored.stderr == ""


def test_the_missing_extra_is_still_an_import_error():
    code = ("import sys; sys.modules['numba'] = None\n"
            "try:\n    import kplace.solver.roadef.search\nexcept ImportError as e:\n"
            "    from kplace.models.errors import KplaceError; print(isinstance(e, KplaceError), e.exit_code)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.stdout == "True 2\n", res.stderr


@needs_data
def test_solve_improves_a1_1_and_score_agrees(tmp_path, compiled):
    new = tmp_path / "new_a1_1.txt"
    res = _run("roadef", "solve", str(DATA / "model_a1_1.txt"), str(DATA / "assignment_a1_1.txt"),
               "--output-file", str(new), "--time-limit", "3", "--workers", "1", "-o", "json")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["feasible"] and summary["objective"] < summary["initial"]["total"] == 49_528_750
    assert summary["best_known"] == 44_306_501 and summary["challenge_best"] == 44_306_501
    scored = _run("roadef", "score", str(DATA / "model_a1_1.txt"), str(DATA / "assignment_a1_1.txt"), str(new),
                  "-o", "json")
    assert scored.exit_code == 0 and json.loads(scored.stdout)["objective"]["total"] == summary["objective"]
