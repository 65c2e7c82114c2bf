"""A window's decision as placements: each group's counts given to its pods in queue order (`assign`), the volumes
the model chose reserved as kube's VolumeBinding Reserve would (`reserve`), one `Placement` per pod (`placements`),
and kube's message for each pod left out (`Reasons`)."""

from __future__ import annotations

import logging
from collections import Counter

from kplace.models.index import ClusterIndex, PodInfo
from kplace.models.plan import Placement

from ..framework.plugin import CycleState
from ..framework.runtime import count_reasons, fit_error_message, internal_error, run_filters, run_pre_filter
from ..framework.state import ClusterState, pod_pvc_keys
from ..plugins.volumebinding import reserve as reserve_volumes
from ..plugins.volumebinding.claims import DYNAMIC
from .groups import PodGroup
from .options import ProfileOf

log = logging.getLogger(__name__)


def assign(index: ClusterIndex, groups: list[PodGroup], counts: dict[int, dict[int, int]]) -> dict[int, int | None]:
    """Give each group's pods, in queue order, the nodes its counts name (in node-tree order)."""
    rank = {int(n): i for i, n in enumerate(index.tree_order.tolist())}
    out: dict[int, int | None] = {}
    for g in groups:
        slots = [n for n in sorted(counts.get(g.gid, {}), key=lambda n: rank[n])
                 for _ in range(counts[g.gid][n])]
        for i, p in enumerate(g.pods):
            out[p.idx] = slots[i] if i < len(slots) else None
    return out


def reserve(state: ClusterState, profile: ProfileOf, pod: PodInfo, node: int, volumes: dict[str, str]
            ) -> dict[str, str]:
    """VolumeBinding's Reserve after `assume`, with the PVs (and provisioning nodes) the model chose: they are
    recorded first, then `reserve` records the rest as kube would; {claim key: PV name or DYNAMIC} of the
    claims this pod binds."""
    if not pod.pod.spec.volumes or not any(p.name == "VolumeBinding" for p in profile(pod).at("filter")):
        return {}
    name, out = state.index.node_names[node], {}
    for key in pod_pvc_keys(pod.pod):
        what = volumes.get(key)
        if what == DYNAMIC and state.pvc_selected_node.get(key) is None:
            state.pvc_selected_node[key] = name
            out[key] = what
        elif what is not None and what != DYNAMIC and what not in state.pv_claims:
            state.pv_claims[what] = key
            out[key] = what
    return {**out, **reserve_volumes(state, pod, node)}


def placements(index: ClusterIndex, pods: list[PodInfo], nodes: dict[int, int | None], attempts: dict,
               bindings: dict[int, dict[str, str]], preempted: set[int] = frozenset()) -> list[Placement]:
    """The window's placements; a pod on a node of `preempted` (where victims go) waits for them, as a
    nominated pod does."""
    names = index.node_names
    out = []
    for p in pods:
        n, a = nodes[p.idx], attempts.get(p.idx)
        if n is not None:
            out.append(Placement(p.key, names[n], None, p.priority, bool(a and a.nominated) or n in preempted,
                                 dict(bindings.get(p.idx, {}))))
        else:
            out.append(Placement(p.key, None, a.reason if a else None, p.priority))
    return out


def attempted(index: ClusterIndex, pods: list[PodInfo], attempts: dict) -> list[Placement]:
    """`placements` of a greedy run's attempts."""
    return placements(index, pods, {p.idx: attempts[p.idx].node for p in pods}, attempts,
                      {p.idx: attempts[p.idx].volume_bindings for p in pods})


class Reasons:
    """kube's message for each pod a plan leaves out, against the state the run ends in."""

    def __init__(self, index: ClusterIndex, profile: ProfileOf) -> None:
        self.index, self.profile = index, profile
        self.post_filter: dict[str, str] = {}  # pod key → greedy's PostFilter message for pods both plans leave out

    def fill(self, state: ClusterState, placements: list[Placement]) -> None:
        """kube's message, against `state`, for each unplaced pod that has none yet."""
        for pl in placements:
            if pl.node is None and pl.reason is None:
                pl.reason = self.unplaced(state, self.index.pod_by_key[pl.pod])
                tail = self.post_filter.get(pl.pod)
                if tail and not pl.reason.endswith(tail):
                    pl.reason = f"{pl.reason} {tail}"

    def unplaced(self, state: ClusterState, pod: PodInfo) -> str:
        """kube's message for the pod against `state` (the error, when evaluating the pod fails); for a pod of a
        gang the window left out, the gang's."""
        gang = self.index.gangs[self.index.gang_of[pod.idx]] if pod.idx in self.index.gang_of else None
        if gang is not None:
            where = f" in one {gang.topology_key} domain" if gang.topology_key else ""
            return (f"PodGroup {gang.key}: no plan of the window places minCount {gang.min_count} of its pods{where}, "
                    "so none is placed")
        try:
            return self._fit_error(state, pod)
        except Exception as exc:
            log.exception("evaluating pod %s failed", pod.key)
            return internal_error(exc)

    def _fit_error(self, state: ClusterState, pod: PodInfo) -> str:
        profile = self.profile(pod)
        cycle = CycleState()
        pre = run_pre_filter(profile, state, pod, cycle)
        n_all = len(self.index.nodes)
        if pre.code != 0:
            return fit_error_message(n_all, Counter(), pre.reason)
        nodes = pre.candidates(self.index.tree_order)
        out = run_filters(profile, state, pod, cycle, nodes, pre.skipped)
        reasons = count_reasons(out)
        if len(nodes) < n_all:
            reasons[pre.absent_reason] += n_all - len(nodes)
        if not reasons and n_all:
            return "left unplaced by the window's optimum (it would displace higher-value placements)"
        return fit_error_message(n_all, reasons)
