"""DefaultPreemption over a whole CP-SAT window: which bound pods the window's pods evict, decided with the rest.

Candidates V: pods bound before the run (not placed by it) whose priority is below that of some window pod that may
preempt (its profile has DefaultPreemption, its `preemptionPolicy` is not Never), not terminating, and whose going
changes no rule but capacity for the window: no (anti-)affinity terms of its own, no host ports, no volume the
volume plugins count, matched by no window pod's inter-pod or spread term. The other plugins' constraints, written
against the pods that stay, then hold as they are. e_v ∈ {0, 1}: v is evicted.

- capacity (NodeResourcesFit's, `noderesources.encoding.capacity`): Σ_g req[g, r]·y[g, n] ≤ free[n, r]
  + Σ_{v on n} req[v, r]·e_v, and the same for pod slots;
- a victim needs a preemptor: e_v ≤ Σ_{g may preempt, prio g > prio v} y[g, node v] — kube evicts for a pod of
  higher priority placed on that node;
- PodDisruptionBudgets: Σ_{v matched by b} e_v ≤ max(0, disruptionsAllowed_b), unless violations are allowed;
- the disruption stage (`disruption_stage`), after pods placed: minimise Σ_v W[v]·e_v with W lexicographic by victim
  priority — one victim of a priority outweighs every victim of the lower ones — so the window evicts the fewest
  pods at the highest priority, then at the next, and so on: kube's "lowest highest victim priority, smallest sum,
  fewest victims", summed over the window instead of per preemptor. With violations allowed, a victim that takes
  a PDB below zero outweighs all of them (kube's last resort).
The resource score terms keep the loads with the victims present (a surrogate on preempted nodes: the window
compares the measure of its final plan with greedy's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from kplace.models.index import ClusterIndex, PodInfo

from ...framework.state import ClusterState
from ..interpodaffinity.terms import ns_labels_of, pod_terms
from ..podtopologyspread.spread import pod_constraints

_VOLUME_KINDS = ("persistent_volume_claim", "gce_persistent_disk", "aws_elastic_block_store", "rbd", "iscsi", "csi",
                 "ephemeral")


@dataclass
class Victims:
    """The window's candidate victims and the PDBs they fall under."""

    pods: list[PodInfo] = field(default_factory=list)
    node: dict[int, int] = field(default_factory=dict)  # victim idx → its node
    pdbs: dict[int, list[int]] = field(default_factory=dict)  # PDB index → candidate victims' idx it matches
    allowed: dict[int, int] = field(default_factory=dict)  # PDB index → disruptions it allows
    freed: dict[int, dict[int, np.ndarray]] = field(default_factory=dict, repr=False)  # `freed_on`, per priority

    def below(self, priority: int) -> list[PodInfo]:
        return [v for v in self.pods if v.priority < priority]


def may_preempt(pod: PodInfo, profile) -> bool:
    return profile.preemption and pod.pod.spec.preemption_policy != "Never"


def _inert(index: ClusterIndex, v: PodInfo) -> bool:
    """v's going changes no rule of another pod but capacity: no terms, ports or counted volumes of its own."""
    terms = pod_terms(index, v)
    return not (terms.required_affinity or terms.required_anti or terms.preferred_affinity or terms.preferred_anti
                or v.host_ports or any(getattr(vol, k) is not None for vol in v.pod.spec.volumes
                                       for k in _VOLUME_KINDS))


def _selected_by(index: ClusterIndex, v: PodInfo, reps: list[tuple[str, tuple, list]]) -> bool:
    """Some window pod's inter-pod or spread term selects v (a function of v's namespace and labels only); `reps`:
    `selectors`."""
    ns = ns_labels_of(index, v.namespace)
    for namespace, terms, constraints in reps:
        if any(term.matches(v.namespace, v.labels, ns) for term in terms):
            return True
        if namespace == v.namespace and any(c.selector.matches(v.labels) for c in constraints):
            return True
    return False


