"""Retrying one API call (`RetryPolicy`, `call_with_retries`) and keeping its JSON body (`json_call`).

Only 429, 5xx and timeouts are tried again; any other failure is final at once, and so is an eviction refused
by a PodDisruptionBudget (429 with a DisruptionBudget cause), which waiting a few seconds does not change.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .kube import TIMEOUTS, failure, request_timeout, transport_errors

log = logging.getLogger("kplace.binder")


@dataclass
class RetryPolicy:
    """429, 5xx and timeouts are retried up to `attempts` calls in all, waiting base·2^k (capped, or the
    server's Retry-After when it is shorter than the cap) between them."""

    attempts: int = 5
    base: float = 0.25
    cap: float = 4.0
    timeout: float = field(default_factory=lambda: TIMEOUTS.call)  # seconds per call (connect and read)
    total: float = 60.0  # seconds for all tries of one call, waits included: no try starts that could end later

    @property
    def request_timeout(self) -> tuple[float, float]:
        """The kubernetes client's `_request_timeout`: it applies only an int or a (connect, read) pair."""
        return request_timeout(self.timeout)

    def delay(self, attempt: int, retry_after: float | None) -> float:
        d = min(self.base * 2 ** (attempt - 1), self.cap)
        if retry_after is not None:
            d = min(max(retry_after, 0.0), self.cap)
        return d


def call_with_retries(call: Callable[[], Any], retry: RetryPolicy, sleep: Callable[[float], None],
                      *, pdb_refusal: bool = False):
    """(code, failure or None, attempts): runs `call` until it succeeds, fails for good, or runs out of tries."""
    errors = transport_errors()
    attempt = 0
    started = time.monotonic()
    while True:
        attempt += 1
        try:
            resp = call()
            try:
                code = resp.status
                resp.read()  # drain the body: a connection given back with bytes unread corrupts the next call
            finally:
                resp.release_conn()
            return code, None, attempt
        except errors as exc:
            f = failure(exc)
            if pdb_refusal and f.code == 429 and is_pdb_refusal(f):
                return f.code, f, attempt
            d = retry.delay(attempt, f.retry_after)
            if (not f.transient or attempt >= retry.attempts
                    or time.monotonic() - started + d + retry.timeout > retry.total):
                return f.code, f, attempt
            log.info("retrying after HTTP %s %s (attempt %d, waiting %.2fs)", f.code, f.reason, attempt, d)
            sleep(d)


def is_pdb_refusal(f) -> bool:
    """Whether a failed eviction was refused by a PodDisruptionBudget."""
    causes = f.causes or []
    return any(c.get("reason") == "DisruptionBudget" for c in causes if isinstance(c, dict)) or \
        "disruption budget" in f.message.lower()


class _Body:
    """Wraps a raw response so `call_with_retries` drains it while the JSON body is kept (`holder["body"]`)."""

    def __init__(self, resp, holder: dict[str, Any]) -> None:
        self.resp, self.holder, self.status = resp, holder, resp.status

    def read(self) -> bytes:
        data = self.resp.read()
        self.holder["body"] = json.loads(data or b"{}")
        return data

    def release_conn(self) -> None:
        self.resp.release_conn()


def json_call(call: Callable[[], Any], retry: RetryPolicy, sleep: Callable[[float], None]):
    """(JSON body or None, failure or None, attempts) of one API call, retried as every other call."""
    holder: dict[str, Any] = {}
    _, f, n = call_with_retries(lambda: _Body(call(), holder), retry, sleep)
    return holder.get("body"), f, n
