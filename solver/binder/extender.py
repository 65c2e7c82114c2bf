"""`kplace extender serve`: kube-scheduler's HTTP extender protocol over kplace's global plan.

kube-scheduler calls `POST {urlPrefix}/filter`, `/prioritize` and `/bind` for each pod. The extender types
have no json tags, so the wire keys are Go's field names:

- ExtenderArgs `{Pod, Nodes: v1.NodeList | null, NodeNames: [string] | null}` (filter, prioritize);
- ExtenderFilterResult `{Nodes, NodeNames, FailedNodes, FailedAndUnresolvableNodes, Error}`;
- HostPriorityList `[{Host, Score}]`, scores 0..10;
- ExtenderBindingArgs `{PodName, PodNamespace, PodUID, Node}` → ExtenderBindingResult `{Error}`.

The extender holds the global plan for every pending pod it has seen (from the state, and from the calls):
a pod it has not seen triggers a re-plan (`solver.schedule.decide`, engine then verifier). Prioritize gives
the planned node 10 and every other node 0. Filter keeps out nodes where the plan reserves room for *other*
pending pods when this pod would not fit beside them (resources or pod slots); the planned node and nodes
it does not know always pass. Bind POSTs the Binding through the API (`--kubeconfig`) and records the pod
as bound — only for a pending pod it has seen (with its UID), to an existing node, where the plan puts it.
A malformed request gets HTTP 400 with `{"Error": ...}` (deeply nested JSON too); an unexpected failure 500;
the server never stops because of a request.

Each call is logged (JSON lines, `kplace.extender`): filter's kept and failed nodes and prioritize's planned node at
debug, each Binding at info; `GET /metrics` counts the calls and Bindings (Prometheus text).

The server (`ExtenderServer`): TLS with optional client-certificate verification (`client_ca`, as
kube-scheduler's extender `tlsConfig` presents one) and an optional bearer token, both checked before a verb
runs; TLS handshakes run in the connection's own thread with a deadline (an idle TCP connection never stalls
the others); a listen backlog of `BACKLOG`; bodies over `MAX_BODY` are refused unread; a connection that sends
nothing for `IDLE` seconds is closed.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
from kplace.models.k8s import Pod
from kplace.models.snapshot import ClusterSnapshot, finalize
from pydantic import ValidationError

from .heap import trim_heap

log = logging.getLogger("kplace.extender")

MAX_SCORE = 10  # MaxExtenderPriority
MAX_BODY = 64 * 1024 * 1024  # a full NodeList of 5,000 nodes is about 30 MB
BACKLOG = 1024
IDLE = 10.0  # seconds a connection may send nothing (headers or body) before it is closed


def _event(level: int, msg: str, **fields: Any) -> None:
    log.log(level, msg, extra={"fields": fields})


class ExtenderMetrics:
    """Prometheus counters of one extender, in a registry of its own."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter

        self.registry = CollectorRegistry()
        self.requests = Counter("kplace_extender_requests", "Extender calls by verb (filter, prioritize, bind) and "
                                "HTTP status code.", ["verb", "code"], registry=self.registry)
        self.bindings = Counter("kplace_extender_bindings", "Bindings asked for by kube-scheduler, by result "
                                "(bound, refused, failed).", ["result"], registry=self.registry)
        self.replans = Counter("kplace_extender_replans", "Global plans made.", registry=self.registry)

    def text(self) -> tuple[bytes, str]:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class BadRequest(Exception):
    """The request is not what kube-scheduler sends (HTTP 400)."""


@dataclass
class ExtenderOptions:
    engine: str = "cpsat"
    time_limit: float = 1.0
    workers: int = 2
    refresh: float = 30.0  # seconds between re-reads of a live cluster (0: never)


