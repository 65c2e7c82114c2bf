"""The replay: a cluster state that pods bind to and leave, and the check of one pod on one node against it,
in kube's filter order: SchedulingGates, NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts,
NodeResourcesFit, VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone, PodTopologySpread
(DoNotSchedule), InterPodAffinity. The first failing filter decides, as in kube.

`replay` binds a list of pods as a fixpoint over their order: each sweep binds every pod whose checks pass
against the current state, until a sweep binds nothing. A preemptor's victims leave the state when it binds; the
victims of preemptors placed elsewhere or nowhere (`released`) leave it the first time a pod fails while they are
there (all at once; in kube they went when their preemptor's cycle nominated the node, at a point the plan does
not record).
"""

from __future__ import annotations

from kplace.models.index import ClusterIndex

from .counts import Counts
from .interpod import InterPodAffinity
from .nodes import Nodes
from .records import CompiledPod, Spread, Term, compile_term, required_terms
from .spread import compile_spread, spread_fails
from .usage import NodeUsage
from .volumes import Volumes

Binding = tuple[CompiledPod, int]  # (pod, node id)
Failure = tuple[str, str]  # (rule, message)


class Replay:
    """The state the filters judge against: the nodes (fixed) and what the bound pods use and count. `running`:
    the pods judged are running ones (`Nodes`)."""

    def __init__(self, index: ClusterIndex, running: bool = False) -> None:
        self.nodes = Nodes(index, running)
        self.counts = Counts(self.nodes.labels)
        self.interpod = InterPodAffinity(self.nodes, self.counts)
        self.volumes = Volumes(index, self.nodes.labels, self.nodes.names)
        self.compiled: dict[str, tuple[list[Term], list[Term], list[Spread]]] = {}
        self.reset()

    def reset(self) -> None:
        """An empty cluster: no pods on any node, no counts."""
        self.usage = NodeUsage(len(self.nodes))
        self.counts.reset()
        self.interpod.reset()
        self.volumes.reset()

    def add(self, p: CompiledPod, n: int, sign: int = 1) -> None:
        """Bind `p` to node n (sign +1), or take it off (−1)."""
        self.usage.add(p, n, sign)
        self.counts.record(p, n, sign)
        if p.pod.spec.volumes:
            self.volumes.add(p, n, sign)
        self.interpod.add(self.terms(p)[1], n, sign)

    def terms(self, p: CompiledPod) -> tuple[list[Term], list[Term], list[Spread]]:
        """(required affinity, required anti-affinity, DoNotSchedule spread constraints), compiled once."""
        hit = self.compiled.get(p.key)
        if hit is None:
            aff = [compile_term(p, t) for t in required_terms(p.pod, anti=False)]
            anti = [compile_term(p, t) for t in required_terms(p.pod, anti=True)]
            hit = self.compiled[p.key] = (aff, anti, compile_spread(p, self.nodes))
        return hit

    def check(self, p: CompiledPod, n: int) -> Failure | None:
        """The first failing rule (kube's filter order) for binding `p` to node `n` now, or None."""
        fail = self.nodes.fails(p.pod, n) or self.usage.fails(p, n, self.nodes.alloc[n])
        if fail is None and p.pod.spec.volumes:
            fail = self.volumes.check(p, n, self.usage.on_node[n], self.nodes.alloc[n])
        if fail is not None:
            return fail
        aff, anti, spread = self.terms(p)
        for c in spread:
            why = spread_fails(p, n, c, self.nodes, self.counts)
            if why:
                return "PodTopologySpread", why
        why = self.interpod.fails(p, n, aff, anti)
        return ("InterPodAffinity", why) if why else None

    def could_seed(self, p: CompiledPod) -> bool:
        """`p` could start its affinity group by kube's first-pod rule."""
        return self.interpod.could_seed(p, self.terms(p)[0])

    def replay(self, bound: list[Binding], todo: list[Binding], victims: dict[str, list[CompiledPod]],
               released: list[Binding] = ()) -> tuple[list[Binding], dict[str, Failure]]:
        """Bind `bound` and `released`, then `todo` as a fixpoint over the order; returns (pods left, their last
        failure)."""
        self.reset()
        for p, n in [*bound, *released]:
            self.add(p, n)
        last: dict[str, Failure] = {}
        while todo:
            left = []
            for p, n in todo:
                gone = [(v, self.nodes.id[v.pod.spec.node_name]) for v in victims.get(p.key, [])]
                for v, vn in gone:
                    self.add(v, vn, -1)
                fail = self.check(p, n)
                if fail is not None and released:
                    for v, vn in released:
                        self.add(v, vn, -1)
                    released = ()
                    fail = self.check(p, n)
                if fail is None:
                    self.add(p, n)
                    continue
                for v, vn in gone:
                    self.add(v, vn)
                last[p.key] = fail
                left.append((p, n))
            if len(left) == len(todo):
                break
            todo = left
        return todo, last
