"""DefaultPreemption (PostFilter), as kube's `framework/preemption` does it.

1. Eligible unless `preemptionPolicy: Never`.
2. Potential nodes: those whose filter status was Unschedulable (not UnschedulableAndUnresolvable).
   numCandidates = min(#potential, max(#potential·minCandidateNodesPercentage/100, minCandidateNodesAbsolute)).
   Walk them from an offset (0 in deterministic `order` mode, seeded random in `random` mode), stopping once
   a non-PDB-violating candidate exists and the candidate count reaches numCandidates.
3. Victims on a node: remove every pod of strictly lower priority; if the pod still does not fit, no
   candidate. Else, by importance (priority desc, earlier start first), reprieve PDB-violating pods first,
   then the others: add each back and keep it if the pod still fits; otherwise it is a victim.
4. Pick: fewest PDB violations; lowest highest-victim priority; smallest Σ(priority + 2³¹); fewest victims;
   latest earliest start time among the highest-priority victims; first candidate.
Messages: nodes that cannot help are "Preemption is not helpful for scheduling" (UU) or "No preemption
victims found for incoming pod".

One deliberate difference: kplace never evicts what a PDB protects. kube takes a PDB-violating candidate
when no other exists, and reads each PDB's `status.disruptionsAllowed` as the disruption controller last wrote
it, which its own evictions in a burst do not lower; kplace drops such candidates (the pod stays pending with
"would violate a PodDisruptionBudget") and counts its own evictions against the budgets, unless the scheduler
was built with `respect_pdbs=False` (`--allow-pdb-violations`), which is kube's behaviour on both counts.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import numpy as np
from kplace.models.index import PodInfo

from ...framework.config import Profile
from ...framework.plugin import STATE_DEPENDENT_PREFILTER, Code, CycleState
from ...framework.runtime import (
    FilterOutcome,
    fit_error_message,
    inert,
    pod_reading_filters,
    run_filters,
    run_pre_filter,
    update_pre_filter,
)
from ..noderesources.helpers import TOO_MANY_PODS, checked_requests

if TYPE_CHECKING:
    from ...framework.handle import PreemptionHandle
    from ...framework.state import ClusterState

NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
PDB_PROTECTED = "preemption would violate a PodDisruptionBudget"
MIN_CANDIDATE_NODES_PERCENTAGE = 10
MIN_CANDIDATE_NODES_ABSOLUTE = 100
_NONE: frozenset[str] = frozenset()
OTHERS_CHUNK = 256  # walk nodes whose filters `_Fits.others` runs at once
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
NOT_STARTED = datetime(9999, 1, 1, tzinfo=UTC)  # kube reads time.Now() for a pod without status.startTime


@dataclass
class PreemptionResult:
    node: int | None
    victims: list[tuple[PodInfo, bool]] = field(default_factory=list)
    message: str = ""
    clear: bool = True  # a failure clears the pod's nomination (kube's result with an empty nominated node)
    candidates: list[Candidate] = field(default_factory=list)  # the walk's candidates, in walk order


@dataclass
class Candidate:
    node: int
    victims: list[PodInfo]
    violating: set[int]  # pod idx of victims that violate a PDB

    def key(self) -> tuple:
        """Smaller is better: kube's pickOneNodeForPreemption criteria in order."""
        prios = [v.priority for v in self.victims]
        highest = max(prios) if prios else -(2**31)
        top = [v for v in self.victims if v.priority == highest]
        earliest = min((start_time(v) for v in top), default=_EPOCH)
        return (
            len(self.violating),
            highest,
            sum(p + 2**31 for p in prios),
            len(self.victims),
            -earliest.timestamp(),
        )


def start_time(p: PodInfo) -> datetime:
    """kube's GetPodStartTime: status.startTime, or "now" for a pod that has not started (later than any)."""
    t = p.pod.status.start_time
    if t is None:
        return NOT_STARTED
    return t if t.tzinfo else t.replace(tzinfo=UTC)


