"""A Plan: where each pending pod goes (or why it cannot), which pods move or are evicted, and how it was decided."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

DYNAMIC = "(dynamic)"
"""A `volume_bindings` value: the claim is dynamically provisioned on the placement's node (no PV chosen)."""


@dataclass
class Placement:
    pod: str  # "namespace/name"
    node: str | None
    reason: str | None = None
    priority: int = 0
    nominated: bool = False  # placed after preempting victims
    # claim "namespace/name" → the PV it binds to, or "(dynamic)" when provisioned on the node (VolumeBinding's
    # Reserve); only claims the placement binds, never claims that were bound already
    volume_bindings: dict[str, str] = field(default_factory=dict)


@dataclass
class Eviction:
    pod: str
    node: str
    preemptor: str
    priority: int = 0
    pdb_violation: bool = False


@dataclass
class Move:
    """A running pod owned by a controller, evicted so that its replacement binds to `to` (`--allow-moves`):
    moves come in waves (1, 2, ...), each safe after the one before; placements and evictions follow the
    last. `admits`: the pending pods the plan places on the node the move leaves."""

    pod: str
    from_node: str
    to: str
    wave: int = 1
    admits: list[str] = field(default_factory=list)


@dataclass
class Plan:
    engine: str
    placements: list[Placement] = field(default_factory=list)
    evictions: list[Eviction] = field(default_factory=list)
    moves: list[Move] = field(default_factory=list)
    windows: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # The wall-clock deadline's report when it passed during the decision (CP-SAT): its seconds, the windows the
    # deadline fallback decided (greedy's plan) and those whose search it cut short. None: it never passed.
    deadline: dict[str, Any] | None = None
    # The verifier's violations of exactly this plan when they were found beside the decision (the forked greedy
    # run verifies its own plan, which the decision may commit as it is); None: not verified yet. Not output.
    verified: list[Any] | None = None

    def assignment(self) -> dict[str, str]:
        return {p.pod: p.node for p in self.placements if p.node is not None}

    def summary(self) -> dict[str, Any]:
        placed = [p for p in self.placements if p.node is not None]
        by_prio: dict[int, dict[str, int]] = {}
        for p in self.placements:
            slot = by_prio.setdefault(p.priority, {"placed": 0, "unplaced": 0})
            slot["placed" if p.node is not None else "unplaced"] += 1
        return {
            "pods": len(self.placements),
            "placed": len(placed),
            "unplaced": len(self.placements) - len(placed),
            "evictions": len(self.evictions),
            **({"moves": len(self.moves)} if self.moves else {}),
            "by_priority": {str(k): v for k, v in sorted(by_prio.items(), reverse=True)},
            "seconds": round(self.seconds, 4),
        }

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"engine": self.engine}
        if self.windows:
            out["windows"] = self.windows
        out["placements"] = [
            {k: v for k, v in asdict(p).items()
             if k in ("pod", "node", "reason") or (k in ("nominated", "volume_bindings") and v)}
            for p in self.placements
        ]
        out["evictions"] = [asdict(e) for e in self.evictions]
        if self.moves:
            out["moves"] = [{"pod": m.pod, "from": m.from_node, "to": m.to, "wave": m.wave, "admits": m.admits}
                            for m in self.moves]
        out["summary"] = self.summary()
        if self.deadline is not None:
            out["deadline"] = self.deadline
        if self.warnings:
            out["warnings"] = self.warnings
        return out
