"""Compiled moves for ROADEF 2012 machine reassignment: annealing, descent and big process rearrangements
(used by `search.RoadefLNS`). Needs numba, the `roadef` extra (`pip install 'kplace[roadef]'`); without it,
importing this module raises `MissingExtra` (a KplaceError and an ImportError), which the CLI prints as one line.
There is no pure-Python fallback: the numpy evaluator of `vectorised` makes about a hundredth as many moves.

The same counters and the same exact O(R) evaluation of one shift or swap as `vectorised.MoveState` (see its
docstring for the formulas), one candidate at a time:

- **state** (`_build`): U, T, moved, occ, sl, nloc, nb, missing, needed and the machine costs mc as in
  `MoveState`; the service-move term w_s·max_s moved[s] is kept exact in O(1) per move with a histogram of the
  moved counters (cnt[k] = #{s : moved[s] = k}) and its top. Every move is written to a log, so that a failed
  attempt is undone by replaying the log backwards (all counters are functions of the assignment alone).
- **annealing** (`anneal`): a step draws a process p and either a machine m ≠ a(p) (a shift, probability 1/2) or
  a process q on another machine (a swap); a feasible move is taken with probability min(1, exp(−ΔF/T))
  (Metropolis), T geometric from t_start to t_end over the work spent (`TICKS`). The best assignment is copied
  only when the walk is about to leave it (a worsening move from the best one not yet saved), so a descent costs
  no copies.
- **descent** (`descend`): best improvement over all shifts and swaps of each process of a work queue; after a
  move, the processes of both machines are queued again.
- **big process rearrangements** (`rearrange`): a machine h drawn ∝ its load cost (its load and balance cost once no
  load cost is left), a process p on it, a machine r where p alone costs less than h does now and whose initial
  transient room C − U⁰ takes p; processes on r that cover most of p's capacity deficit take their best shift
  elsewhere (a stuck one goes home after room is made there: an ejection chain two levels deep), p moves to r, a
  descent runs over r, p's old machine and the processes that started on r, and the log is undone if F rose.
  Rearrangements that leave F as it was are kept, so the walk drifts across plateaus that strict acceptance stops
  at.

Random numbers come from numba's generator, seeded at the start of each call, so a call is deterministic for its
seed. The functions are compiled on first use and cached next to this file (or in numba's user-wide cache where
that is not writable), so later processes load them quickly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from kplace.models.errors import KplaceError

from .instance import service_links


class MissingExtra(KplaceError, ImportError):
    """An optional dependency of kplace is not installed (one line for the user, and still an ImportError)."""


try:
    from numba import njit
except ImportError:
    raise MissingExtra("the ROADEF search needs numba, which is not installed: pip install 'kplace[roadef]'") from None

if TYPE_CHECKING:
    from .instance import Instance

# D (instance): req, cap, safety, lw, trans, bal, pm_w, mm_w, w_s, svc, loc, nbh, spread, linked,
#               dep_ptr, dep_idx, rdep_ptr, rdep_idx, a0
# S (state):    a, U, T, moved, occ, sl, nloc, nb, missing, needed, cnt, mc, sc (move_sum, top, log length), log

_INFEASIBLE = np.iinfo(np.int64).max
# annealing work, in ticks: a random draw and its prefilter 1, an exact evaluation 9 more, a move taken 7 more
# (fitted to timings, docs/benchmarks.md). Counted so, not in steps, a phase lasts about as long where most draws
# are evaluated as where few are, and the trajectory still depends on the seed alone.
TICKS = (1, 9, 7)


@njit(cache=True)
def _cost(m, u, safety, lw, cap, bal):
    """Load + balance cost of machine m at usage u (one row)."""
    c = 0
    for r in range(u.shape[0]):
        over = u[r] - safety[m, r]
        if over > 0:
            c += over * lw[r]
    for b in range(bal.shape[0]):
        r1, r2, t, w = bal[b, 0], bal[b, 1], bal[b, 2], bal[b, 3]
        v = t * (cap[m, r1] - u[r1]) - (cap[m, r2] - u[r2])
        if v > 0:
            c += v * w
    return c


@njit(cache=True)
def _build(D, a, log_size):
    """The state S of assignment `a` (a is kept, not copied)."""
    req, cap, safety, lw, bal, pm_w, mm_w, svc, loc, nbh, spread = (D[0], D[1], D[2], D[3], D[5], D[6], D[7], D[9],
                                                                   D[10], D[11], D[12])
    dep_ptr, dep_idx, a0 = D[14], D[15], D[18]
    n_p, n_r = req.shape
    n_m = cap.shape[0]
    n_s = spread.shape[0]
    n_loc = loc.max() + 1
    n_nb = nbh.max() + 1
    U = np.zeros((n_m, n_r), dtype=np.int64)
    T = np.zeros((n_m, n_r), dtype=np.int64)
    moved = np.zeros(n_s, dtype=np.int64)
    occ = np.zeros((n_s, n_m), dtype=np.int64)
    sl = np.zeros((n_s, n_loc), dtype=np.int64)
    nb = np.zeros((n_s, n_nb), dtype=np.int64)
    move_sum = 0
    for p in range(n_p):
        m, h, s = a[p], a0[p], svc[p]
        for r in range(n_r):
            U[m, r] += req[p, r]
            T[m, r] += req[p, r]
            if m != h:
                T[h, r] += req[p, r]
        if m != h:
            moved[s] += 1
            move_sum += pm_w[p]
        move_sum += mm_w[h, m]
        occ[s, m] += 1
        sl[s, loc[m]] += 1
        nb[s, nbh[m]] += 1
    nloc = np.zeros(n_s, dtype=np.int64)
    for s in range(n_s):
        for li in range(n_loc):
            if sl[s, li] > 0:
                nloc[s] += 1
    missing = np.zeros((n_s, n_nb), dtype=np.int64)
    needed = np.zeros((n_s, n_nb), dtype=np.int64)
    for s in range(n_s):
        for i in range(dep_ptr[s], dep_ptr[s + 1]):
            d = dep_idx[i]
            for n in range(n_nb):
                if nb[d, n] == 0:
                    missing[s, n] += 1
                if nb[s, n] > 0:
                    needed[d, n] += 1
    cnt = np.zeros(n_p + 1, dtype=np.int64)
    top = 0
    for s in range(n_s):
        cnt[moved[s]] += 1
        top = max(top, moved[s])
    mc = np.zeros(n_m, dtype=np.int64)
    for m in range(n_m):
        mc[m] = _cost(m, U[m], safety, lw, cap, bal)
    sc = np.array([move_sum, top, 0], dtype=np.int64)
    log = np.zeros((log_size, 2), dtype=np.int64)
    return a, U, T, moved, occ, sl, nloc, nb, missing, needed, cnt, mc, sc, log


@njit(cache=True)
def _objective(D, S):
    return S[11].sum() + S[12][0] + D[8] * S[12][1]


@njit(cache=True)
def _new_top(cnt, top, v_old, v_new, w_old, w_new):
    """max_s moved[s] after the moved counters of (up to) two services change v_old → v_new and w_old → w_new
    (w_old = w_new = −1 for one service); `cnt` is restored before returning."""
    cnt[v_old] -= 1
    cnt[v_new] += 1
    if w_old >= 0:
        cnt[w_old] -= 1
        cnt[w_new] += 1
    m = max(top, v_new, w_new)
    while m > 0 and cnt[m] == 0:
        m -= 1
    cnt[v_old] += 1
    cnt[v_new] -= 1
    if w_old >= 0:
        cnt[w_old] += 1
        cnt[w_new] -= 1
    return m


@njit(cache=True)
def _leave_enter_ok(D, S, s, m0, m1):
    """Spread and dependency checks of one process of service s leaving machine m0 for m1."""
    loc, nbh, spread = D[10], D[11], D[12]
    sl, nloc, nb, missing, needed = S[5], S[6], S[7], S[8], S[9]
    l0, l1 = loc[m0], loc[m1]
    if spread[s] > 1 and l0 != l1:
        nl = nloc[s]
        if sl[s, l0] == 1:
            nl -= 1
        if sl[s, l1] == 0:
            nl += 1
        if nl < spread[s]:
            return False
    n0, n1 = nbh[m0], nbh[m1]
    if n0 != n1:
        if nb[s, n1] == 0 and missing[s, n1] > 0:
            return False
        if nb[s, n0] == 1 and needed[s, n0] > 0:
            return False
    return True


@njit(cache=True)
def _shift_delta(D, S, p, m1, u0, u1):
    """ΔF of shifting p to machine m1 ≠ a(p), or _INFEASIBLE; fills u0, u1 with the two new usages."""
    req, cap, safety, lw, trans, bal, pm_w, mm_w, w_s, svc = D[:10]
    a0 = D[18]
    a, U, T, moved, occ, cnt, mc, sc = S[0], S[1], S[2], S[3], S[4], S[10], S[11], S[12]
    m0, s, hp = a[p], svc[p], a0[p]
    if occ[s, m1] > 0:
        return _INFEASIBLE
    for r in range(req.shape[1]):
        v = U[m1, r] + req[p, r]
        if v > cap[m1, r] or (trans[r] and m1 != hp and T[m1, r] + req[p, r] > cap[m1, r]):
            return _INFEASIBLE
        u1[r] = v
        u0[r] = U[m0, r] - req[p, r]
    if not _leave_enter_ok(D, S, s, m0, m1):
        return _INFEASIBLE
    was = 1 if m0 != hp else 0
    now = 1 if m1 != hp else 0
    top = sc[1]
    new_top = top if was == now else _new_top(cnt, top, moved[s], moved[s] + now - was, -1, -1)
    return (_cost(m0, u0, safety, lw, cap, bal) - mc[m0] + _cost(m1, u1, safety, lw, cap, bal) - mc[m1]
            + pm_w[p] * (now - was) + mm_w[hp, m1] - mm_w[hp, m0] + w_s * (new_top - top))


@njit(cache=True)
def _swap_delta(D, S, p, q, u0, u1):
    """ΔF of swapping p and q (on different machines), or _INFEASIBLE."""
    req, cap, safety, lw, trans, bal, pm_w, mm_w, w_s, svc = D[:10]
    nbh, linked, a0 = D[11], D[13], D[18]
    a, U, T, moved, occ, cnt, mc, sc = S[0], S[1], S[2], S[3], S[4], S[10], S[11], S[12]
    m0, m1 = a[p], a[q]
    s, t = svc[p], svc[q]
    hp, hq = a0[p], a0[q]
    if s != t:
        if occ[s, m1] > 0 or occ[t, m0] > 0:
            return _INFEASIBLE
        if linked[s, t] and nbh[m0] != nbh[m1]:
            return _INFEASIBLE
    for r in range(req.shape[1]):
        v0 = U[m0, r] - req[p, r] + req[q, r]
        v1 = U[m1, r] - req[q, r] + req[p, r]
        if v0 > cap[m0, r] or v1 > cap[m1, r]:
            return _INFEASIBLE
        if trans[r]:
            t0 = T[m0, r] + (req[q, r] if m0 != hq else 0) - (req[p, r] if m0 != hp else 0)
            t1 = T[m1, r] + (req[p, r] if m1 != hp else 0) - (req[q, r] if m1 != hq else 0)
            if t0 > cap[m0, r] or t1 > cap[m1, r]:
                return _INFEASIBLE
        u0[r] = v0
        u1[r] = v1
    if s != t and not (_leave_enter_ok(D, S, s, m0, m1) and _leave_enter_ok(D, S, t, m1, m0)):
        return _INFEASIBLE
    wp = 1 if m0 != hp else 0
    np_ = 1 if m1 != hp else 0
    wq = 1 if m1 != hq else 0
    nq = 1 if m0 != hq else 0
    top = sc[1]
    new_top = top
    if s == t:
        if np_ - wp + nq - wq != 0:
            new_top = _new_top(cnt, top, moved[s], moved[s] + np_ - wp + nq - wq, -1, -1)
    elif np_ != wp or nq != wq:
        new_top = _new_top(cnt, top, moved[s], moved[s] + np_ - wp, moved[t], moved[t] + nq - wq)
    return (_cost(m0, u0, safety, lw, cap, bal) - mc[m0] + _cost(m1, u1, safety, lw, cap, bal) - mc[m1]
            + pm_w[p] * (np_ - wp) + pm_w[q] * (nq - wq) + mm_w[hp, m1] - mm_w[hp, m0] + mm_w[hq, m0]
            - mm_w[hq, m1] + w_s * (new_top - top))


@njit(cache=True)
def _shift(D, S, p, m1):
    """Move p to m1, updating every counter and cost, and log the move."""
    req, cap, safety, lw, bal, pm_w, mm_w, svc, loc, nbh = D[0], D[1], D[2], D[3], D[5], D[6], D[7], D[9], D[10], D[11]
    dep_ptr, dep_idx, rdep_ptr, rdep_idx, a0 = D[14:]
    a, U, T, moved, occ, sl, nloc, nb, missing, needed, cnt, mc, sc, log = S
    m0, s, h = a[p], svc[p], a0[p]
    if m0 == m1:
        return
    if sc[2] < log.shape[0]:
        log[sc[2], 0] = p
        log[sc[2], 1] = m0
    sc[2] += 1
    a[p] = m1
    for r in range(req.shape[1]):
        U[m0, r] -= req[p, r]
        U[m1, r] += req[p, r]
        if m0 != h:
            T[m0, r] -= req[p, r]
        if m1 != h:
            T[m1, r] += req[p, r]
    was = 1 if m0 != h else 0
    now = 1 if m1 != h else 0
    if was != now:
        cnt[moved[s]] -= 1
        moved[s] += now - was
        cnt[moved[s]] += 1
        top = max(sc[1], moved[s])
        while top > 0 and cnt[top] == 0:
            top -= 1
        sc[1] = top
    sc[0] += pm_w[p] * (now - was) + mm_w[h, m1] - mm_w[h, m0]
    mc[m0] = _cost(m0, U[m0], safety, lw, cap, bal)
    mc[m1] = _cost(m1, U[m1], safety, lw, cap, bal)
    occ[s, m0] -= 1
    occ[s, m1] += 1
    l0, l1 = loc[m0], loc[m1]
    if l0 != l1:
        sl[s, l0] -= 1
        if sl[s, l0] == 0:
            nloc[s] -= 1
        sl[s, l1] += 1
        if sl[s, l1] == 1:
            nloc[s] += 1
    n0, n1 = nbh[m0], nbh[m1]
    if n0 != n1:
        nb[s, n0] -= 1
        if nb[s, n0] == 0:
            for i in range(dep_ptr[s], dep_ptr[s + 1]):
                needed[dep_idx[i], n0] -= 1
            for i in range(rdep_ptr[s], rdep_ptr[s + 1]):
                missing[rdep_idx[i], n0] += 1
        nb[s, n1] += 1
        if nb[s, n1] == 1:
            for i in range(dep_ptr[s], dep_ptr[s + 1]):
                needed[dep_idx[i], n1] += 1
            for i in range(rdep_ptr[s], rdep_ptr[s + 1]):
                missing[rdep_idx[i], n1] -= 1


@njit(cache=True)
def _swap(D, S, p, q):
    m0, m1 = S[0][p], S[0][q]
    _shift(D, S, p, m1)
    _shift(D, S, q, m0)


@njit(cache=True)
def _undo(D, S, mark):
    """Replay the log backwards down to length `mark` (restores every counter: they depend on a alone)."""
    log, sc = S[13], S[12]
    n = sc[2]
    if n > log.shape[0]:  # the log overflowed: this cannot be undone move by move
        raise RuntimeError("roadef moves: move log overflow")
    for i in range(n - 1, mark - 1, -1):
        _shift(D, S, log[i, 0], log[i, 1])
    sc[2] = mark


@njit(cache=True)
def _shift_fits(p, m, req, cap, trans, svc, a0, a, U, T, occ):
    """Conflict, capacity and transient capacity of shifting p to m ≠ a(p) (the checks most candidates fail;
    `_shift_delta` makes all of them)."""
    if occ[svc[p], m] > 0:
        return False
    for r in range(req.shape[1]):
        if U[m, r] + req[p, r] > cap[m, r] or (trans[r] and m != a0[p] and T[m, r] + req[p, r] > cap[m, r]):
            return False
    return True


@njit(cache=True)
def _swap_fits(p, q, req, cap, trans, svc, a0, a, U, T, occ):
    """Conflict, capacity and transient capacity of swapping p and q (on different machines; the checks most
    candidates fail, `_swap_delta` makes all of them)."""
    m0, m1, s, t, hp, hq = a[p], a[q], svc[p], svc[q], a0[p], a0[q]
    if s != t and (occ[s, m1] > 0 or occ[t, m0] > 0):
        return False
    for r in range(req.shape[1]):
        if U[m0, r] - req[p, r] + req[q, r] > cap[m0, r] or U[m1, r] - req[q, r] + req[p, r] > cap[m1, r]:
            return False
        if trans[r] and (T[m0, r] + (req[q, r] if m0 != hq else 0) - (req[p, r] if m0 != hp else 0) > cap[m0, r]
                         or T[m1, r] + (req[p, r] if m1 != hp else 0) - (req[q, r] if m1 != hq else 0) > cap[m1, r]):
            return False
    return True


@njit(cache=True)
def _best_shift(D, S, p, banned, u0, u1):
    """(machine, ΔF) of p's best feasible shift to a machine not in `banned`; (−1, _INFEASIBLE) when none."""
    req, cap, trans, svc, a0 = D[0], D[1], D[4], D[9], D[18]
    a, U, T, occ = S[0], S[1], S[2], S[4]
    m0, s, hp = a[p], svc[p], a0[p]
    best, arg = _INFEASIBLE, -1
    for m in range(banned.shape[0]):
        if m == m0 or banned[m] or occ[s, m] > 0:
            continue
        fits = True  # `_shift_fits`, inline: a call per candidate costs several times the check
        for r in range(req.shape[1]):
            if U[m, r] + req[p, r] > cap[m, r] or (trans[r] and m != hp and T[m, r] + req[p, r] > cap[m, r]):
                fits = False
                break
        if not fits:
            continue
        d = _shift_delta(D, S, p, m, u0, u1)
        if d < best:
            best, arg = d, m
    return arg, best


