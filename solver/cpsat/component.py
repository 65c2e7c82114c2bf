"""Solving a window's components: each one's model (`Variables`, the rules of `builder.post_constraints`, the
candidate victims' constraints, the score plugins' terms) and its lexicographic stages (`objective`, `stages`),
from the hint, in its share of the window's budget; the results merged into one.

A stage whose optimum the hint already reaches (every pod placed, nobody evicted) is fixed without a search. A
surrogate stage (one whose expression stands in for the score measure) is probed first and searched on only when
the probe gained on its hint (`ComponentSolver._surrogate`). Bounds are reported for the whole domains: a placed
stage's is capped by capacity alone (`capacity_counts`), and when a scoped model leaves pods out its own bound
proves nothing for them, so the trivial one (every pod placed) stands in and the component is solved again on the
full domains from that plan when time is left.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import numpy as np
from kplace.models.index import ClusterIndex
from ortools.sat.python import cp_model

from ..executors import IN_PROCESS, Executor
from ..framework.encoding import EncodingContext, ObjectiveTerm
from ..framework.plugin import Plugin
from ..framework.runtime import internal_error
from ..framework.state import ClusterState
from ..plugins import encodings
from ..plugins.defaultpreemption.encoding import Victims
from ..plugins.defaultpreemption.encoding import post as post_victims
from .builder import post_constraints
from .clock import Answer, Search, SearchClock, search
from .domains import GroupDomain
from .groups import GroupMatcher, PodGroup
from .objective import Stage, disruption_stage, objective_stages
from .options import CpsatOptions, ProfileOf
from .stages import StageSolve, StageSolver
from .variables import EVICTED, Variables

log = logging.getLogger(__name__)
T = TypeVar("T")

Counts = dict[int, dict[int, int]]  # group id → {node: pods}; EVICTED → {victim idx: 1}

SURROGATE_GAP = 1e-3  # a surrogate stage stops within 0.1 % of its bound,
SURROGATE_EFFORT = (1.0, 1000)  # or after 1 s + 1 s per 1,000 model variables (deterministic seconds),
SURROGATE_PROBE = (0.25, 4000, 200)  # in two solves: a probe of 0.25 s (pro rata below 200 pods) + 1 s per 4,000
# variables, then the rest when the probe gained more than SURROGATE_GAP on its hint; a model whose terms are all
# node-local (no domain counts) probes a twentieth as long: from greedy's hint such a probe rarely gains (when it
# gains more than the gap, the rest of the effort follows)
LOCAL_PROBE = 0.05


@dataclass
class ComponentResult:
    counts: Counts
    optimal: bool
    objective: float
    bound: float
    greedy_objective: float
    stages: list[dict[str, Any]] = field(default_factory=list)
    ok: bool = True
    volumes: dict[str, str] = field(default_factory=dict)  # claim key → PV name or "(dynamic)" chosen by the model

    def merge(self, other: ComponentResult, evicted: dict[int, int]) -> None:
        """Add another component's result; `evicted`: its evictions on its own nodes."""
        evicted = {**self.counts.get(EVICTED, {}), **evicted}
        self.counts.update(other.counts)
        if evicted:
            self.counts[EVICTED] = evicted
        self.volumes.update(other.volumes)
        self.optimal &= other.optimal
        self.ok &= other.ok
        self.objective += other.objective
        self.bound += other.bound
        self.greedy_objective += other.greedy_objective
        self.stages.extend(other.stages)


@dataclass
class WindowModels:
    """What a window's models are built from."""

    groups: list[PodGroup]
    hint: Counts
    reference: Counts  # greedy's counts: each stage's "greedy" figure
    volume_hint: dict[str, str]
    victims: Victims | None
    domains: dict[int, GroupDomain]
    scope: dict[int, np.ndarray]
    comps: list[list[PodGroup]]
    freed: dict[int, dict[int, np.ndarray]] | None


