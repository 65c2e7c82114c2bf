"""Vectorised (numpy) shift and swap moves for ROADEF 2012: soft-transient annealing, and the reference for the
compiled moves of `moves`.

`MoveState` keeps, for the current assignment a (initial a⁰), the counters that make a move's objective change
and feasibility exact and O(R) per candidate, so that all candidates of one process are evaluated in one numpy pass:

- U[m] = Σ_{a(p)=m} req[p] (usage) and T[m] = U[m] + Σ_{a⁰(p)=m≠a(p)} req[p] (transient usage);
- c(m, u) = Σ_r wₗ(r)·max(0, u_r − SC[m,r]) + Σ_b w_b·max(0, t_b·(C[m,r1] − u_r1) − (C[m,r2] − u_r2)), the load +
  balance cost of machine m at usage u; the current mc[m] = c(m, U[m]);
- moved[s] = #{p of s : a(p) ≠ a⁰(p)}, and the objective
  F = Σ_m mc[m] + Σ_{a(p)≠a⁰(p)} wₚ·PMC[p] + Σ_p w_m·MMC[a⁰(p), a(p)] + w_s·max_s moved[s];
- occ[s,m], sl[s,l], nb[s,n]: processes of service s on machine m / in location l / in neighborhood n; nloc[s] the
  number of locations of s; missing[s,n] = #{d ∈ deps(s), d ≠ s : nb[d,n] = 0} and
  needed[s,n] = #{s' : s ∈ deps(s'), s' ≠ s, nb[s',n] > 0}.

**Shift** p: m₀ → m (all m at once). With r = req[p], s = service(p), l = location, n = neighborhood:
ΔF = c(m, U[m]+r) − mc[m] + c(m₀, U[m₀]−r) − mc[m₀] + wₚPMC[p]·([m≠a⁰p] − [m₀≠a⁰p]) + w_m(MMC[a⁰p,m] − MMC[a⁰p,m₀])
+ w_s·(max(moved'[s], max_{s'≠s} moved[s']) − max moved), moved'[s] = moved[s] + [m≠a⁰p] − [m₀≠a⁰p].
Feasible iff U[m]+r ≤ C[m]; T[m] + r·[m≠a⁰p] ≤ C[m] on transient resources (T only decreases on m₀);
occ[s,m] = 0; nloc[s] − [sl[s,l₀]=1 ∧ l≠l₀] + [sl[s,l]=0] ≥ spreadMin[s]; when n ≠ n₀: s entering n
(nb[s,n]=0) needs missing[s,n] = 0 and s leaving n₀ (nb[s,n₀]=1) needs needed[s,n₀] = 0. Entering only adds
presence and leaving only removes it, so these two conditions are the whole dependency check.

**Swap** p (m₀, service s) with q (m₁ = a(q) ≠ m₀, service t), all q at once: usages U[m₀] − r_p + r_q and
U[m₁] − r_q + r_p, transient usages T[m₀] − r_p[m₀≠a⁰p] + r_q[m₀≠a⁰q] and symmetrically on m₁; ΔF is the two
machines' cost change plus both processes' move-cost changes plus the service term. When t ≠ s: the service term
is w_s·(max(moved'[s], moved'[t], max of the other services) − max moved), the last from the three largest
counters; conflict needs occ[s,m₁] = occ[t,m₀] = 0; spread is checked as for two shifts (s ≠ t, so they are
independent); dependencies as for two independent shifts, which is exact unless s and t are linked by a
dependency, and then a swap across neighborhoods is not considered. When t = s, every machine, location and
neighborhood keeps the same services, so conflict, spread and dependencies hold as before (the move that
unlocks processes pinned by dependencies), and the service term uses moved'[s] = moved[s] + Δ_p + Δ_q.

**Room prefilter.** room_m[m] = C[m] − U[m], and C[m] − T[m] on transient resources, and for each process q,
room_q[q] = C − U + r_q on q's machine, at most C − T + r_q·[a(q) ≠ a⁰(q)] on transient resources (both kept
up to date for the machines a move touches). A shift of p to m ≠ a⁰(p) fits iff r_p ≤ room_m[m]; a swap of p
with q fits iff r_p ≤ room_q[q] and r_q ≤ the same room of p on m₀, unless q is on a⁰(p) or q's initial machine
is m₀ (a process going home adds no transient usage). So one (P, R) comparison keeps every candidate that may
fit (those few exceptions included) and the exact checks above run on those only: same moves, same order.

**Soft transient capacity** (`soft` > 0, annealing only): transient usage over capacity is allowed and costs
`soft` per unit, over_t[m] = Σ_r max(0, T[m, r] − C[m, r]) on transient resources; shift and swap deltas then
add soft·Δover_t of the two machines, every other constraint stays hard. `anneal(soft=(w₀, w₁))` raises the
weight geometrically over the phase, counts only feasible assignments as its best, and at the end repairs
(`_repair`: descents over the processes of machines still over, at 10·w₁ then 100·w₁; then `_eject`: a process
moved onto such a machine goes home, or to a machine with transient room for it, after one process there moves
out) and descends with hard constraints again.
Where transient capacity is the binding constraint, the walk crosses the infeasible region between feasible
assignments that no feasible path joins (measurements in docs/benchmarks.md, ROADEF section).

The compiled moves of `moves` (descent, annealing, big process rearrangements) use the same formulas one
candidate at a time; this module's vectorised evaluator remains for soft annealing and as their reference in tests.
It needs numpy only.

`descend` is a best-improvement descent over a work queue of processes (first the whole set in random order;
after a move, the processes of the machines it touched are queued again): for each process, its best shift and
its best swap, the better one applied when ΔF < 0.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from .instance import service_links

if TYPE_CHECKING:
    import random

    from .instance import Instance


class MoveState:
    """Incremental state of one assignment (see the module docstring)."""

    def __init__(self, inst: Instance, initial: np.ndarray, current: np.ndarray) -> None:
        self.inst = inst
        self.a0 = np.asarray(initial, dtype=np.int64).copy()
        self.req = inst.requirement
        self.cap = inst.capacity
        self.safety = inst.safety
        self.lw = inst.load_weight
        self.trans = np.flatnonzero(inst.transient)
        self.cap_t = self.cap[:, self.trans]
        self.bal = [(b.r1, b.r2, b.target, b.weight) for b in inst.balances if b.weight]
        self.pm_w = inst.process_move_cost * inst.weight_process_move
        self.mm_w = inst.machine_move_cost * inst.weight_machine_move
        self.w_s = int(inst.weight_service_move)
        self.svc = inst.service
        order = np.argsort(inst.service, kind="stable")
        self.svc_procs = np.split(order, np.cumsum(np.bincount(inst.service, minlength=max(1, inst.n_services)))[:-1])
        self.loc = inst.location
        self.nbh = inst.neighborhood
        self.n_loc = int(self.loc.max()) + 1
        self.n_nb = int(self.nbh.max()) + 1
        self.spread, self.deps, self.rdeps, dep = service_links(inst)
        self.n_s = len(self.spread)
        self.dep = dep
        self.linked = (dep + dep.T) > 0
        self.has_deps = bool(dep.any())
        self.a = np.empty(0, dtype=np.int64)
        self.soft = 0.0  # > 0: transient capacity is soft, each unit over it costs `soft` (see `anneal`)
        self.load(current)

    # ---- state

    def load(self, current: np.ndarray) -> None:
        """Rebuild every counter from the assignment `current`."""
        inst, a0 = self.inst, self.a0
        a = np.asarray(current, dtype=np.int64).copy()
        self.a = a
        n_m = inst.n_machines
        self.U = np.zeros((n_m, inst.n_resources), dtype=np.int64)
        np.add.at(self.U, a, self.req)
        moved = a != a0
        self.T = self.U.copy()
        np.add.at(self.T, a0[moved], self.req[moved])
        self.moved = np.bincount(self.svc[moved], minlength=self.n_s).astype(np.int64)
        self.move_sum = int(self.pm_w[moved].sum()) + int(self.mm_w[a0, a].sum())
        self.mc = self.cost(np.arange(n_m), self.U)
        self.occ = np.zeros((self.n_s, n_m), dtype=np.int64)
        np.add.at(self.occ, (self.svc, a), 1)
        self.sl = np.zeros((self.n_s, self.n_loc), dtype=np.int64)
        np.add.at(self.sl, (self.svc, self.loc[a]), 1)
        self.nloc = (self.sl > 0).sum(axis=1)
        self.nb = np.zeros((self.n_s, self.n_nb), dtype=np.int64)
        np.add.at(self.nb, (self.svc, self.nbh[a]), 1)
        self.missing = self.dep @ (self.nb == 0).astype(np.int64)
        self.needed = self.dep.T @ (self.nb > 0).astype(np.int64)
        self.over_t = self._over_t(np.arange(n_m), self.T[:, self.trans])
        self._all_rooms()

    def _over_t(self, rows: np.ndarray | int, t: np.ndarray) -> np.ndarray:
        """Σ over transient resources of the usage `t` above capacity, per machine of `rows` (0 when feasible)."""
        return np.maximum(t - self.cap_t[rows], 0).sum(axis=-1)

    def _all_rooms(self) -> None:
        self.room_m = self.cap - self.U
        if not self.soft:
            self.room_m[:, self.trans] = self.cap_t - self.T[:, self.trans]
        self.room_q = np.empty_like(self.req)
        self._refresh_rooms(np.arange(len(self.a)))

    def _refresh_rooms(self, idx: np.ndarray) -> None:
        """room_q[q] for the processes `idx`: the room p may take on q's machine when q leaves it,
        C − U + r_q, and on transient resources (unless soft) at most C − T + r_q·[a(q) ≠ a⁰(q)]."""
        m = self.a[idx]
        rq = self.req[idx]
        room = self.cap[m] - self.U[m] + rq
        if len(self.trans) and not self.soft:
            tr = self.trans
            away = (m != self.a0[idx])[:, None]
            room[:, tr] = np.minimum(room[:, tr], self.cap_t[m] - self.T[m][:, tr] + rq[:, tr] * away)
        self.room_q[idx] = room

    @property
    def objective(self) -> int:
        return int(self.mc.sum()) + self.move_sum + self.w_s * int(self.moved.max())

    def cost(self, rows: np.ndarray | int, u: np.ndarray) -> np.ndarray:
        """Load + balance cost c(m, u) of machines `rows` at usages `u` (one row each; or one machine, many u)."""
        c = (np.maximum(u - self.safety[rows], 0) * self.lw).sum(axis=1)
        for r1, r2, t, w in self.bal:
            c = c + np.maximum(t * (self.cap[rows, r1] - u[:, r1]) - (self.cap[rows, r2] - u[:, r2]), 0) * w
        return c

    def _relocate(self, p: int, m1: int) -> None:
        """Move process p to machine m1, updating every counter (feasibility is the caller's business)."""
        a, s = self.a, int(self.svc[p])
        m0, a0p = int(a[p]), int(self.a0[p])
        if m0 == m1:
            return
        r = self.req[p]
        a[p] = m1
        self.U[m0] -= r
        self.U[m1] += r
        if m0 != a0p:
            self.T[m0] -= r
        if m1 != a0p:
            self.T[m1] += r
        was, now = int(m0 != a0p), int(m1 != a0p)
        self.moved[s] += now - was
        self.move_sum += int(self.pm_w[p]) * (now - was) + int(self.mm_w[a0p, m1]) - int(self.mm_w[a0p, m0])
        both = np.array([m0, m1])
        self.mc[both] = self.cost(both, self.U[both])
        self.room_m[both] = self.cap[both] - self.U[both]
        if len(self.trans):
            t_both = self.T[np.ix_(both, self.trans)]
            self.over_t[both] = self._over_t(both, t_both)
            if not self.soft:
                self.room_m[np.ix_(both, self.trans)] = self.cap_t[both] - t_both
        self._refresh_rooms(np.flatnonzero((a == m0) | (a == m1)))
        self.occ[s, m0] -= 1
        self.occ[s, m1] += 1
        l0, l1 = int(self.loc[m0]), int(self.loc[m1])
        if l0 != l1:
            self.sl[s, l0] -= 1
            if self.sl[s, l0] == 0:
                self.nloc[s] -= 1
            self.sl[s, l1] += 1
            if self.sl[s, l1] == 1:
                self.nloc[s] += 1
        n0, n1 = int(self.nbh[m0]), int(self.nbh[m1])
        if n0 != n1:
            self.nb[s, n0] -= 1
            if self.nb[s, n0] == 0:
                for d in self.deps[s]:
                    self.needed[d, n0] -= 1
                for s2 in self.rdeps[s]:
                    self.missing[s2, n0] += 1
            self.nb[s, n1] += 1
            if self.nb[s, n1] == 1:
                for d in self.deps[s]:
                    self.needed[d, n1] += 1
                for s2 in self.rdeps[s]:
                    self.missing[s2, n1] -= 1

    def apply_shift(self, p: int, m: int) -> None:
        self._relocate(p, m)

    def apply_swap(self, p: int, q: int) -> None:
        mp, mq = int(self.a[p]), int(self.a[q])
        self._relocate(p, mq)
        self._relocate(q, mp)

    # ---- move evaluation

    def _service_max_rest(self) -> tuple[np.ndarray, np.ndarray]:
        """The three largest moved counters (values, services), padded with zeros."""
        k = min(3, self.n_s)
        idx = np.argpartition(-self.moved, k - 1)[:k] if self.n_s > k else np.arange(self.n_s)
        idx = idx[np.argsort(-self.moved[idx], kind="stable")]
        vals = self.moved[idx]
        if len(idx) < 3:
            idx = np.concatenate([idx, np.full(3 - len(idx), -1)])
            vals = np.concatenate([vals, np.zeros(3 - len(vals), dtype=np.int64)])
        return vals, idx

    def shift_deltas(self, p: int) -> tuple[np.ndarray, np.ndarray]:
        """(machines m, ΔF) of every feasible shift of p."""
        a, s = self.a, int(self.svc[p])
        m0, a0p = int(a[p]), int(self.a0[p])
        r = self.req[p]
        # room_m = C − U, and C − T on transient resources: the whole check for m ≠ a⁰(p), a prefilter for a⁰(p)
        ok = (self.occ[s] == 0) & (self.room_m >= r).all(axis=1)
        ok[a0p] = self.occ[s, a0p] == 0
        ok[m0] = False
        cand = np.flatnonzero(ok)
        if not len(cand):
            return cand, cand
        u_new = self.U[cand] + r
        ok = (u_new <= self.cap[cand]).all(axis=1)
        pen = None
        if len(self.trans):
            tr = self.trans
            t_new = self.T[:, tr][cand] + r[tr] * (cand != a0p)[:, None]
            if self.soft:
                t0 = self.T[m0, tr] - r[tr] * int(m0 != a0p)
                pen = self.soft * (self._over_t(cand, t_new) - self.over_t[cand]
                                   + float(self._over_t(m0, t0) - self.over_t[m0]))
            else:
                ok &= (t_new <= self.cap_t[cand]).all(axis=1)
        if self.spread[s] > 1:
            l0 = self.loc[m0]
            lc = self.loc[cand]
            nl = self.nloc[s] - ((self.sl[s, l0] == 1) & (lc != l0)) + (self.sl[s, lc] == 0)
            ok &= nl >= self.spread[s]
        if self.has_deps:
            n0 = self.nbh[m0]
            nc = self.nbh[cand]
            cross = nc != n0
            enter_bad = (self.nb[s, nc] == 0) & (self.missing[s, nc] > 0)
            leave_bad = (self.nb[s, n0] == 1) & (self.needed[s, n0] > 0)
            ok &= ~(cross & (enter_bad | leave_bad))
        cand, u_new = cand[ok], u_new[ok]
        if not len(cand):
            return cand, cand.astype(np.int64)
        delta = self.cost(cand, u_new) - self.mc[cand]
        if pen is not None:
            delta = delta + pen[ok]
        delta += int(self.cost(np.array([m0]), (self.U[m0] - r)[None, :])[0] - self.mc[m0])
        was = int(m0 != a0p)
        now = (cand != a0p).astype(np.int64)
        delta += int(self.pm_w[p]) * (now - was) + self.mm_w[a0p, cand] - int(self.mm_w[a0p, m0])
        if self.w_s:
            cur = int(self.moved.max())
            rest = self.moved.copy()
            rest[s] = 0
            new_max = np.maximum(self.moved[s] - was + now, int(rest.max()))
            delta += self.w_s * (new_max - cur)
        return cand, delta

    def swap_deltas(self, p: int) -> tuple[np.ndarray, np.ndarray]:
        """(processes q, ΔF) of every feasible swap of p with a process q on another machine."""
        sub = self._swap_room_prefilter(p)
        q1, d1 = self._swap_other_service(p, sub)
        q2, d2 = self._swap_same_service(p, sub)
        if not len(q2):
            return q1, d1
        return np.concatenate([q1, q2]), np.concatenate([d1, d2])

    def _swap_room_prefilter(self, p: int) -> np.ndarray:
        """The processes q on other machines than p's that may swap with p as far as room goes (ascending): q fits
        the room p leaves on m₀ and p fits the room q leaves (`room_q`). Both are the exact capacity and transient
        checks unless q is on p's initial machine or q's initial machine is m₀ (a process going home adds no
        transient usage); those few are kept for the exact checks that follow."""
        a, a0 = self.a, self.a0
        m0, a0p = int(a[p]), int(a0[p])
        r = self.req[p]
        room0 = self.cap[m0] - self.U[m0] + r
        if len(self.trans) and not self.soft:
            tr = self.trans
            room0[tr] = np.minimum(room0[tr], self.cap_t[m0] - self.T[m0, tr] + r[tr] * int(m0 != a0p))
        ok = (self.req <= room0).all(axis=1) & (self.room_q >= r).all(axis=1)
        ok |= (a == a0p) | (a0 == m0)
        ok &= a != m0
        return np.flatnonzero(ok)

    def _swap_same_service(self, p: int, sub: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Swaps of p with another process of its own service (among `sub`, default all): machines, locations
        and neighborhoods keep the same services, so only room, transient room and costs change."""
        a, s = self.a, int(self.svc[p])
        q = self.svc_procs[s] if sub is None else sub[self.svc[sub] == s]
        q = q[q != p]
        if not len(q):
            return q, q
        m0, a0p = int(a[p]), int(self.a0[p])
        r = self.req[p]
        m1 = a[q]
        rq = self.req[q]
        u0 = self.U[m0] - r + rq
        u1 = self.U[m1] - rq + r
        ok = (u0 <= self.cap[m0]).all(axis=1) & (u1 <= self.cap[m1]).all(axis=1)
        a0q = self.a0[q]
        ok &= self._swap_transient_ok(m0, a0p, r, m1, a0q, rq)
        q, m1, u0, u1, a0q = q[ok], m1[ok], u0[ok], u1[ok], a0q[ok]
        if not len(q):
            return q, q
        delta, was_p, now_p, was_q, now_q = self._swap_delta(p, m0, a0p, u0, q, m1, a0q, u1)
        if self.w_s:
            rest = self.moved.copy()
            rest[s] = 0
            new_max = np.maximum(self.moved[s] - was_p + now_p - was_q + now_q, int(rest.max()))
            delta += self.w_s * (new_max - int(self.moved.max()))
        return q, delta

    def _swap_transient_ok(self, m0: int, a0p: int, r: np.ndarray, m1: np.ndarray, a0q: np.ndarray,
                           rq: np.ndarray) -> np.ndarray:
        """Transient capacity after swapping p (on m₀, initially on a0p, requests r) with each q (on m₁, initially
        on a0q, requests rq): a process counts on a machine it is on or started on, so T[m₀] loses r unless m₀ is
        p's initial machine and gains rq unless it is q's; symmetrically on m₁. When soft, every swap passes."""
        if not len(self.trans) or self.soft:
            return np.ones(len(m1), dtype=bool)
        t0, t1 = self._swap_t(m0, a0p, r, m1, a0q, rq)
        return (t0 <= self.cap_t[m0]).all(axis=1) & (t1 <= self.cap_t[m1]).all(axis=1)

    def _swap_t(self, m0: int, a0p: int, r: np.ndarray, m1: np.ndarray, a0q: np.ndarray, rq: np.ndarray):
        tr = self.trans
        rqt = rq[:, tr]
        t0 = self.T[m0, tr] - r[tr] * int(m0 != a0p) + rqt * (m0 != a0q)[:, None]
        t1 = self.T[:, tr][m1] - rqt * (m1 != a0q)[:, None] + r[tr] * (m1 != a0p)[:, None]
        return t0, t1

    def _swap_penalty(self, m0: int, a0p: int, r: np.ndarray, m1: np.ndarray, a0q: np.ndarray, rq: np.ndarray):
        """Soft mode: the change of `soft` × transient usage over capacity on m₀ and m₁ of each swap."""
        t0, t1 = self._swap_t(m0, a0p, r, m1, a0q, rq)
        return self.soft * (self._over_t(m0, t0) - self.over_t[m0] + self._over_t(m1, t1) - self.over_t[m1])

    def _swap_delta(self, p: int, m0: int, a0p: int, u0: np.ndarray, q: np.ndarray, m1: np.ndarray,
                    a0q: np.ndarray, u1: np.ndarray):
        """Load/balance and process/machine move cost change of each swap (service move cost excluded; in soft mode
        with the transient penalty), with whether p and each q were / will be away from their initial machines."""
        delta = self.cost(m0, u0) - int(self.mc[m0]) + self.cost(m1, u1) - self.mc[m1]
        was_p = int(m0 != a0p)
        now_p = (m1 != a0p).astype(np.int64)
        was_q = (m1 != a0q).astype(np.int64)
        now_q = (m0 != a0q).astype(np.int64)
        delta += int(self.pm_w[p]) * (now_p - was_p) + self.mm_w[a0p, m1] - int(self.mm_w[a0p, m0])
        delta += self.pm_w[q] * (now_q - was_q) + self.mm_w[a0q, m0] - self.mm_w[a0q, m1]
        if self.soft and len(self.trans):
            delta = delta + self._swap_penalty(m0, a0p, self.req[p], m1, a0q, self.req[q])
        return delta, was_p, now_p, was_q, now_q

    def _swap_other_service(self, p: int, sub: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Swaps of p with a process q of another service (among `sub`, default all)."""
        a, s = self.a, int(self.svc[p])
        m0, a0p = int(a[p]), int(self.a0[p])
        r = self.req[p]
        svc = self.svc
        # machines without s, and services absent from m₀ (this excludes s itself and every q on m₀, since p is
        # a process of s on m₀)
        if sub is None:
            q = np.flatnonzero((self.occ[s] == 0)[a] & (self.occ[:, m0] == 0)[svc])
        else:
            q = sub[(self.occ[s] == 0)[a[sub]] & (self.occ[:, m0] == 0)[svc[sub]]]
        if not len(q):
            return q, q
        m1 = a[q]
        rq = self.req[q]
        ok = (rq <= self.cap[m0] - self.U[m0] + r).all(axis=1) & (rq >= (self.U + r - self.cap)[m1]).all(axis=1)
        q, m1, rq = q[ok], m1[ok], rq[ok]
        if not len(q):
            return q, q
        u0 = self.U[m0] - r + rq
        u1 = self.U[m1] - rq + r
        a0q = self.a0[q]
        ok = self._swap_transient_ok(m0, a0p, r, m1, a0q, rq)
        t = svc[q]
        l0, l1 = self.loc[m0], self.loc[m1]
        if self.spread[s] > 1:
            ok &= self.nloc[s] - ((self.sl[s, l0] == 1) & (l1 != l0)) + (self.sl[s, l1] == 0) >= self.spread[s]
        sp_t = self.spread[t]
        need_t = sp_t > 1
        if need_t.any():
            nl_t = self.nloc[t] - ((self.sl[t, l1] == 1) & (l1 != l0)) + (self.sl[t, l0] == 0)
            ok &= ~need_t | (nl_t >= sp_t)
        if self.has_deps:
            n0, n1 = self.nbh[m0], self.nbh[m1]
            cross = n1 != n0
            bad_s = ((self.nb[s, n1] == 0) & (self.missing[s, n1] > 0)) | (
                (self.nb[s, n0] == 1) & (self.needed[s, n0] > 0))
            bad_t = ((self.nb[t, n0] == 0) & (self.missing[t, n0] > 0)) | (
                (self.nb[t, n1] == 1) & (self.needed[t, n1] > 0))
            ok &= ~(cross & (bad_s | bad_t | self.linked[s, t]))
        q, m1, u0, u1, a0q, t = q[ok], m1[ok], u0[ok], u1[ok], a0q[ok], t[ok]
        if not len(q):
            return q, q
        delta, was_p, now_p, was_q, now_q = self._swap_delta(p, m0, a0p, u0, q, m1, a0q, u1)
        if self.w_s:
            vals, idx = self._service_max_rest()
            rest = np.where((idx[0] != s) & (idx[0] != t), vals[0],
                            np.where((idx[1] != s) & (idx[1] != t), vals[1], vals[2]))
            new_max = np.maximum(np.maximum(self.moved[s] - was_p + now_p, self.moved[t] - was_q + now_q), rest)
            delta += self.w_s * (new_max - int(self.moved.max()))
        return q, delta

    # ---- descent

    def descend(self, rng: random.Random, deadline: float, queue: list[int] | None = None,
                swaps: bool = True) -> int:
        """Best-improvement shift/swap descent over a queue of processes (see the module docstring)."""
        n_p = len(self.a)
        if queue is None:
            queue = list(range(n_p))
            rng.shuffle(queue)
        queued = np.zeros(n_p, dtype=bool)
        queued[queue] = True
        head = 0
        moves = 0
        while head < len(queue):
            if time.monotonic() > deadline:
                break
            p = queue[head]
            head += 1
            queued[p] = False
            best, kind, target = 0, 0, -1
            cand, delta = self.shift_deltas(p)
            if len(cand):
                k = int(np.argmin(delta))
                if delta[k] < best:
                    best, kind, target = int(delta[k]), 1, int(cand[k])
            if swaps:
                cand, delta = self.swap_deltas(p)
                if len(cand):
                    k = int(np.argmin(delta))
                    if delta[k] < best:
                        best, kind, target = int(delta[k]), 2, int(cand[k])
            if not kind:
                continue
            m0 = int(self.a[p])
            m1 = target if kind == 1 else int(self.a[target])
            if kind == 1:
                self.apply_shift(p, target)
            else:
                self.apply_swap(p, target)
            moves += 1
            touched = np.flatnonzero((self.a == m0) | (self.a == m1))
            fresh = touched[~queued[touched]]
            if len(fresh):
                order = fresh.tolist()
                rng.shuffle(order)
                queue.extend(order)
                queued[fresh] = True
        return moves

    # ---- annealing

    def anneal(self, rng: random.Random, deadline: float, steps: int, t_start: float, t_end: float,
               soft: tuple[float, float] | None = None) -> tuple[np.ndarray, int]:
        """Heat-bath annealing: `steps` times, a random process p moves to one of its feasible shifts or swaps (or
        stays), chosen with probability ∝ exp(−ΔF/T) (Gumbel-max sampling), T geometric from `t_start` to `t_end`.
        With `soft` = (w_start, w_end), transient capacity is not enforced but each unit of transient usage over
        capacity adds w to ΔF, w geometric from w_start to w_end (so the walk crosses transiently infeasible
        assignments and is pushed back towards feasible ones); only feasible assignments count as the best.
        Returns the best assignment met and its objective; the state ends on the last one (hard again)."""
        gen = np.random.default_rng(rng.randrange(1 << 32))
        best_a, best = self.a.copy(), self.objective
        cur = best
        n_p = len(self.a)
        ratio = (t_end / t_start) ** (1.0 / max(1, steps - 1)) if t_start > 0 and t_end > 0 else 1.0
        temp = t_start
        soft_on = soft is not None and len(self.trans) > 0 and soft[0] > 0
        if soft_on:
            w_ratio = (soft[1] / soft[0]) ** (1.0 / max(1, steps - 1))
            self.soft = float(soft[0])
            self._all_rooms()
        try:
            for i in range(steps):
                if not i % 64 and time.monotonic() > deadline:
                    break
                p = rng.randrange(n_p)
                c1, d1 = self.shift_deltas(p)
                c2, d2 = self.swap_deltas(p)
                n1 = len(c1)
                d = np.concatenate([[0], d1, d2]).astype(float)
                k = int(np.argmin(d - temp * gen.gumbel(size=len(d)))) if temp > 0 else int(np.argmin(d))
                temp *= ratio
                if soft_on:
                    self.soft *= w_ratio
                if k == 0:
                    continue
                if k <= n1:
                    self.apply_shift(p, int(c1[k - 1]))
                else:
                    self.apply_swap(p, int(c2[k - 1 - n1]))
                if soft_on:
                    if self.over_t.any():
                        continue
                    cur = self.objective
                else:
                    cur += int(d[k])
                if cur < best:
                    best = cur
                    best_a = self.a.copy()
            if soft_on:  # back to a feasible assignment, then a plain descent from it
                self._repair(rng, deadline, soft[1])
                if not self.over_t.any():
                    self.soft = 0.0
                    self._all_rooms()
                    self.descend(rng, deadline)
                    cur = self.objective
                    if cur < best:
                        best = cur
                        best_a = self.a.copy()
        finally:
            if soft_on:
                self.soft = 0.0
                self._all_rooms()
        return best_a, best

    def _repair(self, rng: random.Random, deadline: float, w: float) -> None:
        """Soft mode: descents over the processes of machines over transient capacity, the weight of a unit over
        raised to 10·w then 100·w, until no machine is over (or the moves run out)."""
        for f in (10.0, 100.0):
            if not self.over_t.any():
                return
            self.soft = w * f
            self._all_rooms()
            queue = np.flatnonzero(np.isin(self.a, np.flatnonzero(self.over_t > 0))).tolist()
            rng.shuffle(queue)
            self.descend(rng, deadline, queue)
        # still over: move a process that was moved onto such a machine to its home or to a machine with
        # transient room for it, after moving one process out of that machine
        for m in np.flatnonzero(self.over_t > 0).tolist():
            for p in np.flatnonzero((self.a == m) & (self.a0 != m)).tolist():
                if not self.over_t[m] or time.monotonic() > deadline:
                    break
                self._eject(p)

    def _eject(self, p: int, width: int = 8) -> bool:
        """Soft mode: for a target h of p (its initial machine, then up to `width` machines with transient room
        for it, most room first) and each process q on h, q's best shift and then p's shift to h, kept when the
        two together lower ΔF; else q goes back. Returns whether p moved."""
        h0 = int(self.a0[p])
        targets = [h0]
        if len(self.trans):
            spare = (self.cap_t - self.T[:, self.trans] - self.req[p, self.trans]).min(axis=1)
            spare[[h0, int(self.a[p])]] = -1
            order = np.argsort(-spare, kind="stable")[:width]
            targets += [int(h) for h in order if spare[h] >= 0]
        for h in targets:
            for q in np.flatnonzero(self.a == h).tolist():
                cq, dq = self.shift_deltas(q)
                if not len(cq):
                    continue
                k = int(np.argmin(dq))
                self.apply_shift(q, int(cq[k]))
                cp, dp = self.shift_deltas(p)
                at = np.flatnonzero(cp == h)
                if len(at) and dq[k] + dp[at[0]] < 0:
                    self.apply_shift(p, h)
                    return True
                self.apply_shift(q, h)
        return False
