"""Greedy's plans for a window, each on a copy of the state: the reference, the fallback and the hint.

- the fallback: kube's answer, the greedy engine with preemption when the profile has it;
- the reference every stage reports against: greedy without preemption (the same plan when greedy evicts
  nobody), a plan the model can represent;
- the hint, the search's starting point: the reference, unless greedy leaves pods out and a reordered pass
  (`GreedyPasses.reordered`) places more, priority by priority; with `--objective pack` the packing pass whenever
  it places at least as much.

The reordered passes take the pods higher priority first, then by dominant share
s(p) = max_r req[p, r] / max_n alloc[n, r]:
- packing (with `--objective pack`, or when greedy leaves pods out): biggest s first with kube's bin-packing scoring
  (NodeResourcesFit MostAllocated over every requested resource), i.e. first-fit-decreasing: it saves room for the
  big pods that spreading strands;
- smallest s first with the profile's own scoring (when greedy leaves pods out): when demand exceeds capacity,
  placing the small pods first maximises the count (the knapsack rule for equal values).
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from kplace.models.index import ClusterIndex, PodInfo
from kplace.models.plan import Plan

from ..framework.config import SchedulerConfig
from ..framework.state import ClusterState
from ..greedy import GreedyScheduler
from .groups import PodGroup
from .options import CpsatOptions, profile_of
from .ranking import attempts_vector, lex_less, placed_vector


@dataclass
class Baselines:
    greedy_state: ClusterState  # kube's greedy without preemption: the reference every stage reports against
    greedy_placed: int
    hint_state: ClusterState  # the search's starting point: greedy's plan, or the packing hint when better
    hint_attempts: dict
    fallback_state: ClusterState
    fallback_attempts: dict
    kube_seconds: float = 0.0  # wall time of the fallback pass (kube's), the rate a greedy pass goes at


@dataclass(frozen=True)
class GreedyPasses:
    """The greedy engine as the CP-SAT engine runs it: its tie-break, seed and PDB rule."""

    index: ClusterIndex
    config: SchedulerConfig
    opts: CpsatOptions

    def run(self, state: ClusterState, pods: list[PodInfo], *, preemption: bool,
            config: SchedulerConfig | None = None, explain: bool = True) -> tuple[ClusterState, dict]:
        """The greedy engine over `pods` in the given order, on a copy of `state`: (state, attempts)."""
        state = state.fork()
        sched = GreedyScheduler(self.index, config or self.config, tie_break=self.opts.tie_break,
                                seed=self.opts.seed, state=state, preemption=preemption, explain=explain,
                                respect_pdbs=not self.opts.allow_pdb_violations)
        return state, sched.schedule_all(pods)

    def whole(self, pods: list[PodInfo]) -> Plan:
        """One greedy run over `pods` from the initial state."""
        return GreedyScheduler(self.index, self.config, tie_break=self.opts.tie_break, seed=self.opts.seed,
                               respect_pdbs=not self.opts.allow_pdb_violations).run(pods)

    def reordered(self, state: ClusterState, pods: list[PodInfo], short: bool
                  ) -> Iterator[tuple[ClusterState, dict]]:
        """The reordered passes (module docstring) without preemption, packing first, lazily: (state, attempts)."""
        index = self.index
        cap = np.maximum(index.alloc.max(axis=0, initial=0), 1)
        share = {p.idx: float((index.pod_req[p.idx] / cap).max()) for p in pods}
        passes = []
        if short or self.opts.objective == "pack":
            resources = [r for r in index.resources if index.pod_req[[p.idx for p in pods], index.rid[r]].any()]
            passes.append((packing_config(self.config, resources), -1))
        if short:
            passes.append((self.config, 1))
        for config, sign in passes:
            order = sorted(pods, key=lambda p, sign=sign: (-p.priority, sign * share[p.idx], p.seq))
            yield self.run(state, order, preemption=False, config=config, explain=False)

    def baselines(self, state: ClusterState, pods: list[PodInfo]) -> Baselines:
        """The window's fallback, reference and hint (module docstring) on copies of `state`."""
        profile = profile_of(self.config)
        preemption = any(profile(p).preemption for p in pods)
        started = time.perf_counter()
        fallback_state, fallback_attempts = self.run(state, pods, preemption=preemption)
        kube_seconds = time.perf_counter() - started
        greedy_state, greedy_attempts = fallback_state, fallback_attempts
        if any(a.evictions for a in fallback_attempts.values()):
            greedy_state, greedy_attempts = self.run(state, pods, preemption=False)
        greedy_placed = {i for i, a in greedy_attempts.items() if a.node is not None}
        hint_state, hint_attempts = greedy_state, greedy_attempts
        best = placed_vector(pods, greedy_placed)
        pack = self.opts.objective == "pack"
        for k, (passed, attempts) in enumerate(self.reordered(state, pods, short=len(greedy_placed) < len(pods))):
            vec = attempts_vector(pods, attempts)
            if lex_less(best, vec) or (pack and k == 0 and not lex_less(vec, best)):
                hint_state, hint_attempts, best = passed, attempts, vec
        return Baselines(greedy_state, len(greedy_placed), hint_state, hint_attempts, fallback_state,
                         fallback_attempts, kube_seconds)


def packing_config(config: SchedulerConfig, resources: list[str]) -> SchedulerConfig:
    """Each profile with scoring replaced by kube's bin-packing strategy (NodeResourcesFit MostAllocated over
    `resources`, weight 1 each); filters unchanged."""
    profiles = {}
    for name, prof in config.profiles.items():
        old = next((p for p in prof.at("filter") if p.name == "NodeResourcesFit"), None)
        if old is None:
            profiles[name] = prof
            continue
        fit = type(old)({**old.args, "scoringStrategy": {
            "type": "MostAllocated", "resources": [{"name": r, "weight": 1} for r in resources]}})
        plugins = {pt: [fit if p.name == "NodeResourcesFit" else p for p in ps] for pt, ps in prof.plugins.items()}
        plugins["score"] = [fit]
        profiles[name] = dataclasses.replace(prof, plugins=plugins, weights={"NodeResourcesFit": 1})
    return dataclasses.replace(config, profiles=profiles)


def greedy_counts(groups: list[PodGroup], state: ClusterState) -> dict[int, dict[int, int]]:
    """A greedy plan's state as the model's counts: per group, pods per node."""
    out: dict[int, dict[int, int]] = {}
    for g in groups:
        c: Counter[int] = Counter(int(state.pod_node[p.idx]) for p in g.pods if state.pod_node[p.idx] >= 0)
        out[g.gid] = dict(c)
    return out
