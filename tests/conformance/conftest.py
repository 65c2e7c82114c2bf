"""The real kube-scheduler for the differential tests: the oracle binary (`oracle/`), built here when Go is on the
machine and it is not built yet; without either, the tests that need it skip and say so."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from kplace.solver.oracle import oracle_binary


@dataclass
class Tally:
    states: int = 0
    cycles: int = 0
    checks: int = 0
    disagreements: int = 0


TALLY = Tally()


@pytest.fixture(scope="session")
def oracle(go_build) -> Path:
    return oracle_binary() or go_build("bin/kube-oracle", "the kube-scheduler oracle",
                                       "the differential tests against the real kube-scheduler")


def pytest_terminal_summary(terminalreporter):
    if TALLY.states:
        terminalreporter.write_line(
            f"conformance against kube-scheduler: {TALLY.states:,} states, {TALLY.cycles:,} pod cycles, "
            f"{TALLY.checks:,} comparisons, {TALLY.disagreements} disagreements")


@pytest.fixture(scope="session")
def tally() -> Tally:
    return TALLY
