"""Pure topology-spread logic: constraints, default selectors, node inclusion, and the Filter/Score maths.

A constraint c is (maxSkew, topologyKey, selector, minDomains (nil → 1), nodeAffinityPolicy (nil → Honor),
nodeTaintsPolicy (nil → Ignore)); selector = labelSelector AND `k = pod.labels[k]` for each matchLabelKeys key
the pod has (a nil labelSelector stays "match nothing"). Pods are counted when they are in the incoming pod's
namespace, not terminating, and match the selector; a `{}` selector counts nothing (kube's
countPodsMatchSelector) although it still matches the pod itself.

Vectorised: per constraint, a node mask of eligible nodes and, per value id of `label_column(key)`, a count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from kplace.models.index import HOSTNAME, ClusterIndex, PodInfo
from kplace.models.k8s import LabelSelector, LabelSelectorRequirement, TopologySpreadConstraint
from kplace.models.selectors import Selector, node_term_matches
from kplace.models.tolerations import tolerated_by_any

from ...framework.state import ClusterState

CACHE_KEY = "PodTopologySpread"
ZONE = "topology.kubernetes.io/zone"
SYSTEM_DEFAULT_CONSTRAINTS = [
    TopologySpreadConstraint(topology_key=HOSTNAME, when_unsatisfiable="ScheduleAnyway", max_skew=3),
    TopologySpreadConstraint(topology_key=ZONE, when_unsatisfiable="ScheduleAnyway", max_skew=5),
]
MAX_INT32 = 2**31 - 1


@dataclass(frozen=True, slots=True)
class Constraint:
    max_skew: int
    key: str
    selector: Selector
    min_domains: int = 1
    honor_affinity: bool = True
    honor_taints: bool = False


def compile_constraints(
    raw: list[TopologySpreadConstraint], pod_labels: dict[str, str], action: str
) -> list[Constraint]:
    """kube's filterTopologySpreadConstraints: the constraints with `whenUnsatisfiable == action`."""
    out = []
    for c in raw:
        if c.when_unsatisfiable != action:
            continue
        extra = {k: pod_labels[k] for k in c.match_label_keys if k in pod_labels}
        out.append(
            Constraint(
                max_skew=c.max_skew,
                key=c.topology_key,
                selector=Selector(c.label_selector, extra if c.label_selector is not None else None),
                min_domains=c.min_domains if c.min_domains is not None else 1,
                honor_affinity=(c.node_affinity_policy or "Honor") == "Honor",
                honor_taints=(c.node_taints_policy or "Ignore") == "Honor",
            )
        )
    return out


# --- default constraints ----------------------------------------------------------------------------


def _requirements(sel: LabelSelector | None) -> list[LabelSelectorRequirement]:
    """A LabelSelector's requirements (matchLabels as `In`); none for nil, as labels.Nothing() has none."""
    if sel is None:
        return []
    reqs = [LabelSelectorRequirement(key=k, operator="In", values=[v]) for k, v in sel.match_labels.items()]
    return reqs + list(sel.match_expressions)


def default_selector(index: ClusterIndex, pod: PodInfo) -> Selector:
    """helper.DefaultSelector: the union (AND) of the selectors of the Services in the pod's namespace whose
    non-empty selector matches the pod, and of the pod's controller if it is a ReplicationController (v1),
    ReplicaSet or StatefulSet (apps/v1) found by name in the pod's namespace.

    A Deployment's pods name a ReplicaSet `<deployment>-<pod-template-hash>` that a state file may not hold;
    that ReplicaSet is then taken as the Deployment's selector plus `pod-template-hash`, which is what the
    deployment controller would have created. Cached per pod in `index.cache`.
    """
    cache = index.cache.setdefault(CACHE_KEY, {}).setdefault("default_selector", {})
    hit = cache.get(pod.idx)
    if hit is not None:
        return hit
    snap = index.snapshot
    ns = pod.namespace
    labels: dict[str, str] = {}
    for svc in snap.services:
        sel = svc.spec.selector
        if svc.metadata.namespace == ns and sel and all(pod.labels.get(k) == v for k, v in sel.items()):
            labels.update(sel)
    reqs: list[LabelSelectorRequirement] = []
    owner = next((o for o in pod.pod.metadata.owner_references if o.controller), None)
    if owner is not None:
        kind = {("v1", "ReplicationController"), ("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet")}
        if (owner.api_version, owner.kind) in kind:
            wl = next(
                (w for w in snap.workloads
                 if w.kind == owner.kind and w.metadata.namespace == ns and w.metadata.name == owner.name),
                None,
            )
            if wl is not None and owner.kind == "ReplicationController":
                # An RC's selector is a plain map; the API server defaults an empty one to the template labels.
                rc_sel = (wl.spec.selector.match_labels if wl.spec.selector else {}) or wl.spec.template.metadata.labels
                labels.update(rc_sel)
            elif wl is not None:
                reqs = _requirements(wl.spec.selector)
            elif owner.kind == "ReplicaSet" and "pod-template-hash" in pod.labels:
                h = pod.labels["pod-template-hash"]
                deps = (w for w in snap.workloads if w.kind == "Deployment" and w.metadata.namespace == ns)
                dep = next((w for w in deps if f"{w.metadata.name}-{h}" == owner.name), None)
                if dep is not None:
                    reqs = [*_requirements(dep.spec.selector),
                            LabelSelectorRequirement(key="pod-template-hash", operator="In", values=[h])]
    hit = cache[pod.idx] = Selector(LabelSelector(match_labels=labels, match_expressions=reqs))
    return hit


