"""The extender protocol with bodies shaped exactly as kube-scheduler's Go types serialise them."""

from __future__ import annotations

import http.client
import json
import shutil
import ssl
import subprocess

import pytest
from kplace.solver.binder.extender import Extender, ExtenderOptions, ExtenderServer
from kplace.solver.binder.kube import new_client
from kplace.solver.framework.config import default_config
from kplace.solver.testing import build_snapshot, node, pod


def _go_pod(name, cpu, uid=None):
    """A v1.Pod as Go's encoding/json writes it (note creationTimestamp null and empty status)."""
    return {"metadata": {"name": name, "namespace": "default", "uid": uid or f"uid-{name}",
                         "creationTimestamp": None},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": cpu}}}],
                     "restartPolicy": "Always", "schedulerName": "default-scheduler", "priority": 0},
            "status": {}}


def _go_nodes(*names):
    return {"metadata": {}, "items": [{"metadata": {"name": n, "creationTimestamp": None}, "spec": {},
                                       "status": {"allocatable": {"cpu": "2", "pods": "110"}}} for n in names]}


@pytest.fixture
def server():
    """Nodes a and b (2 CPUs each) and one pending 2-CPU pod `big` the plan must give a whole node."""
    servers = []

    def start(client=None, tls=None):
        snap = build_snapshot(node("a", cpu="2"), node("b", cpu="2"), pod("big", cpu="2"))
        ext = Extender(snap, default_config(), ExtenderOptions(engine="greedy"), client=client)
        s = ExtenderServer(ext, "127.0.0.1", 0, **(tls or {})).start()
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()


