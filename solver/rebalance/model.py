"""The rebalancing model: movable running pods and pending pods placed at once by CP-SAT, from the CP-SAT engine's
pieces (groups, domains, variables, constraints, staged lexicographic objective).

The cluster is *relaxed*: every movable pod is turned back into a pending pod (its `nodeName` cleared), so the
CP-SAT engine's machinery applies unchanged — pinned pods are the constants, movable and pending pods the
groups of identical pods, `y[g, n]` how many of group g end on node n, and every hard rule (capacity, ports,
anti-affinity, affinity, DoNotSchedule spread, volumes: the window engine's `cpsat.builder`) holds in the final
state. Movable groups are split by move cost and must be placed in full (`placed[g] = |g|`: nobody is evicted
without a destination). With `cur[g, n]` the group's pods now on n, a stay variable
`0 ≤ s[g, n] ≤ min(cur[g, n], y[g, n])` counts those that stay, so the group's moves are `|g| − Σ_n s[g, n]`
(identical pods are interchangeable).

Objective, lexicographic, one CP-SAT stage each (each stage fixes the previous optimum):
1. pending pods placed, by priority (the CP-SAT engine's `placement_stages`);
2. the goal (`goals.goal_term`): pack — non-empty nodes (a node holding only DaemonSet, mirror or static pods is
   empty); balance — peak utilisation (per mille, cpu and memory; the engine's `goal_stage`), or with thresholds
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

from kplace.models.index import ClusterIndex, PodInfo
from ortools.sat.python import cp_model

from ..cpsat.builder import post_constraints
from ..cpsat.clock import SearchClock
from ..cpsat.domains import group_domain
from ..cpsat.groups import GroupMatcher, PodGroup, group_pods
from ..cpsat.objective import Stage, placement_stages
from ..cpsat.stages import StageSolver
from ..cpsat.variables import Variables
from ..framework.config import SchedulerConfig
from ..framework.state import ClusterState
from .goals import GoalTerm, goal_term
from .policy import Policy, move_cost

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
    neighbourhood: int | None = None  # nodes per neighbourhood search step (`lns`); None: auto, 0: the global model
    on_progress: Any = None  # called with the neighbourhood search's progress after each round
    executor: str = "auto"  # where a round's neighbourhoods are solved (`solver.executors`)
    ray_address: str | None = None
    # wall-clock seconds from the start of the search after which no search runs (None: none); a search running
    # then is stopped with its best answer so far, and the plan says so (it is then not the deterministic one)
    deadline: float | None = None


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


@dataclass
class WorkGroups:
    """The pods the model places, in groups of identical pods: movable groups split by move cost (`movable`), the
    others pending. `cur[g]`: a movable group's pods per node now; `cost[g]`: its pods' move cost."""

    groups: list[PodGroup]
    movable: dict[int, bool]
    cur: dict[int, Counter]
    cost: dict[int, int]
    orig_node: dict[str, int]  # a movable pod's node now

    @classmethod
    def of(cls, index: ClusterIndex, rel: ClusterIndex, work: list[PodInfo], movable: set[str]) -> WorkGroups:
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
        return cls(groups, is_mov, cur, {g.gid: costs[g.rep.key] for g in groups if is_mov[g.gid]}, orig_node)


@dataclass
class MoveVars:
    """Per movable group g: `stays[g][n]` ≤ min(cur[g, n], y[g, n]) and `moves[g]` = |g| − Σ_n stays[g][n]."""

    stays: dict[int, dict[int, cp_model.IntVar]] = field(default_factory=dict)
    moves: dict[int, Any] = field(default_factory=dict)

    @property
    def total(self):
        return sum(self.moves.values()) if self.moves else 0


def solve(index: ClusterIndex, config: SchedulerConfig, policy: Policy, opts: RebalanceOptions,
          movable: set[str], pending: list[str], target_pct: dict[str, float] | None,
          budget: Budget) -> Target | None:
    """Solve the rebalancing model; None when it is infeasible (a movable pod with nowhere legal to go)."""
    rel = relaxed_index(index, movable)
    work = [rel.pod_by_key[k] for k in sorted(movable, key=lambda k: rel.pod_by_key[k].seq)]
    work += [rel.pod_by_key[k] for k in pending]
    if not work:
        return Target()
    wg = WorkGroups.of(index, rel, work, movable)
    model = cp_model.CpModel()
    v = _variables(config, rel, wg.groups, model)
    mv = _post_moves(model, v, wg)
    if mv is None:
        return None
    _post_budgets(model, opts, wg, mv)
    goal = goal_term(opts.goal, index, rel, v, model, target_pct)
    if goal.expr is not None and opts.min_gain > 0 and mv.moves:
        _post_min_gain(model, opts.min_gain, goal, mv)
    stages = _stages(model, v, wg, opts, goal, mv)
    _hint(model, v, wg, mv)

    target = Target(goal_before=goal.before)
    solution, failed = _optimise(model, budget, stages, v, mv, target)
    if failed is not None:
        return None if failed == cp_model.INFEASIBLE else target
    if solution is None:
        target.placements = [(k, None) for k in pending]
        return target
    target.status = "OPTIMAL" if all(s["status"] == "OPTIMAL" for s in target.stages) else "FEASIBLE"
    _read_target(target, wg, *solution)
    return target


def _variables(config: SchedulerConfig, rel: ClusterIndex, groups: list[PodGroup], model: cp_model.CpModel
               ) -> Variables:
    """y[g, n] over each group's domain, with every hard rule posted (`cpsat.builder.post_constraints`)."""
    state = ClusterState(rel)
    domains = {g.gid: group_domain(_profile(config, g.rep), state, g) for g in groups}
    v = Variables(model, state, groups, {g.gid: domains[g.gid].nodes for g in groups})
    post_constraints(v, groups, GroupMatcher(rel, groups), lambda pod: _profile(config, pod), {})
    return v