def selectors(index: ClusterIndex, reps: list[PodInfo], profile_of: Callable) -> list[tuple[str, tuple, list]]:
    """Per window pod, what `_selected_by` reads of it: its namespace, inter-pod terms and spread constraints."""
    out = []
    for r in reps:
        plugin = profile_of(r).plugin("PodTopologySpread")
        defaults = plugin.default_constraints if plugin is not None else []
        t = pod_terms(index, r)
        out.append((r.namespace, (*t.required_affinity, *t.required_anti, *t.preferred_affinity, *t.preferred_anti),
                    [*pod_constraints(index, r, "DoNotSchedule", defaults),
                     *pod_constraints(index, r, "ScheduleAnyway", defaults)]))
    return out


def candidates(state: ClusterState, reps: list[PodInfo], profile_of: Callable) -> Victims:
    """The candidate victims for a window whose groups are represented by `reps` (see the module doc)."""
    index = state.index
    preempting = [r for r in reps if may_preempt(r, profile_of(r))]
    if not preempting:
        return Victims()
    top = max(r.priority for r in preempting)
    selecting = selectors(index, reps, profile_of)
    out = Victims()
    selected: dict[tuple, bool] = {}  # (namespace, labels) → `_selected_by`: replicas share their labels
    for idx in np.flatnonzero((index.pod_node >= 0) & (state.pod_node == index.pod_node)).tolist():
        v = index.pods[idx]
        if v.priority >= top or v.pod.metadata.deletion_timestamp is not None or not _inert(index, v):
            continue
        key = (v.namespace, tuple(sorted(v.labels.items())))
        hit = selected.get(key)
        if hit is None:
            hit = selected[key] = _selected_by(index, v, selecting)
        if hit:
            continue
        out.pods.append(v)
        out.node[v.idx] = int(state.pod_node[v.idx])
    snap = index.snapshot
    for v in out.pods:
        for b in index.pdbs_of(v):
            out.pdbs.setdefault(b, []).append(v.idx)
    out.allowed = {b: max(0, snap.pdb_disruptions_allowed(snap.pdbs[b])) for b in out.pdbs}
    return out


def freed_on(victims: Victims, index: ClusterIndex, priority: int) -> dict[int, np.ndarray]:
    """Per node, the requests (resources, then one pod slot) of the candidates below `priority` there: Σ over the
    node's candidates v with prio v < priority of (req[v], 1). Computed once per priority; read-only."""
    hit = victims.freed.get(priority)
    if hit is None:
        below = victims.below(priority)
        idx = np.fromiter((v.idx for v in below), dtype=np.int64, count=len(below))
        nodes, at = np.unique(np.fromiter((victims.node[v.idx] for v in below), dtype=np.int64, count=len(below)),
                              return_inverse=True)
        sums = np.zeros((len(nodes), index.pod_req.shape[1] + 1), dtype=np.int64)
        np.add.at(sums, at, np.column_stack([index.pod_req[idx], np.ones(len(idx), dtype=np.int64)]))
        sums.flags.writeable = False
        hit = victims.freed[priority] = dict(zip(nodes.tolist(), sums, strict=True))
    return hit


def post(v, victims: Victims, groups: list, profile_of: Callable, respect_pdbs: bool) -> None:
    """e_v for the candidates on nodes some group that may evict them can use, and their constraints: a preemptor
    of higher priority on the victim's node, and the PDB budgets (when respected)."""
    model = v.model
    for victim in victims.pods:
        n = victims.node[victim.idx]
        ys = [y for g, y in v.by_node.get(n, ())
              if g.priority > victim.priority and may_preempt(g.rep, profile_of(g.rep))]
        if not ys:
            continue
        e = model.new_bool_var(f"evict_{victim.idx}")
        model.add(e <= sum(ys))
        v.evict[victim.idx] = e
        v.victims_on.setdefault(n, []).append((victim, e))
    if respect_pdbs:
        for b, members in victims.pdbs.items():
            es = [v.evict[i] for i in members if i in v.evict]
            if len(es) > victims.allowed[b]:
                model.add(sum(es) <= victims.allowed[b])


def violating(victims: Victims, evicted: list[int]) -> set[int]:
    """The evicted pods that take some PDB below zero (the PDB's last ones beyond its budget, in eviction order)."""
    out: set[int] = set()
    chosen = set(evicted)
    for b, members in victims.pdbs.items():
        hit = [i for i in members if i in chosen]
        out.update(hit[victims.allowed[b]:])
    return out