def _post(srv, path, body, raw=None, context=None):
    host, port = srv.httpd.server_address[:2]
    conn = (http.client.HTTPSConnection(host, port, context=context) if context
            else http.client.HTTPConnection(host, port, timeout=10))
    data = raw if raw is not None else json.dumps(body).encode()
    conn.request("POST", path, body=data, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    out = resp.status, json.loads(resp.read())
    conn.close()
    return out


def test_filter_keeps_out_the_node_reserved_for_another_pod_and_answers_in_go_field_names(server):
    srv = server()
    code, body = _post(srv, "/filter", {"Pod": _go_pod("small", "1"), "Nodes": None, "NodeNames": ["a", "b"]})
    assert code == 200
    assert set(body) == {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}
    big_node = srv.extender.plan["default/big"]
    other = "b" if big_node == "a" else "a"
    assert body["NodeNames"] == [other] and body["Nodes"] is None and body["Error"] == ""
    assert list(body["FailedNodes"]) == [big_node]
    assert "reserved by the global plan for 1 other pending pod" in body["FailedNodes"][big_node]
    assert body["FailedAndUnresolvableNodes"] == {}


def test_filter_with_a_node_list_returns_the_node_list_and_the_planned_node_always_passes(server):
    srv = server()
    code, body = _post(srv, "/filter", {"Pod": _go_pod("big", "2"), "Nodes": _go_nodes("a", "b", "c"),
                                        "NodeNames": None})
    assert code == 200 and body["NodeNames"] is None and body["FailedNodes"] == {}
    assert [n["metadata"]["name"] for n in body["Nodes"]["items"]] == ["a", "b", "c"]  # c is unknown: passes


def test_prioritize_gives_the_planned_node_ten_and_others_zero(server):
    srv = server()
    code, body = _post(srv, "/prioritize", {"Pod": _go_pod("small", "1"), "Nodes": None, "NodeNames": ["a", "b"]})
    assert code == 200
    planned = srv.extender.plan["default/small"]
    assert body == [{"Host": n, "Score": 10 if n == planned else 0} for n in ("a", "b")]
    assert planned != srv.extender.plan["default/big"]


def test_new_pods_trigger_a_replan_and_known_ones_do_not(server):
    srv = server()
    args = {"Pod": _go_pod("small", "1"), "Nodes": None, "NodeNames": ["a", "b"]}
    _post(srv, "/filter", args)
    _post(srv, "/prioritize", args)
    assert srv.extender.replans == 1
    _post(srv, "/filter", {**args, "Pod": _go_pod("small2", "1")})
    assert srv.extender.replans == 2
    assert sorted(srv.extender.plan) == ["default/big", "default/small", "default/small2"]


def test_bind_posts_the_binding_through_the_api_and_records_the_pod_bound(server, fake_api):
    api = fake_api([node("a", cpu="2"), node("b", cpu="2"), pod("big", cpu="2"), pod("small", cpu="1")])
    client = new_client(api.kubeconfig_path)
    srv = server(client=client)
    _post(srv, "/filter", {"Pod": _go_pod("small", "1"), "NodeNames": ["a", "b"]})
    planned = srv.extender.plan["default/small"]
    code, body = _post(srv, "/bind", {"PodName": "small", "PodNamespace": "default", "PodUID": "uid-small",
                                      "Node": planned})
    assert (code, body) == (200, {"Error": ""})
    assert api.get("Pod", "small")["spec"]["nodeName"] == planned
    assert json.loads(api.calls("POST")[0]["body"])["target"] == {"apiVersion": "v1", "kind": "Node",
                                                                  "name": planned}
    assert "default/small" in srv.extender.bound
    # A second bind of the same pod: it is no longer pending, so the extender refuses it without a call.
    code, body = _post(srv, "/bind", {"PodName": "small", "PodNamespace": "default", "PodUID": "uid-small",
                                      "Node": planned})
    assert code == 200 and "not a pending pod" in body["Error"]
    assert len(api.calls("POST")) == 1
    client.close()


def test_bind_without_a_kubeconfig_is_an_error_result_not_a_crash(server):
    srv = server()
    code, body = _post(srv, "/bind", {"PodName": "big", "PodNamespace": "default", "PodUID": "", "Node": "a"})
    assert code == 200 and "without --kubeconfig" in body["Error"]


@pytest.mark.parametrize("path,raw", [
    ("/filter", b"{not json"),
    ("/filter", b"[]"),
    ("/filter", json.dumps({"Nodes": None, "NodeNames": ["a"]}).encode()),  # no Pod
    ("/filter", json.dumps({"Pod": {"metadata": {}}, "NodeNames": ["a"]}).encode()),  # unnamed pod
    ("/prioritize", json.dumps({"Pod": _go_pod("x", "1")}).encode()),  # neither Nodes nor NodeNames
    ("/prioritize", json.dumps({"Pod": _go_pod("x", "1"), "NodeNames": "a"}).encode()),
    ("/filter", json.dumps({"Pod": _go_pod("x", "lots"), "NodeNames": ["a"]}).encode()),  # bad quantity
    ("/bind", json.dumps({"PodName": "x"}).encode()),
    ("/bind", json.dumps({"podName": "x", "podNamespace": "d", "podUID": "u", "node": "a"}).encode()),  # json tags
])
def test_malformed_requests_get_400_with_a_json_error_and_the_server_keeps_serving(server, path, raw):
    srv = server()
    code, body = _post(srv, path, None, raw=raw)
    assert code == 400 and body["Error"]
    code, _ = _post(srv, "/prioritize", {"Pod": _go_pod("ok", "1"), "NodeNames": ["a"]})
    assert code == 200


def test_unknown_paths_are_404(server):
    srv = server()
    code, body = _post(srv, "/preempt", {})
    assert code == 404 and body["Error"]


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")
def test_tls_when_given_a_certificate_and_key(server, tmp_path):
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    srv = server(tls={"tls_cert": str(cert), "tls_key": str(key)})
    assert srv.url.startswith("https://")
    ctx = ssl.create_default_context(cafile=str(cert))
    ctx.check_hostname = False
    code, body = _post(srv, "/prioritize", {"Pod": _go_pod("small", "1"), "NodeNames": ["a", "b"]}, context=ctx)
    assert code == 200 and len(body) == 2
