"""The run over windows: pods cut into windows in queue order (`cut_windows`), and the whole run held to greedy's.

Each window is compared with greedy on the state earlier windows left, which cannot guarantee the whole run:
earlier choices can leave less room, or a worse final state, later. So a multi-window plan is also compared with
one greedy run over every pod from the initial state (`at_least_greedy`): on pods placed less pods evicted,
lexicographically by priority, and, when every pod is placed either way, on the score measure
(`measured_against_greedy`). That greedy run and its measure (`GreedyRun`) are computed in a forked process while
the windows are solved, when the machine has a core to spare.
"""

from __future__ import annotations

import logging
import multiprocessing
import sys
import time

from kplace.models.index import ClusterIndex, PodInfo
from kplace.models.plan import Placement, Plan

from ..executors import usable_cores
from ..framework.state import ClusterState
from ..measure import ScoreMeasure, plan_measure
from ..verify import verify_plan
from .assemble import Reasons, attempted
from .baselines import GreedyPasses
from .ranking import Vector, lex_less, net_vectors

log = logging.getLogger(__name__)


def cut_windows(index: ClusterIndex, pods: list[PodInfo], size: int) -> list[list[PodInfo]]:
    """`pods` cut into windows of `size` in queue order, a gang's pods all in the window of its first (a window
    may then hold more than `size`)."""
    gang_of = index.gang_of
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


class GreedyRun:
    """One greedy run over `pods` from the initial state and, when it places every pod and evicts none (default
    objective), its score measure: started at once in a forked process when `parallel` (Linux, two usable cores),
    which sends the plan as soon as it has it, then, under a deadline (where the time saved counts), the
    verifier's violations of the plan the decision would commit with it (`committed`: `kept`, the placements of
    the pods outside `pods`, then greedy's), then the measure; else run here when first asked for (and not
    verified here: the caller verifies what it commits)."""

    def __init__(self, passes: GreedyPasses, pods: list[PodInfo], parallel: bool,
                 kept: list[Placement] = ()) -> None:
        self._passes, self._pods, self._kept = passes, pods, list(kept)
        self._plan: Plan | None = None
        self._verdict: list | None = None
        self.verify_seconds: float | None = None  # how long the fork's verification took, once it sent its verdict
        self._verified: tuple | None = None  # what the verdict is of (`_as_verified`)
        self._verifies = passes.opts.deadline is not None  # whether the fork sends a verdict
        self._measure: ScoreMeasure | None = None
        self._measured = False
        self._conn = self._proc = None
        self.forked = parallel and sys.platform == "linux" and usable_cores() >= 2
        if self.forked:
            ctx = multiprocessing.get_context("fork")  # the index is shared copy-on-write, not pickled
            self._conn, child = ctx.Pipe(duplex=False)
            self._proc = ctx.Process(target=_run_in_child, args=(passes, pods, self._kept, self._verifies, child),
                                     daemon=True)
            self._proc.start()
            child.close()

    @property
    def ready(self) -> bool:
        """The plan and its measure are both here."""
        return self._measured

    def ended(self) -> bool:
        """The run's plan is here (without waiting for it; run here only if the fork failed); its measure may not
        be."""
        return (self.forked or self._plan is not None) and self.plan(timeout=0) is not None

    def plan(self, timeout: float | None = None) -> Plan | None:
        """The run's plan; None when the forked run has not sent it within `timeout` seconds."""
        if self._plan is None and self._proc is not None:
            self._receive(timeout)
        if self._plan is None and self._proc is None:
            self._plan = self._passes.whole(self._pods)
        return self._plan

    def verdict_for(self, plan: Plan) -> list | None:
        """The forked run's violations of `plan` when `plan` reads as the one it verifies (its plan committed as it
        is), waited for (the fork began verifying before this could); else None, and when the fork failed."""
        if self._verified is None or self._verified != _as_verified(plan):
            return None
        if self._verdict is None and self._proc is not None:
            self._receive(None)
        return self._verdict

    def result(self, timeout: float | None = None) -> tuple[Plan, ScoreMeasure | None] | None:
        """(plan, measure or None); None when the forked run has not sent them within `timeout` seconds."""
        until = None if timeout is None else time.perf_counter() + timeout
        if self.plan(timeout) is None:
            return None
        while not self._measured and self._proc is not None:
            if not self._receive(None if until is None else max(0.0, until - time.perf_counter())):
                break
        if not self._measured and self._proc is None:
            self._measure, self._measured = _measure(self._passes, self._plan), True
        return (self._plan, self._measure) if self._measured else None

    def _receive(self, timeout: float | None) -> bool:
        """The forked run's next message (its plan, its verdict if it verifies, then its measure), if it comes
        within `timeout` seconds (whether one came); the process is closed once it has sent them all, or failed
        (what is missing is then computed here, but for the verdict)."""
        if not self._conn.poll(timeout):
            return False
        try:
            got = self._conn.recv()
        except EOFError:
            got = RuntimeError(f"the greedy run's process ended with exit code {self._proc.exitcode}")
        if isinstance(got, BaseException):
            log.warning("the forked greedy run failed (%s); running it here", got)
            self.close()
        elif self._plan is None:
            self._plan = got
            if self._verifies:  # what the verdict to come is of, before anything here changes the plan
                self._verified = _as_verified(committed(self._kept, got))
        elif self._verified is not None and self._verdict is None:
            self._verdict, self.verify_seconds = got
        else:
            self._measure, self._measured = got, True
            self.close()
        return True

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.terminate()
            self._proc.join()
            self._conn.close()
            self._proc = None


