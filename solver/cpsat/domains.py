"""Each group's domain (the nodes it may use) and its static objective coefficients.

Domain: the nodes where the group's representative pod passes every *node-local* filter against the
window's starting state (unschedulable, node name, taints, node affinity, ports and resource fit against
the pods already there), minus the nodes where a cross-pod filter already fails because of pods that will not
move: each such plugin's `PluginEncoding.prune` (required anti-affinity against bound pods and their
anti-affinity, a missing topology key). Everything a *window* pod could change stays in the model.

Coefficient c[g, n] = Σ_p weight_p · normalize_p(score_p(rep_g, n)) over the *static* score plugins (those
without a CP-SAT encoding, `plugins.encodings`: their score of a pod on a node does not depend on where the
other window pods go), normalised over the group's domain (kube normalises over the nodes it sampled). The
state-dependent plugins contribute their own terms on the final state (`objective`). `rank[g, n]` is kube's
whole weighted total at the window's start, the order in which a group's scope keeps nodes. In a window where
a group may preempt, its domain is taken on the state without the candidate victims below its priority
(`window_domains`): the model decides which go.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from ..framework.config import Profile
from ..framework.plugin import Code, CycleState
from ..framework.runtime import run_filters, run_pre_filter, run_scores
from ..framework.state import ClusterState
from ..plugins import encodings
from ..plugins.defaultpreemption.encoding import Victims, may_preempt
from .groups import PodGroup
from .options import ProfileOf

log = logging.getLogger(__name__)


@dataclass
class GroupDomain:
    nodes: np.ndarray  # node ids, in node-tree order
    coef: np.ndarray  # int64 per node in `nodes`: the static plugins' weighted total
    rank: np.ndarray  # int64 per node in `nodes`: every plugin's weighted total at the window's start


def group_domain(profile: Profile, state: ClusterState, group: PodGroup,
                 encoded: frozenset[str] = frozenset()) -> GroupDomain:
    """The group's domain; `encoded` names the score plugins left out of `coef` (they have their own terms)."""
    cycle = CycleState()
    pre = run_pre_filter(profile, state, group.rep, cycle)
    if pre.code != Code.SUCCESS:
        return GroupDomain(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
    order = state.index.tree_order
    nodes = pre.candidates(order)
    pruners = {name: e.prune for name, e in encodings().items() if e.prune is not None}
    out = run_filters(profile, state, group.rep, cycle, nodes, pre.skipped | set(pruners))
    ok = nodes[out.code == 0]
    for plugin in profile.at("filter"):  # cross-pod filters: only what bound pods alone decide
        if plugin.name in pruners and plugin.name not in pre.skipped and len(ok):
            ok = ok[pruners[plugin.name](plugin, state, group, cycle, ok)]
    if len(ok) == 0:
        return GroupDomain(ok, np.zeros(0, np.int64), np.zeros(0, np.int64))
    per_plugin, total = run_scores(profile, state, group.rep, cycle, ok)
    static = total.copy()
    for name in encoded & per_plugin.keys():
        static -= per_plugin[name] * profile.weights.get(name, 1)
    return GroupDomain(ok, static, total)


def window_domains(state: ClusterState, groups: list[PodGroup], profile: ProfileOf,
                   encoded: frozenset[str], victims: Victims | None) -> dict[int, GroupDomain]:
    """Each group's domain on `state`; a group that may preempt gets the nodes its filters pass once the candidates
    below its priority are gone. A group whose pods fail to evaluate unexpectedly gets none (logged; greedy's
    attempt, which fails the same way, gives the pods their reason)."""
    def domain(group: PodGroup, on: ClusterState) -> GroupDomain:
        try:
            return group_domain(profile(group.rep), on, group, encoded)
        except Exception:
            log.exception("evaluating pod %s failed", group.rep.key)
            empty = np.zeros(0, np.int64)
            return GroupDomain(empty, empty, empty)

    out, without = {}, {}
    for g in groups:
        gone = victims.below(g.priority) if victims is not None and may_preempt(g.rep, profile(g.rep)) else []
        if not gone:
            out[g.gid] = domain(g, state)
            continue
        if g.priority not in without:
            without[g.priority] = state.fork()
            for v in gone:
                without[g.priority].forget(v)
        out[g.gid] = domain(g, without[g.priority])
    return out
