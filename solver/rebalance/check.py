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
    """Violations of a state given as {pod key: node id} over `index` (the original, unrelaxed index).

    The replay keeps the state of the last call. A call whose state differs from it in few pods (at most
    `INCREMENTAL` of them, or a twentieth of the pods) moves those pods in the replay and re-checks only the pods
    that can be judged differently: the moved pods, the pods on the nodes they left or reached, and the pods that
    depend on them (`verify.filter_replay.Dependents`); every other pod keeps its last verdict. Any other call
    replays the whole state."""

    INCREMENTAL = 200

    def __init__(self, index: ClusterIndex) -> None:
        self.index = index
        # Running pods are judged on their placement, not on cordons or on the nodeName that bound them.
        self.v = FilterReplay(index, running=True)
        self.pods = {pi.key: self.v.compile(pi.pod) for pi in index.pods}
        self._dependents = None
        self._at: dict[str, int] = {}  # the state the replay holds: pod key → node
        self._on: dict[int, set[str]] = {}  # node → the pods on it there
        self._verdict: dict[str, StateViolation] = {}  # the violations of that state, by pod
        self._held = False

    def violations(self, assign: dict[str, int]) -> list[StateViolation]:
        now = {k: n for k, n in assign.items() if n is not None and n >= 0}
        moved = ({k for k in now.keys() | self._at.keys() if now.get(k) != self._at.get(k)} if self._held
                 else None)
        if moved is None or len(moved) > max(self.INCREMENTAL, len(now) // 20):
            self._replay_all(now)
        else:
            self._replay_moves(now, moved)
        return [self._verdict[k] for k in sorted(self._verdict)]

    def _replay_all(self, now: dict[str, int]) -> None:
        v = self.v
        v.reset()
        self._at, self._on, self._verdict, self._held = {}, {}, {}, True
        for k, n in sorted(now.items()):
            v.add(self.pods[k], n)
            self._at[k] = n
            self._on.setdefault(n, set()).add(k)
        for k in sorted(now):
            self._judge(k)

    def _replay_moves(self, now: dict[str, int], moved: set[str]) -> None:
        v, touched = self.v, set()
        for k in sorted(moved):
            old = self._at.pop(k, None)
            if old is not None:
                v.remove(self.pods[k], old)
                self._on[old].discard(k)
                touched.add(old)
            self._verdict.pop(k, None)
        for k in sorted(moved):
            new = now.get(k)
            if new is not None:
                v.add(self.pods[k], new)
                self._at[k] = new
                self._on.setdefault(new, set()).add(k)
                touched.add(new)
        if self._dependents is None:
            self._dependents = self.v.dependents(self.pods.values())
        again = {*moved, *(k for n in touched for k in self._on.get(n, ())),
                 *self._dependents.of(self.pods[k] for k in moved)}
        for k in sorted(again):
            self._verdict.pop(k, None)
            if k in self._at:
                self._judge(k)

    def _judge(self, k: str) -> None:
        """Pod k, taken off its node, against everything else: its violation, if any, kept."""
        v, p, n = self.v, self.pods[k], self._at[k]
        v.remove(p, n)
        fail = v.check(p, n)
        v.add(p, n)
        if fail is not None and fail[0] not in IGNORED_RULES:
            self._verdict[k] = StateViolation(p.key, self.index.node_names[n], _kind(*fail), fail[1])


def count_by_kind(violations: list[StateViolation]) -> dict[str, int]:
    return dict(sorted(Counter(v.rule for v in violations).items()))