def pod_constraints(
    index: ClusterIndex, pod: PodInfo, action: str, defaults: list[TopologySpreadConstraint]
) -> list[Constraint]:
    """kube's getConstraints / initPreScoreState: the pod's own constraints of kind `action`; when it declares
    none at all, the default constraints of that kind with the pod's default selector (none if it is empty)."""
    if pod.spread_constraints:
        return compile_constraints(pod.spread_constraints, pod.labels, action)
    constraints = compile_constraints(defaults, pod.labels, action)
    if not constraints:
        return []
    sel = default_selector(index, pod)
    if sel.empty:
        return []
    return [Constraint(c.max_skew, c.key, sel, c.min_domains, c.honor_affinity, c.honor_taints) for c in constraints]


# --- node inclusion ---------------------------------------------------------------------------------


def _all_nodes(index: ClusterIndex) -> np.ndarray:
    """A read-only all-true node mask."""
    cache = index.cache.setdefault(CACHE_KEY, {})
    mask = cache.get("all_nodes")
    if mask is None:
        mask = cache["all_nodes"] = np.ones(len(index.nodes), dtype=bool)
        mask.flags.writeable = False
    return mask


def node_affinity_mask(index: ClusterIndex, pod: PodInfo) -> np.ndarray:
    """Per node: the pod's nodeSelector and required node affinity match (kube's RequiredNodeAffinity). Read-only."""
    key = index.node_keys(pod)[0]
    if key is None:
        return _all_nodes(index)
    cache = index.cache.setdefault(CACHE_KEY, {}).setdefault("affinity", {})
    hit = cache.get(key)
    if hit is None:
        spec = pod.pod.spec
        req = spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution if key[1] else None
        sel = spec.node_selector
        hit = np.array(
            [
                all(labels.get(k) == v for k, v in sel.items())
                and (req is None or any(node_term_matches(t, labels, name) for t in req.node_selector_terms))
                for labels, name in zip(index.node_labels, index.node_names, strict=True)
            ],
            dtype=bool,
        )
        hit.flags.writeable = False
        cache[key] = hit
    return hit


def taints_mask(index: ClusterIndex, pod: PodInfo) -> np.ndarray:
    """Per node: every NoSchedule/NoExecute taint is tolerated by the pod. Read-only."""
    cache = index.cache.setdefault(CACHE_KEY, {})
    groups = cache.get("taint_groups")
    if groups is None:
        ids: dict[tuple, int] = {}
        of_node = np.empty(len(index.nodes), dtype=np.int64)
        taints = []
        for i, ts in enumerate(index.node_taints):
            hard = tuple(t for t in ts if t.effect in ("NoSchedule", "NoExecute"))
            k = tuple((t.key, t.value, t.effect) for t in hard)
            if k not in ids:
                ids[k] = len(taints)
                taints.append(hard)
            of_node[i] = ids[k]
        groups = cache["taint_groups"] = (of_node, taints)
    of_node, taints = groups
    key = index.node_keys(pod)[1]
    masks = cache.setdefault("taints", {})
    hit = masks.get(key)
    if hit is None:
        ok = np.array([all(tolerated_by_any(pod.tolerations, t) for t in ts) for ts in taints], dtype=bool)
        hit = masks[key] = ok[of_node]
        hit.flags.writeable = False
    return hit


def has_all_keys(index: ClusterIndex, constraints: list[Constraint] | frozenset[str]) -> np.ndarray:
    """Per node: it carries every constraint's topology key (or every key of a set; cached per set of keys;
    read-only)."""
    keys = constraints if isinstance(constraints, frozenset) else frozenset(c.key for c in constraints)
    cache = index.cache.setdefault(CACHE_KEY, {}).setdefault("all_keys", {})
    mask = cache.get(keys)
    if mask is None:
        mask = np.ones(len(index.nodes), dtype=bool)
        for k in keys:
            mask &= index.label_column(k)[0] >= 0
        mask.flags.writeable = False
        cache[keys] = mask
    return mask


