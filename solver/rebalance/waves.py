"""Cutting the moves into waves that are safe to run one after the other.

Within a wave, all evictions and replacements happen together, so:
- capacity: on every node, the pods there before the wave plus every pod arriving in the wave fit (a moving pod
  counts on both its old and its new node until the wave is done), resources and pod slots;
- PodDisruptionBudgets: the wave evicts at most `disruptionsAllowed` pods selected by each PDB (computed from its
  selector and the current healthy pods; replacements are Running again before the next wave starts), where a
  pending pod the PDB selects that an earlier wave placed counts as healthy (it is Running before this wave
  starts: a replacement left pending by an interrupted run opens its budget again once placed);
- owners: at most `policy.owner_cap(replicas)` pods of one workload (maxUnavailable-like);
- hard rules: the state after the wave has no violation that the state before the plan did not have (checked by
  `check.StateChecker`, independently of the model), so every hard rule holds before and after each wave.
Waves are filled greedily in a fixed order (pending placements and moves off the least-used nodes first). A
move that no wave can take (a swap between full nodes, say) is dropped and reported, never forced.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from kplace.models.index import ClusterIndex

from .check import StateChecker
from .policy import Policy


@dataclass
class Step:
    pod: str
    src: int | None  # None: a pending pod's placement
    dst: int
    wave: int = 0


@dataclass
class Waves:
    steps: list[Step] = field(default_factory=list)
    dropped: list[tuple[Step, str]] = field(default_factory=list)
    final: dict[str, int] = field(default_factory=dict)
    count: int = 0


def owner_of(index: ClusterIndex, key: str) -> tuple[str, str, str] | None:
    pi = index.pod_by_key[key]
    ref = next((o for o in pi.pod.metadata.owner_references if o.controller), None)
    return (pi.namespace, ref.kind, ref.name) if ref is not None else None


def build_waves(index: ClusterIndex, checker: StateChecker, policy: Policy, steps: list[Step],
                start: dict[str, int], tolerated: set[str]) -> Waves:
    """Sequence `steps` from the state `start` ({pod: node}); `tolerated`: pods already violating before."""
    limits = _Limits.of(index, policy, steps)
    assign = dict(start)
    load = _Load.of(index, assign)
    remaining = sorted(steps, key=lambda s: (s.src is not None, -1 if s.src is None else int(load.count[s.src]),
                                             s.src if s.src is not None else -1, s.pod))
    why: dict[int, str] = {}  # id(step) → the rule that held it back last
    out = Waves()
    wave = 0
    while remaining:
        wave += 1
        chosen = _safe_subset(checker, assign, _fill(index, limits, load, remaining, why), tolerated, why)
        limits.placed(s for s in chosen if s.src is None)
        if not chosen:
            for s in remaining:
                out.dropped.append((s, why.get(id(s), "no wave can take it safely")))
            break
        for s in chosen:
            s.wave = wave
            load.move(s)
            assign[s.pod] = s.dst
            out.steps.append(s)
        ids = {id(s) for s in chosen}
        remaining = [s for s in remaining if id(s) not in ids]
    out.final = assign
    out.count = wave if out.steps else 0
    return out


@dataclass
class _Load:
    """Requests (`used[n]`) and pod count (`count[n]`) per node of the state the waves have reached."""

    index: ClusterIndex
    used: np.ndarray
    count: np.ndarray

    @classmethod
    def of(cls, index: ClusterIndex, assign: dict[str, int]) -> _Load:
        used = np.zeros_like(index.alloc)
        count = np.zeros(len(index.nodes), dtype=np.int64)
        for k, n in assign.items():
            pi = index.pod_by_key[k]
            used[n] += index.pod_req[pi.idx]
            count[n] += 1
        return cls(index, used, count)

    def move(self, s: Step) -> None:
        req = self.index.pod_req[self.index.pod_by_key[s.pod].idx]
        if s.src is not None:
            self.used[s.src] -= req
            self.count[s.src] -= 1
        self.used[s.dst] += req
        self.count[s.dst] += 1


@dataclass
class _Limits:
    """What bounds the evictions of one wave: each PDB's disruptionsAllowed and each owner's cap."""

    policy: Policy
    index: ClusterIndex
    gained: list[int]  # per PDB of the snapshot: its pending pods placed by the waves so far
    pdb_names: list[str]
    pdbs_of: dict[str, list[int]]  # a moving pod's PDBs
    owners: dict[str, tuple[str, str, str] | None]  # a step's pod's owner (namespace, kind, name)
    replicas: dict[tuple, int]  # pods per owner

    @classmethod
    def of(cls, index: ClusterIndex, policy: Policy, steps: list[Step]) -> _Limits:
        snap = index.snapshot
        replicas: dict[tuple, int] = defaultdict(int)
        for pi in index.pods:
            o = owner_of(index, pi.key)
            if o is not None:
                replicas[o] += 1
        return cls(policy, index, [0] * len(snap.pdbs),
                   [f"{p.metadata.namespace}/{p.metadata.name}" for p in snap.pdbs],
                   {s.pod: index.pdbs_of(index.pod_by_key[s.pod]) for s in steps if s.src is not None},
                   {s.pod: owner_of(index, s.pod) for s in steps}, replicas)

    def budget(self) -> list[int]:
        """Each PDB's disruptionsAllowed for the next wave: now, plus its pods that earlier waves placed."""
        snap = self.index.snapshot
        return [snap.pdb_disruptions_allowed(p, g) for p, g in zip(snap.pdbs, self.gained, strict=True)]

    def placed(self, steps) -> None:
        """A wave placed these pending pods: they are Running, so healthy, before the next wave."""
        for s in steps:
            for i in self.index.pdbs_of(self.index.pod_by_key[s.pod]):
                self.gained[i] += 1

    def blocker(self, s: Step, budget: list[int], per_owner: dict[tuple, int]) -> str | None:
        """Why the wave cannot evict the pod of move `s` with the PDB budgets and owner counts so far, if so."""
        full = [self.pdb_names[i] for i in self.pdbs_of[s.pod] if budget[i] <= 0]
        if full:
            return f"PodDisruptionBudget {', '.join(full)} allows no more disruptions"
        o = self.owners[s.pod]
        if o is not None and per_owner[o] >= self.policy.owner_cap(self.replicas[o]):
            return (f"owner cap: {o[1]} {o[0]}/{o[2]} may move at most {self.policy.owner_cap(self.replicas[o])} "
                    "pod(s) a wave (ownerMaxUnavailable)")
        return None

    def take(self, s: Step, budget: list[int], per_owner: dict[tuple, int]) -> None:
        for i in self.pdbs_of[s.pod]:
            budget[i] -= 1
        o = self.owners[s.pod]
        if o is not None:
            per_owner[o] += 1