@njit(cache=True)
def _best_swap(D, S, p, u0, u1):
    """(process, ΔF) of p's best feasible swap; (−1, _INFEASIBLE) when none."""
    req, cap, trans, svc, a0 = D[0], D[1], D[4], D[9], D[18]
    a, U, T, occ = S[0], S[1], S[2], S[4]
    m0, s, hp = a[p], svc[p], a0[p]
    best, arg = _INFEASIBLE, -1
    for q in range(a.shape[0]):
        m1 = a[q]
        if m1 == m0:
            continue
        t, hq = svc[q], a0[q]
        if s != t and (occ[s, m1] > 0 or occ[t, m0] > 0):
            continue
        fits = True  # `_swap_fits`, inline: a call per candidate costs several times the check
        for r in range(req.shape[1]):
            if U[m0, r] - req[p, r] + req[q, r] > cap[m0, r] or U[m1, r] - req[q, r] + req[p, r] > cap[m1, r]:
                fits = False
                break
            if trans[r] and (T[m0, r] + (req[q, r] if m0 != hq else 0) - (req[p, r] if m0 != hp else 0) > cap[m0, r]
                             or T[m1, r] + (req[p, r] if m1 != hp else 0) - (req[q, r] if m1 != hq else 0)
                             > cap[m1, r]):
                fits = False
                break
        if not fits:
            continue
        d = _swap_delta(D, S, p, q, u0, u1)
        if d < best:
            best, arg = d, q
    return arg, best


