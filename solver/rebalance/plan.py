"""`plan_rebalance`: from a cluster state to a verified plan of waves (what `kplace rebalance` prints).

1. The state as it is is checked (`check.StateChecker`): its violations are the `before` metrics and, for
   --goal repair|all, the pods to repair.
2. Every bound pod is movable or pinned, with a reason: the policy's DefaultEvictor rules, a
   PodDisruptionBudget that allows no disruption, a current violation (outside repair), a cordoned node.
3. The model (`model.solve`) says where every movable and pending pod ends. When a repair has nowhere legal
   to go, the violators are pinned and the model solved again.
4. The final state is checked independently; pods that would newly violate a rule are pinned and the model
   solved again (at most twice), else the plan moves nothing.
5. A plan whose goal does not improve, that fixes nothing and places nothing, moves nothing: so running again
   on the state a plan leads to proposes nothing new.
6. The moves are cut into waves (`waves.build_waves`), each checked; the `after` metrics are the state after
   the last wave.
"""

from __future__ import annotations

import math
import time
from collections import Counter, defaultdict
from typing import Any

from kplace.models.errors import InputError
from kplace.models.index import ClusterIndex

from ..cpsat.clock import SearchClock
from ..framework.config import SchedulerConfig
from .check import StateChecker, StateViolation, count_by_kind
from .model import GOALS, Budget, RebalanceOptions, Target, solve
from .policy import Policy, is_node_bound_daemon, move_cost, never_move_reason
from .waves import Step, build_waves

SIMULATED = ("dry run: nothing was evicted or bound. Simulated: per-wave capacity with every moving pod counted on "
             "both its old and its new node (resources and pod slots), PodDisruptionBudget disruptionsAllowed from "
             "each selector and the current healthy pods (reset per wave, as replacements are Running again before "
             "the next), per-workload caps, and kube's hard rules before and after every wave. Not simulated: "
             "controllers' timing, image pulls, readiness probes, volume attachment, and other schedulers.")


def metrics(index: ClusterIndex, assign: dict[str, int], violations: list[StateViolation],
            policy: Policy, pending_unplaced: int) -> dict[str, Any]:
    node_pods: dict[int, list[int]] = defaultdict(list)
    for k, n in assign.items():
        node_pods[n].append(index.pod_by_key[k].idx)
    nodes = range(len(index.nodes))
    non_empty = sum(1 for n in nodes if any(not is_node_bound_daemon(index.pods[i]) for i in node_pods.get(n, [])))
    util: dict[str, list[float]] = {}
    for r in ("cpu", "memory"):
        col = index.rid[r]
        util[r] = [100.0 * int(index.pod_req[node_pods.get(n, []), col].sum()) / int(index.alloc[n, col])
                   for n in nodes if index.alloc[n, col] > 0]
    per_node = [max(c, m) for c, m in zip(util["cpu"], util["memory"], strict=False)]

    def stats(xs: list[float]) -> dict[str, float]:
        if not xs:
            return {"mean": 0.0, "stdev": 0.0, "min": 0.0, "max": 0.0}
        mean = sum(xs) / len(xs)
        return {"mean": round(mean, 2), "stdev": round(math.sqrt(sum((x - mean) ** 2 for x in xs) / len(xs)), 2),
                "min": round(min(xs), 2), "max": round(max(xs), 2)}

    out: dict[str, Any] = {
        "nodes": len(index.nodes),
        "non_empty_nodes": non_empty,
        "empty_nodes": len(index.nodes) - non_empty,
        "utilisation_percent": {"cpu": stats(util["cpu"]), "memory": stats(util["memory"])},
        "peak_utilisation_percent": round(max(per_node, default=0.0), 2),
        "utilisation_spread_percent": round(max(per_node, default=0.0) - min(per_node, default=0.0), 2),
        "violations": len(violations),
        "violations_by_rule": count_by_kind(violations),
        "pending_unplaced": pending_unplaced,
    }
    if policy.balance is not None:
        low, high = thresholds(index, assign, policy)
        under = over = 0
        for n in nodes:
            u = _node_util(index, node_pods.get(n, []), n)
            if all(u[r] < low[r] for r in low):
                under += 1
            elif any(u[r] > high[r] for r in high):
                over += 1
        out["underutilised_nodes"], out["overutilised_nodes"] = under, over
    return out


