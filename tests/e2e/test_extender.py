"""kplace as the extender of the real kube-scheduler (`oracle/bin/kube-scheduler`, v1.36.3) against the test cluster:
kube-scheduler runs with `deploy/extender-config.yaml` (templated only for where things are on this machine) and
calls `kplace extender serve` over HTTPS with client certificates to filter, score and bind a Deployment's pods."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
import yaml
from kplace.solver.testing import make_certificates

from .helpers import DEPLOY, create, deployment, get, nodes_and_namespace, pods, running_and_ready, wait_for

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make certificates")]

SCHEDULER = "e2e-extender"  # the profile of the test's kube-scheduler: no other test's pods use it
NODES = [f"ext-{i}" for i in range(3)]
REPLICAS, CPU = 6, "5"  # 16-CPU nodes: three pods fill a node to 15 CPUs, a fourth does not fit beside them


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def scheduler_kubeconfig(api, cluster_dir) -> str:
    """A kubeconfig for a ServiceAccount bound to kube's own roles for kube-scheduler (system:kube-scheduler and
    system:volume-scheduler, as kube binds them to the user system:kube-scheduler), with a TokenRequest token."""
    from kubernetes import client

    name = "e2e-kube-scheduler"
    create(api, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": "kube-system"}})
    for role in ("system:kube-scheduler", "system:volume-scheduler"):
        create(api, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                     "metadata": {"name": f"{name}:{role.split(':')[1]}"},
                     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                     "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "kube-system"}]})
    token = client.CoreV1Api(api).create_namespaced_service_account_token(name, "kube-system", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 7200}}).status.token
    config = yaml.safe_load((cluster_dir / "kubeconfig").read_text())
    config["users"] = [{"name": name, "user": {"token": token}}]
    for context in config["contexts"]:
        context["context"]["user"] = name
    path = cluster_dir / "kube-scheduler.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return str(path)


@pytest.fixture
def extender_namespace(api):
    """Three more simulated nodes and a namespace, only for this test (its pods select the nodes with
    e2e=extender); afterwards both are deleted and the fixture waits until they are gone."""
    yield from nodes_and_namespace(api, NODES, "extender")


def _certificates(tmp: Path) -> dict[str, str]:
    """A CA, kplace's serving certificate for 127.0.0.1 and kube-scheduler's client certificate, all signed by it."""
    make_certificates(tmp, "kplace", "scheduler")
    return {k: str(tmp / f"{k.replace('_', '.')}") for k in ("ca_crt", "kplace_crt", "kplace_key", "scheduler_crt",
                                                               "scheduler_key")}


def _scheduler_config(tmp: Path, kubeconfig: str, port: int, certs: dict[str, str], node_cache: bool) -> Path:
    """deploy/extender-config.yaml with only what differs on this machine replaced: the kubeconfig's path, the
    profile's schedulerName, the extender's URL (its port), the certificates' paths and nodeCacheCapable (the
    shipped file says true; the test runs both shapes). Every other field is the shipped file's."""
    shipped = yaml.safe_load((DEPLOY / "extender-config.yaml").read_text())
    config = json.loads(json.dumps(shipped))
    config["clientConnection"]["kubeconfig"] = kubeconfig
    [profile] = config["profiles"]
    profile["schedulerName"] = SCHEDULER
    [ext] = config["extenders"]
    ext["urlPrefix"] = f"https://127.0.0.1:{port}"
    ext["tlsConfig"] = {"caFile": certs["ca_crt"], "certFile": certs["scheduler_crt"],
                        "keyFile": certs["scheduler_key"]}
    ext["nodeCacheCapable"] = node_cache
    assert set(config) == set(shipped) and set(ext) == set(shipped["extenders"][0])
    assert {k: v for k, v in ext.items() if k not in ("urlPrefix", "tlsConfig", "nodeCacheCapable")} == {
        k: v for k, v in shipped["extenders"][0].items() if k not in ("urlPrefix", "tlsConfig", "nodeCacheCapable")}
    assert ext["filterVerb"] and ext["prioritizeVerb"] and ext["bindVerb"] and ext["weight"] > 0
    path = tmp / "kube-scheduler.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _kplace_config(tmp: Path) -> Path:
    """kplace's own profile for the pods' schedulerName, made to prefer what kube-scheduler's default profile does
    not: the most allocated node (NodeResourcesFit MostAllocated, no spreading or balance scores), so the pods
    end packed where kube-scheduler alone would spread them."""
    path = tmp / "kplace-config.yaml"
    path.write_text(yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": SCHEDULER,
                      "plugins": {"score": {"disabled": [{"name": "PodTopologySpread"},
                                                         {"name": "NodeResourcesBalancedAllocation"}]}},
                      "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
                          "type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1},
                                                                 {"name": "memory", "weight": 1}]}}}]}]}))
    return path


