"""ClusterIndex: the compiled, numeric view of a ClusterSnapshot; the only thing the engines read.

Nodes and pods get integer ids. Per resource r (columns: cpu, memory, ephemeral-storage, then every scalar
resource seen, sorted), `alloc[n, r]` is node n's allocatable and `pod_req[p, r]` pod p's request R
(canonical integers, see `models.requests`). `requested[n, r]` sums R over the pods bound to n, and
`nonzero_requested[n, :]` the non-zero (cpu, memory) requests used by scoring. Node labels are compiled
lazily into one integer column per key (`label_column`), which is what topology domains are made of.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property

import numpy as np

from .k8s import Node, Pod, PodAffinityTerm, Taint, Toleration, TopologySpreadConstraint
from .quantity import canonical
from .requests import host_ports, pod_requests
from .snapshot import ClusterSnapshot, Gang, gangs, is_finished, is_pending

BASE_RESOURCES = ("cpu", "memory", "ephemeral-storage")
ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
REGION_LABELS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")
HOSTNAME = "kubernetes.io/hostname"


@dataclass(slots=True, eq=False)
class PodInfo:
    """What the scheduler needs of one pod, compiled once (the pydantic Pod stays at `pod`)."""

    idx: int
    pod: Pod
    key: str  # "namespace/name"
    namespace: str
    name: str
    labels: dict[str, str]
    priority: int
    node: int  # node id, or -1 when pending or bound to an unknown node
    pending: bool
    seq: int  # position in the input, the queue's last tie-break
    creation: datetime | None
    host_ports: list[tuple[str, str, int]]
    tolerations: list[Toleration]
    requests: dict[str, int]
    images: list[str] = field(default_factory=list)

    @property
    def spec(self):
        return self.pod.spec

    @property
    def terminating(self) -> bool:
        return self.pod.metadata.deletion_timestamp is not None

    @property
    def required_affinity(self) -> list[PodAffinityTerm]:
        a = self.pod.spec.affinity
        return a.pod_affinity.required_during_scheduling_ignored_during_execution if a and a.pod_affinity else []

    @property
    def required_anti_affinity(self) -> list[PodAffinityTerm]:
        a = self.pod.spec.affinity
        pa = a.pod_anti_affinity if a else None
        return pa.required_during_scheduling_ignored_during_execution if pa else []

    @property
    def spread_constraints(self) -> list[TopologySpreadConstraint]:
        return self.pod.spec.topology_spread_constraints


_NO_TIME = datetime.max.replace(tzinfo=UTC)


def first_label(labels: dict[str, str], keys: tuple[str, ...]) -> str:
    """The value of the first of `keys` the labels carry ("" if none), e.g. the GA zone label before the beta."""
    return next((labels[k] for k in keys if k in labels), "")


def queue_key(pod: PodInfo) -> tuple[int, datetime, int]:
    """PrioritySort's order: higher priority first, then the earlier queue time, then input order.

    kplace has no queue arrival times, so the creation time stands for it (pods without one go last); naive
    timestamps are taken as UTC, aware ones are converted to UTC.
    """
    ts = pod.creation
    if ts is None:
        ts = _NO_TIME
    elif ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return (-pod.priority, ts.astimezone(UTC), pod.seq)


def normalize_image(name: str) -> str:
    """ImageLocality's normalisation: append `:latest` when the image has no tag or digest."""
    last = name.rsplit("/", 1)[-1]
    return name if (":" in last or "@" in name) else f"{name}:latest"


