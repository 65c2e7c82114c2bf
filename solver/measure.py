"""The score measure of a plan: how well its final state satisfies the profile's score plugins.

For a plan P with final state S (the input state, minus P's evictions, plus every placement of P), each pod p
that P places on node n is scored as kube-scheduler would score it if it were scheduled last into S:

    m(p) = Σ_i w_i · N_i(s_i(p, · ; S ∖ p), F_p)[n]

where S ∖ p is S with p taken out, F_p the nodes that pass the profile's filters for p in S ∖ p (every node,
no `percentageOfNodesToScore` sampling; n itself is added when a plan order other than "last" placed p there,
e.g. an affinity partner placed after it), s_i plugin i's raw score, N_i its NormalizeScore over F_p and w_i
its weight in the profile. The measure of P is M(P) = Σ_{p placed by P} m(p), reported in total, per plugin
(Σ_p w_i · N_i(...)[n]) and per pod.

Every plan is judged by this one number: greedy's, CP-SAT's, a rebalance's, or a user's plan given to
`kplace verify`. It is kube's own priorities as they play out: the 40th pod on a node sees the 39 before it.
Pods identical to every plugin (`framework.identical`) on the same node have the same S ∖ p, so each
(identity class, node) pair is scored once and counted as many times as it holds pods. Only n's entry of
each N_i is read, so a plugin whose score reads node n alone and is not normalised is scored at n only
(`run_scores(at=...)`).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from kplace.models.index import ClusterIndex, PodInfo

from .framework.config import SchedulerConfig
from .framework.identical import identity_key, relevant_label_keys
from .framework.plugin import CycleState
from .framework.runtime import run_filters, run_pre_filter, run_scores, score_at
from .framework.state import ClusterState

log = logging.getLogger(__name__)


@dataclass
class ScoreMeasure:
    total: int = 0
    per_plugin: dict[str, int] = field(default_factory=dict)  # weighted points per score plugin
    pods: int = 0

    @property
    def mean(self) -> float:
        return self.total / self.pods if self.pods else 0.0

    def __add__(self, other: ScoreMeasure) -> ScoreMeasure:
        plugins = {k: self.per_plugin.get(k, 0) + other.per_plugin.get(k, 0)
                   for k in {*self.per_plugin, *other.per_plugin}}
        return ScoreMeasure(self.total + other.total, plugins, self.pods + other.pods)

    def to_dict(self) -> dict[str, Any]:
        return {"total": self.total, "mean_per_pod": round(self.mean, 3), "pods": self.pods,
                "per_plugin": dict(sorted(self.per_plugin.items()))}


def pod_measure(config: SchedulerConfig, state: ClusterState, pod: PodInfo, node: int,
                static: dict[str, int | None] | None = None) -> tuple[int, dict[str, int]]:
    """m(p) and its per-plugin parts for `pod`, which `state` has on `node` (restored before returning); `static`:
    `runtime.score_at`'s values for pods identical to it."""
    profile = config.profile_for(pod.spec.scheduler_name)
    if profile is None:
        return 0, {}
    state.forget(pod)
    try:
        fast = score_at(profile, state, pod, node, static)
        if fast is not None:
            return fast[1], fast[0]
        cycle = CycleState()
        pre = run_pre_filter(profile, state, pod, cycle)
        nodes = pre.candidates(state.index.tree_order)
        out = run_filters(profile, state, pod, cycle, nodes, pre.skipped)
        feasible = nodes[out.code == 0]
        if not (feasible == node).any():
            feasible = np.append(feasible, node)
        at = int(np.flatnonzero(feasible == node)[0])
        per_plugin, totals = run_scores(profile, state, pod, cycle, feasible, at)
        parts = {name: int(s[at]) * profile.weights.get(name, 1) for name, s in per_plugin.items()}
        return int(totals[at]), parts
    finally:
        state.assume(pod, node)


def measure(config: SchedulerConfig, state: ClusterState, placed: Iterable[tuple[PodInfo, int]]) -> ScoreMeasure:
    """M over `placed` ((pod, node) pairs that `state`, the final state, holds); `state` is left as it was."""
    keys = relevant_label_keys(state.index)
    counts: Counter[tuple] = Counter()  # (identity, node) → pods
    memo: dict[tuple, tuple[int, dict[str, int]]] = {}
    static: dict[tuple, dict[str, int | None]] = {}  # identity → static plugins' values, on every node alike
    for pod, n in placed:
        identity = identity_key(state.index, pod, keys)
        k = (identity, n)
        if k not in memo:
            try:
                memo[k] = pod_measure(config, state, pod, n, static.setdefault(identity, {}))
            except Exception:  # a pod kplace cannot evaluate scores nothing (the engines leave such pods pending)
                log.exception("scoring pod %s failed", pod.key)
                memo[k] = (0, {})
        counts[k] += 1
    out = ScoreMeasure()
    for k, count in counts.items():
        total, parts = memo[k]
        out.total += count * total
        out.pods += count
        for name, v in parts.items():
            out.per_plugin[name] = out.per_plugin.get(name, 0) + count * v
    return out


def sample(items: list, limit: int) -> list:
    """At most `limit` of `items`, evenly spaced (all of them when there are no more)."""
    if len(items) <= limit:
        return items
    pick = np.linspace(0, len(items) - 1, limit).round().astype(int)
    return [items[i] for i in sorted(set(pick.tolist()))]


def final_state(index: ClusterIndex, plan) -> ClusterState:
    """The state after the plan: moved pods on their new nodes, evictions removed, placements added."""
    state = ClusterState(index)
    for m in plan.moves:
        pod = index.pod_by_key[m.pod]
        state.forget(pod)
        state.assume(pod, index.node_id[m.to])
    for e in plan.evictions:
        state.forget(index.pod_by_key[e.pod])
    for p in plan.placements:
        if p.node is not None:
            state.assume(index.pod_by_key[p.pod], index.node_id[p.node])
    return state


def plan_measure(index: ClusterIndex, config: SchedulerConfig, plan, state: ClusterState | None = None) -> ScoreMeasure:
    """M(plan) on the plan's final state (built from the plan unless given)."""
    state = final_state(index, plan) if state is None else state
    return measure(config, state, ((index.pod_by_key[p.pod], index.node_id[p.node]) for p in plan.placements
                                   if p.node is not None))
