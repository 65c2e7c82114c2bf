"""NodeUnschedulable: a cordoned node (`spec.unschedulable`) takes only pods that tolerate
`node.kubernetes.io/unschedulable:NoSchedule`. Failure is UnschedulableAndUnresolvable."""

from __future__ import annotations

import numpy as np
from kplace.models.k8s import Taint
from kplace.models.tolerations import tolerated_by_any

from ...framework import Code, CycleState, FilterResult, Plugin
from ...framework.state import ClusterState

UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")
REASON = "node(s) were unschedulable"


def tolerates_unschedulable(tolerations) -> bool:
    return tolerated_by_any(tolerations, UNSCHEDULABLE_TAINT)


class NodeUnschedulable(Plugin):
    name = "NodeUnschedulable"
    reads_pods = False
    static_filter = True

    def filter(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        if tolerates_unschedulable(pod.tolerations):
            return FilterResult.success(len(nodes))
        return FilterResult.fail_where(state.index.unschedulable[nodes], Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON)


PLUGINS = [NodeUnschedulable]