@njit(cache=True)
def descend(D, S, queue, n_queue, max_pops):
    """Best-improvement shift/swap descent over the work queue (the first `n_queue` entries; moves queue the
    processes of the machines they touch again), for at most `max_pops` processes; returns (moves made, the
    queue left)."""
    a = S[0]
    n_p = a.shape[0]
    n_m = D[1].shape[0]
    u0 = np.empty(D[0].shape[1], dtype=np.int64)
    u1 = np.empty_like(u0)
    queued = np.zeros(n_p, dtype=np.bool_)
    buf = np.empty(n_p, dtype=np.int64)
    q_arr = np.empty(max(n_queue, 1) + 4 * n_p, dtype=np.int64)
    q_arr[:n_queue] = queue[:n_queue]
    for i in range(n_queue):
        queued[q_arr[i]] = True
    no_ban = np.zeros(n_m, dtype=np.bool_)
    head, tail, moves = 0, n_queue, 0
    while head < tail and max_pops > 0:
        max_pops -= 1
        p = q_arr[head]
        head += 1
        queued[p] = False
        m_best, d_shift = _best_shift(D, S, p, no_ban, u0, u1)
        q_best, d_swap = _best_swap(D, S, p, u0, u1)
        if min(d_shift, d_swap) >= 0:
            continue
        if d_shift <= d_swap:
            q_best = -1
        m0 = a[p]
        m1 = a[q_best] if q_best >= 0 else m_best
        if q_best >= 0:
            _swap(D, S, p, q_best)
        else:
            _shift(D, S, p, m_best)
        moves += 1
        k = 0
        for x in range(n_p):
            if (a[x] == m0 or a[x] == m1) and not queued[x]:
                buf[k] = x
                k += 1
        np.random.shuffle(buf[:k])
        if tail + k > q_arr.shape[0]:  # compact the queue
            live = tail - head
            q_arr[:live] = q_arr[head:tail]
            head, tail = 0, live
            if tail + k > q_arr.shape[0]:
                grown = np.empty(2 * (tail + k), dtype=np.int64)
                grown[:tail] = q_arr[:tail]
                q_arr = grown
        for i in range(k):
            q_arr[tail] = buf[i]
            tail += 1
            queued[buf[i]] = True
    return moves, q_arr[head:tail].copy()


