"""A real control plane for the end-to-end tests: `oracle/bin/testcluster` (embedded etcd, kube-apiserver and
kube-controller-manager v1.36.3, simulated nodes), built here when Go is on the machine, started once per session
in a temporary directory and always stopped. Without Go (and without a built binary) the tests skip, saying so."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .helpers import NODES

ROOT = Path(__file__).resolve().parents[2]
BINARY = ROOT / "oracle" / "bin" / "testcluster"


def _go() -> str | None:
    return shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").is_file() else None)


def _testcluster() -> Path:
    """The binary, (re)built by make when Go is present."""
    go = _go()
    if go is None:
        if BINARY.is_file():
            return BINARY
        pytest.skip("Go is absent, so the test control plane cannot be built (`make -C oracle` needs Go); "
                    "the end-to-end tests against kube-apiserver are skipped")
    built = subprocess.run(["make", "-C", str(ROOT / "oracle"), f"GO={go}", "bin/testcluster"],
                           capture_output=True, text=True, timeout=3600)
    if built.returncode != 0:
        pytest.fail(f"`make -C oracle bin/testcluster` failed: {built.stderr.strip()[-2000:]}")
    return BINARY


@pytest.fixture(scope="session")
def cluster_dir(tmp_path_factory) -> Iterator[Path]:
    """The directory of a running test cluster: its kubeconfig, log and data."""
    binary = _testcluster()
    work = tmp_path_factory.mktemp("testcluster")
    try:
        started = subprocess.run([str(binary), "up", "--dir", str(work), "--nodes", str(NODES)],
                                 capture_output=True, text=True, timeout=400)
        if started.returncode != 0:
            pytest.fail(f"testcluster up failed:\n{started.stderr.strip()[-3000:]}")
        yield work
    finally:
        stopped = subprocess.run([str(binary), "down", "--dir", str(work)], capture_output=True, text=True,
                                 timeout=120)
        assert stopped.returncode == 0, stopped.stderr


@pytest.fixture(scope="session")
def kubeconfig(cluster_dir) -> str:
    return str(cluster_dir / "kubeconfig")


@pytest.fixture(scope="session")
def api(kubeconfig):
    """An ApiClient of the official kubernetes client, as admin."""
    from kplace.solver.binder.kube import new_client

    client = new_client(kubeconfig)
    yield client
    client.close()
