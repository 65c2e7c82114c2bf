"""Leader election through a coordination.k8s.io/v1 Lease, with the protocol of client-go's `leaderelection`
(which kube-scheduler uses); the official Python client's `kubernetes.leaderelection` has only a ConfigMap lock,
no release, no per-call timeouts and no way to stop, so it is not used.

The Lease's spec is the record: `holderIdentity`, `leaseDurationSeconds`, `acquireTime`, `renewTime`,
`leaseTransitions`. One attempt (`try_acquire_or_renew`) GETs the Lease; a missing one is created with us as the
holder. Otherwise the record is compared with the last one seen: when it changed, the local monotonic time of the
observation is taken (expiry is judged by our clock from when *we* saw the record change, never by the times
written in it, so clock skew between replicas does not matter). A record held by someone else whose observation
is younger than the lease duration is left alone; otherwise it is PUT with us as the holder and the GET's
resourceVersion, so of two candidates only one wins (the other gets 409). Renewing keeps `acquireTime` and
`leaseTransitions`; taking the lease over sets `acquireTime` and adds one to `leaseTransitions`.

A candidate retries every `retry_period` seconds stretched by a random factor in [1, 2.2) (client-go's jitter of
1.2). The leader renews every `retry_period` seconds; when no renewal has succeeded for `renew_deadline` seconds
it is no longer the leader (`is_leader()` turns false at that instant even while a renewal call hangs, and every
call's timeout ends within the deadline). Another candidate can take the lease only `lease_duration` seconds
after it last saw the record change, so `lease_duration > renew_deadline` leaves a margin in which neither binds.
`release()` (on a clean stop) writes an empty holder with `leaseDurationSeconds: 1`, so a standby takes over at
its next retry instead of waiting out the lease.
"""

from __future__ import annotations

import logging
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kplace.models.errors import KplaceError

log = logging.getLogger("kplace.leader")

JITTER = 1.2  # client-go's JitterFactor: a candidate waits retry_period · (1 + U[0, 1.2))


class LeaseError(KplaceError):
    """A Lease call failed (not found is not an error: the caller creates the Lease)."""


def default_identity() -> str:
    """hostname_uuid, as kube-scheduler's holder identity (in a pod the hostname is the pod's name)."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass
class LeaderElectionOptions:
    """kube-scheduler's `--leader-elect-*` flags (seconds)."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_name: str = "kplace"
    resource_namespace: str = "kube-system"
    identity: str = field(default_factory=default_identity)

    def validate(self) -> None:
        """client-go's checks: lease duration > renew deadline > retry period × 1.2, all positive."""
        if self.retry_period <= 0:
            raise KplaceError("--leader-elect-retry-period must be greater than zero")
        if self.lease_duration <= self.renew_deadline:
            raise KplaceError(f"--leader-elect-lease-duration ({self.lease_duration:g}s) must be greater than "
                              f"--leader-elect-renew-deadline ({self.renew_deadline:g}s)")
        if self.renew_deadline <= JITTER * self.retry_period:
            raise KplaceError(f"--leader-elect-renew-deadline ({self.renew_deadline:g}s) must be greater than "
                              f"{JITTER:g} × --leader-elect-retry-period ({self.retry_period:g}s)")
        if not self.identity:
            raise KplaceError("the leader election identity must not be empty")