@njit(cache=True)
def _fits(D, S, p, r):
    """Whether p fits machine r's capacity and (unless r is p's initial machine) its transient capacity."""
    req, cap, trans, a0 = D[0], D[1], D[4], D[18]
    U, T = S[1], S[2]
    for k in range(req.shape[1]):
        if U[r, k] + req[p, k] > cap[r, k]:
            return False
        if trans[k] and r != a0[p] and T[r, k] + req[p, k] > cap[r, k]:
            return False
    return True


@njit(cache=True)
def _coverage(D, S, q, p, r):
    """Σ_k min(r_q, d_k) / Σ_k d_k for p's capacity deficit d on machine r (how much of it q's leaving covers)."""
    req, cap = D[0], D[1]
    U = S[1]
    cover, total = 0.0, 0.0
    for k in range(req.shape[1]):
        d = U[r, k] + req[p, k] - cap[r, k]
        if d > 0:
            total += d
            cover += min(req[q, k], d)
    return cover / max(1.0, total)


@njit(cache=True)
def _evict(D, S, p, r, banned, stuck, u0, u1):
    """One step of making room for p on r: the process q on r that covers most of p's capacity deficit (ties to
    the smallest ΔF) takes its best shift to a machine not `banned`; processes with no such shift are marked in
    `stuck`. Whether one moved."""
    a = S[0]
    best_cov, best_d, best_q, best_m = -1.0, _INFEASIBLE, -1, -1
    for q in range(a.shape[0]):
        if a[q] != r or stuck[q]:
            continue
        m, d = _best_shift(D, S, q, banned, u0, u1)
        if m < 0:
            stuck[q] = True
            continue
        cov = _coverage(D, S, q, p, r)
        if cov > best_cov or (cov == best_cov and d < best_d):
            best_cov, best_d, best_q, best_m = cov, d, q, m
    if best_q < 0:
        return False
    _shift(D, S, best_q, best_m)
    return True


