"""The exact ROADEF 2012 objective and hard constraints of an assignment, as the challenge's checker computes them.

For the initial assignment a⁰ and a new one a, with U[m, r] = Σ_{a(p)=m} req[p, r]:

    F = Σ_r wₗ(r) · Σ_m max(0, U[m, r] − SC[m, r])                                       load cost
      + Σ_b w_b · Σ_m max(0, t_b · (C[m, r1_b] − U[m, r1_b]) − (C[m, r2_b] − U[m, r2_b]))   balance cost
      + wₚ · Σ_{a(p)≠a⁰(p)} PMC[p]                                                        process move cost
      + w_s · max_s #{p of s : a(p) ≠ a⁰(p)}                                              service move cost
      + w_m · Σ_p MMC[a⁰(p), a(p)]                                                        machine move cost

and a is feasible when U ≤ C (capacity); T ≤ C on transient resources, with T[m] = U[m] + Σ_{a⁰(p)=m≠a(p)} req[p]
(a moved process counts on its initial machine too); no two processes of a service share a machine (conflict);
each service spans at least spreadMin distinct locations (spread); and every neighborhood that hosts a service s
also hosts each service s depends on (dependency). `score` returns both; the search re-checks every assignment it
keeps with `objective` and `violations`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .instance import Instance, check_assignment


@dataclass(frozen=True)
class Objective:
    """The official objective, term by term; every term is already multiplied by its weight."""

    load: int
    balance: int
    process_move: int
    service_move: int
    machine_move: int
    load_by_resource: tuple[int, ...] = ()
    balance_by_rule: tuple[int, ...] = ()
    moved_processes: int = 0

    @property
    def total(self) -> int:
        return self.load + self.balance + self.process_move + self.service_move + self.machine_move

    def as_dict(self) -> dict[str, int]:
        return {
            "total": self.total, "load": self.load, "balance": self.balance, "process_move": self.process_move,
            "service_move": self.service_move, "machine_move": self.machine_move,
            "moved_processes": self.moved_processes,
        }


def usage(inst: Instance, a: np.ndarray) -> np.ndarray:
    """(M, R) resource usage of assignment `a`."""
    u = np.zeros((inst.n_machines, inst.n_resources), dtype=np.int64)
    np.add.at(u, a, inst.requirement)
    return u


def objective(inst: Instance, initial: np.ndarray, new: np.ndarray, u: np.ndarray | None = None) -> Objective:
    """The official objective of `new` (moves counted against `initial`); no constraint checks."""
    if u is None:
        u = usage(inst, new)
    load_r = np.maximum(u - inst.safety, 0).sum(axis=0) * inst.load_weight
    bal = []
    for b in inst.balances:
        avail1 = inst.capacity[:, b.r1] - u[:, b.r1]
        avail2 = inst.capacity[:, b.r2] - u[:, b.r2]
        bal.append(int(np.maximum(b.target * avail1 - avail2, 0).sum()) * b.weight)
    moved = new != initial
    pm = int(inst.process_move_cost[moved].sum()) * inst.weight_process_move
    per_service = np.bincount(inst.service[moved], minlength=max(1, inst.n_services))
    sm = int(per_service.max()) * inst.weight_service_move
    mm = int(inst.machine_move_cost[initial, new].sum()) * inst.weight_machine_move
    return Objective(int(load_r.sum()), sum(bal), pm, sm, mm, tuple(int(x) for x in load_r), tuple(bal),
                     int(moved.sum()))


def machine_costs(inst: Instance, u: np.ndarray) -> np.ndarray:
    """(M,) load + balance cost of each machine at usage `u` (the part of F that is per machine)."""
    cost = (np.maximum(u - inst.safety, 0) * inst.load_weight).sum(axis=1)
    for b in inst.balances:
        av1 = inst.capacity[:, b.r1] - u[:, b.r1]
        av2 = inst.capacity[:, b.r2] - u[:, b.r2]
        cost = cost + np.maximum(b.target * av1 - av2, 0) * b.weight
    return cost


def violations(inst: Instance, initial: np.ndarray, new: np.ndarray, u: np.ndarray | None = None) -> list[str]:
    """Every hard-constraint violation of `new`, one readable line each (empty when feasible)."""
    out: list[str] = []
    if u is None:
        u = usage(inst, new)
    moved = new != initial
    tu = u.copy()  # transient usage: a moved process also counts on its initial machine
    np.add.at(tu, initial[moved], inst.requirement[moved])
    for m, r in zip(*np.nonzero(u > inst.capacity), strict=True):
        out.append(f"capacity: machine {m} resource {r}: usage {u[m, r]} > capacity {inst.capacity[m, r]}")
    over_t = (tu > inst.capacity) & (u <= inst.capacity) & inst.transient[None, :]
    for m, r in zip(*np.nonzero(over_t), strict=True):
        out.append(f"transient: machine {m} resource {r}: usage {tu[m, r]} counting processes moved away "
                   f"> capacity {inst.capacity[m, r]}")
    by_service: dict[int, list[int]] = {}
    for p, s in enumerate(inst.service.tolist()):
        by_service.setdefault(s, []).append(p)
    nbh_of: dict[int, set[int]] = {}
    for s, procs in sorted(by_service.items()):
        machines = new[procs]
        uniq, counts = np.unique(machines, return_counts=True)
        for m, c in zip(uniq.tolist(), counts.tolist(), strict=True):
            if c > 1:
                out.append(f"conflict: service {s}: {c} processes on machine {m}")
        n_loc = len(np.unique(inst.location[machines]))
        if n_loc < inst.spread_min[s]:
            out.append(f"spread: service {s}: {n_loc} distinct locations < spreadMin {inst.spread_min[s]}")
        nbh_of[s] = set(inst.neighborhood[machines].tolist())
    for s, deps in enumerate(inst.dependencies):
        for d in deps:
            missing = sorted(nbh_of.get(s, set()) - nbh_of.get(d, set()))
            for n in missing:
                out.append(f"dependency: service {s} runs in neighborhood {n} but service {d} it depends on does not")
    return out


def score(instance: Instance, initial: Sequence[int] | np.ndarray, new: Sequence[int] | np.ndarray,
          ) -> tuple[Objective, list[str]]:
    """Exact official objective of `new` against `initial`, and the list of hard-constraint violations."""
    a0 = check_assignment(instance, np.asarray(initial), "initial assignment")
    a = check_assignment(instance, np.asarray(new), "new assignment")
    u = usage(instance, a)
    return objective(instance, a0, a, u), violations(instance, a0, a, u)
