"""TaintToleration: a node's NoSchedule/NoExecute taints must all be tolerated (Filter, failure
UnschedulableAndUnresolvable); nodes with fewer intolerable PreferNoSchedule taints score higher (Score,
reverse-normalised: 100 when no node has any, else 100 − 100·raw/max)."""

from __future__ import annotations

import numpy as np

from ...framework import Code, CycleState, FilterResult, Plugin
from ...framework.state import ClusterState
from ..helper import default_normalize_score
from .helpers import prefer_no_schedule_counts, untolerated_mask

# Since kube 1.35 (kubernetes/kubernetes#134740, also cherry-picked to 1.34) the status no longer names the
# taint key/value ("node(s) had untolerated taint {key: value}" before); the taint is only logged.
REASON = "node(s) had untolerated taint(s)"


class TaintToleration(Plugin):
    name = "TaintToleration"
    reads_pods = False
    static_filter = True
    static_score = True  # the node's taints and the pod's tolerations; normalised by the maximum

    def filter(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        mask = untolerated_mask(state.index, pod.tolerations, np.asarray(nodes, dtype=np.int64))
        return FilterResult.fail_where(mask, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON)

    def score(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        return prefer_no_schedule_counts(state.index, pod.tolerations, np.asarray(nodes, dtype=np.int64))

    def normalize(self, scores: np.ndarray, pod, cycle: CycleState) -> np.ndarray:
        return default_normalize_score(scores, reverse=True)


PLUGINS = [TaintToleration]
