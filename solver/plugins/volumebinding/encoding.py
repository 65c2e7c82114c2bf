"""VolumeBinding as CP-SAT constraints over a window's final state: one PV or provisioning node per delayed claim.

Node-local volume filters (bound PVs' node affinity, a claim already reserved or given a node) prune domains like
every other filter; what follows ties window pods together. For each delayed claim c (WaitForFirstConsumer, no
volume, no PV reserved to it, no selected node) used by groups G_c, a literal b[c, v] per candidate PV v
(`candidate_pvs`: matching wherever its node affinity holds) whose affinity accepts some node of G_c, and
prov[c, n] per node n of G_c where c's class can provision (provisioner, allowedTopologies). Then
    Σ_v b[c, v] + Σ_n prov[c, n] ≤ 1                                  (one PV or one provisioning node per claim)
    y[g, n] ≤ ub[g, n] · (Σ_{v: aff(v) ∋ n} b[c, v] + prov[c, n])   for g ∈ G_c   (users where it allows)
    Σ_c b[c, v] ≤ 1                                                    (a PV serves one claim)
so every pod using c lands where the chosen PV's affinity allows (one node for a local PV) or on the one node c
is provisioned on, as kube's binder makes later users follow the first. Hints: greedy's choice
(`Placement.volume_bindings`) when it fits the hinted counts, else the first choice that does.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise

from ortools.sat.python import cp_model

from ...framework.encoding import ConstraintContext, PluginEncoding


@dataclass
class ClaimChoices:
    """The delayed claims a model decides: per claim, (PV name or DYNAMIC, node or -1, literal) choices."""

    choices: dict[str, list[tuple[str, int, cp_model.IntVar]]] = field(default_factory=dict)
    derive: Callable[[dict[int, dict[int, int]]], dict[str, str]] | None = None

    def read(self, value: Callable[[cp_model.IntVar], int]) -> dict[str, str]:
        """{claim key: PV name or DYNAMIC} that the solution's literals choose."""
        return {key: what for key, opts in self.choices.items() for what, _, lit in opts if value(lit)}


def delayed_claims(state, groups, filters: dict[int, set[str]]) -> dict[str, tuple]:
    """Claims the window must choose a PV (or a provisioning node) for: WaitForFirstConsumer claims with no
    volume, no PV reserved to them and no selected node yet; claim key → (claim, groups using it)."""
    from . import classify_claims, selected_node
    from .claims import candidate_pvs

    out: dict[str, tuple] = {}
    for g in groups:
        if not g.rep.pod.spec.volumes or "VolumeBinding" not in filters[g.gid]:
            continue
        claims = classify_claims(state.index, g.rep)
        if claims is None or claims.error or claims.immediate:
            continue
        for u in claims.delayed:
            if u.key in out:
                out[u.key][1].append(g)
            elif selected_node(state, u) is None and candidate_pvs(state.index, u.pvc, state)[0] is None:
                out[u.key] = (u.pvc, [g])
    return out


def claims(ctx: ConstraintContext) -> ClaimChoices:
    """One PV per claim, one choice per claim, every user of a claim where its choice allows (module doc)."""
    v, groups, filters, greedy = ctx.handle, ctx.groups, ctx.filters, ctx.volume_hint
    from . import provisionable
    from .claims import DYNAMIC, candidate_pvs, pv_affinity_mask

    state, index = v.state, v.state.index
    out = ClaimChoices()
    per_pv: dict[str, list] = defaultdict(list)
    allowed: dict[str, list[set[int]]] = {}
    delayed = delayed_claims(state, groups, filters)
    users_of = {key: users for key, (_, users) in delayed.items()}
    for key, (pvc, users) in delayed.items():
        nodes = sorted({n for g in users for n in v.y[g.gid]})
        if not nodes:
            continue
        opts: list[tuple[str, int, cp_model.IntVar]] = []
        where: list[set[int]] = []
        for pv in candidate_pvs(index, pvc, state)[1]:
            mask = pv_affinity_mask(index, pv)
            ok = {n for n in nodes if mask[n]}
            if ok:
                lit = v.model.new_bool_var(f"pv_{key}_{pv.metadata.name}")
                opts.append((pv.metadata.name, -1, lit))
                where.append(ok)
                per_pv[pv.metadata.name].append(lit)
        for n in nodes:
            if provisionable(index, pvc, n):
                opts.append((DYNAMIC, n, v.model.new_bool_var(f"prov_{key}_{n}")))
                where.append({n})
        out.choices[key], allowed[key] = opts, where
        if len(opts) > 1:
            v.model.add(sum(lit for _, _, lit in opts) <= 1)
        for g in users:
            for n, y in v.y[g.gid].items():
                cover = [lit for (_, _, lit), ok in zip(opts, where, strict=True) if n in ok]
                if not cover:
                    v.model.add(y == 0)
                else:
                    v.model.add(y <= v.ub[g.gid][n] * sum(cover))
    for lits in per_pv.values():
        if len(lits) > 1:
            v.model.add(sum(lits) <= 1)

    last: list = [None, {}, {}]  # the counts derived last, and their (choices, literal values)

    def derive(counts: dict[int, dict[int, int]]) -> dict[str, str]:
        """A choice per used claim consistent with `counts`: greedy's when it fits, else the first that does."""
        if last[0] is counts:
            return last[1]
        taken: set[str] = set()
        chosen: dict[str, str] = {}
        values: dict[int, int] = {}
        for key, opts in out.choices.items():
            used = {n for g in users_of[key] for n, c in counts.get(g.gid, {}).items() if c > 0 and n in v.y[g.gid]}
            if not used:
                continue
            fits = [i for i, ((what, _, _), ok) in enumerate(zip(opts, allowed[key], strict=True))
                    if used <= ok and (what == DYNAMIC or what not in taken)]
            pick = next((i for i in fits if opts[i][0] == greedy.get(key)), fits[0] if fits else None)
            if pick is not None:
                what, _, lit = opts[pick]
                chosen[key] = what
                values[lit.index] = 1
                if what != DYNAMIC:
                    taken.add(what)
        last[:] = [counts, chosen, values]
        return chosen

    def literal(counts: dict[int, dict[int, int]], index: int) -> int:
        derive(counts)
        return last[2].get(index, 0)

    for opts in out.choices.values():
        for _, _, lit in opts:
            v.aux_hints.append((lit, lambda c, i=lit.index: literal(c, i)))
    out.derive = derive
    return out


def ties(index, match) -> set[tuple[int, int]]:
    """Groups that share a claim (one PV, one node, ReadWriteOncePod) or may compete for a PV."""
    from .claims import candidate_pvs, pod_claims

    groups = match.groups
    by_key: dict[str, list[int]] = defaultdict(list)
    unbound: dict[str, object] = {}
    for g in groups:
        if g.rep.pod.spec.volumes:
            for u in pod_claims(index, g.rep.pod):
                by_key[u.key].append(g.gid)
                if u.pvc is not None and not u.pvc.spec.volume_name:
                    unbound[u.key] = u.pvc
    for key, pvc in unbound.items():
        for pv in candidate_pvs(index, pvc)[1]:
            by_key["pv:" + pv.metadata.name].extend(by_key[key])
    edges: set[tuple[int, int]] = set()
    for gids in by_key.values():
        edges.update((a, b) for a, b in pairwise(gids) if a != b)
    return edges


ENCODINGS = {"VolumeBinding": PluginEncoding(ties=ties, constrain=claims)}
