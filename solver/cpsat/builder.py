"""The hard rules of a window's model, posted by every plugin's encoding (`plugins.encodings`), in one order.

Shared by the window engine and the rebalancer, so a plan from either honours every rule the other does.
"""

from __future__ import annotations

from collections.abc import Callable

from ..framework.encoding import ConstraintContext
from ..plugins import encodings
from ..plugins.volumebinding.encoding import ClaimChoices
from .groups import GroupMatcher, PodGroup
from .variables import Variables

CONSTRAINT_ORDER = ("NodePorts", "InterPodAffinity", "NodeResourcesFit", "PodTopologySpread", "VolumeRestrictions",
                    "NodeVolumeLimits", "VolumeBinding")
"""Plugins whose per-node caps (y ≤ 1) tighten the bounds go before capacity, which posts only what they leave."""


def constraint_order(encoded: dict) -> list[str]:
    """The plugins with constraints, in CONSTRAINT_ORDER first, then the others by name."""
    have = [name for name, e in encoded.items() if e.constrain is not None]
    return [n for n in CONSTRAINT_ORDER if n in have] + sorted(set(have) - set(CONSTRAINT_ORDER))


def post_constraints(v: Variables, groups: list[PodGroup], match: GroupMatcher, profile_of: Callable,
                     volume_hint: dict[str, str]) -> ClaimChoices:
    """Every plugin's constraints over the model; the delayed claims the model decides (VolumeBinding's)."""
    filters = {g.gid: {p.name for p in profile_of(g.rep).at("filter")} for g in groups}
    ctx = ConstraintContext(v, groups, match, profile_of(groups[0].rep), filters, volume_hint)
    encoded = encodings()
    posted = {name: encoded[name].constrain(ctx) for name in constraint_order(encoded)}
    return posted.get("VolumeBinding") or ClaimChoices()
