"""NodeAffinity: `spec.nodeSelector` AND required node affinity (Filter, UnschedulableAndUnresolvable), the
`metadata.name` PreFilter shortcut, and preferred terms as a score normalised to 100·raw/max.

Plugin args (NodeAffinityArgs): `addedAffinity` — its required selector is checked first on every pod
("scheduler-enforced" reason), its preferred terms are added to every pod's preferred terms.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from kplace.models.errors import ConfigError
from kplace.models.k8s import NodeAffinity as NodeAffinitySpec
from kplace.models.k8s import NodeSelector, PreferredSchedulingTerm
from pydantic import ValidationError

from ...framework import Code, CycleState, FilterResult, Plugin, PreFilterResult
from ...framework.plugin import SUCCESS
from ...framework.state import ClusterState
from ..helper import default_normalize_score
from .helpers import node_name_union, node_selector_mask, preferred_scores, required_mask, term_parse_error

REASON_POD = "node(s) didn't match Pod's node affinity/selector"
REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
REASON_CONFLICT = "pod affinity terms conflict"
_FILTER_KEY = "NodeAffinity/filter"


def parse_args(args: dict[str, Any]) -> tuple[NodeSelector | None, list[PreferredSchedulingTerm]]:
    """NodeAffinityArgs → (added required selector, added preferred terms); ConfigError when invalid."""
    unknown = set(args) - {"addedAffinity"}
    if unknown:
        raise ConfigError(f"NodeAffinity args: unknown field(s) {', '.join(sorted(unknown))}; expected addedAffinity")
    raw = args.get("addedAffinity")
    if raw is None:
        return None, []
    try:
        spec = NodeAffinitySpec.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"NodeAffinity args: addedAffinity: {exc.errors()[0]['msg']}") from None
    required = spec.required_during_scheduling_ignored_during_execution
    if required is not None:
        for i, term in enumerate(required.node_selector_terms):
            if (err := term_parse_error(term)) is not None:
                raise ConfigError(
                    "NodeAffinity args: addedAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                    f"nodeSelectorTerms[{i}].{err}"
                )
    preferred = spec.preferred_during_scheduling_ignored_during_execution
    for i, term in enumerate(preferred):
        if term.weight == 0:  # ignored, as kube ignores it
            continue
        if (err := term_parse_error(term.preference)) is not None:
            where = f"addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}].preference"
            raise ConfigError(f"NodeAffinity args: {where}.{err}")
    return required, preferred


def _required(pod) -> NodeSelector | None:
    a = pod.spec.affinity
    return a.node_affinity.required_during_scheduling_ignored_during_execution if a and a.node_affinity else None


def _preferred(pod) -> list[PreferredSchedulingTerm]:
    a = pod.spec.affinity
    return a.node_affinity.preferred_during_scheduling_ignored_during_execution if a and a.node_affinity else []


class NodeAffinity(Plugin):
    name = "NodeAffinity"
    reads_pods = False
    static_filter = True
    static_score = True  # the node's labels and the pod's preferred terms; normalised by the maximum

    def __init__(self, args: dict[str, Any] | None = None) -> None:
        super().__init__(args)
        self.added_required, self.added_preferred = parse_args(self.args)

    # --- filtering ---------------------------------------------------------------------------------

    def pre_filter(self, state: ClusterState, pod, cycle: CycleState) -> PreFilterResult:
        required = _required(pod)
        if required is None and self.added_required is None and not pod.spec.node_selector:
            return PreFilterResult.skip()
        if required is None or not required.node_selector_terms:
            return SUCCESS
        names = node_name_union(required.node_selector_terms)
        if names is None:
            return SUCCESS
        if not names:
            return PreFilterResult(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_CONFLICT)
        ids = sorted(state.index.node_id[n] for n in names if n in state.index.node_id)
        return PreFilterResult(node_subset=np.array(ids, dtype=np.int64))

    def _masks(self, state: ClusterState, pod, cycle: CycleState) -> tuple[np.ndarray | None, np.ndarray]:
        """(enforced, pod) masks over all nodes, computed once per cycle."""
        hit = cycle.get(_FILTER_KEY)
        if hit is None:
            index = state.index
            enforced = None if self.added_required is None else node_selector_mask(index, self.added_required)
            hit = cycle[_FILTER_KEY] = (enforced, required_mask(index, pod.spec.node_selector, _required(pod)))
        return hit

    def filter(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        nodes = np.asarray(nodes, dtype=np.int64)
        enforced, own = self._masks(state, pod, cycle)
        code = np.zeros(len(nodes), dtype=np.int8)
        reasons = []
        bad_enforced = np.zeros(len(nodes), dtype=bool) if enforced is None else ~enforced[nodes]
        bad_pod = ~own[nodes] & ~bad_enforced
        uu = np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        for mask, text in ((bad_enforced, REASON_ENFORCED), (bad_pod, REASON_POD)):
            if mask.any():
                code[mask] = uu
                reasons.append((text, mask))
        return FilterResult(code, reasons)

    # --- scoring -----------------------------------------------------------------------------------

    def pre_score(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> bool:
        return bool(_preferred(pod) or self.added_preferred)

    def score(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        raw = preferred_scores(state.index, [*self.added_preferred, *_preferred(pod)])
        return raw[np.asarray(nodes, dtype=np.int64)]

    def normalize(self, scores: np.ndarray, pod, cycle: CycleState) -> np.ndarray:
        return default_normalize_score(scores)


PLUGINS = [NodeAffinity]
