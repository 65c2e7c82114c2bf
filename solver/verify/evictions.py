"""The plan's evictions (preemption). Each names a pod bound to that node, evicted once and not also moved,
with strictly lower priority than its preemptor, a pending pod of the state. As in kube, preemption nominates
the node and does not bind to it: a preemptor the plan places on that node frees its victims' room when it
binds; one it places elsewhere or nowhere (another pod took the room first) freed it at a point the plan does not record
(`replay.Replay.replay`). No eviction may take a
PodDisruptionBudget below zero (the PDBs in the victim's namespace whose non-empty selector matches it; budget
`snapshot.pdb_disruptions_allowed`, one per eviction) unless the user allowed it and the plan says that
eviction violates one."""

from __future__ import annotations

from kplace.models.index import ClusterIndex
from kplace.models.plan import Eviction
from kplace.models.selectors import selector_matches
from kplace.models.snapshot import pdbs_disruptions_allowed

from .records import CompiledPod, PodTable
from .violation import Violation


def pdb_selects(pdb, p: CompiledPod) -> bool:
    """The PDB's (non-empty) selector selects the pod, in its namespace."""
    sel = pdb.spec.selector
    return (pdb.metadata.namespace == p.ns and sel is not None and bool(sel.match_labels or sel.match_expressions)
            and selector_matches(sel, p.labels))


def _victim_fails(e: Eviction, pods: PodTable, evicted: set[str], moved: set[str]) -> str | None:
    """Why `e.pod` cannot be a victim at all (not bound on `e.node`, evicted twice, moved too), or None."""
    pi = pods.info.get(e.pod)
    if pi is None or pi.pending or pi.node < 0:
        return f"the victim is not a bound pod of the state, not on {e.node}"
    if pi.pod.spec.node_name != e.node:
        return f"the victim is bound to {pi.pod.spec.node_name}, not on {e.node}"
    if e.pod in evicted:
        return "the victim is evicted more than once"
    if e.pod in moved:
        return "the victim is also moved by the plan"
    return None


def _preemptor_fails(e: Eviction, victim: CompiledPod, pods: PodTable) -> str | None:
    pi = pods.info.get(e.preemptor)
    if pi is None or not pi.pending:
        return f"its preemptor {e.preemptor} is not a pending pod of the state"
    preemptor = pods(e.preemptor)
    if victim.priority >= preemptor.priority:
        return (f"the victim's priority {victim.priority} is not lower than its preemptor {e.preemptor}'s "
                f"{preemptor.priority}")
    return None


def check_evictions(evictions: list[Eviction], index: ClusterIndex, pods: PodTable, node_of: dict[str, str],
                    moved: set[str], allow_pdb_violations: bool
                    ) -> tuple[list[Violation], dict[str, list[CompiledPod]], set[str], set[str]]:
    """(violations, the valid victims of each preemptor placed on their node, the valid victims whose preemptor
    is not (gone at the start), every pod the plan validly names as a victim)."""
    out: list[Violation] = []
    victims: dict[str, list[CompiledPod]] = {}
    released: set[str] = set()
    evicted: set[str] = set()
    snap = index.snapshot
    budget = dict(enumerate(pdbs_disruptions_allowed(snap)))
    for e in evictions:
        why = _victim_fails(e, pods, evicted, moved)
        if why is not None:
            out.append(Violation(e.pod, e.node, "Preemption", why))
            continue
        evicted.add(e.pod)
        victim = pods(e.pod)
        for i, pdb in enumerate(snap.pdbs):
            if pdb_selects(pdb, victim):
                budget[i] -= 1
                if budget[i] < 0 and not (allow_pdb_violations and e.pdb_violation):
                    out.append(Violation(e.pod, e.node, "PodDisruptionBudget",
                                         f"evicting it takes PodDisruptionBudget {pdb.metadata.namespace}/"
                                         f"{pdb.metadata.name} below zero disruptions allowed"))
        why = _preemptor_fails(e, victim, pods)
        if why is not None:
            out.append(Violation(e.pod, e.node, "Preemption", why))
        elif node_of.get(e.preemptor) == e.node:
            victims.setdefault(e.preemptor, []).append(victim)
        else:
            released.add(e.pod)
    return out, victims, released, evicted