def domains_of(index: ClusterIndex, key: str) -> tuple[np.ndarray, int]:
    """(per node its domain id for `key`, the number of ids): the label's value id, and a node without the key in
    the "" domain (kube reads a missing label as ""), an id of its own when no node has the value ""."""
    cache = index.cache.setdefault(CACHE_KEY, {}).setdefault("domains", {})
    hit = cache.get(key)
    if hit is None:
        ids, values = index.label_column(key)
        blank = values.index("") if "" in values else len(values)
        dom = np.where(ids >= 0, ids, blank)
        dom.flags.writeable = False
        hit = cache[key] = (dom, len(values) + 1)
    return hit


def matching_per_domain(state: ClusterState, pod: PodInfo, c: Constraint, counted: np.ndarray) -> np.ndarray:
    """Per domain of c's key (`domains_of`): the pods `matching_per_node` counts, summed over the `counted`
    nodes."""
    dom, size = domains_of(state.index, c.key)
    if c.selector.empty or c.selector.nothing:
        return np.zeros(size, dtype=np.int64)
    return state.domain_counts_view(frozenset([pod.namespace]), c.selector, False, c.key, dom, size, counted)


def included(index: ClusterIndex, pod: PodInfo, c: Constraint, keys: frozenset[str] | None) -> np.ndarray:
    """Per node: it carries every topology key of `keys` (None: any node) and passes the constraint's node
    inclusion policies. Cached per (keys, the pod's affinity and tolerations as the policies read them);
    read-only."""
    affinity, tolerations, _ = index.node_keys(pod)
    key = (keys, affinity if c.honor_affinity else None, tolerations if c.honor_taints else None)
    cache = index.cache.setdefault(CACHE_KEY, {}).setdefault("included", {})
    mask = cache.get(key)
    if mask is None:
        mask = _all_nodes(index) if keys is None else has_all_keys(index, keys)
        if c.honor_affinity:
            mask = mask & node_affinity_mask(index, pod)
        if c.honor_taints:
            mask = mask & taints_mask(index, pod)
        if mask.flags.writeable:
            mask.flags.writeable = False
        cache[key] = mask
    return mask


def matching_per_node(state: ClusterState, pod: PodInfo, c: Constraint) -> np.ndarray:
    """Per node: pods in the pod's namespace, not terminating, matching c's selector (0 for a `{}` selector)."""
    if c.selector.empty or c.selector.nothing:
        return np.zeros(state.n_nodes, dtype=np.int64)
    return state.matching_counts_view(frozenset([pod.namespace]), c.selector, include_terminating=False)


# --- Filter (DoNotSchedule) -------------------------------------------------------------------------


@dataclass
class FilterConstraint:
    constraint: Constraint
    counts: np.ndarray  # per value id: matching pods on eligible nodes
    self_match: int
    eligible: np.ndarray  # per node: its pods count (all constraints' keys present, inclusion policies pass)
    present: np.ndarray  # per value id: some eligible node has it (a domain)

    @property
    def min_match(self) -> int:
        """globalMin: the least count over the domains, or 0 with fewer domains than minDomains (exact after
        `update` too: the dry runs change one node at a time, where kube's two critical paths are exact)."""
        n_domains = int(self.present.sum())
        if n_domains < self.constraint.min_domains:
            return 0
        return int(self.counts[self.present].min()) if n_domains else MAX_INT32

    def update(self, other: PodInfo, node: int, node_ids: np.ndarray, delta: int) -> None:
        """kube's updateWithPod for one constraint: a pod of the namespace whose labels match the selector, on an
        eligible node, changes its domain's count by delta."""
        if self.eligible[node] and self.constraint.selector.matches(other.labels):
            self.counts[node_ids[node]] += delta


class FilterConstraints(list):
    """The PreFilter state: one FilterConstraint per DoNotSchedule constraint, in order."""

    def clone(self) -> FilterConstraints:
        return FilterConstraints(replace(fc, counts=fc.counts.copy()) for fc in self)

    def update(self, index: ClusterIndex, pod: PodInfo, other: PodInfo, node: int, delta: int) -> None:
        if other.namespace != pod.namespace:
            return
        for fc in self:
            fc.update(other, node, index.label_column(fc.constraint.key)[0], delta)