class _Fits:
    """Does the preemptor pass the filters on a node in the current (victim-adjusted) state?

    As kube's dry run does, each node's dry run starts from a clone of the cycle's PreFilter state (`start`),
    and every pod removed or put back updates the clone through the PreFilter extensions (kube's
    RemovePod/AddPod) besides the state; Filters always read the live state. When NodeResourcesFit is the only
    filter left to run on a node (the others skipped, or reading no other pod and already passed there) and
    no active PreFilter reads other pods, the dry run is arithmetic on the node's free room (`by_room`): the
    filters' verdict is exactly `_Room.fits`, with the nominated pods counted as kube's dry run counts them."""

    def __init__(self, handle: PreemptionHandle, profile: Profile, pod: PodInfo) -> None:
        self.handle, self.profile, self.pod = handle, profile, pod
        self.cycle = CycleState()
        self.pre = run_pre_filter(profile, handle.state, pod, self.cycle)
        active = {p.name for p in profile.at("preFilter")} - self.pre.skipped
        self.extends = bool(active & STATE_DEPENDENT_PREFILTER)  # removing and adding pods updates the cycle
        self.node_cycle = self.cycle
        self._decider: np.ndarray | None = None  # node → the cycle's deciding filter (index into outcome.plugins)
        self._passed: dict[int, frozenset[str]] = {}  # deciding filter → the pod-independent filters before it
        fit = profile.plugin("NodeResourcesFit")
        self.counts_resources = fit is not None and fit in profile.at("filter")
        cols, want = (checked_requests(handle.index, pod.idx, fit.config.ignored_resources, fit.config.ignored_groups)
                      if self.counts_resources else (np.zeros(0, dtype=np.int64), np.zeros(0)))
        self.cols, self.want = cols, want.tolist()
        # filters whose verdict on a node reads no other pod (removing victims or adding nominated pods cannot
        # change it)
        self.independent = frozenset(p.name for p in profile.at("filter") if not p.reads_pods)
        others = {p.name for p in profile.at("filter")} - self.pre.skipped - {"NodeResourcesFit"}
        self.needs_passed = frozenset(others) if not self.extends and others <= self.independent else None
        order = [p.name for p in profile.at("filter")]
        before = frozenset(order[: order.index("NodeResourcesFit")]) - self.pre.skipped if self.counts_resources \
            else None
        self.before_fit = before if before is not None and before <= self.independent else None
        self.reading = pod_reading_filters(profile, self.pre.skipped)
        self.walk_from(np.zeros(0, dtype=np.int64))

    def inert(self, pods: list[PodInfo]) -> bool:
        """Whether removing or putting back any of `pods` leaves every filter's verdict but NodeResourcesFit's as it
        is (`Plugin.filter_reads`): then the room alone decides each reprieve."""
        return inert(self.reading, self.handle.state, self.pod, self.cycle, pods)

    def walk_from(self, walk: np.ndarray) -> None:
        """The candidate walk's nodes, in order, for `others`."""
        self.walk, self._others = walk, {}
        self._pos = {n: k for k, n in enumerate(walk.tolist())}

    def others(self, node: int) -> list[str]:
        """`self(node, resources=False)` in the cycle's state, found for the next `OTHERS_CHUNK` nodes of the walk
        at once (each node's filters read that node alone)."""
        hit = self._others.get(node)
        if hit is not None:
            return hit
        pre, k = self.pre, self._pos.get(node)
        if k is None or pre.code != Code.SUCCESS or pre.nodes is not None:
            return self(node, resources=False)
        nodes = self.walk[k: k + OTHERS_CHUNK]
        skipped = pre.skipped | {"NodeResourcesFit"}
        out = run_filters(self.profile, self.handle.state, self.pod, self.cycle, nodes, skipped)
        self.handle.filter_with_nominated(self.profile, self.pod, nodes, out, skipped, self.cycle)
        for i, n in enumerate(nodes.tolist()):
            self._others[n] = out.reasons(i) if out.code[i] != 0 else []
        return self._others[node]

    def start(self, node: int) -> None:
        """A dry run on `node` begins: a fresh clone of the cycle's state."""
        self.node_cycle = self.cycle.clone() if self.extends else self.cycle

    def remove(self, p: PodInfo, node: int) -> None:
        self.handle.state.forget(p)
        if self.extends:
            update_pre_filter(self.profile, self.handle.state, self.pod, self.node_cycle, self.pre.skipped, p, node, -1)

    def add(self, p: PodInfo, node: int) -> None:
        self.handle.state.assume(p, node)
        if self.extends:
            update_pre_filter(self.profile, self.handle.state, self.pod, self.node_cycle, self.pre.skipped, p, node, +1)

    def note_passed(self, outcome: FilterOutcome) -> None:
        """From the cycle's outcome: per node, the pod-independent filters before its deciding one (`passed`)."""
        order = [p.name for p in self.profile.at("filter")]
        self._decider = np.full(self.handle.n_nodes, -1, dtype=np.int64)
        self._decider[outcome.nodes] = outcome.plugin
        for k in outcome.deciders():
            name = outcome.plugins[k]
            before = order[: order.index(name)] if name in order else []
            self._passed[k] = frozenset(n for n in before if n in self.independent)

    def passed(self, node: int) -> frozenset[str]:
        """The pod-independent filters the node passed in the cycle."""
        return _NONE if self._decider is None else self._passed.get(int(self._decider[node]), _NONE)

    def by_room(self, node: int) -> bool:
        """Whether `_Room.fits` alone decides the filters on the node (see the class docstring)."""
        pre = self.pre
        return (self.needs_passed is not None and pre.code == Code.SUCCESS and (pre.nodes is None or node in pre.nodes)
                and self.needs_passed <= self.passed(node))

    def fails_by_room(self, node: int) -> bool:
        """Whether, when the room cannot fit the pod, the filters' reasons on the node are NodeResourcesFit's
        (`_Room.reasons`): every filter before it reads no other pod and passed on the node in the cycle, and the
        filters stop at the first that fails (the ones after it never run). For a node with no nominated pod."""
        pre = self.pre
        return (self.before_fit is not None and pre.code == Code.SUCCESS and (pre.nodes is None or node in pre.nodes)
                and self.before_fit <= self.passed(node))

    def room(self, node: int, gone: list[PodInfo], nominated: list[PodInfo]) -> _Room:
        """The node's free room (NodeResourcesFit's checked resources and pod slots) with `gone` removed and the
        `nominated` pods added."""
        index, state, cols = self.handle.index, self.handle.state, self.cols
        free = index.alloc[node, cols] - state.requested[node, cols]
        if gone:
            free = free + index.pod_req[np.array([p.idx for p in gone])][:, cols].sum(axis=0)
        if nominated:
            free = free - index.pod_req[np.array([p.idx for p in nominated])][:, cols].sum(axis=0)
        slots = int(index.max_pods[node] - state.pod_count[node]) + len(gone) - len(nominated)
        return _Room(self, free.tolist(), slots)

    def without(self, node: int, lower: list[PodInfo]) -> list[str]:
        """The filters' reasons on the node with `lower` gone (restored after)."""
        self.start(node)
        for p in lower:
            self.remove(p, node)
        try:
            return self(node)
        finally:
            for p in lower:
                self.handle.state.assume(p, node)

    def __call__(self, node: int, *, resources: bool = True) -> list[str]:
        """The reasons the pod does not fit on the node ([] when it fits) in the dry run's state. Filters that
        read no other pod and already passed on this node (`passed`) cannot change their verdict when pods come
        and go: not re-run. `resources=False`: the other filters alone, in the cycle's state (the verdict they
        give once `inert` pods are gone)."""
        pre = self.pre
        if pre.code != Code.SUCCESS:
            return [pre.reason]
        if pre.nodes is not None and node not in pre.nodes:
            return [pre.absent_reason]
        one = np.array([node], dtype=np.int64)
        skipped = pre.skipped | self.passed(node)
        cycle = self.node_cycle
        if not resources:
            skipped, cycle = skipped | {"NodeResourcesFit"}, self.cycle
        out = run_filters(self.profile, self.handle.state, self.pod, cycle, one, skipped)
        self.handle.filter_with_nominated(self.profile, self.pod, one, out, skipped, cycle)
        return out.reasons(0) if out.code[0] != 0 else []