class ClusterIndex:
    """Integer ids and numpy arrays over a snapshot. Bound pods are constants; pending pods are the work."""

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.snapshot = snapshot
        self.nodes: list[Node] = list(snapshot.nodes)
        self.node_names = [n.metadata.name for n in self.nodes]
        self.node_id = {name: i for i, name in enumerate(self.node_names)}
        self.node_labels: list[dict[str, str]] = [n.metadata.labels for n in self.nodes]
        self.node_taints: list[list[Taint]] = [n.spec.taints for n in self.nodes]
        self.unschedulable = np.array([n.spec.unschedulable for n in self.nodes], dtype=bool)
        self.namespace_labels = snapshot.namespace_labels()

        pods = [p for p in snapshot.pods if not is_finished(p)]
        allocs = [{k: canonical(k, v) for k, v in n.allocatable.items()} for n in self.nodes]
        self.pods: list[PodInfo] = []
        for seq, p in enumerate(pods):
            node = self.node_id.get(p.spec.node_name, -1) if p.spec.node_name else -1
            self.pods.append(
                PodInfo(
                    idx=seq,
                    pod=p,
                    key=f"{p.metadata.namespace}/{p.metadata.name}",
                    namespace=p.metadata.namespace,
                    name=p.metadata.name,
                    labels=p.metadata.labels,
                    priority=p.spec.priority or 0,
                    node=node,
                    pending=is_pending(p),
                    seq=seq,
                    creation=p.metadata.creation_timestamp,
                    host_ports=host_ports(p),
                    tolerations=p.spec.tolerations,
                    requests=pod_requests(p),
                    images=[normalize_image(c.image) for c in [*p.spec.init_containers, *p.spec.containers]
                            if c.image],
                )
            )
        scalars = sorted(
            ({k for a in allocs for k in a} | {k for pi in self.pods for k in pi.requests})
            - {*BASE_RESOURCES, "pods"}
        )
        self.resources: list[str] = [*BASE_RESOURCES, *scalars]
        self.rid = {r: i for i, r in enumerate(self.resources)}
        n_nodes, n_res = len(self.nodes), len(self.resources)
        self.alloc = np.zeros((n_nodes, n_res), dtype=np.int64)
        for i, a in enumerate(allocs):
            for k, v in a.items():
                if k in self.rid:
                    self.alloc[i, self.rid[k]] = v
        self.max_pods = np.array([a.get("pods", 0) for a in allocs], dtype=np.int64)

        self.pod_req = np.zeros((len(self.pods), n_res), dtype=np.int64)
        self.pod_nonzero = np.zeros((len(self.pods), 2), dtype=np.int64)
        for pi in self.pods:
            for k, v in pi.requests.items():
                if k in self.rid:
                    self.pod_req[pi.idx, self.rid[k]] = v
            nz = pod_requests(pi.pod, non_zero=True, plain=pi.requests)
            self.pod_nonzero[pi.idx] = (nz.get("cpu", 0), nz.get("memory", 0))
        self.pod_node = np.array([pi.node for pi in self.pods], dtype=np.int64)
        self.pod_priority = np.array([pi.priority for pi in self.pods], dtype=np.int64)

        bound = self.pod_node >= 0
        self.requested = np.zeros((n_nodes, n_res), dtype=np.int64)
        self.nonzero_requested = np.zeros((n_nodes, 2), dtype=np.int64)
        np.add.at(self.requested, self.pod_node[bound], self.pod_req[bound])
        np.add.at(self.nonzero_requested, self.pod_node[bound], self.pod_nonzero[bound])
        self.pod_count = np.bincount(self.pod_node[bound], minlength=n_nodes).astype(np.int64)
        self._label_cols: dict[str, tuple[np.ndarray, list[str]]] = {}
        self.cache: dict[str, object] = {}
        """Derived per-index data that plugins compute once (taint groups, domains, ...), keyed by plugin."""

    # --- pods -------------------------------------------------------------------------------------

    @cached_property
    def pending(self) -> list[PodInfo]:
        """Pending pods in kube's queue order (`queue_key`)."""
        return sorted((pi for pi in self.pods if pi.pending), key=queue_key)

    @cached_property
    def bound(self) -> list[PodInfo]:
        return [pi for pi in self.pods if pi.node >= 0]

    @cached_property
    def pod_by_key(self) -> dict[str, PodInfo]:
        return {pi.key: pi for pi in self.pods}

    @cached_property
    def gangs(self) -> list[Gang]:
        """The state's gangs (`snapshot.gangs`): all-or-nothing groups of pods."""
        return gangs(self.snapshot)

    @cached_property
    def gang_of(self) -> dict[int, int]:
        """Pod idx → index in `gangs` of the gang it belongs to."""
        return {self.pod_by_key[k].idx: i for i, g in enumerate(self.gangs) for k in g.members
                if k in self.pod_by_key}

    @cached_property
    def _pdb_selectors(self) -> list:
        """Per PDB: (namespace, compiled selector), or None for a selector that selects nothing for PDB purposes
        (null or empty)."""
        from .selectors import Selector

        return [(pdb.metadata.namespace, Selector(pdb.spec.selector))
                if pdb.spec.selector is not None and (pdb.spec.selector.match_labels
                                                      or pdb.spec.selector.match_expressions)
                else None for pdb in self.snapshot.pdbs]

    @cached_property
    def _pdbs_of(self) -> dict[int, list[int]]:
        return {}  # pod idx → `pdbs_of`, filled as asked

    @cached_property
    def _pdbs_by_anchor(self) -> dict[tuple[str, tuple[str, str] | None], list[int]]:
        """(namespace, a label pair every pod the selector selects carries, or None) → the PDBs with a non-empty
        selector there (indices into `snapshot.pdbs`)."""
        out: dict[tuple[str, tuple[str, str] | None], list[int]] = {}
        for i, c in enumerate(self._pdb_selectors):
            if c is not None:
                out.setdefault((c[0], c[1].anchor), []).append(i)
        return out

    def pdbs_of(self, pod: PodInfo) -> list[int]:
        """The PDBs (indices into `snapshot.pdbs`, ascending) in the pod's namespace whose non-empty selector
        matches it, looked for among those whose anchor pair the pod carries (computed once per pod: its labels
        and the PDBs do not change)."""
        hit = self._pdbs_of.get(pod.idx)
        if hit is None:
            sels, by = self._pdb_selectors, self._pdbs_by_anchor
            ns = pod.namespace
            candidates = [*by.get((ns, None), ()), *(i for pair in pod.labels.items() for i in by.get((ns, pair), ()))]
            hit = self._pdbs_of[pod.idx] = sorted(i for i in set(candidates) if sels[i][1].matches(pod.labels))
        return hit

    @cached_property
    def _node_keys(self) -> dict[int, tuple]:
        return {}  # pod idx → `node_keys`, filled as asked

    def node_keys(self, pod: PodInfo) -> tuple[tuple | None, tuple[str, ...], str]:
        """What the pod asks of a node's object, as hashable keys: (its nodeSelector and required node affinity,
        None when it has neither; its tolerations; its nodeName). Pods with equal keys pass the same nodes'
        labels, taints and names. Computed once per pod."""
        hit = self._node_keys.get(pod.idx)
        if hit is None:
            spec = pod.pod.spec
            na = spec.affinity.node_affinity if spec.affinity else None
            req = na.required_during_scheduling_ignored_during_execution if na else None
            affinity = None if not spec.node_selector and req is None else (
                tuple(sorted(spec.node_selector.items())), req.model_dump_json() if req is not None else None)
            hit = self._node_keys[pod.idx] = (affinity, tuple(t.model_dump_json() for t in pod.tolerations),
                                              spec.node_name or "")
        return hit

    # --- nodes ------------------------------------------------------------------------------------

    def label_column(self, key: str) -> tuple[np.ndarray, list[str]]:
        """(ids, values): ids[n] indexes `values` for node n's value of label `key`, or -1 when absent."""
        col = self._label_cols.get(key)
        if col is None:
            vocab: dict[str, int] = {}
            ids = np.full(len(self.nodes), -1, dtype=np.int64)
            for i, labels in enumerate(self.node_labels):
                v = labels.get(key)
                if v is not None:
                    ids[i] = vocab.setdefault(v, len(vocab))
            col = self._label_cols[key] = (ids, list(vocab))
        return col

    @cached_property
    def tree_order(self) -> np.ndarray:
        """kube's node-tree order: zones interleaved (first node of each zone, then the second, ...).

        The zone key is region and zone; zones appear in the order their first node appears.
        """
        zones: dict[tuple[str, str], list[int]] = {}
        for i, labels in enumerate(self.node_labels):
            region, zone = first_label(labels, REGION_LABELS), first_label(labels, ZONE_LABELS)
            zones.setdefault((region, zone), []).append(i)
        out: list[int] = []
        lists = list(zones.values())
        depth = max((len(v) for v in lists), default=0)
        for d in range(depth):
            out.extend(v[d] for v in lists if d < len(v))
        return np.array(out, dtype=np.int64)


def compile_index(snapshot: ClusterSnapshot) -> ClusterIndex:
    # As in load_state: no cycles are created here, so the cyclic GC would only rescan the heap.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return ClusterIndex(snapshot)
    finally:
        if gc_was_enabled:
            gc.enable()