def _node_util(index: ClusterIndex, pods: list[int], n: int) -> dict[str, float]:
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
    node_pods: dict[int, list[int]] = defaultdict(list)
    for k, n in assign.items():
        node_pods[n].append(index.pod_by_key[k].idx)
    utils = [_node_util(index, node_pods.get(n, []), n) for n in range(len(index.nodes))]
    mean = {r: sum(u.get(r, 0.0) for u in utils) / max(1, len(utils)) for r in b.thresholds}
    return ({r: max(0.0, mean[r] - v) for r, v in b.thresholds.items()},
            {r: min(100.0, mean[r] + v) for r, v in b.target.items()})


def classify(index: ClusterIndex, policy: Policy, goal: str, before: list[StateViolation]) -> dict[str, str]:
    """Pinned bound pods and why (the others may move)."""
    classes = {pc.metadata.name: pc.value for pc in index.snapshot.priority_classes}
    snap = index.snapshot
    allowed = [snap.pdb_disruptions_allowed(p) for p in snap.pdbs]
    violators: dict[str, str] = {}
    for v in before:
        violators.setdefault(v.pod, v.rule)
    repair = goal in ("repair", "all")
    pinned: dict[str, str] = {}
    for pi in index.bound:
        reason = never_move_reason(policy, pi, classes)
        if reason is None:
            zero = [i for i in index.pdbs_of(pi) if allowed[i] <= 0]
            if zero:
                pdb = snap.pdbs[zero[0]].metadata
                reason = f"PodDisruptionBudget {pdb.namespace}/{pdb.name} allows no disruption"
        if reason is None and pi.key in violators:
            kind = violators[pi.key]
            if not repair:
                reason = f"violates {kind} now (only --goal repair or all moves it)"
            elif kind in ("capacity", "ports"):
                reason = f"violates {kind} now, which is not a repair kplace makes"
        if reason is None and index.unschedulable[pi.node] and not (repair and pi.key in violators):
            reason = "on a cordoned node"
        if reason is not None:
            pinned[pi.key] = reason
    return pinned


