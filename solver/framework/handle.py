"""What a PostFilter plugin may read and change of the scheduler that runs it (kube's framework Handle).

DefaultPreemption (`plugins/defaultpreemption`) reads the cluster state and the nominator, runs its dry runs on
the state (each `assume` undone by a `forget`), and asks the scheduler for the two choices kube leaves to chance:
where its candidate walk starts and which of the tied best candidates it takes. The greedy engine implements it.
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

    def random_offset(self, n: int) -> int:
        """Where the candidate walk over `n` nodes starts."""

    def choose_candidate(self, tied: list[int]) -> int | None:
        """One of the candidates tied at the best (node ids) to take instead of the first, or None."""
