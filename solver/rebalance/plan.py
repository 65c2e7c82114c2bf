"""`plan_rebalance`: from a cluster state to a verified plan of waves (what `kplace rebalance` prints).

1. The state as it is is checked (`check.StateChecker`): its violations are the `before` metrics and, for
   --goal repair|all, the pods to repair.
2. Every bound pod is movable or pinned, with a reason (`pinning.classify`).
3. The model (`model.solve`) says where every movable and pending pod ends; its answer stands only when the
   independent check of the final state agrees, else pods are pinned and the model solved again
   (`checked.checked_target`).
4. A plan whose goal does not improve, that fixes nothing and places nothing, moves nothing: so running again
   on the state a plan leads to proposes nothing new.
5. The moves are cut into waves (`waves.build_waves`), each checked; the `after` metrics (`measures`) are the
   state after the last wave.
"""

from __future__ import annotations

import time
from typing import Any

from kplace.models.errors import InputError
from kplace.models.index import ClusterIndex

from ..cpsat.clock import SearchClock
from ..executors import Chooser
from ..framework.config import SchedulerConfig
from .check import StateChecker
from .checked import checked_target
from .lns import LNS_GOALS, solve_lns
from .measures import metrics, score, thresholds
from .model import GOALS, Budget, RebalanceOptions, Target, solve
from .pinning import classify
from .policy import Policy
from .report import SIMULATED, dropped, never_moved, placed_count, step_sections
from .waves import Step, build_waves


def plan_rebalance(index: ClusterIndex, config: SchedulerConfig, policy: Policy,
                   opts: RebalanceOptions) -> dict[str, Any]:
    """The plan for `opts.goal`: moves and placements in waves, before/after measures, what never moves and why,
    the model's stages and the warnings on the way (every key the command prints)."""
    if opts.goal not in GOALS:
        raise ValueError(f"goal must be one of {', '.join(GOALS)}, got {opts.goal!r}")
    size = neighbourhood_size(index, opts)
    if size and opts.goal not in LNS_GOALS:
        raise InputError(f"{opts.goal} is not implemented as a neighbourhood search (used above "
                         f"{LNS_AUTO_NODES:,} nodes, here {len(index.nodes):,}, or with --neighbourhood-size N); it "
                         f"is for {', '.join(LNS_GOALS)}; --neighbourhood-size 0 asks for the global model",
                         field="--goal")
    started = time.perf_counter()
    checker = StateChecker(index)
    start = {pi.key: int(pi.node) for pi in index.pods if pi.node >= 0}
    before_v = checker.violations(start)
    tolerated = {v.pod for v in before_v}
    pending = pending_to_place(index, config, opts.only_pending)
    pinned = classify(index, policy, opts.goal, before_v, pending if opts.place_pending else [])
    target_pct = thresholds(index, start, policy)[1] if opts.goal == "balance" and policy.balance is not None else None

    warnings: list[str] = []

    chooser = Chooser(opts.executor, opts.workers, opts.ray_address) if size else None

    def solve_with(movable: set[str]) -> Target | None:
        if chooser is not None:
            return solve_lns(index, config, policy, opts, movable, budget, size, opts.on_progress, chooser)
        return solve(index, config, policy, opts, movable, pending if opts.place_pending else [], target_pct, budget)

    if size and pending and opts.place_pending:
        warnings.append(f"{len(pending)} pending pod(s) are not placed by the neighbourhood search "
                        f"(`kplace schedule` places them)")
    # the search's time limit and deadline count from here: the checks before and the waves after are not in them
    searching = time.perf_counter()
    clock = SearchClock(opts.deterministic, opts.workers, opts.seed,
                        deadline=None if opts.deadline is None else searching + opts.deadline)
    budget = Budget(opts.time_limit, clock)
    try:
        target, more = checked_target(index, checker, start, tolerated, pinned, solve_with)
    finally:
        if chooser is not None:
            chooser.close()
    warnings += more
    searched = time.perf_counter()
    if clock.cuts or any(st.get("deadline") for st in target.stages):
        warnings.append(f"the {opts.deadline:g} s deadline passed during the search: the plan has the best moves "
                        "found by then; it is not the deterministic one (rerun with a longer --deadline for it)")
    idle = drop_idle_moves(target, tolerated)
    if idle:
        warnings.append(idle)
    steps = [Step(k, a, b) for k, a, b in target.moves] + [Step(k, None, n) for k, n in target.placements
                                                          if n is not None]
    waves = build_waves(index, checker, policy, steps, start, tolerated)
    after_v = checker.violations(waves.final)
    return {
        "goal": opts.goal,
        "dry_run": True,
        "simulated": SIMULATED,
        **step_sections(index, waves, pending),
        "before": metrics(index, start, before_v, policy, len(pending)),
        "after": metrics(index, waves.final, after_v, policy, len(pending) - placed_count(waves)),
        "never_moved": never_moved(pinned),
        "dropped": dropped(index, waves),
        "score": score(index, config, start, waves.final, [s.pod for s in waves.steps]),
        "violations_after": [v.to_dict() for v in after_v],
        "model": {"status": target.status, "goal_before": target.goal_before, "goal_after": target.goal_after,
                  "stages": target.stages},
        "budgets": {"max_moves": opts.max_moves, "max_moves_per_node": opts.max_moves_per_node,
                    "max_moves_per_namespace": opts.max_moves_per_namespace, "min_gain": opts.min_gain},
        "warnings": warnings,
        "seconds": round(time.perf_counter() - started, 3),
        "timings": {"checks_before": round(searching - started, 3), "search": round(searched - searching, 3),
                    "waves_after": round(time.perf_counter() - searched, 3)},
    }


