"""The nodes' fixed facts and the filters that read only the pod and the node: SchedulingGates,
NodeUnschedulable, NodeName, TaintToleration (NoSchedule/NoExecute taints) and NodeAffinity (nodeSelector ∧
required node affinity). Also the cache of per-node eligibility vectors the domain counts use."""

from __future__ import annotations

from collections.abc import Callable

from kplace.models.index import ClusterIndex
from kplace.models.k8s import Node, Pod, Taint
from kplace.models.quantity import canonical
from kplace.models.selectors import required_node_affinity_matches
from kplace.models.tolerations import tolerated_by_any

HARD_EFFECTS = ("NoSchedule", "NoExecute")
UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")


class Nodes:
    """Node `n` of the index: its object, name, labels and canonical allocatable. `running` judges pods already
    running, which a cordon does not evict and whose `spec.nodeName` (the node that bound them) does not count."""

    def __init__(self, index: ClusterIndex, running: bool = False) -> None:
        self.nodes: list[Node] = list(index.nodes)
        self.id = {n.metadata.name: i for i, n in enumerate(self.nodes)}
        self.names = [n.metadata.name for n in self.nodes]
        self.labels = [n.metadata.labels for n in self.nodes]
        self.ns_labels = index.namespace_labels
        self.alloc = [{r: canonical(r, q) for r, q in n.allocatable.items()} for n in self.nodes]
        self.running = running
        self.eligible_cache: dict[tuple, list[bool]] = {}

    def __len__(self) -> int:
        return len(self.nodes)

    def eligible(self, sig: tuple, node_ok: Callable[[int], bool]) -> list[bool]:
        """The per-node vector `node_ok` gives, cached under `sig`."""
        if sig not in self.eligible_cache:
            self.eligible_cache[sig] = [node_ok(n) for n in range(len(self.nodes))]
        return self.eligible_cache[sig]

    def has_key(self, key: str) -> list[bool]:
        """Which nodes carry label `key`."""
        return self.eligible(("has", key), lambda n: key in self.labels[n])

    def untolerated_taint(self, pod: Pod, n: int) -> Taint | None:
        for taint in self.nodes[n].spec.taints:
            if taint.effect in HARD_EFFECTS and not tolerated_by_any(pod.spec.tolerations, taint):
                return taint
        return None

    def node_affinity_ok(self, pod: Pod, n: int) -> bool:
        return required_node_affinity_matches(pod.spec, self.labels[n], self.names[n])

    def fails(self, pod: Pod, n: int) -> tuple[str, str] | None:
        """The first of the pod-and-node filters (kube's order) that rejects `pod` on node `n`, or None."""
        spec, node = pod.spec, self.nodes[n]
        if spec.scheduling_gates:
            return "SchedulingGates", "the pod has scheduling gates, so it is not schedulable"
        cordoned = node.spec.unschedulable and not self.running
        if cordoned and not tolerated_by_any(spec.tolerations, UNSCHEDULABLE_TAINT):
            return "NodeUnschedulable", "node(s) were unschedulable"
        if spec.node_name and not self.running and spec.node_name != node.metadata.name:
            return "NodeName", f"the pod's spec.nodeName is {spec.node_name!r}"
        taint = self.untolerated_taint(pod, n)
        if taint is not None:
            return "TaintToleration", f"untolerated taint {{{taint.key}: {taint.value}}} ({taint.effect})"
        if not self.node_affinity_ok(pod, n):
            return "NodeAffinity", "node(s) didn't match Pod's node affinity/selector"
        return None
