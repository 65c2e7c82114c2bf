"""What one API call of a commit came to: an `Outcome` per call, its result one of the names below.

A call that failed for good is `not-found` on 404, `conflict` on 409 where the caller reads it so, `failed`
when it might pass on a later try (429, 5xx, timeouts), `rejected` otherwise (`failure_result`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

BOUND, EVICTED, GONE, PATCHED, TIMEOUT = "bound", "evicted", "gone", "patched", "timeout"
CONFLICT, NOT_FOUND, REJECTED, REFUSED, FAILED, SKIPPED = (
    "conflict", "not-found", "rejected", "refused", "failed", "skipped")
SUCCEEDED = (BOUND, EVICTED, PATCHED)  # the results that are not a shortfall


@dataclass
class Outcome:
    """One call of a commit: its step, the pod and node, the result, the HTTP code, tries and seconds taken."""

    step: str  # "evict", "volume" or "bind"
    pod: str
    node: str
    result: str
    code: int = 0
    message: str = ""
    attempts: int = 0
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = {"step": self.step, "pod": self.pod, "node": self.node, "result": self.result, "code": self.code,
               "attempts": self.attempts}
        if self.message:
            out["message"] = self.message
        out.update(self.extra)
        return out


def failure_result(f, *, conflict: bool = False) -> str:
    """The result of a call that failed for good (`f` a `kube.ApiFailure`)."""
    if conflict and f.code == 409:
        return CONFLICT
    if f.code == 404:
        return NOT_FOUND
    return FAILED if f.transient else REJECTED
