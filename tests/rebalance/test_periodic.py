"""`periodic.run_every`: the runs of `kplace rebalance --every`, their metrics and their pacing (no real sleep)."""

from kplace.models.errors import KplaceError
from kplace.solver.rebalance.periodic import Metrics, run_every


def _plan(moves: int, completed: bool | None = None) -> dict:
    plan = {"moves": [{}] * moves, "after": {"non_empty_nodes": 2, "violations": 0}, "seconds": 1.0}
    if completed is not None:
        plan["apply"] = {"completed": completed}
    return plan


def _count(metrics: Metrics, name: str, **labels) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


def test_a_failing_run_is_counted_and_reported_and_the_next_run_goes_ahead():
    answers = [_plan(3), KplaceError("state.json: Pod default/x: spec: bad"), _plan(1, completed=False)]
    errors, slept = [], []

    def once():
        a = answers.pop(0)
        if isinstance(a, Exception):
            raise a
        return a

    metrics = Metrics(None)
    last = run_every(once, 60.0, 3, metrics, lambda n, exc: errors.append((n, str(exc))), sleep=slept.append,
                     clock=lambda: 0.0)
    assert last == _plan(1, completed=False)
    assert errors == [(2, "state.json: Pod default/x: spec: bad")]
    assert slept == [60.0, 60.0]  # between runs, not after the last
    assert _count(metrics, "kplace_rebalance_runs_total", result="ok") == 1
    assert _count(metrics, "kplace_rebalance_runs_total", result="error") == 1
    assert _count(metrics, "kplace_rebalance_runs_total", result="stopped") == 1
    assert _count(metrics, "kplace_rebalance_moves_total") == 4


def test_the_interval_counts_from_each_run_start_and_a_failed_last_run_returns_none():
    times = iter([0.0, 25.0, 100.0, 170.0])  # run 1 takes 25 s; run 2 takes 70 s, longer than the interval
    slept = []

    def once():
        if len(slept) == 1:
            raise KplaceError("gone")
        return _plan(0)

    last = run_every(once, 60.0, 2, Metrics(None), lambda n, exc: None, sleep=slept.append,
                     clock=lambda: next(times))
    assert slept == [35.0]
    assert last is None
