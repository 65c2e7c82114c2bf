"""The sections of a plan (what `kplace rebalance` prints) that list its steps: moves, placements, waves, dropped
steps and the pinning summary, from the waves (`waves.Waves`) and the pinned pods (`pinning.classify`)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from kplace.models.index import ClusterIndex

from .pinning import short_reason
from .policy import move_cost
from .waves import Waves

SIMULATED = ("dry run: nothing was evicted or bound. Simulated: per-wave capacity with every moving pod counted on "
             "both its old and its new node (resources and pod slots), PodDisruptionBudget disruptionsAllowed from "
             "each selector and the current healthy pods (reset per wave, as replacements are Running again before "
             "the next), per-workload caps, and kube's hard rules before and after every wave. Not simulated: "
             "controllers' timing, image pulls, readiness probes, volume attachment, and other schedulers.")


def step_sections(index: ClusterIndex, waves: Waves, pending: list[str]) -> dict[str, Any]:
    """The plan's `moves`, `placements` (one per pending pod, node None when it stays pending) and `waves`.

    A move admits the pending pods placed on the node it leaves (the room it frees there)."""
    names = index.node_names
    placed = {s.pod for s in waves.steps if s.src is None}
    admitted: dict[int, list[str]] = defaultdict(list)
    for s in waves.steps:
        if s.src is None:
            admitted[s.dst].append(s.pod)
    return {
        "moves": [{"pod": s.pod, "from": names[s.src], "to": names[s.dst], "wave": s.wave,
                   "cost": move_cost(index.pod_by_key[s.pod]), "admits": admitted.get(s.src, [])}
                  for s in waves.steps if s.src is not None],
        "placements": [{"pod": k, "node": names[waves.final[k]] if k in placed else None,
                        "wave": next((s.wave for s in waves.steps if s.pod == k), None)} for k in pending],
        "waves": [{"wave": w, "moves": sum(1 for s in waves.steps if s.wave == w and s.src is not None),
                   "placements": sum(1 for s in waves.steps if s.wave == w and s.src is None)}
                  for w in range(1, waves.count + 1)],
    }


def placed_count(waves: Waves) -> int:
    """Pending pods the waves place."""
    return len({s.pod for s in waves.steps if s.src is None})


def never_moved(pinned: dict[str, str]) -> dict[str, int]:
    """Pinned pods counted by reason (object names dropped), sorted by reason."""
    return dict(sorted(Counter(short_reason(r) for r in pinned.values()).items()))


def dropped(index: ClusterIndex, waves: Waves) -> list[dict[str, Any]]:
    """The steps no wave could take, and why."""
    names = index.node_names
    return [{"pod": s.pod, "from": names[s.src] if s.src is not None else None, "to": names[s.dst], "reason": why}
            for s, why in waves.dropped]
