"""Decision variables: y[g, n] = how many pods of group g go to node n (a boolean when at most one can).

    0 ≤ y[g, n] ≤ ub[g, n] = min(|g|, ⌊free[n, r] / req[g, r]⌋ over requested r, free pod slots of n)
    placed[g] = Σ_n y[g, n] ≤ |g|          (a pod may stay unplaced, so no window is infeasible)

`domain_sum(g, key, v)` is Σ y[g, n] over g's nodes whose label `key` has value id v: the count of g's pods
in one topology domain, the unit every inter-pod rule is written in.

With preemption (`plugins.defaultpreemption.encoding`), e_v = 1 when bound pod v is evicted, and a group's ub
counts what the candidates below its priority would free on the node. Counts (hints, solutions) carry the evicted
pods under the key EVICTED: {victim idx: 1}.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from ortools.sat.python import cp_model

from ..framework.state import ClusterState
from .groups import PodGroup

EVICTED = -1  # the key of counts under which the evicted victims are ({victim idx: 1})


def fit_bound(state: ClusterState, group: PodGroup, nodes: np.ndarray,
              freed: dict[int, np.ndarray] | None = None) -> np.ndarray:
    """Per node of `nodes`, how many pods of `group` fit alone on the node at the window's start (with what
    `freed` — per node, resources then pod slots — would give back)."""
    index = state.index
    req = index.pod_req[group.rep.idx]
    free = np.take(index.alloc, nodes, axis=0) - np.take(state.requested, nodes, axis=0)  # take: fast row gathers
    slots = np.maximum(index.max_pods[nodes] - state.pod_count[nodes], 0)
    if freed:
        for i, n in enumerate(nodes.tolist()):
            if n in freed:
                free[i] += freed[n][:-1]
                slots[i] += freed[n][-1]
    ub = np.full(len(nodes), group.size, dtype=np.int64)
    for r in np.flatnonzero(req > 0).tolist():
        ub = np.minimum(ub, np.maximum(free[:, r], 0) // req[r])
    return np.minimum(ub, slots)


class Variables:
    def __init__(self, model: cp_model.CpModel, state: ClusterState, groups: list[PodGroup],
                 scope: dict[int, np.ndarray], freed: dict[int, dict[int, np.ndarray]] | None = None) -> None:
        self.model = model
        self.state = state
        self.groups = {g.gid: g for g in groups}
        self.y: dict[int, dict[int, cp_model.IntVar]] = {}
        self.ub: dict[int, dict[int, int]] = {}
        self.by_node: dict[int, list[tuple[PodGroup, cp_model.IntVar]]] = defaultdict(list)
        self.placed: dict[int, cp_model.LinearExprT] = {}
        self._domain: dict[tuple[int, str], dict[int, list[cp_model.IntVar]]] = {}
        self._presence: dict[tuple[int, str, int], cp_model.IntVar] = {}
        self._occupied: dict[tuple[int, int], cp_model.IntVar] = {}
        self.symmetric: list[list[int]] = []
        """Classes of interchangeable nodes (see `objective._break_node_symmetry`); hints are relabelled so
        that, within a class, the used nodes come first."""
        self.coefficients: dict[int, dict[int, int]] = {}
        self.aux_hints: list[tuple[cp_model.IntVar, object]] = []
        """Auxiliary variables and how to derive their value from a y-hint (so hints stay complete)."""
        self.evict: dict[int, cp_model.IntVar] = {}  # victim idx → e_v
        self.gangs: list[tuple[cp_model.IntVar, list[int]]] = []  # (z_G, the gang's group ids), by gangscheduling
        self.gang_domains: list[tuple[cp_model.IntVar, frozenset[int], list[int]]] = []  # (u_{G,d}, nodes, gids)
        self.victims_on: dict[int, list[tuple[object, cp_model.IntVar]]] = {}  # node → [(victim, e_v)]
        for g in groups:
            nodes = scope[g.gid]
            bounds = fit_bound(state, g, nodes, (freed or {}).get(g.gid))
            ys, ubs = {}, {}
            for n, ub in zip(nodes.tolist(), bounds.tolist(), strict=True):
                if ub <= 0:
                    continue
                var = (model.new_bool_var(f"y_{g.gid}_{n}") if ub == 1
                       else model.new_int_var(0, ub, f"y_{g.gid}_{n}"))
                ys[n], ubs[n] = var, ub
                self.by_node[n].append((g, var))
            self.y[g.gid], self.ub[g.gid] = ys, ubs
            self.placed[g.gid] = cp_model.LinearExpr.sum(list(ys.values())) if ys else 0
            if ys and sum(ubs.values()) > g.size:
                model.add(self.placed[g.gid] <= g.size)

    def occupied(self, gid: int, n: int):
        """A literal that is 1 whenever some pod of g is on n: y itself when at most one fits, else a new boolean
        with y ≤ ub · o (cached per (g, n))."""
        lit = self._occupied.get((gid, n))
        if lit is None:
            var, ub = self.y[gid][n], self.ub[gid][n]
            if ub <= 1:
                lit = var
            else:
                lit = self.model.new_bool_var(f"occ_{gid}_{n}")
                self.model.add(var <= ub * lit)
                self.aux_hints.append((lit, lambda c, gid=gid, n=n: int(c.get(gid, {}).get(n, 0) > 0)))
            self._occupied[(gid, n)] = lit
        return lit

    def cap_per_node(self, gid: int, cap: int) -> None:
        """Tighten y[g, n] ≤ cap (e.g. 1 for hostname anti-affinity of a group with itself)."""
        for n, var in self.y[gid].items():
            if self.ub[gid][n] > cap:
                self.model.add(var <= cap)
                self.ub[gid][n] = cap

    def domains(self, gid: int, key: str) -> dict[int, list[cp_model.IntVar]]:
        """value id → g's variables on nodes with that value of label `key` (nodes lacking it are left out)."""
        hit = self._domain.get((gid, key))
        if hit is None:
            ids = self.state.index.label_column(key)[0]
            hit = defaultdict(list)
            for n, var in self.y[gid].items():
                if ids[n] >= 0:
                    hit[int(ids[n])].append(var)
            self._domain[(gid, key)] = hit
        return hit

    def domain_ub(self, gid: int, key: str, value: int) -> int:
        ids = self.state.index.label_column(key)[0]
        return min(self.groups[gid].size, sum(ub for n, ub in self.ub[gid].items() if ids[n] == value))

    def presence(self, gid: int, key: str, value: int) -> cp_model.IntVar:
        """A boolean that is 1 whenever some pod of g is in domain (key, value): Σ y ≤ ub · a."""
        k = (gid, key, value)
        lit = self._presence.get(k)
        if lit is None:
            lit = self.model.new_bool_var(f"in_{gid}_{key}_{value}")
            terms = self.domains(gid, key).get(value, [])
            if terms:
                self.model.add(sum(terms) <= self.domain_ub(gid, key, value) * lit)
            self._presence[k] = lit
            self.aux_hints.append((lit, lambda c, g=gid, key=key, v=value: int(self.hinted_domain(c, g, key, v) > 0)))
        return lit

    def canonical(self, counts: dict[int, dict[int, int]]) -> dict[int, dict[int, int]]:
        """`counts` with the nodes of each symmetric class relabelled so that the used ones come first."""
        if not self.symmetric:
            return counts
        out = {gid: dict(c) for gid, c in counts.items()}
        placed = {gid: c for gid, c in counts.items() if gid != EVICTED}
        for nodes in self.symmetric:
            busy = [n for n in nodes if any(c.get(n, 0) for c in placed.values())]
            mapping = dict(zip(busy, nodes, strict=False))
            if all(a == b for a, b in mapping.items()):
                continue
            for gid, c in placed.items():
                moved = {n: c[n] for n in nodes if n in c}
                for n in moved:
                    out[gid].pop(n, None)
                for n, k in moved.items():
                    if k:
                        out[gid][mapping[n]] = k
        return out

    def hinted_domain(self, counts: dict[int, dict[int, int]], gid: int, key: str, value: int) -> int:
        ids = self.state.index.label_column(key)[0]
        return sum(c for n, c in counts.get(gid, {}).items() if n in self.y[gid] and ids[n] == value)

    def add_hint(self, counts: dict[int, dict[int, int]]) -> None:
        """A complete hint: every y gets a value (0 where the hint places nothing). Written straight into
        the proto: one call per variable through the Python API costs more than the search on big windows."""
        counts = self.canonical(counts)
        self.model.clear_hints()
        idx, vals = [], []
        for gid, ys in self.y.items():
            hint = counts.get(gid, {})
            ubs = self.ub[gid]
            for n, var in ys.items():
                idx.append(var.index)
                vals.append(min(hint.get(n, 0), ubs[n]))
        evicted = counts.get(EVICTED, {})
        for victim, var in self.evict.items():
            idx.append(var.index)
            vals.append(1 if evicted.get(victim) else 0)
        for var, derive in self.aux_hints:
            idx.append(var.index)
            vals.append(int(derive(counts)))
        hint_proto = self.model.proto.solution_hint
        hint_proto.vars.extend(idx)
        hint_proto.values.extend(vals)
