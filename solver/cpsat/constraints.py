"""Hard constraints: kube-scheduler's cross-pod predicates over the final state of a window.

Capacity, for every node n and resource r a group requests:      Σ_g req[g, r] · y[g, n] ≤ free[n, r]
Pod slots:                                                        Σ_g y[g, n] ≤ maxPods[n] − pods[n]
Host ports, per node and (protocol, port): wildcard users W, users of a specific IP S_ip:
                                                                  Σ_W y + Σ_{S_ip} y ≤ 1 for every ip
Required anti-affinity (term of g, key K, matching group h), per value v of K:
    h = g:  Y[g, v] ≤ 1;   h ≠ g:  Y[g, v] ≤ |g|·b_v,  Y[h, v] ≤ |h|·(1 − b_v)   (never together)
  On the hostname key, groups that pairwise exclude each other and are themselves one-per-node form a
  graph; each maximal clique C gives Σ_{g∈C} y[g, n] ≤ 1 (networkx `find_cliques`).
Required affinity (terms T of g; H = other groups matching all of T; F = bound pods matching all of T), per
  term and value v with F[v] = 0:   Σ_{h∈H} Y[h, v] ≥ a[g, v] − first[g, v],   Σ_v first[g, v] ≤ 1
  where a[g, v] ⇐ Y[g, v] > 0, and first exists only when no bound pod matches anywhere and g matches its
  own terms (kube's first-pod rule): one domain may be seeded by g itself; every other domain needs a pod
  of another matching group (g's own pods may then join, as each later pod finds the earlier ones).
  Across groups, support must come from pods placed earlier, so it may not go round in a cycle: in the
  graph h → g (h ∈ H of g), a group in g's own strongly connected component supports g only if it comes
  first (lower gid); and a seed is the first pod matching its terms anywhere, so at most one group per
  component seeds (Σ seed[g] ≤ 1, first[g, v] ≤ seed[g]).
DoNotSchedule spread (constraint c of g; counts over eligible nodes, same namespace, matching c's selector):
  C_v = F_v + Σ_{h matching} Y[h, v];  m ≤ C_v for every domain v (m = 0 with fewer domains than minDomains);
  a[g, v] ⇒ C_v − m ≤ maxSkew.  When g is the only window group the selector matches and F_v ≤ maxSkew, the
  implication holds unconditionally (with Y[g, v] = 0, C_v − m = F_v − m ≤ maxSkew as m ≥ 0), so it is posted
  without the enforcement literal: the same integer solutions, a much tighter linear relaxation.
Volumes (node-local volume filters — bound PVs' node affinity, VolumeZone, conflicts with and attachments of
bound pods, a claim already reserved or given a node — prune domains like every other filter; what follows ties
window pods together). o[g, n] is 1 whenever a pod of g is on n (y itself when ub ≤ 1, else y ≤ ub·o).
  One PV per claim: for each delayed claim c (WaitForFirstConsumer, no volume, no PV reserved to it, no
  selected node) used by groups G_c, a literal b[c, v] per candidate PV v (`candidate_pvs`: matching
  wherever its node affinity holds) whose affinity accepts some node of G_c, and prov[c, n] per node n of G_c
  where c's class can provision (provisioner, allowedTopologies). Then
      Σ_v b[c, v] + Σ_n prov[c, n] ≤ 1                         (one PV or one provisioning node per claim)
      y[g, n] ≤ ub[g, n] · (Σ_{v: aff(v) ∋ n} b[c, v] + prov[c, n])   for g ∈ G_c   (users where it allows)
      Σ_c b[c, v] ≤ 1                                             (a PV serves one claim)
  so every pod using c lands where the chosen PV's affinity allows (one node for a local PV) or on the one
  node c is provisioned on, as kube's binder makes later users follow the first. Hints: greedy's choice
  (`Placement.volume_bindings`) when it fits the hinted counts, else the first choice that does.
  Disk conflicts (VolumeRestrictions: GCE PD / EBS / iSCSI / RBD used read-write): a group conflicting with
  itself gets y[g, n] ≤ 1; conflicting groups form a graph whose maximal cliques C give Σ_{g∈C} o[g, n] ≤ 1.
  ReadWriteOncePod claim k: Σ_{g uses k} placed[g] ≤ 1, and ≤ 0 when a placed pod already uses k.
  CSI limits, per node n and driver d with limit L: a literal u[h, n] per new unique volume h (o[g, n] ≤ u)
      |attached volumes of d on n| + Σ_h u[h, n] ≤ L    (only where the volumes that could come exceed it).
These are the final-state forms of kube's sequential checks: for a group of identical pods, a final state
satisfies them exactly when some order of placing the pods passes kube's filter at every step.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise

import networkx as nx
import numpy as np
from kplace.models.index import HOSTNAME
from ortools.sat.python import cp_model

from ..plugins.interpodaffinity.terms import affinity_counts, pod_terms
from .groups import GroupMatcher, PodGroup
from .variables import Variables


def rule_edges(index, match: GroupMatcher) -> set[tuple[int, int]]:
    """Pairs of groups a hard rule ties: (anti-)affinity terms that match, DoNotSchedule spread selectors,
    volumes (a shared claim, a PV two claims may take)."""
    from ..plugins.podtopologyspread.spread import compile_constraints

    edges: set[tuple[int, int]] = set()
    for g in match.groups:
        terms = pod_terms(index, g.rep)
        for t in (*terms.required_anti, *terms.required_affinity):
            edges.update((g.gid, h.gid) for h in match.term(t) if h is not g)
        for c in compile_constraints(g.rep.spread_constraints, g.rep.labels, "DoNotSchedule"):
            edges.update((g.gid, h.gid) for h in match.selector(g.rep.namespace, c.selector) if h is not g)
    edges |= volume_edges(index, match.groups)
    return edges


def add_capacity(v: Variables) -> None:
    state, index = v.state, v.state.index
    for n, entries in v.by_node.items():
        free = index.alloc[n] - state.requested[n]
        reqs = index.pod_req[[g.rep.idx for g, _ in entries]]
        ubs = np.array([v.ub[g.gid][n] for g, _ in entries], dtype=np.int64)
        variables = [var for _, var in entries]
        worst = ubs @ reqs
        for r in np.flatnonzero(worst > free).tolist():  # only where the bounds alone do not guarantee it
            nz = np.flatnonzero(reqs[:, r] > 0).tolist()
            v.model.add(cp_model.LinearExpr.weighted_sum([variables[i] for i in nz], reqs[nz, r].tolist())
                        <= int(free[r]))
        slots = int(index.max_pods[n] - state.pod_count[n])
        if int(ubs.sum()) > slots:
            v.model.add(cp_model.LinearExpr.sum(variables) <= slots)


def add_host_ports(v: Variables, groups: list[PodGroup]) -> None:
    for g in groups:
        if g.rep.host_ports:
            v.cap_per_node(g.gid, 1)
    for entries in v.by_node.values():
        users: dict[tuple[str, int], dict[str, list]] = defaultdict(lambda: defaultdict(list))
        for g, var in entries:
            for ip, proto, port in set(g.rep.host_ports):
                users[(proto, port)][ip].append(var)
        for by_ip in users.values():
            wild = by_ip.get("0.0.0.0", [])
            specific = [ip for ip in by_ip if ip != "0.0.0.0"]
            if not specific and len(wild) > 1:
                v.model.add(sum(wild) <= 1)
            for ip in specific:
                if len(wild) + len(by_ip[ip]) > 1:
                    v.model.add(sum(wild) + sum(by_ip[ip]) <= 1)


def anti_affinity_pairs(index, match: GroupMatcher) -> set[tuple[int, int, str]]:
    """(g, h, key) with g ≤ h such that g's required anti-affinity term on `key` matches h, or h's matches g."""
    pairs: set[tuple[int, int, str]] = set()
    for g in match.groups:
        for t in pod_terms(index, g.rep).required_anti:
            for h in match.term(t):
                a, b = sorted((g.gid, h.gid))
                pairs.add((a, b, t.topology_key))
    return pairs


def add_anti_affinity(v: Variables, groups: list[PodGroup], match: GroupMatcher) -> None:
    """Required anti-affinity between groups (see the module docstring), with hostname cliques as cuts."""
    pairs = anti_affinity_pairs(v.state.index, match)
    for a, b, key in pairs:
        if a == b:
            if key == HOSTNAME:
                v.cap_per_node(a, 1)
            else:
                for val, terms in v.domains(a, key).items():
                    if v.domain_ub(a, key, val) > 1:
                        v.model.add(sum(terms) <= 1)
    one_per_node = {g.gid for g in groups if all(u <= 1 for u in v.ub[g.gid].values())}
    graph = nx.Graph()
    for a, b, key in pairs:
        if a == b:
            continue
        if key == HOSTNAME and a in one_per_node and b in one_per_node:
            graph.add_edge(a, b)
            continue
        da, db = v.domains(a, key), v.domains(b, key)
        for val in set(da) & set(db):
            lit = v.model.new_bool_var(f"anti_{a}_{b}_{val}")
            v.model.add(sum(da[val]) <= v.domain_ub(a, key, val) * lit)
            v.model.add(sum(db[val]) <= v.domain_ub(b, key, val) * (1 - lit))
            v.aux_hints.append((lit, lambda c, a=a, key=key, val=val: int(v.hinted_domain(c, a, key, val) > 0)))
    for clique in nx.find_cliques(graph):
        nodes = set().union(*(v.y[g].keys() for g in clique))
        for n in nodes:
            terms = [v.y[g][n] for g in clique if n in v.y[g]]
            if len(terms) > 1:
                v.model.add(sum(terms) <= 1)


def add_affinity(v: Variables, groups: list[PodGroup], match: GroupMatcher) -> None:
    index, state = v.state.index, v.state
    needs = {}
    for g in groups:
        terms = pod_terms(index, g.rep).required_affinity
        if terms and v.y[g.gid]:
            needs[g.gid] = (terms, match.terms(terms))
    support_graph = nx.DiGraph()
    support_graph.add_nodes_from(needs)
    support_graph.add_edges_from((h.gid, gid) for gid, (_, matching) in needs.items() for h in matching
                                 if h.gid != gid)
    component = {gid: i for i, comp in enumerate(nx.strongly_connected_components(support_graph)) for gid in comp}
    seeds: dict[int, list] = defaultdict(list)
    for g in groups:
        if g.gid not in needs:
            continue
        terms, matching = needs[g.gid]
        self_match = any(h is g for h in matching)
        # Support from g's own component only from earlier groups: no cycle of groups waiting for each other.
        others = [h for h in matching if h is not g
                  and (component[h.gid] != component[g.gid] or h.gid < g.gid)]
        fixed = affinity_counts(state, terms)
        first_allowed = self_match and not any(int(arr.sum()) > 0 for arr in fixed.values())
        seed = seed_hints = None
        if first_allowed:
            seed = v.model.new_bool_var(f"seed_{g.gid}")
            seeds[component[g.gid]].append(seed)
            seed_hints = []
            v.aux_hints.append((seed, lambda c, fs=seed_hints: max((f(c) for f in fs), default=0)))
        for t in terms:
            key = t.topology_key
            fixed_at = fixed.get(key)
            firsts = []
            for val in v.domains(g.gid, key):
                if fixed_at is not None and fixed_at[val] > 0:
                    continue
                a = v.presence(g.gid, key, val)
                support = [var for h in others for var in v.domains(h.gid, key).get(val, [])]
                if first_allowed:
                    first = v.model.new_bool_var(f"first_{g.gid}_{key}_{val}")
                    firsts.append(first)
                    v.model.add(sum(support) >= a - first)
                    v.model.add(first <= seed)

                    def hint_first(c, val=val, key=key, g=g, others=others):
                        mine = v.hinted_domain(c, g.gid, key, val)
                        theirs = sum(v.hinted_domain(c, h.gid, key, val) for h in others)
                        return int(mine > 0 and theirs == 0)

                    v.aux_hints.append((first, hint_first))
                    seed_hints.append(hint_first)
                elif support:
                    v.model.add(sum(support) >= a)
                else:
                    v.model.add(a == 0)
            if len(firsts) > 1:
                v.model.add(sum(firsts) <= 1)
    for lits in seeds.values():
        if len(lits) > 1:
            v.model.add(sum(lits) <= 1)


def spread_defaults(profile) -> list:
    """The profile's PodTopologySpread default constraints (none when the plugin is disabled)."""
    plugin = next((p for p in profile.at("filter") if p.name == "PodTopologySpread"), None)
    return plugin.default_constraints if plugin is not None else []