@njit(cache=True)
def _make_room_flat(D, S, p, r, banned, max_evictions, u0, u1):
    """Evictions off r until p fits it (no chain); whether it does."""
    stuck = np.zeros(S[0].shape[0], dtype=np.bool_)
    for _ in range(max_evictions):
        if _fits(D, S, p, r):
            return True
        if not _evict(D, S, p, r, banned, stuck, u0, u1):
            return False
    return _fits(D, S, p, r)


@njit(cache=True)
def _make_room(D, S, p, r, banned, max_evictions, u0, u1):
    """Evictions off r until p fits it; when every process left on r is stuck, the stuck one covering most of the
    deficit that can go home does so after room is made there (`_make_room_flat`, r banned too): a process needs
    no transient room at home, so this frees r's transient room that no shift can. Whether p fits."""
    a, a0 = S[0], D[18]
    stuck = np.zeros(a.shape[0], dtype=np.bool_)
    for _ in range(max_evictions):
        if _fits(D, S, p, r):
            return True
        if _evict(D, S, p, r, banned, stuck, u0, u1):
            continue
        on = np.flatnonzero((a == r) & stuck)
        cov = np.empty(on.shape[0])
        for i in range(on.shape[0]):
            cov[i] = -_coverage(D, S, on[i], p, r)
        sent = False
        for i in np.argsort(cov, kind="mergesort"):
            q = on[i]
            h = a0[q]
            if h == r or banned[h]:
                continue
            banned[r] = True
            ok = _make_room_flat(D, S, q, h, banned, max_evictions, u0, u1)
            banned[r] = False
            if ok and _shift_delta(D, S, q, h, u0, u1) != _INFEASIBLE:
                _shift(D, S, q, h)
                sent = True
                break
        if not sent:
            return False
    return _fits(D, S, p, r)


