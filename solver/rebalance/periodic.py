"""The periodic rebalancing job (`kplace rebalance --every`): one run per interval, measured from each run's start,
with Prometheus metrics of the runs on their own registry."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kplace.models.errors import KplaceError


class Metrics:
    """Prometheus counters for the periodic job (its own registry, so tests can make several)."""

    def __init__(self, port: int | None) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

        self.registry = CollectorRegistry()
        self.runs = Counter("kplace_rebalance_runs_total", "Rebalancing runs", ["result"], registry=self.registry)
        self.moves = Counter("kplace_rebalance_moves_total", "Moves proposed", registry=self.registry)
        self.nodes = Gauge("kplace_rebalance_non_empty_nodes", "Non-empty nodes after the last plan",
                           registry=self.registry)
        self.violations = Gauge("kplace_rebalance_violations", "Hard-rule violations after the last plan",
                                registry=self.registry)
        self.seconds = Gauge("kplace_rebalance_last_run_seconds", "Duration of the last run", registry=self.registry)
        if port is not None:
            start_http_server(port, registry=self.registry)

    def record(self, plan: dict[str, Any], result: str) -> None:
        self.runs.labels(result=result).inc()
        self.moves.inc(len(plan["moves"]))
        self.nodes.set(plan["after"]["non_empty_nodes"])
        self.violations.set(plan["after"]["violations"])
        self.seconds.set(plan["seconds"])


def run_result(plan: dict[str, Any]) -> str:
    """"stopped" for a plan whose apply stopped, else "ok"."""
    return "stopped" if "apply" in plan and not plan["apply"]["completed"] else "ok"


def run_every(once: Callable[[], dict[str, Any]], interval: float, runs: int | None, metrics: Metrics,
              on_error: Callable[[int, KplaceError], None], *, sleep: Callable[[float], None] = time.sleep,
              clock: Callable[[], float] = time.monotonic) -> dict[str, Any] | None:
    """Call `once` every `interval` seconds, `runs` times (for ever when None). A run that raises `KplaceError` is
    counted as an error and passed to `on_error` with its number (from 1); the next run goes ahead. Returns the last
    run's plan, None when it failed."""
    n = 0
    while True:
        started = clock()
        n += 1
        try:
            plan = once()
        except KplaceError as exc:
            on_error(n, exc)
            metrics.runs.labels(result="error").inc()
            plan = None
        if plan is not None:
            metrics.record(plan, run_result(plan))
        if runs is not None and n >= runs:
            return plan
        sleep(max(0.0, interval - (clock() - started)))
