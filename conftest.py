"""The test suite's one option: `--slow` also runs the tests marked `slow` (the long ROADEF searches, the big
property runs, the bulk differential run against kube-scheduler). The README's test command and .ci/run pass it;
without it the run is the fast one, for working on the code. And `go_build`, for the suites that need one of
oracle/'s Go binaries."""

import shutil
import subprocess
from pathlib import Path

import pytest

ORACLE = Path(__file__).resolve().parent / "oracle"


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", help="also run the tests marked slow (as .ci/run does)")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a long test; runs with --slow (the README's test command, .ci/run)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --slow (the README's test command does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def go_build():
    """`go_build(target, what, skipped)`: oracle/TARGET, (re)built by `make -C oracle TARGET` when Go is on the machine;
    without Go, the binary already built, else a skip saying that WHAT cannot be built and SKIPPED are skipped."""

    def build(target: str, what: str, skipped: str) -> Path:
        go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").is_file() else None)
        binary = ORACLE / target
        if go is None:
            if binary.is_file():
                return binary
            pytest.skip(f"Go is absent, so {what} cannot be built (`make -C oracle` needs Go); {skipped} are skipped")
        built = subprocess.run(["make", "-C", str(ORACLE), f"GO={go}", target], capture_output=True, text=True,
                               timeout=3600)
        if built.returncode != 0:
            pytest.fail(f"`make -C oracle {target}` failed: {built.stderr.strip()[-2000:]}")
        assert binary.is_file(), f"`make -C oracle {target}` succeeded but {binary} is missing"
        return binary

    return build
