"""What the extender will and will not do for whoever reaches its port: bind only the plan's decisions, authenticate
with client certificates or a bearer token, and survive idle, slow, bursty and hostile clients."""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import ssl
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from click.testing import CliRunner
from kplace.solver.binder.extender import MAX_BODY, Extender, ExtenderOptions, ExtenderServer
from kplace.solver.binder.kube import new_client
from kplace.solver.cli import main
from kplace.solver.framework.config import default_config
from kplace.solver.testing import build_snapshot, make_certificates, node, pod

OPENSSL = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make certificates")


def _go_pod(name, cpu="1", uid=None):
    return {"metadata": {"name": name, "namespace": "default", "uid": uid or f"uid-{name}"},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {}}


def _objects():
    return [node("a", cpu="2"), node("b", cpu="2"), pod("big", cpu="2"), pod("small", cpu="1")]


@pytest.fixture
def extender_server(fake_api):
    started = []

    def start(**server_options):
        api = fake_api(_objects())
        client = new_client(api.kubeconfig_path)
        ext = Extender(build_snapshot(*_objects()), default_config(), ExtenderOptions(engine="greedy"), client=client)
        srv = ExtenderServer(ext, "127.0.0.1", 0, **server_options).start()
        started.append((srv, client))
        return srv, api

    yield start
    for srv, client in started:
        srv.stop()
        client.close()


def _request(srv, path, body=None, *, raw=None, headers=None, context=None, timeout=10):
    host, port = srv.httpd.server_address[:2]
    conn = (http.client.HTTPSConnection(host, port, context=context, timeout=timeout) if context
            else http.client.HTTPConnection(host, port, timeout=timeout))
    data = raw if raw is not None else json.dumps(body).encode()
    conn.request("POST", path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
    resp = conn.getresponse()
    out = resp.status, json.loads(resp.read() or b"null")
    conn.close()
    return out


def _bind(srv, name, node_name, uid=None, **kw):
    return _request(srv, "/bind", {"PodName": name, "PodNamespace": "default", "PodUID": uid or f"uid-{name}",
                                   "Node": node_name}, **kw)


def _planned(srv, name):
    code, _body = _request(srv, "/filter", {"Pod": _go_pod(name), "NodeNames": ["a", "b"]})
    assert code == 200
    return srv.extender.plan[f"default/{name}"]


def test_bind_to_a_node_that_does_not_exist_is_refused_and_nothing_is_posted(extender_server):
    srv, api = extender_server()
    _planned(srv, "small")
    code, body = _bind(srv, "small", "attacker-chosen-node")
    assert code == 200 and "no such node" in body["Error"]
    assert api.calls("POST") == []


def test_bind_elsewhere_than_the_plan_says_is_refused_and_triggers_a_new_plan(extender_server):
    srv, api = extender_server()
    planned = _planned(srv, "small")
    other = "a" if planned == "b" else "b"
    _code, body = _bind(srv, "small", other)
    assert "the global plan puts it on " + planned in body["Error"]
    assert api.calls("POST") == [] and srv.extender.dirty


def test_bind_of_a_pod_the_extender_never_saw_or_with_another_uid_is_refused(extender_server):
    srv, api = extender_server()
    _, body = _bind(srv, "ghost", "a")
    assert "not a pending pod" in body["Error"]
    planned = _planned(srv, "small")
    _code, body = _bind(srv, "small", planned, uid="someone-else")
    assert "UID" in body["Error"]
    assert api.calls("POST") == []
    assert _bind(srv, "small", planned) == (200, {"Error": ""})


def test_metrics_count_each_verb_by_status_code_and_each_binding_by_result(extender_server):
    from prometheus_client.parser import text_string_to_metric_families

    srv, _api = extender_server()
    planned = _planned(srv, "small")
    other = "a" if planned == "b" else "b"
    assert _bind(srv, "small", other)[1]["Error"]  # refused: not where the plan says
    _planned(srv, "small")
    assert _bind(srv, "small", planned) == (200, {"Error": ""})
    assert _request(srv, "/filter", {"Pod": {}})[0] == 400
    host, port = srv.httpd.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=10)
    conn.request("GET", "/metrics")
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("Content-Type").startswith("text/plain")
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(resp.read().decode()) for s in f.samples}
    conn.close()
    assert samples[("kplace_extender_requests_total", (("code", "200"), ("verb", "filter")))] == 2
    assert samples[("kplace_extender_requests_total", (("code", "400"), ("verb", "filter")))] == 1
    assert samples[("kplace_extender_requests_total", (("code", "200"), ("verb", "bind")))] == 2
    assert samples[("kplace_extender_bindings_total", (("result", "refused"),))] == 1
    assert samples[("kplace_extender_bindings_total", (("result", "bound"),))] == 1
    assert samples[("kplace_extender_replans_total", ())] >= 2  # the refusal made the plan stale


