"""Deciding a plan: run an engine, verify its plan, and never hand out a plan the verifier rejects.

A CP-SAT plan the verifier rejects is a kplace bug: it is logged as such and the greedy plan is used
instead. A greedy plan the verifier rejects is also a bug, and no plan is output at all (`PlanRejected`).
"""

from __future__ import annotations

import logging

from kplace.models.errors import KplaceError
from kplace.models.index import ClusterIndex
from kplace.models.plan import Plan

from .framework.config import SchedulerConfig
from .greedy import schedule_greedy
from .verify import Violation, verify_plan

log = logging.getLogger("kplace")


class PlanRejected(KplaceError):
    """The verifier rejected every plan the engines produced (a bug in kplace; nothing is committed)."""

    exit_code = 3


def _summary(violations: list[Violation], limit: int = 3) -> str:
    shown = "; ".join(f"{v.pod} on {v.node}: {v.rule}: {v.message}" for v in violations[:limit])
    more = f" (+{len(violations) - limit} more)" if len(violations) > limit else ""
    return shown + more


def decide(index: ClusterIndex, config: SchedulerConfig, engine: str = "cpsat", *, cpsat_options=None,
           tie_break: str = "order", seed: int = 0, on_pod=None, allow_pdb_violations: bool = False,
           allow_moves: int = 0) -> Plan:
    """The verified plan of `engine` (`cpsat` or `greedy`); `on_pod` observes greedy's progress. With
    `allow_pdb_violations` preemption may take a PodDisruptionBudget below zero as a last resort (kube's way);
    with `allow_moves` N (CP-SAT only) up to N running pods may move to let pending pods in (`cpsat.moves`)."""
    allow = allow_pdb_violations
    if allow_moves and engine != "cpsat":
        raise ValueError("moves are the CP-SAT engine's: kube-scheduler never moves a running pod")
    if engine == "cpsat":
        from .cpsat import CpsatOptions, schedule_cpsat

        opts = cpsat_options or CpsatOptions(seed=seed, tie_break=tie_break, allow_pdb_violations=allow)
        allow = opts.allow_pdb_violations
        plan = schedule_cpsat(index, config, opts)
        if allow_moves and plan.deadline is not None:
            plan.warnings.append("no moves were considered (--allow-moves): the deadline had passed")
        elif allow_moves:
            from .cpsat.moves import with_moves

            moving = with_moves(index, config, plan, opts, allow_moves)
            if moving is not plan:
                violations = verify_plan(index, moving, allow)
                if not violations:
                    return moving
                message = (f"bug: the verifier rejected the plan with moves ({_summary(violations)}); using the plan "
                           "without moves")
                log.error(message)
                plan.warnings.append(message)
        # the forked greedy run's verdict on this very plan when the decision committed its plan as it is
        violations = plan.verified if plan.verified is not None else verify_plan(index, plan, allow)
        if not violations:
            return plan
        message = f"bug: the verifier rejected the CP-SAT plan ({_summary(violations)}); using the greedy plan"
        log.error(message)
        fallback = schedule_greedy(index, config, tie_break=opts.tie_break, seed=opts.seed, allow_pdb_violations=allow)
        fallback.engine = "cpsat"
        fallback.windows = [{**w, "status": "FALLBACK"} for w in plan.windows]
        fallback.warnings.append(message)
        plan = fallback
    elif engine == "greedy":
        plan = schedule_greedy(index, config, tie_break=tie_break, seed=seed, on_pod=on_pod,
                               allow_pdb_violations=allow)
    else:
        raise ValueError(f"unknown engine {engine!r}")
    violations = verify_plan(index, plan, allow)
    if violations:
        raise PlanRejected(f"the verifier rejected the {plan.engine} plan, so nothing is output: "
                           f"{_summary(violations)} (this is a kplace bug)")
    return plan
