"""The real kube-scheduler for the differential tests: the oracle binary (`oracle/`), built here when Go is on the
machine and it is not built yet; without either, the tests that need it skip and say so."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from kplace.solver.oracle import oracle_binary

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Tally:
    states: int = 0
    cycles: int = 0
    checks: int = 0
    disagreements: int = 0


TALLY = Tally()


@pytest.fixture(scope="session")
def oracle() -> Path:
    binary = oracle_binary()
    if binary is None:
        go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").is_file() else None)
        if go is None:
            pytest.skip("Go is absent, so the kube-scheduler oracle cannot be built (`make -C oracle` needs Go); "
                        "the differential tests against the real kube-scheduler are skipped")
        built = subprocess.run(["make", "-C", str(ROOT / "oracle"), f"GO={go}", "bin/kube-oracle"],
                               capture_output=True, text=True, timeout=1800)
        if built.returncode != 0:
            pytest.fail(f"`make -C oracle bin/kube-oracle` failed: {built.stderr.strip()[-2000:]}")
        binary = oracle_binary()
        assert binary is not None, "`make -C oracle bin/kube-oracle` succeeded but the binary is missing"
    return binary


def pytest_terminal_summary(terminalreporter):
    if TALLY.states:
        terminalreporter.write_line(
            f"conformance against kube-scheduler: {TALLY.states:,} states, {TALLY.cycles:,} pod cycles, "
            f"{TALLY.checks:,} comparisons, {TALLY.disagreements} disagreements")


@pytest.fixture(scope="session")
def tally() -> Tally:
    return TALLY
