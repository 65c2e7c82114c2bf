"""Every call to the API server ends within its timeout, and a commit that did not fully succeed exits non-zero."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
import yaml
from click.testing import CliRunner
from kplace.solver.binder.kube import TIMEOUTS, request_timeout
from kplace.solver.binder.retry import RetryPolicy
from kplace.solver.cli import EXIT_COMMIT, main
from kplace.solver.output import dumps
from kplace.solver.testing import node, pod


@pytest.fixture
def silent_server():
    """A TCP server on 127.0.0.1 that accepts connections and never answers; yields its URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    held, stop = [], threading.Event()

    def accept():
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
                held.append(conn)
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    stop.set()
    t.join(2)
    for c in held:
        c.close()
    sock.close()


@pytest.fixture(autouse=True)
def _restore_timeouts():
    saved = (TIMEOUTS.call, TIMEOUTS.list)
    yield
    TIMEOUTS.call, TIMEOUTS.list = saved


def _kubeconfig(tmp_path, url: str) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": url}}], "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}), encoding="utf-8")
    return str(path)


def test_the_client_gets_a_connect_and_read_pair_because_it_silently_ignores_a_float():
    assert request_timeout(3.0) == (3.0, 3.0)
    assert request_timeout(60) == (10.0, 60.0)
    assert isinstance(RetryPolicy(timeout=2.5).request_timeout, tuple)


def test_inspect_against_a_server_that_accepts_and_never_answers_fails_within_its_request_timeout(
        tmp_path, silent_server):
    started = time.monotonic()
    res = CliRunner().invoke(main, ["inspect", "--kubeconfig", _kubeconfig(tmp_path, silent_server),
                                    "--request-timeout", "1s"])
    assert time.monotonic() - started < 15
    assert res.exit_code != 0
    assert "Traceback" not in res.output


def test_bind_api_against_a_silent_server_ends_within_its_retry_budget_and_exits_non_zero(tmp_path, silent_server):
    state = tmp_path / "state.json"
    state.write_text(dumps({"apiVersion": "v1", "kind": "List", "items": [node("a"), pod("p", cpu="100m")]}),
                     encoding="utf-8")
    started = time.monotonic()
    res = CliRunner().invoke(main, ["schedule", str(state), "--engine", "greedy", "--bind", "api", "--output", "json",
                                    "--kubeconfig", _kubeconfig(tmp_path, silent_server), "--request-timeout", "1"])
    assert time.monotonic() - started < 30  # 5 tries of at most 1 s each, with their waits
    assert res.exit_code == EXIT_COMMIT
    assert "0 of 1 Binding(s) made" in res.output
    data = json.loads(res.stdout)
    assert data["commit"]["outcomes"][0]["result"] == "failed"


def test_bind_api_exits_non_zero_when_the_server_refuses_every_binding(fake_api, tmp_path):
    api = fake_api([node("a"), pod("p", cpu="100m")])
    api.fail(r"/binding$", 403, times=10)
    state = tmp_path / "state.json"
    state.write_text(dumps({"apiVersion": "v1", "kind": "List", "items": [node("a"), pod("p", cpu="100m")]}),
                     encoding="utf-8")
    res = CliRunner().invoke(main, ["schedule", str(state), "--engine", "greedy", "--bind", "api",
                                    "--kubeconfig", api.kubeconfig_path])
    assert res.exit_code == EXIT_COMMIT
    assert "did not fully succeed" in res.output


def test_bind_api_exits_zero_when_every_binding_is_made(fake_api, tmp_path):
    api = fake_api([node("a"), pod("p", cpu="100m")])
    state = tmp_path / "state.json"
    state.write_text(dumps({"apiVersion": "v1", "kind": "List", "items": [node("a"), pod("p", cpu="100m")]}),
                     encoding="utf-8")
    res = CliRunner().invoke(main, ["schedule", str(state), "--engine", "greedy", "--bind", "api",
                                    "--kubeconfig", api.kubeconfig_path])
    assert res.exit_code == 0, res.output
    assert api.get("Pod", "p")["spec"]["nodeName"] == "a"
