"""The plugin contract, vectorised over nodes.

A plugin is a thin adapter over pure functions. Every extension point receives the mutable ClusterState,
the pod (a compiled PodInfo), the per-cycle `CycleState` (where PreFilter/PreScore leave their data for
Filter/Score, as in kube), and an array `nodes` of node ids; it answers for all of them at once:

- `pre_filter(state, pod, cycle) -> PreFilterResult`: Success (optionally a node-id subset), Skip (this
  plugin's Filter is off for the pod), or a whole-pod failure with kube's code and reason.
- `filter(state, pod, cycle, nodes) -> FilterResult`: per node, Success / Unschedulable /
  UnschedulableAndUnresolvable, and kube's reason strings.
- `pre_score(state, pod, cycle, nodes) -> bool`: False means Skip (the plugin adds 0 everywhere).
- `score(state, pod, cycle, nodes) -> int64 array` of raw scores, then `normalize(scores, pod, cycle)`
  maps them to 0..100 (default: unchanged).
- `queueing_hint(event, pod, other, index) -> bool`, for the cluster events in `hint_events` (`framework.queue`):
  may `event` about pod `other` make `pod`, which this plugin rejected, schedulable (kube's QueueingHintFn)?
Plugins that have no extension point simply do not define the method; `has(point)` says which exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, ClassVar

import numpy as np
from kplace.models.index import PodInfo

from .state import ClusterState

# Plugins whose PreFilter reads other pods: adding or removing a pod changes their PreFilter state, which
# `Plugin.update_pre_filter` updates as kube's AddPod/RemovePod do (or their Filter reads the live state).
STATE_DEPENDENT_PREFILTER = frozenset({"InterPodAffinity", "PodTopologySpread", "VolumeRestrictions", "VolumeBinding",
                                       "NodeVolumeLimits"})


class Code(IntEnum):
    SUCCESS = 0
    UNSCHEDULABLE = 1
    UNSCHEDULABLE_AND_UNRESOLVABLE = 2
    SKIP = 3

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    Code.SUCCESS: "Success",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.SKIP: "Skip",
}


@dataclass
class FilterResult:
    """Per-node filter outcome. `code[i]` is the Code for `nodes[i]`; `reasons` pairs each reason text
    with a boolean mask over the same nodes (a node may fail for several reasons, as NodeResourcesFit's
    "Insufficient cpu" and "Insufficient memory")."""

    code: np.ndarray
    reasons: list[tuple[str, np.ndarray]] = field(default_factory=list)

    @classmethod
    def success(cls, n: int) -> FilterResult:
        return cls(np.zeros(n, dtype=np.int8))

    @classmethod
    def fail_where(cls, mask: np.ndarray, code: Code, reason: str) -> FilterResult:
        """Nodes where `mask` holds fail with `code` and `reason`; the others succeed."""
        mask = np.asarray(mask, dtype=bool)
        return cls(np.where(mask, np.int8(code), np.int8(0)).astype(np.int8, copy=False),
                   [(reason, mask)] if mask.any() else [])

    def reasons_of(self, i: int) -> list[str]:
        return [text for text, mask in self.reasons if mask[i]]


@dataclass
class PreFilterResult:
    code: Code = Code.SUCCESS
    reason: str = ""
    node_subset: np.ndarray | None = None  # node ids; None means no restriction

    @classmethod
    def skip(cls) -> PreFilterResult:
        return cls(Code.SKIP)


SUCCESS = PreFilterResult()


class CycleState(dict):
    """Per-pod scratch space shared between a plugin's PreFilter/Filter and PreScore/Score (keyed by name)."""

    def clone(self) -> CycleState:
        """kube's CycleState.Clone: each value's own `clone()` where it has one (state that AddPod/RemovePod
        change), else the value itself (read-only state)."""
        return CycleState({k: v.clone() if hasattr(v, "clone") else v for k, v in self.items()})


