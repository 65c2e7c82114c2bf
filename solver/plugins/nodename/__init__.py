"""NodeName: a pod that names a node (`spec.nodeName`) fits only that node. Failure is
UnschedulableAndUnresolvable."""

from __future__ import annotations

import numpy as np

from ...framework import Code, CycleState, FilterResult, Plugin
from ...framework.state import ClusterState

REASON = "node(s) didn't match the requested node name"


def fits(node_name: str, wanted: str) -> bool:
    """True when the pod names no node or names this one."""
    return not wanted or wanted == node_name


class NodeName(Plugin):
    name = "NodeName"
    reads_pods = False
    static_filter = True

    def filter(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        wanted = pod.spec.node_name
        if not wanted:
            return FilterResult.success(len(nodes))
        target = state.index.node_id.get(wanted, -1)
        return FilterResult.fail_where(np.asarray(nodes) != target, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON)


PLUGINS = [NodeName]
