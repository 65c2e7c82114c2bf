"""The CP-SAT engine: pending pods in queue-order windows, each decided at once.

Per window (earlier windows' placements are fixed for later ones):
1. the greedy engine runs on a copy of the state: its plan is the reference, the fallback and the complete
   hint, unless it leaves pods out and the greedy engine taking the pods in another order places more
   (biggest first with MostAllocated scoring, or smallest first): that plan is then the hint (`baselines`);
2. identical pods are grouped; each group gets its domain and objective coefficients (`domains`), then a
   scope: the best `scope` nodes by coefficient (at least 4 per pod), plus every node the hint and greedy
   use; nodes outside a scope still count as constants in every rule (spread minima, affinity support) (`scope`);
3. a networkx graph joins groups whose scopes share a node or that a rule ties (anti-affinity, affinity,
   spread selectors); each connected component is an independent model (`scope.components`);
4. each model is solved as lexicographic stages (`objective`), each stage fixing the previous optimum
   (`component`);
5. if CP-SAT's plan places fewer pods than greedy's, priority by priority (lexicographically from the
   highest priority), or ranks below it after that (`ranking`), or no plan came in time, the window takes the
   reordered pass it started from when that places more than greedy (status FEASIBLE), else greedy's plan:
   status FALLBACK. The chosen plan becomes placements (`assemble`).
A run of several windows is then held to one greedy run over all its pods (`whole_run`).
Deadline (`CpsatOptions.deadline`, wall seconds for the whole decision): a window is searched only while, after
it, greedy passes over the windows left and the plan's verification are estimated to end in time (`_finishes`:
kube's passes so far give the rate, the forked run's verification its length); from the first window that does
not fit, every window takes greedy's plan on the state the earlier ones left (status FALLBACK, `"deadline":
true`) and the run is held to one greedy run over every pod as any other. When not even those passes would end in
time and the forked greedy run over every pod has ended, its plan is used (the windows left are not decided); a
search under way when the deadline passes stops there (`clock`); the comparisons with that run that would not
end in time are skipped, and a windows' plan there is no time left to verify gives way to it (the fork verified
it). The plan's `deadline` field and a warning say so. Every plan so chosen is one the window verification
accepts (greedy's at worst), and a run the deadline never reaches is the deterministic one.
Deterministic mode (the default): interleaved search and a deterministic time limit, so the same seed and
input give the same plan whatever the machine's load; `deterministic=False` uses wall-clock limits and a
parallel portfolio instead.
"""

from __future__ import annotations

import time
from typing import Any

from kplace.models.index import ClusterIndex, PodInfo
from kplace.models.plan import Eviction, Placement, Plan

from ..executors import Chooser
from ..framework.config import SchedulerConfig, default_config
from ..framework.state import ClusterState
from ..greedy import enqueue_gate, unimplemented_warnings
from ..plugins import encodings
from ..plugins.defaultpreemption.encoding import freed_on, may_preempt
from .assemble import Reasons, assign, attempted, placements, reserve
from .baselines import Baselines, GreedyPasses, greedy_counts
from .clock import SearchClock
from .component import ComponentResult, ComponentSolver, WindowModels
from .domains import window_domains
from .groups import GroupMatcher, group_pods
from .options import CpsatOptions, profile_of
from .preemption import preemptors, representable, window_victims
from .ranking import Vector, attempts_vector, lex_less, net_vectors, standings, window_measures
from .scope import components, group_scope
from .variables import EVICTED
from .whole_run import GreedyRun, at_least_greedy, cut_windows, rest_left_to_greedy, unverified_to_greedy

INCUMBENT = "greedy plan (incumbent)"  # progress stage: the window holds greedy's plan (objective = pods placed)

Decided = tuple[str, list[Placement], list]  # status, placements, (victim, node, preemptor, violates a PDB)


DEADLINE_WORDS = "deadline for the decision"  # words of the warning a plan the deadline shaped carries
SLACK = 1.25  # how much longer than estimated what is left of a run under a deadline is planned to take


