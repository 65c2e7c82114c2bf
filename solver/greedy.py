"""The greedy engine: kube-scheduler's scheduling loop, one pod at a time, reproduced.

Per pod, in queue order (PrioritySort; gated pods stay out), as kube-scheduler v1.36 (`kplace.solver.KUBE_SCHEDULER`):
1. PreFilter (a whole-pod rejection ends the attempt; a node subset narrows the candidates);
2. a nominated pod tries its node alone first, else OpportunisticBatching's hint (`framework.batch`), and takes
   it if it passes;
3. Filter over the candidates in node-tree order rotated to `next_start`, keeping the first
   `numFeasibleNodesToFind` feasible nodes and stopping at the next feasible one (which kube discards);
   `next_start += processed (mod #nodes)`, where processed counts the kept and rejected nodes evaluated —
   kube's search with one filter worker (`parallelism: 1`), which its 16 workers approximate in an order that
   is not deterministic;
4. one feasible node is taken without scoring; otherwise PreScore, Score, NormalizeScore, weights;
5. select: `order` (default) reproduces kube's (1.35 on) `heap.Init` + `Pop` over the feasible list with
   Randomizer 0 — the first top-scoring node in *preorder* of the implicit heap tree; `random` is the
   pre-1.35 uniform reservoir sampling among top-scoring nodes, seeded;
6. assume: the state is updated incrementally so the next pod sees it;
7. on failure, PostFilter: DefaultPreemption may evict lower-priority victims and nominate the pod to their node
   (kube's nominator: it counts in the filters of pods of no higher priority, never in scores);
8. the queue (`framework.queue`): a failed pod waits with the plugins that rejected it, and the batch's own
   events (a pod bound, a victim deleted, a nomination moved or cleared) requeue it when one of those plugins'
   queueing hints says the event may help; requeued pods get their next cycle once every pod had its first, in
   kube's backoff order.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Protocol

import numpy as np
from kplace.models.index import ClusterIndex, PodInfo
from kplace.models.plan import Eviction, Placement, Plan
from kplace.models.snapshot import pdbs_disruptions_allowed

from .framework.batch import Batch, NodeHeap, signable_profile, signature
from .framework.config import NOT_IMPLEMENTED, Profile, SchedulerConfig, default_config
from .framework.plugin import STATE_DEPENDENT_PREFILTER, Code, CycleState, FilterResult, Plugin
from .framework.queue import ASSIGNED_POD_ADD, ASSIGNED_POD_DELETE, BatchQueue
from .framework.runtime import (
    FilterOutcome,
    PreFilterOutcome,
    count_reasons,
    fit_error_message,
    inert,
    internal_error,
    pod_reading_filters,
    run_filters,
    run_pre_filter,
    run_scores,
    update_pre_filter,
)
from .framework.state import ClusterState

PROGRESS_EVERY = 200  # cycles between progress reports
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
STATIC_MIN_NODES = 1000  # candidates from which the static filters' verdicts are kept (`_static_pass`)
STATIC_KEPT = 256  # of them at most, per scheduler (a bool per node each)

log = logging.getLogger(__name__)


def num_feasible_nodes_to_find(percentage: int, n: int) -> int:
    """kube's sampling: all nodes below 100; else max(100, n·p/100) with p = max(5, 50 − n/125) when 0."""
    if n < MIN_FEASIBLE_NODES_TO_FIND:
        return n
    if percentage == 0:
        percentage = max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND, 50 - n // 125)
    return max(MIN_FEASIBLE_NODES_TO_FIND, n * percentage // 100)


@cache
def heap_preorder_rank(n: int) -> np.ndarray:
    """rank[i] = position of heap index i in a preorder walk (node, left subtree, right subtree).

    After Go's `heap.Init` with a strict "greater" Less, the root holds the first maximum in this order:
    a parent keeps its place unless a child is strictly greater, and a right child wins only when
    strictly greater than the left.
    """
    rank = np.empty(n, dtype=np.int64)
    stack, pos = [0] if n else [], 0
    while stack:
        i = stack.pop()
        rank[i] = pos
        pos += 1
        for child in (2 * i + 2, 2 * i + 1):
            if child < n:
                stack.append(child)
    return rank


@dataclass
class Attempt:
    """The outcome of scheduling one pod."""

    node: int | None
    reason: str | None = None
    evictions: list[tuple[PodInfo, bool]] = field(default_factory=list)  # (victim, violates a PDB)
    nominated: bool = False
    volume_bindings: dict[str, str] = field(default_factory=dict)  # claim key → PV name (VolumeBinding Reserve)
    post_filter: str = ""  # what PostFilter added to the FitError message ("preemption: ..." and the like)
    evicted_from: dict[int, int] = field(default_factory=dict)  # victim idx → the node it was evicted from
    rejectors: frozenset[str] = frozenset()  # a failed cycle's UnschedulablePlugins (empty: an error)
    candidates: list = field(default_factory=list)  # preemption's candidates (`keep_candidates` only)
    suggested: int | None = None  # the node a pod group's pod was assumed on before its group failed


# kube's statuses for the pods of a pod group that did not pass (schedule_one_podgroup.go, gangscheduling.go, and the
# reason the framework appends when a Permit plugin waits)
POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"
PREEMPTING = "pod group is waiting for preemption to complete"
PERMIT_WAIT = ("waiting for minCount pods from a gang to be scheduled, one or more plugins asked to wait and no plugin "
               "rejected pod")


class Tracer(Protocol):
    """What a cycle shows an observer (`solver.trace`): its phases as they happen, and a say in the choice."""

    def pre_filtered(self, outcome: PreFilterOutcome) -> None: ...
    def filtered(self, outcome: FilterOutcome | None, feasible: np.ndarray) -> None: ...
    def scored(self, nodes: np.ndarray, weighted: dict[str, np.ndarray], totals: np.ndarray) -> None: ...
    def failed(self, message: str) -> None:
        """The FitError message of a pod that preemption then nominated (its attempt carries none)."""
    def hinted(self, node: int) -> None:
        """OpportunisticBatching's hint for this cycle (tried alone before the walk)."""
    def candidate_walk(self, potential: list[int]) -> tuple[list[int], int] | None:
        """Preemption's potential nodes (node ids, in walk order) as the other scheduler ordered them and the
        offset its walk started at, to walk instead, or None."""
    def choose_candidate(self, tied: list[int]) -> int | None:
        """One of the preemption candidates tied at the best (node ids) to take instead of the first, or None."""
    def choose(self, top: np.ndarray) -> int | None:
        """One of `top` (positions of the tied top-scoring nodes among the scored ones) to take instead of kube's
        choice, or None."""


class GreedyScheduler:
    """kube-scheduler's loop over a ClusterState. `tie_break` is `order` (kube's heap order) or `random` (seeded).
    `explain=False` skips building the reasons of unplaced pods (their `Attempt.reason` is then None): for
    plans only the placements of which matter, such as the CP-SAT engine's hints."""

    def __init__(
        self,
        index: ClusterIndex,
        config: SchedulerConfig | None = None,
        *,
        tie_break: str = "order",
        seed: int = 0,
        state: ClusterState | None = None,
        preemption: bool = True,
        respect_pdbs: bool = True,
        explain: bool = True,
        batching: bool = True,
        keep_candidates: bool = False,
    ) -> None:
        if tie_break not in ("order", "random"):
            raise ValueError(f"tie_break must be 'order' or 'random', got {tie_break!r}")
        self.index = index
        self.config = config or default_config()
        self.state = state or ClusterState(index)
        self.tie_break = tie_break
        self.preemption = preemption
        self.respect_pdbs = respect_pdbs
        self.explain = explain
        self.keep_candidates = keep_candidates  # attempts carry preemption's candidates (for `kplace explain`)
        self.rng = np.random.default_rng(seed)
        self.next_start = 0
        self.n_nodes = len(index.nodes)
        self._pdb_allowed: dict[int, int] | None = None
        self.tracer: Tracer | None = None  # sees each cycle's phases (`solver.trace`); None in plans
        # kube's nominator: pods preemption nominated (and pending pods the state nominates), per node, not yet
        # placed; they count in the filters of pods of no higher priority, never in scores
        self.nominated: dict[int, list[PodInfo]] = {}
        self.nominated_node: dict[int, int] = {}
        self._nominations = np.zeros(self.n_nodes, dtype=np.int64)  # per node, the pods nominated to it
        for p in index.pending:
            nnn = p.pod.status.nominated_node_name
            if nnn and nnn in index.node_id and self.state.pod_node[p.idx] < 0:
                self._add_nomination(p, index.node_id[nnn])
        self.cycles = 0
        self._plugins: dict[tuple[str, str], Plugin | None] = {}  # (schedulerName, plugin) → the profile's instance
        self.batching = batching  # kube's OpportunisticBatching (on by default since 1.35)
        self._batches: dict[str, Batch | None] = {}
        self._static: dict[tuple, np.ndarray | None] = {}  # `_static_pass`'s verdicts (None: keys seen once)

    # --- one pod ----------------------------------------------------------------------------------

    def _filters_with(self, profile: Profile, pod: PodInfo, cycle: CycleState, nodes: np.ndarray, rows: list[int],
                      added_pods: list[tuple[PodInfo, int]], skipped: set[str], out: FilterOutcome) -> None:
        """The filters (but `skipped`) on nodes[rows] with `added_pods` assumed there; where they fail, `out` takes
        their statuses."""
        for q, n in added_pods:
            self.state.assume(q, n)
        try:
            added = run_filters(profile, self.state, pod, cycle, nodes[rows], skipped)
        finally:
            for q, _ in added_pods:
                self.state.forget(q)
        failed = np.flatnonzero(added.code != 0)
        if len(failed):
            out.copy_nodes(np.asarray(rows)[failed], added, failed)

    def pct(self, profile: Profile) -> int:
        p = profile.percentage_of_nodes_to_score
        return self.config.percentage_of_nodes_to_score if p is None else p

    def feasible_nodes(
        self, profile: Profile, pod: PodInfo, cycle: CycleState, nodes: np.ndarray, skipped: set[str]
    ) -> tuple[np.ndarray, FilterOutcome | None, int]:
        """Walk `nodes` from `next_start`, filtering in chunks until enough feasible nodes are found.

        Returns (feasible node ids in walk order, the outcome over every evaluated node, processed). The outcome
        is only read when no node is feasible (the FitError and preemption), so it is merged only then.
        """
        n = len(nodes)
        if n == 0:
            return nodes, None, 0
        want = num_feasible_nodes_to_find(self.pct(profile), n)
        if not profile.at("score"):
            want = 1
        start = self.next_start % n
        walk = np.concatenate([nodes[start:], nodes[:start]]) if start else nodes
        # Filter results are per node and independent of the batch, so the chunking only affects speed: the
        # first chunk is exactly `want` + 1 (enough when every node fits), later ones sized by the feasible share
        # so far, a quarter more (a bigger margin filters nodes that are never needed, a smaller one takes more
        # chunks; 256 nodes at least).
        chunk = want + 1
        static, dynamic = self._static_pass(profile, pod, cycle, skipped, n)
        feasible_parts, outcomes, done, found, stopped = [], [], 0, 0, False
        while done < n and not stopped:
            part = walk[done : done + chunk]
            # the static filters' kept verdicts, if any, then the others on the nodes that passed them
            kept = np.arange(len(part)) if static is None else np.flatnonzero(static[part])
            out = run_filters(profile, self.state, pod, cycle, part[kept], dynamic)
            self.filter_with_nominated(profile, pod, part[kept], out, dynamic, cycle)
            ok_pos = kept[out.code == 0]
            processed_here = len(part)
            if found + len(ok_pos) > want:  # kube stops when it finds one feasible node more than it needs
                processed_here = int(ok_pos[want - found])
                ok_pos = ok_pos[: want - found]
                stopped = True
            feasible_parts.append(part[ok_pos])
            outcomes.append((out, processed_here))
            found += len(ok_pos)
            done += processed_here
            if not stopped:
                need = want + 1 - found
                chunk = max(256, 5 * need * done // (4 * found) if found else 4 * chunk)
        feasible = np.concatenate(feasible_parts) if feasible_parts else np.zeros(0, dtype=np.int64)
        merged = None
        if not len(feasible) and static is not None:  # every node was walked: their statuses, each filter's own
            merged = run_filters(profile, self.state, pod, cycle, walk, skipped)
            self.filter_with_nominated(profile, pod, walk, merged, skipped, cycle)
        elif self.tracer is not None or not len(feasible):
            merged = _merge_outcomes(outcomes)
        if self.tracer is not None:
            self.tracer.filtered(merged, feasible)
        return feasible, None if len(feasible) else merged, done

    def _static_pass(self, profile: Profile, pod: PodInfo, cycle: CycleState, skipped: set[str], n: int
                     ) -> tuple[np.ndarray | None, set[str]]:
        """(per node id, whether it passes the profile's static filters (`Plugin.static_filter`), or None; the
        filters to run besides, as `skipped`). The verdicts are kept per (profile, the pod's `node_keys`) from the
        second pod that has those keys on (a first one costs a pass over every node that a pod alone would not
        repay), STATIC_KEPT of them at most; None with a tracer (which sees every filter's statuses) or fewer
        than STATIC_MIN_NODES candidates."""
        if self.tracer is not None or n < STATIC_MIN_NODES:
            return None, skipped
        static = [p.name for p in profile.at("filter") if p.static_filter and p.name not in skipped]
        if not static:
            return None, skipped
        key = (profile.scheduler_name, tuple(static), self.index.node_keys(pod))
        if key not in self._static:
            if len(self._static) >= STATIC_KEPT:
                self._static.pop(next(iter(self._static)))
            self._static[key] = None
            return None, skipped
        mask = self._static[key]
        if mask is None:
            others = {p.name for p in profile.at("filter")} - set(static)
            out = run_filters(profile, self.state, pod, cycle, self.index.tree_order, skipped | others)
            mask = self._static[key] = np.zeros(self.n_nodes, dtype=bool)
            mask[self.index.tree_order] = out.code == 0
        return mask, skipped | set(static)

    def random_offset(self, n: int) -> int:
        """Where preemption's candidate walk over `n` nodes starts: kube's random offset with `random`
        tie-breaking, seeded; 0 otherwise."""
        return int(self.rng.integers(n)) if self.tie_break == "random" else 0

    def candidate_walk(self, potential: list[int]) -> tuple[list[int], int]:
        """The order and offset of preemption's candidate walk (`framework.handle`): the tracer's when it gives
        one, else `potential` as it is from `random_offset`."""
        if self.tracer is not None:
            followed = self.tracer.candidate_walk(potential)
            if followed is not None:
                return followed
        return potential, self.random_offset(len(potential))

    def choose_candidate(self, tied: list[int]) -> int | None:
        """The tracer's pick among preemption candidates tied at the best (`framework.handle`), or None."""
        return self.tracer.choose_candidate(tied) if self.tracer is not None else None

    def select(self, totals: np.ndarray) -> int:
        top = np.flatnonzero(totals == totals.max())
        if self.tracer is not None:
            forced = self.tracer.choose(top)
            if forced is not None:
                return forced
        if len(top) == 1:
            return int(top[0])
        if self.tie_break == "random":
            return int(self.rng.choice(top))
        rank = heap_preorder_rank(len(totals))
        return int(top[np.argmin(rank[top])])

    # --- nominated pods ---------------------------------------------------------------------------

    def _add_nomination(self, pod: PodInfo, node: int) -> None:
        self._drop_nomination(pod)
        self.nominated.setdefault(node, []).append(pod)
        self.nominated_node[pod.idx] = node
        self._nominations[node] += 1

    def _drop_nomination(self, pod: PodInfo) -> None:
        node = self.nominated_node.pop(pod.idx, None)
        if node is not None:
            self._nominations[node] -= 1
            self.nominated[node] = [q for q in self.nominated[node] if q.idx != pod.idx]
            if not self.nominated[node]:
                del self.nominated[node]

    def nominated_on(self, pod: PodInfo, node: int) -> list[PodInfo]:
        """The pods nominated to `node` that `pod`'s filters must count: of at least its priority, not itself."""
        return [q for q in self.nominated.get(node, ()) if q.idx != pod.idx and q.priority >= pod.priority
                and self.state.pod_node[q.idx] < 0]

    def filter_with_nominated(self, profile: Profile, pod: PodInfo, nodes: np.ndarray, out: FilterOutcome,
                              skipped: set[str], cycle: CycleState) -> None:
        """kube's RunFilterPluginsWithNominatedPods on the nodes of `out` that hold nominated pods of at least the
        pod's priority: the filters run first with those pods added to the node and to a clone of the PreFilter
        state (`update_pre_filter`, kube's AddPod), then, if that passes, without them (`out`, computed
        already); the first failure is the node's status. Plugins whose PreFilter skipped (`skipped`) stay
        skipped, so a nominated pod's own anti-affinity is not seen when no running pod's made InterPodAffinity
        run."""
        if not self.nominated:
            return
        held = np.flatnonzero(self._nominations[nodes])
        if not len(held):
            return
        active = {p.name for p in profile.at("preFilter")} - skipped
        if not active & STATE_DEPENDENT_PREFILTER:
            # No active PreFilter reads other pods, so each node's filters read that node alone: every node's
            # nominated pods are added at once and the filters run once over those nodes.
            rows, added_pods = [], []
            for i in held.tolist():
                others = self.nominated_on(pod, int(nodes[i]))
                if others:
                    rows.append(i)
                    added_pods += [(q, int(nodes[i])) for q in others]
            if rows:
                self._filters_with(profile, pod, cycle, nodes, rows, added_pods, skipped, out)
            return
        # Where the nominated pods are `inert` for the pod's filters, only NodeResourcesFit's verdict can change
        # with them added: it is found for all those nodes at once, with their resources alone added (and only
        # where it runs: the filters before it passed); the other nodes take the full dry run, one by one.
        names = [p.name for p in profile.at("filter")]
        fit_at = names.index("NodeResourcesFit") if "NodeResourcesFit" in set(names) - skipped else len(names)
        reading = pod_reading_filters(profile, skipped)
        rows, added_pods, full = [], [], []
        for i in held.tolist():
            n = int(nodes[i])
            others = self.nominated_on(pod, n)
            if not others:
                continue
            if not inert(reading, self.state, pod, cycle, others):
                full.append((i, n, others))
            elif out.plugin[i] < 0 or out.plugin[i] >= fit_at:
                rows.append(i)
                added_pods += [(q, n) for q in others]
        if rows and fit_at < len(names):
            with self.state.resources_added(added_pods):
                added = run_filters(profile, self.state, pod, cycle, nodes[rows], set(names) - {"NodeResourcesFit"})
            failed = np.flatnonzero(added.code != 0)
            if len(failed):
                out.copy_nodes(np.asarray(rows)[failed], added, failed)
        for i, n, others in full:
            with_them = cycle.clone()
            for q in others:
                self.state.assume(q, n)
                update_pre_filter(profile, self.state, pod, with_them, skipped, q, n, +1)
            try:
                added = run_filters(profile, self.state, pod, with_them, nodes[i : i + 1], skipped)
            finally:
                for q in others:
                    self.state.forget(q)
            if added.code[0] != 0:
                out.copy_nodes(np.array([i]), added, np.array([0]))

    def schedule_all(self, pods: list[PodInfo], on_pod: Callable[[int, int, int], None] | None = None
                     ) -> dict[int, Attempt]:
        """kube's loop over one batch of `pods` (`schedule_batch`), pods of another scheduler skipped and gated ones
        left with their gate's message: pod idx → its last attempt, the victims of every cycle included.
        `on_pod(cycles done, pods, placed)` every PROGRESS_EVERY cycles."""
        queued, attempts = self.queueable(pods)
        placed = 0
        for k, (pod, attempt) in enumerate(self.schedule_batch(queued)):
            if on_pod is not None and k % PROGRESS_EVERY == 0:
                on_pod(min(k, len(queued)), len(queued), placed)
            before = attempts.get(pod.idx)
            placed += (attempt.node is not None) - (before is not None and before.node is not None)
            attempts[pod.idx] = attempt if before is None else merge_retry(before, attempt)
        if self.index.gangs:
            self._release_incomplete_gangs(attempts)
        self._leave_preempted_pending(attempts)
        return attempts

    def _leave_preempted_pending(self, attempts: dict[int, Attempt]) -> None:
        """A pod this batch placed and a later cycle's preemption evicted: kube binds it, then deletes it (its
        controller makes a new pod). The outcome leaves it pending, as no victim of anyone's."""
        names = self.index.node_names
        for idx, a in list(attempts.items()):
            taken = [(v, x) for v, x in a.evictions if v.pending]
            if not taken:
                continue
            for v, _ in taken:
                attempts[v.idx] = Attempt(None, f"preempted on {names[a.evicted_from[v.idx]]} by "
                                                f"{self.index.pods[idx].key} after this run placed it there")
            kept = [(v, x) for v, x in a.evictions if not v.pending]
            attempts[idx] = replace(a, evictions=kept,
                                    evicted_from={v.idx: a.evicted_from[v.idx] for v, _ in kept})

    def _release_incomplete_gangs(self, attempts: dict[int, Attempt]) -> None:
        """GangScheduling's end of the batch (`plugins.gangscheduling`): the pods of a gang that did not reach its
        minimum (or one domain of its topology key) leave their nodes; what their preemptions evicted stays evicted,
        as in kube."""
        from .plugins.gangscheduling import incomplete

        placed = {i: a.node for i, a in attempts.items() if a.node is not None}
        for idx, why in incomplete(self.index, placed).items():
            self._drop_nomination(self.index.pods[idx])
            if self.state.pod_node[idx] >= 0:
                self.state.forget(self.index.pods[idx])
            a = attempts[idx]
            attempts[idx] = Attempt(None, why, a.evictions, evicted_from=a.evicted_from)

    def queueable(self, pods: list[PodInfo]) -> tuple[list[PodInfo], dict[int, Attempt]]:
        """(the pods kube's queue holds, in the given order; the gated ones' attempts with their gate's message).
        Pods of another scheduler are in neither."""
        queued, gated = [], {}
        for pod in pods:
            profile = self.config.profile_for(pod.spec.scheduler_name)
            if profile is None:
                continue
            gate = enqueue_gate(profile, self.index, pod)
            if gate is None:
                queued.append(pod)
            else:
                gated[pod.idx] = Attempt(None, gate)
        return queued, gated

    def schedule_batch(self, pods: list[PodInfo], before: Callable[[PodInfo], None] | None = None
                       ) -> Iterator[tuple[PodInfo, Attempt]]:
        """Every cycle of one batch (`framework.queue`): each of `pods` (queued, in queue order) once, then the pods
        the batch's own events requeued, until the queue has none to pop: (pod, its cycle's attempt).
        `before(pod)` runs before each cycle."""
        queue = BatchQueue(pods, self.config.pod_initial_backoff_seconds, self.config.pod_max_backoff_seconds)
        rank = {p.idx: i for i, p in enumerate(pods)}
        while (pod := queue.pop()) is not None:
            nominated = dict(self.nominated_node)
            gang = self._pod_group(pod)
            if gang is None:
                if before is not None:
                    before(pod)
                cycle = [(pod, self.schedule_one(pod), self.tracer)]
            else:  # kube's PopSpecificPod: the group's other pods, from wherever they wait
                members = [pod, *queue.take(self.index.pod_by_key[k] for k in gang.members if k != pod.key)]
                members.sort(key=lambda p: (-p.priority, rank.get(p.idx, len(rank))))
                cycle = self.schedule_group(gang, members, before)
                queue.tick()
            for member, attempt, _ in cycle:
                if attempt.node is not None and not attempt.nominated:
                    queue.changed()
                    queue.event(ASSIGNED_POD_ADD, member, self._hint)
                    nominated.pop(member.idx, None)  # bound: no longer nominated, and no nomination event
                else:
                    queue.failed(member, attempt.rejectors, self._events(member, attempt.rejectors),
                                 group=None if gang is None else gang.key)
            if gang is not None:
                queue.group_done(gang.key)  # its own victims' deletion, below, is news to it
            for _, attempt, _ in cycle:
                if attempt.node is None or attempt.nominated:
                    for victim, _ in attempt.evictions:
                        queue.changed()
                        queue.event(ASSIGNED_POD_DELETE, victim, self._hint)
            for idx, node in nominated.items():
                # a nomination moved or cleared: to the queue, the pod left that node, for pods of no higher priority
                if self.nominated_node.get(idx) != node:
                    q = self.index.pods[idx]
                    queue.event(ASSIGNED_POD_DELETE, q, self._hint, at_most=q.priority)
            for member, attempt, tracer in cycle:
                self.tracer = tracer
                yield member, attempt

    def _pod_group(self, pod: PodInfo):
        """The gang kube's pod-group cycle schedules with this pod (`schedule_group`), or None: a gang of kube's own
        PodGroup (scheduling.k8s.io) without a topology key. Coscheduling's gangs, and kube's with a topology key
        (which kube 1.36 only enforces with TopologyAwareWorkloadScheduling, alpha and off), go pod by pod under
        `plugins.gangscheduling`'s rules."""
        g = self.index.gang_of.get(pod.idx)
        if g is None:
            return None
        gang = self.index.gangs[g]
        return gang if gang.kube and gang.topology_key is None else None

    def schedule_group(self, gang, members: list[PodInfo], before: Callable[[PodInfo], None] | None = None
                       ) -> list[tuple[PodInfo, Attempt, Tracer | None]]:
        """kube 1.36's pod-group cycle (GenericWorkload and GangScheduling on) over `members`, the group's pods taken
        from the queue in its order (priority, then first queue time): each goes through the usual cycle on one
        state, assumed there when feasible (a pod preemption nominated, at its node, its victims still there) so
        the next see it; an unschedulable one is skipped; an error stops the group. GangScheduling's Permit
        passes once the group's pods bound or assumed reach minCount. Then every assumption is undone: if the group
        passed without preemption its feasible pods are placed, if it needed preemption they all wait nominated,
        and if it never reached minCount they fail with Permit's message, holding no node. A pod that failed on
        its own keeps its own outcome. Returns (pod, attempt, its cycle's tracer), in the group's order."""
        bound = sum(1 for k in gang.members if self.state.pod_node[self.index.pod_by_key[k].idx] >= 0)
        results: dict[int, Attempt] = {}  # pod idx → its algorithm's attempt
        assumed: list[PodInfo] = []
        evicted: dict[int, PodInfo] = {}  # the cycle's victims, kept in its state until its end
        status, preempts, error = "unschedulable", False, None
        tracers: dict[int, Tracer | None] = {}
        for i, pod in enumerate(members):
            if before is not None:
                before(pod)
            attempt = self.schedule_one(pod, new_cycle=i == 0)
            tracers[pod.idx] = self.tracer
            results[pod.idx] = attempt
            if attempt.node is None:
                if not attempt.rejectors:  # an error, not a rejection: the group stops
                    error = f"failed to schedule other pod from a pod group: {attempt.reason}"
                    break
                continue
            if attempt.nominated:  # kube assumes it at its nominated node (no longer nominated); the cycle's state
                self._drop_nomination(pod)  # still has the victims, deleted in the background
                self.state.assume(pod, attempt.node)
                # a victim an earlier pod of the group evicted can be chosen again: kube's second delete finds it gone
                attempt.evictions = [(v, x) for v, x in attempt.evictions if v.idx not in evicted]
                for victim, _ in attempt.evictions:
                    evicted[victim.idx] = victim
                for idx in attempt.evicted_from:
                    self.state.assume(self.index.pods[idx], attempt.evicted_from[idx])
                preempts = True
            assumed.append(pod)
            if bound + len(assumed) >= gang.min_count:  # GangScheduling's Permit passes
                status = "preempting" if preempts else "scheduled"
        for pod in [*reversed(assumed), *evicted.values()]:
            self.state.forget(pod)
        out = []
        for pod in members:
            attempt = results.get(pod.idx) or Attempt(None)  # not reached: stopped by an earlier pod's error
            if error is not None and (attempt.node is not None or attempt.rejectors or pod.idx not in results):
                self._drop_nomination(pod)  # all but the pod that erred fail with the group's error
                attempt = Attempt(None, error, attempt.evictions, evicted_from=attempt.evicted_from)
            elif attempt.node is None:
                pass  # failed on its own: its own status
            elif status == "scheduled":
                profile = self.config.profile_for(pod.spec.scheduler_name)
                attempt = self._place(profile, pod, attempt.node)
            elif status == "preempting":  # every pod waits nominated to its node
                self._add_nomination(pod, attempt.node)
                if not attempt.nominated:
                    attempt = Attempt(attempt.node, POD_GROUP_UNSCHEDULABLE + ", " + PREEMPTING, nominated=True)
            else:
                self._drop_nomination(pod)
                attempt = Attempt(None, POD_GROUP_UNSCHEDULABLE + ", " + PERMIT_WAIT, attempt.evictions,
                                  evicted_from=attempt.evicted_from, suggested=attempt.node)
            out.append((pod, attempt, tracers.get(pod.idx)))
        return out

    def _plugin(self, pod: PodInfo, name: str):
        key = (pod.spec.scheduler_name, name)
        if key not in self._plugins:
            profile = self.config.profile_for(pod.spec.scheduler_name)
            self._plugins[key] = profile.plugin(name) if profile is not None else None
        return self._plugins[key]

    def _events(self, pod: PodInfo, rejectors: frozenset[str]) -> frozenset[str]:
        """The events some plugin of `rejectors` registers a queueing hint for."""
        return frozenset().union(*(p.hint_events for r in rejectors if (p := self._plugin(pod, r)) is not None))

    def _hint(self, plugin: str, event: str, pod: PodInfo, other: PodInfo) -> bool:
        """Plugin `plugin`'s queueing hint for `pod` (`Plugin.queueing_hint`); False if it registers none."""
        instance = self._plugin(pod, plugin)
        return instance is not None and event in instance.hint_events and instance.queueing_hint(
            event, pod, other, self.index)

    def schedule_one(self, pod: PodInfo, new_cycle: bool = True) -> Attempt:
        """One scheduling cycle (`new_cycle=False`: one more pod of a pod group's cycle, which kube counts once).
        An unexpected error while evaluating this pod leaves it pending with the error as its reason (and logs it):
        one pod never stops the others."""
        try:
            return self._schedule_one(pod, new_cycle)
        except Exception as exc:
            log.exception("evaluating pod %s failed", pod.key)
            if self.state.pod_node[pod.idx] >= 0 and self.index.pod_node[pod.idx] < 0:
                self.state.forget(pod)
            return Attempt(None, internal_error(exc))

    def _schedule_one(self, pod: PodInfo, new_cycle: bool = True) -> Attempt:
        profile = self.config.profile_for(pod.spec.scheduler_name)
        if profile is None:
            return Attempt(None, f"no profile for schedulerName {pod.spec.scheduler_name!r}")
        for plugin in profile.at("preEnqueue"):
            ok, msg = plugin.pre_enqueue(pod)
            if not ok:
                return Attempt(None, msg)
        self.cycles += new_cycle  # kube's CurrentCycle: every pod (or pod group) popped, whatever becomes of it
        state = self.state
        cycle = CycleState()
        pre = run_pre_filter(profile, state, pod, cycle)
        if pre.code == Code.SUCCESS and pod.idx in self.index.gang_of:
            from .plugins.gangscheduling import domain_nodes

            domain = domain_nodes(self.index, state, pod)
            if domain is not None:  # a gang with a topology key, some of its pods placed: their domain only
                pre.nodes = domain if pre.nodes is None else np.intersect1d(pre.nodes, domain)
                pre.narrowed_by.append("GangScheduling")
                if not len(pre.nodes):
                    pre.code, pre.plugin = Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "GangScheduling"
                    pre.reason = "node(s) are not in the topology domain of the pod's PodGroup"
        if self.tracer is not None:
            self.tracer.pre_filtered(pre)
        if pre.code != Code.SUCCESS:
            msg = fit_error_message(self.n_nodes, Counter(), pre.reason)
            attempt = self._post_filter(profile, pod, msg, None, pre_filter_rejected=True)
            attempt.rejectors = pre_filter_rejectors(pre)
            return attempt

        batch = self._batch(profile)
        sig = hint = None
        if batch is not None:
            sig = signature(profile, pod, tuple(self.index.pod_req[pod.idx].tolist()))
            hint = self._node_hint(batch, profile, pod, cycle, pre, sig)
            if self.tracer is not None and hint is not None:
                self.tracer.hinted(hint)
        nominated = self.nominated_node.get(pod.idx)
        first = nominated if nominated is not None else hint  # kube tries the nominated node, else the hint, alone
        failed_first = first_plugin = None
        if first is not None:
            one = np.array([first], dtype=np.int64)
            if pre.nodes is None or one[0] in pre.nodes:
                out = run_filters(profile, state, pod, cycle, one, pre.skipped)
                self.filter_with_nominated(profile, pod, one, out, pre.skipped, cycle)
                if out.code[0] == 0:
                    if self.tracer is not None:
                        self.tracer.filtered(out, one)
                    if batch is not None:
                        batch.store(self.cycles, sig, hint, first, None)
                    return self._place(profile, pod, first)
                failed_first, first_plugin = first, out.plugins[int(out.plugin[0])]

        order = self.index.tree_order
        nodes = pre.candidates(order)
        start = self.next_start % max(1, len(nodes))
        feasible, outcome, processed = self.feasible_nodes(profile, pod, cycle, nodes, pre.skipped)
        if failed_first is not None and failed_first not in nodes[(start + np.arange(processed)) % len(nodes)]:
            processed += 1  # kube's diagnosis keeps the first node's status, and counts it as evaluated
        # kube counts evaluated nodes (feasible + rejected) and rotates over all nodes.
        self.next_start = (self.next_start + processed) % max(1, self.n_nodes)
        if len(feasible) == 0:
            msg = ""
            if self.explain:
                reasons = count_reasons(outcome) if outcome is not None else Counter()
                absent = self.n_nodes - len(nodes)
                if absent:
                    reasons[pre.absent_reason] += absent
                msg = fit_error_message(self.n_nodes, reasons)
            attempt = self._post_filter(profile, pod, msg, outcome)
            # kube's UnschedulablePlugins: the PreFilter node subsets' plugins and each rejected node's deciding one
            rejected = set(pre.narrowed_by) | ({first_plugin} if first_plugin else set())
            if outcome is not None:
                rejected |= {outcome.plugins[p] for p in outcome.deciders(outcome.code != 0)}
            attempt.rejectors = frozenset(rejected)
            return attempt
        if len(feasible) == 1:
            choice = int(feasible[0])
            if batch is not None:
                batch.store(self.cycles, sig, hint, choice, None)
        else:
            per_plugin, totals = run_scores(profile, state, pod, cycle, feasible)
            if self.tracer is not None:
                self.tracer.scored(feasible, {k: v * profile.weights.get(k, 1) for k, v in per_plugin.items()},
                                   totals)
            choice = int(feasible[self.select(totals)])
            if batch is not None and sig is not None:  # kube keeps the scored nodes as a heap, its choice popped
                rest = NodeHeap(feasible.tolist(), totals.tolist())
                batch.store(self.cycles, sig, hint, rest.pop(), rest)
            elif batch is not None:
                batch.store(self.cycles, sig, hint, choice, None)
        return self._place(profile, pod, choice)

    def _batch(self, profile: Profile) -> Batch | None:
        """The profile's OpportunisticBatching state (`framework.batch`); None when it does not batch."""
        if not self.batching:
            return None
        if profile.scheduler_name not in self._batches:
            ok = signable_profile(profile, self.config.extenders)
            self._batches[profile.scheduler_name] = Batch() if ok else None
        return self._batches[profile.scheduler_name]

    def _node_hint(self, batch: Batch, profile: Profile, pod: PodInfo, cycle: CycleState, pre, sig) -> int | None:
        """kube's GetNodeHint: the stored heap's next node, when this is the cycle right after the one that stored
        it, the signatures match and the node the last pod took no longer passes this pod's filters."""
        if batch.heap is None or not len(batch.heap) or self.cycles != batch.last_cycle + 1:
            return None
        if sig is None or sig != batch.signature:
            return None
        last = np.array([batch.last_node], dtype=np.int64)
        if run_filters(profile, self.state, pod, cycle, last, pre.skipped).code[0] == 0:
            return None  # the last node could take this pod too: its score moved, the heap is stale
        return batch.heap.pop()

    def _place(self, profile: Profile, pod: PodInfo, node: int) -> Attempt:
        """kube's assume (which also drops the pod's nomination) and Reserve."""
        self._drop_nomination(pod)
        self.state.assume(pod, node)
        return Attempt(node, volume_bindings=self.reserve(profile, pod, node))

    def _post_filter(
        self, profile: Profile, pod: PodInfo, msg: str, outcome: FilterOutcome | None,
        pre_filter_rejected: bool = False,
    ) -> Attempt:
        """PostFilter, as kube 1.36 runs it: each plugin in the profile's order, the first success ends it, and the
        FitError message ends with the others' reasons joined by ", ". DynamicResources (a pod without claims has
        none to deallocate) reads state its PreFilter wrote: after an earlier PreFilter rejected the pod that
        state is missing, so kube stops with "not found" and never preempts."""
        reasons: list[str] = []
        for name in profile.post_filters:
            if name == "DynamicResources":
                if pre_filter_rejected:
                    return self._unschedulable(msg, "not found")
                reasons.append("no new claims to deallocate")
            elif name == "DefaultPreemption" and self.preemption:
                from .plugins.defaultpreemption import preempt

                result = preempt(self, profile, pod, outcome)
                if result.node is not None:
                    return self._nominate(profile, pod, result, msg)
                if result.clear:
                    self._drop_nomination(pod)
                reasons.append(f"preemption: {result.message}")
        return self._unschedulable(msg, ", ".join(reasons))

    @staticmethod
    def _unschedulable(msg: str, post_filter: str) -> Attempt:
        return Attempt(None, f"{msg} {post_filter}" if msg and post_filter else msg or None, post_filter=post_filter)

    def _nominate(self, profile: Profile, pod: PodInfo, result, msg: str) -> Attempt:
        """Preemption succeeded: the victims go, the pods of lower priority nominated to the node lose their
        nomination, and the pod is nominated to the node, not placed; the victims' deletion requeues it
        (`schedule_batch`) for the cycle that places it."""
        for q in [q for q in self.nominated.get(result.node, ()) if q.priority < pod.priority]:
            self._drop_nomination(q)
        for victim, _ in result.victims:
            self.state.forget(victim)
            if self.respect_pdbs:  # kube reads the PDB status as last written: its own deletions do not lower it
                self.pdb_disrupt(victim)
        if self.tracer is not None:
            self.tracer.failed(msg)
        self._add_nomination(pod, result.node)
        return Attempt(result.node, evictions=result.victims, nominated=True,
                       evicted_from={v.idx: result.node for v, _ in result.victims},
                       candidates=result.candidates if self.keep_candidates else [])

    def reserve(self, profile: Profile, pod: PodInfo, node: int) -> dict[str, str]:
        """The Reserve point after `assume`: VolumeBinding records the PVs (and provisioning nodes) the pod's
        delayed-binding claims take, so later pods see them taken."""
        if not pod.pod.spec.volumes or not any(p.name == "VolumeBinding" for p in profile.at("filter")):
            return {}
        from .plugins.volumebinding import reserve

        return reserve(self.state, pod, node)

    # --- PDB bookkeeping (for preemption) ---------------------------------------------------------

    def pdb_allowed(self) -> dict[int, int]:
        """Remaining disruptionsAllowed per PDB (index into snapshot.pdbs), lowered as victims go when PDBs are
        respected."""
        if self._pdb_allowed is None:
            self._pdb_allowed = dict(enumerate(pdbs_disruptions_allowed(self.index.snapshot)))
        return self._pdb_allowed

    def pdb_disrupt(self, victim: PodInfo) -> None:
        allowed = self.pdb_allowed()
        for i in self.index.pdbs_of(victim):
            allowed[i] -= 1

    # --- the loop ---------------------------------------------------------------------------------

    def run(self, pods: list[PodInfo] | None = None,
            on_pod: Callable[[int, int, int], None] | None = None) -> Plan:
        """kube's loop over `pods` (the pending pods); `on_pod(done, total, placed)` every PROGRESS_EVERY pods."""
        started = time.perf_counter()
        plan = Plan(engine="greedy")
        pods = self.index.pending if pods is None else pods
        names = self.index.node_names
        attempts = self.schedule_all(pods, on_pod)
        for pod in pods:
            attempt = attempts.get(pod.idx)
            if attempt is None:
                continue
            node = names[attempt.node] if attempt.node is not None else None
            plan.placements.append(Placement(pod.key, node, attempt.reason, pod.priority, attempt.nominated,
                                             attempt.volume_bindings))
            for victim, violates in attempt.evictions:
                plan.evictions.append(Eviction(victim.key, names[attempt.evicted_from[victim.idx]], pod.key,
                                               victim.priority, violates))
        plan.warnings.extend(unimplemented_warnings(pods))
        plan.seconds = time.perf_counter() - started
        return plan


def enqueue_gate(profile: Profile, index: ClusterIndex, pod: PodInfo) -> str | None:
    """Why kube's queue keeps the pod out (a PreEnqueue plugin's message, or its gang's too few pods), or None."""
    gate = next((msg for p in profile.at("preEnqueue") for ok, msg in [p.pre_enqueue(pod)] if not ok), None)
    if gate is None and (index.gangs or pod.spec.scheduling_group is not None):
        from .plugins.gangscheduling import gate as gang_gate

        gate = gang_gate(index, pod)
    return gate


def merge_retry(before: Attempt, again: Attempt) -> Attempt:
    """A pod's outcome after a later cycle, keeping the victims (and their node) of earlier ones: a pod placed
    after earlier cycles evicted for it is still a nominated placement (its victims go first)."""
    return Attempt(again.node, again.reason, [*before.evictions, *again.evictions],
                   again.nominated or (bool(before.evictions) and again.node is not None), again.volume_bindings,
                   again.post_filter, {**before.evicted_from, **again.evicted_from}, again.rejectors)


def pre_filter_rejectors(pre: PreFilterOutcome) -> frozenset[str]:
    """kube's UnschedulablePlugins after a PreFilter rejection: the plugins whose node subsets left none, else the
    rejecting plugin (with the subsets' plugins before it when it only returned Unschedulable)."""
    if pre.nodes is not None and not len(pre.nodes):
        return frozenset(pre.narrowed_by)
    if pre.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
        return frozenset({pre.plugin})
    return frozenset({*pre.narrowed_by, pre.plugin})


def _merge_outcomes(outcomes: list[tuple[FilterOutcome, int]]) -> FilterOutcome | None:
    """Concatenate per-chunk outcomes, keeping only the nodes actually evaluated."""
    if not outcomes:
        return None
    if len(outcomes) == 1:
        out, k = outcomes[0]
        if k == len(out.nodes):
            return out
        results = {}
        for name, r in out.results.items():  # the one-chunk fast path of the merge below (same result)
            texts = sorted({t for t, _ in r.reasons})
            if len(texts) == len(r.reasons):
                reasons = [(t, m[:k]) for t, m in sorted(r.reasons, key=lambda tm: tm[0])]
            else:
                reasons = [(t, np.logical_or.reduce([m[:k] for u, m in r.reasons if u == t])) for t in texts]
            results[name] = FilterResult(r.code[:k], reasons)
        return FilterOutcome(nodes=out.nodes[:k], code=out.code[:k], plugin=out.plugin[:k], plugins=out.plugins,
                             results=results)
    names = outcomes[0][0].plugins
    nodes = np.concatenate([o.nodes[:k] for o, k in outcomes])
    code = np.concatenate([o.code[:k] for o, k in outcomes])
    plugin = np.concatenate([o.plugin[:k] for o, k in outcomes])
    results: dict[str, FilterResult] = {}
    for name in names:
        parts = [(o.results.get(name), k) for o, k in outcomes]
        if all(r is None for r, _ in parts):
            continue
        res_code = np.concatenate([r.code[:k] if r is not None else np.zeros(k, np.int8) for r, k in parts])
        texts = sorted({t for r, _ in parts if r is not None for t, _ in r.reasons})
        reasons = []
        for t in texts:
            masks = []
            for r, k in parts:
                m = np.zeros(k, dtype=bool)
                if r is not None:
                    for text, mask in r.reasons:
                        if text == t:
                            m |= mask[:k]
                masks.append(m)
            reasons.append((t, np.concatenate(masks)))
        results[name] = FilterResult(res_code, reasons)
    return FilterOutcome(nodes=nodes, code=code, plugin=plugin, plugins=names, results=results)


def unimplemented_warnings(pods: list[PodInfo]) -> list[str]:
    """Say plainly which pods need plugins kplace does not implement (their constraints are not checked)."""
    dra = sum(1 for p in pods if p.pod.spec.resource_claims)
    if not dra:
        return []
    return [f"{dra} pending pod(s) use {NOT_IMPLEMENTED['DynamicResources']}: the DynamicResources plugin is not "
            "implemented, so those constraints were not checked"]


def schedule_greedy(
    index: ClusterIndex, config: SchedulerConfig | None = None, *, tie_break: str = "order", seed: int = 0,
    on_pod: Callable[[int, int, int], None] | None = None, allow_pdb_violations: bool = False,
) -> Plan:
    return GreedyScheduler(index, config, tie_break=tie_break, seed=seed,
                           respect_pdbs=not allow_pdb_violations).run(on_pod=on_pod)
