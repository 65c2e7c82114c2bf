"""Rebalancing a big cluster as a large-neighbourhood search: the rebalancing model (`model.solve`) solved on small
sets of nodes, one after the other, each from the state the earlier ones left, until the time limit.

A neighbourhood is a set of at most `size` nodes of one zone (`topology.kubernetes.io/zone`; nodes without it form
one more zone): moves stay within a zone, so zone-level counts (spread, affinity) do not change. Its sub-state
holds its nodes, the pods bound to them (in the state the earlier neighbourhoods left) and every other object
(PDBs, priority classes, namespaces, ...); `model.solve` moves the movable pods of its sources among its nodes,
and an answer counts only when it gains. For pack, the sources are a zone's least-loaded nodes whose pods
(DaemonSet, mirror and static pods aside, which the load does not count either) are all movable (load: the max of
cpu and memory requests over allocatable), a quarter of the neighbourhood, never a source twice; the
destinations are the zone's most-loaded nodes below FULL that are not sources in the same round. Rounds take one
neighbourhood per zone in turn (zones with sources left), so the neighbourhoods of a round are disjoint and may be
solved concurrently (`solver.executors`). The goal gained is the sum over neighbourhoods (non-empty nodes are
counted node by node). The plan is checked as a whole afterwards (`checked.checked_target`,
`waves.build_waves`), as for the global model: a rule the sub-state could not see (a global minimum of hostname
spread, a PDB across neighbourhoods) is caught there.
"""

from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from kplace.models.index import ClusterIndex, compile_index
from kplace.models.k8s import Pod

from ..cpsat.clock import SearchClock
from ..framework.config import SchedulerConfig
from .model import Budget, RebalanceOptions, Target, solve
from .policy import Policy, is_node_bound_daemon

ZONE = "topology.kubernetes.io/zone"
LNS_GOALS = ("pack",)
FULL = 0.95  # a node loaded this much is no destination
SLICE = 2.0  # seconds (deterministic by default) a neighbourhood's solve gets at most

Progress = Callable[[dict[str, Any]], None]


@dataclass
class Neighbourhood:
    """Nodes (ids of the whole index) and which of them are sources."""

    nodes: list[int]
    sources: list[int]


@dataclass
class Task:
    """What one neighbourhood's solve needs, self-contained (it can travel to another process)."""

    snapshot: Any
    config: SchedulerConfig
    policy: Policy
    opts: RebalanceOptions
    movable: set[str]
    seconds: float
    deadline_in: float | None = None  # wall seconds left to the plan's deadline when the task was made


@dataclass
class Outcome:
    """A neighbourhood's answer: moves (pod, from, to) by node name, the goal before and after, its solve's
    deterministic seconds."""

    moves: list[tuple[str, str, str]] = field(default_factory=list)
    goal_before: float | None = None
    goal_after: float | None = None
    searched: float = 0.0
    cuts: int = 0  # searches the deadline stopped


def solve_task(task: Task) -> Outcome:
    """Solve one neighbourhood (the unit an executor runs)."""
    index = compile_index(task.snapshot)
    clock = SearchClock(task.opts.deterministic, task.opts.workers, task.opts.seed,
                        deadline=None if task.deadline_in is None else time.perf_counter() + task.deadline_in)
    target = solve(index, task.config, task.policy, task.opts, task.movable, [], None, Budget(task.seconds, clock))
    if target is None:
        return Outcome(searched=clock.searched, cuts=clock.cuts)  # infeasible: nothing moves
    names = index.node_names
    return Outcome([(k, names[a], names[b]) for k, a, b in target.moves], target.goal_before, target.goal_after,
                   clock.searched, clock.cuts)


