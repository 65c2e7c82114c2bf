"""`kplace roadef-score` on the command line."""

from click.testing import CliRunner
from kplace.solver.roadef.cli import roadef_score

from .helpers import INITIAL, TINY


def test_cli_scores_and_exits_1_on_violation(tmp_path):
    model, initial, bad = tmp_path / "model.txt", tmp_path / "a.txt", tmp_path / "new.txt"
    model.write_text(TINY)
    initial.write_text(INITIAL)
    res = CliRunner().invoke(roadef_score, [str(model), str(initial), str(initial)])
    assert res.exit_code == 0, res.output
    assert "105" in res.output and "feasible" in res.output
    bad.write_text("0 1 2\n")
    res = CliRunner().invoke(roadef_score, [str(model), str(initial), str(bad), "--output", "json"])
    assert res.exit_code == 1 and '"feasible": false' in res.output and "dependency" in res.output
