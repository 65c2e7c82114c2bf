"""The measures of a cluster state a plan reports before and after: nodes in use, utilisation, violations, and the
score measure of the pods it moves or places.

Utilisation of node n in resource r is 100 · Σ requests of its pods / allocatable (pods: pod count / maxPods);
a node's load is max(cpu, memory); spread is max − min of the loads over the nodes with allocatable. A node is
empty when it holds only DaemonSet, mirror or static pods. With a balance policy, a node is underutilised when
every thresholded resource is below its low threshold and overutilised when one is above its high one
(`thresholds`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from kplace.models.index import ClusterIndex

from ..framework.config import SchedulerConfig
from .check import StateViolation, count_by_kind
from .policy import Policy, is_node_bound_daemon

SCORE_LIMIT = 3000  # pods the plan moves or places that are scored (an evenly spaced sample beyond)


def node_pods(index: ClusterIndex, assign: dict[str, int]) -> dict[int, list[int]]:
    """{node: pod ids on it} of the assignment {pod key: node}."""
    out: dict[int, list[int]] = defaultdict(list)
    for k, n in assign.items():
        out[n].append(index.pod_by_key[k].idx)
    return out


def metrics(index: ClusterIndex, assign: dict[str, int], violations: list[StateViolation],
            policy: Policy, pending_unplaced: int) -> dict[str, Any]:
    """The plan's `before` / `after` section for the state `assign` ({pod key: node})."""
    on = node_pods(index, assign)
    nodes = range(len(index.nodes))
    non_empty = sum(1 for n in nodes if any(not is_node_bound_daemon(index.pods[i]) for i in on.get(n, [])))
    util: dict[str, list[float]] = {}
    for r in ("cpu", "memory"):
        col = index.rid[r]
        util[r] = [100.0 * int(index.pod_req[on.get(n, []), col].sum()) / int(index.alloc[n, col])
                   for n in nodes if index.alloc[n, col] > 0]
    per_node = [max(c, m) for c, m in zip(util["cpu"], util["memory"], strict=False)]
    out: dict[str, Any] = {
        "nodes": len(index.nodes),
        "non_empty_nodes": non_empty,
        "empty_nodes": len(index.nodes) - non_empty,
        "utilisation_percent": {"cpu": _stats(util["cpu"]), "memory": _stats(util["memory"])},
        "peak_utilisation_percent": round(max(per_node, default=0.0), 2),
        "utilisation_spread_percent": round(max(per_node, default=0.0) - min(per_node, default=0.0), 2),
        "violations": len(violations),
        "violations_by_rule": count_by_kind(violations),
        "pending_unplaced": pending_unplaced,
    }
    if policy.balance is not None:
        out["underutilised_nodes"], out["overutilised_nodes"] = _threshold_counts(index, assign, on, policy)
    return out


def _stats(xs: list[float]) -> dict[str, float]:
    """Mean, population standard deviation, min and max, rounded to 2 decimals (all 0 for no values)."""
    if not xs:
        return {"mean": 0.0, "stdev": 0.0, "min": 0.0, "max": 0.0}
    mean = sum(xs) / len(xs)
    return {"mean": round(mean, 2), "stdev": round(math.sqrt(sum((x - mean) ** 2 for x in xs) / len(xs)), 2),
            "min": round(min(xs), 2), "max": round(max(xs), 2)}


def _threshold_counts(index: ClusterIndex, assign: dict[str, int], on: dict[int, list[int]],
                      policy: Policy) -> tuple[int, int]:
    """(underutilised, overutilised) nodes against the balance policy's thresholds."""
    low, high = thresholds(index, assign, policy)
    under = over = 0
    for n in range(len(index.nodes)):
        u = node_util(index, on.get(n, []), n)
        if all(u[r] < low[r] for r in low):
            under += 1
        elif any(u[r] > high[r] for r in high):
            over += 1
    return under, over


def node_util(index: ClusterIndex, pods: list[int], n: int) -> dict[str, float]:
    """Percent of node n's cpu, memory (those the cluster has) and pod slots that `pods` use."""
    out = {}
    for r in ("cpu", "memory", "pods"):
        if r == "pods":
            out[r] = 100.0 * len(pods) / max(1, int(index.max_pods[n]))
        elif r in index.rid:
            a = int(index.alloc[n, index.rid[r]])
            out[r] = 100.0 * int(index.pod_req[pods, index.rid[r]].sum()) / a if a > 0 else 0.0
    return out


def thresholds(index: ClusterIndex, assign: dict[str, int], policy: Policy) -> tuple[dict, dict]:
    """(low, high) percent per resource: LowNodeUtilization's thresholds / targetThresholds, or in deviation
    mode the mean utilisation over the nodes minus / plus them."""
    b = policy.balance
    assert b is not None
    if not b.deviation:
        return dict(b.thresholds), dict(b.target)
    on = node_pods(index, assign)
    utils = [node_util(index, on.get(n, []), n) for n in range(len(index.nodes))]
    mean = {r: sum(u.get(r, 0.0) for u in utils) / max(1, len(utils)) for r in b.thresholds}
    return ({r: max(0.0, mean[r] - v) for r, v in b.thresholds.items()},
            {r: min(100.0, mean[r] + v) for r, v in b.target.items()})


def score(index: ClusterIndex, config: SchedulerConfig, start: dict[str, int], final: dict[str, int],
          keys: list[str]) -> dict[str, Any]:
    """The score measure (`solver.measure`) of the pods the plan moves or places: where they end (the plan's final
    state) and, for the moved ones, where they were (the state before)."""
    from ..framework.state import ClusterState
    from ..measure import measure, sample

    after_state = ClusterState(index)
    for k in keys:
        if k in start:
            after_state.forget(index.pod_by_key[k])
        after_state.assume(index.pod_by_key[k], final[k])
    scored = sample(keys, SCORE_LIMIT)
    after = measure(config, after_state, ((index.pod_by_key[k], final[k]) for k in scored))
    before = measure(config, ClusterState(index), ((index.pod_by_key[k], start[k]) for k in scored if k in start))
    return {"pods": len(scored), "after": after.to_dict(), "moved_pods_before": before.to_dict()}
