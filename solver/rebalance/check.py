"""Independent check of a whole cluster state (where every pod runs), for the plan's before/after and each wave.

It does not use the rebalancing model nor the CP-SAT encoding: it replays kube's filters with the verifier's
rule statements (`solver/verify/`). A state holds a hard rule when every pod, taken off its node, would be
admitted back there by kube's filters against everything else: taints (NoSchedule, NoExecute), required node
affinity and selector, capacity and pod slots, host ports, DoNotSchedule topology spread, required pod
affinity (with the first-pod rule) and anti-affinity both ways. Cordons and `spec.nodeName` do not count:
they constrain scheduling, not running pods.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from kplace.models.index import ClusterIndex

from ..verify import FilterReplay

IGNORED_RULES = {"SchedulingGates", "NodeUnschedulable", "NodeName"}


@dataclass(frozen=True)
class StateViolation:
    pod: str
    node: str
    rule: str  # kind: taint, node-affinity, anti-affinity, affinity, spread, capacity, ports
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"pod": self.pod, "node": self.node, "rule": self.rule, "message": self.message}


def _kind(rule: str, message: str) -> str:
    if rule == "TaintToleration":
        return "taint"
    if rule == "NodeAffinity":
        return "node-affinity"
    if rule == "PodTopologySpread":
        return "spread"
    if rule == "NodeResourcesFit":
        return "capacity"
    if rule == "NodePorts":
        return "ports"
    if rule == "InterPodAffinity":
        return "anti-affinity" if "anti-affinity" in message else "affinity"
    return rule


class StateChecker:
    """Violations of a state given as {pod key: node id} over `index` (the original, unrelaxed index)."""

    def __init__(self, index: ClusterIndex) -> None:
        self.index = index
        # Running pods are judged on their placement, not on cordons or on the nodeName that bound them.
        self.v = FilterReplay(index, running=True)
        self.pods = {pi.key: self.v.compile(pi.pod) for pi in index.pods}

    def violations(self, assign: dict[str, int]) -> list[StateViolation]:
        v = self.v
        v.reset()
        placed = [(self.pods[k], n) for k, n in sorted(assign.items()) if n is not None and n >= 0]
        for p, n in placed:
            v.add(p, n)
        out = []
        names = self.index.node_names
        for p, n in placed:
            v.remove(p, n)
            fail = v.check(p, n)
            v.add(p, n)
            if fail is not None and fail[0] not in IGNORED_RULES:
                out.append(StateViolation(p.key, names[n], _kind(*fail), fail[1]))
        return out


def count_by_kind(violations: list[StateViolation]) -> dict[str, int]:
    return dict(sorted(Counter(v.rule for v in violations).items()))