def micro_time(t: datetime) -> str:
    """A metav1.MicroTime: RFC 3339 in UTC with microseconds."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


RECORD_FIELDS = ("holderIdentity", "leaseDurationSeconds", "acquireTime", "renewTime", "leaseTransitions")


class LeaseLock:
    """GET, create and update (PUT with resourceVersion) of one Lease, read raw as JSON, each call with a timeout."""

    def __init__(self, client, namespace: str, name: str) -> None:
        self.client, self.namespace, self.name = client, namespace, name

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    def _api(self):
        from kubernetes import client as k

        return k.CoordinationV1Api(self.client)

    def _call(self, what: str, fn: Callable[[], Any]) -> dict[str, Any] | None:
        from kubernetes.client.exceptions import ApiException

        from .kube import failure, raw_json, transport_errors

        try:
            return raw_json(fn())
        except ApiException as exc:
            if exc.status == 404 and what == "get":
                return None
            f = failure(exc)
            raise LeaseError(f"{what} Lease {self.describe()}: HTTP {f.code} {f.reason}: {f.message}") from None
        except transport_errors() as exc:
            raise LeaseError(f"{what} Lease {self.describe()}: {failure(exc).message}") from None

    def get(self, timeout: float) -> tuple[dict[str, Any], str] | None:
        """(spec, resourceVersion), or None when the Lease does not exist."""
        from .kube import request_timeout

        body = self._call("get", lambda: self._api().read_namespaced_lease(
            self.name, self.namespace, _preload_content=False, _request_timeout=request_timeout(timeout)))
        if body is None:
            return None
        return body.get("spec") or {}, str((body.get("metadata") or {}).get("resourceVersion") or "")

    def create(self, spec: dict[str, Any], timeout: float) -> str:
        from .kube import request_timeout

        obj = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": self.name, "namespace": self.namespace}, "spec": spec}
        body = self._call("create", lambda: self._api().create_namespaced_lease(
            self.namespace, obj, _preload_content=False, _request_timeout=request_timeout(timeout)))
        return str(((body or {}).get("metadata") or {}).get("resourceVersion") or "")

    def update(self, spec: dict[str, Any], resource_version: str, timeout: float) -> str:
        """PUT the Lease with `spec`; the API server answers 409 unless `resource_version` is still current."""
        from .kube import request_timeout

        obj = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": self.name, "namespace": self.namespace, "resourceVersion": resource_version},
               "spec": spec}
        body = self._call("update", lambda: self._api().replace_namespaced_lease(
            self.name, self.namespace, obj, _preload_content=False, _request_timeout=request_timeout(timeout)))
        return str(((body or {}).get("metadata") or {}).get("resourceVersion") or "")


def _record(spec: dict[str, Any]) -> tuple:
    return tuple(spec.get(k) for k in RECORD_FIELDS)


class LeaderElector:
    """One candidate. `run(stop)` blocks, acquiring and renewing, until `stop` is set; `is_leader()` is safe to
    call from any thread. `on_started` / `on_stopped` are called (from the election thread) when this candidate
    becomes the leader and when it stops being the leader (including at `release()`)."""

    def __init__(self, lock: LeaseLock, opts: LeaderElectionOptions, *,
                 on_started: Callable[[], None] | None = None, on_stopped: Callable[[], None] | None = None,
                 clock: Callable[[], float] = time.monotonic, now: Callable[[], datetime] = lambda: datetime.now(UTC),
                 sleep: Callable[[threading.Event, float], Any] | None = None) -> None:
        opts.validate()
        self.lock, self.opts = lock, opts
        self.on_started, self.on_stopped = on_started, on_stopped
        self.clock, self.now = clock, now
        self._sleep = sleep or (lambda ev, s: ev.wait(s))
        self.observed: tuple | None = None  # the last record seen (RECORD_FIELDS)
        self.observed_spec: dict[str, Any] = {}
        self.observed_rv = ""
        self.observed_at = 0.0  # clock() when the record last changed
        self.renewed_at: float | None = None  # clock() of the last successful acquire/renew, while leading
        self.leader = ""  # the holder last seen
        self._mu = threading.Lock()

    @property
    def identity(self) -> str:
        return self.opts.identity

    def is_leader(self) -> bool:
        """We hold the lease and renewed it less than `renew_deadline` seconds ago."""
        with self._mu:
            at = self.renewed_at
        return at is not None and self.clock() - at < self.opts.renew_deadline

    def _call_timeout(self) -> float:
        """A call's timeout: half the renew deadline (at most 5 s), and for the leader never past its deadline."""
        t = min(self.opts.renew_deadline / 2, 5.0)
        with self._mu:
            at = self.renewed_at
        if at is not None:
            t = min(t, at + self.opts.renew_deadline - self.clock())
        return max(t, 0.1)

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when we hold the lease afterwards. Errors are logged and count as a failed attempt."""
        try:
            return self._try()
        except LeaseError as exc:
            log.warning("leader election attempt failed", extra={"fields": {
                "lease": self.lock.describe(), "identity": self.identity, "error": str(exc)}})
            return False

    def _try(self) -> bool:
        now = micro_time(self.now())
        mine = {"holderIdentity": self.identity, "leaseDurationSeconds": max(int(self.opts.lease_duration), 1),
                "acquireTime": now, "renewTime": now, "leaseTransitions": 0}
        timeout = self._call_timeout()
        got = self.lock.get(timeout)
        if got is None:
            rv = self.lock.create(mine, self._call_timeout())
            self._observe(mine, rv)
            return True
        spec, rv = got
        if _record(spec) != self.observed:
            self._observe(spec, rv)
        else:
            self.observed_rv = rv
        holder = spec.get("holderIdentity") or ""
        held_by_us = holder == self.identity
        if holder and not held_by_us and self.clock() < self.observed_at + self.opts.lease_duration:
            return False  # someone else holds it and we saw it change less than a lease duration ago
        transitions = int(spec.get("leaseTransitions") or 0)
        if held_by_us:
            mine["acquireTime"] = spec.get("acquireTime") or now
            mine["leaseTransitions"] = transitions
        else:
            mine["leaseTransitions"] = transitions + 1
        new_rv = self.lock.update(mine, rv, self._call_timeout())
        self._observe(mine, new_rv)
        return True

    def _observe(self, spec: dict[str, Any], rv: str) -> None:
        self.observed, self.observed_spec, self.observed_rv = _record(spec), dict(spec), rv
        self.observed_at = self.clock()
        holder = spec.get("holderIdentity") or ""
        if holder != self.leader:
            self.leader = holder
            log.info("new leader observed", extra={"fields": {
                "lease": self.lock.describe(), "leader": holder or None, "identity": self.identity}})

    def _became(self, leading: bool) -> None:
        with self._mu:
            self.renewed_at = self.clock() if leading else None

    def run(self, stop: threading.Event) -> None:
        """Acquire, then renew until the lease is lost (back to acquiring) or `stop` is set. Does not release:
        the caller does (`release()`) once its own work has stopped."""
        log.info("attempting to acquire leader lease", extra={"fields": {
            "lease": self.lock.describe(), "identity": self.identity}})
        while not stop.is_set():
            if not self._acquire(stop):
                return
            self._renew(stop)

    def _acquire(self, stop: threading.Event) -> bool:
        while not stop.is_set():
            started = self.clock()
            if self.try_acquire_or_renew():
                if stop.is_set():  # stopped while the call was out: we hold it, release() gives it back
                    self._became(True)
                    return False
                self._became(True)
                log.info("successfully acquired lease", extra={"fields": {
                    "lease": self.lock.describe(), "identity": self.identity}})
                if self.on_started:
                    self.on_started()
                return True
            wait = self.opts.retry_period * (1 + random.random() * JITTER)
            self._sleep(stop, max(wait - (self.clock() - started), 0.0))
        return False

    def _renew(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self._sleep(stop, self.opts.retry_period)
            if stop.is_set():
                return
            while not stop.is_set():
                if self.try_acquire_or_renew():
                    with self._mu:
                        self.renewed_at = self.clock()
                    break
                if self.leader != self.identity:  # someone else's record: our lease was taken over
                    self._lost(f"the lease is held by {self.leader or 'no one'}")
                    return
                if not self.is_leader():  # the renew deadline passed without a successful renewal
                    self._lost("failed to renew the lease within the renew deadline")
                    return
                with self._mu:
                    left = (self.renewed_at or 0) + self.opts.renew_deadline - self.clock()
                self._sleep(stop, min(self.opts.retry_period, max(left, 0.0)))

    def _lost(self, why: str) -> None:
        self._became(False)
        log.warning("leader lease lost; no more bindings until it is acquired again", extra={"fields": {
            "lease": self.lock.describe(), "identity": self.identity, "reason": why}})
        if self.on_stopped:
            self.on_stopped()

    def release(self) -> bool:
        """Give the lease up if we hold it (empty holder, leaseDurationSeconds 1): True when nothing is held
        afterwards. Call it only once nothing more will be sent as the leader."""
        if self.observed_spec.get("holderIdentity") != self.identity:
            return True
        was = self.is_leader()
        self._became(False)
        if was and self.on_stopped:
            self.on_stopped()
        now = micro_time(self.now())
        spec = {"holderIdentity": "", "leaseDurationSeconds": 1, "acquireTime": now, "renewTime": now,
                "leaseTransitions": int(self.observed_spec.get("leaseTransitions") or 0)}
        try:
            rv = self.lock.update(spec, self.observed_rv, min(self.opts.renew_deadline / 2, 5.0))
        except LeaseError as exc:
            log.warning("could not release the leader lease", extra={"fields": {
                "lease": self.lock.describe(), "identity": self.identity, "error": str(exc)}})
            return False
        self._observe(spec, rv)
        log.info("released the leader lease", extra={"fields": {"lease": self.lock.describe(),
                                                                "identity": self.identity}})
        return True

