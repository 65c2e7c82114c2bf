"""SelectorSpread (kube 1.16–1.23, SelectorSpreadPriority and ServiceSpreadingPriority): Score only.

The pod's *default selector* ANDs the selectors of the Services in its namespace that select it (their label
maps merged) with its controller's selector: a ReplicationController's label map, a ReplicaSet's or a
StatefulSet's LabelSelector (a Deployment-made ReplicaSet absent from the state stands for its Deployment's
selector). An empty selector scores 0 everywhere; pods with topologySpreadConstraints are skipped (0).
Score(n) = the pods on n in the pod's namespace, not terminating, that the selector matches.
NormalizeScore over the scored nodes, as floats truncated to int at the end:
  f = 100 · (maxNode − count) / maxNode (100 when maxNode = 0);
  with zones (region + zone labels, GA key first, then beta): f = f/3 + 2/3 · 100 · (maxZone − zoneCount) /
  maxZone, where zoneCount sums the scores of the scored nodes in the node's zone (100 when maxZone = 0);
  nodes without a zone keep f.
"""

from __future__ import annotations

import numpy as np
from kplace.models.index import REGION_LABELS, ZONE_LABELS, ClusterIndex
from kplace.models.k8s import LabelSelector, LabelSelectorRequirement, Pod
from kplace.models.selectors import Selector

from ...framework import CycleState, Plugin
from ...framework.plugin import MAX_NODE_SCORE
from ...framework.state import ClusterState

NAME = "SelectorSpread"
ZONE_WEIGHTING = 2.0 / 3.0


def _controller_selector(index: ClusterIndex, pod: Pod) -> LabelSelector | dict[str, str] | None:
    owner = next((o for o in pod.metadata.owner_references if o.controller), None)
    if owner is None or owner.kind not in ("ReplicationController", "ReplicaSet", "StatefulSet"):
        return None
    ns = pod.metadata.namespace
    works = [w for w in index.snapshot.workloads if w.metadata.namespace == ns]
    w = next((w for w in works if w.kind == owner.kind and w.metadata.name == owner.name), None)
    if w is None and owner.kind == "ReplicaSet":  # the Deployment's ReplicaSet `<deployment>-<hash>`
        w = next((w for w in works if w.kind == "Deployment" and owner.name.rsplit("-", 1)[0] == w.metadata.name),
                 None)
    if w is None:
        return None
    if owner.kind == "ReplicationController":
        sel = w.spec.selector
        return dict(sel.match_labels) if sel is not None else dict(w.spec.template.metadata.labels)
    return w.spec.selector


def default_selector(index: ClusterIndex, pod: Pod) -> Selector:
    """helper.DefaultSelector: Services selecting the pod, ANDed with its controller's selector."""
    labels: dict[str, str] = {}
    ns, pl = pod.metadata.namespace, pod.metadata.labels
    for svc in index.snapshot.services:
        sel = svc.spec.selector
        if svc.metadata.namespace == ns and sel and all(pl.get(k) == v for k, v in sel.items()):
            labels.update(sel)
    exprs: list[LabelSelectorRequirement] = []
    ctrl = _controller_selector(index, pod)
    if isinstance(ctrl, dict):
        labels.update(ctrl)
    elif isinstance(ctrl, LabelSelector):
        exprs.extend(LabelSelectorRequirement(key=k, operator="In", values=[v]) for k, v in ctrl.match_labels.items())
        exprs.extend(ctrl.match_expressions)
    return Selector(LabelSelector(match_labels=labels, match_expressions=exprs))


def zone_keys(index: ClusterIndex) -> list[str]:
    """utilnode.GetZoneKey per node: "region:\\x00:zone", "" without either label."""
    hit = index.cache.get(f"{NAME}/zones")
    if hit is None:
        hit = []
        for lb in index.node_labels:
            zone = next((lb[k] for k in ZONE_LABELS if k in lb), "")
            region = next((lb[k] for k in REGION_LABELS if k in lb), "")
            hit.append("" if not zone and not region else f"{region}:\x00:{zone}")
        index.cache[f"{NAME}/zones"] = hit
    return hit


def normalize(index: ClusterIndex, nodes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    zones = zone_keys(index)
    node_zone = [zones[n] for n in np.asarray(nodes).tolist()]
    by_zone: dict[str, int] = {}
    for z, c in zip(node_zone, counts.tolist(), strict=True):
        if z:
            by_zone[z] = by_zone.get(z, 0) + c
    max_node = int(counts.max()) if len(counts) else 0
    max_zone = max(by_zone.values(), default=0)
    out = np.zeros(len(counts), dtype=np.int64)
    for i, (z, c) in enumerate(zip(node_zone, counts.tolist(), strict=True)):
        f = float(MAX_NODE_SCORE)
        if max_node > 0:
            f = MAX_NODE_SCORE * (float(max_node - c) / float(max_node))
        if by_zone and z:
            zs = float(MAX_NODE_SCORE)
            if max_zone > 0:
                zs = MAX_NODE_SCORE * (float(max_zone - by_zone[z]) / float(max_zone))
            f = f * (1.0 - ZONE_WEIGHTING) + ZONE_WEIGHTING * zs
        out[i] = int(f)
    return out


class SelectorSpread(Plugin):
    name = NAME

    def pre_score(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> bool:
        cycle[NAME] = None if pod.spread_constraints else default_selector(state.index, pod.pod)
        return True

    def score(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        sel = cycle.get(NAME)
        cycle[f"{NAME}/nodes"] = (state.index, nodes)
        if sel is None or sel.empty:
            return np.zeros(len(nodes), dtype=np.int64)
        counts = state.matching_counts_view(frozenset({pod.namespace}), sel, include_terminating=False)
        return counts[nodes].astype(np.int64)

    def normalize(self, scores: np.ndarray, pod, cycle: CycleState) -> np.ndarray:
        if pod.spread_constraints:
            return scores
        index, nodes = cycle[f"{NAME}/nodes"]
        return normalize(index, nodes, scores)


PLUGINS = [SelectorSpread]
