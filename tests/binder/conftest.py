"""Fixtures: a strict fake Kubernetes API server on 127.0.0.1 and a kubeconfig pointing at it."""

from __future__ import annotations

import pytest
from kplace.solver.binder.testing import FakeApiServer


@pytest.fixture
def fake_api(tmp_path):
    """fake_api(objects) → a started FakeApiServer with `.kubeconfig_path`; stopped after the test."""
    servers: list[FakeApiServer] = []

    def start(objects=(), **options):
        server = FakeApiServer(objects, **options).start()
        server.kubeconfig_path = server.kubeconfig(tmp_path)
        servers.append(server)
        return server

    yield start
    for s in servers:
        s.stop()