class Extender:
    """The plan and the protocol; thread-safe (one lock around the state)."""

    def __init__(self, snapshot: ClusterSnapshot, config, options: ExtenderOptions | None = None, *,
                 client=None, reload=None) -> None:
        self.opts = options or ExtenderOptions()
        self.config = config
        self.client = client
        self.reload = reload  # () -> ClusterSnapshot, for live state
        self.lock = threading.RLock()
        self._set_base(snapshot)
        self.plan: dict[str, str | None] = {}
        self.index = None
        self.dirty = True
        self.replans = 0
        self.metrics = ExtenderMetrics()

    # --- state -------------------------------------------------------------------------------------

    def _set_base(self, snapshot: ClusterSnapshot) -> None:
        self.base = snapshot
        self.loaded_at = time.monotonic()
        self.pending: dict[str, Pod] = {f"{p.metadata.namespace}/{p.metadata.name}": p
                                        for p in snapshot.pending_pods()}
        self.bound: dict[str, Pod] = {}  # bound by this extender since the state was read

    def _maybe_reload(self) -> None:
        if self.reload is None or not self.opts.refresh or time.monotonic() - self.loaded_at < self.opts.refresh:
            return
        seen = dict(self.pending)
        self._set_base(self.reload())
        for key, pod in seen.items():  # pods seen in calls stay, unless the cluster now shows them bound
            current = next((p for p in self.base.pods if f"{p.metadata.namespace}/{p.metadata.name}" == key), None)
            if current is None or not current.spec.node_name:
                self.pending.setdefault(key, pod)
        self.dirty = True

    def see(self, pod: Pod) -> str:
        """Record a pod from a call; a pod not seen before (or changed uid) makes the plan stale."""
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        known = self.pending.get(key)
        if known is None or known.metadata.uid != pod.metadata.uid:
            self.bound.pop(key, None)
            self.pending[key] = pod
            self.dirty = True
        return key

    def _snapshot(self) -> ClusterSnapshot:
        base = self.base
        pending_keys = set(self.pending) | set(self.bound)
        pods = [p for p in base.pods if f"{p.metadata.namespace}/{p.metadata.name}" not in pending_keys]
        pods.extend(self.bound.values())
        pods.extend(self.pending.values())
        snap = replace(base, pods=pods, warnings=[])
        return finalize(snap, {})

    def replan(self) -> None:
        from kplace.models import compile_index
        from kplace.solver.schedule import decide

        started = time.perf_counter()
        index = compile_index(self._snapshot())
        opts = None
        if self.opts.engine == "cpsat":
            from kplace.solver.cpsat import CpsatOptions

            opts = CpsatOptions(time_limit=self.opts.time_limit, workers=self.opts.workers)
        plan = decide(index, self.config, self.opts.engine, cpsat_options=opts)
        self.plan = {p.pod: p.node for p in plan.placements}
        self.index = index
        self.dirty = False
        self.replans += 1
        self.metrics.replans.inc()
        # Per node: what the plan reserves for pending pods (resources and pod slots).
        self.reserved = np.zeros_like(index.requested)
        self.reserved_pods = np.zeros(len(index.nodes), dtype=np.int64)
        for key, node in self.plan.items():
            pi = index.pod_by_key.get(key)
            if node is None or pi is None or node not in index.node_id:
                continue
            n = index.node_id[node]
            self.reserved[n] += index.pod_req[pi.idx]
            self.reserved_pods[n] += 1
        log.info("re-planned %d pending pod(s): %d placed in %.3fs", len(self.plan),
                 sum(1 for v in self.plan.values() if v), time.perf_counter() - started)
        trim_heap()

    def _ensure_plan(self) -> None:
        self._maybe_reload()
        if self.dirty or self.index is None:
            self.replan()

    # --- verbs -------------------------------------------------------------------------------------

    def filter(self, args: dict[str, Any]) -> dict[str, Any]:
        pod, names, nodes = _extender_args(args)
        with self.lock:
            key = self.see(pod)
            self._ensure_plan()
            failed = self._blocked(key, names)
        kept = [n for n in names if n not in failed]
        _event(logging.DEBUG, "filter", pod=key, uid=pod.metadata.uid, kept=kept, failed=sorted(failed),
               shape="Nodes" if nodes is not None else "NodeNames")
        result: dict[str, Any] = {"Nodes": None, "NodeNames": None, "FailedNodes": failed,
                                  "FailedAndUnresolvableNodes": {}, "Error": ""}
        if nodes is not None:
            keep = set(kept)
            result["Nodes"] = {**nodes, "items": [n for n in nodes.get("items") or []
                                                  if (n.get("metadata") or {}).get("name") in keep]}
        else:
            result["NodeNames"] = kept
        return result

    def _blocked(self, key: str, names: list[str]) -> dict[str, str]:
        index = self.index
        planned = self.plan.get(key)
        pi = index.pod_by_key.get(key)
        if pi is None:
            return {}
        req = index.pod_req[pi.idx]
        own = index.node_id.get(planned) if planned else None
        out: dict[str, str] = {}
        for name in names:
            n = index.node_id.get(name)
            if n is None or name == planned:
                continue
            reserved = self.reserved[n].copy()
            count = int(self.reserved_pods[n])
            if own == n:  # never on a node other than its own, but keep the arithmetic honest
                reserved -= req
                count -= 1
            if count <= 0:
                continue
            free = index.alloc[n] - index.requested[n] - reserved
            short = [index.resources[r] for r in np.nonzero(req > free)[0]]
            if index.pod_count[n] + count + 1 > index.max_pods[n]:
                short.append("pods")
            if short:
                out[name] = (f"kplace: reserved by the global plan for {count} other pending pod(s); "
                             f"this pod would not fit beside them ({', '.join(short)})")
        return out

    def prioritize(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        pod, names, _ = _extender_args(args)
        with self.lock:
            key = self.see(pod)
            self._ensure_plan()
            planned = self.plan.get(key)
        _event(logging.DEBUG, "prioritize", pod=key, uid=pod.metadata.uid, planned=planned, nodes=list(names))
        return [{"Host": n, "Score": MAX_SCORE if n == planned else 0} for n in names]

    def bind(self, args: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(args, dict):
            raise BadRequest("ExtenderBindingArgs must be a JSON object")
        fields = {}
        for f in ("PodName", "PodNamespace", "PodUID", "Node"):
            v = args.get(f)
            if not isinstance(v, str) or (not v and f != "PodUID"):
                raise BadRequest(f"ExtenderBindingArgs.{f} must be a non-empty string")
            fields[f] = v
        if self.client is None:
            return {"Error": "kplace extender was started without --kubeconfig, so it cannot bind"}
        from .api import post_binding
        from .kube import api
        from .outcomes import BOUND
        from .retry import RetryPolicy

        ns, name, node = fields["PodNamespace"], fields["PodName"], fields["Node"]
        refusal = self._refuse_binding(f"{ns}/{name}", fields["PodUID"], node)
        if refusal:
            self.metrics.bindings.labels("refused").inc()
            _event(logging.WARNING, f"refused to bind {ns}/{name} to {node}: {refusal}", pod=f"{ns}/{name}",
                   node=node)
            return {"Error": f"kplace extender will not bind {ns}/{name} to {node}: {refusal}"}
        core = api(self.client, "CoreV1Api")
        result, code, message, _ = post_binding(core, ns, name, fields["PodUID"] or None, node,
                                                RetryPolicy(attempts=3, timeout=3.0), time.sleep)
        if result != BOUND:
            self.metrics.bindings.labels("failed").inc()
            _event(logging.INFO, f"binding {ns}/{name} to {node} failed: HTTP {code} {message}", pod=f"{ns}/{name}",
                   node=node, code=code)
            return {"Error": f"binding {ns}/{name} to {node}: HTTP {code} {result}: {message}"}
        key = f"{ns}/{name}"
        self.metrics.bindings.labels("bound").inc()
        _event(logging.INFO, f"bound {key} to {node}", pod=key, uid=fields["PodUID"], node=node)
        with self.lock:
            pod = self.pending.pop(key, None)
            if pod is not None:
                self.bound[key] = pod.model_copy(update={"spec": pod.spec.model_copy(update={"node_name": node})})
                if self.plan.get(key) != node:
                    self.dirty = True  # bound elsewhere than planned: the reservations no longer hold
                else:
                    self.plan.pop(key, None)
                    self._commit_reservation(key, node)
        return {"Error": ""}

    def _refuse_binding(self, key: str, uid: str, node: str) -> str | None:
        """Why a Binding must not be made, or None: the extender binds only pending pods it has seen, with their
        UID, to an existing node, and only where the global plan puts them (otherwise it re-plans, so kube's retry
        of the pod meets a plan that includes it)."""
        with self.lock:
            self._ensure_plan()
            pod = self.pending.get(key)
            if pod is None:
                return "it is not a pending pod the extender has seen (a /filter call comes first)"
            if uid and pod.metadata.uid and uid != pod.metadata.uid:
                return f"its UID {uid!r} is not the pending pod's ({pod.metadata.uid!r})"
            if self.index is None or node not in self.index.node_id:
                return "no such node in the cluster"
            planned = self.plan.get(key)
            if planned != node:
                self.dirty = True
                return f"the global plan puts it {'on ' + planned if planned else 'nowhere (it stays pending)'}"
        return None

    def _commit_reservation(self, key: str, node: str) -> None:
        """The pod is bound where planned: its reservation becomes a real request on the node."""
        index = self.index
        pi = index.pod_by_key.get(key) if index is not None else None
        if pi is None or node not in index.node_id:
            self.dirty = True
            return
        n = index.node_id[node]
        self.reserved[n] -= index.pod_req[pi.idx]
        self.reserved_pods[n] -= 1
        index.requested[n] += index.pod_req[pi.idx]
        index.pod_count[n] += 1


def _extender_args(args: Any) -> tuple[Pod, list[str], dict[str, Any] | None]:
    """(Pod, node names, the NodeList when sent) from ExtenderArgs; BadRequest when malformed."""
    if not isinstance(args, dict):
        raise BadRequest("ExtenderArgs must be a JSON object")
    raw = args.get("Pod")
    if not isinstance(raw, dict):
        raise BadRequest("ExtenderArgs.Pod must be a v1.Pod object")
    try:
        pod = Pod.model_validate({**raw, "kind": "Pod"})
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"])
        raise BadRequest(f"ExtenderArgs.Pod is not a valid v1.Pod: {where}: {err['msg']}") from None
    if not pod.metadata.name:
        raise BadRequest("ExtenderArgs.Pod.metadata.name is required")
    if not pod.metadata.namespace:
        pod.metadata.namespace = "default"
    nodes = args.get("Nodes")
    names = args.get("NodeNames")
    if nodes is not None:
        if not isinstance(nodes, dict) or not isinstance(nodes.get("items") or [], list):
            raise BadRequest("ExtenderArgs.Nodes must be a v1.NodeList")
        out = []
        for i, n in enumerate(nodes.get("items") or []):
            name = (n.get("metadata") or {}).get("name") if isinstance(n, dict) else None
            if not isinstance(name, str) or not name:
                raise BadRequest(f"ExtenderArgs.Nodes.items[{i}].metadata.name is required")
            out.append(name)
        return pod, out, nodes
    if names is not None:
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise BadRequest("ExtenderArgs.NodeNames must be a list of strings")
        return pod, list(names), None
    raise BadRequest("ExtenderArgs needs Nodes or NodeNames")


class ExtenderServer:
    """The HTTP(S) server. `serve_forever()` blocks; `start()` runs it in a thread (tests); `stop()`.

    `client_ca`: verify client certificates against this CA bundle (HTTPS only); `token`: require
    `Authorization: Bearer <token>` on every POST."""

    def __init__(self, extender: Extender, address: str = "127.0.0.1", port: int = 8888, *,
                 tls_cert: str | None = None, tls_key: str | None = None, client_ca: str | None = None,
                 token: str | None = None) -> None:
        self.extender = extender
        self.tls = bool(tls_cert)
        context = None
        if tls_cert:
            import ssl

            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            context.load_cert_chain(tls_cert, tls_key)
            if client_ca:
                context.load_verify_locations(client_ca)
                context.verify_mode = ssl.CERT_REQUIRED
        elif client_ca:
            raise ValueError("client-certificate verification needs TLS (a certificate and key)")
        self.httpd = _Server((address, port), _handler(extender, token), context)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"{'https' if self.tls else 'http'}://{host}:{port}"

    def serve_forever(self) -> None:
        self.httpd.serve_forever(poll_interval=0.2)

    def start(self) -> ExtenderServer:
        self._thread = threading.Thread(target=self.serve_forever, name="extender", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _Server(ThreadingHTTPServer):
    """One thread per connection; the TLS handshake happens there, under the IDLE deadline, not in accept()."""

    daemon_threads = True
    request_queue_size = BACKLOG

    def __init__(self, address, handler, tls_context=None) -> None:
        self.tls_context = tls_context
        super().__init__(address, handler)

    def finish_request(self, request, client_address) -> None:
        if self.tls_context is not None:
            request.settimeout(IDLE)
            request = self.tls_context.wrap_socket(request, server_side=True)  # the handshake, in this thread
        super().finish_request(request, client_address)

    def handle_error(self, request, client_address) -> None:
        import ssl
        import sys

        exc = sys.exc_info()[1]
        if not isinstance(exc, (ConnectionError, TimeoutError, ssl.SSLError)):
            log.warning("connection from %s failed: %s", client_address, exc)


def _handler(extender: Extender, token: str | None = None):
    import hmac

    verbs = {"/filter": extender.filter, "/prioritize": extender.prioritize, "/bind": extender.bind}
    expected = f"Bearer {token}".encode() if token else None

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "kplace-extender"
        timeout = IDLE  # every read of the headers and the body

        def log_message(self, *args) -> None:
            pass

        verb_name: str | None = None  # the verb of the POST being answered, for the request counter

        def _send(self, code: int, body: Any) -> None:
            if self.verb_name is not None:
                extender.metrics.requests.labels(self.verb_name, str(code)).inc()
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] in ("/healthz", "/readyz", "/livez"):
                self._send(200, {"status": "ok", "pending": len(extender.pending), "replans": extender.replans})
            elif self.path.split("?", 1)[0] == "/metrics":
                data, content_type = extender.metrics.text()
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            else:
                self._send(404, {"Error": f"no such path {self.path}: POST /filter, /prioritize or /bind; "
                                 "GET /healthz or /metrics"})

        def do_POST(self) -> None:
            path = self.path.split("?", 1)[0].rstrip("/")
            verb = verbs.get(path)
            self.verb_name = path.lstrip("/") if verb is not None else None
            if expected is not None and not hmac.compare_digest(
                    (self.headers.get("Authorization") or "").encode(), expected):
                self.close_connection = True
                self._send(401, {"Error": "a valid bearer token is required"})
                return
            try:
                length = int(self.headers.get("Content-Length") or -1)
            except ValueError:
                length = -1
            if length < 0 or length > MAX_BODY:
                self.close_connection = True
                self._send(400 if length < 0 else 413, {"Error": "a JSON body with a Content-Length is required"})
                return
            raw = self.rfile.read(length)
            if verb is None:
                self._send(404, {"Error": f"no such path {path}: POST /filter, /prioritize or /bind"})
                return
            try:
                args = json.loads(raw)
            except (ValueError, UnicodeDecodeError) as exc:
                self._send(400, {"Error": f"the body is not JSON: {str(exc)[:200]}"})
                return
            except RecursionError:
                self._send(400, {"Error": "the body is JSON nested too deeply"})
                return
            try:
                result = verb(args)
            except BadRequest as exc:
                self._send(400, {"Error": str(exc)})
                return
            except Exception as exc:  # never let one request take the server down
                log.exception("%s failed", path)
                self._send(500, {"Error": f"kplace extender: {type(exc).__name__}: {exc}"})
                return
            self._send(200, result)

    return Handler
