"""The wall-clock deadline for a whole CP-SAT decision: once it passes, no further search runs and the windows left
take greedy's plan; the plan is verified, places at least what greedy places per priority, and says so."""

from __future__ import annotations

import json
import os
import time

import pytest
from click.testing import CliRunner
from kplace.models.index import ClusterIndex
from kplace.models.plan import Plan
from kplace.solver.cli import main
from kplace.solver.cpsat import CpsatOptions, schedule_cpsat
from kplace.solver.cpsat.clock import Cut, SearchClock
from kplace.solver.cpsat.ranking import lex_less, net_vectors
from kplace.solver.framework.config import default_config
from kplace.solver.greedy import schedule_greedy
from kplace.solver.testing import build_snapshot, hard_model, node, pod
from kplace.solver.verify import verify_plan

HOST = "kubernetes.io/hostname"


def _state(n_nodes: int = 12, n_pods: int = 60) -> ClusterIndex:
    """Replica groups with hostname anti-affinity and uneven requests on uneven nodes, in several windows."""
    nodes = [node(f"n{i:02d}", cpu=str(2 + i % 3), memory="8Gi") for i in range(n_nodes)]
    pods = []
    for i in range(n_pods):
        app = f"a{i % 6}"
        spec = None
        if i % 6 < 3:
            spec = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": HOST}]}}}
        pods.append(pod(f"p{i:03d}", cpu=f"{250 + 150 * (i % 4)}m", labels={"app": app}, spec=spec))
    return ClusterIndex(build_snapshot(nodes + pods))


def _net(index: ClusterIndex, plan):
    pods = index.pending
    placed = {index.pod_by_key[p.pod].idx for p in plan.placements if p.node}
    return net_vectors(pods, (placed, [e.priority for e in plan.evictions]))[0]


def test_a_deadline_passed_before_the_first_window_gives_greedys_plan_verified_and_says_so():
    index = _state()
    plan = schedule_cpsat(index, default_config(), CpsatOptions(window=10, time_limit=5, deadline=0.0))
    greedy = schedule_greedy(index, default_config())
    assert verify_plan(index, plan) == []
    assert plan.assignment() == greedy.assignment()
    assert plan.deadline["fallback_windows"] == list(range(len(plan.windows)))
    assert all(w["status"] == "FALLBACK" and w["deadline"] for w in plan.windows)
    assert any("deadline" in w and "greedy's plan" in w for w in plan.warnings)
    assert "deadline" in plan.to_dict()


def test_a_deadline_passing_after_the_first_window_leaves_that_windows_search_and_greedy_for_the_rest(monkeypatch):
    """The wall clock jumps far ahead once window 1 is decided: windows 2.. are the deadline fallback."""
    index = _state()
    jump = [0.0]
    real = time.perf_counter
    monkeypatch.setattr(time, "perf_counter", lambda: real() + jump[0])

    def on_window(done, total, placed, decided):
        jump[0] = 1e6

    opts = CpsatOptions(window=10, time_limit=5, deadline=100.0, on_window=on_window, executor="inprocess")
    plan = schedule_cpsat(index, default_config(), opts)
    greedy = schedule_greedy(index, default_config())
    assert verify_plan(index, plan) == []
    assert not lex_less(_net(index, plan), _net(index, greedy))
    assert plan.deadline["fallback_windows"] == list(range(1, len(plan.windows)))
    assert plan.deadline["whole_run_check"] == "skipped"
    assert not plan.windows[0].get("deadline")


def _jumping_clock_and_a_waited_greedy_run(monkeypatch, waited=("plan", "result")) -> list[float]:
    """perf_counter plus jump[0] (the test sets it to leap past the deadline), and the whole-run greedy run's
    `waited` answers always waited for, as if they had come in time: the jump, to set."""
    from kplace.solver.cpsat import whole_run

    jump = [0.0]
    real = time.perf_counter
    monkeypatch.setattr(time, "perf_counter", lambda: real() + jump[0])
    for name in waited:
        real_call = getattr(whole_run.GreedyRun, name)
        monkeypatch.setattr(whole_run.GreedyRun, name, lambda self, timeout=None, call=real_call: call(self, None))
    return jump


