"""The API binder (`ApiBinder`): a plan committed through the Kubernetes API as kube-scheduler commits it.

Evictions go through the pods/eviction subresource first, then each Binding is POSTed to
`/api/v1/namespaces/{ns}/pods/{name}/binding` exactly as DefaultBinder does (`post_binding`, which the extender
and the rebalancer use too), in queue order with bounded concurrency. A preemptor is bound only once its victims
are gone (`wait_gone`): kube-scheduler nominates the node and binds in a later cycle, so the kubelet never sees
the node over-committed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from kplace.models.index import ClusterIndex
from kplace.models.plan import Eviction, Placement, Plan

from .kube import api, raw_json
from .objects import binding_object, eviction_object, pod_uid, split_key
from .order import commit_order
from .outcomes import BOUND, EVICTED, GONE, PATCHED, REFUSED, SKIPPED, Outcome, failure_result
from .retry import RetryPolicy, call_with_retries, is_pdb_refusal
from .summary import summarize
from .volumes import BIND_TIMEOUT, bind_volume

Victim = tuple[str, str, str | None]  # namespace, name, uid
NOT_LEADER = "not sent: the leader lease was lost"


class _NotLeading(Exception):
    pass


def post_binding(core, ns: str, name: str, uid: str | None, node: str, retry: RetryPolicy,
                 sleep: Callable[[float], None], dry: str | None = None,
                 leading: Callable[[], bool] | None = None) -> tuple[str, int, str, int]:
    """POST pods/binding exactly as DefaultBinder does: (result, HTTP code, message, attempts). A 409 saying the
    pod is already on `node`, after a retry, counts as bound: the earlier attempt's answer was lost. `leading`
    is asked before every try (retries included): once it is false nothing more is sent (`skipped`)."""
    body = binding_object(ns, name, uid, node)

    def call():
        if leading is not None and not leading():
            raise _NotLeading
        return core.create_namespaced_pod_binding(name, ns, body, dry_run=dry, _preload_content=False,
                                                  _request_timeout=retry.request_timeout)

    try:
        code, f, n = call_with_retries(call, retry, sleep)
    except _NotLeading:
        return SKIPPED, 0, NOT_LEADER, 0
    if f is None:
        return BOUND, code, "", n
    if f.code == 409 and n > 1 and f'already assigned to node "{node}"' in f.message:
        return BOUND, code, "bound by an earlier attempt whose answer was lost", n
    return failure_result(f, conflict=True), code, f.message, n


def wait_gone(core, victims: list[Victim], timeout: float, sleep: Callable[[float], None]) -> str | None:
    """Poll until every victim (namespace, name, uid) is gone (404, or replaced by a pod with another uid).
    Returns None when all are gone, else why not."""
    deadline = time.monotonic() + timeout
    pending = list(victims)
    while pending:
        still = []
        for ns, name, uid in pending:
            try:
                body = raw_json(core.read_namespaced_pod(name, ns, _preload_content=False)) or {}
                if uid is None or (body.get("metadata") or {}).get("uid") == uid:
                    still.append((ns, name, uid))
            except Exception as exc:  # ApiException: 404 means gone; anything else, keep waiting
                if getattr(exc, "status", None) != 404:
                    still.append((ns, name, uid))
        pending = still
        if pending and time.monotonic() >= deadline:
            names = ", ".join(f"{ns}/{name}" for ns, name, _ in pending)
            return f"victims still terminating after {timeout:g}s: {names}"
        if pending:
            sleep(0.2)
    return None


@dataclass
class ApiBinder:
    """Evictions, then Bindings, through the API of `client`; one pod's failure never stops the others.

    A Binding answered 201 is `bound`. 409 (already bound, uid mismatch) is `conflict` and 404 (pod gone)
    `not-found`: reported, not counted as placed, and the capacity the plan held for the pod is listed as
    released. 429, 5xx and timeouts are retried (`retry`) and then reported as `failed`. An eviction refused
    by a PodDisruptionBudget (429 with a DisruptionBudget cause) is `refused`; the Binding of the pod that
    needed it is then `skipped`. A preemptor is bound only once its victims are gone (up to `victim_timeout`
    seconds; then its Binding is `skipped` and it stays pending for the next attempt). `should_stop` is
    consulted only between the eviction phase and the binding phase: once a window's bindings start they all
    finish, so nothing is left half-committed. The claims a placement binds are bound first (`bind_volume`, one
    `volume` outcome each); if one fails or is not Bound within `bind_timeout` seconds, the pod's Binding is
    `skipped`. `leading`, when given, is checked before each eviction and each try of a Binding is sent: once it
    is false (`kplace run` lost its leader lease) nothing more is sent and the rest are `skipped`. `dry_run` sends
    every write as a server-side dry run.
    """

    client: Any
    dry_run: bool = False
    concurrency: int = 8
    retry: RetryPolicy | None = None  # None: RetryPolicy()
    sleep: Callable[[float], None] = time.sleep
    should_stop: Callable[[], bool] | None = None
    leading: Callable[[], bool] | None = None
    victim_timeout: float = 120.0
    bind_timeout: float = BIND_TIMEOUT

    def __post_init__(self) -> None:
        self.retry = self.retry or RetryPolicy()
        self._dry = "All" if self.dry_run else None

    def commit(self, plan: Plan, index: ClusterIndex) -> dict[str, Any]:
        core = api(self.client, "CoreV1Api")
        started = time.perf_counter()
        steps = commit_order(plan)
        evictions = [e for s, e in steps if s == "evict"]
        bindings = [p for s, p in steps if s == "bind"]
        with ThreadPoolExecutor(max_workers=max(1, self.concurrency), thread_name_prefix="kplace-bind") as pool:
            evicted = list(pool.map(lambda e: self._evict(core, index, e), evictions))
            blocked = self._blocked(core, index, evicted)
            if self.should_stop is not None and self.should_stop():
                bound = [Outcome("bind", p.pod, p.node, SKIPPED, 0, "stopping before the bindings started")
                         for p in bindings]
            else:
                bound = self._bind_all(pool, core, index, bindings, blocked)
        return summarize([*evicted, *bound], index, dry_run=self.dry_run, seconds=time.perf_counter() - started)

    def _not_leading(self) -> bool:
        return self.leading is not None and not self.leading()

    def _evict(self, core, index: ClusterIndex, e: Eviction) -> Outcome:
        if self._not_leading():
            return Outcome("evict", e.pod, e.node, SKIPPED, 0, NOT_LEADER, extra={"preemptor": e.preemptor})
        ns, name = split_key(e.pod)
        body = eviction_object(ns, name, pod_uid(index, e.pod), dry_run=self.dry_run)
        t0 = time.perf_counter()
        code, f, n = call_with_retries(
            lambda: core.create_namespaced_pod_eviction(name, ns, body, dry_run=self._dry, _preload_content=False,
                                                        _request_timeout=self.retry.request_timeout),
            self.retry, self.sleep, pdb_refusal=True)
        if f is None:
            result, msg = EVICTED, ""
        elif f.code == 404:
            result, msg = GONE, f.message
        elif f.code == 429 and is_pdb_refusal(f):
            result, msg = REFUSED, f.message
        else:
            result, msg = failure_result(f), f.message
        return Outcome("evict", e.pod, e.node, result, code, msg, n, time.perf_counter() - t0,
                       {"preemptor": e.preemptor})

    def _blocked(self, core, index: ClusterIndex, evicted: list[Outcome]) -> dict[str, str]:
        """preemptor → why its Binding must wait: an eviction that did not happen, or victims not gone in time."""
        blocked: dict[str, str] = {}
        victims: dict[str, list[Victim]] = {}
        for o in evicted:
            if o.result not in (EVICTED, GONE):
                blocked.setdefault(o.extra["preemptor"], f"eviction of {o.pod} {o.result}: {o.message}".strip())
            elif o.result == EVICTED and not self.dry_run:
                victims.setdefault(o.extra["preemptor"], []).append((*split_key(o.pod), pod_uid(index, o.pod)))
        for preemptor, gone in victims.items():
            if preemptor not in blocked:
                why = wait_gone(core, gone, self.victim_timeout, self.sleep)
                if why is not None:
                    blocked[preemptor] = why
        return blocked

    def _bind_all(self, pool: ThreadPoolExecutor, core, index: ClusterIndex, bindings: list[Placement],
                  blocked: dict[str, str]) -> list[Outcome]:
        """Every placement's claims then Binding, concurrently; outcomes in queue order."""
        futures = []
        for p in bindings:
            if p.pod in blocked:
                futures.append([Outcome("bind", p.pod, p.node, SKIPPED, 0, blocked[p.pod])])
            else:
                futures.append(pool.submit(self._bind, core, index, p))
        return [o for f in futures for o in (f if isinstance(f, list) else f.result())]

    def _bind(self, core, index: ClusterIndex, p: Placement) -> list[Outcome]:
        """The placement's claims (`bind_volume`), then its Binding unless a claim did not bind."""
        if self._not_leading():
            return [Outcome("bind", p.pod, p.node, SKIPPED, 0, NOT_LEADER)]
        done = []
        for claim, what in p.volume_bindings.items():
            o = bind_volume(core, p, claim, what, index, dry_run=self.dry_run, retry=self.retry, sleep=self.sleep,
                            timeout=self.bind_timeout)
            done.append(o)
            if o.result not in (BOUND, PATCHED):
                why = f"claim {claim} {o.result}: {o.message}".strip()
                return [*done, Outcome("bind", p.pod, p.node, SKIPPED, 0, why)]
        if self._not_leading():
            return [*done, Outcome("bind", p.pod, p.node, SKIPPED, 0, NOT_LEADER)]
        ns, name = split_key(p.pod)
        t0 = time.perf_counter()
        result, code, msg, n = post_binding(core, ns, name, pod_uid(index, p.pod), p.node, self.retry, self.sleep,
                                            self._dry, leading=self.leading)
        return [*done, Outcome("bind", p.pod, p.node, result, code, msg, n, time.perf_counter() - t0)]


def commit_api(plan: Plan, index: ClusterIndex, client, **options: Any) -> dict[str, Any]:
    """Commit `plan` through `client` (`options`: the `ApiBinder` fields) and return the summary."""
    return ApiBinder(client, **options).commit(plan, index)
