"""Small helpers over the official kubernetes client for the end-to-end tests: raw JSON reads that share no code
with kplace's own lists, object creation from dicts, and polling."""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

NODES = 4  # simulated nodes in the session's cluster

# kind → the collection path of every object of that kind (the kinds `kplace export` writes)
PATHS = {
    "Node": "/api/v1/nodes",
    "Pod": "/api/v1/pods",
    "PodDisruptionBudget": "/apis/policy/v1/poddisruptionbudgets",
    "PriorityClass": "/apis/scheduling.k8s.io/v1/priorityclasses",
    "Namespace": "/api/v1/namespaces",
    "PersistentVolume": "/api/v1/persistentvolumes",
    "PersistentVolumeClaim": "/api/v1/persistentvolumeclaims",
    "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
    "CSINode": "/apis/storage.k8s.io/v1/csinodes",
    "Service": "/api/v1/services",
    "ReplicaSet": "/apis/apps/v1/replicasets",
    "StatefulSet": "/apis/apps/v1/statefulsets",
}


def get(api, path: str) -> dict[str, Any]:
    """One GET of `path` (no paging), parsed as JSON."""
    resp = api.call_api(path, "GET", auth_settings=["BearerToken"], _preload_content=False,
                        _request_timeout=30)[0]
    try:
        return json.loads(resp.data)
    finally:
        resp.release_conn()


def create(api, obj: dict[str, Any], namespace: str | None = None, **options: Any) -> None:
    """Create OBJ (`dry_run="All"` among OPTIONS: the API server's server-side dry run)."""
    from kubernetes import utils

    utils.create_from_dict(api, obj, namespace=namespace, **options)


def bind(api, namespace: str, pod: str, node: str) -> None:
    """POST a Binding (read raw: the client cannot read the Status the API server answers with into a Binding)."""
    from kubernetes import client

    resp = client.CoreV1Api(api).create_namespaced_binding(namespace, {
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node}}, _preload_content=False)
    _ = resp.data  # read to the end, or the pooled connection is left mid-response
    resp.release_conn()


def pods(api, namespace: str) -> list[dict[str, Any]]:
    return get(api, f"/api/v1/namespaces/{namespace}/pods")["items"]


def wait_for(check: Callable[[], Any], what: str, timeout: float = 90.0, every: float = 0.5) -> Any:
    """Poll `check` until it returns something truthy (returned); fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(every)


def running_and_ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    return status.get("phase") == "Running" and ready


def deployment(name: str, replicas: int, *, cpu: str = "500m", memory: str = "256Mi",
               scheduler: str = "kplace") -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"schedulerName": scheduler,
                                           "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                                                           "resources": {"requests": {"cpu": cpu,
                                                                                      "memory": memory}}}]}}}}


def kplace_profile(tmp_path) -> str:
    """A KubeSchedulerConfiguration file whose one profile is for `schedulerName: kplace` (the default profile's
    plugins): kplace, as kube-scheduler, decides only the pods of its profiles."""
    path = tmp_path / "kplace-profile.yaml"
    path.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                    "profiles: [{schedulerName: kplace}]\n")
    return str(path)


def namespace(api, name: str) -> str:
    create(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    wait_for(lambda: _has_default_service_account(api, name), f"the default ServiceAccount of namespace {name}")
    return name


def _has_default_service_account(api, name: str) -> bool:
    return any(sa["metadata"]["name"] == "default"
               for sa in get(api, f"/api/v1/namespaces/{name}/serviceaccounts")["items"])


DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
KPLACE_USER = "system:serviceaccount:kube-system:kplace"  # deploy/rbac.yaml's ServiceAccount, as the API sees it


def manifest(name: str) -> list[dict[str, Any]]:
    """The objects of deploy/NAME."""
    return [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d is not None]


def allowed(api, verb: str, resource: str, group: str = "", subresource: str = "") -> bool:
    """Whether the API server's authorizer lets deploy/rbac.yaml's ServiceAccount do VERB on RESOURCE (a
    SubjectAccessReview, asked as admin)."""
    from kubernetes import client

    review = client.AuthorizationV1Api(api).create_subject_access_review({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": KPLACE_USER, "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system",
                                                  "system:authenticated"],
                 "resourceAttributes": {"verb": verb, "resource": resource, "group": group,
                                        "subresource": subresource, "namespace": "default"}}})
    return bool(review.status.allowed)


class TcpProxy:
    """A TCP proxy on 127.0.0.1 (a thread per direction per connection) in front of HOST:PORT, for outages: TLS
    passes through untouched. `stall()` stops forwarding (open connections hang, new ones are accepted and never
    answered), `refuse()` resets every connection and closes the port (connect: ECONNREFUSED), `restore()` forwards
    again (reopening the same port)."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.lock = threading.Lock()
        self.flowing = threading.Event()
        self.flowing.set()
        self.conns: list[Any] = []
        self.listener = None
        self.port = 0
        self._listen()

    def _listen(self) -> None:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(64)
        self.port = s.getsockname()[1]
        self.listener = s
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def _accept(self, listener) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client) -> None:
        with self.lock:
            self.conns.append(client)
        self.flowing.wait()  # a stalled proxy accepts and holds the connection
        with self.lock:
            if client not in self.conns:  # reset by refuse() meanwhile
                return
        try:
            upstream = socket.create_connection(self.target, timeout=10)
            upstream.settimeout(None)
        except OSError:
            client.close()
            return
        with self.lock:
            self.conns.append(upstream)
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src, dst) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                self.flowing.wait()  # stalled: the bytes wait here, and so does the peer
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def stall(self) -> None:
        self.flowing.clear()

    def refuse(self) -> None:
        """Reset every connection and stop listening."""
        self.flowing.clear()
        if self.listener is not None:
            with contextlib.suppress(OSError):
                self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() and stops listening
            self.listener.close()
            self.listener = None
        with self.lock:
            conns, self.conns = self.conns, []
        for c in conns:
            with contextlib.suppress(OSError):
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST on close
                c.shutdown(socket.SHUT_RDWR)  # wakes the pump blocked on it (close alone would not)
                c.close()
        self.flowing.set()  # pumps of the closed sockets fail and end

    def restore(self) -> None:
        if self.listener is None:
            self.flowing.clear()
            self._listen()
        self.flowing.set()

    def close(self) -> None:
        self.refuse()


def nodes_and_namespace(api, nodes: list[str], tag: str):
    """Generator for a fixture: simulated nodes labelled e2e=TAG and the namespace e2e-TAG, only for one test;
    afterwards the namespace is deleted, its pods are gone, then the nodes, and it waits until both are gone so the
    next test can make them again."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    for name in nodes:
        create(api, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
            "testcluster.kplace.io/simulated": "true", "kubernetes.io/hostname": name, "e2e": tag}}})
    wait_for(lambda: all(not n["spec"].get("taints") and n["status"].get("allocatable")
                         for n in get(api, "/api/v1/nodes")["items"] if n["metadata"]["name"] in nodes),
             "the new nodes to be Ready and untainted")
    ns = namespace(api, f"e2e-{tag}")
    yield ns
    core.delete_namespace(ns)
    wait_for(lambda: not pods(api, ns), "the namespace's pods to be gone")
    for name in nodes:
        core.delete_node(name)
    wait_for(lambda: ns not in {n["metadata"]["name"] for n in get(api, "/api/v1/namespaces")["items"]}
             and not {n["metadata"]["name"] for n in get(api, "/api/v1/nodes")["items"]} & set(nodes),
             "the namespace and the nodes to be deleted")