@dataclass
class _Model:
    v: Variables
    claims: Any  # builder's volume claims: `derive(counts)` and `read(value)` of the PVs chosen
    stages: list[Stage]
    local: bool  # every score term is node-local (no domain counts)
    runner: StageSolver


Searching = Generator[Search, "Answer | BaseException", T]  # yields the searches it needs, is sent their answers


def optimise(runner: StageSolver, stage: Stage, seconds: float, gap: float = 0.0, light: bool = False,
             sequential: bool = False) -> Searching[StageSolve]:
    """`StageSolver.optimise`, its search yielded to whoever runs it."""
    task = runner.prepare(stage, seconds, gap, light, sequential)
    answer = yield task
    if isinstance(answer, BaseException):
        raise answer
    return runner.finish(stage, task, answer)


def drive(runs: list[Searching[T]], executor: Executor) -> list[T]:
    """Run generators of searches side by side and return their results, in order. Each is advanced to its next
    search (its models are built here), the search runs on `executor`, and its answer is sent back (a search that
    raised: the exception, raised there). Where the executor can (`submit`), a generator's next search goes out as
    soon as its answer is in; otherwise in rounds, every unfinished generator's next search in one `map`. Either
    way each generator sees only its own answers, so the results do not depend on the order searches end in."""
    results: list[Any] = [None] * len(runs)
    pending: dict[int, Search] = {}

    def advance(i: int, answer: Any) -> None:
        try:
            pending[i] = runs[i].send(answer)
        except StopIteration as stop:
            results[i] = stop.value

    for i in range(len(runs)):
        advance(i, None)
    if executor.local or not hasattr(executor, "submit"):
        while pending:
            order = sorted(pending)
            tasks = [pending.pop(i) for i in order]
            answers = executor.map(search, tasks if executor.local else [t.portable() for t in tasks])
            for i, answer in zip(order, answers, strict=True):
                advance(i, answer)
        return results
    flying: dict[int, Any] = {}
    while pending or flying:
        for i in sorted(pending):
            flying[i] = executor.submit(search, pending.pop(i).portable())
        i, answer = executor.first_done(flying)
        advance(i, answer)
    return results


def read_counts(v: Variables, groups: list[PodGroup], solver: Answer) -> Counts:
    out = {g.gid: {n: int(solver.value(var)) for n, var in v.y[g.gid].items() if solver.value(var)} for g in groups}
    if v.evict:
        out[EVICTED] = {i: 1 for i, e in v.evict.items() if solver.value(e)}
    return out


def evictions_on(victims: Victims | None, nodes: set[int]) -> Callable[[dict], dict[int, int]]:
    """counts → the evictions it holds of victims on `nodes` (a component's)."""
    def pick(counts: dict) -> dict[int, int]:
        gone = counts.get(EVICTED, {})
        return {i: 1 for i in gone if victims is not None and victims.node.get(i) in nodes}
    return pick


def capacity_counts(index: ClusterIndex, state: ClusterState, groups: list[PodGroup],
                    domains: dict[int, GroupDomain], v: Variables, victims: Victims | None = None) -> Counts:
    """Counts that make a placed stage's expression equal a bound from capacity alone, valid on whole domains.
    Per priority level l and resource r (pod slots included), no plan places more than k_l(r) of the level's
    pods, the most whose smallest requests of r fit in the free r of every node some of them may use:
    k_l = min_r max{k : Σ_{i≤k} req_(i)(r) ≤ Σ_{n ∈ ∪ domains} free[n, r]}. The counts give k_l pods of level l
    to its groups, on any node of theirs, so a stage (linear, one weight per level) evaluates to Σ_l w_l·k_l."""
    free = np.column_stack([np.maximum(index.alloc - state.requested, 0),
                            np.maximum(index.max_pods - state.pod_count, 0)])
    for victim in victims.pods if victims is not None else ():  # what evicting every candidate would free
        free[victims.node[victim.idx]] += np.append(index.pod_req[victim.idx], 1)
    out: Counts = {}
    for level in {g.priority for g in groups}:
        members = [g for g in groups if g.priority == level and v.y[g.gid]]
        if not members:
            continue
        nodes = np.unique(np.concatenate([domains[g.gid].nodes for g in members]))
        room = free[nodes].sum(axis=0)
        reqs = np.repeat(np.array([[*index.pod_req[g.rep.idx], 1] for g in members]),
                         [g.size for g in members], axis=0)
        k = min(int(np.searchsorted(np.cumsum(np.sort(reqs[:, r])), room[r], side="right"))
                for r in range(reqs.shape[1]))
        for g in members:
            take = min(k, g.size)
            out[g.gid] = {next(iter(v.y[g.gid])): take}
            k -= take
    return out


