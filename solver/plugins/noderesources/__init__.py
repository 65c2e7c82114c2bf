"""NodeResourcesFit (Filter + Score) and NodeResourcesBalancedAllocation (Score), as upstream's
`noderesources` folder.

- Fit Filter: pod count, then every requested resource against allocatable − requested (`helpers.fit_filter`).
- Fit Score: the configured strategy (LeastAllocated by default, MostAllocated, RequestedToCapacityRatio) over
  the strategy's weighted resources, cpu/memory with the non-zero defaults (`scoring`). No normalisation.
- BalancedAllocation Score: how much placing the pod evens out the node's usage fractions (kube 1.36: the
  balance with the pod against the balance without it), from actual requests; skipped for best-effort pods.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...framework import CycleState, FilterResult, Plugin
from ...framework.queue import ASSIGNED_POD_DELETE
from ...framework.state import ClusterState
from .args import LEAST, MOST, FitArgs, parse_balanced_args, parse_fit_args
from .helpers import allocation, fit_filter, pod_requests
from .scoring import balanced_allocation, least_allocated, most_allocated, requested_to_capacity_ratio


class NodeResourcesFit(Plugin):
    name = "NodeResourcesFit"
    hint_events = frozenset({ASSIGNED_POD_DELETE})  # any assigned pod deleted may free what the pod lacked
    node_local_score = True  # the node's requested and allocatable with the pod's requests

    def __init__(self, args: dict[str, Any] | None = None) -> None:
        super().__init__(args)
        self.config: FitArgs = parse_fit_args(self.args)
        self._names = [r for r, _ in self.config.resources]
        self._weights = np.array([w for _, w in self.config.resources], dtype=np.int64)

    def filter(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        return fit_filter(state, pod.idx, nodes, self.config.ignored_resources, self.config.ignored_groups)

    def score(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        return self.score_of(*allocation(state, pod.idx, nodes, self._names, non_zero=True))

    def score_of(self, req: np.ndarray, alloc: np.ndarray, inc: np.ndarray) -> np.ndarray:
        """The configured strategy's score of rows of (requested incl. the pod, allocatable, included)."""
        if self.config.strategy == LEAST:
            return least_allocated(req, alloc, inc, self._weights)
        if self.config.strategy == MOST:
            return most_allocated(req, alloc, inc, self._weights)
        return requested_to_capacity_ratio(req, alloc, inc, self._weights, self.config.shape)


class NodeResourcesBalancedAllocation(Plugin):
    name = "NodeResourcesBalancedAllocation"
    node_local_score = True  # the node's requested and allocatable with the pod's requests

    def __init__(self, args: dict[str, Any] | None = None) -> None:
        super().__init__(args)
        self.resources = parse_balanced_args(self.args)

    def pre_score(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> bool:
        """Skip best-effort pods (every configured resource request is 0)."""
        return bool(pod_requests(state.index, pod.idx, self.resources, non_zero=False).any())

    def score(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        req, alloc, inc = allocation(state, pod.idx, nodes, self.resources, non_zero=False)
        return balanced_allocation(req, alloc, inc, pod_requests(state.index, pod.idx, self.resources, False))


PLUGINS = [NodeResourcesFit, NodeResourcesBalancedAllocation]
