"""PodTopologySpread: DoNotSchedule constraints filter, ScheduleAnyway constraints score, as kube-scheduler.

Filter (per node n, constraints in order, the first failure decides):
- n lacks the key → UU "…(missing required label)";
- skew = count[n[key]] + selfMatch − globalMin > maxSkew → U.
Score: raw(n) = round(Σ_c count_c(n)·ln(size_c + 2) + maxSkew_c − 1); normalised 100·(max + min − raw)/max over
non-ignored nodes (100 everywhere when max = 0), ignored nodes 0. The maths is in `spread`.

A pod that declares no constraints at all gets the default constraints (System: hostname maxSkew 3 and zone
maxSkew 5, ScheduleAnyway) with a selector derived from the Services/RCs/RSs/StatefulSets selecting it.
Args (PodTopologySpreadArgs): `defaultConstraints`, `defaultingType` System (default) | List.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from kplace.models.errors import ConfigError
from kplace.models.index import PodInfo
from kplace.models.k8s import TopologySpreadConstraint
from pydantic import ValidationError

from ...framework import CycleState, FilterResult, Plugin, PreFilterResult
from ...framework.queue import ASSIGNED_POD_ADD, ASSIGNED_POD_DELETE
from ...framework.state import ClusterState
from .spread import (
    SYSTEM_DEFAULT_CONSTRAINTS,
    ScoreState,
    filter_codes,
    filter_state,
    normalize_spread,
    pod_constraints,
    score_state,
)

REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
REASON_NODE_LABEL_NOT_MATCH = REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

_PRE_FILTER = "PreFilterPodTopologySpread"
_PRE_SCORE = "PreScorePodTopologySpread"


def parse_args(args: dict[str, Any] | None) -> tuple[list[TopologySpreadConstraint], bool]:
    """PodTopologySpreadArgs (camelCase) → (default constraints, system-defaulted), validated as kube does."""
    args = dict(args or {})
    where = "PodTopologySpreadArgs"
    unknown = sorted(set(args) - {"defaultConstraints", "defaultingType"})
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {', '.join(map(repr, unknown))}")
    dtype = args.get("defaultingType") or "System"
    raw = args.get("defaultConstraints") or []
    if dtype not in ("System", "List"):
        raise ConfigError(f"{where}.defaultingType: unsupported value {dtype!r}: supported values: List, System")
    if not isinstance(raw, list):
        raise ConfigError(f"{where}.defaultConstraints: must be a list")
    if dtype == "System" and raw:
        raise ConfigError(f"{where}.defaultingType: Invalid value \"System\": when .defaultConstraints are not empty")
    constraints: list[TopologySpreadConstraint] = []
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(raw):
        path = f"{where}.defaultConstraints[{i}]"
        if not isinstance(c, dict):
            raise ConfigError(f"{path}: must be a mapping")
        skew = c.get("maxSkew")
        if isinstance(skew, bool) or not isinstance(skew, int) or skew <= 0:
            raise ConfigError(f"{path}.maxSkew: {skew!r} not in valid range (0, inf)")
        if not c.get("topologyKey"):
            raise ConfigError(f"{path}.topologyKey: Required value: can not be empty")
        if c.get("whenUnsatisfiable") not in ("DoNotSchedule", "ScheduleAnyway"):
            raise ConfigError(f"{path}.whenUnsatisfiable: must be DoNotSchedule or ScheduleAnyway, "
                              f"got {c.get('whenUnsatisfiable')!r}")
        if c.get("labelSelector") is not None:
            raise ConfigError(f"{path}.labelSelector: Forbidden: constraint must not define a selector, "
                              "as they deduced for each pod")
        pair = (c["topologyKey"], c["whenUnsatisfiable"])
        if pair in seen:
            raise ConfigError(f"{path}: Duplicate value: {{{pair[0]}, {pair[1]}}}")
        seen.add(pair)
        try:
            constraints.append(TopologySpreadConstraint.model_validate(c))
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])
            raise ConfigError(f"{path}.{loc}: {first['msg']}") from None
    if dtype == "System":
        return list(SYSTEM_DEFAULT_CONSTRAINTS), True
    return constraints, False


class PodTopologySpread(Plugin):
    name = "PodTopologySpread"
    hint_events = frozenset({ASSIGNED_POD_ADD, ASSIGNED_POD_DELETE})

    def __init__(self, args: dict[str, Any] | None = None) -> None:
        super().__init__(args)
        self.default_constraints, self.system_defaulted = parse_args(args)

    def queueing_hint(self, event: str, pod: PodInfo, other: PodInfo, index) -> bool:
        """A pod of the same namespace added or deleted helps when some hard constraint's selector matches it."""
        return other.namespace == pod.namespace and any(
            c.selector.matches(other.labels)
            for c in pod_constraints(index, pod, "DoNotSchedule", self.default_constraints))

    def pre_filter(self, state: ClusterState, pod: PodInfo, cycle: CycleState) -> PreFilterResult:
        constraints = pod_constraints(state.index, pod, "DoNotSchedule", self.default_constraints)
        if not constraints:
            return PreFilterResult.skip()
        cycle[_PRE_FILTER] = filter_state(state, pod, constraints)
        return PreFilterResult()

    def update_pre_filter(self, state: ClusterState, pod: PodInfo, cycle: CycleState, other: PodInfo, node: int,
                          delta: int) -> None:
        fcs = cycle.get(_PRE_FILTER)
        if fcs:
            fcs.update(state.index, pod, other, node, delta)

    def filter_reads(self, state: ClusterState, pod: PodInfo, cycle: CycleState, other: PodInfo) -> bool:
        """`other`, of the pod's namespace, matches some hard constraint's selector (it may change a domain's
        count, `FilterConstraint.update`)."""
        fcs = cycle.get(_PRE_FILTER)
        return bool(fcs) and other.namespace == pod.namespace and any(
            fc.constraint.selector.matches(other.labels) for fc in fcs)

    def filter(self, state: ClusterState, pod: PodInfo, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        fcs = cycle.get(_PRE_FILTER)
        if not fcs:
            return FilterResult.success(len(nodes))
        code, missing = filter_codes(state.index, fcs, nodes)
        reasons = [
            (text, mask)
            for text, mask in ((REASON_NODE_LABEL_NOT_MATCH, missing), (REASON_CONSTRAINTS_NOT_MATCH, code == 1))
            if mask.any()
        ]
        return FilterResult(code, reasons)

    def pre_score(self, state: ClusterState, pod: PodInfo, cycle: CycleState, nodes: np.ndarray) -> bool:
        if state.n_nodes == 0:
            return False
        constraints = pod_constraints(state.index, pod, "ScheduleAnyway", self.default_constraints)
        if not constraints:
            return False
        require_all = bool(pod.spread_constraints) or not self.system_defaulted
        cycle[_PRE_SCORE] = score_state(state, pod, constraints, require_all, np.asarray(nodes, dtype=np.int64))
        return True

    def score(self, state: ClusterState, pod: PodInfo, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        s: ScoreState | None = cycle.get(_PRE_SCORE)
        if s is None:
            return np.zeros(len(nodes), dtype=np.int64)
        if len(s.raw) != len(nodes):  # scored on other nodes than PreScore saw: recompute for these
            s = score_state(state, pod, s.constraints, s.require_all, np.asarray(nodes, dtype=np.int64))
            cycle[_PRE_SCORE] = s
        return s.raw.copy()

    def normalize(self, scores: np.ndarray, pod: PodInfo, cycle: CycleState) -> np.ndarray:
        s: ScoreState | None = cycle.get(_PRE_SCORE)
        if s is None:
            return scores
        return normalize_spread(scores, s.ignored)


PLUGINS = [PodTopologySpread]
