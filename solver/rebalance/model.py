"""The rebalancing model: movable running pods and pending pods placed at once by CP-SAT, from the CP-SAT engine's
pieces (groups, domains, variables, constraints, staged lexicographic objective).

The cluster is *relaxed*: every movable pod is turned back into a pending pod (its `nodeName` cleared), so the
CP-SAT engine's machinery applies unchanged — pinned pods are the constants, movable and pending pods the
groups of identical pods, `y[g, n]` how many of group g end on node n, and every hard rule (capacity, ports,
anti-affinity, affinity, DoNotSchedule spread, volumes: the window engine's `cpsat.builder`) holds in the final
state. Movable groups are split by move
cost and must be placed in full (`placed[g] = |g|`: nobody is evicted without a destination). With
`cur[g, n]` the group's pods now on n, a stay variable `0 ≤ s[g, n] ≤ min(cur[g, n], y[g, n])` counts those
that stay, so the group's moves are `|g| − Σ_n s[g, n]` (identical pods are interchangeable).

Objective, lexicographic, one CP-SAT stage each (each stage fixes the previous optimum):
1. pending pods placed, by priority (the CP-SAT engine's `placement_stages`);
2. the goal: pack — non-empty nodes (a node holding only DaemonSet, mirror or static pods is empty);
   balance — peak utilisation (per mille, cpu and memory; the engine's `goal_stage`), or with thresholds
   (LowNodeUtilization) the total excess over targetThresholds, per node and resource, in per mille of
   allocatable (deviation mode: over mean + targetThresholds); repair — none beyond the hard rules, which
   every movable violator must now satisfy; all — repair, then pack; admit — none: stage 1 already asks
   for the pending pods, and stage 3 moves only what must move to let them in;
3. move cost: Σ cost(g) · moves(g), cost from priority and pod-deletion-cost (`policy.move_cost`).
Budgets (--max-moves, per node of origin, per namespace) are constraints; `--min-gain X` requires
1000 · gain ≥ round(1000 · X) · moves, gain in the goal's units (nodes, percentage points, violations).
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from kplace.models.index import ClusterIndex, PodInfo
from ortools.sat.python import cp_model

from ..cpsat.builder import post_constraints
from ..cpsat.clock import SearchClock
from ..cpsat.domains import group_domain
from ..cpsat.groups import GroupMatcher, PodGroup, group_pods
from ..cpsat.objective import Stage, goal_stage, placement_stages
from ..cpsat.stages import StageSolver
from ..cpsat.variables import Variables
from ..framework.config import SchedulerConfig
from ..framework.state import ClusterState
from .policy import Policy, is_node_bound_daemon, move_cost

GOALS = ("pack", "balance", "repair", "all", "admit")


@dataclass
class RebalanceOptions:
    goal: str = "pack"
    max_moves: int | None = None
    max_moves_per_node: int | None = None
    max_moves_per_namespace: int | None = None
    min_gain: float = 0.0
    time_limit: float = 10.0
    workers: int = 2
    seed: int = 0
    place_pending: bool = True
    deterministic: bool = True  # time counted in CP-SAT's deterministic seconds: the same seed, the same moves
    only_pending: frozenset[str] | None = None  # the pending pods to place (None: all)


@dataclass
class Budget:
    """A rebalance's search time on a `cpsat.clock.SearchClock` (deterministic seconds of CP-SAT by default, so the
    same input and seed give the same plan whatever the machine's load; a stage the clock's net stopped says
    "limit": "cpu-net")."""

    seconds: float
    clock: SearchClock
    started: float = 0.0

    def __post_init__(self) -> None:
        self.started = self.clock.now()

    def left(self) -> float:
        return self.seconds - (self.clock.now() - self.started)


@dataclass
class Target:
    """The model's answer: where every movable and pending pod ends (node ids of the original index)."""

    moves: list[tuple[str, int, int]] = field(default_factory=list)  # (pod, from, to)
    placements: list[tuple[str, int | None]] = field(default_factory=list)
    stages: list[dict[str, Any]] = field(default_factory=list)
    status: str = "NO_MOVES"
    goal_before: float | None = None
    goal_after: float | None = None


def _profile(config: SchedulerConfig, pod: PodInfo):
    return config.profile_for(pod.spec.scheduler_name) or next(iter(config.profiles.values()))



