"""`kplace run` as a second scheduler against a real kube-apiserver and controllers: it binds a Deployment's pods,
follows scale up and down, uses a node added while it runs and avoids a cordoned or deleted one, serves /healthz,
/readyz and /metrics, and exits cleanly on SIGTERM. Replicas elect a leader through a Lease: only the leader binds,
a standby takes over when it is killed (after the lease duration) or stopped (at once: the Lease is released). An
API server outage (a TCP proxy in between, stalled then refusing) turns /readyz 503 while /healthz stays 200, and
the pods created meanwhile are bound once it is over."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner
from kplace.solver.cli import main

from .helpers import (
    TcpProxy,
    create,
    deployment,
    get,
    kplace_profile,
    namespace,
    pods,
    running_and_ready,
    wait_for,
)

pytestmark = pytest.mark.slow

NEW_NODE = "run-new"
GONE_NODE = "run-gone"
LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kplace"
# Shorter than kube-scheduler's 15 s / 10 s / 2 s, so that a hand-over fits a test; the same protocol.
LEASE_S, RENEW_S, RETRY_S = 8.0, 5.0, 1.0
ELECTION = ["--leader-elect-lease-duration", str(LEASE_S), "--leader-elect-renew-deadline", str(RENEW_S),
            "--leader-elect-retry-period", str(RETRY_S)]
MAX_JITTERED_RETRY = 2.2 * RETRY_S  # client-go's jitter: a candidate retries within retry · [1, 2.2)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _http(port: int, path: str) -> tuple[int, str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
        return resp.status, resp.read().decode()


@pytest.fixture
def run_namespace(api):
    """A namespace for the test; afterwards it and the added node are deleted, any cordon is lifted, and the
    fixture waits until they are gone."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    ns = namespace(api, "e2e-run")
    yield ns
    core.delete_namespace(ns)
    wait_for(lambda: not pods(api, ns), "the namespace's pods to be gone")
    for node in get(api, "/api/v1/nodes")["items"]:
        if node["spec"].get("unschedulable"):
            core.patch_node(node["metadata"]["name"], {"spec": {"unschedulable": False}})
    for name in (NEW_NODE, GONE_NODE):
        if name in {n["metadata"]["name"] for n in get(api, "/api/v1/nodes")["items"]}:
            core.delete_node(name)
    wait_for(lambda: ns not in {n["metadata"]["name"] for n in get(api, "/api/v1/namespaces")["items"]}
             and not {NEW_NODE, GONE_NODE} & {n["metadata"]["name"] for n in get(api, "/api/v1/nodes")["items"]},
             "the namespace and the nodes to be deleted")


def _all_running(api, ns: str, n: int):
    current = [p for p in pods(api, ns) if not p["metadata"].get("deletionTimestamp")]
    return len(current) == n and all(running_and_ready(p) for p in current) and current