class _Room:
    """A node's free room for the preemptor: free[r] per checked resource and pod slots. NodeResourcesFit passes
    iff slots ≥ 1 and want[r] ≤ free[r] for every r (a necessary condition for the whole filter chain)."""

    __slots__ = ("fits_", "free", "slots")

    def __init__(self, fits: _Fits, free: list, slots: int) -> None:
        self.fits_, self.free, self.slots = fits, free, slots

    def fits(self) -> bool:
        return (not self.fits_.counts_resources or self.slots >= 1) and all(
            w <= f for w, f in zip(self.fits_.want, self.free, strict=True))

    def reasons(self) -> list[str]:
        """NodeResourcesFit's reasons on this room, in its order."""
        fits = self.fits_
        short = [f"Insufficient {fits.handle.index.resources[c]}"
                 for c, w, f in zip(fits.cols.tolist(), fits.want, self.free, strict=True) if w > f]
        return [TOO_MANY_PODS] * (fits.counts_resources and self.slots < 1) + short

    def fits_with(self, p: PodInfo) -> bool:
        """Whether the room still fits the preemptor once `p` is back on the node."""
        fits = self.fits_
        if fits.counts_resources and self.slots < 2:
            return False
        back = fits.handle.index.pod_req[p.idx, fits.cols].tolist()
        return all(w <= f - b for w, f, b in zip(fits.want, self.free, back, strict=True))

    def take(self, p: PodInfo) -> None:
        """`p` is back on the node."""
        back = self.fits_.handle.index.pod_req[p.idx, self.fits_.cols].tolist()
        self.free = [f - b for f, b in zip(self.free, back, strict=True)]
        self.slots -= 1


