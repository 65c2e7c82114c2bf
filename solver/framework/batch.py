"""kube's OpportunisticBatching (framework/runtime/batch.go, beta and on by default since 1.35): consecutive pods with
the same signature reuse the previous cycle's sorted scores instead of filtering and scoring again.

A cycle that scored its feasible nodes keeps them as a heap (`NodeHeap`, Go's container/heap with kube's
nodeScoreHeap order: higher total first), minus the node it chose. The next pod gets the heap's next node as a
*hint* when (a) it is the very next cycle and that one succeeded, (b) its signature equals the stored one, and
(c) the node the previous pod took no longer passes its filters (pods go one per node, so no other node's score
moved); the hint is then tried alone, like a nominated node, and taken without scoring when it fits. kube also
drops a batch older than 500 ms; kplace's cycles are decided back to back, so it never expires here.

A pod's signature is what the profile's PreFilter, Filter, PreScore and Score plugins say about it
(`SignPod`): its scheduler name, effective requests, volumes, tolerations, host ports, node affinity and
selector, node name, images and (for InterPodAffinity) labels. A pod is unsignable — never batched — when it has
topology spread constraints or the profile defaults some (the System default always does, so under kube's
default profile no pod is batched), pod (anti-)affinity, resource claims, or when the profile has a plugin that
cannot sign or an extender.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kplace.models.index import PodInfo, normalize_image

from .config import Profile

SIGNING = {  # plugin → the pod fields its SignPod covers
    "NodeResourcesFit": ("requests",), "NodeResourcesBalancedAllocation": ("requests",),
    "NodeVolumeLimits": ("volumes",), "VolumeBinding": ("volumes",), "VolumeZone": ("volumes",),
    "VolumeRestrictions": ("volumes",), "TaintToleration": ("tolerations",), "NodeUnschedulable": ("tolerations",),
    "NodePorts": ("ports",), "NodeAffinity": ("affinity", "selector"), "NodeName": ("node",),
    "ImageLocality": ("images",), "InterPodAffinity": ("labels",), "PodTopologySpread": (),
    "DynamicResources": (),
}
POINTS = ("preFilter", "filter", "preScore", "score")


def signable_profile(profile: Profile, extenders: list) -> bool:
    """Whether the profile batches at all: no extenders, every plugin at PreFilter..Score signs pods, and no
    PodTopologySpread default constraints (which leave no pod signable: kube's default profile)."""
    if extenders:
        return False
    plugins = [p for point in POINTS for p in profile.at(point)]
    return all(p.name in SIGNING for p in plugins) and not any(
        p.name == "PodTopologySpread" and p.default_constraints for p in plugins)


def signature(profile: Profile, pod: PodInfo, requests: tuple[int, ...]) -> str | None:
    """The pod's signature under the profile (`requests`: its effective requests), or None when some plugin
    cannot sign it."""
    names = {p.name for point in POINTS for p in profile.at(point)}
    spec = pod.pod.spec
    aff = spec.affinity
    if "PodTopologySpread" in names and spec.topology_spread_constraints:
        return None  # (a profile that defaults constraints does not batch: `signable_profile`)
    if "InterPodAffinity" in names and aff is not None and (aff.pod_affinity or aff.pod_anti_affinity):
        return None
    if "DynamicResources" in names and spec.resource_claims:
        return None
    fields = {f for n in names for f in SIGNING.get(n, ())}
    sig: dict[str, Any] = {"schedulerName": spec.scheduler_name}
    if "requests" in fields:
        sig["requests"] = list(requests)
    if "volumes" in fields:
        sig["volumes"] = [v.model_dump(mode="json", exclude_none=True) for v in spec.volumes or []]
    if "tolerations" in fields:
        sig["tolerations"] = [t.model_dump(mode="json", exclude_none=True) for t in spec.tolerations or []]
    if "ports" in fields:
        sig["ports"] = sorted((p.host_ip or "", p.protocol or "TCP", p.host_port)
                              for c in spec.containers for p in c.ports or [] if p.host_port)
    if "affinity" in fields:
        sig["affinity"] = aff.node_affinity.model_dump(mode="json", exclude_none=True) \
            if aff is not None and aff.node_affinity is not None else None
    if "selector" in fields:
        sig["selector"] = spec.node_selector or {}
    if "node" in fields:
        sig["node"] = spec.node_name or ""
    if "images" in fields:
        sig["images"] = sorted({normalize_image(c.image or "") for c in [*spec.containers, *spec.init_containers]})
    if "labels" in fields and not _ignores_existing_preferred(profile):
        sig["labels"] = pod.labels
    return json.dumps(sig, sort_keys=True, default=str)


def _ignores_existing_preferred(profile: Profile) -> bool:
    ipa = next((p for point in POINTS for p in profile.at(point) if p.name == "InterPodAffinity"), None)
    return bool(ipa is not None and ipa.ignore_preferred_terms_of_existing_pods)


class NodeHeap:
    """Go's container/heap over (node, total) with kube's nodeScoreHeap Less (a higher total first; with no
    extenders every Randomizer is 0): `pop` returns what kube's sortedNodeScores.Pop returns."""

    def __init__(self, nodes: list[int], totals: list[int]) -> None:
        self.h = list(zip(nodes, totals, strict=True))
        for i in range(len(self.h) // 2 - 1, -1, -1):
            self._down(i, len(self.h))

    def __len__(self) -> int:
        return len(self.h)

    def _less(self, i: int, j: int) -> bool:
        return self.h[i][1] > self.h[j][1]

    def _down(self, i: int, n: int) -> None:
        while True:
            j = 2 * i + 1
            if j >= n:
                return
            if j + 1 < n and self._less(j + 1, j):
                j += 1
            if not self._less(j, i):
                return
            self.h[i], self.h[j] = self.h[j], self.h[i]
            i = j

    def pop(self) -> int:
        n = len(self.h) - 1
        self.h[0], self.h[n] = self.h[n], self.h[0]
        self._down(0, n)
        return self.h.pop()[0]


@dataclass
class Batch:
    """One profile's batch state: the stored signature and heap, and the last cycle that stored results."""

    signature: str | None = None
    heap: NodeHeap | None = None
    last_cycle: int = -2
    last_node: int = -1

    def store(self, cycle: int, sig: str | None, hint: int | None, chosen: int, rest: NodeHeap | None) -> None:
        """kube's StoreScheduleResults after a successful cycle."""
        self.last_cycle, self.last_node = cycle, chosen
        if hint is not None and hint == chosen:
            return  # the hint was used: the stored heap goes on
        if sig is not None and rest is not None and len(rest):
            self.signature, self.heap = sig, rest
        else:
            self.signature, self.heap = None, None
