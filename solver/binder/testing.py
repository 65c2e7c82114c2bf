"""A strict, local fake Kubernetes API server for tests (there is no cluster on these machines).

It serves on 127.0.0.1 only and implements what kplace uses, with Kubernetes' JSON shapes and status codes:

- list of nodes, pods, PDBs, PriorityClasses, namespaces, PVs, PVCs, StorageClasses, CSINodes, services,
  ReplicaSets and StatefulSets, with `limit` and `continue` (items without kind/apiVersion, as the API
  server sends them; an expired continue token is 410 Gone);
- watch (`?watch=true&resourceVersion=N`) of any of them as a chunked stream of `{"type", "object"}` lines;
  a resourceVersion older than the compaction point gets an ERROR event with a 410 `Status`, as the real
  server sends it;
- `POST /api/v1/namespaces/{ns}/pods/{name}/binding`: 400 for a body that is not a v1 Binding or whose name
  differs from the URL's, 422 for a missing target name or a target kind other than Node, 404 for a missing
  pod, 409 for a pod already bound, being deleted, or whose uid differs from `metadata.uid`; 201 with a
  Success `Status` otherwise. `dryRun=All` validates without persisting; any other dryRun value is 400;
- `POST .../pods/{name}/eviction`: 429 (with a DisruptionBudget cause) when a PDB has no disruptions left,
  500 when more than one PDB selects the pod, 404 for a missing pod; otherwise the pod is deleted;
- GET and PATCH of one PersistentVolume or PersistentVolumeClaim: a JSON merge patch (sent as
  `application/merge-patch+json` or `application/strategic-merge-patch+json`: for the fields kplace patches,
  claimRef and annotations, both mean the same), `metadata.resourceVersion` in the patch a precondition (409
  when stale), `dryRun=All` honoured, other patch types 415. Unless `pv_controller=False`, the PV controller
  and an external provisioner are simulated (after `pv_controller_delay` seconds): a PV whose claimRef is set
  to an unbound claim binds it (PV `Bound`; the claim gets `volumeName`, `pv.kubernetes.io/bind-completed`,
  phase `Bound`); a claim of a class with a provisioner that gets `volume.kubernetes.io/selected-node` gets a
  new PV `pvc-<claim uid>` on that node (hostname node affinity) and is bound to it;
- GET, POST and PUT of coordination.k8s.io/v1 Leases (leader election): 404 for a missing Lease, 409
  AlreadyExists for a second create, 409 Conflict for a PUT whose `metadata.resourceVersion` is stale (a PUT
  without one is unconditional, as for Leases in kube);
- every request needs `Authorization: Bearer <token>` (else 401).

Faults can be injected per path (`fail`): a status code (optionally with Retry-After) or a delay longer than
the client's timeout. Every request is recorded (`requests`). Differences from a real API server: a list's
pages are not a consistent snapshot (a continue token resumes after the last name returned), and there is
no admission, defaulting or field validation beyond what is listed above.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

# resource → (kind, apiVersion, API path prefix, namespaced)
RESOURCES: dict[str, tuple[str, str, str, bool]] = {
    "nodes": ("Node", "v1", "/api/v1", False),
    "pods": ("Pod", "v1", "/api/v1", True),
    "namespaces": ("Namespace", "v1", "/api/v1", False),
    "persistentvolumes": ("PersistentVolume", "v1", "/api/v1", False),
    "persistentvolumeclaims": ("PersistentVolumeClaim", "v1", "/api/v1", True),
    "services": ("Service", "v1", "/api/v1", True),
    "poddisruptionbudgets": ("PodDisruptionBudget", "policy/v1", "/apis/policy/v1", True),
    "priorityclasses": ("PriorityClass", "scheduling.k8s.io/v1", "/apis/scheduling.k8s.io/v1", False),
    "storageclasses": ("StorageClass", "storage.k8s.io/v1", "/apis/storage.k8s.io/v1", False),
    "csinodes": ("CSINode", "storage.k8s.io/v1", "/apis/storage.k8s.io/v1", False),
    "replicasets": ("ReplicaSet", "apps/v1", "/apis/apps/v1", True),
    "statefulsets": ("StatefulSet", "apps/v1", "/apis/apps/v1", True),
}
RESOURCE_OF_KIND = {v[0]: k for k, v in RESOURCES.items()}


def status(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """A metav1.Status body as the API server writes it."""
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                            "status": "Success" if code < 400 else "Failure"}
    if code >= 400:
        body["message"] = message
        body["reason"] = reason
    if details:
        body["details"] = details
    body["code"] = code
    return body


@dataclass
class Fault:
    """An injected failure for the next request whose path matches `path` (a regex) and `method` (and, when
    given, whose query string matches `query`)."""

    path: str
    code: int = 500
    delay: float = 0.0  # seconds to stall before answering (longer than the client's timeout: a timeout)
    retry_after: int | None = None
    method: str = "POST"
    times: int = 1
    query: str | None = None


class _Selector:
    """Label selector matching for PDBs (matchLabels and matchExpressions In/NotIn/Exists/DoesNotExist)."""

    @staticmethod
    def matches(sel: dict[str, Any] | None, labels: dict[str, str]) -> bool:
        if sel is None:
            return False
        for k, v in (sel.get("matchLabels") or {}).items():
            if labels.get(k) != v:
                return False
        for e in sel.get("matchExpressions") or []:
            k, op, vals = e.get("key"), e.get("operator"), e.get("values") or []
            if op == "In" and labels.get(k) not in vals:
                return False
            if op == "NotIn" and k in labels and labels[k] in vals:
                return False
            if op == "Exists" and k not in labels:
                return False
            if op == "DoesNotExist" and k in labels:
                return False
        return True


class FakeApiServer:
    """Start with `with FakeApiServer(objects) as api:`; `api.kubeconfig(tmp_path)` writes a kubeconfig."""

    def __init__(self, objects: Iterable[dict[str, Any]] = (), *, token: str = "test-token",
                 termination_seconds: float = 0.0, pv_controller: bool = True,
                 pv_controller_delay: float = 0.0) -> None:
        self.token = token
        # An evicted pod first gets a deletionTimestamp and is removed this many seconds later (its graceful
        # termination, as the kubelet does it); 0 removes it at once.
        self.termination_seconds = termination_seconds
        self.pv_controller = pv_controller  # simulate the PV controller and a provisioner (see the module doc)
        self.pv_controller_delay = pv_controller_delay
        self.lock = threading.Condition()
        self.rv = 1000
        self.compacted = 0  # resourceVersions at or below this are gone (watch → 410)
        self.store: dict[str, dict[tuple[str, str], dict[str, Any]]] = {r: {} for r in RESOURCES}
        self.leases: dict[tuple[str, str], dict[str, Any]] = {}  # (namespace, name) → Lease
        self.events: list[tuple[int, str, str, dict[str, Any]]] = []  # (rv, resource, type, object)
        self.requests: list[dict[str, Any]] = []
        self.faults: list[Fault] = []
        self.watch_generation = 0
        self.stopping = False
        for obj in objects:
            self.create(obj, record=False)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> FakeApiServer:
        server = _QuietServer(("127.0.0.1", 0), _handler(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        with self.lock:
            self.stopping = True
            self.lock.notify_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> FakeApiServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def request(self, method: str, path: str, body: Any = None, *, token: str | None = None,
                ctype: str = "application/json") -> tuple[int, Any]:
        """(status, JSON body) of a raw request, for tests that speak to the server directly."""
        import urllib.error
        import urllib.request

        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode() if body is not None else None,
                                     method=method, headers={"Content-Type": ctype,
                                                             "Authorization": f"Bearer {token or self.token}"})
        try:
            with urllib.request.urlopen(req) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def kubeconfig(self, directory, name: str = "kubeconfig") -> str:
        """Write a kubeconfig pointing at this server (context `fake`) and return its path."""
        import yaml

        path = f"{directory}/{name}"
        cfg = {
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {"token": self.token}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
        }
        with open(path, "w", encoding="utf-8") as fh:
            yaml.safe_dump(cfg, fh)
        return path

    # --- state -------------------------------------------------------------------------------------

    def _bump(self, resource: str, typ: str, obj: dict[str, Any]) -> None:
        self.rv += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
        self.events.append((self.rv, resource, typ, copy.deepcopy(obj)))
        self.lock.notify_all()

    @staticmethod
    def _key(obj: dict[str, Any], namespaced: bool) -> tuple[str, str]:
        meta = obj.get("metadata") or {}
        return (meta.get("namespace") or "default") if namespaced else "", meta["name"]

    def create(self, obj: dict[str, Any], *, record: bool = True) -> dict[str, Any]:
        """Add an object (kind from `obj["kind"]`); a uid and creationTimestamp are filled in when missing."""
        resource = RESOURCE_OF_KIND[obj["kind"]]
        namespaced = RESOURCES[resource][3]
        obj = copy.deepcopy(obj)
        obj.pop("kind", None)
        obj.pop("apiVersion", None)
        meta = obj.setdefault("metadata", {})
        if namespaced:
            meta.setdefault("namespace", "default")
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        with self.lock:
            self.store[resource][self._key(obj, namespaced)] = obj
            self._bump(resource, "ADDED", obj)
        return obj

    def update(self, kind: str, name: str, namespace: str = "default", **changes: Any) -> dict[str, Any]:
        """Apply `changes` (dotted paths like `spec.nodeName`) to a stored object and emit MODIFIED."""
        resource = RESOURCE_OF_KIND[kind]
        namespaced = RESOURCES[resource][3]
        with self.lock:
            obj = self.store[resource][(namespace if namespaced else "", name)]
            for path, value in changes.items():
                parts = path.split("__") if "__" in path else path.split(".")
                cur = obj
                for p in parts[:-1]:
                    cur = cur.setdefault(p, {})
                cur[parts[-1]] = value
            self._bump(resource, "MODIFIED", obj)
            return obj

    def delete(self, kind: str, name: str, namespace: str = "default") -> None:
        resource = RESOURCE_OF_KIND[kind]
        namespaced = RESOURCES[resource][3]
        with self.lock:
            obj = self.store[resource].pop((namespace if namespaced else "", name))
            self._bump(resource, "DELETED", obj)

    def finish_termination(self, namespace: str, name: str, uid: str | None) -> None:
        """The kubelet has stopped an evicted pod: remove it (unless it is already gone or was replaced)."""
        with self.lock:
            obj = self.store["pods"].get((namespace, name))
            if obj is not None and obj["metadata"].get("uid") == uid:
                self.store["pods"].pop((namespace, name))
                self._bump("pods", "DELETED", obj)

    def get(self, kind: str, name: str, namespace: str = "default") -> dict[str, Any] | None:
        resource = RESOURCE_OF_KIND[kind]
        namespaced = RESOURCES[resource][3]
        with self.lock:
            obj = self.store[resource].get((namespace if namespaced else "", name))
            return copy.deepcopy(obj) if obj else None

    def lease(self, name: str, namespace: str = "kube-system") -> dict[str, Any] | None:
        with self.lock:
            obj = self.leases.get((namespace, name))
            return copy.deepcopy(obj) if obj else None

    def objects(self, kind: str) -> list[dict[str, Any]]:
        with self.lock:
            return [copy.deepcopy(o) for o in self.store[RESOURCE_OF_KIND[kind]].values()]

    # --- the PV controller and a provisioner (simulated) ---------------------------------------------

    def _after_volume_patch(self, resource: str, obj: dict[str, Any]) -> None:
        """Called (lock held) after a PV or PVC was patched: schedule what the controllers would do."""
        if not self.pv_controller:
            return
        name = obj["metadata"]["name"]
        if resource == "persistentvolumes":
            ref = (obj.get("spec") or {}).get("claimRef") or {}
            if not ref.get("name") or (obj.get("status") or {}).get("phase") == "Bound":
                return
            action, args = self._bind_volume, (name,)
        else:
            node = ((obj.get("metadata") or {}).get("annotations") or {}).get(
                "volume.kubernetes.io/selected-node")
            if not node or (obj.get("spec") or {}).get("volumeName"):
                return
            action, args = self._provision, (obj["metadata"].get("namespace", "default"), name)
        if self.pv_controller_delay > 0:
            timer = threading.Timer(self.pv_controller_delay, action, args=args)
            timer.daemon = True
            timer.start()
        else:
            action(*args)

    def _bind_volume(self, pv_name: str) -> None:
        """The PV controller: a PV pre-bound to an unbound claim (claimRef, uid matching when set) binds it."""
        with self.lock:
            pv = self.store["persistentvolumes"].get(("", pv_name))
            ref = ((pv or {}).get("spec") or {}).get("claimRef") or {}
            pvc = self.store["persistentvolumeclaims"].get((ref.get("namespace") or "default", ref.get("name", "")))
            if pv is None or pvc is None or (ref.get("uid") and ref["uid"] != pvc["metadata"].get("uid")):
                return
            spec = pvc.setdefault("spec", {})
            if spec.get("volumeName") not in (None, "", pv_name):
                return
            spec["volumeName"] = pv_name
            pvc["metadata"].setdefault("annotations", {})["pv.kubernetes.io/bind-completed"] = "yes"
            pvc["status"] = {"phase": "Bound", "accessModes": (pv.get("spec") or {}).get("accessModes", []),
                             "capacity": (pv.get("spec") or {}).get("capacity", {})}
            pv.setdefault("status", {})["phase"] = "Bound"
            ref.setdefault("uid", pvc["metadata"].get("uid"))
            self._bump("persistentvolumes", "MODIFIED", pv)
            self._bump("persistentvolumeclaims", "MODIFIED", pvc)

    def _provision(self, namespace: str, name: str) -> None:
        """An external provisioner: a claim with a selected node gets a new PV there, then the PV controller
        binds it. Classes without a provisioner (or `kubernetes.io/no-provisioner`) are left alone."""
        with self.lock:
            pvc = self.store["persistentvolumeclaims"].get((namespace, name))
            if pvc is None:
                return
            meta, spec = pvc["metadata"], pvc.get("spec") or {}
            cls = (meta.get("annotations") or {}).get("volume.beta.kubernetes.io/storage-class",
                                                      spec.get("storageClassName"))
            sc = self.store["storageclasses"].get(("", cls or ""))
            node = (meta.get("annotations") or {}).get("volume.kubernetes.io/selected-node")
            if sc is None or sc.get("provisioner") in (None, "", "kubernetes.io/no-provisioner") or not node:
                return
            pv_name = f"pvc-{meta.get('uid')}"
            pv = {"metadata": {"name": pv_name, "uid": str(uuid.uuid4()),
                               "annotations": {"pv.kubernetes.io/provisioned-by": sc["provisioner"]}},
                  "spec": {"capacity": {"storage": ((spec.get("resources") or {}).get("requests") or {}).get(
                               "storage", "0")},
                           "accessModes": spec.get("accessModes", []), "storageClassName": cls,
                           "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": namespace,
                                        "name": name, "uid": meta.get("uid")},
                           "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                               {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}},
                  "status": {"phase": "Available"}}
            self.store["persistentvolumes"][("", pv_name)] = pv
            self._bump("persistentvolumes", "ADDED", pv)
        self._bind_volume(pv_name)

    def compact(self, drop_watches: bool = True) -> None:
        """Forget every event so far (a watch from an older resourceVersion gets 410) and end open watches."""
        with self.lock:
            self.rv += 1
            self.compacted = self.rv
            self.events.clear()
            if drop_watches:
                self.watch_generation += 1
            self.lock.notify_all()

    def fail(self, path: str, code: int = 500, *, times: int = 1, delay: float = 0.0,
             retry_after: int | None = None, method: str = "POST", query: str | None = None) -> None:
        """Make the next `times` requests whose path matches the regex `path` (and query string the regex
        `query`, when given) fail (or stall)."""
        with self.lock:
            self.faults.append(Fault(path, code, delay, retry_after, method, times, query))

    def calls(self, method: str | None = None, path: str | None = None) -> list[dict[str, Any]]:
        with self.lock:
            return [r for r in self.requests
                    if (method is None or r["method"] == method) and (path is None or re.search(path, r["path"]))]

    def _fault(self, method: str, path: str, query: str = "") -> Fault | None:
        with self.lock:
            for f in self.faults:
                if (f.method == method and re.search(f.path, path) and f.times > 0
                        and (f.query is None or re.search(f.query, query))):
                    f.times -= 1
                    if f.times == 0:
                        self.faults.remove(f)
                    return f
        return None


class _QuietServer(ThreadingHTTPServer):
    """Clients hanging up (timeouts, pool shutdown) are normal here, not errors worth a traceback."""

    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


_GO_TRUE = {"1", "t", "T", "TRUE", "true", "True"}  # Go's strconv.ParseBool (the Python client sends "True")
_COLLECTION = re.compile(r"^(?P<prefix>/api/v1|/apis/[^/]+/[^/]+)(?:/namespaces/(?P<ns>[^/]+))?/(?P<res>[a-z]+)$")
_ONE_POD = re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods/(?P<name>[^/]+)$")
_ONE_VOLUME = re.compile(
    r"^/api/v1/(?:persistentvolumes|namespaces/(?P<ns>[^/]+)/persistentvolumeclaims)/(?P<name>[^/]+)$")
_MERGE_PATCHES = ("application/merge-patch+json", "application/strategic-merge-patch+json")


def _merge_patch(target: dict[str, Any], patch: dict[str, Any]) -> None:
    """RFC 7386 JSON merge patch, in place: null deletes, objects merge, everything else replaces."""
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        elif isinstance(v, dict) and isinstance(target.get(k), dict):
            _merge_patch(target[k], v)
        else:
            target[k] = copy.deepcopy(v)
_LEASES = re.compile(r"^/apis/coordination\.k8s\.io/v1/namespaces/(?P<ns>[^/]+)/leases(?:/(?P<name>[^/]+))?$")
_SUBRESOURCE = re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods/(?P<name>[^/]+)/(?P<sub>binding|eviction)$")


def _handler(api: FakeApiServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "kplace-fake-apiserver"

        def setup(self) -> None:
            super().setup()
            # Headers and body go out in two writes; without TCP_NODELAY each response waits on a delayed ACK.
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, *args) -> None:  # quiet
            pass

        # --- plumbing -----------------------------------------------------------------------------

        def _send(self, code: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _status(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None,
                    headers: dict[str, str] | None = None) -> None:
            self._send(code, status(code, reason, message, details), headers)

        def _begin(self) -> tuple[str, dict[str, list[str]], bytes] | None:
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            with api.lock:
                api.requests.append({"method": self.command, "path": parts.path, "query": query,
                                     "body": body.decode("utf-8", "replace")})
            if self.headers.get("Authorization") != f"Bearer {api.token}":
                self._status(401, "Unauthorized", "Unauthorized")
                return None
            fault = api._fault(self.command, parts.path, parts.query)
            if fault is not None:
                if fault.delay:
                    time.sleep(fault.delay)
                    if not fault.code:
                        self.close_connection = True
                        return None
                if fault.code:
                    reasons = {429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable",
                               504: "Timeout"}
                    headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else None
                    self._status(fault.code, reasons.get(fault.code, "InternalError"), "injected fault",
                                 headers=headers)
                    return None
            return parts.path, query, body

        # --- verbs --------------------------------------------------------------------------------

        def do_GET(self) -> None:
            begun = self._begin()
            if begun is None:
                return
            path, query, _ = begun
            if path == "/version":
                self._send(200, {"major": "1", "minor": "35", "gitVersion": "v1.35.0-kplace-fake"})
                return
            lease = _LEASES.match(path)
            if lease is not None and lease.group("name"):
                with api.lock:
                    obj = copy.deepcopy(api.leases.get((lease.group("ns"), lease.group("name"))))
                if obj is None:
                    self._status(404, "NotFound", f'leases.coordination.k8s.io "{lease.group("name")}" not found',
                                 {"name": lease.group("name"), "group": "coordination.k8s.io", "kind": "leases"})
                else:
                    self._send(200, obj)
                return
            one = _ONE_POD.match(path)
            if one is not None:
                with api.lock:
                    pod = api.store["pods"].get((one.group("ns"), one.group("name")))
                if pod is None:
                    self._status(404, "NotFound", f'pods "{one.group("name")}" not found',
                                 {"name": one.group("name"), "kind": "pods"})
                else:
                    self._send(200, pod)
                return
            vol = _ONE_VOLUME.match(path)
            if vol is not None:
                resource, key = self._volume_key(vol)
                with api.lock:
                    obj = copy.deepcopy(api.store[resource].get(key))
                if obj is None:
                    self._status(404, "NotFound", f'{resource} "{key[1]}" not found',
                                 {"name": key[1], "kind": resource})
                else:
                    kind, api_version = RESOURCES[resource][:2]
                    self._send(200, {"kind": kind, "apiVersion": api_version, **obj})
                return
            m = _COLLECTION.match(path)
            resource = m.group("res") if m else None
            if not m or resource not in RESOURCES or RESOURCES[resource][2] != m.group("prefix"):
                self._status(404, "NotFound", "the server could not find the requested resource")
                return
            if m.group("ns") and not RESOURCES[resource][3]:
                self._status(404, "NotFound", "the server could not find the requested resource")
                return
            if (query.get("watch") or [""])[0] in _GO_TRUE:
                self._watch(resource, m.group("ns"), query)
            else:
                self._list(resource, m.group("ns"), query)

        def _list(self, resource: str, ns: str | None, query: dict[str, list[str]]) -> None:
            kind, api_version = RESOURCES[resource][:2]
            try:
                limit = int((query.get("limit") or ["0"])[0])
            except ValueError:
                self._status(400, "BadRequest", "invalid limit")
                return
            token = (query.get("continue") or [""])[0]
            after: tuple[str, str] | None = None
            with api.lock:
                rv = api.rv
                if token:
                    try:
                        tok = json.loads(base64.urlsafe_b64decode(token.encode()))
                        after, tok_rv = (tok["ns"], tok["name"]), int(tok["rv"])
                    except (ValueError, KeyError, TypeError):
                        self._status(400, "BadRequest", "continue key is not valid: incorrect encoded start "
                                     "resourceVersion (version meta.k8s.io/v1)")
                        return
                    if tok_rv < api.compacted:
                        self._status(410, "Expired", "The provided continue parameter is too old to display a "
                                     "consistent list result. You can start a new list without the continue "
                                     "parameter.")
                        return
                    rv = tok_rv
                keys = sorted(k for k in api.store[resource] if ns is None or k[0] == ns)
                if after is not None:
                    keys = [k for k in keys if k > after]
                more = bool(limit) and len(keys) > limit
                page = keys[:limit] if limit else keys
                items = [copy.deepcopy(api.store[resource][k]) for k in page]
            meta: dict[str, Any] = {"resourceVersion": str(rv)}
            if more:
                last = page[-1]
                meta["continue"] = base64.urlsafe_b64encode(
                    json.dumps({"ns": last[0], "name": last[1], "rv": rv}).encode()).decode()
                meta["remainingItemCount"] = len(keys) - len(page)
            self._send(200, {"kind": f"{kind}List", "apiVersion": api_version, "metadata": meta, "items": items})

        def _watch(self, resource: str, ns: str | None, query: dict[str, list[str]]) -> None:
            kind, api_version, _, _ = RESOURCES[resource]
            try:
                since = int((query.get("resourceVersion") or ["0"])[0] or 0)
                timeout = float((query.get("timeoutSeconds") or ["30"])[0])
            except ValueError:
                self._status(400, "BadRequest", "invalid resourceVersion or timeoutSeconds")
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()

            def chunk(payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode() + b"\n"
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            deadline = time.monotonic() + timeout
            try:
                with api.lock:
                    generation = api.watch_generation
                    gone = since and since < api.compacted
                if gone:
                    chunk({"type": "ERROR", "object": status(
                        410, "Expired", f"too old resource version: {since} ({api.compacted})")})
                else:
                    cursor = since
                    while True:
                        with api.lock:
                            if api.watch_generation != generation:
                                break  # compact(drop_watches=True): this watch is closed
                            fresh = [e for e in api.events if e[0] > cursor and e[1] == resource
                                     and (ns is None or (e[3].get("metadata") or {}).get("namespace") == ns)]
                            if not fresh:
                                left = deadline - time.monotonic()
                                if left <= 0 or api.stopping:
                                    break
                                api.lock.wait(min(left, 0.2))
                                continue
                        for ev_rv, _, typ, obj in fresh:
                            cursor = ev_rv
                            chunk({"type": typ, "object": {"kind": kind, "apiVersion": api_version, **obj}})
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        @staticmethod
        def _volume_key(m: re.Match) -> tuple[str, tuple[str, str]]:
            if m.group("ns") is None:
                return "persistentvolumes", ("", m.group("name"))
            return "persistentvolumeclaims", (m.group("ns"), m.group("name"))

        def do_PATCH(self) -> None:
            begun = self._begin()
            if begun is None:
                return
            path, query, raw = begun
            m = _ONE_VOLUME.match(path)
            if m is None:
                self._status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
                return
            ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            if ctype not in _MERGE_PATCHES:
                self._status(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - "
                             f"accepted media types include: {', '.join(_MERGE_PATCHES)}")
                return
            read = self._read_body(query, raw, "error decoding patch", "a merge patch must be a JSON object")
            if read is None:
                return
            dry, patch = read
            resource, key = self._volume_key(m)
            kind, api_version = RESOURCES[resource][:2]
            with api.lock:
                obj = api.store[resource].get(key)
                if obj is None:
                    self._status(404, "NotFound", f'{resource} "{key[1]}" not found',
                                 {"name": key[1], "kind": resource})
                    return
                want_rv = (patch.get("metadata") or {}).get("resourceVersion")
                if want_rv is not None and want_rv != obj["metadata"].get("resourceVersion"):
                    self._status(409, "Conflict", f'Operation cannot be fulfilled on {resource} "{key[1]}": the object '
                                 "has been modified; please apply your changes to the latest version and try again",
                                 {"name": key[1], "kind": resource})
                    return
                new = copy.deepcopy(obj)
                _merge_patch(new, patch)
                new["metadata"]["name"], new["metadata"]["uid"] = obj["metadata"]["name"], obj["metadata"].get("uid")
                if not dry:
                    api.store[resource][key] = new
                    api._bump(resource, "MODIFIED", new)
                    api._after_volume_patch(resource, new)
                body = {"kind": kind, "apiVersion": api_version, **copy.deepcopy(new)}
            self._send(200, body)

        def do_POST(self) -> None:
            begun = self._begin()
            if begun is None:
                return
            path, query, raw = begun
            lease = _LEASES.match(path)
            if lease is not None and not lease.group("name"):
                self._lease_write(lease.group("ns"), None, raw)
                return
            m = _SUBRESOURCE.match(path)
            if not m:
                self._status(404, "NotFound", "the server could not find the requested resource")
                return
            read = self._read_body(query, raw, "couldn't get version/kind; json parse error",
                                   "Object 'Kind' is missing in request body")
            if read is None:
                return
            dry, body = read
            ns, name = m.group("ns"), m.group("name")
            if m.group("sub") == "binding":
                self._binding(ns, name, body, dry)
            else:
                self._eviction(ns, name, body, dry)

        def do_PUT(self) -> None:
            begun = self._begin()
            if begun is None:
                return
            path, _, raw = begun
            lease = _LEASES.match(path)
            if lease is None or not lease.group("name"):
                self._status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
                return
            self._lease_write(lease.group("ns"), lease.group("name"), raw)

        def _lease_write(self, ns: str, name: str | None, raw: bytes) -> None:
            """POST (name None) or PUT of a Lease, with the API server's 404/409 answers."""
            try:
                body = json.loads(raw or b"null")
            except ValueError as exc:
                self._status(400, "BadRequest", f"json parse error: {exc}")
                return
            if not isinstance(body, dict) or body.get("kind") != "Lease" or \
                    body.get("apiVersion") != "coordination.k8s.io/v1":
                self._status(400, "BadRequest", "the object provided is unrecognized (must be of type Lease)")
                return
            meta = body.setdefault("metadata", {})
            if name is not None and meta.get("name") != name:
                self._status(400, "BadRequest", "the name of the object does not match the name on the URL")
                return
            name = meta.get("name")
            details = {"name": name, "group": "coordination.k8s.io", "kind": "leases"}
            with api.lock:
                old = api.leases.get((ns, name))
                if name is None or "/" in name:
                    self._status(422, "Invalid", "Lease is invalid: metadata.name: Required value", details)
                    return
                if old is None and self.command == "PUT":
                    self._status(404, "NotFound", f'leases.coordination.k8s.io "{name}" not found', details)
                    return
                if old is not None and self.command == "POST":
                    self._status(409, "AlreadyExists", f'leases.coordination.k8s.io "{name}" already exists', details)
                    return
                want = meta.get("resourceVersion")
                if old is not None and want and want != old["metadata"]["resourceVersion"]:
                    self._status(409, "Conflict", f'Operation cannot be fulfilled on leases.coordination.k8s.io '
                                 f'"{name}": the object has been modified; please apply your changes to the latest '
                                 "version and try again", details)
                    return
                meta.update(namespace=ns, uid=(old or {}).get("metadata", {}).get("uid") or str(uuid.uuid4()))
                api.rv += 1
                meta["resourceVersion"] = str(api.rv)
                api.leases[(ns, name)] = copy.deepcopy(body)
            self._send(201 if self.command == "POST" else 200, body)

        def _read_body(self, query: dict[str, list[str]], raw: bytes, bad_json: str,
                       not_object: str) -> tuple[bool, dict[str, Any]] | None:
            """(dry run?, JSON object) of a write request, or None after answering 400 as the API server does."""
            dry = query.get("dryRun") or []
            if any(v != "All" for v in dry):
                self._status(400, "BadRequest", f"Invalid dry run value: {dry!r}: valid values are 'All'")
                return None
            try:
                body = json.loads(raw or b"null")
            except ValueError as exc:
                self._status(400, "BadRequest", f"{bad_json}: {exc}")
                return None
            if not isinstance(body, dict):
                self._status(400, "BadRequest", not_object)
                return None
            return bool(dry), body

        def _binding(self, ns: str, name: str, body: dict[str, Any], dry: bool) -> None:
            if body.get("kind") != "Binding" or body.get("apiVersion") != "v1":
                self._status(400, "BadRequest", f"the object provided is unrecognized (must be of type Binding): "
                             f"{body.get('apiVersion')}, Kind={body.get('kind')}")
                return
            meta = body.get("metadata") or {}
            if meta.get("name") != name:
                self._status(400, "BadRequest", "name in URL does not match name in Binding object")
                return
            if meta.get("namespace") not in (None, "", ns):
                self._status(400, "BadRequest", "the namespace of the provided object does not match the namespace "
                             "sent on the request")
                return
            target = body.get("target")
            details = {"name": name, "kind": "Binding"}
            if not isinstance(target, dict) or not target.get("name"):
                self._status(422, "Invalid", f'Binding "{name}" is invalid: target.name: Required value',
                             {**details, "causes": [{"reason": "FieldValueRequired", "message": "Required value",
                                                     "field": "target.name"}]})
                return
            if target.get("kind") not in (None, "", "Node"):
                self._status(422, "Invalid", f'Binding "{name}" is invalid: target.kind: Unsupported value: '
                             f'"{target.get("kind")}": supported values: "Node"',
                             {**details, "causes": [{"reason": "FieldValueNotSupported", "field": "target.kind"}]})
                return
            conflict = {"name": name, "kind": "pods/binding"}
            with api.lock:
                pod = api.store["pods"].get((ns, name))
                if pod is None:
                    self._status(404, "NotFound", f'pods "{name}" not found', {"name": name, "kind": "pods"})
                    return
                pmeta = pod["metadata"]
                if meta.get("uid") and meta["uid"] != pmeta.get("uid"):
                    self._status(409, "Conflict", f'Operation cannot be fulfilled on Pod "{name}": Precondition '
                                 f'failed: UID in precondition: {meta["uid"]}, UID in object meta: {pmeta.get("uid")}',
                                 {"name": name, "kind": "Pod"})
                    return
                if pmeta.get("deletionTimestamp"):
                    self._status(409, "Conflict", f'Operation cannot be fulfilled on pods/binding "{name}": pod '
                                 f"{name} is being deleted, cannot be assigned to a host", conflict)
                    return
                if (pod.get("spec") or {}).get("nodeName"):
                    self._status(409, "Conflict", f'Operation cannot be fulfilled on pods/binding "{name}": pod '
                                 f'{name} is already assigned to node "{pod["spec"]["nodeName"]}"', conflict)
                    return
                if not dry:
                    pod.setdefault("spec", {})["nodeName"] = target["name"]
                    conds = pod.setdefault("status", {}).setdefault("conditions", [])
                    conds[:] = [c for c in conds if c.get("type") != "PodScheduled"]
                    conds.append({"type": "PodScheduled", "status": "True"})
                    api._bump("pods", "MODIFIED", pod)
            self._status(201, "", "")

        def _eviction(self, ns: str, name: str, body: dict[str, Any], dry: bool) -> None:
            if body.get("kind") != "Eviction" or body.get("apiVersion") not in ("policy/v1", "policy/v1beta1"):
                self._status(400, "BadRequest", f"the object provided is unrecognized (must be of type Eviction): "
                             f"{body.get('apiVersion')}, Kind={body.get('kind')}")
                return
            if (body.get("metadata") or {}).get("name") != name:
                self._status(400, "BadRequest", "name in URL does not match name in Eviction object")
                return
            opts = body.get("deleteOptions") or {}
            dry = dry or "All" in (opts.get("dryRun") or [])
            with api.lock:
                pod = api.store["pods"].get((ns, name))
                if pod is None:
                    self._status(404, "NotFound", f'pods "{name}" not found', {"name": name, "kind": "pods"})
                    return
                want_uid = (opts.get("preconditions") or {}).get("uid")
                if want_uid and want_uid != pod["metadata"].get("uid"):
                    self._status(409, "Conflict", f'Operation cannot be fulfilled on Pod "{name}": Precondition '
                                 f"failed: UID in precondition: {want_uid}, UID in object meta: "
                                 f"{pod['metadata'].get('uid')}", {"name": name, "kind": "Pod"})
                    return
                labels = pod["metadata"].get("labels") or {}
                pdbs = [p for (pns, _), p in api.store["poddisruptionbudgets"].items()
                        if pns == ns and _Selector.matches((p.get("spec") or {}).get("selector"), labels)]
                if len(pdbs) > 1:
                    self._status(500, "InternalError", "This pod has more than one PodDisruptionBudget, which the "
                                 "eviction subresource does not support.")
                    return
                if pdbs:
                    pdb = pdbs[0]
                    allowed = int((pdb.get("status") or {}).get("disruptionsAllowed") or 0)
                    if allowed <= 0:
                        pname = pdb["metadata"]["name"]
                        self._status(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's "
                                     "disruption budget.",
                                     {"causes": [{"reason": "DisruptionBudget", "message": f"The disruption budget "
                                                  f"{pname} needs more healthy pods"}]})
                        return
                    if not dry:
                        pdb.setdefault("status", {})["disruptionsAllowed"] = allowed - 1
                        api._bump("poddisruptionbudgets", "MODIFIED", pdb)
                if not dry and api.termination_seconds > 0:
                    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
                    api._bump("pods", "MODIFIED", pod)
                    uid = pod["metadata"].get("uid")
                    timer = threading.Timer(api.termination_seconds, api.finish_termination, args=(ns, name, uid))
                    timer.daemon = True  # never keeps a test process alive
                    timer.start()
                elif not dry:
                    api.store["pods"].pop((ns, name))
                    api._bump("pods", "DELETED", pod)
            self._status(201, "", "")

    return Handler