def test_with_a_token_every_post_needs_the_bearer_header(extender_server):
    srv, _ = extender_server(token="s3cret")
    args = {"Pod": _go_pod("small"), "NodeNames": ["a", "b"]}
    assert _request(srv, "/filter", args)[0] == 401
    assert _request(srv, "/filter", args, headers={"Authorization": "Bearer wrong"})[0] == 401
    assert _request(srv, "/filter", args, headers={"Authorization": "Bearer s3cret"})[0] == 200


@OPENSSL
def test_with_a_client_ca_only_clients_holding_a_certificate_it_signed_get_answers(extender_server, tmp_path):
    make_certificates(tmp_path)
    srv, _ = extender_server(tls_cert=str(tmp_path / "server.crt"), tls_key=str(tmp_path / "server.key"),
                             client_ca=str(tmp_path / "ca.crt"))
    args = {"Pod": _go_pod("small"), "NodeNames": ["a", "b"]}
    anonymous = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        _request(srv, "/filter", args, context=anonymous)
    scheduler = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
    scheduler.load_cert_chain(str(tmp_path / "client.crt"), str(tmp_path / "client.key"))
    assert _request(srv, "/filter", args, context=scheduler)[0] == 200


@OPENSSL
def test_an_idle_tcp_connection_does_not_stall_https_clients(extender_server, tmp_path):
    make_certificates(tmp_path)
    srv, _ = extender_server(tls_cert=str(tmp_path / "server.crt"), tls_key=str(tmp_path / "server.key"))
    idle = socket.create_connection(srv.httpd.server_address[:2])  # connects, never starts the handshake
    try:
        ctx = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
        started = time.monotonic()
        code, _ = _request(srv, "/filter", {"Pod": _go_pod("small"), "NodeNames": ["a", "b"]}, context=ctx)
        assert code == 200 and time.monotonic() - started < 5
    finally:
        idle.close()


def test_fifty_parallel_requests_are_all_answered(extender_server):
    srv, _ = extender_server()
    args = {"Pod": _go_pod("small"), "NodeNames": ["a", "b"]}
    with ThreadPoolExecutor(50) as pool:
        codes = list(pool.map(lambda _: _request(srv, "/prioritize", args)[0], range(50)))
    assert codes == [200] * 50


def test_deeply_nested_json_gets_400_and_an_oversized_body_413_unread(extender_server):
    srv, _ = extender_server()
    code, body = _request(srv, "/filter", raw=b"[" * 100_000 + b"]" * 100_000)
    assert code == 400 and "nested" in body["Error"]
    host, port = srv.httpd.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=10)
    conn.putrequest("POST", "/filter")
    conn.putheader("Content-Length", str(MAX_BODY + 1))
    conn.endheaders()  # no body is sent: the answer must not wait for it
    assert conn.getresponse().status == 413
    conn.close()


def test_serving_beyond_loopback_without_authentication_needs_an_explicit_flag(tmp_path):
    state = tmp_path / "s.json"
    state.write_text(json.dumps({"kind": "List", "items": [node("a")]}), encoding="utf-8")
    res = CliRunner().invoke(main, ["extender", "serve", str(state), "--bind-address", "0.0.0.0", "--port", "0"])
    assert res.exit_code == 2
    assert "--tls-client-ca or --token-file" in res.output


def test_a_client_that_stops_sending_mid_request_is_disconnected_after_the_idle_limit(fake_api, monkeypatch):
    from kplace.solver.binder import extender as ext_module

    monkeypatch.setattr(ext_module, "IDLE", 0.5)
    ext = Extender(build_snapshot(*_objects()), default_config(), ExtenderOptions(engine="greedy"))
    srv = ExtenderServer(ext, "127.0.0.1", 0).start()
    try:
        slow = socket.create_connection(srv.httpd.server_address[:2])
        slow.sendall(b"POST /filter HTTP/1.1\r\nContent-Type: application/json\r\n")  # and then nothing
        slow.settimeout(5)
        started = time.monotonic()
        try:
            data = slow.recv(1024)
        except ConnectionResetError:
            data = b""
        assert data == b"" and time.monotonic() - started < 4
        slow.close()
    finally:
        srv.stop()
