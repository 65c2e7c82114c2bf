"""The CP-SAT engine's options, and the profile that schedules a pod."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kplace.models.index import PodInfo

from ..framework.config import Profile, SchedulerConfig


@dataclass
class CpsatOptions:
    window: int = 1000
    time_limit: float = 10.0  # seconds of search for the whole run (deterministic by default), split over windows
    # Wall-clock seconds for the whole decision (greedy passes, models, searches, fallbacks), from the start of the
    # run; once passed, no further search: the windows left take greedy's plan (`window`). None: no deadline.
    deadline: float | None = None
    workers: int = 2
    seed: int = 0
    objective: str = "default"  # default | pack | balance
    scope: int = 32  # nodes per group kept in the model, at least (plus 4 per pod and greedy's nodes; 2× with a goal)
    deterministic: bool = True
    tie_break: str = "order"
    allow_pdb_violations: bool = False  # preemption may take a PDB below zero, at the highest disruption cost
    # where a window's components are searched (`solver.executors`): auto (a local process pool when more than one
    # component has a model and the machine runs more than one search at a time, else here), inprocess, pool or
    # ray; every one gives the same plan in deterministic mode
    executor: str = "auto"
    ray_address: str | None = None  # the Ray cluster to join (None: RAY_ADDRESS, else a local instance)
    # Optional progress hook: called as on_progress(seconds, objective, bound, stage) at every solution CP-SAT
    # finds and once at the end of each solve (seconds: that solve's wall time). Observes only; None: no hook.
    on_progress: Callable[[float, float, float, str], None] | None = None
    # Optional: called as on_window(windows done, windows in all, pods placed so far, pods decided so far) after each
    # window. Observes only.
    on_window: Callable[[int, int, int, int], None] | None = None


ProfileOf = Callable[[PodInfo], Profile]


def profile_of(config: SchedulerConfig) -> ProfileOf:
    """pod → the profile of its schedulerName (the engine only schedules pods that some profile names)."""
    def profile(pod: PodInfo) -> Profile:
        found = config.profile_for(pod.spec.scheduler_name)
        assert found is not None
        return found
    return profile
