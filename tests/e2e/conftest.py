"""A real control plane for the end-to-end tests: `oracle/bin/testcluster` (embedded etcd, kube-apiserver and
kube-controller-manager v1.36.3, simulated nodes), built here when Go is on the machine, started once per session
in a temporary directory and always stopped. Without Go (and without a built binary) the tests skip, saying so."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .helpers import NODES, create, manifest


@pytest.fixture(scope="session")
def cluster_dir(tmp_path_factory, go_build) -> Iterator[Path]:
    """The directory of a running test cluster: its kubeconfig, log and data."""
    binary = go_build("bin/testcluster", "the test control plane", "the end-to-end tests against kube-apiserver")
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


@pytest.fixture(scope="session")
def kplace_kubeconfig(api, cluster_dir) -> str:
    """A kubeconfig for deploy/rbac.yaml's ServiceAccount (the file is applied here), with a token minted through
    the TokenRequest API: the tests run kplace as that identity, so its ClusterRole is checked to be enough."""
    import yaml
    from kubernetes import client

    for obj in manifest("rbac.yaml"):
        create(api, obj)
    token = client.CoreV1Api(api).create_namespaced_service_account_token("kplace", "kube-system", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 7200}}).status.token
    config = yaml.safe_load((cluster_dir / "kubeconfig").read_text())
    config["users"] = [{"name": "kplace", "user": {"token": token}}]
    for context in config["contexts"]:
        context["context"]["user"] = "kplace"
    path = cluster_dir / "kplace.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return str(path)
