"""The CP-SAT engine: a whole window of pending pods decided at once (see `window`)."""

from .options import CpsatOptions
from .window import CpsatScheduler, schedule_cpsat

__all__ = ["CpsatOptions", "CpsatScheduler", "schedule_cpsat"]
