"""Which part of the assignment a CP-SAT round frees: machines K and processes F on them (about `max_free`).

`pick_machines` draws one kind of neighbourhood per round:

- machines **linked by moved processes** (a moved process's current and initial machines, then the machines linked
  to those by other moved processes), preferring to free the moved processes: 15 % of the rounds while a machine
  has load or balance cost, 60 % once none has, where only bringing processes home is left to gain;
- **costly and roomy** machines (`hot_and_roomy`): half drawn ∝ machine cost (load + balance), half ∝ relative
  room below safety capacity Σ_r max(0, SC[m,r] − U[m,r]) / SC[m,r]; several costly machines at once let CP-SAT
  exchange their large processes and send the small ones to the roomy machines;
- **a costly machine and partners** drawn ∝ cost, the partners (60 % of the time) ∝ their room on the resources
  where the costly machine is over its safety capacity;
- the machines of **one neighborhood** (moves inside it keep every dependency);
- the processes of **a few services**, on a few of their machines;
- **random** machines.

(With a cost left: 35 %, 10 %, 15 %, 20 % and 20 % of the other rounds, in this order from costly-and-roomy; with
none, 60 % one neighborhood, 20 % a few services, 20 % random.)

Then machines are taken in that order (the chosen ones first, the rest shuffled) until they hold about the target
number of processes, or, half the time on more than 8 machines, "wide": 10–40 machines and a sample of their
processes (the preferred ones, else those of costly machines, first). Every draw comes from `search.rng`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .search import RoadefLNS


def pick_machines(search: RoadefLNS) -> tuple[list[int], list[int]]:
    """(machines K, processes F currently on K that are freed)."""
    rng, inst = search.rng, search.inst
    n_m = inst.n_machines
    target = max(2, int(search.max_free))
    kind = rng.random()
    first: list[int] = []
    preferred: list[int] = []
    head_n = 0  # leading machines of `pool` chosen on purpose (not shuffled)
    moved = np.flatnonzero(search.a != search.a0)
    # machines linked by moved processes (current and initial machines); most rounds once the load and balance
    # costs are 0, where only bringing processes home is left to gain
    linked_share = 0.15 if search.machine_cost.sum() > 0 else 0.6
    if rng.random() < linked_share and len(moved):
        p = int(moved[rng.randrange(len(moved))])
        first = [int(search.a[p]), int(search.a0[p])]
        seen_m = set(first)
        i, count = 0, 0
        while i < len(first) and count < target and len(first) < max(2, target // 3):
            m = first[i]
            i += 1
            count += len(search.procs_on[m])
            on = search.procs_on[m]
            away = np.flatnonzero((search.a0 == m) & (search.a != m))
            links = [int(x) for x in search.a0[on[search.a0[on] != m]]] + [int(x) for x in search.a[away]]
            rng.shuffle(links)
            for m2 in links:
                if m2 not in seen_m:
                    seen_m.add(m2)
                    first.append(m2)
        preferred = [int(q) for m in first for q in search.procs_on[m] if search.a[q] != search.a0[q]]
        pool = list(range(n_m))
    elif kind < search.hot_share and search.machine_cost.sum() > 0:
        return hot_and_roomy(search, target)
    elif kind < 0.45 and search.machine_cost.sum() > 0:  # a costly machine and partners
        first = [draw(search, search.machine_cost.astype(float))]
        pool = list(range(n_m))
        if rng.random() < 0.6:  # partners with room where the costly machine is short of it
            hot = first[0]
            short = (search.U[hot] - inst.safety[hot]) > 0
            if not short.any():
                short = np.ones(inst.n_resources, dtype=bool)
            room = np.maximum(inst.safety[:, short] - search.U[:, short], 0) / np.maximum(inst.safety[:, short], 1)
            slack = room.sum(axis=1) + 1e-9
            slack[hot] = 0.0
            pool = []
            cum = np.cumsum(slack)
            for _ in range(min(n_m, 6)):
                pool.append(min(n_m - 1, int(np.searchsorted(cum, rng.random() * cum[-1], side="right"))))
            head_n = len(pool)
            pool += list(range(n_m))
    elif kind < 0.6:  # machines of one neighborhood (moves inside keep dependencies)
        n = search.nbh[rng.randrange(n_m)]
        pool = list(search.machines_of_nb[n])
        if len(pool) < 2:
            pool = list(range(n_m))
    elif kind < 0.8 and inst.n_services:  # processes of a few services
        pool = list(range(n_m))
        for _ in range(rng.randint(1, 3)):
            s = rng.randrange(inst.n_services)
            preferred.extend(search.svc_procs[s].tolist())
        first = sorted({int(search.a[p]) for p in preferred})
        rng.shuffle(first)
        first = first[: max(2, target // 4)]
        preferred = [p for p in preferred if int(search.a[p]) in set(first)]
    else:  # random machines
        pool = list(range(n_m))
    head, tail = pool[:head_n], pool[head_n:]
    rng.shuffle(tail)
    pool = head + tail
    machines: list[int] = []
    seen: set[int] = set()
    count = 0
    # wide: many machines, a sample of their processes (routes processes between many machines at once)
    wide = n_m > 8 and rng.random() < search.wide_share
    n_wide = rng.randint(min(n_m, 10), min(n_m, 40))
    for m in [*first, *pool]:
        if m in seen:
            continue
        seen.add(m)
        machines.append(m)
        count += len(search.procs_on[m])
        if wide:
            if len(machines) >= n_wide:
                break
        elif len(machines) >= 2 and (count >= target or len(machines) >= max(2, target // 3)):
            break
    procs = [int(p) for m in machines for p in search.procs_on[m]]
    if len(procs) > target:
        if wide and not preferred and rng.random() < 0.5:  # processes of costly machines first
            preferred = [p for p in procs if search.machine_cost[search.a[p]] > 0]
        pref = set(preferred)
        head = [p for p in procs if p in pref]
        rest = [p for p in procs if p not in pref]
        rng.shuffle(head)
        rng.shuffle(rest)
        procs = (head + rest)[:target]
    return machines, sorted(procs)

def draw(search: RoadefLNS, w: np.ndarray) -> int:
    """An index drawn with probability ∝ the non-negative weights `w` (their sum > 0)."""
    return min(len(w) - 1, int(np.searchsorted(np.cumsum(w), search.rng.random() * w.sum(), side="right")))

def hot_and_roomy(search: RoadefLNS, target: int) -> tuple[list[int], list[int]]:
    """K machines, about `target` processes in all: half drawn ∝ machine cost (load + balance), half ∝ relative
    room below safety capacity Σ_r max(0, SC[m,r] − U[m,r]) / SC[m,r]; every process on them is freed (the
    processes of the costly ones first when there are more than `target`). Several costly machines at once let
    CP-SAT exchange their large processes and send the small ones to the roomy machines."""
    rng, inst = search.rng, search.inst
    n_m = inst.n_machines
    per = max(1.0, inst.n_processes / n_m)
    k = min(n_m, max(2, round(target / per)))
    cost = search.machine_cost.astype(float)
    room = (np.maximum(inst.safety - search.U, 0) / np.maximum(inst.safety, 1)).sum(axis=1) + 1e-9
    machines: list[int] = []
    for w, n in ((cost, max(1, k // 2)), (room, k)):
        w = w.copy()
        w[machines] = 0.0
        while len(machines) < n and w.sum() > 0:
            m = draw(search, w)
            machines.append(m)
            w[m] = 0.0
    procs = [int(p) for m in machines for p in search.procs_on[m]]
    if len(procs) > target:
        hot = [p for p in procs if search.machine_cost[search.a[p]] > 0]
        rest = [p for p in procs if search.machine_cost[search.a[p]] == 0]
        rng.shuffle(hot)
        rng.shuffle(rest)
        procs = (hot + rest)[:target]
    return machines, sorted(procs)
