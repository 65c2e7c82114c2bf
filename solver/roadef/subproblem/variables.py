"""The subproblem's data and decision variables: which freed process goes to which of the chosen machines.

For the chosen machines K and the freed processes F (on K now), with every other process fixed:

    x[p, m] ∈ {0, 1} for p ∈ F, m ∈ K,   Σ_m x[p, m] = 1   (each freed process on exactly one machine of K)

A pair (p, m) gets no variable when m hosts a fixed process of p's service (conflict), or when p alone does not
fit in m's room: C[m] − U_fixed[m] on every resource, and, unless m is p's initial machine, C[m] − T_fixed[m] on
transient resources (U_fixed, T_fixed: usage and transient usage of the fixed processes). `cand[m]` lists the
freed processes that may go to m. `presence(s, n)` is 1, 0 or a Boolean n[s, n] ⇔ some process of service s is
in neighborhood n (fixed ones count as a constant 1): n ≥ x for each x of s in n, and n ≤ Σ of them.
Every variable is hinted with the current assignment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ortools.sat.python import cp_model

if TYPE_CHECKING:
    from ..search import RoadefLNS


class Subproblem:
    """The CP-SAT model of one neighbourhood of `search`'s current assignment, as it is built (`subproblem.solve`
    posts the variables, constraints and objective in one order)."""

    def __init__(self, search: RoadefLNS, machines: list[int], freed: list[int]) -> None:
        inst, a = search.inst, search.a
        self.search, self.inst = search, inst
        self.a, self.a0 = a, search.a0
        self.machines, self.freed = machines, freed
        self.req = search.req_list
        self.n_res = inst.n_resources
        self.trans = [r for r in range(self.n_res) if inst.transient[r]]
        self.cap = {m: inst.capacity[m].tolist() for m in machines}
        f_u = {m: search.U[m].copy() for m in machines}
        f_t = {m: search.T[m].copy() for m in machines}
        for p in freed:
            m = int(a[p])
            f_u[m] -= search.req[p]
            if self.a0[p] != m:
                f_t[m] -= search.req[p]
        self.f_u = {m: v.tolist() for m, v in f_u.items()}  # usage of the fixed processes
        self.f_t = {m: v.tolist() for m, v in f_t.items()}  # transient usage of the fixed processes
        self.freed_set = set(freed)
        self.by_svc: dict[int, list[int]] = {}
        for p in freed:
            self.by_svc.setdefault(int(inst.service[p]), []).append(p)
        self.base_machines: dict[int, set[int]] = {}
        self.base_locs: dict[int, set[int]] = {}
        self.base_nbs: dict[int, set[int]] = {}
        self.model = cp_model.CpModel()
        self.x: dict[tuple[int, int], cp_model.IntVar] = {}
        self.cand: dict[int, list[int]] = {}
        self.hints: list[tuple[cp_model.IntVar, int]] = []
        self.terms: list = []  # the objective's terms, in the order they are posted
        self._presence: dict[tuple[int, int], object] = {}

    def base(self, s: int) -> None:
        """The machines, locations and neighborhoods of service s's fixed processes (computed once)."""
        if s in self.base_machines:
            return
        search = self.search
        ms = [int(self.a[p]) for p in search.svc_procs[s].tolist() if p not in self.freed_set]
        self.base_machines[s] = set(ms)
        self.base_locs[s] = {search.loc[m] for m in ms}
        self.base_nbs[s] = {search.nbh[m] for m in ms}

    def presence(self, s: int, n: int):
        """1, 0 or the Boolean `n{s}_{n}`: whether service s is present in neighborhood n (see the docstring)."""
        key = (s, n)
        if key in self._presence:
            return self._presence[key]
        self.base(s)
        model, x, a, nbh = self.model, self.x, self.a, self.search.nbh
        if n in self.base_nbs[s]:
            val: object = 1
        else:
            xs = [(p, m) for p in self.by_svc.get(s, []) for m in self.machines if nbh[m] == n and (p, m) in x]
            if not xs:
                val = 0
            else:
                v = model.NewBoolVar(f"n{s}_{n}")
                for pm in xs:
                    model.AddImplication(x[pm], v)
                model.Add(v <= sum(x[pm] for pm in xs))
                self.hints.append((v, int(any(a[p] == m for p, m in xs))))
                val = v
        self._presence[key] = val
        return val


def assignment_variables(sp: Subproblem) -> None:
    """x[p, m] for the pairs that may fit, each freed process on exactly one machine; `cand` per machine."""
    model, req, cap, f_u, f_t, a, a0 = sp.model, sp.req, sp.cap, sp.f_u, sp.f_t, sp.a, sp.a0
    for s, procs in sp.by_svc.items():
        sp.base(s)
        for p in procs:
            a0p = int(a0[p])
            row = []
            for m in sp.machines:
                if m in sp.base_machines[s]:
                    continue
                if any(req[p][r] > cap[m][r] - f_u[m][r] for r in range(sp.n_res)):
                    continue
                if a0p != m and any(req[p][r] > cap[m][r] - f_t[m][r] for r in sp.trans):
                    continue
                v = model.NewBoolVar(f"x{p}_{m}")
                sp.x[p, m] = v
                row.append(v)
                sp.hints.append((v, int(a[p] == m)))
            model.AddExactlyOne(row)
    sp.cand = {m: [] for m in sp.machines}
    for p, m in sp.x:
        sp.cand[m].append(p)
