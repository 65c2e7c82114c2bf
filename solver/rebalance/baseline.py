"""The baseline pack is compared with: a descheduler-style HighNodeUtilization pass, then greedy re-placement.

HighNodeUtilization (sigs.k8s.io/descheduler, nodeutilization): a node is *underutilised* when its requested
share of every resource named in `thresholds` is below the threshold (cpu and memory 20% by default). With no
underutilised node, or with every node underutilised, nothing happens. Otherwise evictable pods (the same
DefaultEvictor rules as `kplace rebalance`, PDB budgets respected) are evicted from the underutilised nodes,
least used first, while the non-underutilised schedulable nodes still have room left, per resource, for what
has been evicted (the descheduler's continue condition). The evicted pods are then placed again by kube-scheduler
(kplace's greedy engine) with the NodeResourcesFit MostAllocated strategy the descheduler recommends for it;
they may land back on the nodes they came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from kplace.models.index import ClusterIndex

from ..framework.config import SchedulerConfig, parse_config
from ..greedy import GreedyScheduler
from .model import relaxed_index
from .pinning import classify
from .policy import Policy, is_node_bound_daemon

MOST_ALLOCATED = {
    "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}],
}


@dataclass
class BaselineResult:
    evicted: list[str] = field(default_factory=list)
    placed: dict[str, str | None] = field(default_factory=dict)
    non_empty_before: int = 0
    non_empty_after: int = 0

    @property
    def moves(self) -> int:
        return sum(1 for k in self.evicted if self.placed.get(k))

    @property
    def lost(self) -> int:
        return sum(1 for k in self.evicted if not self.placed.get(k))

    @property
    def nodes_freed(self) -> int:
        return self.non_empty_before - self.non_empty_after


def _non_empty(index: ClusterIndex, where: dict[str, int]) -> int:
    return len({n for k, n in where.items() if not is_node_bound_daemon(index.pod_by_key[k])})


def high_node_utilization(index: ClusterIndex, policy: Policy | None = None,
                          config: SchedulerConfig | None = None) -> BaselineResult:
    """HighNodeUtilization's evictions, then the evicted pods placed again by the greedy engine (`config`, by
    default MostAllocated)."""
    policy = policy or Policy()
    where = {pi.key: int(pi.node) for pi in index.pods if pi.node >= 0}
    out = BaselineResult(non_empty_before=_non_empty(index, where))
    use = _Usage.of(index, policy.pack.thresholds or {"cpu": 20.0, "memory": 20.0})
    under = use.underutilised()
    under_set = set(under)
    targets = [n for n in range(len(index.nodes)) if n not in under_set and not index.unschedulable[n]]
    if under and targets:
        out.evicted = _evictions(index, policy, use, under, targets)
    if not out.evicted:
        out.non_empty_after = out.non_empty_before
        return out
    rel = relaxed_index(index, set(out.evicted))
    sched = GreedyScheduler(rel, config or parse_config(MOST_ALLOCATED), preemption=False)
    evicted = set(out.evicted)
    plan = sched.run([p for p in rel.pending if p.key in evicted])
    for pl in plan.placements:
        out.placed[pl.pod] = pl.node
    after = {k: n for k, n in where.items() if k not in evicted}
    after.update({k: index.node_id[v] for k, v in out.placed.items() if v})
    out.non_empty_after = _non_empty(index, after)
    return out


@dataclass
class _Usage:
    """Requested and allocatable per node of each thresholded resource (pods: pod count and maxPods)."""

    index: ClusterIndex
    thresholds: dict[str, float]
    cols: dict[str, int]
    usage: dict[str, np.ndarray]
    alloc: dict[str, np.ndarray]

    @classmethod
    def of(cls, index: ClusterIndex, thresholds: dict[str, float]) -> _Usage:
        cols = {r: index.rid[r] for r in thresholds if r in index.rid}
        usage = {r: index.requested[:, c].astype(float) for r, c in cols.items()}
        alloc = {r: index.alloc[:, c].astype(float) for r, c in cols.items()}
        if "pods" in thresholds:
            usage["pods"] = index.pod_count.astype(float)
            alloc["pods"] = index.max_pods.astype(float)
        return cls(index, thresholds, cols, usage, alloc)

    def underutilised(self) -> list[int]:
        """The schedulable nodes below every threshold."""
        return [n for n in range(len(self.index.nodes)) if not self.index.unschedulable[n] and all(
            self.alloc[r][n] > 0 and 100 * self.usage[r][n] / self.alloc[r][n] < t
            for r, t in self.thresholds.items() if r in self.usage)]

    def share(self, n: int) -> float:
        """Node n's highest percentage used over the thresholded resources."""
        return max(100 * self.usage[r][n] / self.alloc[r][n] if self.alloc[r][n] > 0 else 0 for r in self.usage)


def _evictions(index: ClusterIndex, policy: Policy, use: _Usage, under: list[int], targets: list[int]) -> list[str]:
    """The pods evicted from the underutilised nodes, least used first, while the targets have room left in every
    resource for them and their PodDisruptionBudgets allow it."""
    room = {r: float(sum(use.alloc[r][n] - use.usage[r][n] for n in targets)) for r in use.usage}
    pinned = classify(index, policy, "pack", [])
    snap = index.snapshot
    budget = [snap.pdb_disruptions_allowed(p) for p in snap.pdbs]
    share = np.array([use.share(n) for n in range(len(index.nodes))])
    evicted = []
    for n in sorted(under, key=lambda n: (share[n], n)):
        for pi in sorted((p for p in index.bound if p.node == n and p.key not in pinned), key=lambda p: p.key):
            if any(v <= 0 for v in room.values()):
                break
            pdbs = index.pdbs_of(pi)
            if any(budget[i] <= 0 for i in pdbs):
                continue
            for i in pdbs:
                budget[i] -= 1
            for r in room:
                room[r] -= 1 if r == "pods" else float(index.pod_req[pi.idx, use.cols[r]])
            evicted.append(pi.key)
    return evicted