def test_a_deadline_leaving_no_time_for_the_score_measure_gives_the_whole_run_greedy_plan_when_it_places_as_many(
        monkeypatch):
    """The forked greedy run is there when the windows end, but the clock has jumped past the deadline: the windows'
    plan is not measured, and greedy's, placing every pod too, is committed."""
    index, jump = _state(12, 30), _jumping_clock_and_a_waited_greedy_run(monkeypatch)

    def on_window(done, total, placed, decided):
        if done == total:
            jump[0] = 1e6

    opts = CpsatOptions(window=10, time_limit=5, deadline=100.0, on_window=on_window)
    plan = schedule_cpsat(index, default_config(), opts)
    greedy = schedule_greedy(index, default_config())
    assert all(p.node for p in greedy.placements)
    assert plan.assignment() == greedy.assignment()
    assert plan.deadline["whole_run_check"] == "pods placed only"
    assert any("no time to compare" in w for w in plan.warnings)
    assert verify_plan(index, plan) == []


def test_a_run_the_deadline_never_reaches_is_the_deterministic_plan():
    index = _state()
    base = schedule_cpsat(index, default_config(), CpsatOptions(window=20, time_limit=1))
    timed = schedule_cpsat(index, default_config(), CpsatOptions(window=20, time_limit=1, deadline=600.0))
    assert timed.assignment() == base.assignment()
    assert timed.deadline is None and base.deadline is None


def test_a_long_deterministic_budget_still_ends_near_a_short_deadline():
    """60 deterministic seconds of search asked, a 2 s wall deadline: the decision ends within about it (the last
    greedy windows and the assembly after it), and a run that ends without a deadline report ended before it."""
    index = _state(60, 600)
    started = time.perf_counter()
    plan = schedule_cpsat(index, default_config(), CpsatOptions(window=100, time_limit=60, deadline=2.0))
    elapsed = time.perf_counter() - started
    assert verify_plan(index, plan) == []
    assert elapsed < 2.0 + 2.0, elapsed
    assert plan.deadline is not None or elapsed < 2.0
    if plan.deadline is not None:
        assert plan.deadline["cut_windows"] or plan.deadline["fallback_windows"]


def test_a_search_running_when_the_deadline_passes_stops_there_and_says_the_deadline_cut_it():
    model = hard_model()
    clock = SearchClock(deadline=time.perf_counter() + 0.5)
    started = time.perf_counter()
    _, cut = clock.solve(clock.solver(1000.0), model)
    assert cut == Cut.DEADLINE and clock.cuts == 1
    assert time.perf_counter() - started < 2.0