def test_run_binds_a_deployment_follows_scaling_and_node_changes_and_stops_on_sigterm(
        api, kplace_kubeconfig, tmp_path, run_namespace):
    from kubernetes import client

    ns = run_namespace
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    port = _free_port()
    log = (tmp_path / "run.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "kplace.solver.cli", "run", "--kubeconfig", kplace_kubeconfig,
                             "--config", kplace_profile(tmp_path), "--port", str(port), "--bind-address",
                             "127.0.0.1", "--time-limit", "2", "--resync", "5"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: _try(port, "/readyz") == 200, "kplace run to be ready", timeout=60)
        create(api, deployment("web", 6), ns)
        wait_for(lambda: _all_running(api, ns, 6), "the 6 pods to be bound and running")

        apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 10}})
        wait_for(lambda: _all_running(api, ns, 10), "the 10 pods to be bound and running")
        apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 3}})
        wait_for(lambda: _all_running(api, ns, 3), "the Deployment to scale down to 3")

        create(api, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NEW_NODE, "labels": {
            "testcluster.kplace.io/simulated": "true", "kubernetes.io/hostname": NEW_NODE, "e2e": "run"}}})
        wait_for(lambda: any(n["metadata"]["name"] == NEW_NODE and not n["spec"].get("taints")
                             and n["status"].get("allocatable") for n in get(api, "/api/v1/nodes")["items"]),
                 "the new node to be Ready and untainted")
        cordoned = sorted(n["metadata"]["name"] for n in get(api, "/api/v1/nodes")["items"]
                          if n["metadata"]["name"] != NEW_NODE)[0]
        core.patch_node(cordoned, {"spec": {"unschedulable": True}})
        before = {p["metadata"]["name"] for p in pods(api, ns)}
        pinned = deployment("pinned", 2)
        pinned["spec"]["template"]["spec"]["nodeSelector"] = {"e2e": "run"}
        create(api, pinned, ns)
        apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 8}})
        final = wait_for(lambda: _all_running(api, ns, 10), "the 7 new pods to be bound and running")
        new = [p for p in final if p["metadata"]["name"] not in before]
        assert len(new) == 7
        assert all(p["spec"]["nodeName"] != cordoned for p in new)
        assert {p["spec"]["nodeName"] for p in new if p["metadata"]["labels"]["app"] == "pinned"} == {NEW_NODE}
        assert all(p["spec"]["schedulerName"] == "kplace" for p in final)

        state = tmp_path / "state.json"
        exported = CliRunner().invoke(main, ["export", "--kubeconfig", kplace_kubeconfig, "--output-file",
                                             str(state)])
        assert exported.exit_code == 0, exported.output
        _assert_bindings_fit(json.loads(state.read_text()), ns)

        assert _http(port, "/healthz")[0] == 200 and _http(port, "/readyz")[0] == 200
        status, metrics = _http(port, "/metrics")
        assert status == 200
        scheduled = [line for line in metrics.splitlines() if line.startswith("kplace_pods_scheduled_total ")]
        assert scheduled and float(scheduled[0].split()[1]) >= 17, metrics[:2000]
        assert "kplace_windows_total" in metrics

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0, (tmp_path / "run.log").read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()


def _try(port: int, path: str) -> int | None:
    """The HTTP status of PATH (None when nothing answers)."""
    try:
        return _http(port, path)[0]
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


def _assert_bindings_fit(state: dict, ns: str) -> None:
    """Every bound pod of the export is on an existing node, and each node's bound requests fit its allocatable
    CPU and pod count."""
    from kplace.models.quantity import parse_quantity

    objs = state["items"]
    nodes = {o["metadata"]["name"]: o for o in objs if o.get("kind") == "Node"}
    used: dict[str, tuple] = {}
    for pod in (o for o in objs if o.get("kind") == "Pod"):
        node = pod["spec"].get("nodeName")
        if not node:
            assert pod["metadata"]["namespace"] != ns, f"{ns}/{pod['metadata']['name']} is not bound"
            continue
        assert node in nodes, f"{pod['metadata']['name']} is bound to the unknown node {node}"
        cpu = sum(parse_quantity(c.get("resources", {}).get("requests", {}).get("cpu", "0"))
                  for c in pod["spec"]["containers"])
        cores, count = used.get(node, (0, 0))
        used[node] = (cores + cpu, count + 1)
    for node, (cores, count) in used.items():
        alloc = nodes[node]["status"]["allocatable"]
        assert cores <= parse_quantity(alloc["cpu"]) and count <= int(alloc["pods"]), node


