"""NodeResourcesFitArgs and NodeResourcesBalancedAllocationArgs: kube's defaulting and validation.

Args arrive as the camelCase `pluginConfig[].args` mapping of a KubeSchedulerConfiguration.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kplace.models.errors import ConfigError

LEAST, MOST, RTCR = "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"
STRATEGIES = (LEAST, MOST, RTCR)
MAX_CUSTOM_PRIORITY_SCORE = 10
DEFAULT_RESOURCES = (("cpu", 1), ("memory", 1))
_LABEL_NAME = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                         r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


@dataclass(frozen=True)
class FitArgs:
    strategy: str = LEAST
    resources: tuple[tuple[str, int], ...] = DEFAULT_RESOURCES
    shape: tuple[tuple[int, int], ...] = ()  # RequestedToCapacityRatio points, scores already ×10
    ignored_resources: frozenset[str] = field(default_factory=frozenset)
    ignored_groups: frozenset[str] = field(default_factory=frozenset)


def _mapping(raw: Any, where: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be a mapping, got {type(raw).__name__}")
    return raw


def _unknown(raw: dict[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(raw) - allowed)
    if extra:
        raise ConfigError(f"{where}: unknown field(s) {', '.join(extra)}; expected {', '.join(sorted(allowed))}")


def _int(v: Any, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"{where}: must be an integer, got {v!r}")
    return v


def _resources(raw: Any, where: str) -> list[tuple[str, int]]:
    """`[{name, weight}]`; an absent or 0 weight defaults to 1 (kube's SetDefaults)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ConfigError(f"{where}: must be a list of {{name, weight}}")
    out = []
    for i, r in enumerate(raw):
        r = _mapping(r, f"{where}[{i}]")
        _unknown(r, {"name", "weight"}, f"{where}[{i}]")
        name = r.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{where}[{i}].name: required")
        w = _int(r.get("weight", 0) or 0, f"{where}[{i}].weight")
        out.append((name, w or 1))
    return out


def _string_list(raw: Any, where: str) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise ConfigError(f"{where}: must be a list of strings")
    return raw


def parse_fit_args(raw: dict[str, Any] | None) -> FitArgs:
    """Default and validate NodeResourcesFitArgs (SetDefaults_NodeResourcesFitArgs + ValidateNodeResourcesFitArgs)."""
    w = "NodeResourcesFit args"
    raw = _mapping(raw, w)
    _unknown(raw, {"ignoredResources", "ignoredResourceGroups", "scoringStrategy"}, w)
    ignored = _string_list(raw.get("ignoredResources"), f"{w}.ignoredResources")
    for i, name in enumerate(ignored):
        if not _LABEL_NAME.match(name):
            raise ConfigError(f"{w}.ignoredResources[{i}]: {name!r} is not a valid resource name")
    groups = _string_list(raw.get("ignoredResourceGroups"), f"{w}.ignoredResourceGroups")
    for i, g in enumerate(groups):
        if "/" in g:
            raise ConfigError(f"{w}.ignoredResourceGroups[{i}]: resource group name can't contain '/', got {g!r}")
        if not _LABEL_NAME.match(g):
            raise ConfigError(f"{w}.ignoredResourceGroups[{i}]: {g!r} is not a valid resource group name")

    s = _mapping(raw.get("scoringStrategy"), f"{w}.scoringStrategy")
    _unknown(s, {"type", "resources", "requestedToCapacityRatio"}, f"{w}.scoringStrategy")
    strategy = s.get("type") if raw.get("scoringStrategy") is not None else LEAST  # kube defaults only a nil one
    if strategy not in STRATEGIES:
        raise ConfigError(
            f"{w}.scoringStrategy.type: unsupported value {strategy!r}; supported: {', '.join(STRATEGIES)}"
        )
    resources = _resources(s.get("resources"), f"{w}.scoringStrategy.resources") or list(DEFAULT_RESOURCES)
    for i, (name, weight) in enumerate(resources):
        if not 0 < weight <= 100:
            raise ConfigError(f"{w}.scoringStrategy.resources[{i}].weight: resource weight of {name} "
                              f"not in valid range (0, 100], got {weight}")
    shape: list[tuple[int, int]] = []
    rtcr = s.get("requestedToCapacityRatio")
    if rtcr is not None:
        rtcr = _mapping(rtcr, f"{w}.scoringStrategy.requestedToCapacityRatio")
        shape = _shape(rtcr.get("shape"), f"{w}.scoringStrategy.requestedToCapacityRatio.shape")
    if strategy == RTCR and rtcr is None:
        raise ConfigError(f"{w}.scoringStrategy.requestedToCapacityRatio: required for type {RTCR}")
    return FitArgs(strategy, tuple(resources), tuple((u, sc * MAX_CUSTOM_PRIORITY_SCORE) for u, sc in shape),
                   frozenset(ignored), frozenset(groups))


def _shape(raw: Any, where: str) -> list[tuple[int, int]]:
    if not raw:
        raise ConfigError(f"{where}: at least one point must be specified")
    if not isinstance(raw, list):
        raise ConfigError(f"{where}: must be a list of {{utilization, score}}")
    points = []
    for i, pt in enumerate(raw):
        pt = _mapping(pt, f"{where}[{i}]")
        _unknown(pt, {"utilization", "score"}, f"{where}[{i}]")
        u = _int(pt.get("utilization", 0), f"{where}[{i}].utilization")
        sc = _int(pt.get("score", 0), f"{where}[{i}].score")
        if not 0 <= u <= 100:
            raise ConfigError(f"{where}[{i}].utilization: not in valid range [0, 100], got {u}")
        if not 0 <= sc <= MAX_CUSTOM_PRIORITY_SCORE:
            raise ConfigError(f"{where}[{i}].score: not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}], got {sc}")
        if points and points[-1][0] >= u:
            raise ConfigError(f"{where}[{i}].utilization: values must be sorted in increasing order")
        points.append((u, sc))
    return points


def parse_balanced_args(raw: dict[str, Any] | None) -> tuple[str, ...]:
    """NodeResourcesBalancedAllocationArgs → resource names (default cpu, memory); weights must be 1."""
    w = "NodeResourcesBalancedAllocation args"
    raw = _mapping(raw, w)
    _unknown(raw, {"resources"}, w)
    resources = _resources(raw.get("resources"), f"{w}.resources") or list(DEFAULT_RESOURCES)
    seen: set[str] = set()
    for i, (name, weight) in enumerate(resources):
        if name in seen:
            raise ConfigError(f"{w}.resources[{i}].name: duplicate value {name!r}")
        seen.add(name)
        if weight != 1:
            raise ConfigError(f"{w}.resources[{i}].weight: must be 1, got {weight}")
    return tuple(name for name, _ in resources)
