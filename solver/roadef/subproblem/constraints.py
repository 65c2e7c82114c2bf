"""The subproblem's hard constraints, over x[p, m] (`variables`), each posted only where it can bind.

- capacity: Σ_{p ∈ cand(m)} req[p, r] · x[p, m] ≤ C[m, r] − U_fixed[m, r] for every resource r;
- transient capacity: Σ_{p ∈ cand(m), a⁰(p) ≠ m} req[p, r] · x[p, m] ≤ C[m, r] − T_fixed[m, r] on transient r
  (a process going home adds nothing: it counts there already);
- conflict: Σ_{p of s} x[p, m] ≤ 1 for each service s and machine m (machines with a fixed process of s have no
  variable for s at all);
- spread: with need_s = spreadMin[s] − #locations of s's fixed processes > 0, a Boolean y[s, l] ≤ Σ x[p, m] over
  p of s and the machines m in location l not yet covered, and Σ_l y[s, l] ≥ need_s;
- dependency s → d, in every neighborhood n of the chosen machines: presence(s, n) ≤ presence(d, n), over the pairs
  where s or d has a freed process (the neighborhoods the freed processes can leave or reach).
"""

from __future__ import annotations

from .variables import Subproblem


def capacity(sp: Subproblem, m: int) -> None:
    """Capacity and transient capacity of machine m."""
    model, req, x, cap, f_u, f_t, a0 = sp.model, sp.req, sp.x, sp.cap, sp.f_u, sp.f_t, sp.a0
    ps = sp.cand[m]
    for r in range(sp.n_res):
        room = cap[m][r] - f_u[m][r]
        if sum(req[p][r] for p in ps) > room:
            model.Add(sum(req[p][r] * x[p, m] for p in ps if req[p][r]) <= room)
    for r in sp.trans:
        room = cap[m][r] - f_t[m][r]
        movers = [p for p in ps if a0[p] != m and req[p][r]]
        if sum(req[p][r] for p in movers) > room:
            model.Add(sum(req[p][r] * x[p, m] for p in movers) <= room)


def conflict_and_spread(sp: Subproblem) -> None:
    """Conflict (at most one process of a service per machine) and spreadMin, per service with freed processes."""
    model, x, a, loc = sp.model, sp.x, sp.a, sp.search.loc
    for s, procs in sp.by_svc.items():
        for m in sp.machines:
            vs = [x[p, m] for p in procs if (p, m) in x]
            if len(vs) > 1:
                model.AddAtMostOne(vs)
        need = int(sp.inst.spread_min[s]) - len(sp.base_locs[s])
        if need > 0:
            by_loc: dict[int, list] = {}
            for p in procs:
                for m in sp.machines:
                    if (p, m) in x and loc[m] not in sp.base_locs[s]:
                        by_loc.setdefault(loc[m], []).append((p, m))
            ys = []
            for lo, pms in by_loc.items():
                y = model.NewBoolVar(f"y{s}_{lo}")
                model.Add(y <= sum(x[pm] for pm in pms))
                ys.append(y)
                sp.hints.append((y, int(any(a[p] == m for p, m in pms))))
            model.Add(sum(ys) >= need)


def dependencies(sp: Subproblem) -> None:
    """Dependencies, over the neighborhoods of the chosen machines."""
    inst, search = sp.inst, sp.search
    nbs = sorted({search.nbh[m] for m in sp.machines})
    pairs = {(s, d) for s in sp.by_svc for d in inst.dependencies[s]}
    pairs |= {(s2, s) for s in sp.by_svc for s2 in search.rdeps[s]}
    for s, d in sorted(pairs):
        for n in nbs:
            ps_, pd = sp.presence(s, n), sp.presence(d, n)
            if isinstance(ps_, int) and ps_ == 0:
                continue
            if isinstance(pd, int) and pd == 1:
                continue
            sp.model.Add(ps_ <= pd)