@dataclass
class Replica:
    """One `kplace run` subprocess: its port for /healthz, /readyz and /metrics, and its log (JSON lines)."""

    name: str
    proc: subprocess.Popen
    port: int
    log: Path

    def metric(self, line_start: str) -> float:
        """The value of the first /metrics sample whose line starts with LINE_START (0 when absent, NaN while the
        endpoint does not answer yet)."""
        try:
            _, text = _http(self.port, "/metrics")
        except OSError:
            return float("nan")
        for line in text.splitlines():
            if line.startswith(line_start + " "):
                return float(line.split()[-1])
        return 0.0

    def leading(self) -> bool:
        return self.metric('leader_election_master_status{name="kplace"}') == 1.0

    def scheduled(self) -> float:
        return self.metric("kplace_pods_scheduled_total")

    def logged(self, msg: str) -> list[dict]:
        return [e for e in (json.loads(x) for x in self.log.read_text().splitlines() if x.startswith("{"))
                if e.get("msg") == msg]

    @property
    def identity(self) -> str:
        return wait_for(lambda: self.logged("attempting to acquire leader lease"),
                        f"{self.name}'s leader election to start")[0]["identity"]


@pytest.fixture
def replicas(kplace_kubeconfig, tmp_path):
    """start(name, *flags, kubeconfig=...) → a running `kplace run` (greedy engine, as the ServiceAccount); every
    replica still running at the end is killed."""
    started: list[Replica] = []
    logs = []

    def start(name: str, *flags: str, kubeconfig: str = kplace_kubeconfig) -> Replica:
        port = _free_port()
        path = tmp_path / f"{name}.log"
        logs.append(path.open("w"))
        proc = subprocess.Popen([sys.executable, "-m", "kplace.solver.cli", "run", "--kubeconfig", kubeconfig,
                                 "--config", kplace_profile(tmp_path), "--port", str(port), "--bind-address",
                                 "127.0.0.1", "--engine", "greedy", "--resync", "5", *flags],
                                stdout=logs[-1], stderr=subprocess.STDOUT)
        started.append(Replica(name, proc, port, path))
        return started[-1]

    yield start
    for r in started:
        if r.proc.poll() is None:
            r.proc.kill()
            r.proc.wait()
    for fh in logs:
        fh.close()


def _lease(api) -> dict:
    return get(api, LEASE_PATH)["spec"]


def test_two_replicas_elect_one_leader_that_alone_binds_and_a_standby_takes_over_when_it_is_killed_or_stopped(
        api, run_namespace, replicas):
    """Only the Lease's holder binds; SIGKILL: the standby takes over once the lease has not changed for the lease
    duration (at most lease + two jittered retries after the kill, and not much before the lease ran out); SIGTERM:
    the leader releases the Lease and the standby takes it at its next retry."""
    from kubernetes import client

    ns, apps = run_namespace, client.AppsV1Api(api)
    a, b = replicas("a", *ELECTION), replicas("b", *ELECTION)
    wait_for(lambda: _try(a.port, "/readyz") == 200 and _try(b.port, "/readyz") == 200,
             "both replicas to be ready (a standby is ready too, as kube-scheduler's)", timeout=60)
    wait_for(lambda: a.leading() != b.leading(), "exactly one replica to lead", timeout=30)
    leader, standby = (a, b) if a.leading() else (b, a)
    lease = _lease(api)
    assert lease["holderIdentity"] == leader.identity and leader.identity != standby.identity
    assert lease["leaseDurationSeconds"] == int(LEASE_S)

    create(api, deployment("ha", 6), ns)
    wait_for(lambda: _all_running(api, ns, 6), "the 6 pods to be bound and running")
    time.sleep(1)
    assert leader.scheduled() == 6 and standby.scheduled() == 0

    leader.proc.kill()  # SIGKILL: no release
    killed = time.monotonic()
    leader.proc.wait()
    wait_for(standby.leading, "the standby to take the lease over", timeout=LEASE_S + 2 * MAX_JITTERED_RETRY + 10,
             every=0.1)
    took = time.monotonic() - killed
    assert LEASE_S - RETRY_S - 1 <= took <= LEASE_S + 2 * MAX_JITTERED_RETRY + 1, took
    taken = _lease(api)
    assert taken["holderIdentity"] == standby.identity
    assert taken["leaseTransitions"] == lease["leaseTransitions"] + 1

    apps.patch_namespaced_deployment_scale("ha", ns, {"spec": {"replicas": 9}})
    wait_for(lambda: _all_running(api, ns, 9), "the 3 new pods to be bound by the new leader")
    time.sleep(1)
    assert standby.scheduled() == 3  # 6 + 3 bindings for 9 pods: every pod bound exactly once
    assert standby.metric('kplace_schedule_attempts_total{result="error"}') == 0  # no 409 (bound twice)

    c = replicas("c", *ELECTION)
    wait_for(lambda: _try(c.port, "/readyz") == 200, "a third replica to be ready", timeout=60)
    assert not c.leading() and _lease(api)["holderIdentity"] == standby.identity
    standby.proc.send_signal(signal.SIGTERM)
    assert standby.proc.wait(timeout=15) == 0, standby.log.read_text()[-3000:]
    stopped = time.monotonic()
    assert standby.logged("released the leader lease")
    assert _lease(api)["holderIdentity"] in ("", c.identity)
    wait_for(c.leading, "the third replica to take the released lease", timeout=LEASE_S, every=0.1)
    assert time.monotonic() - stopped <= MAX_JITTERED_RETRY + 1  # no wait for the lease to run out
    apps.patch_namespaced_deployment_scale("ha", ns, {"spec": {"replicas": 11}})
    wait_for(lambda: _all_running(api, ns, 11), "the 2 new pods to be bound by the third replica")
    time.sleep(1)
    assert c.scheduled() == 2
    c.proc.send_signal(signal.SIGTERM)
    assert c.proc.wait(timeout=15) == 0
    assert _lease(api)["holderIdentity"] == ""