class CpsatScheduler:
    """`run` schedules the pending pods window by window; `solve_window` decides one window on `state`, the state
    earlier windows left, and moves `state` on to the state its plan leaves."""

    def __init__(self, index: ClusterIndex, config: SchedulerConfig | None = None,
                 options: CpsatOptions | None = None) -> None:
        self.index = index
        self.config = config or default_config()
        self.opts = options or CpsatOptions()
        if self.opts.objective not in ("default", "pack", "balance"):
            raise ValueError(f"objective must be default, pack or balance, got {self.opts.objective!r}")
        self.state = ClusterState(index)
        self._profile = profile_of(self.config)
        self._clock = SearchClock(self.opts.deterministic, self.opts.workers, self.opts.seed)  # what budgets count
        self._greedy = GreedyPasses(index, self.config, self.opts)
        self._reasons = Reasons(index, self._profile)
        self._greedy_seconds = 0.0  # wall time the windows' greedy passes took (what one greedy run would take)
        self._kube: list[tuple[float, int]] = []  # per window so far, kube's pass alone over it: (seconds, pods)
        self._after = 0  # pods in the windows after the one being decided
        self._total = 0  # pods in all the windows
        self._whole: GreedyRun | None = None
        self._measure_seconds, self._measured_pods = 0.0, 0  # the windows' score measures: time and window pods
        self._executor = Chooser(self.opts.executor, self.opts.workers, self.opts.ray_address)

    def run(self) -> Plan:
        try:
            return self._run()
        finally:
            self._executor.close()

    def _run(self) -> Plan:
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
        windows = cut_windows(self.index, pods, max(1, self.opts.window))
        names = self.index.node_names
        if self.opts.deadline is not None:
            self._clock.deadline = started + self.opts.deadline
        whole = None
        if len(windows) > 1:
            whole = GreedyRun(self._greedy, pods, parallel=self.opts.executor in ("auto", "pool"),
                              kept=plan.placements)
        self._whole, self._total = whole, len(pods)
        try:
            left = self._windows(plan, windows, names, started, whole)
            plan.warnings.extend(unimplemented_warnings(pods))
            whole_check = "not needed"
            if left:
                whole_check = "greedy's run used"
                plan = rest_left_to_greedy(plan, whole.plan(), pods, left)
            elif whole is not None:
                whole_check, measure, reorder = self._whole_check(whole, plan, pods)
                if whole_check != "skipped":
                    plan, self.state = at_least_greedy(self._greedy, self._reasons, self.state, plan, pods,
                                                       whole.result(), measure=measure, reorder=reorder)
            if whole is not None:
                if whole.ended() and plan is not whole.plan() and not self._finishes(0):
                    whole_check = "greedy's run used"  # no time to verify the windows' plan
                    plan = unverified_to_greedy(plan, whole.plan(), pods)
                plan.verified = whole.verdict_for(plan)
        finally:
            if whole is not None:
                whole.close()
        plan.seconds = time.perf_counter() - started
        self._report_deadline(plan, whole_check)
        return plan

    def _whole_check(self, whole: GreedyRun, plan: Plan, pods: list[PodInfo]) -> tuple[str, bool, bool]:
        """(status, time for the score measure, time for the reordered passes) of the comparison with one greedy
        run over every pod under the deadline: "skipped" when that run is not there in time; "pods placed only" when
        it is but this plan's measure (estimated from the windows' measures, else as long as the windows' greedy
        passes) would not end in time; else "done". The reordered passes are two greedy runs."""
        deadline = self._clock.deadline
        if deadline is None:
            return "done", True, True
        if not whole.ready:
            if not whole.forked and time.perf_counter() + self._greedy_seconds > deadline:
                return "skipped", False, False  # run here: one greedy run takes about what the windows' passes took
            if whole.result(timeout=max(0.0, deadline - time.perf_counter())) is None:
                return "skipped", False, False
        left = deadline - time.perf_counter() - self._verify_seconds()
        placed = {p.pod for p in plan.placements if p.node}
        measure = True
        if self.opts.objective == "default" and not plan.evictions and all(p.key in placed for p in pods):
            rate = self._measure_seconds / self._measured_pods if self._measured_pods else None
            measure = (self._greedy_seconds if rate is None else rate * len(pods)) <= left
        return "done" if measure else "pods placed only", measure, 2 * self._greedy_seconds <= left

    def _windows(self, plan: Plan, windows: list[list[PodInfo]], names: list[str], started: float,
                 whole: GreedyRun | None) -> int:
        """Every window decided in turn into `plan` (the run began at `started`), the state moving on with each.
        Under a deadline (`_finishes`): a window is searched only when, after it, greedy passes over the windows
        left and the verification are still estimated to end in time, else it takes greedy's plan on the state the
        earlier ones left (the run is then held to one greedy run over every pod, as any other); when not even
        those passes would end in time and `whole`, one greedy run over every pod, has ended, the windows left are
        not decided (how many is returned): that run's plan is the one whole plan there is in time."""
        modelled: list[float] = []  # wall seconds of the windows decided with a model
        rest = self._total
        for k, wpods in enumerate(windows):
            if whole is not None and whole.ended() and not self._finishes(rest):
                plan.windows.extend(_deadline_window(w, "FALLBACK", [], 0.0) for w in windows[k:])
                return len(windows) - k
            rest -= len(wpods)
            self._after = rest
            spent = self._clock.searched if self.opts.deterministic else time.perf_counter() - started
            remaining = self.opts.time_limit - spent
            if self._clock.past_deadline() or not self._finishes(rest, max(modelled[-3:], default=0.0)):
                window, placed, evictions = self.greedy_window(wpods)
            else:
                began = time.perf_counter()
                window, placed, evictions = self.solve_window(wpods, max(0.05, remaining / (len(windows) - k)))
                if not window.get("deadline"):
                    modelled.append(time.perf_counter() - began)
            self._reasons.fill(self.state, placed)
            plan.windows.append(window)
            plan.placements.extend(placed)
            if self.opts.on_window is not None:
                self.opts.on_window(k + 1, len(windows), sum(1 for p in plan.placements if p.node),
                                    len(plan.placements))
            for victim, node, preemptor, violates in evictions:
                plan.evictions.append(Eviction(victim.key, names[node], preemptor.key, victim.priority, violates))
        return 0

    def _finishes(self, pods: int, extra: float = 0.0) -> bool:
        """No deadline, or the run still ends before it after `extra` seconds more, greedy passes over `pods` more
        pods (at kube's passes' `_rate`; none yet: no estimate, it does) and the verification of the
        plan (`_verify_seconds`), all SLACK times as long as estimated (a run that overshoots loses its windows)."""
        deadline = self._clock.deadline
        if deadline is None:
            return True
        return time.perf_counter() + SLACK * (extra + self._rate() * pods + self._verify_seconds()) < deadline

    def _rate(self) -> float:
        """Seconds per pod of kube's passes over the last three windows (the first ones also warm caches up)."""
        last = self._kube[-3:]
        return sum(s for s, _ in last) / max(1, sum(n for _, n in last))

    def _verify_seconds(self) -> float:
        """How long verifying the plan will take: as long as the fork's verification of greedy's took when it has
        sent it, else a cautious guess, half a greedy pass over every pod (a verifier's replay of the state is of
        that order)."""
        whole = self._whole
        if whole is not None and whole.verify_seconds is not None:
            return whole.verify_seconds
        return 0.5 * self._rate() * self._total

    def _report_deadline(self, plan: Plan, whole_check: str) -> None:
        """The plan's `deadline` field and warning, when the deadline cut a search or decided a window."""
        fallback = [k for k, w in enumerate(plan.windows) if w.get("deadline")]
        cut = [k for k, w in enumerate(plan.windows) if w.get("deadline_cut")]
        if not fallback and not cut and whole_check in ("done", "not needed"):
            return
        plan.deadline = {"seconds": self.opts.deadline, "fallback_windows": fallback, "cut_windows": cut,
                         "whole_run_check": whole_check}
        parts = []
        if cut:
            parts.append(f"it cut the search of window(s) {_ranges(cut)} short (their best plan so far, at least "
                         "greedy's, is kept)")
        if fallback:
            parts.append(f"window(s) {_ranges(fallback)} of {len(plan.windows)} take greedy's plan (deadline "
                         "fallback)")
        if whole_check == "skipped":
            parts.append("the run was not compared with one greedy run over all its pods (no time left)")
        elif whole_check == "pods placed only":
            parts.append("the run was compared with one greedy run over all its pods on pods placed only (no time "
                         "left for the score measure)")
        when = ("passed" if plan.seconds >= self.opts.deadline
                else f"was near (the decision ended at {plan.seconds:.1f} s)")
        plan.warnings.append(f"the {self.opts.deadline:g} s {DEADLINE_WORDS} {when}: " + "; ".join(parts)
                             + "; this plan is not the deterministic one (rerun with a longer --deadline for it)")

    def greedy_window(self, pods: list[PodInfo]) -> tuple[dict[str, Any], list[Placement], list]:
        """A window the deadline leaves no time to search: greedy's plan (kube's, preemption included) on the state
        earlier windows left, with no other pass and no model; the state moves on to it."""
        started = time.perf_counter()
        preemption = any(self._profile(p).preemption for p in pods)
        self.state, attempts = self._greedy.run(self.state, pods, preemption=preemption)
        evictions = [(victim, attempts[p.idx].evicted_from[victim.idx], p, violates) for p in pods
                     for victim, violates in attempts[p.idx].evictions]
        placed = attempted(self.index, pods, attempts)
        seconds = time.perf_counter() - started
        self._greedy_seconds += seconds
        self._kube.append((seconds, len(pods)))
        return _deadline_window(pods, "FALLBACK", placed, seconds), placed, evictions

    def solve_window(self, pods: list[PodInfo], seconds: float) -> tuple[dict[str, Any], list[Placement], list]:
        started = time.perf_counter()
        base = self._greedy.baselines(self.state, pods)
        self._greedy_seconds += time.perf_counter() - started
        self._kube.append((base.kube_seconds, len(pods)))
        if not self._finishes(self._after):  # no time for a model: the best greedy pass stands
            fallback = base.fallback_attempts
            fb_net = net_vectors(pods, ({i for i, a in fallback.items() if a.node is not None},
                                        [v.priority for a in fallback.values() for v, _ in a.evictions]))[0]
            status, placed, evictions = self._greedy_plan(pods, base, fb_net)
            return _deadline_window(pods, status, placed, time.perf_counter() - started), placed, evictions
        if self.opts.on_progress is not None:  # from here on the window always has a plan as good as greedy's
            n_placed = float(base.greedy_placed)
            self.opts.on_progress(time.perf_counter() - started, n_placed, n_placed, INCUMBENT)
        w = self._setup(pods, base)
        solver = ComponentSolver(self.index, self.state, self._profile, self.opts, self._clock, base.hint_state,
                                 self._executor)
        cuts = self._clock.cuts
        solved = solver.solve_all(w, seconds if self.opts.deterministic
                                  else max(0.05, seconds - (time.perf_counter() - started)))
        nodes = assign(self.index, w.groups, solved.counts)
        evicted = [self.index.pods[i] for i in sorted(solved.counts.get(EVICTED, {}))]
        cp, fb = standings(self.index, self.state, pods, nodes, evicted, w.victims, base.fallback_attempts)
        decided, measures = None, {}
        if solved.ok and cp.net == fb.net and cp.rank < fb.rank:
            solved.ok = False  # CP-SAT does worse for no more pods: greedy's plan stands
        if solved.ok and not lex_less(cp.net, fb.net):
            decided, measures = self._adopt(pods, w, solved, nodes, evicted, base,
                                            tied=cp.net == fb.net and cp.rank == fb.rank)
        if decided is None:  # no CP-SAT plan as good as greedy's
            decided = self._greedy_plan(pods, base, fb.net)
        status, placed, evictions = decided
        window = {"pods": len(pods), "groups": len(w.groups), "components": len(w.comps), "status": status,
                  "objective": solved.objective, "bound": solved.bound, "greedy_objective": solved.greedy_objective,
                  "seconds": round(time.perf_counter() - started, 4), "stages": solved.stages}
        if measures:
            window["measure"] = measures
        if self._clock.cuts > cuts:
            window["deadline_cut"] = True
        return window, placed, evictions

    def _setup(self, pods: list[PodInfo], base: Baselines) -> WindowModels:
        """Groups, hint and reference counts, candidate victims, domains, scopes and components; greedy's preemption
        plan, when the model can represent it, is the reference, and the hint when it places more."""
        groups = group_pods(self.index, pods)
        hint = greedy_counts(groups, base.hint_state)
        reference = hint if base.greedy_state is base.hint_state else greedy_counts(groups, base.greedy_state)
        volume_hint = {k: pv for a in base.hint_attempts.values() for k, pv in a.volume_bindings.items()}
        encoded = frozenset(name for name, e in encodings().items() if e.score is not None)
        victims = window_victims(self.state, groups, self._profile, self.opts.objective, base.greedy_placed)
        domains = window_domains(self.state, groups, self._profile, encoded, victims)
        if victims is not None and representable(base.fallback_attempts, victims):
            fallback = greedy_counts(groups, base.fallback_state) | {
                EVICTED: {v.idx: 1 for a in base.fallback_attempts.values() for v, _ in a.evictions}}
            if lex_less(attempts_vector(pods, base.hint_attempts), attempts_vector(pods, base.fallback_attempts)):
                hint = fallback
            reference = fallback
        scope = {g.gid: group_scope(g, domains[g.gid], {**hint[g.gid], **reference[g.gid]}, self.opts.scope,
                                    self.opts.objective) for g in groups}
        comps = components(self.index, groups, scope, GroupMatcher(self.index, groups), victims)
        freed = None if victims is None else {g.gid: freed_on(victims, self.index, g.priority) for g in groups
                                              if may_preempt(g.rep, self._profile(g.rep))}
        return WindowModels(groups, hint, reference, volume_hint, victims, domains, scope, comps, freed)

    def _adopt(self, pods: list[PodInfo], w: WindowModels, solved: ComponentResult, nodes: dict[int, int | None],
               evicted: list[PodInfo], base: Baselines, tied: bool) -> tuple[Decided | None, dict[str, Any]]:
        """CP-SAT's plan applied to the state, with the score measure of both plans; when the plans tie on every
        earlier rank (and on the goal) and greedy's measures higher, the state is restored and greedy's plan
        stands (None)."""
        before, self.state = self.state, self.state.fork()
        for victim in evicted:
            self.state.forget(victim)
        bindings: dict[int, dict[str, str]] = {}
        for p in pods:  # queue order: the first pod of a claim reports its binding, as in greedy plans
            if nodes[p.idx] is not None:
                self.state.assume(p, nodes[p.idx])
                bindings[p.idx] = reserve(self.state, self._profile, p, nodes[p.idx], solved.volumes)
        evictions = preemptors(pods, nodes, evicted, w.victims, self._profile)
        placed = placements(self.index, pods, nodes, {}, bindings, {n for _, n, _, _ in evictions})
        fallback = base.fallback_attempts
        for p in pods:  # kube's message ends with what PostFilter (preemption) found: greedy's
            if nodes[p.idx] is None and fallback[p.idx].node is None and fallback[p.idx].post_filter:
                self._reasons.post_filter[p.key] = fallback[p.idx].post_filter
        timed = time.perf_counter()
        measures = window_measures(self.config, self.state, w.groups, nodes, fallback, base.fallback_state, before)
        self._measure_seconds += time.perf_counter() - timed
        self._measured_pods += len(pods)
        goal_tied = self.opts.objective == "default" or solved.objective == solved.greedy_objective
        if tied and goal_tied and measures["cpsat"] < measures["greedy"]:
            self.state = before  # greedy's plan scores better on the final state: it stands
            measures["kept"] = "greedy (its score measure is higher)"
            return None, measures
        return ("OPTIMAL" if solved.optimal else "FEASIBLE", placed, evictions), measures

    def _greedy_plan(self, pods: list[PodInfo], base: Baselines, fb_net: Vector) -> Decided:
        """The reordered greedy pass the search started from when it beats greedy (a plan kube's filters accepted
        pod by pod; FEASIBLE), else greedy's plan (FALLBACK); the state becomes that plan's."""
        fallback, hint = base.fallback_attempts, base.hint_attempts
        fb_victims = [v.priority for a in fallback.values() for v, _ in a.evictions]
        hint_net = net_vectors(pods, (set(), fb_victims),
                               extra=[{i for i, a in hint.items() if a.node is not None}])[-1]
        if base.hint_state is not base.greedy_state and lex_less(fb_net, hint_net):
            self.state, chosen, status = base.hint_state, hint, "FEASIBLE"
        else:
            self.state, chosen, status = base.fallback_state, fallback, "FALLBACK"
        evictions = [(victim, chosen[p.idx].evicted_from[victim.idx], p, violates) for p in pods
                     for victim, violates in chosen[p.idx].evictions]
        return status, attempted(self.index, pods, chosen), evictions


def _deadline_window(pods: list[PodInfo], status: str, placed: list[Placement], seconds: float) -> dict[str, Any]:
    """A window the deadline fallback decided: no model, so it has no objective and no bound (None, never a bound
    the search did not prove)."""
    return {"pods": len(pods), "groups": 0, "components": 0, "status": status, "objective": None, "bound": None,
            "greedy_objective": None, "seconds": round(seconds, 4), "stages": [], "deadline": True}


def _ranges(ks: list[int]) -> str:
    """0-based window numbers as 1-based ranges: [0, 1, 2, 5] → '1-3, 6'."""
    out, start = [], None
    for i, k in enumerate(ks):
        if start is None:
            start = k
        if i + 1 == len(ks) or ks[i + 1] != k + 1:
            out.append(f"{start + 1}" if start == k else f"{start + 1}-{k + 1}")
            start = None
    return ", ".join(out)


def schedule_cpsat(index: ClusterIndex, config: SchedulerConfig | None = None,
                   options: CpsatOptions | None = None) -> Plan:
    return CpsatScheduler(index, config, options).run()
