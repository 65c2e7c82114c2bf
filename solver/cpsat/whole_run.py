"""The run over windows: pods cut into windows in queue order (`cut_windows`), and the whole run held to greedy's.

Each window is compared with greedy on the state earlier windows left, which cannot guarantee the whole run:
earlier choices can leave less room, or a worse final state, later. So a multi-window plan is also compared with
one greedy run over every pod from the initial state (`at_least_greedy`): on pods placed less pods evicted,
lexicographically by priority, and, when every pod is placed either way, on the score measure
(`measured_against_greedy`).
"""

from __future__ import annotations

from kplace.models.index import ClusterIndex, PodInfo
from kplace.models.plan import Placement, Plan

from ..framework.state import ClusterState
from ..measure import plan_measure
from .assemble import Reasons, attempted
from .baselines import GreedyPasses
from .ranking import Vector, lex_less, net_vectors

MEASURE_CHECK = 5000  # a multi-window run placing every pod, up to this many, is also measured against one greedy run


def cut_windows(index: ClusterIndex, pods: list[PodInfo], size: int) -> list[list[PodInfo]]:
    """`pods` cut into windows of `size` in queue order, a gang's pods all in the window of its first (a window
    may then hold more than `size`)."""
    gang_of = index.gang_of
    if not gang_of:
        return [pods[i : i + size] for i in range(0, len(pods), size)]
    members: dict[int, list[PodInfo]] = {}
    for p in pods:
        if p.idx in gang_of:
            members.setdefault(gang_of[p.idx], []).append(p)
    windows: list[list[PodInfo]] = [[]]
    for p in pods:
        k = gang_of.get(p.idx)
        if k is not None and members[k][0] is not p:
            continue  # placed with its gang's first pod
        if len(windows[-1]) >= size:
            windows.append([])
        windows[-1].extend(members[k] if k is not None else [p])
    return [w for w in windows if w]


def at_least_greedy(passes: GreedyPasses, reasons: Reasons, state: ClusterState, plan: Plan, pods: list[PodInfo]
                    ) -> tuple[Plan, ClusterState]:
    """The multi-window `plan` (ending in `state`) against one greedy run over every pod and, when that leaves
    pods out, the reordered passes over every pod (`GreedyPasses.reordered`). The plan placing most,
    lexicographically by priority, is kept: the windows', else greedy's (every window then says FALLBACK), else a
    pass's that beats greedy (every window says FEASIBLE; a warning says so). Windows that place every pod need no
    comparison on pods placed: no plan places more. (plan, the state it ends in)."""
    index = passes.index
    placed = {p.pod for p in plan.placements if p.node}
    if all(p.key in placed for p in pods):
        return measured_against_greedy(passes, plan, pods), state
    greedy = passes.whole(pods)
    keys = {p.key for p in pods}
    victims = ([e.priority for e in plan.evictions], [e.priority for e in greedy.evictions])
    mine, theirs = net_vectors(pods, ({p.idx for p in pods if p.key in placed}, victims[0]),
                               ({index.pod_by_key[p.pod].idx for p in greedy.placements if p.node}, victims[1]))
    best = max(mine, theirs, key=lambda vec: [c for _, c in vec])
    if any(p.node is None for p in greedy.placements) and sum(c for _, c in best) < len(pods):
        chosen = _reordered_beating(passes, pods, best, victims)
        if chosen is not None:
            state, attempts = chosen
            placements = attempted(index, pods, attempts)
            reasons.fill(state, placements)
            return _pass_instead(plan, keys, placements), state
    if not lex_less(mine, theirs):
        return plan, state
    return _greedy_instead(plan, greedy, keys, "the windows together placed fewer pods than one greedy run over all "
                           "of them; the greedy plan is used"), state


def _reordered_beating(passes: GreedyPasses, pods: list[PodInfo], best: Vector, victims: tuple[list[int], list[int]]
                       ) -> tuple[ClusterState, dict] | None:
    """The first reordered pass over every pod from the initial state that beats `best` (and any pass before it)."""
    chosen = None
    for state, attempts in passes.reordered(ClusterState(passes.index), pods, short=True):
        vec = net_vectors(pods, (set(), victims[0]), (set(), victims[1]),
                          extra=[{i for i, a in attempts.items() if a.node is not None}])[-1]
        if lex_less(best, vec):
            best, chosen = vec, (state, attempts)
    return chosen


def measured_against_greedy(passes: GreedyPasses, plan: Plan, pods: list[PodInfo]) -> Plan:
    """A multi-window run that places every pod (up to MEASURE_CHECK, default objective, no evictions) against
    one greedy run over all its pods on the score measure (`solver.measure`): greedy's plan is used when it places
    every pod too, evicts nothing and measures higher."""
    if passes.opts.objective != "default" or plan.evictions or len(pods) > MEASURE_CHECK:
        return plan
    greedy = passes.whole(pods)
    if greedy.evictions or any(p.node is None for p in greedy.placements):
        return plan
    index, config = passes.index, passes.config
    if plan_measure(index, config, plan).total >= plan_measure(index, config, greedy).total:
        return plan
    return _greedy_instead(plan, greedy, {p.key for p in pods}, "one greedy run over all the windows' pods scores "
                           "higher on the score measure (every pod placed either way); the greedy plan is used")


def _pass_instead(plan: Plan, keys: set[str], placements: list[Placement]) -> Plan:
    """A reordered pass's `placements` for the pods of `keys` in place of `plan`'s (every window says FEASIBLE)."""
    return Plan(engine="cpsat", placements=[*(p for p in plan.placements if p.pod not in keys), *placements],
                windows=[{**w, "status": "FEASIBLE"} for w in plan.windows],
                warnings=[*plan.warnings, "the windows together placed fewer pods than a greedy pass over all of "
                          "them taking the pods in another order (smallest or biggest first); that pass's plan is "
                          "used"])


def _greedy_instead(plan: Plan, greedy: Plan, keys: set[str], warning: str) -> Plan:
    """`greedy`'s plan for the pods of `keys` in place of `plan`'s (every window says FALLBACK)."""
    greedy.engine = "cpsat"
    greedy.placements = [*(p for p in plan.placements if p.pod not in keys), *greedy.placements]
    greedy.windows = [{**w, "status": "FALLBACK"} for w in plan.windows]
    greedy.warnings = [*plan.warnings, warning]
    return greedy