def test_readyz_and_metrics_follow_an_api_server_outage_and_pods_created_during_it_are_bound_after(
        api, kplace_kubeconfig, tmp_path, run_namespace, replicas):
    """Through a TCP proxy (TLS untouched; the certificate's SAN has 127.0.0.1): stalled, then refusing. /readyz
    turns 503 within the probe's staleness (20 s) while /healthz stays 200; the leader, unable to renew, stops
    leading; restored, /readyz is 200 again, the lease is renewed and the pods created meanwhile are bound."""
    import yaml
    from kubernetes import client

    ns, apps = run_namespace, client.AppsV1Api(api)
    config = yaml.safe_load(Path(kplace_kubeconfig).read_text())
    server = urlsplit(config["clusters"][0]["cluster"]["server"])
    assert server.hostname == "127.0.0.1"
    proxy = TcpProxy(server.hostname, server.port)
    try:
        for cluster in config["clusters"]:
            cluster["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
        proxied = tmp_path / "proxied.kubeconfig"
        proxied.write_text(yaml.safe_dump(config))
        r = replicas("proxied", *ELECTION, kubeconfig=str(proxied))
        wait_for(lambda: _try(r.port, "/readyz") == 200 and r.leading(), "kplace run to be ready and lead",
                 timeout=60)
        assert r.metric("kplace_apiserver_reachable") == 1
        create(api, deployment("outage", 2), ns)
        wait_for(lambda: _all_running(api, ns, 2), "the 2 pods to be bound and running")

        proxy.stall()  # the API server stops answering: connections hang
        wait_for(lambda: _try(r.port, "/readyz") == 503, "/readyz to fail", timeout=40)
        assert _try(r.port, "/healthz") == 200
        wait_for(lambda: r.metric("kplace_apiserver_reachable") == 0, "the API server gauge to turn 0",
                 timeout=30)  # no probe answered for 20 s (the informers' failures may turn /readyz sooner)
        assert _try(r.port, "/readyz") == 503 and _try(r.port, "/healthz") == 200
        wait_for(lambda: not r.leading(), "the leader to stop leading (renew deadline)", timeout=RENEW_S + 10)
        apps.patch_namespaced_deployment_scale("outage", ns, {"spec": {"replicas": 5}})  # as admin, not proxied
        relists = r.metric('kplace_relists_total{kind="Pod"}')
        proxy.refuse()  # then refuses: every connection reset, the port closed
        time.sleep(4)
        assert _try(r.port, "/readyz") == 503 and _try(r.port, "/healthz") == 200
        assert not _bound_count(api, ns) > 2

        proxy.restore()
        wait_for(lambda: _try(r.port, "/readyz") == 200, "/readyz to recover", timeout=40)
        wait_for(lambda: _all_running(api, ns, 5), "the 3 pods created during the outage to be bound",
                 timeout=60)
        assert r.leading() and r.metric("kplace_apiserver_reachable") == 1
        assert r.metric('kplace_relists_total{kind="Pod"}') > relists  # the broken watch was listed again
        assert r.scheduled() == 5
        r.proc.send_signal(signal.SIGTERM)
        assert r.proc.wait(timeout=15) == 0, r.log.read_text()[-3000:]
    finally:
        proxy.close()


def _bound_count(api, ns: str) -> int:
    return sum(1 for p in pods(api, ns) if p["spec"].get("nodeName"))


def test_a_node_deleted_while_kplace_runs_gets_no_pod_and_its_pending_pods_go_elsewhere(
        api, run_namespace, replicas):
    """A simulated node takes a pinned pod; deleted, it gets no pod afterwards: pods that were pending (gated) and
    prefer it are bound to the remaining nodes, a new replica pinned to it stays pending."""
    from kubernetes import client

    ns, apps, core = run_namespace, client.AppsV1Api(api), client.CoreV1Api(api)
    r = replicas("nodes", "--no-leader-elect")
    wait_for(lambda: _try(r.port, "/readyz") == 200, "kplace run to be ready", timeout=60)
    create(api, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": GONE_NODE, "labels": {
        "testcluster.kplace.io/simulated": "true", "kubernetes.io/hostname": GONE_NODE, "e2e": "gone"}}})
    wait_for(lambda: any(n["metadata"]["name"] == GONE_NODE and not n["spec"].get("taints")
                         and n["status"].get("allocatable") for n in get(api, "/api/v1/nodes")["items"]),
             "the node to be Ready and untainted")
    pinned = deployment("pinned", 1)
    pinned["spec"]["template"]["spec"]["nodeSelector"] = {"e2e": "gone"}
    create(api, pinned, ns)
    wait_for(lambda: _all_running(api, ns, 1), "the pinned pod to run")
    [first_pod] = pods(api, ns)
    first = first_pod["metadata"]["name"]
    assert first_pod["spec"]["nodeName"] == GONE_NODE
    prefer = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 100, "preference": {"matchExpressions": [{"key": "e2e", "operator": "In", "values": ["gone"]}]}}]}}
    for i in range(3):
        create(api, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"prefers-{i}"},
                     "spec": {"schedulerName": "kplace", "schedulingGates": [{"name": "e2e.kplace.io/hold"}],
                              "affinity": prefer, "containers": [{
                                  "name": "app", "image": "registry.k8s.io/pause:3.10",
                                  "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}}]}}, ns)

    core.delete_node(GONE_NODE)
    wait_for(lambda: GONE_NODE not in {n["metadata"]["name"] for n in get(api, "/api/v1/nodes")["items"]},
             "the node to be deleted")
    time.sleep(1)  # kplace's node watch sees the deletion
    for i in range(3):
        core.patch_namespaced_pod(f"prefers-{i}", ns, {"spec": {"schedulingGates": None}})
    apps.patch_namespaced_deployment_scale("pinned", ns, {"spec": {"replicas": 2}})
    nodes = {n["metadata"]["name"] for n in get(api, "/api/v1/nodes")["items"]}
    bound = wait_for(lambda: [p for p in pods(api, ns) if p["metadata"]["name"].startswith("prefers-")
                              and p["spec"].get("nodeName")] if all(
        p["spec"].get("nodeName") for p in pods(api, ns) if p["metadata"]["name"].startswith("prefers-")) else None,
        "the 3 pods that preferred the deleted node to be bound elsewhere")
    assert len(bound) == 3 and all(p["spec"]["nodeName"] in nodes - {GONE_NODE} for p in bound)
    time.sleep(3)  # a few more windows
    on_gone = [p["metadata"]["name"] for p in pods(api, ns) if p["spec"].get("nodeName") == GONE_NODE]
    assert set(on_gone) <= {first}  # only the pod bound before the deletion (until the pod GC removes it)
    assert [p for p in pods(api, ns) if p["metadata"]["name"].startswith("pinned-")
            and not p["spec"].get("nodeName")]  # the new pinned replica has nowhere to go and stays pending
    assert r.metric('kplace_schedule_attempts_total{result="unschedulable"}') >= 1  # the new pinned replica
    r.proc.send_signal(signal.SIGTERM)
    assert r.proc.wait(timeout=15) == 0


def _may(api, verb: str, name: str = "kplace") -> bool:
    """Whether deploy/rbac.yaml's ServiceAccount may VERB the Lease kube-system/NAME (a SubjectAccessReview)."""
    from kubernetes import client

    from .helpers import KPLACE_USER

    review = client.AuthorizationV1Api(api).create_subject_access_review({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": KPLACE_USER, "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system",
                                                  "system:authenticated"],
                 "resourceAttributes": {"verb": verb, "resource": "leases", "group": "coordination.k8s.io",
                                        "namespace": "kube-system", "name": "" if verb == "create" else name}}})
    return bool(review.status.allowed)


def test_the_lease_role_is_exactly_what_leader_election_needs(api, replicas):
    """With deploy/rbac.yaml's Role kplace run (as its ServiceAccount) creates the Lease and leads; without create
    (no Lease yet), without get, or without update (a released Lease), the API server refuses (403) and it never
    leads. The Role grants nothing on other Leases."""
    from kubernetes import client

    from .helpers import manifest

    rbac, coord = client.RbacAuthorizationV1Api(api), client.CoordinationV1Api(api)
    [role] = [o for o in manifest("rbac.yaml") if o["kind"] == "Role"]
    assert not _may(api, "get", "someone-else") and not _may(api, "update", "someone-else")

    def delete_lease():
        if any(le.metadata.name == "kplace" for le in coord.list_namespaced_lease("kube-system").items):
            coord.delete_namespaced_lease("kplace", "kube-system")

    def without(verb: str) -> list[dict]:
        rules = []
        for rule in role["rules"]:
            verbs = [v for v in rule["verbs"] if v != verb]
            if verbs:
                rules.append({**rule, "verbs": verbs})
        return rules

    cases = [("create", delete_lease), ("get", None), ("update", None)]
    try:
        for verb, prepare in cases:
            rbac.patch_namespaced_role(role["metadata"]["name"], "kube-system", {"rules": without(verb)})
            wait_for(lambda verb=verb: not _may(api, verb), f"the Role to lose {verb}")
            if prepare:
                prepare()
            r = replicas(f"no-{verb}", *ELECTION)
            wait_for(lambda r=r: r.logged("leader election attempt failed"), f"a refused {verb}", timeout=30)
            refusal = r.logged("leader election attempt failed")[0]["error"]
            assert f"{verb} Lease kube-system/kplace: HTTP 403" in refusal, refusal
            time.sleep(2 * RETRY_S)
            assert not r.leading()
            r.proc.send_signal(signal.SIGTERM)
            assert r.proc.wait(timeout=15) == 0
            rbac.patch_namespaced_role(role["metadata"]["name"], "kube-system", {"rules": role["rules"]})
            wait_for(lambda: all(_may(api, v) for v in ("create", "get", "update")), "the whole Role again")
            if verb == "create":  # then, with the whole Role, the Lease is created (and released at the stop)
                r = replicas("whole-role", *ELECTION)
                wait_for(r.leading, "kplace run to create the Lease and lead", timeout=30)
                r.proc.send_signal(signal.SIGTERM)
                assert r.proc.wait(timeout=15) == 0
                assert _lease(api)["holderIdentity"] == ""
    finally:
        rbac.patch_namespaced_role(role["metadata"]["name"], "kube-system", {"rules": role["rules"]})
