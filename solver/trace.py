"""One record per scheduling cycle of the greedy engine, in the shape of the oracle's (`oracle/`, the real
kube-scheduler): what PreFilter and Filter said of each evaluated node, the sampled feasible nodes, every
plugin's weighted score and the total per node, the tied top nodes, the choice, and what a failure reported.

`follow` puts the greedy engine in lockstep with another scheduler: given a pod, it names the node that scheduler
chose, or gives that scheduler's cycle record (the oracle's: its `node` or `nominated`, and its `preemption_walk`);
when that node is among greedy's tied top nodes the cycle takes it, so both continue from the same state (kube
breaks ties at random, or by heap order, among exactly those nodes). Preemption's candidate walk follows the
record's `preemption_walk` (kube's potential nodes in its map order and its random offset) when it went over the
same nodes; the walk taken is in the record either way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from kplace.models.index import ClusterIndex, PodInfo

from .framework.config import SchedulerConfig
from .framework.plugin import Code
from .framework.runtime import FilterOutcome, PreFilterOutcome
from .greedy import GreedyScheduler


class _Cycle:
    """The Tracer of one cycle (`greedy.Tracer`)."""

    def __init__(self, index: ClusterIndex, follow: str | dict[str, Any] | None) -> None:
        self.names, self.ids = index.node_names, index.node_id
        self.walk: dict[str, Any] | None = None
        if isinstance(follow, dict):
            self.walk = follow.get("preemption_walk")
            follow = follow.get("node") or follow.get("nominated")
        self.follow = follow
        self.record: dict[str, Any] = {"feasible": [], "scores": {}, "plugin_scores": {}, "top": [], "filters": {},
                                       "prefilter": None, "evaluated": 0, "lockstep": False, "hint": None,
                                       "preemption_walk": None}
        self._scored: np.ndarray | None = None

    def pre_filtered(self, outcome: PreFilterOutcome) -> None:
        if outcome.code != Code.SUCCESS:
            self.record["prefilter"] = {"code": Code(outcome.code).label,
                                        "plugin": outcome.plugin, "reasons": [outcome.reason]}

    def filtered(self, outcome: FilterOutcome | None, feasible: np.ndarray) -> None:
        self.record["feasible"] = [self.names[n] for n in feasible.tolist()]
        if outcome is None:
            return
        self.record["evaluated"] = len(outcome.nodes)
        for i in np.flatnonzero(outcome.code != 0).tolist():
            self.record["filters"][self.names[int(outcome.nodes[i])]] = {
                "code": Code(int(outcome.code[i])).label,
                "plugin": outcome.plugins[int(outcome.plugin[i])], "reasons": outcome.reasons(i)}

    def scored(self, nodes: np.ndarray, weighted: dict[str, np.ndarray], totals: np.ndarray) -> None:
        self._scored = nodes
        names = [self.names[n] for n in nodes.tolist()]
        self.record["scores"] = dict(zip(names, totals.tolist(), strict=True))
        self.record["plugin_scores"] = {n: {p: int(v[i]) for p, v in weighted.items()} for i, n in enumerate(names)}

    def failed(self, message: str) -> None:
        self.record["message"] = message

    def hinted(self, node: int) -> None:
        self.record["hint"] = self.names[node]

    def _follow(self, nodes: list[int]) -> int | None:
        """The position in `nodes` (node ids) of the node `follow` names, or None; a taken one is lockstep."""
        names = [self.names[n] for n in nodes]
        if self.follow not in names:
            return None
        self.record["lockstep"] = True
        return names.index(self.follow)

    def candidate_walk(self, potential: list[int]) -> tuple[list[int], int]:
        """The followed scheduler's walk when its potential nodes are greedy's (as a set), else greedy's own: its
        evaluation order from offset 0 (the traced engine breaks ties by `order`)."""
        order, offset = potential, 0
        theirs = self.walk["nodes"] if self.walk else None
        if theirs is not None and len(theirs) == len(potential) and set(theirs) == {self.names[n] for n in potential}:
            order, offset = [self.ids[name] for name in theirs], int(self.walk["offset"])
        self.record["preemption_walk"] = {"offset": offset, "nodes": [self.names[n] for n in order]}
        return order, offset

    def choose_candidate(self, tied: list[int]) -> int | None:
        at = self._follow(tied)
        return None if at is None else tied[at]

    def choose(self, top: np.ndarray) -> int | None:
        assert self._scored is not None
        nodes = [int(self._scored[i]) for i in top.tolist()]
        self.record["top"] = [self.names[n] for n in nodes]
        at = self._follow(nodes)
        return None if at is None else int(top[at])


def trace(index: ClusterIndex, config: SchedulerConfig | None = None, *,
          follow: Callable[[PodInfo], str | dict[str, Any] | None] | None = None, pods: list[PodInfo] | None = None,
          preemption: bool = True, respect_pdbs: bool = True) -> Iterator[dict[str, Any]]:
    """The greedy engine's cycles over one batch of `pods` (default: the pending pods in queue order), retries
    included (`GreedyScheduler.schedule_batch`), one record each."""
    sched = GreedyScheduler(index, config, preemption=preemption, respect_pdbs=respect_pdbs)
    names = index.node_names
    queued, _ = sched.queueable(index.pending if pods is None else pods)  # gated pods get no cycle
    attempts: dict[int, int] = {}

    def before(pod: PodInfo) -> None:
        sched.tracer = _Cycle(index, follow(pod) if follow else None)

    for k, (pod, attempt) in enumerate(sched.schedule_batch(queued, before)):
        rec = sched.tracer.record
        attempts[pod.idx] = attempts.get(pod.idx, 0) + 1
        placed = attempt.node is not None and not attempt.nominated
        taken = attempt.node if placed else attempt.suggested
        if taken is not None and not rec["top"]:
            rec["top"] = [names[taken]]  # one feasible node: kube takes it without scoring
        message = (attempt.reason or rec.pop("message", None)) if attempt.nominated else attempt.reason
        yield {"cycle": k, "pod": pod.key, "attempt": attempts[pod.idx],
               "node": names[attempt.node] if placed else None, **rec, "message": message,
               "nominated": names[attempt.node] if attempt.nominated and attempt.node is not None else None,
               "victims": [v.key for v, _ in attempt.evictions],
               "rejectors": [] if placed else sorted(attempt.rejectors)}
