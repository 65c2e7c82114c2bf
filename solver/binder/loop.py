"""`kplace run`: a scheduler loop over the live cluster, as a second scheduler next to kube-scheduler.

Nodes and pods are listed, then watched from the list's resourceVersion (re-listed on 410 Gone, as
client-go's reflector does); the other kinds the scheduler reads are re-listed every `resync` seconds.
Pending pods whose `spec.schedulerName` is ours, not gated and not backing off, are taken in queue order in
windows of up to `window` pods; each window is decided (`solver.schedule.decide`: engine, then the verifier)
and committed through the API (`binder.commit_api`). CP-SAT's `time_limit` is for a full window: a window of k
pods gets its k/`window` share, at least MIN_WINDOW_SECONDS (`window_budget`), so the first few pods of a burst
do not hold the rest of it back for a whole time limit. A bound pod is *assumed* on its node until the watch
shows it bound, as kube-scheduler's cache does. Pods left unplaced or whose binding failed are re-queued
with kube's backoff: 1 s, doubling per attempt, at most 10 s.

Stopping (SIGTERM, `stop()`) never leaves a window half-committed: a window still being decided is
abandoned (nothing of it was sent); a window whose commit started is finished first.

With leader election (`RunOptions.leader_election`, `leader.py`) every replica lists, watches and serves its
endpoints, but only the holder of the Lease decides and binds, as kube-scheduler. A leader that cannot renew
within the renew deadline stops sending at once (bindings not yet sent are skipped) and goes back to being a
candidate with its caches warm (kube-scheduler exits instead; kplace's state is the watch cache, which stays
right). On a clean stop the Lease is released after the last binding, so a standby takes over at its next retry.
"""

from __future__ import annotations

import copy
import json
import logging
import threading
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .heap import trim_heap
from .kube import LIST_KINDS, list_all, new_client, transport_errors
from .leader import LeaderElectionOptions, LeaderElector, LeaseLock

log = logging.getLogger("kplace.run")

WATCHED = ("Node", "Pod")
OTHER_KINDS = tuple(k for k in LIST_KINDS if k not in WATCHED)


class JsonLogFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg and the record's `fields` (structured logging)."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        out.update(getattr(record, "fields", {}) or {})
        if record.exc_info:
            out["error"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def _event(level: int, msg: str, **fields: Any) -> None:
    log.log(level, msg, extra={"fields": fields})


@dataclass
class RunOptions:
    scheduler_name: str = "kplace"
    window: int = 100
    time_limit: float = 5.0
    engine: str = "cpsat"
    workers: int = 2
    port: int = 10251
    bind_address: str = "0.0.0.0"
    max_windows: int | None = None
    concurrency: int = 8
    resync: float = 60.0
    watch_timeout: int = 300  # seconds a watch stays open before it is renewed (server side)
    dry_run: bool = False
    backoff_initial: float = 1.0
    backoff_max: float = 10.0
    idle_exit: float | None = None  # stop after this many seconds with nothing to schedule (tests, batch use)
    sync_timeout: float = 60.0
    config_path: str | None = None
    leader_election: LeaderElectionOptions | None = None  # None: no election, this replica always binds


MIN_WINDOW_SECONDS = 0.5  # CP-SAT budget of the smallest window (capped by time_limit)


def window_budget(pods: int, options: RunOptions) -> float:
    """CP-SAT seconds for a window of `pods` pods: time_limit · pods / window, at least MIN_WINDOW_SECONDS (and
    never more than time_limit)."""
    share = options.time_limit * min(pods, options.window) / max(options.window, 1)
    return min(options.time_limit, max(share, MIN_WINDOW_SECONDS))


PROBE_INTERVAL = 5.0  # seconds between API server probes (GET /version)
PROBE_TIMEOUT = 5.0
PROBE_STALE = 3 * PROBE_INTERVAL + PROBE_TIMEOUT  # /readyz fails when no probe succeeded for this long
WATCH_HEADER_TIMEOUT = 10.0  # the API server answers a watch's headers at once; the stream may then idle for minutes


def backoff_seconds(attempts: int, initial: float = 1.0, maximum: float = 10.0) -> float:
    """kube's pod backoff: initial·2^(attempts-1), at most `maximum` (1 s, 2 s, 4 s, 8 s, 10 s, ...)."""
    return min(initial * 2 ** max(attempts - 1, 0), maximum)


class Metrics:
    """Prometheus metrics of one runner, in a registry of its own."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = CollectorRegistry()
        self.scheduled = Counter("kplace_pods_scheduled", "Pods bound by kplace.", registry=self.registry)
        self.attempts = Counter("kplace_schedule_attempts", "Scheduling attempts by result "
                                "(scheduled, unschedulable, error).", ["result"], registry=self.registry)
        self.window_seconds = Histogram(
            "kplace_window_duration_seconds", "Time to decide and commit one window.", registry=self.registry,
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120))
        self.windows = Counter("kplace_windows", "Windows by result (committed, abandoned, failed).", ["result"],
                               registry=self.registry)
        self.fallbacks = Counter("kplace_fallbacks", "CP-SAT windows that fell back to the greedy plan.",
                                 registry=self.registry)
        self.pending = Gauge("kplace_pending_pods", "Pending pods for this scheduler (incl. backing off).",
                             registry=self.registry)
        self.relists = Counter("kplace_relists", "Lists of a watched kind (initial, after 410 Gone or errors).",
                               ["kind"], registry=self.registry)
        self.apiserver = Gauge("kplace_apiserver_reachable", "1 while the API server answered a probe (GET /version) "
                               "within the last 20 s, else 0: /readyz's API server check.", registry=self.registry)
        self.leader = Gauge("leader_election_master_status", "1 while this replica holds the leader Lease, else 0 "
                            "(kube-scheduler's gauge; only with leader election).", ["name"], registry=self.registry)

    def text(self) -> tuple[bytes, str]:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(self.registry), CONTENT_TYPE_LATEST


def _pod_key(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "default", meta.get("name") or ""


def _node_key(obj: dict[str, Any]) -> tuple[str, str]:
    return "", (obj.get("metadata") or {}).get("name") or ""


@dataclass
class Cache:
    """Watched objects (wire format) by key, with a condition the loop waits on."""

    objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = field(
        default_factory=lambda: {k: {} for k in WATCHED})
    others: list[dict[str, Any]] = field(default_factory=list)
    others_at: float = 0.0
    synced: set[str] = field(default_factory=set)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def replace_all(self, kind: str, items: list[dict[str, Any]]) -> None:
        key = _pod_key if kind == "Pod" else _node_key
        with self.changed:
            self.objects[kind] = {key(o): o for o in items}
            self.synced.add(kind)
            self.changed.notify_all()

    def apply(self, kind: str, typ: str, obj: dict[str, Any]) -> None:
        key = (_pod_key if kind == "Pod" else _node_key)(obj)
        with self.changed:
            if typ == "DELETED":
                self.objects[kind].pop(key, None)
            else:
                self.objects[kind][key] = obj
            self.changed.notify_all()


class Informer(threading.Thread):
    """List, then watch from the list's resourceVersion; re-list on 410 Gone or a broken watch."""

    def __init__(self, client, kind: str, cache: Cache, stop: threading.Event, metrics: Metrics, *,
                 watch_timeout: int = 300) -> None:
        super().__init__(name=f"informer-{kind}", daemon=True)
        self.client, self.kind, self.cache, self.stop_event, self.metrics = client, kind, cache, stop, metrics
        self.watch_timeout = watch_timeout
        self.error: str | None = None
        self.failures = 0  # consecutive failed list/watch attempts (0: the last one worked)
        self._resp = None  # the open watch response, for interrupt()
        self._resp_lock = threading.Lock()

    def interrupt(self) -> None:
        """Shut the open watch's connection down: a black-holed connection would otherwise hang until its read
        timeout (minutes). The watch resumes from its resourceVersion, or is listed again."""
        with self._resp_lock:
            resp = self._resp
        if resp is not None:
            try:
                shutdown = getattr(resp, "shutdown", None)  # urllib3 >= 2.3: unblocks a read in another thread
                (shutdown or resp.close)()
            except Exception:  # already closed: nothing to interrupt
                pass

    def run(self) -> None:
        while not self.stop_event.is_set():
            try:
                items, rv = list_all(self.client, self.kind)
                self.metrics.relists.labels(self.kind).inc()
                self.cache.replace_all(self.kind, items)
                _event(logging.INFO, "listed", kind=self.kind, items=len(items), resourceVersion=rv)
                self.failures, self.error = 0, None
                self._watch(rv)
            except Exception as exc:  # keep informing: log, back off, re-list
                self.failures += 1
                failures = self.failures
                self.error = str(exc)
                wait = backoff_seconds(failures, 0.5, 10.0)
                _event(logging.WARNING, "list/watch failed; re-listing", kind=self.kind, error=str(exc),
                       retry_in=wait)
                self.stop_event.wait(wait)

    def _watch(self, rv: str) -> None:
        """Follow the watch until it must be re-listed (410 Gone, an ERROR event) or the loop stops."""
        from kubernetes.client.exceptions import ApiException

        from .kube import LIST_KINDS, api

        cls, method, _ = LIST_KINDS[self.kind]
        fn = getattr(api(self.client, cls), method)
        broken = 0
        while not self.stop_event.is_set():
            try:
                resp = fn(watch=True, resource_version=rv, allow_watch_bookmarks=True,
                          timeout_seconds=self.watch_timeout, _preload_content=False,
                          _request_timeout=(10, WATCH_HEADER_TIMEOUT))
                _stream_timeout(resp, self.watch_timeout + 30)
            except ApiException as exc:
                if exc.status == 410:
                    _event(logging.INFO, "watch expired (410 Gone); re-listing", kind=self.kind)
                    return
                raise
            except transport_errors():
                broken += 1  # a pooled connection the server had closed: resume from rv once, then re-list
                if broken > 1:
                    raise
                continue
            broken = 0
            with self._resp_lock:
                self._resp = resp
            try:
                for line in resp:
                    if self.stop_event.is_set():
                        return
                    if not line.strip():
                        continue
                    ev = json.loads(line)
                    typ, obj = ev.get("type"), ev.get("object") or {}
                    if typ == "ERROR":
                        code = obj.get("code")
                        _event(logging.INFO, "watch error event; re-listing", kind=self.kind, code=code,
                               message=obj.get("message"))
                        return
                    rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                    if typ in ("ADDED", "MODIFIED", "DELETED"):
                        obj.setdefault("kind", self.kind)
                        self.cache.apply(self.kind, typ, obj)
            finally:
                with self._resp_lock:
                    self._resp = None
                resp.release_conn()


def _stream_timeout(resp, seconds: float) -> None:
    """Give the open watch's socket the stream's read timeout: a request black-holed before its headers came
    failed within WATCH_HEADER_TIMEOUT (it cannot be interrupted, having no response yet); the stream itself
    may idle up to the watch's own timeout."""
    sock = getattr(getattr(resp, "connection", None), "sock", None)
    if sock is not None:
        sock.settimeout(seconds)


class Runner:
    """The scheduler loop. `run()` blocks until stopped (`stop()`), `max_windows` or `idle_exit`."""

    def __init__(self, kubeconfig: str | None, context: str | None, options: RunOptions, config=None) -> None:
        from kplace.solver.framework.config import load_config

        self.opts = options
        self.client = new_client(kubeconfig, context, pool=options.concurrency + 4)
        self.config = _with_profile(config or load_config(options.config_path), options.scheduler_name)
        self.cache = Cache()
        self.metrics = Metrics()
        self.stop_event = threading.Event()
        self.backoff: dict[str, tuple[int, float]] = {}  # uid → (attempts, not before: monotonic seconds)
        self.assumed: dict[str, str] = {}  # uid → node, until the watch shows the pod bound
        self.windows = 0
        self.in_flight = False
        self.http: ThreadingHTTPServer | None = None
        self.informers: list[Informer] = []
        self.healthy = False
        self.api_ok_at: float | None = None  # monotonic time the API server last answered the prober
        self.metrics.apiserver.set_function(lambda: float(self._api_reachable()))
        self.elector: LeaderElector | None = None
        self._elector_stop = threading.Event()
        self._elector_thread: threading.Thread | None = None
        le = options.leader_election
        if le is not None:
            self.elector = LeaderElector(LeaseLock(self.client, le.resource_namespace, le.resource_name), le,
                                         on_started=self._leading_changed, on_stopped=self._leading_changed)
            self.metrics.leader.labels(le.resource_name).set_function(lambda: float(self.leading()))

    # --- control -----------------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask the loop to stop: a window being decided is abandoned, one being committed is finished."""
        self.stop_event.set()
        with self.cache.changed:
            self.cache.changed.notify_all()

    def leading(self) -> bool:
        """Whether this replica may decide and bind now (always, without leader election)."""
        return self.elector is None or self.elector.is_leader()

    def _leading_changed(self) -> None:
        with self.cache.changed:
            self.cache.changed.notify_all()

    def alive(self) -> bool:
        """Liveness: not stopped, and the informer (and election) threads run."""
        threads = [*self.informers, *([self._elector_thread] if self._elector_thread else [])]
        return not self.stop_event.is_set() and all(t.is_alive() for t in threads)

    @property
    def port(self) -> int:
        return self.http.server_address[1] if self.http else 0

    def start_http(self) -> None:
        self.http = ThreadingHTTPServer((self.opts.bind_address, self.opts.port), _metrics_handler(self))
        self.http.daemon_threads = True
        threading.Thread(target=self.http.serve_forever, name="metrics", daemon=True).start()
        _event(logging.INFO, "serving /healthz and /metrics", address=self.opts.bind_address, port=self.port)

    def ready(self) -> tuple[bool, str]:
        """(ready, why not): the informers have synced and their last list/watch worked, and the API server
        answered the prober within the last PROBE_STALE seconds (a black-holed server fails this, too)."""
        if not self.healthy:
            return False, "not synced yet" if not self.stop_event.is_set() else "stopping"
        failing = [i.kind for i in self.informers if i.failures or not i.is_alive()]
        if failing:
            return False, f"list/watch failing for {', '.join(failing)}"
        if not self._api_reachable():
            return False, "the API server did not answer its last probes"
        return True, "ok"

    def _api_reachable(self) -> bool:
        return self.api_ok_at is not None and time.monotonic() - self.api_ok_at <= PROBE_STALE

    def _probe(self) -> None:
        """GET /version every PROBE_INTERVAL seconds, each within PROBE_TIMEOUT."""
        from .kube import request_timeout

        while not self.stop_event.is_set():
            try:
                resp = self.client.call_api("/version", "GET", _preload_content=False, auth_settings=["BearerToken"],
                                            _request_timeout=request_timeout(PROBE_TIMEOUT))
                resp = resp[0] if isinstance(resp, tuple) else resp
                try:
                    resp.read()  # drain: a pooled connection given back with bytes unread breaks the next call
                finally:
                    resp.release_conn()
                self.api_ok_at = time.monotonic()
            except Exception as exc:  # any failure means "not reachable now"
                _event(logging.WARNING, "API server probe failed; restarting the watches", error=str(exc)[:200])
                for inf in self.informers:  # their connections may hang as the probe's did
                    inf.interrupt()
            self.stop_event.wait(PROBE_INTERVAL)

    def run(self) -> int:
        """Run until stopped; returns the number of windows committed."""
        if self.http is None:
            self.start_http()
        threading.Thread(target=self._probe, name="apiserver-probe", daemon=True).start()
        if self.elector is not None:
            self._elector_thread = threading.Thread(target=self.elector.run, args=(self._elector_stop,),
                                                    name="leader-election", daemon=True)
            self._elector_thread.start()
        for kind in WATCHED:
            inf = Informer(self.client, kind, self.cache, self.stop_event, self.metrics,
                           watch_timeout=self.opts.watch_timeout)
            inf.start()
            self.informers.append(inf)
        try:
            self._wait_synced()
            self.healthy = True
            idle_since = time.monotonic()
            while not self.stop_event.is_set():
                if self.opts.max_windows is not None and self.windows >= self.opts.max_windows:
                    break
                if not self.leading():  # a standby keeps its caches, decides nothing
                    with self.cache.changed:
                        self.cache.changed.wait(0.5)
                    idle_since = time.monotonic()
                    continue
                batch, wait = self._eligible()
                if not batch:
                    if self.opts.idle_exit is not None and time.monotonic() - idle_since >= self.opts.idle_exit:
                        _event(logging.INFO, "idle; exiting", seconds=self.opts.idle_exit)
                        break
                    with self.cache.changed:
                        self.cache.changed.wait(min(wait, 1.0))
                    continue
                self._window(batch)
                idle_since = time.monotonic()
        finally:
            self.healthy = False
            self.stop_event.set()
            if self.elector is not None:  # after the last binding: a standby may take over at once
                self._elector_stop.set()
                if self._elector_thread is not None:
                    self._elector_thread.join(self.opts.leader_election.renew_deadline)
                self.elector.release()
            if self.http is not None:
                self.http.shutdown()
                self.http.server_close()
            self.client.close()
            _event(logging.INFO, "stopped", windows=self.windows)
        return self.windows

    def _wait_synced(self) -> None:
        deadline = time.monotonic() + self.opts.sync_timeout
        with self.cache.changed:
            while set(WATCHED) - self.cache.synced:
                if self.stop_event.is_set():
                    return
                left = deadline - time.monotonic()
                if left <= 0:
                    errors = "; ".join(i.error for i in self.informers if i.error) or "no answer"
                    from .kube import KubeError

                    raise KubeError(f"could not list nodes and pods within {self.opts.sync_timeout:g}s: {errors}")
                self.cache.changed.wait(min(left, 0.5))

    # --- the queue ---------------------------------------------------------------------------------

    def _ours_pending(self, pod: dict[str, Any]) -> bool:
        spec, meta, st = pod.get("spec") or {}, pod.get("metadata") or {}, pod.get("status") or {}
        return (spec.get("schedulerName", "default-scheduler") == self.opts.scheduler_name
                and not spec.get("nodeName") and not meta.get("deletionTimestamp")
                and st.get("phase") not in ("Succeeded", "Failed"))

    def _eligible(self) -> tuple[list[dict[str, Any]], float]:
        """Our pending pods that may be tried now, and how long until the next backoff expires."""
        now = time.monotonic()
        wait = 1.0
        out = []
        with self.cache.changed:
            pods = list(self.cache.objects["Pod"].values())
        pending = 0
        live_uids = set()
        for p in pods:
            uid = (p.get("metadata") or {}).get("uid") or ""
            live_uids.add(uid)
            if (p.get("spec") or {}).get("nodeName"):
                self.assumed.pop(uid, None)  # the watch caught up
                continue
            if not self._ours_pending(p) or uid in self.assumed:
                continue
            pending += 1
            if (p.get("spec") or {}).get("schedulingGates"):
                continue  # PreEnqueue: gated pods stay out of the queue
            not_before = self.backoff.get(uid, (0, 0.0))[1]
            if not_before > now:
                wait = min(wait, not_before - now)
                continue
            out.append(p)
        for uid in list(self.assumed):
            if uid not in live_uids:
                del self.assumed[uid]
        for uid in list(self.backoff):
            if uid not in live_uids:
                del self.backoff[uid]
        self.metrics.pending.set(pending)
        return out, max(wait, 0.01)

    def _others(self) -> list[dict[str, Any]]:
        if time.monotonic() - self.cache.others_at >= self.opts.resync or not self.cache.others_at:
            items = []
            for kind in OTHER_KINDS:
                objs, _ = list_all(self.client, kind)
                items.extend(objs)
            self.cache.others, self.cache.others_at = items, time.monotonic()
        return self.cache.others

    def _requeue(self, uid: str) -> float:
        attempts = self.backoff.get(uid, (0, 0.0))[0] + 1
        d = backoff_seconds(attempts, self.opts.backoff_initial, self.opts.backoff_max)
        self.backoff[uid] = (attempts, time.monotonic() + d)
        return d

    # --- one window --------------------------------------------------------------------------------

    def _snapshot(self, batch: list[dict[str, Any]]):
        """The state for one window: nodes, bound and assumed pods, the other kinds, and `batch` (queue order,
        at most `window` of them). Returns (index, batch uids)."""
        from kplace.models import compile_index

        from .live import snapshot_from_objects

        batch_uids = {(p.get("metadata") or {}).get("uid") for p in batch}
        with self.cache.changed:
            nodes = list(self.cache.objects["Node"].values())
            pods = list(self.cache.objects["Pod"].values())
        items: list[dict[str, Any]] = [*nodes]
        for p in pods:
            uid = (p.get("metadata") or {}).get("uid")
            if (p.get("spec") or {}).get("nodeName"):
                items.append(p)
            elif uid in self.assumed:
                q = copy.deepcopy(p)
                q["spec"]["nodeName"] = self.assumed[uid]
                items.append(q)
            elif uid in batch_uids:
                items.append(p)
        items.extend(self._others())
        snap = snapshot_from_objects(items, source="<api>")
        pending = [p for p in snap.pods if not p.spec.node_name]
        if len(pending) > self.opts.window:
            order = sorted(range(len(pending)), key=lambda i: _queue_key(pending[i], i))
            drop = {id(pending[i]) for i in order[self.opts.window:]}
            snap.pods = [p for p in snap.pods if id(p) not in drop]
        index = compile_index(snap)
        return index, {pi.pod.metadata.uid for pi in index.pending}

    def _window(self, batch: list[dict[str, Any]]) -> None:
        from kplace.solver.schedule import decide

        from .api import commit_api
        from .outcomes import BOUND, CONFLICT, NOT_FOUND
        from .volumes import bind_timeout_of

        started = time.perf_counter()
        self.in_flight = True
        try:
            try:
                index, uids = self._snapshot(batch)
                opts = None
                if self.opts.engine == "cpsat":
                    from kplace.solver.cpsat import CpsatOptions

                    opts = CpsatOptions(window=self.opts.window, time_limit=window_budget(len(uids), self.opts),
                                        workers=self.opts.workers)
                plan = decide(index, self.config, self.opts.engine, cpsat_options=opts)
            except Exception as exc:  # a window that cannot be decided backs its pods off; the loop goes on
                _event(logging.ERROR, "window failed before commit", error=str(exc), pods=len(batch))
                self.metrics.windows.labels("failed").inc()
                for p in batch:
                    uid = (p.get("metadata") or {}).get("uid") or ""
                    self.metrics.attempts.labels("error").inc()
                    self._requeue(uid)
                return
            if self.stop_event.is_set() or not self.leading():
                _event(logging.INFO, "window abandoned before commit (nothing was sent)", pods=len(uids),
                       reason="stopping" if self.stop_event.is_set() else "the leader lease was lost")
                self.metrics.windows.labels("abandoned").inc()
                return
            summary = commit_api(plan, index, self.client, dry_run=self.opts.dry_run,
                                 concurrency=self.opts.concurrency, bind_timeout=bind_timeout_of(self.config),
                                 leading=self.leading if self.elector is not None else None)
            uid_of = {pi.key: pi.pod.metadata.uid or "" for pi in index.pending}
            results = {o["pod"]: o for o in summary["outcomes"] if o["step"] == "bind"}
            counts = {"scheduled": 0, "unschedulable": 0, "error": 0}
            for p in plan.placements:
                uid = uid_of.get(p.pod, "")
                o = results.get(p.pod)
                if p.node is None:
                    counts["unschedulable"] += 1
                    self._requeue(uid)
                elif o is not None and o["result"] == BOUND:
                    counts["scheduled"] += 1
                    self.assumed[uid] = p.node
                    self.backoff.pop(uid, None)
                else:
                    counts["error"] += 1
                    if o is None or o["result"] not in (CONFLICT, NOT_FOUND):
                        self._requeue(uid)  # 409/404: the pod changed or went; the watch brings what is next
            for result, n in counts.items():
                if n:
                    self.metrics.attempts.labels(result).inc(n)
            self.metrics.scheduled.inc(counts["scheduled"])
            fallbacks = sum(1 for w in plan.windows if w.get("status") == "FALLBACK")
            if fallbacks:
                self.metrics.fallbacks.inc(fallbacks)
            self.metrics.windows.labels("committed").inc()
            self.windows += 1
            seconds = time.perf_counter() - started
            self.metrics.window_seconds.observe(seconds)
            _event(logging.INFO, "window committed", window=self.windows, pods=len(plan.placements),
                   **counts, evictions=len(plan.evictions), fallbacks=fallbacks, engine=plan.engine,
                   seconds=round(seconds, 3), dry_run=self.opts.dry_run,
                   failures=[{k: o[k] for k in ("pod", "result", "code")} for o in summary["outcomes"]
                             if o["result"] not in ("bound", "evicted")][:20])
        finally:
            self.in_flight = False
            trim_heap()


def _queue_key(pod, seq: int):
    from kplace.models.index import _NO_TIME

    ts = pod.metadata.creation_timestamp or _NO_TIME
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return (-(pod.spec.priority or 0), ts, seq)


def _with_profile(config, scheduler_name: str):
    """The config, with a profile for `scheduler_name` (the default profile renamed when it has none)."""
    if config.profile_for(scheduler_name) is not None:
        return config
    base = config.profiles.get("default-scheduler") or next(iter(config.profiles.values()))
    profiles = {**config.profiles, scheduler_name: replace(base, scheduler_name=scheduler_name)}
    return replace(config, profiles=profiles)


def _metrics_handler(runner: Runner):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path in ("/healthz", "/livez"):  # alive: the loop and its informers run
                ok = runner.alive()
                body, ctype, code = (b"ok" if ok else b"stopped"), "text/plain; charset=utf-8", 200 if ok else 503
            elif path == "/readyz":
                ok, why = runner.ready()
                body, ctype, code = why.encode(), "text/plain; charset=utf-8", 200 if ok else 503
            elif path == "/metrics":
                body, ctype = runner.metrics.text()
                code = 200
            else:
                body, ctype, code = b"not found", "text/plain; charset=utf-8", 404
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


