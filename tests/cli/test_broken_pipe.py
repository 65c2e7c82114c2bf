"""`kplace ... | head` stops quietly with exit code 0, like other command-line tools."""

import json
import os
import subprocess
import sys

from kplace.solver.testing import node, pod


def test_output_piped_into_a_reader_that_stops_early_exits_zero_without_a_traceback(tmp_path):
    state = tmp_path / "state.json"
    items = [node(f"n{i}", cpu="64", memory="256Gi") for i in range(20)]
    items += [pod(f"a-pod-with-a-long-name-{i:05d}", cpu="10m", memory="10Mi") for i in range(3000)]
    state.write_text(json.dumps({"kind": "List", "items": items}))
    cmd = [sys.executable, "-m", "kplace.solver.cli", "schedule", str(state), "--engine", "greedy", "-o", "json"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ})
    assert proc.stdout.readline()  # hundreds of KB follow: far more than a pipe holds
    proc.stdout.close()  # the reader goes away, as `head -1` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert "Traceback" not in err and "BrokenPipeError" not in err


def test_kplace_tables_stop_with_exit_code_zero_when_the_reader_goes_away(monkeypatch):
    import pytest
    from kplace.solver import output

    dup2_calls = []
    monkeypatch.setattr(output.os, "dup2", lambda *a: dup2_calls.append(a))
    with pytest.raises(SystemExit) as stop:
        output.console().on_broken_pipe()  # what rich calls when stdout's reader has gone
    assert stop.value.code == 0 and dup2_calls