def add_spread(v: Variables, groups: list[PodGroup], match: GroupMatcher, defaults) -> None:
    from ..plugins.podtopologyspread.spread import has_all_keys, included, matching_per_node, pod_constraints

    index, state = v.state.index, v.state
    for g in groups:
        constraints = pod_constraints(index, g.rep, "DoNotSchedule", defaults)
        if not constraints or not v.y[g.gid]:
            continue
        base = has_all_keys(index, constraints)
        for k, c in enumerate(constraints):
            ids, values = index.label_column(c.key)
            eligible = included(index, g.rep, c, base)
            present = np.flatnonzero(np.bincount(ids[eligible], minlength=len(values)) > 0)
            fixed = np.bincount(ids[eligible], weights=matching_per_node(state, g.rep, c)[eligible],
                                minlength=len(values)).astype(np.int64)
            members = match.selector(g.rep.namespace, c.selector)
            count: dict[int, list] = defaultdict(list)
            for h in members:
                for n, var in v.y[h.gid].items():
                    if eligible[n] and ids[n] >= 0:
                        count[int(ids[n])].append(var)
            window_total = sum(h.size for h in members)
            if len(present) < c.min_domains:
                m = 0
            else:
                m = v.model.new_int_var(0, int(fixed[present].min()) + window_total, f"min_{g.gid}_{k}")
                for val in present.tolist():
                    v.model.add(m <= int(fixed[val]) + sum(count.get(val, [])))

                def hint_min(cnt, members=members, present=present, fixed=fixed, ids=ids, eligible=eligible):
                    tot = fixed.copy()
                    for h in members:
                        for n, c_ in cnt.get(h.gid, {}).items():
                            if n in v.y[h.gid] and eligible[n] and ids[n] >= 0:
                                tot[ids[n]] += c_
                    return int(tot[present].min())

                v.aux_hints.append((m, hint_min))
            alone = [h.gid for h in members] == [g.gid]
            for val in v.domains(g.gid, c.key):
                ct = v.model.add(int(fixed[val]) + sum(count.get(val, [])) - m <= c.max_skew)
                if not (alone and fixed[val] <= c.max_skew):
                    ct.only_enforce_if(v.presence(g.gid, c.key, val))


