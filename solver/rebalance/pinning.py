"""Which bound pods a plan may move: every bound pod is movable or pinned, with a reason.

The reasons, first that applies: the policy's DefaultEvictor rules (`policy.never_move_reason`); a
PodDisruptionBudget selecting it that allows no disruption, even counting as healthy the pending pods it selects
that the plan may place (their placements come in earlier waves, see `waves`); a current violation, outside --goal
repair|all (and within them, a capacity or ports violation, which moving cannot be trusted to fix); a cordoned node
(unless the pod is repaired).
"""

from __future__ import annotations

from kplace.models.index import ClusterIndex, PodInfo

from .check import StateViolation
from .policy import Policy, never_move_reason

REPAIR_GOALS = ("repair", "all")


def classify(index: ClusterIndex, policy: Policy, goal: str, before: list[StateViolation],
             placing: list[str] = ()) -> dict[str, str]:
    """Pinned bound pods and why (the others may move); `placing`: the pending pods the plan may place."""
    classes = {pc.metadata.name: pc.value for pc in index.snapshot.priority_classes}
    snap = index.snapshot
    gained = [0] * len(snap.pdbs)
    for key in placing:
        for i in index.pdbs_of(index.pod_by_key[key]):
            gained[i] += 1
    allowed = [snap.pdb_disruptions_allowed(p, g) for p, g in zip(snap.pdbs, gained, strict=True)]
    violators: dict[str, str] = {}
    for v in before:
        violators.setdefault(v.pod, v.rule)
    repair = goal in REPAIR_GOALS
    pinned: dict[str, str] = {}
    for pi in index.bound:
        reason = (never_move_reason(policy, pi, classes) or _pdb_reason(index, pi, allowed)
                  or _violation_reason(violators.get(pi.key), repair))
        if reason is None and index.unschedulable[pi.node] and not (repair and pi.key in violators):
            reason = "on a cordoned node"
        if reason is not None:
            pinned[pi.key] = reason
    return pinned


def _pdb_reason(index: ClusterIndex, pi: PodInfo, allowed: list[int]) -> str | None:
    """The first PodDisruptionBudget selecting `pi` with no disruption allowed, as a reason."""
    zero = [i for i in index.pdbs_of(pi) if allowed[i] <= 0]
    if not zero:
        return None
    pdb = index.snapshot.pdbs[zero[0]].metadata
    return f"PodDisruptionBudget {pdb.namespace}/{pdb.name} allows no disruption"


def _violation_reason(kind: str | None, repair: bool) -> str | None:
    """Why a pod violating rule `kind` now stays put (None: it does not violate, or the repair moves it)."""
    if kind is None:
        return None
    if not repair:
        return f"violates {kind} now (only --goal repair or all moves it)"
    if kind in ("capacity", "ports"):
        return f"violates {kind} now, which is not a repair kplace makes"
    return None


def short_reason(reason: str) -> str:
    """A pinning reason grouped for the summary (the object names dropped)."""
    if reason.startswith("PodDisruptionBudget"):
        return "PodDisruptionBudget allows no disruption"
    if reason.startswith("priority "):
        return "priority at or above the policy's threshold"
    return reason