def _split_by_pdb(handle: PreemptionHandle, pods: list[PodInfo]) -> tuple[list[PodInfo], list[PodInfo]]:
    allowed = handle.pdb_allowed()
    taken: dict[int, int] = {}  # disruptions these pods take from each PDB
    pdbs = handle.index.snapshot.pdbs
    violating, ok = [], []
    for p in pods:
        bad = False
        for i in handle.index.pdbs_of(p):
            status = pdbs[i].status
            if status is not None and p.name in status.disrupted_pods:
                continue
            taken[i] = taken.get(i, 0) + 1
            if allowed[i] < taken[i]:
                bad = True
        (violating if bad else ok).append(p)
    return violating, ok


def select_victims(handle: PreemptionHandle, profile: Profile, pod: PodInfo, node: int,
                   fits: _Fits) -> tuple[Candidate | None, list[str]]:
    """kube's SelectVictimsOnNode: the candidate, or None and the reasons the node cannot help (the filters'
    with every lower-priority pod gone, or "No preemption victims found" when there is none to remove)."""
    state = handle.state
    lower = [p for p in state.pods_on(node) if p.priority < pod.priority]
    if not lower:
        return None, [NO_VICTIMS]
    nominated = handle.nominated_on(pod, node)
    room = fits.room(node, lower, nominated)
    by_room = fits.by_room(node)  # the filters' verdict is the room's: no dry run on the state
    if not room.fits():
        # the requests cannot fit even with every lower-priority pod gone: kube reports the filters' reasons
        if not handle.explain:
            return None, [NO_VICTIMS]
        decided = by_room or (not nominated and fits.fails_by_room(node))
        return None, room.reasons() if decided else fits.without(node, lower)
    if not by_room and fits.inert(lower):
        # the other filters say with every lower-priority pod gone what they say now, and each reprieve leaves
        # them so: NodeResourcesFit passes (the room fits), so their reasons are the dry run's, and the room
        # decides the reprieves
        reasons = fits.others(node)
        if reasons:
            return None, reasons
        by_room = True
    lower.sort(key=lambda p: (-p.priority, start_time(p)))
    violating, ok = _split_by_pdb(handle, lower)

    def reprieved(p: PodInfo) -> bool:
        """Put p back if the pod still fits: if the room no longer does, NodeResourcesFit rejects for sure;
        otherwise the room decides, or the filters do in the dry run."""
        if not room.fits_with(p):
            return False
        if not by_room:
            fits.add(p, node)
            if fits(node):
                fits.remove(p, node)
                return False
        room.take(p)
        return True

    if not by_room:
        fits.start(node)
        for p in lower:
            fits.remove(p, node)
    try:
        reasons = [] if by_room else fits(node)
        if reasons:
            return None, reasons
        victims: list[PodInfo] = []
        violating_ids: set[int] = set()
        for group, is_violating in ((violating, True), (ok, False)):
            for p in group:
                if not reprieved(p):
                    victims.append(p)
                    if is_violating:
                        violating_ids.add(p.idx)
        return Candidate(node, victims, violating_ids), []
    finally:
        for p in lower:  # the dry run's state restored (the room's run never changed it)
            if state.pod_node[p.idx] < 0:
                state.assume(p, node)