@njit(cache=True)
def _relocate(D, S, p, r, u0, u1, chain):
    """Make room for p on r, move it there and descend over r, p's old machine and the processes that started on
    r; keep the result unless F rose, else undo it all. Whether it was kept."""
    a, a0 = S[0], D[18]
    before = _objective(D, S)
    mark = S[12][2]
    m0 = a[p]
    banned = np.zeros(D[1].shape[0], dtype=np.bool_)
    banned[m0] = True
    room = _make_room(D, S, p, r, banned, 40, u0, u1) if chain else _make_room_flat(D, S, p, r, banned, 40, u0, u1)
    if room and _shift_delta(D, S, p, r, u0, u1) != _INFEASIBLE:
        _shift(D, S, p, r)
        queue = np.flatnonzero((a == r) | (a == m0) | (a0 == r))
        np.random.shuffle(queue)
        descend(D, S, queue, queue.shape[0], 1 << 62)
        if _objective(D, S) <= before and S[12][2] <= S[13].shape[0]:
            return True
    _undo(D, S, mark)
    return False


@njit(cache=True)
def rearrange(D, S, attempts, room_t, seed):
    """`attempts` big process rearrangements (see the module docstring); `room_t` is the initial transient room
    C − U⁰ (M × R, zero on other resources). Returns the number kept."""
    np.random.seed(seed)
    req, cap, safety, lw, trans, bal = D[:6]
    a, a0, U, mc = S[0], D[18], S[1], S[11]
    n_m = cap.shape[0]
    u0 = np.empty(req.shape[1], dtype=np.int64)
    u1 = np.empty_like(u0)
    cand = np.empty(n_m, dtype=np.int64)
    w = np.empty(n_m, dtype=np.int64)
    no_bal = bal[:0]
    kept = 0
    for _ in range(attempts):
        S[12][2] = 0  # nothing to undo across attempts
        for m in range(n_m):  # load cost: where there are balance costs, their sum hardly moves (a1_4)
            w[m] = _cost(m, U[m], safety, lw, cap, no_bal)
        by = no_bal
        if w.sum() <= 0:
            w[:] = mc
            by = bal
        total = w.sum()
        if total <= 0:
            break
        x = np.random.random() * total
        h = 0
        while h < n_m - 1 and x >= w[h]:
            x -= w[h]
            h += 1
        on = np.flatnonzero(a == h)
        if on.shape[0] == 0:
            continue
        p = on[np.random.randint(on.shape[0])]
        k = 0
        for r in range(n_m):
            if r == h:
                continue
            ok = True
            for j in range(req.shape[1]):
                if req[p, j] > cap[r, j] or (trans[j] and r != a0[p] and req[p, j] > room_t[r, j]):
                    ok = False
                    break
            if ok and _cost(r, req[p], safety, lw, cap, by) < w[h]:
                cand[k] = r
                k += 1
        if k and _relocate(D, S, p, cand[np.random.randint(k)], u0, u1, True):
            kept += 1
    S[12][2] = 0
    return kept