def _post_moves(model: cp_model.CpModel, v: Variables, wg: WorkGroups) -> MoveVars | None:
    """Every movable group placed in full, with its stays and moves; None when one has no node to go to."""
    mv = MoveVars()
    for g in wg.groups:
        if not wg.movable[g.gid]:
            continue
        if not v.y[g.gid]:
            return None
        model.add(v.placed[g.gid] == g.size)
        mv.stays[g.gid] = {}
        for n, c in wg.cur[g.gid].items():
            if n in v.y[g.gid]:
                s = model.new_int_var(0, min(c, v.ub[g.gid][n]), f"s_{g.gid}_{n}")
                model.add(s <= v.y[g.gid][n])
                mv.stays[g.gid][n] = s
        mv.moves[g.gid] = g.size - sum(mv.stays[g.gid].values())
    return mv


def _post_budgets(model: cp_model.CpModel, opts: RebalanceOptions, wg: WorkGroups, mv: MoveVars) -> None:
    """--max-moves, --max-moves-per-node (moves off each node of origin), --max-moves-per-namespace."""
    if opts.max_moves is not None and mv.moves:
        model.add(mv.total <= opts.max_moves)
    if opts.max_moves_per_node is not None:
        for n in {n for c in wg.cur.values() for n in c}:
            out = [c[n] - (mv.stays[gid].get(n, 0)) for gid, c in wg.cur.items() if n in c]
            model.add(sum(out) <= opts.max_moves_per_node)
    if opts.max_moves_per_namespace is not None:
        by_ns: dict[str, list] = defaultdict(list)
        for g in wg.groups:
            if wg.movable[g.gid]:
                by_ns[g.rep.namespace].append(mv.moves[g.gid])
        for terms in by_ns.values():
            model.add(sum(terms) <= opts.max_moves_per_namespace)


def _post_min_gain(model: cp_model.CpModel, min_gain: float, goal: GoalTerm, mv: MoveVars) -> None:
    """Any move at all ⇒ the goal gains at least `min_gain` per move (repair's fixes are required, not traded)."""
    x = min_gain * (10 if goal.per_mille else 1)
    moving = model.new_bool_var("any_move")
    model.add(mv.total == 0).only_enforce_if(moving.Not())
    model.add(1000 * (goal.before - goal.expr) >= round(1000 * x) * mv.total).only_enforce_if(moving)


