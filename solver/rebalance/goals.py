"""The goal stage of the rebalancing model (`model.solve`): the expression CP-SAT minimises for the goal, and its
value on the state as it is (the plan's `goal_before`).

- pack, all: non-empty nodes. A node holding a pinned pod that is not a DaemonSet, mirror or static pod counts 1;
  any other node counts `used[n]`, a boolean with y[g, n] ≤ ub[g, n] · used[n] for every group that may land there.
- balance with a policy's thresholds (LowNodeUtilization): `ThresholdGoal`, the total excess over
  targetThresholds, per node and resource, in per mille of allocatable.
- balance without: the peak utilisation in per mille, cpu and memory (the CP-SAT engine's `goal_stage`).
- repair, admit: no goal stage (the hard rules and the placement stages say it all).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
from kplace.models.index import ClusterIndex
from ortools.sat.python import cp_model

from ..cpsat.objective import goal_stage
from ..cpsat.variables import Variables
from .policy import is_node_bound_daemon

PACK_GOALS = ("pack", "all")


@dataclass
class GoalTerm:
    """The goal's expression (None: no goal stage), its value before, and whether both are in per mille of
    utilisation (balance) rather than nodes (pack)."""

    expr: Any = None
    before: float | None = None
    per_mille: bool = False


def goal_term(goal: str, index: ClusterIndex, rel: ClusterIndex, v: Variables, model: cp_model.CpModel,
              target_pct: dict[str, float] | None) -> GoalTerm:
    """The goal posted on `model`: `rel` is the relaxed index the variables `v` are built on, `index` the state as it
    is; `target_pct` the balance policy's high thresholds (percent per resource), if any."""
    fixed_pods = _node_pods(rel)
    cur_pods = _node_pods(index)
    if goal in PACK_GOALS:
        blocking = {n for n, ps in fixed_pods.items() if any(not is_node_bound_daemon(rel.pods[i]) for i in ps)}
        used_terms: list = []
        for n, entries in v.by_node.items():
            if n in blocking:
                continue
            used = model.new_bool_var(f"used_{n}")
            for g, var in entries:
                model.add(var <= v.ub[g.gid][n] * used)
            used_terms.append(used)
        before = sum(1 for ps in cur_pods.values() if any(not is_node_bound_daemon(index.pods[i]) for i in ps))
        return GoalTerm(len(blocking) + sum(used_terms), before)
    if goal == "balance" and target_pct:
        tg = ThresholdGoal(index, target_pct)
        return GoalTerm(tg.expr(v, fixed_pods, model), tg.value(cur_pods), True)
    if goal == "balance":
        st = goal_stage(v, "balance")
        assert st is not None
        return GoalTerm(st.expr, _peak_per_mille(index, cur_pods), True)
    return GoalTerm()


def _node_pods(index: ClusterIndex) -> dict[int, list[int]]:
    """{node: ids of the pods bound there}."""
    out: dict[int, list[int]] = defaultdict(list)
    for pi in index.pods:
        if pi.node >= 0:
            out[pi.node].append(pi.idx)
    return out


class ThresholdGoal:
    """LowNodeUtilization's targetThresholds as a penalty: Σ_{n,r} max(0, load[n, r] − target[r] · alloc[n, r]),
    in per mille of each node's allocatable (`target` per mille per resource: cpu, memory, pods)."""

    def __init__(self, index: ClusterIndex, target: dict[str, float]) -> None:
        self.index = index
        self.target = {r: round(10 * v) for r, v in target.items()}  # percent → per mille

    def _alloc_load(self, r: str) -> tuple[np.ndarray, np.ndarray, int]:
        idx = self.index
        if r == "pods":
            return idx.max_pods, np.ones(len(idx.pods), dtype=np.int64), 1
        col = idx.rid.get(r)
        if col is None:
            return np.zeros(len(idx.nodes), np.int64), np.zeros(len(idx.pods), np.int64), 1
        alloc = idx.alloc[:, col]
        scale = max(1, int(alloc.max(initial=0)) // 100_000)  # keeps coefficients small; the goal is a penalty
        return alloc // scale, idx.pod_req[:, col] // scale, scale

    def value(self, node_pods: dict[int, list[int]]) -> int:
        total = 0
        for r, t in self.target.items():
            alloc, req, _ = self._alloc_load(r)
            for n, pods in node_pods.items():
                if alloc[n] <= 0:
                    continue
                load = int(req[pods].sum()) if pods else 0
                total += max(0, -(-(1000 * load - t * int(alloc[n])) // int(alloc[n])))
        return total

    def expr(self, v: Variables, fixed: dict[int, list[int]], model: cp_model.CpModel):
        terms = []
        for r, t in self.target.items():
            alloc, req, _ = self._alloc_load(r)
            for n in range(len(self.index.nodes)):
                a = int(alloc[n])
                if a <= 0:
                    continue
                base = int(req[fixed.get(n, [])].sum()) if fixed.get(n) else 0
                entries = v.by_node.get(n, [])
                if not entries:
                    if 1000 * base > t * a:
                        terms.append(-(-(1000 * base - t * a) // a))
                    continue
                load = base + sum(int(req[g.rep.idx]) * var for g, var in entries)
                ex = model.new_int_var(0, 1000 * 1000, f"excess_{r}_{n}")
                model.add(a * ex >= 1000 * load - t * a)
                terms.append(ex)
        return sum(terms)


def _peak_per_mille(index: ClusterIndex, node_pods: dict[int, list[int]]) -> int:
    """The highest cpu or memory utilisation over the nodes, in per mille rounded up."""
    worst = 0
    for r in ("cpu", "memory"):
        col = index.rid[r]
        for n, ps in node_pods.items():
            a = int(index.alloc[n, col])
            if a > 0:
                worst = max(worst, -(-1000 * int(index.pod_req[ps, col].sum()) // a))
    return worst