@njit(cache=True)
def anneal(D, S, ticks, t_start, t_end, seed):
    """Metropolis annealing over random shifts and swaps (see the module docstring) for `ticks` of work (TICKS);
    returns (best assignment, its objective, moves taken, steps). The state ends on the last assignment."""
    np.random.seed(seed)
    req, cap, trans, svc, a0 = D[0], D[1], D[4], D[9], D[18]
    a, U, T, occ = S[0], S[1], S[2], S[4]
    n_p = a.shape[0]
    n_m = cap.shape[0]
    u0 = np.empty(req.shape[1], dtype=np.int64)
    u1 = np.empty_like(u0)
    cur = _objective(D, S)
    best = cur
    best_a = a.copy()
    saved = True  # best_a holds the current assignment
    log_ratio = np.log(t_end / t_start) / max(1, ticks) if t_start > 0 and t_end > 0 else 0.0
    taken, steps, spent = 0, 0, 0
    while spent < ticks:
        spent += TICKS[0]
        steps += 1
        p = np.random.randint(n_p)
        m0 = a[p]
        if np.random.random() < 0.5:
            m1 = np.random.randint(n_m - 1)
            if m1 >= m0:
                m1 += 1
            q = -1
            if not _shift_fits(p, m1, req, cap, trans, svc, a0, a, U, T, occ):
                continue
            delta = _shift_delta(D, S, p, m1, u0, u1)
        else:
            q = np.random.randint(n_p)
            if a[q] == m0 or not _swap_fits(p, q, req, cap, trans, svc, a0, a, U, T, occ):
                continue
            delta = _swap_delta(D, S, p, q, u0, u1)
        spent += TICKS[1]
        if delta == _INFEASIBLE:
            continue
        if delta > 0:
            temp = t_start * np.exp(log_ratio * spent)
            if temp <= 0 or np.random.random() >= np.exp(-delta / temp):
                continue
        if delta > 0 and not saved:
            best_a[:] = a
            saved = True
        if q < 0:
            _shift(D, S, p, m1)
        else:
            _swap(D, S, p, q)
        S[12][2] = 0  # annealing moves are not undone
        taken += 1
        spent += TICKS[2]
        cur += delta
        if cur < best:
            best = cur
            saved = False
    if not saved:
        best_a[:] = a
    return best_a, best, taken, steps


