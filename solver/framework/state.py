"""ClusterState: the mutable scheduling state both engines work on (kube-scheduler's cache + snapshot).

It starts from the ClusterIndex's bound pods and changes only through `assume` / `forget`, which keep
every derived structure incremental: requested resources, pod counts, host ports, and per-label-signature
pod counts per node. A *signature* is (namespace, labels, terminating); all pods that share one are
indistinguishable to selectors, so "how many pods matching (namespaces, selector) run on each node" is
a sum over the signatures that match, cached per selector. That is what makes inter-pod affinity and
topology spread fast.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from kplace.models.index import ClusterIndex, PodInfo
from kplace.models.k8s import Pod
from kplace.models.selectors import Selector

_DENSE_MIN = 8  # signatures (and affinity groups) with at least this many pods keep a dense per-node count array,
_DENSE_SHARE = 32  # and at least 1/_DENSE_SHARE of the nodes' count: below, a sparse {node: count} is leaner
_LIVE_MAX = 512  # per-selector count arrays kept up to date by assume/forget (n_nodes int64 each)
_DOMAINS_MAX = 4096  # per-(selector, topology domains, node subset) counts kept up to date likewise (small each)


def pod_pvc_keys(pod: Pod) -> tuple[str, ...]:
    """"namespace/name" of every claim the pod's volumes use: PVC sources, and generic ephemeral volumes
    (whose claim is named `<pod>-<volume>`)."""
    ns, out = pod.metadata.namespace, []
    for v in pod.spec.volumes:
        if v.persistent_volume_claim is not None:
            out.append(f"{ns}/{v.persistent_volume_claim.claim_name}")
        elif v.ephemeral is not None:
            out.append(f"{ns}/{pod.metadata.name}-{v.name}")
    return tuple(out)


def has_pod_affinity(pod: PodInfo) -> bool:
    """The pod carries pod affinity or anti-affinity terms."""
    aff = pod.pod.spec.affinity
    return aff is not None and bool(aff.pod_affinity or aff.pod_anti_affinity)


def affinity_group_key(pod: PodInfo) -> tuple | None:
    """What a bound pod's pod (anti-)affinity terms mean, independent of which pod carries them.

    Two pods with equal keys have identical compiled terms: same term text, same namespace where a term
    defaults to the pod's own, same values of the labels that matchLabelKeys/mismatchLabelKeys read.
    None for pods without pod (anti-)affinity.
    """
    if not has_pod_affinity(pod):
        return None
    aff = pod.pod.spec.affinity
    terms = []
    for pa in (aff.pod_affinity, aff.pod_anti_affinity):
        if pa is not None:
            terms.extend(pa.required_during_scheduling_ignored_during_execution)
            terms.extend(w.pod_affinity_term for w in pa.preferred_during_scheduling_ignored_during_execution)
    own_ns = any(not t.namespaces and t.namespace_selector is None for t in terms)
    keys = sorted({k for t in terms for k in (*t.match_label_keys, *t.mismatch_label_keys)})
    text = aff.model_dump_json(include={"pod_affinity", "pod_anti_affinity"})
    return (pod.namespace if own_ns else None, tuple((k, pod.labels.get(k)) for k in keys), text)


@dataclass(eq=False)
class AffinityGroup:
    """Bound pods whose pod (anti-)affinity terms are identical (see `affinity_group_key`)."""

    rep: int  # index of a pod whose terms stand for the whole group
    required_anti: bool
    size: int = 0
    sparse: Counter[int] = field(default_factory=Counter)
    dense: np.ndarray | None = None

    def node_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """(node ids, pod counts) where the group has pods."""
        if self.dense is not None:
            nodes = np.flatnonzero(self.dense)
            return nodes, self.dense[nodes]
        return (np.fromiter(self.sparse.keys(), dtype=np.int64, count=len(self.sparse)),
                np.fromiter(self.sparse.values(), dtype=np.int64, count=len(self.sparse)))


class ClusterState:
    def __init__(self, index: ClusterIndex) -> None:
        self.index = index
        n = len(index.nodes)
        self.n_nodes = n
        self.requested = index.requested.copy()
        self.nonzero_requested = index.nonzero_requested.copy()
        self.pod_count = index.pod_count.copy()
        self.pod_node = index.pod_node.copy()
        self.node_pods: list[set[int]] = [set() for _ in range(n)]
        # host ports in use, per node that has any: {node: Counter((ip, protocol, port))}
        self.ports: defaultdict[int, Counter[tuple[str, str, int]]] = defaultdict(Counter)

        sig_ids: dict[tuple, int] = {}
        self.sig_of_pod = np.empty(len(index.pods), dtype=np.int64)
        self.sig_info: list[tuple[str, dict[str, str], bool]] = []
        for pi in index.pods:
            key = (pi.namespace, tuple(sorted(pi.labels.items())), pi.terminating)
            sid = sig_ids.get(key)
            if sid is None:
                sid = sig_ids[key] = len(self.sig_info)
                self.sig_info.append((pi.namespace, pi.labels, pi.terminating))
            self.sig_of_pod[pi.idx] = sid
        # (label key, value) → the signatures whose labels carry it, ascending: `matching_signatures`' candidates
        self._sigs_by_label: dict[tuple[str, str], list[int]] = {}
        for s, (_, labels, _) in enumerate(self.sig_info):
            for kv in labels.items():
                self._sigs_by_label.setdefault(kv, []).append(s)
        sizes = np.bincount(self.sig_of_pod, minlength=len(self.sig_info)) if index.pods else np.zeros(0)
        self.dense_min = max(_DENSE_MIN, n // _DENSE_SHARE)
        self._dense: dict[int, np.ndarray] = {
            s: np.zeros(n, dtype=np.int64) for s in np.flatnonzero(sizes >= self.dense_min).tolist()
        }
        self._sparse: dict[int, Counter[int]] = {}
        self._match_cache: dict[tuple[frozenset[str] | None, Selector, bool], list[int]] = {}
        # Live per-node counts for the most used (namespaces, selector, include_terminating) keys.
        self._live: dict[tuple[frozenset[str] | None, Selector, bool], np.ndarray] = {}
        self._live_by_sig: dict[int, list[tuple[frozenset[str] | None, Selector, bool]]] = {}
        # Live per-domain counts (`domain_counts_view`), the signatures each follows, and each one's (node →
        # domain, counted nodes) arrays, which are immutable and a function of the key (so forks share them).
        self._domains: dict[tuple, np.ndarray] = {}
        self._domains_by_sig: dict[int, list[tuple]] = {}
        self._domain_maps: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
        self._mask_keys: dict[int, tuple[np.ndarray, bytes]] = {}  # `_mask_key`'s, per read-only mask
        # Bound pods that carry (anti-)affinity terms: the only existing pods InterPodAffinity must visit
        # for symmetry and for scoring when the incoming pod has no preferred terms.
        self.with_affinity: set[int] = set()
        self.with_required_anti: set[int] = set()
        # The same bound pods grouped by identical terms, with per-node counts, so that per incoming pod
        # InterPodAffinity evaluates each distinct term set once instead of once per existing pod.
        self.affinity_groups: list[AffinityGroup] = []
        self._affinity_group_ids: dict[tuple, int] = {}
        self._affinity_group_of: dict[int, int] = {}
        # Volumes (kube's assume cache for PVs and PVCs, and NodeInfo's PVC reference counts):
        self.pvc_users: Counter[str] = Counter()  # claim key → placed pods using it
        self.pv_claims: dict[str, str] = {}  # PV name → claim key it was reserved for in this run
        self.pvc_selected_node: dict[str, str] = {}  # claim key → node chosen for its dynamic provisioning
        self.node_version = np.zeros(n, dtype=np.int64)  # bumped whenever a node's pods change
        self.plugin_cache: dict[str, dict] = {}
        """Per-state caches of plugins, one dict per plugin; entries must be immutable and keyed so that a state
        change invalidates them (e.g. by `node_version`). `fork` copies each dict, sharing the entries."""
        for pi in index.pods:
            if pi.node >= 0:
                self._place(pi, pi.node)

    # --- copying ----------------------------------------------------------------------------------

    # Attributes `fork` shares because nothing mutates them after construction (or they only cache results
    # that depend on immutable data), and those it copies. A test keeps this list complete.
    _SHARED = frozenset({"index", "n_nodes", "dense_min", "sig_of_pod", "sig_info", "_sigs_by_label", "_match_cache",
                         "_domain_maps", "_mask_keys"})

    def fork(self) -> ClusterState:
        """An independent copy for trial runs (the greedy hint, preemption dry runs): arrays and counters are
        copied at the depth `assume`/`forget` mutate them; the index and immutable caches are shared. Much
        cheaper than `copy.deepcopy`."""
        new = object.__new__(ClusterState)
        d = self.__dict__
        new.__dict__.update({k: d[k] for k in self._SHARED})
        new.requested = self.requested.copy()
        new.nonzero_requested = self.nonzero_requested.copy()
        new.pod_count = self.pod_count.copy()
        new.pod_node = self.pod_node.copy()
        new.node_version = self.node_version.copy()
        new.node_pods = [set(x) for x in self.node_pods]
        new.ports = defaultdict(Counter, {n: Counter(c) for n, c in self.ports.items() if c})
        new._dense = {k: v.copy() for k, v in self._dense.items()}
        new._sparse = {k: Counter(v) for k, v in self._sparse.items()}
        new._live = {k: v.copy() for k, v in self._live.items()}
        new._live_by_sig = {k: list(v) for k, v in self._live_by_sig.items()}
        new._domains = {k: v.copy() for k, v in self._domains.items()}
        new._domains_by_sig = {k: list(v) for k, v in self._domains_by_sig.items()}
        new.with_affinity = set(self.with_affinity)
        new.with_required_anti = set(self.with_required_anti)
        new.affinity_groups = [
            AffinityGroup(g.rep, g.required_anti, g.size, Counter(g.sparse),
                          None if g.dense is None else g.dense.copy())
            for g in self.affinity_groups
        ]
        new._affinity_group_ids = dict(self._affinity_group_ids)
        new._affinity_group_of = dict(self._affinity_group_of)
        new.pvc_users = Counter(self.pvc_users)
        new.pv_claims = dict(self.pv_claims)
        new.pvc_selected_node = dict(self.pvc_selected_node)
        new.plugin_cache = {k: dict(v) for k, v in self.plugin_cache.items()}
        unknown = d.keys() - new.__dict__.keys()  # a new attribute must be taught to fork, not shared by mistake
        if unknown:
            raise AssertionError(f"ClusterState.fork does not know how to copy {sorted(unknown)}")
        return new

    # --- mutation ---------------------------------------------------------------------------------

    def assume(self, pod: PodInfo, node: int) -> None:
        """Account pod on node (kube's assume): resources, count, ports, signatures."""
        if self.pod_node[pod.idx] >= 0:
            raise ValueError(f"pod {pod.key} is already on node {self.index.node_names[self.pod_node[pod.idx]]}")
        self.pod_node[pod.idx] = node
        self.requested[node] += self.index.pod_req[pod.idx]
        self.nonzero_requested[node] += self.index.pod_nonzero[pod.idx]
        self.pod_count[node] += 1
        self._place(pod, node)

    def forget(self, pod: PodInfo) -> None:
        """Undo `assume` (or remove a bound pod, as preemption does)."""
        node = int(self.pod_node[pod.idx])
        if node < 0:
            raise ValueError(f"pod {pod.key} is not on any node")
        self.pod_node[pod.idx] = -1
        self.requested[node] -= self.index.pod_req[pod.idx]
        self.nonzero_requested[node] -= self.index.pod_nonzero[pod.idx]
        self.pod_count[node] -= 1
        self.node_pods[node].discard(pod.idx)
        for port in pod.host_ports:
            self.ports[node][port] -= 1
            if self.ports[node][port] <= 0:
                del self.ports[node][port]
        self._count_sig(pod.idx, node, -1)
        self.node_version[node] += 1
        if pod.pod.spec.volumes:
            self.pvc_users.subtract(pod_pvc_keys(pod.pod))
        self.with_affinity.discard(pod.idx)
        self.with_required_anti.discard(pod.idx)
        g = self._affinity_group_of.get(pod.idx)
        if g is not None:
            self._count_group(self.affinity_groups[g], node, -1)

    @contextmanager
    def resources_added(self, added: list[tuple[PodInfo, int]]) -> Iterator[None]:
        """Within the block, each (pod, node) of `added` counts in that node's requested resources and pod count
        (what NodeResourcesFit reads) and in nothing else; undone on exit. For dry runs whose other filters are
        known not to change with those pods."""
        nodes = np.array([n for _, n in added], dtype=np.int64)
        pods = np.array([q.idx for q, _ in added], dtype=np.int64)
        req, nonzero = self.index.pod_req[pods], self.index.pod_nonzero[pods]
        np.add.at(self.requested, nodes, req)
        np.add.at(self.nonzero_requested, nodes, nonzero)
        np.add.at(self.pod_count, nodes, 1)
        try:
            yield
        finally:
            np.subtract.at(self.requested, nodes, req)
            np.subtract.at(self.nonzero_requested, nodes, nonzero)
            np.subtract.at(self.pod_count, nodes, 1)

    def _place(self, pod: PodInfo, node: int) -> None:
        self.node_pods[node].add(pod.idx)
        for port in pod.host_ports:
            self.ports[node][port] += 1
        self._count_sig(pod.idx, node, +1)
        self.node_version[node] += 1
        if pod.pod.spec.volumes:
            self.pvc_users.update(pod_pvc_keys(pod.pod))
        if has_pod_affinity(pod):
            self.with_affinity.add(pod.idx)
            if pod.required_anti_affinity:
                self.with_required_anti.add(pod.idx)
            self._count_group(self.affinity_groups[self._affinity_group(pod)], node, +1)

    def terms_group(self, pod: PodInfo) -> int | None:
        """The group of pods with the same compiled pod (anti-)affinity terms as `pod` (`affinity_group_key`): -1
        for a pod without such terms, None for one with terms that was never placed in this state."""
        return self._affinity_group_of.get(pod.idx) if has_pod_affinity(pod) else -1

    def _affinity_group(self, pod: PodInfo) -> int:
        g = self._affinity_group_of.get(pod.idx)
        if g is None:
            key = affinity_group_key(pod)
            g = self._affinity_group_ids.get(key)
            if g is None:
                g = self._affinity_group_ids[key] = len(self.affinity_groups)
                self.affinity_groups.append(AffinityGroup(pod.idx, bool(pod.required_anti_affinity)))
            self._affinity_group_of[pod.idx] = g
        return g

    def _count_group(self, grp: AffinityGroup, node: int, delta: int) -> None:
        grp.size += delta
        if grp.dense is not None:
            grp.dense[node] += delta
            return
        grp.sparse[node] += delta
        if grp.sparse[node] == 0:
            del grp.sparse[node]
        if grp.size >= self.dense_min:
            grp.dense = np.zeros(self.n_nodes, dtype=np.int64)
            for nd, c in grp.sparse.items():
                grp.dense[nd] = c
            grp.sparse.clear()

    def _count_sig(self, pod_idx: int, node: int, delta: int) -> None:
        sid = int(self.sig_of_pod[pod_idx])
        for key in self._live_by_sig.get(sid, ()):
            self._live[key][node] += delta
        for key in self._domains_by_sig.get(sid, ()):
            dom, counted = self._domain_maps[key]
            if counted[node]:
                self._domains[key][dom[node]] += delta
        dense = self._dense.get(sid)
        if dense is not None:
            dense[node] += delta
            return
        c = self._sparse.setdefault(sid, Counter())
        c[node] += delta
        if c[node] == 0:
            del c[node]

    # --- queries ----------------------------------------------------------------------------------

    def free(self) -> np.ndarray:
        """allocatable − requested, per node and resource."""
        return self.index.alloc - self.requested

    def matching_signatures(
        self, namespaces: frozenset[str] | None, selector: Selector, include_terminating: bool = True
    ) -> list[int]:
        """Signatures whose pods are in `namespaces` (None = all) and match `selector`."""
        key = (namespaces, selector, include_terminating)
        hit = self._match_cache.get(key)
        if hit is None:
            info = self.sig_info
            hit = [
                s
                for s in self._candidate_signatures(selector)
                if (namespaces is None or info[s][0] in namespaces)
                and (include_terminating or not info[s][2])
                and selector.matches(info[s][1])
            ]
            self._match_cache[key] = hit
        return hit

    def _candidate_signatures(self, selector: Selector):
        """Signatures that can match `selector`, ascending: those carrying its first `key = value` label, else those
        carrying a value of its first `In` requirement, else all."""
        if selector.nothing:
            return ()
        if selector.labels:
            return self._sigs_by_label.get(selector.labels[0], ())
        for k, op, values in selector.exprs:
            if op == "In":
                return sorted({s for v in values for s in self._sigs_by_label.get((k, v), ())})
        return range(len(self.sig_info))

    def matching_counts(
        self, namespaces: frozenset[str] | None, selector: Selector, include_terminating: bool = True
    ) -> np.ndarray:
        """Per node, the number of pods on it in `namespaces` (None = all) that match `selector`."""
        return self.matching_counts_view(namespaces, selector, include_terminating).copy()

    def matching_counts_view(
        self, namespaces: frozenset[str] | None, selector: Selector, include_terminating: bool = True
    ) -> np.ndarray:
        """As `matching_counts`, but a read-only view of a cached array that `assume`/`forget` keep current
        (valid until the next mutation; copy it to keep it)."""
        if selector.nothing:
            out = np.zeros(self.n_nodes, dtype=np.int64)
        else:
            key = (namespaces, selector, include_terminating)
            out = self._live.get(key)
            if out is None:
                sigs = self.matching_signatures(namespaces, selector, include_terminating)
                out = self.signature_counts(sigs)
                if len(self._live) < _LIVE_MAX:
                    self._live[key] = out
                    for s in sigs:
                        self._live_by_sig.setdefault(s, []).append(key)
        view = out.view()
        view.flags.writeable = False
        return view

    def domain_counts_view(self, namespaces: frozenset[str] | None, selector: Selector, include_terminating: bool,
                           topology_key: str, dom: np.ndarray, size: int, counted: np.ndarray) -> np.ndarray:
        """Per domain d < `size`: Σ over the nodes n with counted[n] and dom[n] = d of `matching_counts`' n-th entry
        (`dom`: each node's domain, a function of `topology_key`). A read-only view of a cached array that
        `assume`/`forget` keep current (one pod on node n moves entry dom[n] by ±1 where counted[n]), so a
        repeated query costs a hash of `counted` instead of a pass over every node."""
        key = (namespaces, selector, include_terminating, topology_key, size, self._mask_key(counted))
        out = self._domains.get(key)
        if out is None:
            per_node = self.matching_counts_view(namespaces, selector, include_terminating)
            out = np.rint(np.bincount(dom[counted], weights=per_node[counted], minlength=size)).astype(np.int64)
            if len(self._domains) < _DOMAINS_MAX:
                self._domains[key] = out
                self._domain_maps.setdefault(key, (dom, counted.copy()))
                for s in self.matching_signatures(namespaces, selector, include_terminating):
                    self._domains_by_sig.setdefault(s, []).append(key)
        view = out.view()
        view.flags.writeable = False
        return view

    def _mask_key(self, mask: np.ndarray) -> bytes:
        """A node mask as a hashable key (its packed bits), kept per array for read-only ones that own their data
        (nothing can write them), which callers cache and pass again (the array is held, so its id stays its
        own)."""
        if mask.flags.writeable or mask.base is not None:
            return np.packbits(mask).tobytes()
        hit = self._mask_keys.get(id(mask))
        if hit is None or hit[0] is not mask:
            hit = self._mask_keys[id(mask)] = (mask, np.packbits(mask).tobytes())
        return hit[1]

    def signature_counts(self, signatures) -> np.ndarray:
        """Per node, the number of pods on it whose signature is in `signatures`."""
        out = np.zeros(self.n_nodes, dtype=np.int64)
        for s in signatures:
            dense = self._dense.get(s)
            if dense is not None:
                out += dense
            else:
                sparse = self._sparse.get(s)
                if sparse:
                    nodes = np.fromiter(sparse.keys(), dtype=np.int64, count=len(sparse))
                    np.add.at(out, nodes, np.fromiter(sparse.values(), dtype=np.int64, count=len(sparse)))
        return out

    def live_affinity_groups(self, required_anti: bool = False) -> list[AffinityGroup]:
        """Groups of bound pods with pod (anti-)affinity that have at least one pod placed (optionally
        only those whose terms include required anti-affinity)."""
        return [g for g in self.affinity_groups if g.size > 0 and (g.required_anti or not required_anti)]

    def placed_pending(self) -> np.ndarray:
        """The pods pending in the input that this state holds on a node (placed by the run so far), by index."""
        return np.flatnonzero((self.pod_node >= 0) & (self.index.pod_node < 0))

    def pods_on(self, node: int) -> list[PodInfo]:
        pods = self.index.pods
        return [pods[i] for i in sorted(self.node_pods[node])]