@dataclass
class ComponentSolver:
    """Solves a window's components on `state` (the state earlier windows left)."""

    index: ClusterIndex
    state: ClusterState
    profile: ProfileOf
    opts: CpsatOptions
    clock: SearchClock
    score_reference: ClusterState  # the window's hint state: score terms estimate their normalisation ranges there
    # the executor a window's searches run on, given how many components have work (None: here)
    executor: Callable[[int], Executor] | None = None

    def solve_all(self, w: WindowModels, budget: float) -> ComponentResult:
        """Solve each component in its share of the budget (by model size) and merge the results. The components
        are independent models, searched side by side (`drive`): each counts its search time on its own clock
        (`SearchClock.child`), added back in component order, and the results merge in component order, so the
        plan is the same whichever executor ran the searches."""
        sizes = [sum(len(w.scope[g.gid]) for g in c) + 1 for c in w.comps]
        work = [not all(not w.scope[g.gid].size for g in comp) for comp in w.comps]
        mines = [evictions_on(w.victims, {n for g in comp for n in w.scope[g.gid].tolist()}) for comp in w.comps]
        children = [replace(self, clock=self.clock.child()) for _ in w.comps]
        runs = [child._solve_component(w, comp, mine, budget * size / sum(sizes))
                for child, comp, mine, size, todo in zip(children, w.comps, mines, sizes, work, strict=True) if todo]
        results = iter(drive(runs, self.executor(len(runs)) if self.executor else IN_PROCESS))
        merged = ComponentResult({}, True, 0.0, 0.0, 0.0)
        for comp, mine, child, todo in zip(w.comps, mines, children, work, strict=True):
            if not todo:
                merged.counts.update({g.gid: {} for g in comp})
                continue
            res = next(results)
            self.clock.absorb(child.clock)
            merged.merge(res, mine(res.counts))
        return merged

    def _solve_component(self, w: WindowModels, comp: list[PodGroup], mine: Callable[[dict], dict[int, int]],
                         budget: float) -> Searching[ComponentResult]:
        """One component in its budget; a scoped model whose plan leaves pods out is retried with full domains
        from that plan (not with preemption: its evictions are decided on the scopes' nodes, each in one
        component). When greedy already leaves pods of a scoped component out, the scoped solve gets half the
        budget, so the retry (whose bounds hold for the whole domains) has time too."""
        started = self.clock.now()
        ref = {g.gid: w.reference[g.gid] for g in comp} | {EVICTED: mine(w.reference)}
        start = {g.gid: w.hint[g.gid] for g in comp} | {EVICTED: mine(w.hint)}
        scoped = [g for g in comp if len(w.scope[g.gid]) < len(w.domains[g.gid].nodes)]
        short = any(sum(ref[g.gid].values()) < g.size for g in comp)
        try:
            res = yield from self.searches(comp, w.domains, w.scope, start, budget / 2 if scoped and short else budget,
                                           w.volume_hint, ref, w.victims, w.freed)
        except Exception as exc:  # the window keeps greedy's plan rather than failing
            log.exception("building or solving a model of %d groups failed", len(comp))
            return ComponentResult(start, False, 0, 0, 0,
                                   [{"stage": "model", "status": "ERROR", "error": internal_error(exc)}], ok=False)
        left = budget - (self.clock.now() - started)
        unplaced = any(sum(res.counts.get(g.gid, {}).values()) < g.size for g in comp)
        if not (res.ok and scoped and unplaced and left > 0.1 and w.victims is None):  # evictions stay in the scopes
            return res
        full = {g.gid: w.domains[g.gid].nodes if g in scoped else w.scope[g.gid] for g in comp}
        retry = yield from self.searches(comp, w.domains, full, res.counts, left, {**w.volume_hint, **res.volumes},
                                         ref, w.victims, w.freed)
        if not retry.ok:
            return res
        retry.stages = [*res.stages, *({**s, "stage": s["stage"] + " (full domains)"} for s in retry.stages)]
        return retry

    def solve(self, groups: list[PodGroup], domains: dict[int, GroupDomain], scope: dict[int, np.ndarray],
              hint: Counts, seconds: float, volume_hint: dict[str, str] | None = None, reference: Counts | None = None,
              victims: Victims | None = None, freed: dict[int, dict[int, np.ndarray]] | None = None
              ) -> ComponentResult:
        """`searches`, every search run here."""
        return drive([self.searches(groups, domains, scope, hint, seconds, volume_hint, reference, victims, freed)],
                     IN_PROCESS)[0]

    def searches(self, groups: list[PodGroup], domains: dict[int, GroupDomain], scope: dict[int, np.ndarray],
                 hint: Counts, seconds: float, volume_hint: dict[str, str] | None = None,
                 reference: Counts | None = None, victims: Victims | None = None,
                 freed: dict[int, dict[int, np.ndarray]] | None = None) -> Searching[ComponentResult]:
        """Solve one component's stages from `hint`; each stage's "greedy" figure is `reference` (greedy's
        counts; the hint when not given) evaluated on the same expression. When some group is scoped and pods
        stay out, the scoped optimum proves nothing for the whole domains: the result is not optimal, placed
        stages report their trivial bound (every pod placed) and every stage says `"scoped": true`. A generator:
        it yields each search it needs and is sent its answer (`drive`)."""
        m = self._model(groups, domains, scope, volume_hint or {}, victims, freed)
        m.v.add_hint(hint)
        res = yield from self._run_stages(m, groups, hint, hint if reference is None else reference, seconds)
        if res.ok:
            self._whole_domain_bounds(res, m, groups, domains, scope, victims)
        return res

    def _model(self, groups: list[PodGroup], domains: dict[int, GroupDomain], scope: dict[int, np.ndarray],
               volume_hint: dict[str, str], victims: Victims | None,
               freed: dict[int, dict[int, np.ndarray]] | None) -> _Model:
        model = cp_model.CpModel()
        v = Variables(model, self.state, groups, scope, freed)
        match = GroupMatcher(self.index, groups)
        disruption = None
        if victims is not None:
            respect = not self.opts.allow_pdb_violations
            post_victims(v, victims, groups, self.profile, respect)
            disruption = disruption_stage(v, {p.idx: p.priority for p in victims.pods},
                                          None if respect else victims.pdbs, victims.allowed)
        claims = post_constraints(v, groups, match, self.profile, volume_hint)
        terms, normalised = self._score_terms(v, groups, match)
        stages = objective_stages(v, groups, domains, self.opts.objective, terms, normalised, disruption)
        return _Model(v, claims, stages, not any(t.domains for t in terms),
                      StageSolver(model, self.clock, self.opts.on_progress))

    def _run_stages(self, m: _Model, groups: list[PodGroup], hint: Counts, reference: Counts, seconds: float
                    ) -> Searching[ComponentResult]:
        """The stages in order, each fixed at its value before the next; a stage that finds nothing in time keeps
        the previous stage's plan (the first: the component fails)."""
        res = ComponentResult(hint, True, 0.0, 0.0, 0.0, volumes=m.claims.derive(hint) if m.claims.derive else {})
        started = self.clock.now()
        for k, stage in enumerate(m.stages):
            last = k == len(m.stages) - 1
            if stage.best is not None and stage.evaluate(res.counts) == stage.best and not last:
                # the hint already places every pod (or, the placement fixed, evicts nobody): the optimum is known
                m.runner.fix(stage, stage.best)
                res.objective = res.bound = float(stage.best)
                res.greedy_objective = float(stage.evaluate(reference))
                why = "hint places every pod" if stage.maximize else "hint evicts nobody"
                res.stages.append({"stage": stage.name, "status": f"OPTIMAL ({why})", "objective": stage.best,
                                   "bound": res.bound, "greedy": res.greedy_objective, "seconds": 0.0})
                continue
            share = (seconds - (self.clock.now() - started)) * (1.0 if last else stage.share)
            run = yield from (self._surrogate(m, groups, stage, res.counts, share) if stage.surrogate
                              else optimise(m.runner, stage, max(0.05, share)))
            entry = run.entry(stage.name)
            if not run.ok:
                res.stages.append(entry)
                if k == 0:
                    return ComponentResult(hint, False, 0, 0, 0, res.stages, ok=False)
                res.optimal = False  # keep the previous stage's plan: it is valid and lexicographically as good
                break
            value = self._take(m, groups, stage, run, res)
            self._report(stage, run, value, reference, entry, res)
            res.stages.append(entry)
            if not last:
                m.runner.fix(stage, value)
                m.v.add_hint(res.counts)
        return res

    @staticmethod
    def _take(m: _Model, groups: list[PodGroup], stage: Stage, run: StageSolve, res: ComponentResult) -> float:
        """The stage's value; its plan replaces `res`'s unless the search did not get back to its hint in time
        (then the hint's plan and value stand)."""
        if not stage.surrogate:  # a status is a claim about an exact stage only
            res.optimal &= run.status == cp_model.OPTIMAL
        before = stage.evaluate(res.counts)
        if run.value < before if stage.maximize else run.value > before:
            return before
        res.counts = read_counts(m.v, groups, run.result)
        res.volumes = m.claims.read(run.result.value)
        return run.value

    @staticmethod
    def _report(stage: Stage, run: StageSolve, value: float, reference: Counts, entry: dict[str, Any],
                res: ComponentResult) -> None:
        """The stage's entry: objective, bound and greedy's figure; a surrogate's under `surrogate_*` only (no
        status, objective or bound of a surrogate stands for the plan)."""
        if stage.surrogate:
            entry.update({"status": "FEASIBLE", "surrogate": stage.surrogate, "surrogate_objective": value,
                          "surrogate_bound": float(run.result.best_objective_bound),
                          "surrogate_greedy": float(stage.evaluate(reference)),
                          "surrogate_optimum_proven": run.status == cp_model.OPTIMAL})
            return
        res.objective, res.bound = float(value), float(run.result.best_objective_bound)
        res.greedy_objective = float(stage.evaluate(reference))
        entry.update({"objective": value, "bound": res.bound, "greedy": res.greedy_objective})

    def _whole_domain_bounds(self, res: ComponentResult, m: _Model, groups: list[PodGroup],
                             domains: dict[int, GroupDomain], scope: dict[int, np.ndarray],
                             victims: Victims | None) -> None:
        """Bounds valid for the whole domains: a placed stage's is at most the capacity bound (its trivial bound,
        every pod placed, when a scoped model leaves pods out); a disruption stage on narrowed scopes is bounded
        by 0 only."""
        narrowed = any(len(scope[g.gid]) < len(domains[g.gid].nodes) for g in groups)
        scoped = narrowed and any(sum(res.counts.get(g.gid, {}).values()) < g.size for g in groups)
        res.optimal &= not scoped
        capacity = capacity_counts(self.index, self.state, groups, domains, m.v, victims)
        last = max((k for k, entry in enumerate(res.stages) if "bound" in entry), default=-1)  # what `bound` is from
        for k, (stage, entry) in enumerate(zip(m.stages, res.stages, strict=False)):
            if scoped:
                entry["scoped"] = True
            if stage.best is not None and stage.maximize and "bound" in entry:  # a placed stage: its bound, valid
                # for whole domains
                valid = float(stage.best) if scoped else entry["bound"]
                entry["bound"] = min(valid, float(stage.evaluate(capacity)))
                if k == last:
                    res.bound = entry["bound"]
            elif stage.best is not None and narrowed and entry.get("objective"):
                # the disruption: nodes outside the scopes might evict less, so only 0 bounds it for whole domains
                entry.update({"bound": 0.0, "scoped": True})
                res.optimal = False
                if k == last:
                    res.bound = 0.0

    def _surrogate(self, m: _Model, groups: list[PodGroup], stage: Stage, counts: Counts, share: float
                   ) -> Searching[StageSolve]:
        """A surrogate stage: a probe first (SURROGATE_PROBE, shorter for small models, a twentieth of it when every
        term is node-local: greedy's myopia shows in the domain counts that tie pods on different nodes), and
        the rest of its effort (SURROGATE_EFFORT, at most half the share: its products tick deterministic time
        slower than wall time) only when the probe improved on the hint by more than SURROGATE_GAP (relative) —
        where greedy's plan is already at the surrogate's optimum, or within the gap the search may stop at, the
        window stays cheap. Both presolve lightly (`StageSolver.optimise`) and stop within SURROGATE_GAP of the
        bound, except a node-local probe, which searches sequentially without presolve (its limit, a few
        hundredths of a second, would otherwise be outlasted by the presolve and the first interleaved batch);
        in deterministic mode both limits are deterministic time (wall time, doubled, otherwise)."""
        size = len(m.runner.model.proto.variables)
        effort = min(share / 2, SURROGATE_EFFORT[0] + size / SURROGATE_EFFORT[1])
        pods = sum(g.size for g in groups)
        probe = SURROGATE_PROBE[0] * min(1.0, pods / SURROGATE_PROBE[2]) + size / SURROGATE_PROBE[1]
        probe = min(effort, probe * (LOCAL_PROBE if m.local else 1.0))
        wall = 1.0 if self.opts.deterministic else 2.0
        first = yield from optimise(m.runner, stage, max(0.01, wall * probe), SURROGATE_GAP, light=True,
                                    sequential=m.local)
        rest = effort - probe
        before = stage.evaluate(counts)
        if (first.status != cp_model.FEASIBLE or rest < 0.05
                or first.result.objective_value - before <= SURROGATE_GAP * max(1, abs(before))):
            return first  # proven, or too little gained to search on
        m.v.add_hint(read_counts(m.v, groups, first.result))
        more = yield from optimise(m.runner, stage, max(0.05, wall * rest), SURROGATE_GAP, light=True)
        return more if more.ok and more.result.objective_value >= first.result.objective_value else first

    def _score_terms(self, v: Variables, groups: list[PodGroup], match: GroupMatcher
                     ) -> tuple[list[ObjectiveTerm], list[str]]:
        """Each state-dependent score plugin's objective term (`plugins.encodings`) for this model, and the static
        score plugins that normalise (over nodes the final state decides, so their coefficients are approximate)."""
        profile = self.profile(groups[0].rep)
        encoded = encodings()
        terms, normalised = [], []
        for plugin in profile.at("score"):
            encode = encoded[plugin.name].score if plugin.name in encoded else None
            if encode is None:
                if type(plugin).normalize is not Plugin.normalize:
                    normalised.append(plugin.name)
                continue
            term = encode(EncodingContext(v, plugin, profile.weights.get(plugin.name, 1), self.score_reference,
                                          match))
            if term is not None:
                terms.append(term)
        return terms, normalised
