"""`kplace rebalance`: bounded, PDB-safe moves chosen globally (pack, balance, repair), cut into safe waves."""

from .model import GOALS, RebalanceOptions
from .plan import plan_rebalance
from .policy import Policy, load_policy

__all__ = ["GOALS", "Policy", "RebalanceOptions", "load_policy", "plan_rebalance"]