class NodeSearch:
    """The state as the neighbourhoods solved so far leave it, and the choice of the next ones."""

    def __init__(self, index: ClusterIndex, movable: set[str], size: int) -> None:
        self.index, self.movable, self.size = index, movable, max(4, size)
        self.on: dict[int, list[Pod]] = defaultdict(list)  # node id → its pods now
        for pi in index.bound:
            self.on[int(pi.node)].append(pi.pod)
        self.cols = [index.rid[r] for r in ("cpu", "memory") if r in index.rid]
        self.alloc = index.alloc[:, self.cols].astype(np.float64)
        self.load = np.zeros(len(index.nodes))
        self.used = np.zeros((len(index.nodes), len(self.cols)), dtype=np.int64)  # what the load counts
        counted = [pi for pi in index.bound if not is_node_bound_daemon(pi)]
        np.add.at(self.used, [int(pi.node) for pi in counted], index.pod_req[[pi.idx for pi in counted]][:, self.cols])
        self._reload(range(len(index.nodes)))
        zones: dict[str, list[int]] = defaultdict(list)
        for n, node in enumerate(index.nodes):
            if not index.unschedulable[n]:
                zones[node.metadata.labels.get(ZONE, "")].append(n)
        self.zones = [zones[z] for z in sorted(zones)]
        self.tried: set[int] = set()  # nodes that were sources

    def _reload(self, nodes: Iterable[int]) -> None:
        for n in nodes:
            with np.errstate(divide="ignore", invalid="ignore"):
                share = np.where(self.alloc[n] > 0, self.used[n] / self.alloc[n], 1.0)
            self.load[n] = float(share.max()) if share.size else 1.0

    def _emptiable(self, n: int) -> bool:
        """Every pod on n that keeps it non-empty is movable (and there is one)."""
        keep = [p for p in self.on.get(n, []) if not is_node_bound_daemon(self.index.pod_by_key[_key(p)])]
        return bool(keep) and all(_key(p) in self.movable for p in keep)

    def round(self) -> list[Neighbourhood]:
        """One neighbourhood per zone that has sources left: disjoint, best first (least-loaded sources)."""
        out = []
        k_src = max(1, self.size // 4)
        for zone in self.zones:
            candidates = sorted((n for n in zone if n not in self.tried and self.load[n] > 0 and self._emptiable(n)),
                                key=lambda n: (self.load[n], n))
            sources = candidates[:k_src]
            if not sources:
                continue
            taken = set(sources)
            dest = sorted((n for n in zone if n not in taken and self.load[n] < FULL and self.load[n] > 0),
                          key=lambda n: (-self.load[n], n))[:self.size - len(sources)]
            if not dest:
                self.tried.update(sources)
                continue
            out.append(Neighbourhood(sorted([*sources, *dest]), sources))
        out.sort(key=lambda nb: (min(self.load[n] for n in nb.sources), nb.nodes[0]))
        for nb in out:
            self.tried.update(nb.sources)
        return out

    def snapshot(self, nb: Neighbourhood) -> Any:
        """The neighbourhood's sub-state: its nodes, the pods on them now, every other object."""
        snap = self.index.snapshot
        nodes = [self.index.nodes[n] for n in nb.nodes]
        return dataclasses.replace(snap, nodes=nodes, pods=[p for n in nb.nodes for p in self.on.get(n, [])],
                                   warnings=[])

    def movable_in(self, nb: Neighbourhood, capped: set[str]) -> set[str]:
        """The movable pods on its sources (outside namespaces at their --max-moves-per-namespace)."""
        return {_key(p) for n in nb.sources for p in self.on.get(n, [])
                if _key(p) in self.movable and p.metadata.namespace not in capped}

    def apply(self, out: Outcome) -> None:
        """Move the pods an outcome moved (from the node they are on now)."""
        touched = set()
        ids = self.index.node_id
        for key, a, b in out.moves:
            na, nb = ids[a], ids[b]
            pod = next(p for p in self.on[na] if _key(p) == key)
            self.on[na].remove(pod)
            self.on[nb].append(pod.model_copy(update={"spec": pod.spec.model_copy(update={"node_name": b})}))
            pi = self.index.pod_by_key[key]
            if not is_node_bound_daemon(pi):
                req = self.index.pod_req[pi.idx, self.cols]
                self.used[na] -= req
                self.used[nb] += req
            touched |= {na, nb}
        self._reload(touched)


def _key(p: Pod) -> str:
    return f"{p.metadata.namespace}/{p.metadata.name}"


def solve_lns(index: ClusterIndex, config: SchedulerConfig, policy: Policy, opts: RebalanceOptions,
              movable: set[str], budget: Budget, size: int, progress: Progress | None = None,
              executor_for: Callable[[int], Any] | None = None) -> Target:
    """Neighbourhoods until the budget is spent or none is left; the moves compose (a pod's first origin, its
    last destination). --max-moves is shared (each neighbourhood gets what is left, split evenly in a round);
    --max-moves-per-node holds as is (only a source's pods move, and a node is a source once);
    --max-moves-per-namespace: each neighbourhood of a round gets an even share of the least left to a namespace
    (a namespace at its limit moves no more). `executor_for(k)`: where a round's k neighbourhoods are solved
    (`solver.executors`; None: here, one after another); a neighbourhood whose solve failed moves nothing."""
    if opts.goal not in LNS_GOALS:
        raise NotImplementedError(f"--goal {opts.goal} is not implemented as a neighbourhood search (for clusters "
                                  f"of more than the global model's node limit); goals that are: "
                                  f"{', '.join(LNS_GOALS)}")
    search = NodeSearch(index, movable, size)
    origin: dict[str, int] = {}
    final: dict[str, int] = {}
    target = Target(goal_before=_non_empty(index, search), status="FEASIBLE")
    gained = 0.0
    solved = improved = rounds = 0
    moves_left = opts.max_moves
    per_ns: dict[str, int] = defaultdict(int)
    clock = budget.clock
    began, timeline = time.perf_counter(), []
    while budget.left() > 0.05 and not clock.past_deadline():
        nbs = search.round()
        if not nbs:
            break
        rounds += 1
        share = min(SLICE, max(0.2, budget.left() / len(nbs)))
        cap = opts.max_moves_per_namespace
        capped = {ns for ns, c in per_ns.items() if cap is not None and c >= cap}
        tasks = []
        for k, nb in enumerate(nbs):
            sub = dataclasses.replace(opts, place_pending=False, only_pending=None, on_progress=None,
                                      neighbourhood=0)
            if moves_left is not None:
                sub.max_moves = moves_left // len(nbs) + (1 if k < moves_left % len(nbs) else 0)
            if cap is not None:
                sub.max_moves_per_namespace = (cap - max(per_ns.values(), default=0)) // len(nbs)
            tasks.append(Task(search.snapshot(nb), config, policy, sub, search.movable_in(nb, capped), share,
                              None if clock.deadline is None else max(0.0, clock.deadline - time.perf_counter())))
        outcomes = executor_for(len(tasks)).map(solve_task, tasks) if executor_for else map(solve_task, tasks)
        for out in outcomes:
            if isinstance(out, BaseException):
                continue
            solved += 1
            clock.searched += out.searched
            clock.cuts += out.cuts
            if not out.moves or out.goal_before is None or out.goal_after is None or out.goal_after >= out.goal_before:
                continue  # a sub-state sees only its nodes: moves that do not gain are not worth their risk
            improved += out.goal_after < out.goal_before
            gained += out.goal_before - out.goal_after
            for key, a, b in out.moves:
                origin.setdefault(key, index.node_id[a])
                final[key] = index.node_id[b]
                per_ns[key.split("/", 1)[0]] += 1
            if moves_left is not None:
                moves_left -= len(out.moves)
            search.apply(out)
        moved = sum(1 for k in final if final[k] != origin[k])
        timeline.append({"seconds": round(time.perf_counter() - began, 2), "goal": (target.goal_before or 0) - gained,
                         "moves": moved})
        if progress is not None:
            progress({"round": rounds, "neighbourhoods": solved, "improved": improved, "goal_gained": gained,
                      "moves": moved})
    target.moves = [(k, origin[k], final[k]) for k in sorted(final) if final[k] != origin[k]]
    target.goal_after = (target.goal_before or 0) - gained
    target.stages = [{"stage": f"{opts.goal} goal (neighbourhood search)", "status": "FEASIBLE",
                      "objective": target.goal_after, "neighbourhoods": solved, "improved": improved,
                      "rounds": rounds, "neighbourhood_nodes": search.size, "progress": timeline}]
    if clock.past_deadline() or clock.cuts:
        target.stages[0]["deadline"] = True  # the wall-clock deadline ended the search, not the budget
    if not target.moves:
        target.status = "NO_MOVES"
    return target


def _non_empty(index: ClusterIndex, search: NodeSearch) -> float:
    return float(sum(1 for n, pods in search.on.items()
                     if any(not is_node_bound_daemon(index.pod_by_key[_key(p)]) for p in pods)))
