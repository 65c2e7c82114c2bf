"""A verifier finding: the pod, the node it names (if any), the kube rule it breaks and why."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class Violation:
    pod: str
    node: str | None
    rule: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