class FastMoves:
    """The instance packed for the compiled moves, and the state of one current assignment."""

    def __init__(self, inst: Instance, initial: np.ndarray, current: np.ndarray | None = None) -> None:
        a0 = np.asarray(initial, dtype=np.int64).copy()
        spread, deps, rdeps, dep = service_links(inst)
        linked = (dep + dep.T) > 0
        bal = np.array([(b.r1, b.r2, b.target, b.weight) for b in inst.balances if b.weight],
                       dtype=np.int64).reshape(-1, 4)

        def arr(x, dtype=np.int64):
            return np.ascontiguousarray(x, dtype=dtype)

        self.D = (arr(inst.requirement), arr(inst.capacity), arr(inst.safety), arr(inst.load_weight),
                  arr(inst.transient, np.bool_), bal, arr(inst.process_move_cost * inst.weight_process_move),
                  arr(inst.machine_move_cost * inst.weight_machine_move), int(inst.weight_service_move),
                  arr(inst.service), arr(inst.location), arr(inst.neighborhood), spread, linked,
                  *_csr(deps), *_csr(rdeps), a0)
        u0 = np.zeros_like(self.D[1])
        np.add.at(u0, a0, self.D[0])
        self.room_t = np.where(self.D[4][None, :], self.D[1] - u0, 0)
        self.load(a0 if current is None else current)

    def load(self, current: np.ndarray) -> None:
        """Make `current` the state's assignment."""
        self.S = _build(self.D, np.array(current, dtype=np.int64), 1 << 16)

    @property
    def a(self) -> np.ndarray:
        return self.S[0]

    @property
    def objective(self) -> int:
        return int(_objective(self.D, self.S))

    def anneal(self, ticks: int, t_start: float, t_end: float, seed: int) -> tuple[np.ndarray, int]:
        """(best assignment, its objective) of `ticks` of annealing work (TICKS) from the current assignment."""
        best_a, best, _, _ = anneal(self.D, self.S, ticks, float(t_start), float(t_end), seed)
        return best_a, int(best)

    def descend(self, queue: np.ndarray, seed: int, max_pops: int = 1 << 62) -> tuple[int, np.ndarray]:
        """A descent over the processes of `queue` (in that order), at most `max_pops` of them: (moves made, the
        queue left, empty when the descent is over)."""
        _seed(seed)
        moves, left = descend(self.D, self.S, np.ascontiguousarray(queue, dtype=np.int64), len(queue), max_pops)
        self.S[12][2] = 0  # a descent is not undone
        return int(moves), left

    def relocate(self, p: int, r: int, seed: int = 0, chain: bool = True) -> bool:
        """One big process rearrangement of p onto machine r (`chain`: with the second level); whether it was
        kept."""
        _seed(seed)
        u = np.empty(self.D[0].shape[1], dtype=np.int64)
        kept = bool(_relocate(self.D, self.S, p, r, u, u.copy(), chain))
        self.S[12][2] = 0
        return kept

    def rearrange(self, attempts: int, seed: int) -> int:
        """`attempts` big process rearrangements; the number kept."""
        return int(rearrange(self.D, self.S, attempts, self.room_t, seed))


@njit(cache=True)
def _seed(seed):
    np.random.seed(seed)


def _csr(lists: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.zeros(len(lists) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(x) for x in lists])
    idx = np.array([x for xs in lists for x in xs], dtype=np.int64)
    return ptr, idx
