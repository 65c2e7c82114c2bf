"""The CP-SAT engine: pending pods in queue-order windows, each decided at once.

Per window (earlier windows' placements are fixed for later ones):
1. the greedy engine runs on a copy of the state: its plan is the reference, the fallback and the complete
   hint, unless it leaves pods out and the greedy engine taking the pods in another order places more
   (biggest first with MostAllocated scoring, or smallest first): that plan is then the hint;
2. identical pods are grouped; each group gets its domain and objective coefficients (`domains`), then a
   scope: the best `scope` nodes by coefficient (at least 4 per pod), plus every node the hint and greedy
   use; nodes outside a scope still count as constants in every rule (spread minima, affinity support);
3. a networkx graph joins groups whose scopes share a node or that a rule ties (anti-affinity, affinity,
   spread selectors); each connected component is an independent model;
4. each model is solved as lexicographic stages (`objective`), each stage fixing the previous optimum;
5. if CP-SAT's plan places fewer pods than greedy's, priority by priority (lexicographically from the
   highest priority), or no plan came in time, the window takes the reordered pass it started from when that
   places more than greedy (status FEASIBLE), else greedy's plan: status FALLBACK.
Deterministic mode (the default): interleaved search and a deterministic time limit, so the same seed and
input give the same plan whatever the machine's load; `deterministic=False` uses wall-clock limits and a
parallel portfolio instead.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np
from kplace.models.index import ClusterIndex, PodInfo
from kplace.models.plan import Eviction, Placement, Plan
from ortools.sat.python import cp_model

from ..framework.config import Profile, SchedulerConfig, default_config
from ..framework.encoding import EncodingContext, ObjectiveTerm
from ..framework.plugin import CycleState, Plugin
from ..framework.runtime import count_reasons, fit_error_message, internal_error, run_filters, run_pre_filter
from ..framework.state import ClusterState
from ..greedy import GreedyScheduler, enqueue_gate, unimplemented_warnings
from ..measure import measure
from ..plugins import encodings
from ..plugins.defaultpreemption.encoding import Victims, candidates, freed_on, may_preempt, violating
from ..plugins.defaultpreemption.encoding import post as post_victims
from ..plugins.gangscheduling import gang_figures
from .builder import post_constraints
from .clock import SearchClock
from .domains import GroupDomain, group_domain
from .groups import GroupMatcher, PodGroup, group_pods
from .objective import Stage, disruption_stage, objective_stages
from .stages import StageSolve, StageSolver
from .variables import EVICTED, Variables


@dataclass
class CpsatOptions:
    window: int = 1000
    time_limit: float = 10.0  # seconds for the whole run
    workers: int = 2
    seed: int = 0
    objective: str = "default"  # default | pack | balance
    scope: int = 32  # nodes per group kept in the model, at least (plus 4 per pod and greedy's nodes; 2× with a goal)
    deterministic: bool = True
    tie_break: str = "order"
    allow_pdb_violations: bool = False  # preemption may take a PDB below zero, at the highest disruption cost
    # Optional progress hook: called as on_progress(seconds, objective, bound, stage) at every solution CP-SAT
    # finds and once at the end of each solve (seconds: that solve's wall time). Observes only; None: no hook.
    on_progress: Callable[[float, float, float, str], None] | None = None
    # Optional: called as on_window(windows done, windows in all, pods placed so far, pods decided so far) after each
    # window. Observes only.
    on_window: Callable[[int, int, int, int], None] | None = None


log = logging.getLogger(__name__)

SURROGATE_GAP = 1e-3  # a surrogate stage stops within 0.1 % of its bound,
SURROGATE_EFFORT = (1.0, 1000)  # or after 1 s + 1 s per 1,000 model variables (deterministic seconds),
SURROGATE_PROBE = (0.25, 4000, 200)  # in two solves: a probe of 0.25 s (pro rata below 200 pods) + 1 s per 4,000
# variables, then the rest when the probe gained more than SURROGATE_GAP on its hint; a model whose terms are all
# node-local (no domain counts) probes a tenth as long
LOCAL_PROBE = 0.1
INCUMBENT = "greedy plan (incumbent)"  # progress stage: the window holds greedy's plan (objective = pods placed)
MEASURE_CHECK = 5000  # a multi-window run placing every pod, up to this many, is also measured against one greedy run


@dataclass
class _Baselines:
    greedy_state: ClusterState  # kube's greedy without preemption: the reference every stage reports against
    greedy_placed: int
    hint_state: ClusterState  # the search's starting point: greedy's plan, or the packing hint when better
    hint_attempts: dict
    fallback_state: ClusterState
    fallback_attempts: dict


@dataclass
class ComponentResult:
    counts: dict[int, dict[int, int]]
    optimal: bool
    objective: float
    bound: float
    greedy_objective: float
    stages: list[dict[str, Any]] = field(default_factory=list)
    ok: bool = True
    volumes: dict[str, str] = field(default_factory=dict)  # claim key → PV name or "(dynamic)" chosen by the model


def _greedy_counts(groups: list[PodGroup], state: ClusterState) -> dict[int, dict[int, int]]:
    out: dict[int, dict[int, int]] = {}
    for g in groups:
        c: Counter[int] = Counter(int(state.pod_node[p.idx]) for p in g.pods if state.pod_node[p.idx] >= 0)
        out[g.gid] = dict(c)
    return out


def _placed_vector(pods: list[PodInfo], placed: set[int]) -> list[tuple[int, int]]:
    """(priority, placed count) from the highest priority down: compared lexicographically."""
    levels = sorted({p.priority for p in pods}, reverse=True)
    return [(lvl, sum(1 for p in pods if p.priority == lvl and p.idx in placed)) for lvl in levels]


def _attempts_vector(pods: list[PodInfo], attempts: dict) -> list[tuple[int, int]]:
    """`_placed_vector` of a greedy run's attempts."""
    return _placed_vector(pods, {i for i, a in attempts.items() if a.node is not None})