# --- volumes ----------------------------------------------------------------------------------------------


def _filters(groups: list[PodGroup], enabled) -> dict[int, set[str]]:
    return {g.gid: set(enabled(g)) for g in groups}


def _occupied(v: Variables, gid: int, n: int):
    """A literal that is 1 whenever some pod of g is on n: y itself when at most one fits, else a new boolean
    with y ≤ ub · o (cached per (g, n))."""
    cache = v.__dict__.setdefault("_occupied", {})
    lit = cache.get((gid, n))
    if lit is None:
        var, ub = v.y[gid][n], v.ub[gid][n]
        if ub <= 1:
            lit = var
        else:
            lit = v.model.new_bool_var(f"occ_{gid}_{n}")
            v.model.add(var <= ub * lit)
            v.aux_hints.append((lit, lambda c, gid=gid, n=n: int(c.get(gid, {}).get(n, 0) > 0)))
        cache[(gid, n)] = lit
    return lit


@dataclass
class ClaimChoices:
    """The delayed claims a model decides: per claim, (PV name or DYNAMIC, node or -1, literal) choices."""

    choices: dict[str, list[tuple[str, int, cp_model.IntVar]]] = field(default_factory=dict)
    derive: Callable[[dict[int, dict[int, int]]], dict[str, str]] | None = None

    def read(self, value: Callable[[cp_model.IntVar], int]) -> dict[str, str]:
        """{claim key: PV name or DYNAMIC} that the solution's literals choose."""
        return {key: what for key, opts in self.choices.items() for what, _, lit in opts if value(lit)}


