"""CP-SAT encoding of gangs: all or nothing, in one component.

For a gang G with minimum m, R of its pods already running and its pending pods in groups g ∈ G (all in one window
and, by `ties`, one component), when R < m: z_G ∈ {0, 1} and
    Σ_{g∈G} placed[g] ≥ (m − R)·z_G,    Σ_{g∈G} placed[g] ≤ |pending of G|·z_G
so either enough of its pods are placed or none is; Σ_G z_G is the objective's "gangs" stage, after pods placed
(with pods placed at their optimum, the most complete gangs). With a topology key K, one domain: u_{G,v} ∈ {0, 1}
per value v of K on the gang's nodes, Σ_v u_{G,v} ≤ 1, y[g, n] ≤ ub[g, n]·u_{G,K(n)} (0 on nodes without K), and
the domain of running members is the only one allowed. Exact: it is the rule itself on the final counts. With a
preferred key (Kueue's podset-preferred-topology), the same u_{G,v} without Σ_v u ≤ 1 (a node without the key is
a domain of its own), and Σ_G Σ_v u_{G,v} is minimised in the objective's "gang domains" stage.
"""

from __future__ import annotations

import itertools

from ...framework.encoding import ConstraintContext, PluginEncoding
from . import preferred_domain


def _gangs(match) -> dict[int, list]:
    """Gang index → the model's groups of its pods."""
    out: dict[int, list] = {}
    for g in match.groups:
        k = match.index.gang_of.get(g.rep.idx)
        if k is not None:
            out.setdefault(k, []).append(g)
    return out


def ties(index, match) -> set[tuple[int, int]]:
    """The groups of one gang."""
    return {(a.gid, b.gid) for groups in _gangs(match).values() for a, b in itertools.pairwise(groups)}


def constrain(ctx: ConstraintContext) -> None:
    v = ctx.handle
    index = v.state.index
    model = v.model
    for k, groups in _gangs(ctx.matcher).items():
        gang = index.gangs[k]
        members = [index.pod_by_key[m] for m in gang.members if m in index.pod_by_key]
        running = [p for p in members if v.state.pod_node[p.idx] >= 0 and p.idx not in {q.idx for g in groups
                                                                                          for q in g.pods}]
        pending = sum(g.size for g in groups)
        placed = sum(v.placed[g.gid] for g in groups)
        if len(running) < gang.min_count:
            z = model.new_bool_var(f"gang_{k}")
            model.add(placed >= (gang.min_count - len(running)) * z)
            model.add(placed <= pending * z)
            v.aux_hints.append((z, lambda c, gids=[g.gid for g in groups]: int(
                any(sum(c.get(gid, {}).values()) for gid in gids))))
            v.gangs.append((z, [g.gid for g in groups]))
        if gang.preferred_key is not None:
            _prefer_one_domain(v, k, gang.preferred_key, groups)
        if gang.topology_key is None:
            continue
        ids = index.label_column(gang.topology_key)[0]
        fixed = {int(ids[int(v.state.pod_node[p.idx])]) for p in running}
        values = sorted({int(ids[n]) for g in groups for n in v.y[g.gid] if ids[n] >= 0})
        u = {val: model.new_bool_var(f"gang_{k}_in_{val}") for val in values if not fixed or val in fixed}
        model.add(sum(u.values()) <= 1)
        for g in groups:
            for n, y in v.y[g.gid].items():
                val = int(ids[n])
                if val not in u:
                    model.add(y == 0)
                else:
                    model.add(y <= v.ub[g.gid][n] * u[val])
        for val, lit in u.items():
            v.aux_hints.append((lit, lambda c, val=val, ids=ids, gids=[g.gid for g in groups]: int(any(
                cnt and int(ids[n]) == val for gid in gids for n, cnt in c.get(gid, {}).items()))))


def _prefer_one_domain(v, k: int, key: str, groups) -> None:
    """u_{G,d} ≥ [some pod of G on a node of domain d], d the node's value of `key` (or the node itself without
    it); the u's are the gang-domains stage's terms."""
    ids = v.state.index.label_column(key)[0]
    gids = [g.gid for g in groups]
    members: dict[tuple, set[int]] = {}
    for g in groups:
        for n in v.y[g.gid]:
            members.setdefault(preferred_domain(ids, n), set()).add(n)
    u = {d: v.model.new_bool_var(f"gang_{k}_prefers_{d[0]}{d[1]}") for d in sorted(members)}
    for g in groups:
        for n, y in v.y[g.gid].items():
            v.model.add(y <= v.ub[g.gid][n] * u[preferred_domain(ids, n)])
    for d, lit in u.items():
        nodes = frozenset(members[d])
        v.aux_hints.append((lit, lambda c, nodes=nodes: int(any(
            cnt and n in nodes for gid in gids for n, cnt in c.get(gid, {}).items()))))
        v.gang_domains.append((lit, nodes, gids))


ENCODINGS = {"GangScheduling": PluginEncoding(ties=ties, constrain=constrain)}