def _stages(model: cp_model.CpModel, v: Variables, wg: WorkGroups, opts: RebalanceOptions, goal: GoalTerm,
            mv: MoveVars) -> list[Stage]:
    """Pending pods placed (or none placed without --place-pending), the goal, then the move cost."""
    stages: list[Stage] = []
    pend_groups = [g for g in wg.groups if not wg.movable[g.gid]]
    if pend_groups and opts.place_pending:
        stages += placement_stages(v, pend_groups)
    elif pend_groups:
        for g in pend_groups:
            model.add(v.placed[g.gid] == 0)
    if goal.expr is not None:
        stages.append(Stage(f"{opts.goal} goal", goal.expr, False, lambda c: 0))
    if mv.moves:
        stages.append(Stage("move cost", sum(wg.cost[gid] * m for gid, m in mv.moves.items()), False, lambda c: 0))
    return stages


def _hint(model: cp_model.CpModel, v: Variables, wg: WorkGroups, mv: MoveVars) -> None:
    """The hint: nothing moves, nothing new is placed."""
    v.add_hint({g.gid: dict(wg.cur[g.gid]) if wg.movable[g.gid] else {} for g in wg.groups})
    for gid, ss in mv.stays.items():
        for n, s in ss.items():
            model.add_hint(s, min(wg.cur[gid][n], v.ub[gid][n]))


Solution = tuple[dict[int, dict[int, int]], dict[int, dict[int, int]]]  # y counts, stay counts per group and node


def _optimise(model: cp_model.CpModel, budget: Budget, stages: list[Stage], v: Variables, mv: MoveVars,
              target: Target) -> tuple[Solution | None, int | None]:
    """Run the stages, each fixing the previous optimum and sharing the time left evenly with those after it; the
    stages' reports go to `target`. Returns (the last stage's solution, or None if none ran; the status of the first
    stage when it failed, else None)."""
    solution = None
    runner = StageSolver(model, budget.clock)
    for k, stage in enumerate(stages):
        run = runner.optimise(stage, max(0.2, budget.left() / (len(stages) - k)))
        info = run.entry(stage.name)
        if not run.ok:
            target.stages.append(info)
            return solution, (run.status if solution is None else None)
        value = run.value
        info.update({"objective": value, "bound": run.result.best_objective_bound})
        target.stages.append(info)
        solution = ({gid: {n: int(run.result.value(var)) for n, var in ys.items()} for gid, ys in v.y.items()},
                    {gid: {n: int(run.result.value(s)) for n, s in ss.items()} for gid, ss in mv.stays.items()})
        if stage.name.endswith("goal"):
            target.goal_after = value
        if k < len(stages) - 1:
            runner.fix(stage, value)
            runner.hint(run)
    return solution, None


def _read_target(target: Target, wg: WorkGroups, ys: dict[int, dict[int, int]], ss: dict[int, dict[int, int]]
                 ) -> None:
    """The moves and placements of a solution, pod by pod: in a movable group, the pods that stay on a node are the
    first by key, the others move to the group's new slots in node order; pending pods take their group's slots."""
    for g in wg.groups:
        slots: list[int] = []
        if wg.movable[g.gid]:
            by_node: dict[int, list[PodInfo]] = defaultdict(list)
            for p in g.pods:
                by_node[wg.orig_node[p.key]].append(p)
            movers: list[PodInfo] = []
            for n, ps in sorted(by_node.items()):
                keep = ss[g.gid].get(n, 0)
                movers += sorted(ps, key=lambda p: p.key)[keep:]
            for n, c in sorted(ys[g.gid].items()):
                slots += [n] * (c - ss[g.gid].get(n, 0))
            for p, n in zip(movers, slots, strict=False):
                target.moves.append((p.key, wg.orig_node[p.key], n))
        else:
            for n, c in sorted(ys[g.gid].items()):
                slots += [n] * c
            for i, p in enumerate(g.pods):
                target.placements.append((p.key, slots[i] if i < len(slots) else None))
