"""The order in which a plan is committed, as kube-scheduler binds: a preemptor's victims are evicted, then the
claims it binds are bound (VolumeBinding's PreBind), then its Binding is made; pods follow in queue (plan)
order. Only placements with a node are committed."""

from __future__ import annotations

from typing import Any

from kplace.models.plan import Eviction, Plan


def commit_order(plan: Plan) -> list[tuple[str, Any]]:
    """("evict", Eviction), ("volume", (Placement, claim, PV or DYNAMIC)) and ("bind", Placement) steps: each
    pod's evictions, then the claims it binds, just before its Binding.

    Evictions whose preemptor the plan does not place (none in a verified plan) come first.
    """
    by_preemptor: dict[str, list[Eviction]] = {}
    for e in plan.evictions:
        by_preemptor.setdefault(e.preemptor, []).append(e)
    placed = {p.pod for p in plan.placements if p.node is not None}
    steps: list[tuple[str, Any]] = [("evict", e) for e in plan.evictions if e.preemptor not in placed]
    for p in plan.placements:
        if p.node is None:
            continue
        steps.extend(("evict", e) for e in by_preemptor.get(p.pod, []))
        steps.extend(("volume", (p, claim, what)) for claim, what in p.volume_bindings.items())
        steps.append(("bind", p))
    return steps
