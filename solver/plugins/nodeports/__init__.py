"""NodePorts: the pod's host ports must be free on the node (Filter, failure Unschedulable).

Wanted ports are `pod.host_ports` — (hostIP, protocol, hostPort) of regular and sidecar init containers,
an empty IP already 0.0.0.0. A wanted (ip, proto, port) conflicts with a used one of the same proto and port
when either side binds 0.0.0.0 or both use the same IP. PreFilter skips pods without host ports.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from ...framework import Code, CycleState, FilterResult, Plugin, PreFilterResult
from ...framework.plugin import SUCCESS
from ...framework.queue import ASSIGNED_POD_DELETE
from ...framework.state import ClusterState

REASON = "node(s) didn't have free ports for the requested pod ports"
ALL_IPS = "0.0.0.0"


def conflicts(used: Mapping[tuple[str, str, int], int], wanted: Iterable[tuple[str, str, int]]) -> bool:
    """True when any wanted port conflicts with a port in use (HostPortInfo.CheckConflict)."""
    for ip, proto, port in wanted:
        if port <= 0:
            continue
        if ip == ALL_IPS:
            if any(p == port and pr == proto for _, pr, p in used):
                return True
        elif (ALL_IPS, proto, port) in used or (ip, proto, port) in used:
            return True
    return False


class NodePorts(Plugin):
    name = "NodePorts"
    hint_events = frozenset({ASSIGNED_POD_DELETE})

    def queueing_hint(self, event: str, pod, other, index) -> bool:
        """A deleted pod helps when it held a host port the pod wants."""
        used = {p: 1 for p in other.host_ports if p[2] > 0}
        return bool(used) and conflicts(used, pod.host_ports)

    def pre_filter(self, state: ClusterState, pod, cycle: CycleState) -> PreFilterResult:
        return SUCCESS if pod.host_ports else PreFilterResult.skip()

    def filter_reads(self, state: ClusterState, pod, cycle: CycleState, other) -> bool:
        """Only pods holding host ports count."""
        return bool(other.host_ports)

    def filter(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        wanted = pod.host_ports
        if not wanted:
            return FilterResult.success(len(nodes))
        ports = state.ports
        mask = np.fromiter((bool(used := ports.get(n)) and conflicts(used, wanted) for n in np.asarray(nodes).tolist()),
                           dtype=bool, count=len(nodes))
        return FilterResult.fail_where(mask, Code.UNSCHEDULABLE, REASON)


PLUGINS = [NodePorts]