class Plugin:
    """Base class. Subclasses set `name` (upstream's) and implement the extension points they have."""

    name: ClassVar[str] = ""
    #: extension points this plugin implements, from {"queue_sort", "pre_enqueue", "pre_filter",
    #: "filter", "post_filter", "pre_score", "score"}; derived from the methods defined when left empty.
    points: ClassVar[frozenset[str]] = frozenset()
    #: the pod events (`framework.queue`) this plugin registers a queueing hint for
    hint_events: ClassVar[frozenset[str]] = frozenset()
    #: its score of a pod on a node reads that node alone (and the pod): scoring any subset of nodes gives the same
    #: value per node, so a score wanted at one node (`runtime.run_scores(at=...)`) needs no other, unless
    #: `normalize` does
    node_local_score: ClassVar[bool] = False
    #: its raw score reads the node objects alone (the index, never the state), and its `normalize` maps a constant
    #: vector to a constant that depends on the value alone (not on how many nodes it covers): when every node
    #: scores the same, a score wanted at one node needs no filtering (`runtime.score_at`)
    static_score: ClassVar[bool] = False
    #: its Filter's verdict on a node reads the node and the pod alone, never another pod (`filter_reads`)
    reads_pods: ClassVar[bool] = True
    #: its Filter's verdict reads the node's object and the pod's `ClusterIndex.node_keys` alone, never the state:
    #: pods with equal keys pass the same nodes at every cycle (the greedy walk keeps those verdicts)
    static_filter: ClassVar[bool] = False

    def __init__(self, args: dict[str, Any] | None = None) -> None:
        self.args = dict(args or {})

    @classmethod
    def has(cls, point: str) -> bool:
        if cls.points:
            return point in cls.points
        return getattr(cls, point, None) is not getattr(Plugin, point, None)

    # Default implementations: "no such extension point".
    def pre_enqueue(self, pod: PodInfo) -> tuple[bool, str]:  # pragma: no cover - interface
        return True, ""

    def pre_filter(self, state: ClusterState, pod: PodInfo, cycle: CycleState) -> PreFilterResult:
        return SUCCESS

    def update_pre_filter(self, state: ClusterState, pod: PodInfo, cycle: CycleState, other: PodInfo, node: int,
                          delta: int) -> None:
        """kube's PreFilterExtensions: AddPod (delta +1) or RemovePod (−1) of `other` on `node` in the PreFilter
        state `cycle` holds for `pod`, as preemption's and the nominated pods' dry runs do. By default the
        PreFilter state reads no other pod."""

    def filter(self, state: ClusterState, pod: PodInfo, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        return FilterResult.success(len(nodes))

    def filter_reads(self, state: ClusterState, pod: PodInfo, cycle: CycleState, other: PodInfo) -> bool:
        """May adding or removing `other` on a node change this plugin's Filter verdict for `pod` there, `cycle`
        holding the pod's PreFilter state (and `update_pre_filter` applied for `other`)? Preemption's dry run and
        the filters with nominated pods re-run no filter that reads none of the pods they remove or add (the room
        decides NodeResourcesFit). By default: `reads_pods`."""
        return self.reads_pods

    def pre_score(self, state: ClusterState, pod: PodInfo, cycle: CycleState, nodes: np.ndarray) -> bool:
        """False for kube's PreScore Skip. Whether it skips depends on the pod and the state, never on `nodes` (the
        nodes that passed the filters), so it may be asked with other nodes (`runtime.score_at`)."""
        return True

    def score(self, state: ClusterState, pod: PodInfo, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        return np.zeros(len(nodes), dtype=np.int64)

    def normalize(self, scores: np.ndarray, pod: PodInfo, cycle: CycleState) -> np.ndarray:
        return scores

    def queueing_hint(self, event: str, pod: PodInfo, other: PodInfo, index: Any) -> bool:
        return True


MAX_NODE_SCORE = 100
