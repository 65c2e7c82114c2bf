"""The CP-SAT engine: a whole window of pending pods decided at once (see `window`)."""

from .window import CpsatOptions, CpsatScheduler, schedule_cpsat

__all__ = ["CpsatOptions", "CpsatScheduler", "schedule_cpsat"]
