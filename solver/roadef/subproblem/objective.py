"""The subproblem's objective: the official objective restricted to what the freed processes change, linear.

    minimise  Σ_{p, m} (wₚ·PMC[p]·[m ≠ a⁰(p)] + w_m·MMC[a⁰(p), m]) · x[p, m]      process and machine move costs
            + Σ_{m, r: wₗ(r) > 0} wₗ(r) · over[m, r]                                load cost
            + Σ_{m, b: w_b > 0} w_b · bal[m, b]                                      balance cost
            + w_s · z                                                                service move cost

with over[m, r] ≥ U_fixed[m, r] − SC[m, r] + Σ_p req[p, r] · x[p, m] (and ≥ 0), bal[m, b] ≥ t_b · (C[m, r1] −
U[m, r1]) − (C[m, r2] − U[m, r2]) written over x (and ≥ 0), and z ≥ the moved processes of each service with freed
processes (its fixed moved ones + Σ_p (1 − x[p, a⁰(p)])), z ≥ the largest count of the other services. A term is
posted only where it can be positive; each auxiliary variable is hinted with its current value.
"""

from __future__ import annotations

from .variables import Subproblem


def move_costs(sp: Subproblem) -> None:
    """Process and machine move costs of each x[p, m] (in the variables' order)."""
    pm_w, mm_w, a0 = sp.search.pm_w, sp.search.mm_w, sp.a0
    for (p, m), v in sp.x.items():
        a0p = int(a0[p])
        c = (int(pm_w[p]) if m != a0p else 0) + int(mm_w[a0p, m])
        if c:
            sp.terms.append(c * v)


def load_cost(sp: Subproblem, m: int) -> None:
    """Load cost of machine m, over the resources with a load weight."""
    inst, model, req, x, cap, f_u, search = sp.inst, sp.model, sp.req, sp.x, sp.cap, sp.f_u, sp.search
    ps = sp.cand[m]
    for r in search.objective_terms:
        sc = int(inst.safety[m, r])
        hi = f_u[m][r] + sum(req[p][r] for p in ps)
        if min(hi, cap[m][r]) <= sc:
            continue
        over = model.NewIntVar(0, cap[m][r] - sc if cap[m][r] > sc else 0, f"over{m}_{r}")
        model.Add(over >= f_u[m][r] - sc + sum(req[p][r] * x[p, m] for p in ps if req[p][r]))
        sp.terms.append(int(inst.load_weight[r]) * over)
        sp.hints.append((over, max(0, int(search.U[m, r]) - sc)))


def balance_cost(sp: Subproblem, m: int) -> None:
    """Balance cost of machine m, per balance objective with a weight."""
    model, req, x, cap, f_u, U = sp.model, sp.req, sp.x, sp.cap, sp.f_u, sp.search.U
    ps = sp.cand[m]
    for b in sp.inst.balances:
        if b.weight == 0:
            continue
        const = b.target * (cap[m][b.r1] - f_u[m][b.r1]) - (cap[m][b.r2] - f_u[m][b.r2])
        coefs = [(p, req[p][b.r2] - b.target * req[p][b.r1]) for p in ps]
        if const + sum(c for _, c in coefs if c > 0) <= 0:
            continue
        bal = model.NewIntVar(0, max(0, const + sum(c for _, c in coefs if c > 0)), f"bal{m}")
        model.Add(bal >= const + sum(c * x[p, m] for p, c in coefs if c))
        sp.terms.append(b.weight * bal)
        cur = b.target * (cap[m][b.r1] - int(U[m, b.r1])) - (cap[m][b.r2] - int(U[m, b.r2]))
        sp.hints.append((bal, max(0, cur)))


def service_move_cost(sp: Subproblem) -> None:
    """The service move cost: z, the largest number of moved processes of one service."""
    inst, model, x, a, a0 = sp.inst, sp.model, sp.x, sp.a, sp.a0
    if not inst.weight_service_move:
        return
    moved_per_svc = sp.search.moved_per_svc
    others = moved_per_svc.copy()
    others[list(sp.by_svc)] = 0
    z = model.NewIntVar(int(others.max()), inst.n_processes, "z")
    for s, procs in sp.by_svc.items():
        base_moved = int(moved_per_svc[s]) - sum(1 for p in procs if a[p] != a0[p])
        terms = []
        const = base_moved
        for p in procs:
            key = (p, int(a0[p]))
            if key in x:
                const += 1
                terms.append(-x[key])
            else:
                const += 1
        model.Add(z >= const + sum(terms))
    sp.terms.append(inst.weight_service_move * z)
    sp.hints.append((z, int(moved_per_svc.max())))
