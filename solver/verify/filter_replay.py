"""The verifier's filters over a state the caller builds, for other independent checks (the rebalancer's
before/after and per-wave checks), and which pods' checks a move can change (`Dependents`)."""

from __future__ import annotations

from collections.abc import Iterable

from kplace.models.index import ClusterIndex
from kplace.models.k8s import Pod

from .records import CompiledPod, compile_pod
from .replay import Failure, Replay


class FilterReplay:
    """`compile` a pod once, `add`/`remove` it on nodes, and `check` whether kube's filters admit it on a node
    against everything else placed. `running=True` judges pods already running: cordons and the `spec.nodeName`
    that bound them do not count against them.
    """

    def __init__(self, index: ClusterIndex, running: bool = False) -> None:
        self._replay = Replay(index, running=running)
        self._running = running

    def compile(self, pod: Pod) -> CompiledPod:
        if self._running and pod.spec.node_name and any(v.ephemeral is not None for v in pod.spec.volumes):
            # its generic ephemeral volumes' claims are read as a pending pod's would be (`volumes`)
            pod = pod.model_copy(update={"spec": pod.spec.model_copy(update={"node_name": ""})})
        return compile_pod(pod)

    def reset(self) -> None:
        self._replay.reset()

    def add(self, pod: CompiledPod, node: int) -> None:
        self._replay.add(pod, node)

    def remove(self, pod: CompiledPod, node: int) -> None:
        self._replay.add(pod, node, -1)

    def check(self, pod: CompiledPod, node: int) -> Failure | None:
        """(rule, message) of the first filter that rejects `pod` on `node`, or None."""
        return self._replay.check(pod, node)

    def dependents(self, pods: Iterable[CompiledPod]) -> Dependents:
        return Dependents(self._replay, pods)


class Dependents:
    """Which of `pods` may be judged differently once some pods (the movers) bind or leave nodes, besides the pods
    on the nodes they leave and reach (whose node usage changes) and the movers themselves. A pod p's check reads
    other nodes only through the pods that a required (anti-)affinity term or a DoNotSchedule spread constraint
    of p selects, the pods whose required anti-affinity terms select p, and, for volumes, the pods that mount
    volumes. So p depends on mover m when one of p's terms or constraints selects m, one of m's anti-affinity
    terms selects p, or both mount volumes. Pods alike in all of that (namespace, labels, terms, constraints,
    volumes or none) form one group, tried once, and groups are found through a label pair their selectors
    require (their first matchLabels pair)."""

    def __init__(self, replay: Replay, pods: Iterable[CompiledPod]) -> None:
        self._replay = replay
        self.groups: list[tuple[CompiledPod, list[str]]] = []  # (a member, every member's key)
        self._by_anchor: dict[tuple[str, str] | None, list[int]] = {}  # by a pair one of its selectors requires
        self._by_label: dict[tuple[str, str], list[int]] = {}  # by the label pairs its pods carry
        self._with_volumes: list[int] = []
        index: dict[tuple, int] = {}
        for p in pods:
            aff, anti, spread = replay.terms(p)
            key = (p.ns, frozenset(p.labels.items()), tuple(aff), tuple(anti), tuple(spread), bool(p.pod.spec.volumes))
            g = index.get(key)
            if g is None:
                g = index[key] = len(self.groups)
                self.groups.append((p, []))
                for sel in {*(t.selector for t in (*aff, *anti)), *(c.selector for c in spread)}:
                    self._by_anchor.setdefault(sel.anchor, []).append(g)
                for pair in p.labels.items():
                    self._by_label.setdefault(pair, []).append(g)
                if p.pod.spec.volumes:
                    self._with_volumes.append(g)
            self.groups[g][1].append(p.key)

    def of(self, movers: Iterable[CompiledPod]) -> set[str]:
        """The keys of the pods that depend on some mover."""
        hit: set[int] = set()
        matches = self._replay.interpod.term_matches
        for m in movers:
            tried = {*self._by_anchor.get(None, ()), *(g for pair in m.labels.items()
                                                       for g in self._by_anchor.get(pair, ()))}
            hit.update(g for g in tried - hit if self._selects(self.groups[g][0], m))
            for t in self._replay.terms(m)[1]:
                anchor = t.selector.anchor
                tried = range(len(self.groups)) if anchor is None else self._by_label.get(anchor, ())
                hit.update(g for g in tried if g not in hit and matches(t, self.groups[g][0]))
            if m.pod.spec.volumes:
                hit.update(self._with_volumes)
        return {k for g in hit for k in self.groups[g][1]}

    def _selects(self, p: CompiledPod, m: CompiledPod) -> bool:
        """One of p's required (anti-)affinity terms or DoNotSchedule spread constraints selects m."""
        aff, anti, spread = self._replay.terms(p)
        matches = self._replay.interpod.term_matches
        return (any(matches(t, m) for t in (*aff, *anti))
                or any(m.ns == p.ns and not c.selector.empty and c.selector.matches(m.labels) for c in spread))