def delayed_claims(state, groups: list[PodGroup], filters: dict[int, set[str]]) -> dict[str, tuple]:
    """Claims the window must choose a PV (or a provisioning node) for: WaitForFirstConsumer claims with no
    volume, no PV reserved to them and no selected node yet; claim key → (claim, groups using it)."""
    from ..plugins.volumebinding import classify_claims, selected_node
    from ..plugins.volumebinding.claims import candidate_pvs

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


def add_volume_binding(v: Variables, groups: list[PodGroup], filters: dict[int, set[str]],
                       greedy: dict[str, str]) -> ClaimChoices:
    """One PV per claim, one choice per claim, every user of a claim where its choice allows."""
    from ..plugins.volumebinding import provisionable
    from ..plugins.volumebinding.claims import DYNAMIC, candidate_pvs, pv_affinity_mask

    state, index = v.state, v.state.index
    out = ClaimChoices()
    per_pv: dict[str, list] = defaultdict(list)
    allowed: dict[str, list[set[int]]] = {}
    claims = delayed_claims(state, groups, filters)
    users_of = {key: users for key, (_, users) in claims.items()}
    for key, (pvc, users) in claims.items():
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


def add_disk_conflicts(v: Variables, groups: list[PodGroup], filters: dict[int, set[str]]) -> None:
    """VolumeRestrictions between window pods: groups whose inline volumes conflict never share a node."""
    from ..plugins.volumerestrictions import needs_check, pods_conflict

    disks = [g for g in groups if v.y[g.gid] and any(needs_check(x) for x in g.rep.pod.spec.volumes)]
    graph = nx.Graph()
    for i, g in enumerate(disks):
        for h in disks[i:]:
            if not ({"VolumeRestrictions"} & (filters[g.gid] | filters[h.gid])):
                continue
            if not pods_conflict(g.rep.pod, h.rep.pod) and not pods_conflict(h.rep.pod, g.rep.pod):
                continue
            if h is g:
                v.cap_per_node(g.gid, 1)
            else:
                graph.add_edge(g.gid, h.gid)
    for clique in nx.find_cliques(graph):
        for n in set().union(*(v.y[g].keys() for g in clique)):
            lits = [_occupied(v, g, n) for g in clique if n in v.y[g]]
            if len(lits) > 1:
                v.model.add(sum(lits) <= 1)