def _measure(passes: GreedyPasses, greedy: Plan) -> ScoreMeasure | None:
    """Greedy's score measure, needed when it places every pod and evicts none (default objective), else None."""
    if passes.opts.objective != "default" or not places_all(greedy):
        return None
    return plan_measure(passes.index, passes.config, greedy)


def committed(kept: list[Placement], greedy: Plan) -> Plan:
    """The plan a decision commits when it takes greedy's whole run as it is (`_greedy_instead`), as the verifier
    reads it: the placements kept for the pods outside the run, then greedy's, and greedy's evictions."""
    return Plan(engine="cpsat", placements=[*kept, *greedy.placements], evictions=greedy.evictions)


def _as_verified(plan: Plan) -> tuple:
    """What the verifier reads of a plan, as values (its objects may change later)."""
    return (tuple((p.pod, p.node, p.reason, p.priority, p.nominated, tuple(sorted(p.volume_bindings.items())))
                  for p in plan.placements),
            tuple((e.pod, e.node, e.preemptor, e.priority, e.pdb_violation) for e in plan.evictions),
            tuple((m.pod, m.from_node, m.to, m.wave, tuple(m.admits)) for m in plan.moves))


def _run_in_child(passes: GreedyPasses, pods: list[PodInfo], kept: list[Placement], verifies: bool, conn) -> None:
    try:
        greedy = passes.whole(pods)
        conn.send(greedy)
        if verifies:
            started = time.perf_counter()
            verdict = verify_plan(passes.index, committed(kept, greedy), passes.opts.allow_pdb_violations)
            conn.send((verdict, time.perf_counter() - started))
        conn.send(_measure(passes, greedy))
    except BaseException as exc:  # the parent runs what is missing itself
        conn.send(RuntimeError(f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def at_least_greedy(passes: GreedyPasses, reasons: Reasons, state: ClusterState, plan: Plan, pods: list[PodInfo],
                    whole: tuple[Plan, ScoreMeasure | None], *, measure: bool = True, reorder: bool = True
                    ) -> tuple[Plan, ClusterState]:
    """The multi-window `plan` (ending in `state`) against one greedy run over every pod and, when that leaves
    pods out, the reordered passes over every pod (`GreedyPasses.reordered`, unless `reorder` is False: no time
    for them). The plan placing most, lexicographically by priority, is kept: the windows', else greedy's (every
    window then says FALLBACK), else a pass's that beats greedy (every window says FEASIBLE; a warning says so).
    Windows that place every pod need no comparison on pods placed: no plan places more; they are compared on the
    score measure, or, when `measure` is False (no time for it), give way to greedy's plan when it places every pod
    too. `whole`: `GreedyRun.result()`. (plan, the state it ends in)."""
    index = passes.index
    placed = {p.pod for p in plan.placements if p.node}
    if all(p.key in placed for p in pods):
        return measured_against_greedy(passes, plan, pods, whole, measure), state
    greedy = whole[0]
    keys = {p.key for p in pods}
    victims = ([e.priority for e in plan.evictions], [e.priority for e in greedy.evictions])
    mine, theirs = net_vectors(pods, ({p.idx for p in pods if p.key in placed}, victims[0]),
                               ({index.pod_by_key[p.pod].idx for p in greedy.placements if p.node}, victims[1]))
    best = max(mine, theirs, key=lambda vec: [c for _, c in vec])
    if reorder and any(p.node is None for p in greedy.placements) and sum(c for _, c in best) < len(pods):
        chosen = _reordered_beating(passes, pods, best, victims)
        if chosen is not None:
            state, attempts = chosen
            placements = attempted(index, pods, attempts)
            reasons.fill(state, placements)
            return _pass_instead(plan, keys, placements), state
    if not lex_less(mine, theirs):
        return plan, state
    return _greedy_instead(plan, greedy, keys, "the windows together placed fewer pods than one greedy run over all "
                           "of them; the greedy plan is used"), state


def _reordered_beating(passes: GreedyPasses, pods: list[PodInfo], best: Vector, victims: tuple[list[int], list[int]]
                       ) -> tuple[ClusterState, dict] | None:
    """The first reordered pass over every pod from the initial state that beats `best` (and any pass before it)."""
    chosen = None
    for state, attempts in passes.reordered(ClusterState(passes.index), pods, short=True):
        vec = net_vectors(pods, (set(), victims[0]), (set(), victims[1]),
                          extra=[{i for i, a in attempts.items() if a.node is not None}])[-1]
        if lex_less(best, vec):
            best, chosen = vec, (state, attempts)
    return chosen


def measured_against_greedy(passes: GreedyPasses, plan: Plan, pods: list[PodInfo],
                            whole: tuple[Plan, ScoreMeasure | None], measure: bool = True) -> Plan:
    """A multi-window run that places every pod (default objective, no evictions) against one greedy run over all
    its pods on the score measure (`solver.measure`): greedy's plan is used when it places every pod too, evicts
    nothing and measures higher, or, with no time for the measure (`measure` False), at all."""
    greedy, theirs = whole
    if passes.opts.objective != "default" or plan.evictions or theirs is None:
        return plan
    if not measure:
        return _greedy_instead(plan, greedy, {p.key for p in pods}, "the deadline left no time to compare the "
                               "windows' plan with one greedy run over all their pods on the score measure; the "
                               "greedy plan, which places every pod too, is used")
    if plan_measure(passes.index, passes.config, plan).total >= theirs.total:
        return plan
    return _greedy_instead(plan, greedy, {p.key for p in pods}, "one greedy run over all the windows' pods scores "
                           "higher on the score measure (every pod placed either way); the greedy plan is used")


def places_all(plan: Plan) -> bool:
    """The plan places every pod and evicts none."""
    return not plan.evictions and all(p.node for p in plan.placements)


def rest_left_to_greedy(plan: Plan, greedy: Plan, pods: list[PodInfo], left: int) -> Plan:
    """The deadline leaves no time for the `left` windows undecided, not even as greedy passes, and one greedy run
    over every pod (`greedy`) has ended: its plan, the one whole plan there is in time (the windows decided so far
    are not)."""
    return _greedy_instead(plan, greedy, {p.key for p in pods}, f"the deadline left no time for the {left} "
                           "window(s) left, and one greedy run over all the pods had ended; the greedy plan is used")


def unverified_to_greedy(plan: Plan, greedy: Plan, pods: list[PodInfo]) -> Plan:
    """The deadline leaves no time to verify the windows' plan, and one greedy run over every pod (`greedy`), which
    the fork verified, has ended: its plan."""
    return _greedy_instead(plan, greedy, {p.key for p in pods}, "the deadline left no time to verify the windows' "
                           "plan; one greedy run over all the pods, verified while the windows were decided, is used")


def _pass_instead(plan: Plan, keys: set[str], placements: list[Placement]) -> Plan:
    """A reordered pass's `placements` for the pods of `keys` in place of `plan`'s (every window says FEASIBLE)."""
    return Plan(engine="cpsat", placements=[*(p for p in plan.placements if p.pod not in keys), *placements],
                windows=[{**w, "status": "FEASIBLE"} for w in plan.windows],
                warnings=[*plan.warnings, "the windows together placed fewer pods than a greedy pass over all of "
                          "them taking the pods in another order (smallest or biggest first); that pass's plan is "
                          "used"])


def _greedy_instead(plan: Plan, greedy: Plan, keys: set[str], warning: str) -> Plan:
    """`greedy`'s plan for the pods of `keys` in place of `plan`'s (every window says FALLBACK)."""
    greedy.engine = "cpsat"
    greedy.placements = [*(p for p in plan.placements if p.pod not in keys), *greedy.placements]
    greedy.windows = [{**w, "status": "FALLBACK"} for w in plan.windows]
    greedy.warnings = [*plan.warnings, warning]
    return greedy