class _QuickStatuses:
    """What `select_victims` would say, found by arithmetic over the whole walk at once, on the walk's nodes where
    no dry run is needed: a node with no lower-priority pod says "No preemption victims found"; a node whose room
    (`_Fits.room`, every lower-priority pod gone, no nominated pod counted there) cannot fit the pod says the
    same unless `explain`, and NodeResourcesFit's reasons (`_Room.reasons`) when the room decides them there
    (`_Fits.fails_by_room`). `known[k]`: walk position k is settled so; `counts(m)`: the
    statuses of the settled nodes among the first m."""

    def __init__(self, handle: PreemptionHandle, fits: _Fits, pod: PodInfo, walk: np.ndarray) -> None:
        index, state = handle.index, handle.state
        cols = fits.cols
        count, freed_at = lower_priority_room(state, pod.priority, cols.tolist())
        n_lower = count[walk]
        freed = np.stack([freed_at[c][walk] for c in cols.tolist()], axis=1) if len(cols) \
            else np.zeros((len(walk), 0), dtype=np.int64)
        free = index.alloc[walk][:, cols] - state.requested[walk][:, cols] + freed
        slots = index.max_pods[walk] - state.pod_count[walk] + n_lower
        self.short = free < np.asarray(fits.want, dtype=np.int64)  # per walk position and checked resource
        self.no_slot = (slots < 1) if fits.counts_resources else np.zeros(len(walk), dtype=bool)
        self.none = n_lower == 0
        room_fails = ~self.none & (self.no_slot | self.short.any(axis=1))
        self.reasons = np.zeros(len(walk), dtype=bool)  # settled with NodeResourcesFit's reasons, not NO_VICTIMS
        self.known = self.none.copy()
        for k in np.flatnonzero(room_fails).tolist():
            node = int(walk[k])
            if handle.nominated_on(pod, node):
                continue  # the room counts them: the dry run decides
            if not handle.explain:
                self.known[k] = True
            elif fits.fails_by_room(node):  # (implied by `by_room` when the room cannot fit)
                self.known[k] = self.reasons[k] = True
        self.names = [f"Insufficient {index.resources[c]}" for c in cols.tolist()]

    def counts(self, m: int) -> Counter[str]:
        out: Counter[str] = Counter()
        known = self.known[:m]
        reasons = known & self.reasons[:m]
        out[NO_VICTIMS] = int(np.count_nonzero(known & ~reasons))
        out[TOO_MANY_PODS] = int(np.count_nonzero(reasons & self.no_slot[:m]))
        for j, name in enumerate(self.names):
            out[name] = int(np.count_nonzero(reasons & self.short[:m, j]))
        return +out  # zero counts dropped