def _get(port: int, path: str, certs: dict[str, str]) -> tuple[int, str]:
    context = ssl.create_default_context(cafile=certs["ca_crt"])
    context.load_cert_chain(certs["scheduler_crt"], certs["scheduler_key"])
    with urllib.request.urlopen(f"https://127.0.0.1:{port}{path}", timeout=5, context=context) as resp:
        return resp.status, resp.read().decode()


def _try(port: int, path: str, certs: dict[str, str]) -> int | None:
    try:
        return _get(port, path, certs)[0]
    except OSError:
        return None


def _metric(text: str, name: str, **labels: str) -> float:
    """The sum of the samples of `name` whose labels include `labels` (0 when there is none)."""
    from prometheus_client.parser import text_string_to_metric_families

    return sum(s.value for family in text_string_to_metric_families(text) for s in family.samples
               if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _events(log: Path) -> list[dict]:
    out = []
    for line in log.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("logger") == "kplace.extender":
            out.append(record)
    return out


@pytest.mark.parametrize("node_cache", [True, False], ids=["node-names", "node-objects"])
def test_kube_scheduler_schedules_a_deployment_through_kplace_as_its_extender_which_filters_scores_and_binds(
        api, kplace_kubeconfig, scheduler_kubeconfig, go_build, tmp_path, extender_namespace, node_cache):
    """kube-scheduler's own profile spreads a Deployment (LeastAllocated, PodTopologySpread); kplace's plan packs it
    (MostAllocated), and its planned node's 10 × weight 5 × 10 = 500 outweighs the spread, so the pods end three
    and three on two nodes, bound by kplace, on nodes its filter kept; kplace's filter keeps the node whose room
    the plan reserves for three other pods out of the others' choices."""
    binary = go_build("bin/kube-scheduler", "the real kube-scheduler", "the extender tests against kube-scheduler")
    ns = extender_namespace
    web = deployment("web", REPLICAS, cpu=CPU, memory="1Gi", scheduler=SCHEDULER)
    web["spec"]["template"]["spec"]["nodeSelector"] = {"e2e": "extender"}
    create(api, web, ns)
    created = wait_for(lambda: len(pods(api, ns)) == REPLICAS and pods(api, ns), f"the Deployment's {REPLICAS} pods")
    assert not any(p["spec"].get("nodeName") for p in created)  # nothing schedules SCHEDULER's pods yet

    certs = _certificates(tmp_path)
    port = _free_port()
    kplace_log, scheduler_log = tmp_path / "kplace.log", tmp_path / "kube-scheduler.log"
    with kplace_log.open("w") as out:
        kplace = subprocess.Popen([
            sys.executable, "-m", "kplace.solver.cli", "extender", "serve", "--kubeconfig", kplace_kubeconfig,
            "--config", str(_kplace_config(tmp_path)), "--bind-address", "127.0.0.1", "--port", str(port),
            "--tls-cert", certs["kplace_crt"], "--tls-key", certs["kplace_key"], "--tls-client-ca", certs["ca_crt"],
            "--time-limit", "1", "--refresh", "30", "--log-level", "debug"], stdout=out, stderr=subprocess.STDOUT)
    scheduler = None
    try:
        wait_for(lambda: kplace.poll() is not None or _try(port, "/healthz", certs) == 200,
                 "kplace extender serve to answer /healthz", timeout=60)
        assert kplace.poll() is None, kplace_log.read_text()[-3000:]
        config = _scheduler_config(tmp_path, scheduler_kubeconfig, port, certs, node_cache)
        with scheduler_log.open("w") as out:
            scheduler = subprocess.Popen([str(binary), "--config", str(config), "--secure-port", "0",
                                          "--leader-elect=false", "-v=2"], stdout=out, stderr=subprocess.STDOUT)
        final = wait_for(lambda: (scheduler.poll() is not None or kplace.poll() is not None
                                  or (len(pods(api, ns)) == REPLICAS and all(map(running_and_ready, pods(api, ns)))
                                      and pods(api, ns))),
                         f"the {REPLICAS} pods to be bound and Running", timeout=120)
        assert scheduler.poll() is None, scheduler_log.read_text()[-3000:]
        assert kplace.poll() is None, kplace_log.read_text()[-3000:]
        status, metrics = _get(port, "/metrics", certs)
        assert status == 200
    finally:
        if scheduler is not None:
            _stop(scheduler)
        _stop(kplace)

    # The same pods (no pod was replaced), each on a node of the test's three.
    assert {p["metadata"]["uid"] for p in final} == {p["metadata"]["uid"] for p in created}
    where = {f"{ns}/{p['metadata']['name']}": p["spec"]["nodeName"] for p in final}
    assert set(where.values()) <= set(NODES)

    # kube-scheduler called every verb, with the request shape nodeCacheCapable asks for, and kplace bound each pod
    # once, to the node it ended on, with its UID.
    events = _events(kplace_log)
    assert _metric(metrics, "kplace_extender_requests_total", verb="filter", code="200") >= REPLICAS
    assert _metric(metrics, "kplace_extender_requests_total", verb="prioritize", code="200") >= REPLICAS
    assert _metric(metrics, "kplace_extender_requests_total", verb="bind", code="200") == REPLICAS
    assert _metric(metrics, "kplace_extender_requests_total") == _metric(
        metrics, "kplace_extender_requests_total", code="200")  # no 4xx/5xx answer
    assert _metric(metrics, "kplace_extender_bindings_total", result="bound") == REPLICAS
    assert _metric(metrics, "kplace_extender_bindings_total") == REPLICAS  # none refused, none failed
    filters = [e for e in events if e["msg"] == "filter"]
    assert {e["shape"] for e in filters} == {"NodeNames" if node_cache else "Nodes"}
    binds = [e for e in events if e["msg"].startswith("bound ")]
    assert Counter(e["pod"] for e in binds) == Counter(where.keys())  # every pod exactly once
    uids = {f"{ns}/{p['metadata']['name']}": p["metadata"]["uid"] for p in final}
    assert all(e["node"] == where[e["pod"]] and e["uid"] == uids[e["pod"]] for e in binds)

    # Each pod ended on a node kplace's last filter for it kept and its prioritize scored 10 (the planned node).
    for key, node in where.items():
        last_filter = [e for e in filters if e["pod"] == key][-1]
        last_score = [e for e in events if e["msg"] == "prioritize" and e["pod"] == key][-1]
        assert node in last_filter["kept"] and node not in last_filter["failed"], (key, node, last_filter)
        assert last_score["planned"] == node, (key, node, last_score)

    # kplace's preference won over kube-scheduler's spreading: three and three on two nodes, the third left empty;
    # and its filter kept pods off the node reserved for three others at least once.
    assert sorted(Counter(where.values()).values()) == [3, 3], where
    assert any(e["failed"] for e in filters), "kplace's filter never kept a node out"

    # kube-scheduler saw each binding succeed once (one Scheduled event per pod) and never failed one.
    scheduled = Counter()
    for event in get(api, f"/api/v1/namespaces/{ns}/events")["items"]:
        if event.get("reason") == "Scheduled":
            scheduled[f"{ns}/{event['involvedObject']['name']}"] += event.get("count") or 1
        assert event.get("reason") != "FailedScheduling", event.get("message")
    assert scheduled == Counter(where.keys())