def test_schedule_reports_the_deadline_in_its_json_and_its_table(tmp_path):
    index_items = [node(f"n{i}", cpu="4") for i in range(4)] + [pod(f"p{i}", cpu="500m") for i in range(12)]
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": index_items}))
    runner = CliRunner()
    out = runner.invoke(main, ["schedule", str(state), "--window", "4", "--deadline", "0.000001", "-o", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["deadline"]["fallback_windows"] == [0, 1, 2]
    assert all(w["bound"] is None and w["objective"] is None for w in data["windows"])  # no model, no bound
    assert data["summary"]["placed"] == 12
    table = runner.invoke(main, ["schedule", str(state), "--window", "4", "--deadline", "0.000001"])
    assert "deadline" in table.output and "greedy's plan" in table.output
    none = runner.invoke(main, ["schedule", str(state), "--window", "4", "--deadline", "0", "-o", "json"])
    assert "deadline" not in json.loads(none.stdout)


def test_schedule_in_a_machine_format_also_prints_the_deadline_warning_on_stderr(tmp_path):
    items = [node(f"n{i}", cpu="4") for i in range(4)] + [pod(f"p{i}", cpu="500m") for i in range(12)]
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    runner = CliRunner()
    for fmt in ("json", "yaml", "name"):
        cut = runner.invoke(main, ["schedule", str(state), "--window", "4", "--deadline", "0.000001", "-o", fmt])
        assert cut.exit_code == 0, cut.output
        assert "kplace: warning: the 1e-06 s deadline for the decision passed" in cut.stderr
    assert all(line.startswith("pod/") for line in cut.stdout.splitlines())  # -o name: stdout keeps the names only
    quiet = runner.invoke(main, ["schedule", str(state), "--window", "4", "--deadline", "0", "-o", "json"])
    assert quiet.stderr == ""


def test_a_run_the_deadline_decided_without_a_model_reports_no_bound_and_no_gap():
    from kplace.solver.compare.metrics import solver_metrics

    index = _state()
    plan = schedule_cpsat(index, default_config(), CpsatOptions(window=20, time_limit=5, deadline=0.0))
    s = solver_metrics(plan)
    assert s["unmodelled"] == len(plan.windows) and s["bound"] is None and s["gap"] is None


def test_windows_left_when_the_deadline_passes_are_not_decided_once_one_greedy_run_has_placed_every_pod(monkeypatch):
    index, jump = _state(12, 30), _jumping_clock_and_a_waited_greedy_run(monkeypatch)
    decided = []

    def on_window(done, total, placed, decided_pods):
        decided.append(done)
        jump[0] = 1e6

    opts = CpsatOptions(window=10, time_limit=5, deadline=100.0, on_window=on_window)
    plan = schedule_cpsat(index, default_config(), opts)
    assert decided == [1]
    assert plan.assignment() == schedule_greedy(index, default_config()).assignment()
    assert plan.deadline["whole_run_check"] == "greedy's run used"
    assert plan.deadline["fallback_windows"] == [1, 2]
    assert any("no time for the 2 window(s) left" in w for w in plan.warnings)
    assert verify_plan(index, plan) == []


@pytest.mark.parametrize("first_status", ["FALLBACK", "FEASIBLE"])
def test_past_the_deadline_the_ended_greedy_run_is_the_plan_though_it_leaves_pods_out(monkeypatch, first_status):
    """An overloaded state (greedy leaves pods out): the first window is decided (as greedy's plan, or as one that
    beat it), then the deadline passes; the windows left are not decided, since the deadline is for the whole
    decision, and the forked run's plan, kube's own and the one whole plan there is, is used."""
    from kplace.solver.cpsat import window as window_mod

    index, jump = _state(4, 60), _jumping_clock_and_a_waited_greedy_run(monkeypatch)
    real_solve = window_mod.CpsatScheduler.solve_window
    monkeypatch.setattr(window_mod.CpsatScheduler, "solve_window", lambda self, pods, seconds: (
        lambda w: ({**w[0], "status": first_status}, *w[1:]))(real_solve(self, pods, seconds)))
    decided = []

    def on_window(done, total, placed, decided_pods):
        decided.append(done)
        jump[0] = 1e6

    opts = CpsatOptions(window=10, time_limit=5, deadline=100.0, on_window=on_window)
    plan = schedule_cpsat(index, default_config(), opts)
    greedy = schedule_greedy(index, default_config())
    assert not all(p.node for p in greedy.placements)
    assert decided == [1] and all(w["status"] == "FALLBACK" for w in plan.windows)
    assert plan.deadline["whole_run_check"] == "greedy's run used"
    assert any("one greedy run over all the pods had ended" in w for w in plan.warnings)
    assert plan.assignment() == greedy.assignment()
    assert verify_plan(index, plan) == []


def test_past_the_deadline_the_forked_greedy_runs_plan_ends_the_windows_before_its_score_measure_arrives(monkeypatch):
    """The forked run sends its plan as soon as it has it: a score measure that never comes (here one that sleeps
    in the child) does not keep the windows left from giving way to that plan."""
    from kplace.solver.cpsat import whole_run
    from kplace.solver.executors import usable_cores

    if usable_cores() < 2:
        pytest.skip("the greedy run is forked only with two usable cores")
    index, jump = _state(12, 30), _jumping_clock_and_a_waited_greedy_run(monkeypatch, waited=("plan",))
    parent, real_measure = os.getpid(), whole_run._measure
    monkeypatch.setattr(whole_run, "_measure", lambda passes, greedy: (
        time.sleep(600) if os.getpid() != parent else None, real_measure(passes, greedy))[1])
    decided = []

    def on_window(done, total, placed, decided_pods):
        decided.append(done)
        jump[0] = 1e6

    started = time.monotonic()  # not the clock the test leaps
    opts = CpsatOptions(window=10, time_limit=5, deadline=100.0, on_window=on_window, executor="auto")
    plan = schedule_cpsat(index, default_config(), opts)
    assert time.monotonic() - started < 120
    assert decided == [1]
    assert plan.deadline["whole_run_check"] == "greedy's run used"
    assert plan.assignment() == schedule_greedy(index, default_config()).assignment()
    assert verify_plan(index, plan) == []


def _past_the_deadline_after_the_first_window(monkeypatch) -> CpsatOptions:
    """The clock leaps past the deadline once the first window is decided, the forked run always waited for."""
    jump = _jumping_clock_and_a_waited_greedy_run(monkeypatch)

    def on_window(done, total, placed, decided_pods):
        jump[0] = 1e6

    return CpsatOptions(window=10, time_limit=5, deadline=100.0, on_window=on_window, executor="auto")


def test_greedys_whole_plan_committed_as_it_is_carries_the_forked_runs_verdict_and_is_not_verified_again(
        monkeypatch):
    from kplace.solver import schedule
    from kplace.solver.executors import usable_cores

    if usable_cores() < 2:
        pytest.skip("the greedy run is forked only with two usable cores")
    index, opts = _state(4, 60), _past_the_deadline_after_the_first_window(monkeypatch)
    here = []
    monkeypatch.setattr(schedule, "verify_plan", lambda *a, **k: (here.append(1), verify_plan(*a, **k))[1])
    plan = schedule.decide(index, default_config(), "cpsat", cpsat_options=opts)
    assert plan.deadline["whole_run_check"] == "greedy's run used"
    assert plan.verified == [] and here == []
    assert verify_plan(index, plan) == []
    assert "verified" not in plan.to_dict()


def test_a_violation_the_forked_run_finds_in_the_plan_it_verified_rejects_the_committed_plan(monkeypatch):
    """The fork's verifier (here made to object) speaks for the plan committed as greedy's: decide treats it as a
    rejection (a bug), says so, and falls back to a greedy plan it verifies itself."""
    from kplace.solver import schedule
    from kplace.solver.cpsat import whole_run
    from kplace.solver.executors import usable_cores
    from kplace.solver.verify import Violation

    if usable_cores() < 2:
        pytest.skip("the greedy run is forked only with two usable cores")
    index, opts = _state(4, 60), _past_the_deadline_after_the_first_window(monkeypatch)
    parent = os.getpid()
    real_verify = whole_run.verify_plan
    objection = Violation("default/x", "n00", "test", "the fork objects")
    monkeypatch.setattr(whole_run, "verify_plan", lambda *a, **k: (
        [objection] if os.getpid() != parent else real_verify(*a, **k)))
    plan = schedule.decide(index, default_config(), "cpsat", cpsat_options=opts)
    assert any("bug: the verifier rejected the CP-SAT plan" in w and "the fork objects" in w for w in plan.warnings)
    assert plan.verified is None and verify_plan(index, plan) == []


def test_the_forked_runs_verdict_is_only_for_the_plan_it_verified():
    import dataclasses

    from kplace.models.plan import Placement
    from kplace.solver.cpsat.baselines import GreedyPasses
    from kplace.solver.cpsat.whole_run import GreedyRun, committed
    from kplace.solver.executors import usable_cores

    if usable_cores() < 2:
        pytest.skip("the greedy run is forked only with two usable cores")
    index = _state(12, 30)
    first, *rest = index.pending  # the first as if gated: kept unplaced, out of the run
    kept = [Placement(first.key, None, "gated", first.priority)]
    passes = GreedyPasses(index, default_config(), CpsatOptions(deadline=100.0))  # a deadline: the fork verifies
    run = GreedyRun(passes, rest, parallel=True, kept=kept)
    try:
        greedy = run.plan(timeout=None)
        as_committed = committed(kept, greedy)
        one = greedy.placements[0]
        elsewhere = dataclasses.replace(one, node=next(n for n in index.node_names if n != one.node))
        moved = dataclasses.replace(as_committed, placements=[kept[0], elsewhere, *greedy.placements[1:]])
        assert run.verdict_for(moved) is None
        assert run.verdict_for(Plan("cpsat", placements=greedy.placements, evictions=greedy.evictions)) is None
        assert run.verdict_for(as_committed) == []
    finally:
        run.close()


def test_a_deadline_nearer_than_a_window_takes_leaves_the_windows_left_to_greedy_passes_and_the_run_held_to_greedy(
        monkeypatch):
    """The first window takes 60 s (the clock jumps inside it) of a 100 s deadline: the 40 s left cannot hold another
    such window, so the windows left take greedy's plan on the state the first left, before the deadline, and the
    whole run is held to one greedy run over every pod."""
    from kplace.solver.cpsat import window as window_mod

    index, jump = _state(12, 30), _jumping_clock_and_a_waited_greedy_run(monkeypatch)
    real_solve = window_mod.CpsatScheduler.solve_window

    def slow(self, pods, seconds):
        out = real_solve(self, pods, seconds)
        jump[0] += 60.0
        return out

    monkeypatch.setattr(window_mod.CpsatScheduler, "solve_window", slow)
    plan = schedule_cpsat(index, default_config(), CpsatOptions(window=10, time_limit=5, deadline=100.0))
    greedy = schedule_greedy(index, default_config())
    assert plan.seconds < 100
    assert plan.deadline["fallback_windows"] == [1, 2] and not plan.windows[0].get("deadline")
    assert plan.deadline["whole_run_check"] == "done"
    assert any("100 s deadline for the decision was near (the decision ended at 6" in w for w in plan.warnings)
    assert not lex_less(_net(index, plan), _net(index, greedy))
    assert verify_plan(index, plan) == []


def _slow_greedy(monkeypatch, seconds: float) -> None:
    """Kube's pass over each window reads as taking `seconds`: the rate the deadline's estimates use."""
    import dataclasses

    from kplace.solver.cpsat.baselines import GreedyPasses

    real = GreedyPasses.baselines
    monkeypatch.setattr(GreedyPasses, "baselines", lambda self, state, pods: dataclasses.replace(
        real(self, state, pods), kube_seconds=seconds))


def test_when_not_even_greedy_passes_over_the_windows_left_would_end_in_time_the_ended_greedy_run_is_the_plan(
        monkeypatch):
    """Kube's passes read as 100 s a pod: the first window has no time for a model, and once the forked run over
    every pod has ended (here always by the time it is asked) the windows left are not decided."""
    from kplace.solver.cpsat.whole_run import GreedyRun
    from kplace.solver.executors import usable_cores

    if usable_cores() < 2:
        pytest.skip("the greedy run is forked only with two usable cores")
    index = _state(12, 30)
    _slow_greedy(monkeypatch, 1000.0)
    monkeypatch.setattr(GreedyRun, "ended", lambda self: self.plan(None) is not None)
    plan = schedule_cpsat(index, default_config(), CpsatOptions(window=10, time_limit=5, deadline=100.0))
    assert plan.windows[0]["deadline"] and plan.windows[0]["objective"] is None  # no model: no time for one
    assert plan.deadline["whole_run_check"] == "greedy's run used"
    assert plan.deadline["fallback_windows"] == [0, 1, 2]
    assert any("no time for the 2 window(s) left" in w for w in plan.warnings)
    assert plan.assignment() == schedule_greedy(index, default_config()).assignment()
    assert plan.verified == []


def test_a_windows_plan_there_is_no_time_left_to_verify_gives_way_to_the_verified_greedy_run(monkeypatch):
    """The verification would take longer than the time left once the windows are decided (and the windows' plan
    stands against one greedy run, as if it placed more): greedy's whole run, which the fork verified, is
    committed, and the plan says why."""
    from kplace.solver.cpsat import window as window_mod
    from kplace.solver.executors import usable_cores

    if usable_cores() < 2:
        pytest.skip("the greedy run is forked only with two usable cores")
    index = _state(4, 60)
    monkeypatch.setattr(window_mod, "at_least_greedy", lambda passes, reasons, state, plan, *a, **k: (plan, state))
    ended = [False]
    real = window_mod.CpsatScheduler._verify_seconds
    monkeypatch.setattr(window_mod.CpsatScheduler, "_verify_seconds",
                        lambda self: 1e6 if ended[0] else real(self))

    def on_window(done, total, placed, decided):
        ended[0] = done == total

    opts = CpsatOptions(window=10, time_limit=5, deadline=600.0, on_window=on_window)
    plan = schedule_cpsat(index, default_config(), opts)
    greedy = schedule_greedy(index, default_config())
    assert any("no time to verify the windows' plan" in w for w in plan.warnings)
    assert plan.deadline["whole_run_check"] == "greedy's run used"
    assert plan.assignment() == greedy.assignment() and plan.verified == []
