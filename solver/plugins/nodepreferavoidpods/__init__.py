"""NodePreferAvoidPods (kube 1.16–1.23, NodePreferAvoidPodsPriority): Score only.

A pod controlled by a ReplicationController or a ReplicaSet scores 0 on a node whose annotation
`scheduler.alpha.kubernetes.io/preferAvoidPods` lists a `podSignature.podController` of the same kind and uid,
and 100 elsewhere; any other pod (no controller, or another kind) scores 100 everywhere, as does a node whose
annotation does not parse. Not in kube 1.35's default profile; a Policy file or a profile can enable it
(kube's default weight for it was 10000).
"""

from __future__ import annotations

import json

import numpy as np
from kplace.models.index import ClusterIndex

from ...framework import CycleState, Plugin
from ...framework.plugin import MAX_NODE_SCORE
from ...framework.state import ClusterState

ANNOTATION = "scheduler.alpha.kubernetes.io/preferAvoidPods"


def avoided_controllers(annotations: dict[str, str]) -> set[tuple[str, str]]:
    """(kind, uid) of every pod controller the node asks to avoid; empty when absent or malformed."""
    raw = annotations.get(ANNOTATION)
    if not raw:
        return set()
    try:
        data = json.loads(raw)
        return {(e["podSignature"]["podController"].get("kind", ""), e["podSignature"]["podController"].get("uid", ""))
                for e in data.get("preferAvoidPods") or []}
    except (ValueError, TypeError, KeyError, AttributeError):
        return set()


def _avoid(index: ClusterIndex) -> list[set[tuple[str, str]]]:
    hit = index.cache.get("NodePreferAvoidPods")
    if hit is None:
        hit = index.cache["NodePreferAvoidPods"] = [avoided_controllers(n.metadata.annotations) for n in index.nodes]
    return hit


class NodePreferAvoidPods(Plugin):
    name = "NodePreferAvoidPods"

    def score(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        out = np.full(len(nodes), MAX_NODE_SCORE, dtype=np.int64)
        ctrl = next((o for o in pod.pod.metadata.owner_references if o.controller), None)
        if ctrl is None or ctrl.kind not in ("ReplicationController", "ReplicaSet"):
            return out
        avoid = _avoid(state.index)
        for i, n in enumerate(np.asarray(nodes).tolist()):
            if (ctrl.kind, ctrl.uid) in avoid[n]:
                out[i] = 0
        return out


PLUGINS = [NodePreferAvoidPods]