def plan_rebalance(index: ClusterIndex, config: SchedulerConfig, policy: Policy,
                   opts: RebalanceOptions) -> dict[str, Any]:
    if opts.goal not in GOALS:
        raise ValueError(f"goal must be one of {', '.join(GOALS)}, got {opts.goal!r}")
    started = time.perf_counter()
    budget = Budget(opts.time_limit, SearchClock(opts.deterministic, opts.workers, opts.seed))
    checker = StateChecker(index)
    start = {pi.key: int(pi.node) for pi in index.pods if pi.node >= 0}
    before_v = checker.violations(start)
    tolerated = {v.pod for v in before_v}
    pinned = classify(index, policy, opts.goal, before_v)
    if opts.only_pending is not None:
        pending_keys = {pi.key for pi in index.pending}
        unknown = sorted(opts.only_pending - pending_keys)
        if unknown:
            raise InputError(f"not a pending pod in the state: {', '.join(unknown)}", field="--pods")
    pending = []
    for pi in index.pending:
        if opts.only_pending is not None and pi.key not in opts.only_pending:
            continue
        profile = config.profile_for(pi.spec.scheduler_name)
        if profile is None or any(not pl.pre_enqueue(pi)[0] for pl in profile.at("preEnqueue")):
            continue
        pending.append(pi.key)
    warnings: list[str] = []
    target_pct = None
    if opts.goal == "balance" and policy.balance is not None:
        target_pct = thresholds(index, start, policy)[1]

    target: Target | None = None
    for _attempt in range(4):
        movable = {pi.key for pi in index.bound if pi.key not in pinned}
        target = solve(index, config, policy, opts, movable, pending if opts.place_pending else [], target_pct,
                       budget)
        if target is None:
            violators = [k for k in tolerated if k in movable]
            if violators:
                warnings.append(f"{len(violators)} violating pod(s) have no legal destination together; "
                                "they stay where they are")
                pinned.update(dict.fromkeys(violators, "no legal destination for its repair"))
                continue
            warnings.append("the model is infeasible with the pods left movable; nothing moves")
            target = Target()
            break
        trial = dict(start)
        trial.update({k: n for k, _, n in target.moves})
        trial.update({k: n for k, n in target.placements if n is not None})
        new = {v.pod for v in checker.violations(trial)} - tolerated
        if not new:
            break
        moved = {k for k, _, _ in target.moves}
        culprits = (new & movable) or moved
        warnings.append(f"the independent check found {len(new)} new violation(s) in the model's answer; "
                        f"pinning {len(culprits)} pod(s) and solving again")
        pinned.update(dict.fromkeys(culprits, "its move would break a hard rule (independent check)"))
        target = None
    if target is None:
        target = Target()
        warnings.append("no safe plan was found; nothing moves")

    # no oscillation: moves must buy something
    fixes = bool(tolerated & {k for k, _, _ in target.moves})
    places = any(n is not None for _, n in target.placements)
    improves = (target.goal_before is not None and target.goal_after is not None
                and target.goal_after < target.goal_before)
    if target.moves and not (improves or fixes or places):
        warnings.append(f"the model's {len(target.moves)} move(s) do not improve the goal; none are proposed")
        target.moves = []

    steps = [Step(k, a, b) for k, a, b in target.moves] + [Step(k, None, n) for k, n in target.placements
                                                          if n is not None]
    waves = build_waves(index, checker, policy, steps, start, tolerated)
    after_v = checker.violations(waves.final)
    placed_keys = {s.pod for s in waves.steps if s.src is None}
    names = index.node_names
    # a move admits the pending pods placed on the node it leaves (the room it frees there)
    admitted: dict[int, list[str]] = defaultdict(list)
    for s in waves.steps:
        if s.src is None:
            admitted[s.dst].append(s.pod)
    unplaced = len(pending) - len(placed_keys)
    plan: dict[str, Any] = {
        "goal": opts.goal,
        "dry_run": True,
        "simulated": SIMULATED,
        "moves": [{"pod": s.pod, "from": names[s.src], "to": names[s.dst], "wave": s.wave,
                   "cost": move_cost(index.pod_by_key[s.pod]), "admits": admitted.get(s.src, [])}
                  for s in waves.steps if s.src is not None],
        "placements": [{"pod": k, "node": names[waves.final[k]] if k in placed_keys else None,
                        "wave": next((s.wave for s in waves.steps if s.pod == k), None)} for k in pending],
        "waves": [{"wave": w, "moves": sum(1 for s in waves.steps if s.wave == w and s.src is not None),
                   "placements": sum(1 for s in waves.steps if s.wave == w and s.src is None)}
                  for w in range(1, waves.count + 1)],
        "before": metrics(index, start, before_v, policy, len(pending)),
        "after": metrics(index, waves.final, after_v, policy, unplaced),
        "never_moved": dict(sorted(Counter(_short(r) for r in pinned.values()).items())),
        "dropped": [{"pod": s.pod, "from": names[s.src] if s.src is not None else None, "to": names[s.dst],
                     "reason": why} for s, why in waves.dropped],
        "score": _score(index, config, start, waves.final, [s.pod for s in waves.steps]),
        "violations_after": [v.to_dict() for v in after_v],
        "model": {"status": target.status, "goal_before": target.goal_before, "goal_after": target.goal_after,
                  "stages": target.stages},
        "budgets": {"max_moves": opts.max_moves, "max_moves_per_node": opts.max_moves_per_node,
                    "max_moves_per_namespace": opts.max_moves_per_namespace, "min_gain": opts.min_gain},
        "warnings": warnings,
        "seconds": round(time.perf_counter() - started, 3),
    }
    return plan


SCORE_LIMIT = 3000  # pods the plan moves or places that are scored (an evenly spaced sample beyond)


def _score(index: ClusterIndex, config: SchedulerConfig, start: dict[str, int], final: dict[str, int],
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


def _short(reason: str) -> str:
    """Group reasons for the summary (drop the object names)."""
    if reason.startswith("PodDisruptionBudget"):
        return "PodDisruptionBudget allows no disruption"
    if reason.startswith("priority "):
        return "priority at or above the policy's threshold"
    return reason