def add_read_write_once_pod(v: Variables, groups: list[PodGroup], filters: dict[int, set[str]]) -> None:
    """A ReadWriteOncePod claim serves one pod: none when a placed pod uses it, else at most one window pod."""
    from ..plugins.volumerestrictions import rwop_claims

    users: dict[str, list[PodGroup]] = defaultdict(list)
    for g in groups:
        if v.y[g.gid] and g.rep.pod.spec.volumes and "VolumeRestrictions" in filters[g.gid]:
            for key in rwop_claims(v.state.index, g.rep.pod)[0]:
                users[key].append(g)
    for key, gs in users.items():
        cap = 0 if v.state.pvc_users[key] > 0 else 1
        if cap == 0 or sum(g.size for g in gs) > 1:
            v.model.add(sum(v.placed[g.gid] for g in gs) <= cap)


def add_csi_limits(v: Variables, groups: list[PodGroup], filters: dict[int, set[str]]) -> None:
    """NodeVolumeLimits: per node and driver, attached + new unique volumes ≤ the limit (one literal per
    (volume, node), shared by every window pod that uses the volume)."""
    from ..plugins.nodevolumelimits import attached_volumes, node_limits, pod_csi_volumes
    from ..plugins.volumebinding.claims import catalog

    state, index = v.state, v.state.index
    csinodes = catalog(index).csinodes
    mine: dict[tuple[int, bool], dict[str, str]] = {}
    for n, entries in v.by_node.items():
        entries = [(g, var) for g, var in entries if g.rep.pod.spec.volumes and "NodeVolumeLimits" in filters[g.gid]]
        if not entries:
            continue
        csinode = csinodes.get(index.node_names[n])
        limits = node_limits(index, n, csinode)
        if not limits:
            continue
        attached = attached_volumes(state, n, csinode)
        handles: dict[str, tuple[str, list[PodGroup]]] = {}
        for g, _ in entries:
            k = (g.gid, csinode is not None)
            if k not in mine:
                mine[k] = pod_csi_volumes(index, g.rep.pod, csinode, pending=True)[0]
            for h, lkey in mine[k].items():
                if h not in attached and lkey in limits:
                    handles.setdefault(h, (lkey, []))[1].append(g)
        per_key: dict[str, list[str]] = defaultdict(list)
        for h, (lkey, _) in handles.items():
            per_key[lkey].append(h)
        for lkey, hs in per_key.items():
            room = max(0, limits[lkey] - sum(1 for x in attached.values() if x == lkey))
            if len(hs) <= room:
                continue
            lits = []
            for h in hs:
                gs = handles[h][1]
                if len(gs) == 1:
                    lits.append(_occupied(v, gs[0].gid, n))
                    continue
                u = v.model.new_bool_var(f"csi_{n}_{h}")
                for g in gs:
                    v.model.add(_occupied(v, g.gid, n) <= u)
                v.aux_hints.append((u, lambda c, gs=gs, n=n: int(any(c.get(g.gid, {}).get(n, 0) > 0 for g in gs))))
                lits.append(u)
            v.model.add(sum(lits) <= room)


def add_volumes(v: Variables, groups: list[PodGroup], enabled, greedy: dict[str, str]) -> ClaimChoices:
    """Every volume rule between window pods (groups without volumes add nothing)."""
    if not any(g.rep.pod.spec.volumes for g in groups):
        return ClaimChoices()
    filters = _filters(groups, enabled)
    add_disk_conflicts(v, groups, filters)
    add_read_write_once_pod(v, groups, filters)
    add_csi_limits(v, groups, filters)
    return add_volume_binding(v, groups, filters, greedy)


def volume_edges(index, groups: list[PodGroup]) -> set[tuple[int, int]]:
    """Groups that share a claim (one PV, one node, ReadWriteOncePod) or may compete for a PV."""
    from ..plugins.volumebinding.claims import candidate_pvs, pod_claims

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
