"""The scheduling framework: the plugin contract, the mutable cluster state, profiles from config."""

from .plugin import MAX_NODE_SCORE, Code, CycleState, FilterResult, Plugin, PreFilterResult
from .state import ClusterState

__all__ = ["MAX_NODE_SCORE", "ClusterState", "Code", "CycleState", "FilterResult", "Plugin", "PreFilterResult"]
