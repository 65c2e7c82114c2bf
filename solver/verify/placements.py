"""The plan's placements: each names a pending pod of the state, at most once, and when placed an existing
node. Their claim bindings are checked once here (`claims.Claims.check_bindings`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kplace.models.k8s import Pod
from kplace.models.plan import Placement

from .records import PodTable
from .replay import Binding
from .violation import Violation


@dataclass
class Placed:
    """What the valid placements ask for: (pod, node id) to bind in plan order, each pod's node name, and the
    placements that bind claims."""

    todo: list[Binding] = field(default_factory=list)
    node_of: dict[str, str] = field(default_factory=dict)
    with_volumes: list[tuple[Placement, Pod]] = field(default_factory=list)


def _placement_fails(pl: Placement, pods: PodTable, seen: set[str], node_id: dict[str, int]) -> Violation | None:
    """What is wrong with the placement, or None; a pending pod's first placement is added to `seen`."""
    pi = pods.info.get(pl.pod)
    if pi is None:
        return Violation(pl.pod, pl.node, "UnknownPod", "no such pod in the state")
    if not pi.pending:
        where = f"bound to {pi.pod.spec.node_name}" if pi.pod.spec.node_name else "terminating"
        return Violation(pl.pod, pl.node, "NotPending", f"the pod is not pending ({where})")
    if pl.pod in seen:
        return Violation(pl.pod, pl.node, "DuplicatePod", "the pod appears more than once in the plan")
    seen.add(pl.pod)
    if pl.node is not None and pl.node not in node_id:
        return Violation(pl.pod, pl.node, "UnknownNode", f"no node {pl.node!r} in the state")
    return None


def check_placements(placements: list[Placement], pods: PodTable, node_id: dict[str, int]
                     ) -> tuple[list[Violation], Placed]:
    """The placements' violations, and what the valid ones ask for."""
    out: list[Violation] = []
    placed = Placed()
    seen: set[str] = set()
    for pl in placements:
        fail = _placement_fails(pl, pods, seen, node_id)
        if fail is not None:
            out.append(fail)
        elif pl.node is not None:
            placed.node_of[pl.pod] = pl.node
            placed.todo.append((pods(pl.pod), node_id[pl.node]))
            if pl.volume_bindings:
                placed.with_volumes.append((pl, pods.info[pl.pod].pod))
    return out, placed
