"""`kplace compare`: the greedy engine (kube-scheduler) and the CP-SAT engine on the same state, side by side.

    from kplace.solver.compare import CompareOptions, run_compare
    result = run_compare(index, config, CompareOptions(time_limit=10))
    result.data  # {"state", "options", "greedy", "cpsat", "diff"}: JSON-ready

Both plans come from `schedule.decide` (engine + verifier); every figure is computed from the two verified plans
by `metrics`. Each engine runs in a forked child process (Linux), so that its wall time and peak memory are its
own: peak memory is the child's peak resident set size (VmHWM, reset at the start of the run through
/proc/self/clear_refs), which counts the loaded state the child shares with its parent, Python and OR-Tools'
C++ memory alike; `increment_mib` is that peak minus the resident size when the engine started. Without fork
(`isolate=False`, or no /proc) the engines run in this process and memory is tracemalloc's peak of Python
allocations only (OR-Tools' native memory is not seen); `memory.method` says which.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from kplace.models.index import ClusterIndex
from kplace.models.plan import Plan

from ..framework.config import SchedulerConfig
from ..framework.state import ClusterState
from .metrics import SCORE_LIMIT, final_state, pending_shapes, plan_diff, plan_metrics

__all__ = ["CompareOptions", "Comparison", "EngineRun", "KubeBaseline", "run_compare"]

ENGINES = ("greedy", "cpsat")


@dataclass
class CompareOptions:
    time_limit: float = 10.0
    window: int = 1000
    workers: int = 2
    seed: int = 0
    objective: str = "default"
    deterministic: bool = True
    tie_break: str = "order"
    score_limit: int = SCORE_LIMIT
    isolate: bool = True  # each engine in a forked child process (own wall time and peak RSS)
    allow_pdb_violations: bool = False
    allow_moves: int = 0  # CP-SAT may move up to this many running pods (`cpsat.moves`)
    executor: str = "auto"  # where CP-SAT's searches run (`solver.executors`)
    ray_address: str | None = None


@dataclass
class EngineRun:
    plan: Plan
    wall_seconds: float  # decide(): engine + verifier
    memory: dict[str, Any]
    timeline: list[tuple[float, float, float, str]] = field(default_factory=list)  # (s, objective, bound, stage)


@dataclass
class Comparison:
    index: ClusterIndex
    options: CompareOptions
    runs: dict[str, EngineRun]
    states: dict[str, ClusterState]
    data: dict[str, Any]


Progress = Callable[[str, dict[str, Any]], None]  # (engine, event) → None


# --- running one engine ---------------------------------------------------------------------------------------


def _status_kib(field_name: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _cpsat_options(opts: CompareOptions, hook):
    from ..cpsat import CpsatOptions

    return CpsatOptions(window=opts.window, time_limit=opts.time_limit, workers=opts.workers, seed=opts.seed,
                        objective=opts.objective, deterministic=opts.deterministic, tie_break=opts.tie_break,
                        on_progress=hook, allow_pdb_violations=opts.allow_pdb_violations, executor=opts.executor,
                        ray_address=opts.ray_address)


def _decide(index, config, engine, opts, emit) -> tuple[Plan, float, list]:
    from ..schedule import decide

    timeline: list[tuple[float, float, float, str]] = []
    started = time.perf_counter()

    def hook(_seconds: float, objective: float, bound: float, stage: str) -> None:
        ev = (round(time.perf_counter() - started, 4), float(objective), float(bound), stage)
        timeline.append(ev)
        emit(ev)

    cp = _cpsat_options(opts, hook) if engine == "cpsat" else None
    plan = decide(index, config, engine, cpsat_options=cp, tie_break=opts.tie_break, seed=opts.seed,
                  allow_pdb_violations=opts.allow_pdb_violations,
                  allow_moves=opts.allow_moves if engine == "cpsat" else 0)
    return plan, time.perf_counter() - started, timeline


def _child(conn, index, config, engine, opts) -> None:
    try:
        reset = _reset_peak()
        start_kib = _status_kib("VmRSS")
        plan, seconds, timeline = _decide(index, config, engine, opts, lambda ev: conn.send(("progress", ev)))
        peak_kib = _status_kib("VmHWM")
        memory = {"method": "peak RSS of a forked child (VmHWM" + (", reset at start)" if reset else ")"),
                  "peak_mib": round(peak_kib / 1024, 1) if peak_kib else None,
                  "rss_at_start_mib": round(start_kib / 1024, 1) if start_kib else None,
                  "increment_mib": round((peak_kib - start_kib) / 1024, 1) if peak_kib and start_kib else None}
        conn.send(("done", (plan, seconds, memory, timeline)))
    except BaseException as exc:  # sent to the parent, which raises it
        try:
            conn.send(("error", (exc, traceback.format_exc())))
        except Exception:
            conn.send(("error", (RuntimeError(str(exc)), traceback.format_exc())))
    finally:
        conn.close()


def _run_isolated(index, config, engine, opts, progress: Progress | None) -> EngineRun:
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, index, config, engine, opts), daemon=True)
    started = time.perf_counter()
    proc.start()
    child.close()
    result = None
    try:
        while result is None:
            if parent.poll(0.1):
                try:
                    kind, payload = parent.recv()
                except EOFError:
                    break
                if kind == "progress":
                    if progress:
                        progress(engine, {"type": "solution", "elapsed": time.perf_counter() - started,
                                          "event": payload})
                elif kind == "done":
                    result = payload
                else:
                    exc, tb = payload
                    raise exc from RuntimeError(f"in the {engine} child process:\n{tb}")
            elif not proc.is_alive() and not parent.poll(0):
                break
            elif progress:
                progress(engine, {"type": "tick", "elapsed": time.perf_counter() - started})
    finally:
        proc.join(timeout=5)
        if proc.is_alive():
            proc.kill()
        parent.close()
    if result is None:
        raise RuntimeError(f"the {engine} engine's child process died (exit code {proc.exitcode})")
    plan, seconds, memory, timeline = result
    return EngineRun(plan, seconds, memory, [tuple(e) for e in timeline])


def _run_inline(index, config, engine, opts, progress: Progress | None) -> EngineRun:
    import tracemalloc

    tracemalloc.start()
    try:
        emit = (lambda ev: progress(engine, {"type": "solution", "elapsed": ev[0], "event": ev})) if progress \
            else (lambda ev: None)
        plan, seconds, timeline = _decide(index, config, engine, opts, emit)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    memory = {"method": "tracemalloc peak (Python allocations only; OR-Tools native memory not seen)",
              "peak_mib": round(peak / 2**20, 1), "rss_at_start_mib": None, "increment_mib": round(peak / 2**20, 1)}
    return EngineRun(plan, seconds, memory, timeline)


def run_engine(index: ClusterIndex, config: SchedulerConfig, engine: str, opts: CompareOptions,
               progress: Progress | None = None) -> EngineRun:
    if progress:
        progress(engine, {"type": "start", "elapsed": 0.0})
    can_fork = opts.isolate and "fork" in mp.get_all_start_methods() and os.path.exists("/proc/self/status")
    run = (_run_isolated if can_fork else _run_inline)(index, config, engine, opts, progress)
    if progress:
        progress(engine, {"type": "end", "elapsed": run.wall_seconds})
    return run


# --- the comparison -------------------------------------------------------------------------------------------


@dataclass
class KubeBaseline:
    """The real kube-scheduler as a third column: the state files it reads and the configuration file."""

    states: list[str]
    config: str | None = None


def _kube_baseline(index, config, kube: KubeBaseline, runs: dict[str, EngineRun], shapes, opts: CompareOptions,
                   progress: Progress | None) -> dict[str, Any]:
    from ..oracle import oracle_flags, oracle_plan, oracle_version, require_oracle, run_oracle
    from ..verify import verify_plan

    if progress:
        progress("kube", {"type": "start", "elapsed": 0.0})
    binary = require_oracle()
    started = time.perf_counter()
    plan = oracle_plan(index, run_oracle(kube.states, kube.config, binary=binary, extra=oracle_flags(index)))
    plan.seconds = time.perf_counter() - started
    violations = verify_plan(index, plan)
    figures = plan_metrics(index, config, plan, shapes, opts.score_limit, state=final_state(index, plan))
    greedy = plan_diff(plan, runs["greedy"].plan)
    disagree = [*greedy["placed_only_by_greedy"], *greedy["placed_only_by_cpsat"],
                *(d["pod"] for d in greedy["different_node"])]
    if progress:
        progress("kube", {"type": "end", "elapsed": plan.seconds})
    return {"version": oracle_version(binary), "engine_seconds": round(plan.seconds, 4), **figures,
            "violations": [v.to_dict() for v in violations],
            "greedy_agrees": not disagree, "greedy_disagrees_on": sorted(disagree),
            # plan_diff's "greedy" side is kube's here: only_by_greedy = placed only by kube
            "cpsat_vs_kube": plan_diff(plan, runs["cpsat"].plan)}


def state_summary(index: ClusterIndex) -> dict[str, Any]:
    return {"nodes": len(index.nodes), "pods_bound": len(index.bound), "pods_pending": len(index.pending),
            "resources": list(index.resources)}


def run_compare(index: ClusterIndex, config: SchedulerConfig, opts: CompareOptions | None = None,
                progress: Progress | None = None, kube: KubeBaseline | None = None) -> Comparison:
    """Both engines on the state; with `kube`, the real kube-scheduler too (`solver.oracle`), as `data["kube"]`:
    its figures, whether the greedy engine agrees with it pod by pod, and how CP-SAT's plan differs from it."""
    opts = opts or CompareOptions()
    runs = {engine: run_engine(index, config, engine, opts, progress) for engine in ENGINES}
    if progress:
        progress("metrics", {"type": "start", "elapsed": 0.0})
    shapes = pending_shapes(index)
    states: dict[str, ClusterState] = {}
    data: dict[str, Any] = {"state": state_summary(index),
                            "options": {k: v for k, v in asdict(opts).items() if k != "isolate"}}
    for engine, run in runs.items():
        states[engine] = final_state(index, run.plan)
        figures = plan_metrics(index, config, run.plan, shapes, opts.score_limit, state=states[engine])
        data[engine] = {"engine_seconds": round(run.plan.seconds, 4), "wall_seconds": round(run.wall_seconds, 4),
                        "memory": run.memory, **figures,
                        "timeline": [list(e) for e in run.timeline], "windows": run.plan.windows,
                        "warnings": list(run.plan.warnings)}
    data["diff"] = plan_diff(runs["greedy"].plan, runs["cpsat"].plan)
    if kube is not None:
        data["kube"] = _kube_baseline(index, config, kube, runs, shapes, opts, progress)
    if progress:
        progress("metrics", {"type": "end", "elapsed": 0.0})
    return Comparison(index, opts, runs, states, data)