def relaxed_index(index: ClusterIndex, movable: set[str]) -> ClusterIndex:
    """The index with every pod of `movable` turned pending (spec.nodeName cleared); pod ids are unchanged."""
    pods = []
    for p in index.snapshot.pods:
        if f"{p.metadata.namespace}/{p.metadata.name}" in movable:
            p = p.model_copy(update={"spec": p.spec.model_copy(update={"node_name": ""})})
        pods.append(p)
    return ClusterIndex(dataclasses.replace(index.snapshot, pods=pods))


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


def solve(index: ClusterIndex, config: SchedulerConfig, policy: Policy, opts: RebalanceOptions,
          movable: set[str], pending: list[str], target_pct: dict[str, float] | None,
          budget: Budget) -> Target | None:
    """Solve the rebalancing model; None when it is infeasible (a movable pod with nowhere legal to go)."""
    rel = relaxed_index(index, movable)
    state = ClusterState(rel)
    work = [rel.pod_by_key[k] for k in sorted(movable, key=lambda k: rel.pod_by_key[k].seq)]
    work += [rel.pod_by_key[k] for k in pending]
    if not work:
        return Target()
    orig_node = {k: int(index.pod_by_key[k].node) for k in movable}
    costs = {k: move_cost(index.pod_by_key[k]) for k in movable}

    groups: list[PodGroup] = []
    for bg in group_pods(rel, work):
        parts: dict[tuple, list[PodInfo]] = {}
        for p in bg.pods:
            parts.setdefault(("m", costs[p.key]) if p.key in movable else ("p",), []).append(p)
        for ps in parts.values():
            groups.append(PodGroup(len(groups), ps))
    is_mov = {g.gid: g.rep.key in movable for g in groups}
    cur = {g.gid: Counter(orig_node[p.key] for p in g.pods) for g in groups if is_mov[g.gid]}
    gcost = {g.gid: costs[g.rep.key] for g in groups if is_mov[g.gid]}

    domains = {g.gid: group_domain(_profile(config, g.rep), state, g) for g in groups}
    scope = {g.gid: domains[g.gid].nodes for g in groups}
    model = cp_model.CpModel()
    v = Variables(model, state, groups, scope)
    match = GroupMatcher(rel, groups)
    post_constraints(v, groups, match, lambda pod: _profile(config, pod), {})

    # movable pods are all placed; stays and moves
    stays: dict[int, dict[int, cp_model.IntVar]] = {}
    moves_of: dict[int, Any] = {}
    for g in groups:
        if not is_mov[g.gid]:
            continue
        if not v.y[g.gid]:
            return None
        model.add(v.placed[g.gid] == g.size)
        stays[g.gid] = {}
        for n, c in cur[g.gid].items():
            if n in v.y[g.gid]:
                s = model.new_int_var(0, min(c, v.ub[g.gid][n]), f"s_{g.gid}_{n}")
                model.add(s <= v.y[g.gid][n])
                stays[g.gid][n] = s
        moves_of[g.gid] = g.size - sum(stays[g.gid].values())
    total_moves = sum(moves_of.values()) if moves_of else 0
    if opts.max_moves is not None and moves_of:
        model.add(total_moves <= opts.max_moves)
    if opts.max_moves_per_node is not None:
        for n in {n for c in cur.values() for n in c}:
            out = [c[n] - (stays[gid].get(n, 0)) for gid, c in cur.items() if n in c]
            model.add(sum(out) <= opts.max_moves_per_node)
    if opts.max_moves_per_namespace is not None:
        by_ns: dict[str, list] = defaultdict(list)
        for g in groups:
            if is_mov[g.gid]:
                by_ns[g.rep.namespace].append(moves_of[g.gid])
        for terms in by_ns.values():
            model.add(sum(terms) <= opts.max_moves_per_namespace)

    # the goal
    fixed_pods: dict[int, list[int]] = defaultdict(list)
    for pi in rel.pods:
        if pi.node >= 0:
            fixed_pods[pi.node].append(pi.idx)
    cur_pods: dict[int, list[int]] = defaultdict(list)  # the state as it is, for the goal's value before
    for pi in index.pods:
        if pi.node >= 0:
            cur_pods[pi.node].append(pi.idx)
    goal = opts.goal
    goal_expr, goal_before, per_mille = None, None, False
    if goal in ("pack", "all"):
        blocking = {n for n, ps in fixed_pods.items() if any(not is_node_bound_daemon(rel.pods[i]) for i in ps)}
        used_terms: list = []
        for n, entries in v.by_node.items():
            if n in blocking:
                continue
            used = model.new_bool_var(f"used_{n}")
            for g, var in entries:
                model.add(var <= v.ub[g.gid][n] * used)
            used_terms.append(used)
        goal_expr = len(blocking) + sum(used_terms)
        goal_before = sum(1 for n, ps in cur_pods.items() if any(not is_node_bound_daemon(index.pods[i]) for i in ps))
    elif goal == "balance" and target_pct:
        tg = ThresholdGoal(index, target_pct)
        goal_expr = tg.expr(v, fixed_pods, model)
        goal_before = tg.value(cur_pods)
        per_mille = True
    elif goal == "balance":
        st = goal_stage(v, "balance")
        assert st is not None
        goal_expr = st.expr
        goal_before = _peak_per_mille(index, cur_pods)
        per_mille = True
    if goal_expr is not None and opts.min_gain > 0 and moves_of:
        # any move at all ⇒ the goal gains at least min_gain per move (repair's fixes are required, not traded)
        x = opts.min_gain * (10 if per_mille else 1)
        moving = model.new_bool_var("any_move")
        model.add(total_moves == 0).only_enforce_if(moving.Not())
        model.add(1000 * (goal_before - goal_expr) >= round(1000 * x) * total_moves).only_enforce_if(moving)

    stages: list[Stage] = []
    pend_groups = [g for g in groups if not is_mov[g.gid]]
    if pend_groups and opts.place_pending:
        stages += placement_stages(v, pend_groups)
    elif pend_groups:
        for g in pend_groups:
            model.add(v.placed[g.gid] == 0)
    if goal_expr is not None:
        stages.append(Stage(f"{goal} goal", goal_expr, False, lambda c: 0))
    if moves_of:
        stages.append(Stage("move cost", sum(gcost[gid] * m for gid, m in moves_of.items()), False, lambda c: 0))

    # hint: nothing moves, nothing new is placed
    hint = {g.gid: dict(cur[g.gid]) if is_mov[g.gid] else {} for g in groups}
    v.add_hint(hint)
    for gid, ss in stays.items():
        for n, s in ss.items():
            model.add_hint(s, min(cur[gid][n], v.ub[gid][n]))

    target = Target(goal_before=goal_before)
    solution = None
    runner = StageSolver(model, budget.clock)
    for k, stage in enumerate(stages):
        run = runner.optimise(stage, max(0.2, budget.left() / (len(stages) - k)))
        info = run.entry(stage.name)
        if not run.ok:
            target.stages.append(info)
            if solution is None:
                return None if run.status == cp_model.INFEASIBLE else target
            break
        value = run.value
        info.update({"objective": value, "bound": run.solver.best_objective_bound})
        target.stages.append(info)
        solution = ({gid: {n: int(run.solver.value(var)) for n, var in ys.items()} for gid, ys in v.y.items()},
                    {gid: {n: int(run.solver.value(s)) for n, s in ss.items()} for gid, ss in stays.items()})
        if stage.name.endswith("goal"):
            target.goal_after = value
        if k < len(stages) - 1:
            runner.fix(stage, value)
            runner.hint(run)
    if solution is None:
        target.placements = [(k, None) for k in pending]
        return target
    target.status = "OPTIMAL" if all(s["status"] == "OPTIMAL" for s in target.stages) else "FEASIBLE"
    ys, ss = solution
    for g in groups:
        slots: list[int] = []
        if is_mov[g.gid]:
            by_node: dict[int, list[PodInfo]] = defaultdict(list)
            for p in g.pods:
                by_node[orig_node[p.key]].append(p)
            movers: list[PodInfo] = []
            for n, ps in sorted(by_node.items()):
                keep = ss[g.gid].get(n, 0)
                movers += sorted(ps, key=lambda p: p.key)[keep:]
            for n, c in sorted(ys[g.gid].items()):
                slots += [n] * (c - ss[g.gid].get(n, 0))
            for p, n in zip(movers, slots, strict=False):
                target.moves.append((p.key, orig_node[p.key], n))
        else:
            for n, c in sorted(ys[g.gid].items()):
                slots += [n] * c
            for i, p in enumerate(g.pods):
                target.placements.append((p.key, slots[i] if i < len(slots) else None))
    return target


def _peak_per_mille(index: ClusterIndex, node_pods: dict[int, list[int]]) -> int:
    worst = 0
    for r in ("cpu", "memory"):
        col = index.rid[r]
        for n, ps in node_pods.items():
            a = int(index.alloc[n, col])
            if a > 0:
                worst = max(worst, -(-1000 * int(index.pod_req[ps, col].sum()) // a))
    return worst