LNS_AUTO_NODES = 1000  # above this many nodes the plan is a neighbourhood search (`lns`) unless asked otherwise
LNS_SIZE = 40  # nodes per neighbourhood by default


def neighbourhood_size(index: ClusterIndex, opts: RebalanceOptions) -> int:
    """Nodes per neighbourhood of the search (`lns`), 0 for the global model: --neighbourhood-size, else LNS_SIZE
    above LNS_AUTO_NODES nodes."""
    if opts.neighbourhood is not None:
        return opts.neighbourhood
    return LNS_SIZE if len(index.nodes) > LNS_AUTO_NODES else 0


def pending_to_place(index: ClusterIndex, config: SchedulerConfig, only: frozenset[str] | None) -> list[str]:
    """The pending pods the plan places, in the index's order: those of `only` (all when None; a key that is not a
    pending pod is an input error) that have a profile and pass its PreEnqueue plugins."""
    if only is not None:
        unknown = sorted(only - {pi.key for pi in index.pending})
        if unknown:
            raise InputError(f"not a pending pod in the state: {', '.join(unknown)}", field="--pods")
    pending = []
    for pi in index.pending:
        if only is not None and pi.key not in only:
            continue
        profile = config.profile_for(pi.spec.scheduler_name)
        if profile is None or any(not pl.pre_enqueue(pi)[0] for pl in profile.at("preEnqueue")):
            continue
        pending.append(pi.key)
    return pending


def drop_idle_moves(target: Target, tolerated: set[str]) -> str | None:
    """No oscillation: the target's moves are dropped unless the goal improves, a violator moves or a pending pod
    is placed; returns the warning when they are."""
    fixes = bool(tolerated & {k for k, _, _ in target.moves})
    places = any(n is not None for _, n in target.placements)
    improves = (target.goal_before is not None and target.goal_after is not None
                and target.goal_after < target.goal_before)
    if not target.moves or improves or fixes or places:
        return None
    count = len(target.moves)
    target.moves = []
    return f"the model's {count} move(s) do not improve the goal; none are proposed"