def _fill(index: ClusterIndex, limits: _Limits, load: _Load, remaining: list[Step], why: dict[int, str]
          ) -> list[Step]:
    """The steps one wave takes, in order, within capacity (both copies of a moving pod counted), PDB budgets and
    owner caps; a step left out records why in `why`."""
    inflow = np.zeros_like(load.used)
    in_count = np.zeros_like(load.count)
    budget = limits.budget()
    per_owner: dict[tuple, int] = defaultdict(int)
    chosen: list[Step] = []
    for s in remaining:
        req = index.pod_req[index.pod_by_key[s.pod].idx]
        n = s.dst
        over = (req > 0) & (load.used[n] + inflow[n] + req > index.alloc[n])
        if over.any() or load.count[n] + in_count[n] + 1 > index.max_pods[n]:
            short = [index.resources[r] for r in np.flatnonzero(over)] or ["pods"]
            why[id(s)] = (f"capacity: {', '.join(short)} on {index.node_names[n]} while the pods leaving it "
                          "still run (both copies counted)")
            continue
        if s.src is not None:
            blocked = limits.blocker(s, budget, per_owner)
            if blocked:
                why[id(s)] = blocked
                continue
            limits.take(s, budget, per_owner)
        inflow[n] += req
        in_count[n] += 1
        chosen.append(s)
    return chosen


def _new_violations(checker: StateChecker, assign: dict[str, int], tolerated: set[str]) -> list:
    return [v for v in checker.violations(assign) if v.pod not in tolerated]


def _safe_subset(checker: StateChecker, assign: dict[str, int], chosen: list, tolerated: set[str],
                 why: dict[int, str]) -> list:
    """`chosen` if the state after it has no new violation; else the moves kept one by one while it has none (a
    move left out records the hard rule it would break in `why`)."""
    if not chosen:
        return chosen
    trial = dict(assign)
    trial.update({s.pod: s.dst for s in chosen})
    if not _new_violations(checker, trial, tolerated):
        return chosen
    kept: list = []
    trial = dict(assign)
    for s in chosen:
        trial[s.pod] = s.dst
        broken = _new_violations(checker, trial, tolerated)
        if broken:
            v = broken[0]
            why[id(s)] = f"hard rule {v.rule}: {v.message}"
            if s.src is None:
                del trial[s.pod]
            else:
                trial[s.pod] = s.src
            continue
        kept.append(s)
    return kept