def filter_state(state: ClusterState, pod: PodInfo, constraints: list[Constraint]) -> FilterConstraints:
    """PreFilter: per constraint c, count[v] over eligible nodes (all constraints' keys present and c's
    inclusion policies pass) with value v; a domain exists once an eligible node has it, even at 0;
    globalMin = min over domains (0 if #domains < minDomains)."""
    index = state.index
    keys = frozenset(c.key for c in constraints)
    out = FilterConstraints()
    for c in constraints:
        ids, values = index.label_column(c.key)
        eligible = included(index, pod, c, keys)
        present = np.bincount(ids[eligible], minlength=len(values)) > 0
        counts = matching_per_domain(state, pod, c, eligible)[:len(values)].copy()  # eligible nodes have the key
        out.append(FilterConstraint(c, counts, int(c.selector.matches(pod.labels)), eligible, present))
    return out


def filter_codes(index: ClusterIndex, fcs: list[FilterConstraint], nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per node, constraints in order, the first failure decides: key missing → UU (2); skew =
    count[n[key]] + selfMatch − globalMin > maxSkew → U (1). Returns (code, decided-by-missing-label mask)."""
    code = np.zeros(len(nodes), dtype=np.int8)
    open_ = np.ones(len(nodes), dtype=bool)
    for fc in fcs:
        ids = index.label_column(fc.constraint.key)[0][nodes]
        missing = open_ & (ids < 0)
        code[missing] = 2
        open_ &= ~missing
        at = fc.counts[np.where(ids >= 0, ids, 0)] if len(fc.counts) else np.zeros(len(nodes), dtype=np.int64)
        skew = at + fc.self_match - fc.min_match  # no node has the key: every node failed above
        bad = open_ & (skew > fc.constraint.max_skew)
        code[bad] = 1
        open_ &= ~bad
    return code, code == 2


# --- Score (ScheduleAnyway) -------------------------------------------------------------------------


@dataclass
class ScoreState:
    constraints: list[Constraint]
    require_all: bool
    ignored: np.ndarray  # per scored node
    raw: np.ndarray  # per scored node


def score_state(
    state: ClusterState, pod: PodInfo, constraints: list[Constraint], require_all: bool, nodes: np.ndarray
) -> ScoreState:
    """PreScore + Score over the feasible `nodes`.

    - ignored: feasible nodes missing any constraint key (only when require_all);
    - per non-hostname constraint c: domains = values among non-ignored feasible nodes (a node without the key
      is the value "" when not require_all); size_c = #domains, or #feasible − #ignored for hostname;
      w_c = ln(size_c + 2);
    - count_c[v] sums, over all nodes passing key presence (require_all) and c's inclusion policies, the
      matching pods, for domains seen among feasible nodes; for hostname it is the node's own pods;
    - raw(n) = round(Σ over c whose key n has of count·w_c + (maxSkew_c − 1)), half away from zero.
    """
    index = state.index
    all_keys = has_all_keys(index, constraints)
    ignored = ~all_keys[nodes] if require_all else np.zeros(len(nodes), dtype=bool)
    kept = nodes[~ignored]
    total = np.zeros(len(nodes), dtype=np.float64)
    for c in constraints:
        node_ids = index.label_column(c.key)[0][nodes]
        if c.key == HOSTNAME:
            weight = math.log(len(kept) + 2)
            cnt = matching_per_node(state, pod, c)[nodes]
        else:
            dom, size = domains_of(index, c.key)
            seen = np.zeros(size, dtype=bool)
            seen[dom[kept]] = True
            weight = math.log(int(seen.sum()) + 2)
            contrib = included(index, pod, c, frozenset(x.key for x in constraints) if require_all else None)
            counts = matching_per_domain(state, pod, c, contrib)
            at = dom[nodes]
            cnt = np.where(seen[at], counts[at], 0)
        has = node_ids >= 0
        total = np.where(has, total + (cnt.astype(np.float64) * weight + float(c.max_skew - 1)), total)
    floor = np.floor(total)
    raw = np.where(total - floor >= 0.5, floor + 1, floor).astype(np.int64)  # Go's math.Round
    raw[ignored] = 0
    return ScoreState(constraints, require_all, ignored, raw)


def normalize_spread(raw: np.ndarray, ignored: np.ndarray) -> np.ndarray:
    """Ignored nodes → 0; max = max(0, raw over the others), min = their min; max = 0 → 100 everywhere;
    else 100·(max + min − raw) // max."""
    raw = np.asarray(raw, dtype=np.int64)
    out = np.zeros(len(raw), dtype=np.int64)
    keep = ~ignored
    if not keep.any():
        return out
    hi = max(0, int(raw[keep].max()))
    lo = int(raw[keep].min())
    if hi == 0:
        out[keep] = 100
        return out
    out[keep] = 100 * (hi + lo - raw[keep]) // hi
    return out