def lower_priority_room(state: ClusterState, priority: int,
                        cols: list[int]) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """Per node: how many of its pods have a priority below `priority`, and (per resource column in `cols`, at
    least) the sum of their requests. Kept in the state's `plugin_cache` per priority and brought up to date on
    the nodes whose pods changed since (`node_version`), or found afresh when many did; never changed in place."""
    cache = state.plugin_cache.setdefault("DefaultPreemption", {})
    index, n = state.index, state.n_nodes
    hit = cache.get(priority)
    if hit is not None and set(cols) <= hit[2].keys():
        version, count, freed = hit
        changed = np.flatnonzero(state.node_version != version)
        if not len(changed):
            return count, freed
        if len(changed) <= max(64, n // 64):  # about what a fresh count costs
            count, freed = count.copy(), {c: a.copy() for c, a in freed.items()}
            columns = list(freed)
            for node in changed.tolist():
                ids = np.fromiter(state.node_pods[node], dtype=np.int64)
                low = ids[index.pod_priority[ids] < priority]
                count[node] = len(low)
                sums = index.pod_req[low][:, columns].sum(axis=0)
                for c, total in zip(columns, sums.tolist(), strict=True):
                    freed[c][node] = total
            cache[priority] = (state.node_version.copy(), count, freed)
            return count, freed
        cols = sorted(set(cols) | hit[2].keys())
    on = state.pod_node
    where = np.where((on >= 0) & (index.pod_priority < priority), on, n)  # n: not counted
    count = np.bincount(where, minlength=n + 1)[:n]
    freed = {c: np.rint(np.bincount(where, weights=index.pod_req[:, c], minlength=n + 1)[:n]).astype(np.int64)
             for c in cols}
    cache[priority] = (state.node_version.copy(), count, freed)
    return count, freed


def preempt(
    handle: PreemptionHandle, profile: Profile, pod: PodInfo, outcome: FilterOutcome | None
) -> PreemptionResult:
    n_all = handle.n_nodes
    if pod.pod.spec.preemption_policy == "Never":
        return PreemptionResult(None, message="not eligible due to preemptionPolicy=Never.", clear=False)
    statuses: Counter[str] = Counter()
    potential: list[int] = []
    if outcome is not None:  # nodes rejected as Unschedulable may become feasible; the others cannot
        resolvable = outcome.code == int(Code.UNSCHEDULABLE)
        potential = outcome.nodes[resolvable].tolist()
    if len(potential) < n_all:  # kube counts the absent nodes' status only when some are absent
        statuses[NOT_HELPFUL] += n_all - len(potential)
    if not potential:
        return PreemptionResult(None, message=fit_error_message(n_all, statuses))
    if not lower_priority_room(handle.state, pod.priority, [])[0].any():
        # select_victims finds no victims on any node: the same statuses, without the walk
        statuses[NO_VICTIMS] += len(potential)
        return PreemptionResult(None, message=fit_error_message(n_all, statuses))
    n = len(potential)
    want = min(n, max(n * MIN_CANDIDATE_NODES_PERCENTAGE // 100, MIN_CANDIDATE_NODES_ABSOLUTE))
    order, offset = handle.candidate_walk(potential)
    fits = _Fits(handle, profile, pod)
    if outcome is not None:
        fits.note_passed(outcome)
    walk = np.asarray(order, dtype=np.int64)[(offset + np.arange(n)) % n]
    fits.walk_from(walk)
    quick = _QuickStatuses(handle, fits, pod, walk)
    candidates: list[Candidate] = []
    non_violating = 0
    walked = n
    for k in np.flatnonzero(~quick.known).tolist():  # the nodes whose statuses the arithmetic does not settle
        cand, reasons = select_victims(handle, profile, pod, int(walk[k]), fits)
        if cand is None or not cand.victims:
            for text in reasons or [NO_VICTIMS]:
                statuses[text] += 1
            continue
        if cand.violating and handle.respect_pdbs:
            statuses[PDB_PROTECTED] += 1
            continue
        candidates.append(cand)
        non_violating += not cand.violating
        if non_violating > 0 and len(candidates) >= want:
            walked = k + 1
            break
    statuses.update(quick.counts(walked))
    if not candidates:
        return PreemptionResult(None, message=fit_error_message(n_all, statuses))
    keys = [c.key() for c in candidates]
    best_key = min(keys)
    # kube walks from a random offset, so any of the tied may come first; by default the walk's first does
    tied = [c for c, k in zip(candidates, keys, strict=True) if k == best_key]
    forced = handle.choose_candidate([c.node for c in tied])
    best = next((c for c in tied if c.node == forced), tied[0])
    victims = [(v, v.idx in best.violating) for v in best.victims]
    return PreemptionResult(best.node, victims, candidates=candidates)


PLUGINS: list = []  # DefaultPreemption runs as the engines' PostFilter (solver.greedy), not as a plugin class
