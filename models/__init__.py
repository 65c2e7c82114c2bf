"""kplace's domain model: what a cluster, a pod and a plan are. No solver code lives here."""

from .errors import ConfigError, InputError, KplaceError
from .index import ClusterIndex, PodInfo, compile_index
from .io import load_state
from .snapshot import ClusterSnapshot

__all__ = [
    "ClusterIndex",
    "ClusterSnapshot",
    "ConfigError",
    "InputError",
    "KplaceError",
    "PodInfo",
    "compile_index",
    "load_state",
]
