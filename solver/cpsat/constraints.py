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
  a[g, v] ⇒ C_v − m ≤ maxSkew.
These are the final-state forms of kube's sequential checks: for a group of identical pods, a final state
satisfies them exactly when some order of placing the pods passes kube's filter at every step.
"""

from __future__ import annotations

from collections import defaultdict

import networkx as nx
import numpy as np
from kplace.models.index import HOSTNAME
from ortools.sat.python import cp_model

from ..plugins.interpodaffinity.terms import affinity_counts, pod_terms
from .groups import GroupMatcher, PodGroup
from .variables import Variables


def rule_edges(index, match: GroupMatcher) -> set[tuple[int, int]]:
    """Pairs of groups a hard rule ties: (anti-)affinity terms that match, DoNotSchedule spread selectors."""
    from ..plugins.podtopologyspread.spread import compile_constraints

    edges: set[tuple[int, int]] = set()
    for g in match.groups:
        terms = pod_terms(index, g.rep)
        for t in (*terms.required_anti, *terms.required_affinity):
            edges.update((g.gid, h.gid) for h in match.term(t) if h is not g)
        for c in compile_constraints(g.rep.spread_constraints, g.rep.labels, "DoNotSchedule"):
            edges.update((g.gid, h.gid) for h in match.selector(g.rep.namespace, c.selector) if h is not g)
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


def add_anti_affinity(v: Variables, groups: list[PodGroup], match: GroupMatcher) -> int:
    """Returns the number of hostname cliques used as cuts."""
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
    cliques = 0
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
        cliques += 1
        nodes = set().union(*(v.y[g].keys() for g in clique))
        for n in nodes:
            terms = [v.y[g][n] for g in clique if n in v.y[g]]
            if len(terms) > 1:
                v.model.add(sum(terms) <= 1)
    return cliques


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
            for val in v.domains(g.gid, c.key):
                a = v.presence(g.gid, c.key, val)
                v.model.add(int(fixed[val]) + sum(count.get(val, [])) - m <= c.max_skew).only_enforce_if(a)