def _net_vectors(pods: list[PodInfo], *plans: tuple[set[int], list[int]], extra: list[set[int]] = ()
                 ) -> list[list[tuple[int, int]]]:
    """Per plan (placed pod idx, its victims' priorities), then per `extra` plan (placed idx, no victims): (priority,
    pods placed − pods evicted) from the highest priority down, over every level of any plan, compared
    lexicographically: a plan that evicts a pod to place one of the same priority gains nothing."""
    levels = sorted({p.priority for p in pods} | {v for _, victims in plans for v in victims}, reverse=True)
    by = {lvl: [p.idx for p in pods if p.priority == lvl] for lvl in levels}
    return [[(lvl, sum(1 for i in by[lvl] if i in placed) - sum(1 for v in victims if v == lvl)) for lvl in levels]
            for placed, victims in [*plans, *((x, []) for x in extra)]]


def _lex_less(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> bool:
    return [c for _, c in a] < [c for _, c in b]


def _disruptions(*plans: tuple[list[PodInfo], set[int]]) -> list[list[int]]:
    """Each plan's (victims, PDB-violating victim idx) disruption as a vector compared lexicographically (less is
    better): PDB violations, then the victims at each priority any plan evicts at, from the highest down."""
    levels = sorted({v.priority for victims, _ in plans for v in victims}, reverse=True)
    return [[len(bad), *(sum(1 for v in victims if v.priority == lvl) for lvl in levels)] for victims, bad in plans]


class CpsatScheduler:
    def __init__(self, index: ClusterIndex, config: SchedulerConfig | None = None,
                 options: CpsatOptions | None = None) -> None:
        self.index = index
        self.config = config or default_config()
        self.opts = options or CpsatOptions()
        if self.opts.objective not in ("default", "pack", "balance"):
            raise ValueError(f"objective must be default, pack or balance, got {self.opts.objective!r}")
        self.state = ClusterState(index)
        self._post_filter: dict[str, str] = {}  # pod key → greedy's PostFilter message for pods both leave out
        self._clock = SearchClock(self.opts.deterministic, self.opts.workers, self.opts.seed)  # what budgets count
        self._reference = self.state  # the current window's hint state (normalisation ranges are estimated there)

    # --- building blocks --------------------------------------------------------------------------

    def _profile(self, pod: PodInfo) -> Profile:
        profile = self.config.profile_for(pod.spec.scheduler_name)
        assert profile is not None
        return profile

    def _scope(self, group: PodGroup, domain: GroupDomain, hint: dict[int, int]) -> np.ndarray:
        """The group's best `scope` nodes by coefficient (at least 4 per pod), plus `hint`'s. With a goal (pack,
        balance) twice as many: which nodes are used is then what the search optimises, and on vbp's 40-bin
        instances 32 nodes per group left one bin more than the optimum where 64 reach it."""
        k = max(self.opts.scope * (1 if self.opts.objective == "default" else 2), 4 * group.size)
        if len(domain.nodes) <= k:
            return domain.nodes
        order = np.argsort(-domain.rank, kind="stable")[:k]
        chosen = set(domain.nodes[order].tolist()) | set(hint)
        return np.array(sorted(chosen), dtype=np.int64)

    def _components(self, groups: list[PodGroup], scope: dict[int, np.ndarray],
                     match: GroupMatcher, victims: Victims | None = None) -> list[list[PodGroup]]:
        """Connected components of the graph joining groups tied by a rule (networkx), a shared node, or candidate
        victims under one PodDisruptionBudget (its budget is shared)."""
        graph = nx.Graph()
        graph.add_nodes_from(g.gid for g in groups)
        if victims is not None:
            for members in victims.pdbs.values():
                hosts = {victims.node[i] for i in members}
                tied = [g.gid for g in groups if hosts.intersection(scope[g.gid].tolist())]
                graph.add_edges_from(itertools.pairwise(tied))
        for encoding in encodings().values():
            if encoding.ties is not None:
                graph.add_edges_from(encoding.ties(self.index, match))
        first: dict[int, int] = {}  # groups sharing a node meet there: each joins the node's first group
        shared: set[tuple[int, int]] = set()
        for g in groups:
            for n in scope[g.gid].tolist():
                h = first.setdefault(n, g.gid)
                if h != g.gid:
                    shared.add((h, g.gid))
        graph.add_edges_from(shared)
        by_gid = {g.gid: g for g in groups}
        comps = sorted(sorted(c) for c in nx.connected_components(graph))
        return [[by_gid[i] for i in c] for c in comps]

    def _solve_component(self, groups: list[PodGroup], domains: dict[int, GroupDomain],
                         scope: dict[int, np.ndarray], hint: dict[int, dict[int, int]], seconds: float,
                         volume_hint: dict[str, str] | None = None,
                         reference: dict[int, dict[int, int]] | None = None, victims: Victims | None = None,
                         freed: dict[int, dict[int, np.ndarray]] | None = None) -> ComponentResult:
        """Solve one component's stages from `hint`; each stage's "greedy" figure is `reference` (greedy's
        counts; the hint when not given) evaluated on the same expression. When some group is scoped and pods
        stay out, the scoped optimum proves nothing for the whole domains: the result is not optimal, placed
        stages report their trivial bound (every pod placed) and every stage says `"scoped": true`."""
        model = cp_model.CpModel()
        v = Variables(model, self.state, groups, scope, freed)
        match = GroupMatcher(self.index, groups)
        disruption = None
        if victims is not None:
            respect = not self.opts.allow_pdb_violations
            post_victims(v, victims, groups, self._profile, respect)
            disruption = disruption_stage(v, {p.idx: p.priority for p in victims.pods},
                                          None if respect else victims.pdbs, victims.allowed)
        claims = post_constraints(v, groups, match, self._profile, volume_hint or {})
        terms, normalised = self._score_terms(v, groups, match)
        local = not any(t.domains for t in terms)
        stages: list[Stage] = objective_stages(v, groups, domains, self.opts.objective, terms, normalised,
                                               disruption)
        v.add_hint(hint)
        volumes = claims.derive(hint) if claims.derive else {}
        runner = StageSolver(model, self._clock, self.opts.on_progress)
        started = self._clock.now()
        counts = hint
        reference = hint if reference is None else reference
        optimal, info = True, []
        objective = bound = greedy_obj = 0.0
        for k, stage in enumerate(stages):
            if stage.best is not None and stage.evaluate(counts) == stage.best and k < len(stages) - 1:
                # the hint already places every pod (or, the placement fixed, evicts nobody): the optimum is known
                runner.fix(stage, stage.best)
                objective = bound = float(stage.best)
                greedy_obj = float(stage.evaluate(reference))
                why = "hint places every pod" if stage.maximize else "hint evicts nobody"
                info.append({"stage": stage.name, "status": f"OPTIMAL ({why})",
                             "objective": stage.best, "bound": bound, "greedy": greedy_obj, "seconds": 0.0})
                continue
            remaining = seconds - (self._clock.now() - started)
            share = remaining * (stage.share if k < len(stages) - 1 else 1.0)
            run = (self._solve_surrogate(runner, v, groups, stage, counts, share, local) if stage.surrogate
                   else runner.optimise(stage, max(0.05, share)))
            entry = run.entry(stage.name)
            if not run.ok:
                info.append(entry)
                if k == 0:
                    return ComponentResult(hint, False, 0, 0, 0, info, ok=False)
                optimal = False  # keep the previous stage's plan: it is valid and lexicographically as good
                break
            value = run.value
            if not stage.surrogate:  # a status is a claim about an exact stage only
                optimal &= run.status == cp_model.OPTIMAL
            before = stage.evaluate(counts)
            if value < before if stage.maximize else value > before:
                value = before  # the search did not get back to its hint in time: the hint's plan stands
            else:
                counts = self._counts(v, groups, run.solver)
                volumes = claims.read(run.solver.value)
            if stage.surrogate:  # no status, objective or bound of a surrogate stands for the plan
                entry.update({"status": "FEASIBLE", "surrogate": stage.surrogate, "surrogate_objective": value,
                              "surrogate_bound": float(run.solver.best_objective_bound),
                              "surrogate_greedy": float(stage.evaluate(reference)),
                              "surrogate_optimum_proven": run.status == cp_model.OPTIMAL})
            else:
                objective, bound = float(value), float(run.solver.best_objective_bound)
                greedy_obj = float(stage.evaluate(reference))
                entry.update({"objective": value, "bound": bound, "greedy": greedy_obj})
            info.append(entry)
            if k < len(stages) - 1:
                runner.fix(stage, value)
                v.add_hint(counts)
        narrowed = any(len(scope[g.gid]) < len(domains[g.gid].nodes) for g in groups)
        scoped = narrowed and any(sum(counts.get(g.gid, {}).values()) < g.size for g in groups)
        optimal &= not scoped
        capacity = self._capacity_counts(groups, domains, v, victims)
        last = max((k for k, entry in enumerate(info) if "bound" in entry), default=-1)  # what `bound` is from
        for k, (stage, entry) in enumerate(zip(stages, info, strict=False)):
            if scoped:
                entry["scoped"] = True
            if stage.best is not None and stage.maximize and "bound" in entry:  # a placed stage: its bound, valid
                # for whole domains
                valid = float(stage.best) if scoped else entry["bound"]
                entry["bound"] = min(valid, float(stage.evaluate(capacity)))
                if k == last:
                    bound = entry["bound"]
            elif stage.best is not None and narrowed and entry.get("objective"):
                # the disruption: nodes outside the scopes might evict less, so only 0 bounds it for whole domains
                entry.update({"bound": 0.0, "scoped": True})
                optimal = False
                if k == last:
                    bound = 0.0
        return ComponentResult(counts, optimal, objective, bound, greedy_obj, info, volumes=volumes)

    def _domain(self, group: PodGroup, encoded: frozenset[str]) -> GroupDomain:
        """The group's domain; none when evaluating its pods fails unexpectedly (logged; greedy's attempt, which
        fails the same way, gives the pods their reason)."""
        try:
            return group_domain(self._profile(group.rep), self.state, group, encoded)
        except Exception:
            log.exception("evaluating pod %s failed", group.rep.key)
            empty = np.zeros(0, np.int64)
            return GroupDomain(empty, empty, empty)

    @staticmethod
    def _counts(v: Variables, groups: list[PodGroup], solver: cp_model.CpSolver) -> dict[int, dict[int, int]]:
        out = {g.gid: {n: int(solver.value(var)) for n, var in v.y[g.gid].items() if solver.value(var)}
               for g in groups}
        if v.evict:
            out[EVICTED] = {i: 1 for i, e in v.evict.items() if solver.value(e)}
        return out

    def _solve_surrogate(self, runner: StageSolver, v: Variables, groups: list[PodGroup], stage: Stage,
                         counts: dict[int, dict[int, int]], share: float, local: bool = False) -> StageSolve:
        """A surrogate stage: a probe first (SURROGATE_PROBE, shorter for small models, a tenth of it when every
        term is node-local: greedy's myopia shows in the domain counts that tie pods on different nodes), and
        the rest of its effort (SURROGATE_EFFORT, at most half the share: its products tick deterministic time
        slower than wall time) only when the probe improved on the hint by more than SURROGATE_GAP (relative) —
        where greedy's plan is already at the surrogate's optimum, or within the gap the search may stop at, the
        window stays cheap. Both presolve lightly (`StageSolver.optimise`) and stop within SURROGATE_GAP of the
        bound; in deterministic mode both limits are deterministic time (wall time, doubled, otherwise)."""
        size = len(runner.model.proto.variables)
        effort = min(share / 2, SURROGATE_EFFORT[0] + size / SURROGATE_EFFORT[1])
        pods = sum(g.size for g in groups)
        probe = SURROGATE_PROBE[0] * min(1.0, pods / SURROGATE_PROBE[2]) + size / SURROGATE_PROBE[1]
        probe = min(effort, probe * (LOCAL_PROBE if local else 1.0))
        wall = 1.0 if self.opts.deterministic else 2.0
        first = runner.optimise(stage, max(0.01, wall * probe), SURROGATE_GAP, light=True)
        rest = effort - probe
        before = stage.evaluate(counts)
        if (first.status != cp_model.FEASIBLE or rest < 0.05
                or first.solver.objective_value - before <= SURROGATE_GAP * max(1, abs(before))):
            return first  # proven, or too little gained to search on
        v.add_hint(self._counts(v, groups, first.solver))
        more = runner.optimise(stage, max(0.05, wall * rest), SURROGATE_GAP, light=True)
        return more if more.ok and more.solver.objective_value >= first.solver.objective_value else first

    def _score_terms(self, v: Variables, groups: list[PodGroup], match: GroupMatcher
                     ) -> tuple[list[ObjectiveTerm], list[str]]:
        """Each state-dependent score plugin's objective term (`plugins.encodings`) for this model, and the static
        score plugins that normalise (over nodes the final state decides, so their coefficients are approximate)."""
        profile = self._profile(groups[0].rep)
        encoded = encodings()
        terms, normalised = [], []
        for plugin in profile.at("score"):
            encode = encoded[plugin.name].score if plugin.name in encoded else None
            if encode is None:
                if type(plugin).normalize is not Plugin.normalize:
                    normalised.append(plugin.name)
                continue
            term = encode(EncodingContext(v, plugin, profile.weights.get(plugin.name, 1), self._reference, match))
            if term is not None:
                terms.append(term)
        return terms, normalised

    def _capacity_counts(self, groups: list[PodGroup], domains: dict[int, GroupDomain],
                         v: Variables, victims: Victims | None = None) -> dict[int, dict[int, int]]:
        """Counts that make a placed stage's expression equal a bound from capacity alone, valid on whole domains.
        Per priority level l and resource r (pod slots included), no plan places more than k_l(r) of the level's
        pods, the most whose smallest requests of r fit in the free r of every node some of them may use:
        k_l = min_r max{k : Σ_{i≤k} req_(i)(r) ≤ Σ_{n ∈ ∪ domains} free[n, r]}. The counts give k_l pods of level l
        to its groups, on any node of theirs, so a stage (linear, one weight per level) evaluates to Σ_l w_l·k_l."""
        index, state = self.index, self.state
        free = np.column_stack([np.maximum(index.alloc - state.requested, 0),
                                np.maximum(index.max_pods - state.pod_count, 0)])
        for victim in victims.pods if victims is not None else ():  # what evicting every candidate would free
            free[victims.node[victim.idx]] += np.append(index.pod_req[victim.idx], 1)
        out: dict[int, dict[int, int]] = {}
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

    # --- one window -------------------------------------------------------------------------------

    def solve_window(self, pods: list[PodInfo], seconds: float) -> tuple[dict[str, Any], list[Placement], list]:
        started = time.perf_counter()
        base = self._greedy_baselines(pods)
        if self.opts.on_progress is not None:  # from here on the window always has a plan as good as greedy's
            n_placed = float(base.greedy_placed)
            self.opts.on_progress(time.perf_counter() - started, n_placed, n_placed, INCUMBENT)
        groups = group_pods(self.index, pods)
        hint = _greedy_counts(groups, base.hint_state)
        reference = hint if base.greedy_state is base.hint_state else _greedy_counts(groups, base.greedy_state)
        volume_hint = {k: pv for a in base.hint_attempts.values() for k, pv in a.volume_bindings.items()}
        self._reference = base.hint_state
        encoded = frozenset(name for name, e in encodings().items() if e.score is not None)
        victims = self._victims(groups, base)
        domains = self._domains(groups, encoded, victims)
        if victims is not None and self._representable(base.fallback_attempts, victims):
            # greedy's preemption plan is a solution of the model: the reference, and the hint when it places more
            fallback = _greedy_counts(groups, base.fallback_state) | {
                EVICTED: {v.idx: 1 for a in base.fallback_attempts.values() for v, _ in a.evictions}}
            if _lex_less(_attempts_vector(pods, base.hint_attempts), _attempts_vector(pods, base.fallback_attempts)):
                hint = fallback
            reference = fallback
        scope = {g.gid: self._scope(g, domains[g.gid], {**hint[g.gid], **reference[g.gid]}) for g in groups}
        comps = self._components(groups, scope, GroupMatcher(self.index, groups), victims)
        freed = None if victims is None else {g.gid: freed_on(victims, self.index, g.priority) for g in groups
                                              if may_preempt(g.rep, self._profile(g.rep))}
        solved = self._solve_components(comps, domains, scope, hint, reference, volume_hint,
                                        seconds if self.opts.deterministic
                                        else max(0.05, seconds - (time.perf_counter() - started)), victims, freed)

        cpsat_nodes = self._assign(groups, solved.counts)
        evicted = [self.index.pods[i] for i in sorted(solved.counts.get(EVICTED, {}))]
        fallback = base.fallback_attempts
        fb_victims = [v for a in fallback.values() for v, _ in a.evictions]
        cp_vec, fb_vec = _net_vectors(pods, ({i for i, n in cpsat_nodes.items() if n is not None},
                                             [v.priority for v in evicted]),
                                      ({i for i, a in fallback.items() if a.node is not None},
                                       [v.priority for v in fb_victims]))
        evictions: list = []
        measures: dict[str, Any] = {}
        cp_dis, fb_dis = _disruptions(
            (evicted, violating(victims, [v.idx for v in evicted]) if victims else set()),
            (fb_victims, {v.idx for a in fallback.values() for v, bad in a.evictions if bad}))
        cp_gangs = gang_figures(self.index, self.state.pod_node, cpsat_nodes)
        fb_gangs = gang_figures(self.index, self.state.pod_node, {i: a.node for i, a in fallback.items()})
        # after pods placed, the objective's order: gangs that run, then less disruption, then fewer preferred domains
        cp_rank = (cp_gangs[0], [-x for x in cp_dis], cp_gangs[1])
        fb_rank = (fb_gangs[0], [-x for x in fb_dis], fb_gangs[1])
        if solved.ok and cp_vec == fb_vec and cp_rank < fb_rank:
            solved.ok = False  # CP-SAT does worse for no more pods: greedy's plan stands
        if solved.ok and not _lex_less(cp_vec, fb_vec):
            before, self.state = self.state, self.state.fork()
            for victim in evicted:
                self.state.forget(victim)
            bindings: dict[int, dict[str, str]] = {}
            for p in pods:  # queue order: the first pod of a claim reports its binding, as in greedy plans
                if cpsat_nodes[p.idx] is not None:
                    self.state.assume(p, cpsat_nodes[p.idx])
                    bindings[p.idx] = self._reserve(p, cpsat_nodes[p.idx], solved.volumes)
            status = "OPTIMAL" if solved.optimal else "FEASIBLE"
            evictions = self._preemptors(pods, cpsat_nodes, evicted, victims)
            placements = self._placements(pods, cpsat_nodes, {}, bindings, {n for _, n, _, _ in evictions})
            for p in pods:  # kube's message ends with what PostFilter (preemption) found: greedy's
                if cpsat_nodes[p.idx] is None and fallback[p.idx].node is None and fallback[p.idx].post_filter:
                    self._post_filter[p.key] = fallback[p.idx].post_filter
            measures = self._measures(groups, cpsat_nodes, fallback, base.fallback_state)
            goal_tied = self.opts.objective == "default" or solved.objective == solved.greedy_objective
            if cp_vec == fb_vec and cp_rank == fb_rank and goal_tied and measures["cpsat"] < measures["greedy"]:
                self.state = before  # greedy's plan scores better on the final state: it stands
                solved.ok = False
                evictions = []
                measures["kept"] = "greedy (its score measure is higher)"
        if not solved.ok or _lex_less(cp_vec, fb_vec):
            # no CP-SAT plan as good as greedy's: the reordered greedy pass the search started from when it
            # beats greedy (a plan kube's filters accepted pod by pod), else greedy's plan
            hint = base.hint_attempts
            hint_vec = _net_vectors(pods, (set(), [v.priority for v in fb_victims]),
                                    extra=[{i for i, a in hint.items() if a.node is not None}])[-1]
            if base.hint_state is not base.greedy_state and _lex_less(fb_vec, hint_vec):
                self.state, chosen, status = base.hint_state, hint, "FEASIBLE"
            else:
                self.state, chosen, status = base.fallback_state, fallback, "FALLBACK"
            placements = self._placements(pods, {p.idx: chosen[p.idx].node for p in pods}, chosen,
                                          {p.idx: chosen[p.idx].volume_bindings for p in pods})
            evictions = [(victim, chosen[p.idx].evicted_from[victim.idx], p, violates) for p in pods
                         for victim, violates in chosen[p.idx].evictions]
        window = {"pods": len(pods), "groups": len(groups), "components": len(comps), "status": status,
                  "objective": solved.objective, "bound": solved.bound, "greedy_objective": solved.greedy_objective,
                  "seconds": round(time.perf_counter() - started, 4), "stages": solved.stages}
        if measures:
            window["measure"] = measures
        return window, placements, evictions

    def _victims(self, groups: list[PodGroup], base: _Baselines) -> Victims | None:
        """The candidate victims (`defaultpreemption.encoding`) when the window may need them: the default
        objective and greedy without preemption leaving some pod out."""
        if self.opts.objective != "default" or base.greedy_placed == sum(g.size for g in groups):
            return None
        victims = candidates(self.state, [g.rep for g in groups], self._profile)
        return victims if victims.pods else None

    def _domains(self, groups: list[PodGroup], encoded: frozenset[str], victims: Victims | None
                 ) -> dict[int, GroupDomain]:
        """Each group's domain; a group that may preempt gets the nodes its filters pass once the candidates
        below its priority are gone (the model decides which go)."""
        out, without = {}, {}
        for g in groups:
            gone = victims.below(g.priority) if victims is not None and may_preempt(g.rep, self._profile(g.rep)) \
                else []
            if not gone:
                out[g.gid] = self._domain(g, encoded)
                continue
            if g.priority not in without:
                state = self.state.fork()
                for v in gone:
                    state.forget(v)
                without[g.priority] = state
            here, self.state = self.state, without[g.priority]
            try:
                out[g.gid] = self._domain(g, encoded)
            finally:
                self.state = here
        return out

    @staticmethod
    def _representable(attempts: dict, victims: Victims) -> bool:
        """Whether greedy's plan's evictions are all candidates of the model."""
        return all(v.idx in victims.node for a in attempts.values() for v, _ in a.evictions)

    def _preemptors(self, pods: list[PodInfo], nodes: dict[int, int | None], evicted: list[PodInfo],
                    victims: Victims | None) -> list[tuple[PodInfo, int, PodInfo, bool]]:
        """(victim, node, preemptor, violates a PDB) per evicted pod: its preemptor is the window pod of highest
        priority on its node that may preempt (the first in queue order among equals)."""
        if not evicted:
            return []
        bad = violating(victims, [v.idx for v in evicted]) if victims is not None else set()
        out = []
        for v in evicted:
            node = victims.node[v.idx]
            there = [p for p in pods if nodes[p.idx] == node and p.priority > v.priority
                     and may_preempt(p, self._profile(p))]
            out.append((v, node, max(there, key=lambda p: p.priority), v.idx in bad))
        return out

    def _measures(self, groups: list[PodGroup], nodes: dict[int, int | None], fallback: dict,
                  fallback_state: ClusterState) -> dict[str, Any]:
        """The score measure (`solver.measure`) of the window's pods in CP-SAT's plan (on the current state) and
        in greedy's (on its state); computed once when the two plans put as many of each group's pods on each node
        (identical pods are interchangeable)."""
        of = [(g.gid, p) for g in groups for p in g.pods]
        mine = [(p, nodes[p.idx]) for _, p in of if nodes[p.idx] is not None]
        theirs = [(p, fallback[p.idx].node) for _, p in of if fallback[p.idx].node is not None]
        m_cp = measure(self.config, self.state, mine)
        same = (Counter((gid, nodes[p.idx]) for gid, p in of if nodes[p.idx] is not None)
                == Counter((gid, fallback[p.idx].node) for gid, p in of if fallback[p.idx].node is not None))
        m_fb = m_cp if same else measure(self.config, fallback_state, theirs)
        return {"cpsat": m_cp.total, "greedy": m_fb.total, "cpsat_per_plugin": m_cp.per_plugin,
                "greedy_per_plugin": m_fb.per_plugin}

    def _greedy(self, pods: list[PodInfo], *, preemption: bool, config: SchedulerConfig | None = None,
                explain: bool = True) -> tuple[ClusterState, dict]:
        """The greedy engine over `pods` in the given order, on a copy of the state: (state, attempts)."""
        state = self.state.fork()
        sched = GreedyScheduler(self.index, config or self.config, tie_break=self.opts.tie_break,
                                seed=self.opts.seed, state=state, preemption=preemption, explain=explain,
                                respect_pdbs=not self.opts.allow_pdb_violations)
        return state, sched.schedule_all(pods)

    def _greedy_baselines(self, pods: list[PodInfo]) -> _Baselines:
        """Greedy on copies of the state: kube's answer (with preemption when the profile has it: the fallback)
        and, when that evicts, greedy without preemption (the reference and the hint, which the model can
        represent; without evictions the two are the same plan). When greedy leaves pods out, two reordered
        passes (`_reordered_hints`) may replace its plan as the hint: the first that places most, priority by
        priority, if that is more than greedy's; with `--objective pack` the packing pass whenever it places at
        least as much."""
        preemption = any(self._profile(p).preemption for p in pods)
        fallback_state, fallback_attempts = self._greedy(pods, preemption=preemption)
        greedy_state, greedy_attempts = fallback_state, fallback_attempts
        if any(a.evictions for a in fallback_attempts.values()):
            greedy_state, greedy_attempts = self._greedy(pods, preemption=False)
        greedy_placed = {i for i, a in greedy_attempts.items() if a.node is not None}
        hint_state, hint_attempts = greedy_state, greedy_attempts
        best = _placed_vector(pods, greedy_placed)
        pack = self.opts.objective == "pack"
        for k, (state, attempts) in enumerate(self._reordered_hints(pods, short=len(greedy_placed) < len(pods))):
            vec = _attempts_vector(pods, attempts)
            if _lex_less(best, vec) or (pack and k == 0 and not _lex_less(vec, best)):
                hint_state, hint_attempts, best = state, attempts, vec
        return _Baselines(greedy_state, len(greedy_placed), hint_state, hint_attempts, fallback_state,
                          fallback_attempts)

    def _solve_components(self, comps: list[list[PodGroup]], domains: dict[int, GroupDomain],
                          scope: dict[int, np.ndarray], hint: dict[int, dict[int, int]],
                          reference: dict[int, dict[int, int]], volume_hint: dict[str, str],
                          budget: float, victims: Victims | None = None,
                          freed: dict[int, dict[int, np.ndarray]] | None = None) -> ComponentResult:
        """Solve each component in its share of the budget (by model size) and merge the results; a scoped
        model whose plan leaves pods out is retried with full domains from that plan (not with preemption: its
        evictions are decided on the scopes' nodes, each in one component). When greedy already
        leaves pods of a scoped component out, the scoped solve gets half the share, so the retry (whose
        bounds hold for the whole domains) has time too."""
        sizes = [sum(len(scope[g.gid]) for g in c) + 1 for c in comps]
        merged = ComponentResult({}, True, 0.0, 0.0, 0.0)
        for comp, size in zip(comps, sizes, strict=True):
            if all(not scope[g.gid].size for g in comp):
                merged.counts.update({g.gid: {} for g in comp})
                continue
            comp_budget = budget * size / sum(sizes)
            comp_started = self._clock.now()
            mine = self._evictions_on(victims, {n for g in comp for n in scope[g.gid].tolist()})
            ref = {g.gid: reference[g.gid] for g in comp} | {EVICTED: mine(reference)}
            start = {g.gid: hint[g.gid] for g in comp} | {EVICTED: mine(hint)}
            scoped = [g for g in comp if len(scope[g.gid]) < len(domains[g.gid].nodes)]
            short = any(sum(ref[g.gid].values()) < g.size for g in comp)
            try:
                res = self._solve_component(comp, domains, scope, start,
                                            comp_budget / 2 if scoped and short else comp_budget, volume_hint, ref,
                                            victims, freed)
            except Exception as exc:  # the window keeps greedy's plan rather than failing
                log.exception("building or solving a model of %d groups failed", len(comp))
                res = ComponentResult(start, False, 0, 0, 0,
                                      [{"stage": "model", "status": "ERROR", "error": internal_error(exc)}], ok=False)
            left = comp_budget - (self._clock.now() - comp_started)
            unplaced = any(sum(res.counts.get(g.gid, {}).values()) < g.size for g in comp)
            if res.ok and scoped and unplaced and left > 0.1 and victims is None:  # evictions stay in the scopes
                full = {g.gid: domains[g.gid].nodes if g in scoped else scope[g.gid] for g in comp}
                retry = self._solve_component(comp, domains, full, res.counts, left, {**volume_hint, **res.volumes},
                                              ref, victims, freed)
                if retry.ok:
                    retry.stages = [*res.stages, *({**s, "stage": s["stage"] + " (full domains)"}
                                                   for s in retry.stages)]
                    res = retry
            evicted = {**merged.counts.get(EVICTED, {}), **mine(res.counts)}
            merged.counts.update(res.counts)
            if evicted:
                merged.counts[EVICTED] = evicted
            merged.volumes.update(res.volumes)
            merged.optimal &= res.optimal
            merged.ok &= res.ok
            merged.objective += res.objective
            merged.bound += res.bound
            merged.greedy_objective += res.greedy_objective
            merged.stages.extend(res.stages)
        return merged

    @staticmethod
    def _evictions_on(victims: Victims | None, nodes: set[int]) -> Callable[[dict], dict[int, int]]:
        """counts → the evictions it holds of victims on `nodes` (a component's)."""
        def pick(counts: dict) -> dict[int, int]:
            gone = counts.get(EVICTED, {})
            return {i: 1 for i in gone if victims is not None and victims.node.get(i) in nodes}
        return pick

    def _reordered_hints(self, pods: list[PodInfo], short: bool):
        """Plans of the greedy engine (no preemption) taking the window's pods in another order, higher
        priority first and then by dominant share s(p) = max_r req[p, r] / max_n alloc[n, r]:
        - packing (with `--objective pack`, or when greedy leaves pods out): biggest s first with kube's
          bin-packing scoring (NodeResourcesFit MostAllocated over every requested resource), i.e.
          first-fit-decreasing: it saves room for the big pods that spreading strands;
        - smallest s first with the profile's own scoring (when greedy leaves pods out): when demand exceeds
          capacity, placing the small pods first maximises the count (the knapsack rule for equal values).
        Yields (state, attempts) pairs lazily, packing first."""
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
            yield self._greedy(order, preemption=False, config=config, explain=False)

    def _assign(self, groups: list[PodGroup], counts: dict[int, dict[int, int]]) -> dict[int, int | None]:
        """Give each group's pods, in queue order, the nodes its counts name (in node-tree order)."""
        rank = {int(n): i for i, n in enumerate(self.index.tree_order.tolist())}
        out: dict[int, int | None] = {}
        for g in groups:
            slots = [n for n in sorted(counts.get(g.gid, {}), key=lambda n: rank[n])
                     for _ in range(counts[g.gid][n])]
            for i, p in enumerate(g.pods):
                out[p.idx] = slots[i] if i < len(slots) else None
        return out

    def _reserve(self, pod: PodInfo, node: int, volumes: dict[str, str]) -> dict[str, str]:
        """VolumeBinding's Reserve after `assume`, with the PVs (and provisioning nodes) the model chose: they are
        recorded first, then `reserve` records the rest as kube would; {claim key: PV name or DYNAMIC} of the
        claims this pod binds."""
        from ..framework.state import pod_pvc_keys
        from ..plugins.volumebinding import reserve
        from ..plugins.volumebinding.claims import DYNAMIC

        if not pod.pod.spec.volumes or not any(p.name == "VolumeBinding" for p in self._profile(pod).at("filter")):
            return {}
        name, out = self.index.node_names[node], {}
        for key in pod_pvc_keys(pod.pod):
            what = volumes.get(key)
            if what == DYNAMIC and self.state.pvc_selected_node.get(key) is None:
                self.state.pvc_selected_node[key] = name
                out[key] = what
            elif what is not None and what != DYNAMIC and what not in self.state.pv_claims:
                self.state.pv_claims[what] = key
                out[key] = what
        return {**out, **reserve(self.state, pod, node)}

    def _placements(self, pods: list[PodInfo], nodes: dict[int, int | None], attempts: dict,
                    bindings: dict[int, dict[str, str]], preempted: set[int] = frozenset()) -> list[Placement]:
        """The window's placements; a pod on a node of `preempted` (where victims go) waits for them, as a
        nominated pod does."""
        names = self.index.node_names
        out = []
        for p in pods:
            n, a = nodes[p.idx], attempts.get(p.idx)
            if n is not None:
                out.append(Placement(p.key, names[n], None, p.priority, bool(a and a.nominated) or n in preempted,
                                     dict(bindings.get(p.idx, {}))))
            else:
                out.append(Placement(p.key, None, a.reason if a else None, p.priority))
        return out

    def _fill_reasons(self, placements: list[Placement]) -> None:
        """kube's message, against the current state, for each unplaced pod that has none yet."""
        for pl in placements:
            if pl.node is None and pl.reason is None:
                pl.reason = self._unplaced_reason(self.index.pod_by_key[pl.pod])
                tail = self._post_filter.get(pl.pod)
                if tail and not pl.reason.endswith(tail):
                    pl.reason = f"{pl.reason} {tail}"

    def _unplaced_reason(self, pod: PodInfo) -> str:
        """kube's message for the pod against the final state (the error, when evaluating the pod fails); for a pod
        of a gang the window left out, the gang's."""
        gang = self.index.gangs[self.index.gang_of[pod.idx]] if pod.idx in self.index.gang_of else None
        if gang is not None:
            where = f" in one {gang.topology_key} domain" if gang.topology_key else ""
            return (f"PodGroup {gang.key}: no plan of the window places minCount {gang.min_count} of its pods{where}, "
                    "so none is placed")
        try:
            return self._fit_error(pod)
        except Exception as exc:
            log.exception("evaluating pod %s failed", pod.key)
            return internal_error(exc)

    def _fit_error(self, pod: PodInfo) -> str:
        profile = self._profile(pod)
        cycle = CycleState()
        pre = run_pre_filter(profile, self.state, pod, cycle)
        n_all = len(self.index.nodes)
        if pre.code != 0:
            return fit_error_message(n_all, Counter(), pre.reason)
        order = self.index.tree_order
        nodes = pre.candidates(order)
        out = run_filters(profile, self.state, pod, cycle, nodes, pre.skipped)
        reasons = count_reasons(out)
        if len(nodes) < n_all:
            reasons[pre.absent_reason] += n_all - len(nodes)
        if not reasons and n_all:
            return "left unplaced by the window's optimum (it would displace higher-value placements)"
        return fit_error_message(n_all, reasons)

    # --- the run ----------------------------------------------------------------------------------

    def run(self) -> Plan:
        started = time.perf_counter()
        plan = Plan(engine="cpsat")
        pods = []
        for p in self.index.pending:
            profile = self.config.profile_for(p.spec.scheduler_name)
            if profile is None:
                continue
            gate = enqueue_gate(profile, self.index, p)
            if gate is not None:
                plan.placements.append(Placement(p.key, None, gate, p.priority))
                continue
            pods.append(p)
        windows = self._windows(pods, max(1, self.opts.window))
        names = self.index.node_names
        for k, wpods in enumerate(windows):
            spent = self._clock.searched if self.opts.deterministic else time.perf_counter() - started
            remaining = self.opts.time_limit - spent
            window, placements, evictions = self.solve_window(wpods, max(0.05, remaining / (len(windows) - k)))
            self._fill_reasons(placements)
            plan.windows.append(window)
            plan.placements.extend(placements)
            if self.opts.on_window is not None:
                self.opts.on_window(k + 1, len(windows), sum(1 for p in plan.placements if p.node),
                                    len(plan.placements))
            for victim, node, preemptor, violates in evictions:
                plan.evictions.append(Eviction(victim.key, names[node], preemptor.key, victim.priority, violates))
        plan.warnings.extend(unimplemented_warnings(pods))
        if len(windows) > 1:
            plan = self._at_least_greedy(plan, pods)
        plan.seconds = time.perf_counter() - started
        return plan

    def _windows(self, pods: list[PodInfo], size: int) -> list[list[PodInfo]]:
        """`pods` cut into windows of `size` in queue order, a gang's pods all in the window of its first (a window
        may then hold more than `size`)."""
        gang_of = self.index.gang_of
        if not gang_of:
            return [pods[i : i + size] for i in range(0, len(pods), size)]
        members: dict[int, list[PodInfo]] = {}
        for p in pods:
            if p.idx in gang_of:
                members.setdefault(gang_of[p.idx], []).append(p)
        windows: list[list[PodInfo]] = [[]]
        for p in pods:
            k = gang_of.get(p.idx)
            if k is not None and members[k][0] is not p:
                continue  # placed with its gang's first pod
            if len(windows[-1]) >= size:
                windows.append([])
            windows[-1].extend(members[k] if k is not None else [p])
        return [w for w in windows if w]

    def _at_least_greedy(self, plan: Plan, pods: list[PodInfo]) -> Plan:
        """Each window is compared with greedy on the state earlier windows left, which cannot guarantee the
        whole run: earlier choices can leave less room later. So a multi-window plan is also compared with one
        greedy run over every pod from the initial state and, when that leaves pods out, with the reordered
        passes over every pod (`_reordered_hints`). The plan placing most, lexicographically by priority, is
        kept: the windows', else greedy's (every window then says FALLBACK), else a pass's that beats greedy
        (every window says FEASIBLE; a warning says so). Windows that place every pod need no comparison: no plan
        places more."""
        index = self.index
        placed = {p.pod for p in plan.placements if p.node}
        if all(p.key in placed for p in pods):
            return self._measured_against_greedy(plan, pods)
        greedy = GreedyScheduler(index, self.config, tie_break=self.opts.tie_break, seed=self.opts.seed,
                                 respect_pdbs=not self.opts.allow_pdb_violations).run(pods)
        keys = {p.key for p in pods}
        gated = [p for p in plan.placements if p.pod not in keys]
        greedy_placed = {index.pod_by_key[p.pod].idx for p in greedy.placements if p.node}
        mine, theirs = _net_vectors(
            pods, ({p.idx for p in pods if p.key in placed}, [e.priority for e in plan.evictions]),
            (greedy_placed, [e.priority for e in greedy.evictions]))
        best, chosen = max(mine, theirs, key=lambda vec: [c for _, c in vec]), None
        victims = ([e.priority for e in plan.evictions], [e.priority for e in greedy.evictions])
        if any(p.node is None for p in greedy.placements) and sum(c for _, c in best) < len(pods):
            final, self.state = self.state, ClusterState(index)
            for state, attempts in self._reordered_hints(pods, short=True):
                vec = _net_vectors(pods, (set(), victims[0]), (set(), victims[1]),
                                   extra=[{i for i, a in attempts.items() if a.node is not None}])[-1]
                if _lex_less(best, vec):
                    best, chosen = vec, (state, attempts)
            self.state = final
        if chosen is not None:
            self.state, attempts = chosen
            placements = self._placements(pods, {p.idx: attempts[p.idx].node for p in pods}, attempts,
                                          {p.idx: attempts[p.idx].volume_bindings for p in pods})
            self._fill_reasons(placements)
            return Plan(engine="cpsat", placements=[*gated, *placements],
                        windows=[{**w, "status": "FEASIBLE"} for w in plan.windows],
                        warnings=[*plan.warnings, "the windows together placed fewer pods than a greedy pass over all "
                                  "of them taking the pods in another order (smallest or biggest first); that "
                                  "pass's plan is used"])
        if not _lex_less(mine, theirs):
            return plan
        greedy.engine = "cpsat"
        greedy.placements = [*gated, *greedy.placements]
        greedy.windows = [{**w, "status": "FALLBACK"} for w in plan.windows]
        greedy.warnings = [*plan.warnings, "the windows together placed fewer pods than one greedy run over all "
                           "of them; the greedy plan is used"]
        return greedy


    def _measured_against_greedy(self, plan: Plan, pods: list[PodInfo]) -> Plan:
        """Each window keeps greedy's plan when that measures higher, but earlier windows shape the final state
        of later ones: a multi-window run that places every pod (up to MEASURE_CHECK, default objective, no
        evictions) is also measured (`solver.measure`) against one greedy run over all its pods, and greedy's
        plan is used when it places every pod too, evicts nothing and measures higher."""
        from ..measure import plan_measure

        if self.opts.objective != "default" or plan.evictions or len(pods) > MEASURE_CHECK:
            return plan
        greedy = GreedyScheduler(self.index, self.config, tie_break=self.opts.tie_break, seed=self.opts.seed,
                                 respect_pdbs=not self.opts.allow_pdb_violations).run(pods)
        if greedy.evictions or any(p.node is None for p in greedy.placements):
            return plan
        if plan_measure(self.index, self.config, plan).total >= plan_measure(self.index, self.config, greedy).total:
            return plan
        keys = {p.key for p in pods}
        greedy.engine = "cpsat"
        greedy.placements = [*(p for p in plan.placements if p.pod not in keys), *greedy.placements]
        greedy.windows = [{**w, "status": "FALLBACK"} for w in plan.windows]
        greedy.warnings = [*plan.warnings, "one greedy run over all the windows' pods scores higher on the score "
                           "measure (every pod placed either way); the greedy plan is used"]
        return greedy


def packing_config(config: SchedulerConfig, resources: list[str]) -> SchedulerConfig:
    """Each profile with scoring replaced by kube's bin-packing strategy (NodeResourcesFit MostAllocated over
    `resources`, weight 1 each); filters unchanged."""
    import dataclasses

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


def schedule_cpsat(index: ClusterIndex, config: SchedulerConfig | None = None,
                   options: CpsatOptions | None = None) -> Plan:
    return CpsatScheduler(index, config, options).run()
