"""What a PostFilter plugin may read and change of the scheduler that runs it (kube's framework Handle).

DefaultPreemption (`plugins/defaultpreemption`) reads the cluster state and the nominator, runs its dry runs on
the state (each `assume` undone by a `forget`), and asks the scheduler for the choices kube leaves to chance:
the order and start of its candidate walk (kube lists the potential nodes in map order and starts at a random
offset) and which of the tied best candidates it takes. The greedy engine implements it.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
from kplace.models.index import ClusterIndex, PodInfo

from .config import Profile
from .plugin import CycleState
from .runtime import FilterOutcome
from .state import ClusterState


class PreemptionHandle(Protocol):
    index: ClusterIndex
    state: ClusterState  # the cycle's state: dry runs may assume and forget pods, and must leave it as they found it
    n_nodes: int
    explain: bool  # build the reasons of nodes that cannot help
    respect_pdbs: bool  # never take a PodDisruptionBudget below zero

    def pdb_allowed(self) -> dict[int, int]:
        """Disruptions each PDB (index into the snapshot's) still allows."""

    def nominated_on(self, pod: PodInfo, node: int) -> list[PodInfo]:
        """The pods nominated to `node` that `pod`'s filters count."""

    def filter_with_nominated(self, profile: Profile, pod: PodInfo, nodes: np.ndarray, out: FilterOutcome,
                              skipped: set[str], cycle: CycleState | None = None) -> None:
        """kube's RunFilterPluginsWithNominatedPods over `out`'s nodes."""

    def candidate_walk(self, potential: list[int]) -> tuple[list[int], int]:
        """The potential nodes (node ids, Unschedulable in Filter, in evaluation order) in the order the candidate
        walk indexes them, and the offset it starts at: node k of the walk is order[(offset + k) % n]."""

    def choose_candidate(self, tied: list[int]) -> int | None:
        """One of the candidates tied at the best (node ids) to take instead of the first, or None."""
