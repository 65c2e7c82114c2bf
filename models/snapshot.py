"""ClusterSnapshot: the validated, cross-checked cluster state every command starts from."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from .errors import InputError
from .k8s import (
    CSINode,
    Namespace,
    Node,
    ObjectMeta,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    PodGroup,
    PriorityClass,
    Service,
    StorageClass,
    Taint,
    Workload,
)
from .selectors import Selector

# Built-in PriorityClasses the API server creates in every cluster.
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}


@dataclass
class ClusterSnapshot:
    """Everything read from the state files, plus what was noticed while reading it."""

    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    namespaces: list[Namespace] = field(default_factory=list)
    pvs: list[PersistentVolume] = field(default_factory=list)
    pvcs: list[PersistentVolumeClaim] = field(default_factory=list)
    storage_classes: list[StorageClass] = field(default_factory=list)
    csinodes: list[CSINode] = field(default_factory=list)
    services: list[Service] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    pod_groups: list[PodGroup] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    scheduler_config: dict | None = None
    """A KubeSchedulerConfiguration found in the input (the simulator's export carries one)."""

    def pending_pods(self) -> list[Pod]:
        """Pods kube-scheduler would try to place: unbound, not terminating, not finished."""
        return [p for p in self.pods if is_pending(p)]

    def bound_pods(self) -> list[Pod]:
        """Pods that hold node resources: bound to a known node and not finished."""
        names = {n.metadata.name for n in self.nodes}
        return [p for p in self.pods if p.spec.node_name in names and not is_finished(p)]

    def namespace_labels(self) -> dict[str, dict[str, str]]:
        return {ns.metadata.name: ns.metadata.labels for ns in self.namespaces}

    def pdb_disruptions_allowed(self, pdb: PodDisruptionBudget, more_healthy: int = 0,
                                pods: list[Pod] | None = None) -> int:
        """`status.disruptionsAllowed` when exported, else computed as the disruption controller does. With
        `more_healthy` N: what it becomes once N more of its pods are healthy (pending pods it counts in
        expectedPods, placed and Running), currentHealthy + N − desiredHealthy, never less than now. `pods`:
        the snapshot's pods of the PDB's namespace, when the caller has them grouped (`pdbs_disruptions_allowed`)."""
        if pdb.status is not None and (pdb.status.expected_pods or pdb.status.disruptions_allowed):
            allowed = pdb.status.disruptions_allowed
            healthy, desired = pdb.status.current_healthy, pdb.status.desired_healthy
        else:
            healthy, expected = pdb_health(self, pdb, pods)
            desired = pdb_desired_healthy(pdb, expected)
            allowed = max(0, healthy - desired)
        return max(allowed, healthy + more_healthy - desired) if more_healthy > 0 else allowed


def pdbs_disruptions_allowed(snapshot: ClusterSnapshot) -> list[int]:
    """`pdb_disruptions_allowed` of every PDB, in order, grouping the pods by namespace, and by namespace and
    label pair, once for the PDBs whose status must be computed (not once per PDB): a PDB whose selector requires
    a label pair looks only at the pods carrying it."""
    by_ns: dict[str, list[Pod]] | None = None
    by_pair: dict[tuple[str, str, str], list[Pod]] = {}  # (namespace, label key, value) → its pods
    out = []
    for pdb in snapshot.pdbs:
        st = pdb.status
        if st is not None and (st.expected_pods or st.disruptions_allowed):
            out.append(snapshot.pdb_disruptions_allowed(pdb))
            continue
        if by_ns is None:
            by_ns = {}
            for p in snapshot.pods:
                by_ns.setdefault(p.metadata.namespace, []).append(p)
                for k, v in p.metadata.labels.items():
                    by_pair.setdefault((p.metadata.namespace, k, v), []).append(p)
        ns, sel = pdb.metadata.namespace, pdb.spec.selector
        pair = next(iter(sel.match_labels.items()), None) if sel is not None else None
        pods = by_ns.get(ns, []) if pair is None else by_pair.get((ns, *pair), [])  # the selector requires the pair
        out.append(snapshot.pdb_disruptions_allowed(pdb, pods=pods))
    return out


def is_finished(pod: Pod) -> bool:
    return pod.status.phase in ("Succeeded", "Failed")


def is_pending(pod: Pod) -> bool:
    return not pod.spec.node_name and pod.metadata.deletion_timestamp is None and not is_finished(pod)


def pdb_health(snapshot: ClusterSnapshot, pdb: PodDisruptionBudget, pods: list[Pod] | None = None
               ) -> tuple[int, int]:
    """(currently healthy, expected) pods selected by the PDB: bound, running, not terminating. `pods`: those of
    the snapshot to look at (all of them by default; a superset of the PDB's namespace's)."""
    if pdb.spec.selector is None:  # policy/v1: a null selector selects no pods ({} selects them all)
        return 0, 0
    sel = Selector(pdb.spec.selector)
    ns = pdb.metadata.namespace
    matched = [
        p for p in (snapshot.pods if pods is None else pods)
        if p.metadata.namespace == ns and not is_finished(p) and sel.matches(p.metadata.labels)
    ]
    healthy = sum(
        1
        for p in matched
        if p.spec.node_name and p.metadata.deletion_timestamp is None and p.status.phase in ("Running", "")
    )
    return healthy, len(matched)


def pdb_desired_healthy(pdb: PodDisruptionBudget, expected: int) -> int:
    """desiredHealthy: minAvailable (percent rounded up), or expected − maxUnavailable (percent rounded up)."""
    spec = pdb.spec
    if spec.max_unavailable is not None:
        mu = spec.max_unavailable
        unavailable = math.ceil(int(mu[:-1]) * expected / 100) if isinstance(mu, str) else mu
        return max(0, expected - unavailable)
    ma = spec.min_available if spec.min_available is not None else 1
    return math.ceil(int(ma[:-1]) * expected / 100) if isinstance(ma, str) else ma


def object_ref(kind: str, meta: ObjectMeta) -> str:
    return f"{kind} {meta.namespace}/{meta.name}" if meta.namespace else f"{kind} {meta.name}"


def finalize(snapshot: ClusterSnapshot, sources: dict[int, str]) -> ClusterSnapshot:
    """Apply the API server's admission-time defaulting and cross-check references, as kube would.

    - namespaces referenced by pods exist (implicitly, with the `kubernetes.io/metadata.name` label);
    - `spec.priority` is resolved from `priorityClassName` (or the globalDefault class, else 0); a pod
      that names a missing class and has no resolved priority is rejected as admission would reject it;
    - duplicate objects: exact copies are merged with a warning, differing copies are an error;
    - pods bound to nodes that do not exist hold no resources (warning), as in kube-scheduler's cache;
    - node conditions without the taints the node lifecycle controller derives from them get those taints
      (`condition_taints`, one warning), and unbound claims without a class get the default StorageClass, as
      the PV controller's retroactive default-class assignment does (`default_storage_class`).
    """
    _dedupe(snapshot, sources)
    classes = {pc.metadata.name: pc for pc in snapshot.priority_classes}
    default_classes = [pc for pc in snapshot.priority_classes if pc.global_default]
    default_class = max(default_classes, key=lambda pc: pc.value) if default_classes else None
    for pod in snapshot.pods:
        _resolve_priority(pod, classes, default_class, sources.get(id(pod), "<input>"), snapshot.warnings)

    known = {ns.metadata.name for ns in snapshot.namespaces}
    for obj in [*snapshot.pods, *snapshot.pdbs, *snapshot.pvcs, *snapshot.services, *snapshot.workloads]:
        ns = obj.metadata.namespace
        if ns and ns not in known:
            snapshot.namespaces.append(Namespace(metadata=ObjectMeta(name=ns)))
            known.add(ns)
    for ns in snapshot.namespaces:
        ns.metadata.labels.setdefault("kubernetes.io/metadata.name", ns.metadata.name)

    condition_taints(snapshot)
    default_storage_class(snapshot)

    node_names = {n.metadata.name for n in snapshot.nodes}
    missing = Counter(
        p.spec.node_name for p in snapshot.pods if p.spec.node_name and p.spec.node_name not in node_names
    )
    for node, count in sorted(missing.items()):
        snapshot.warnings.append(f"{count} pod(s) are bound to node {node!r}, which is not in the state; ignored")
    return snapshot


def _resolve_priority(
    pod: Pod,
    classes: dict[str, PriorityClass],
    default_class: PriorityClass | None,
    source: str,
    warnings: list[str],
) -> None:
    spec = pod.spec
    name = spec.priority_class_name
    value: int | None
    policy = None
    if name in SYSTEM_PRIORITY_CLASSES:
        value = SYSTEM_PRIORITY_CLASSES[name]
    elif name:
        pc = classes.get(name)
        if pc is None:
            if spec.priority is None:
                raise InputError(
                    f"no PriorityClass with name {name!r} was found",
                    source=source,
                    obj=object_ref("Pod", pod.metadata),
                    field="spec.priorityClassName",
                )
            if classes:
                warnings.append(
                    f"{object_ref('Pod', pod.metadata)}: PriorityClass {name!r} is not in the state; "
                    f"using spec.priority={spec.priority}"
                )
            value = None
        else:
            value, policy = pc.value, pc.preemption_policy
    elif default_class is not None:
        value, policy = default_class.value, default_class.preemption_policy
        if spec.priority is None:
            spec.priority_class_name = default_class.metadata.name
    else:
        value = 0
    if spec.priority is None:
        spec.priority = value
    if spec.preemption_policy is None:
        spec.preemption_policy = policy or "PreemptLowerPriority"


_LISTS = (
    "nodes", "pods", "pdbs", "priority_classes", "namespaces", "pvs", "pvcs",
    "storage_classes", "csinodes", "services", "workloads",
)


def _dedupe(snapshot: ClusterSnapshot, sources: dict[int, str]) -> None:
    for attr in _LISTS:
        seen: dict[tuple[str, str, str], object] = {}
        kept = []
        for obj in getattr(snapshot, attr):
            key = (getattr(obj, "kind", attr), obj.metadata.namespace, obj.metadata.name)
            if key in seen:
                first = seen[key]
                ref = object_ref(key[0], obj.metadata)
                if first == obj:
                    snapshot.warnings.append(f"{ref} appears more than once; the copies are identical")
                    continue
                raise InputError(
                    f"defined twice with different contents (first in {sources.get(id(first), '<input>')})",
                    source=sources.get(id(obj), "<input>"),
                    obj=ref,
                )
            seen[key] = obj
            kept.append(obj)
        setattr(snapshot, attr, kept)


# The node lifecycle controller's TaintNodesByCondition map (condition type, status) → taint key, all NoSchedule;
# a not-ready or unreachable node also gets the same key with NoExecute (taint-based eviction).
CONDITION_TAINTS: dict[tuple[str, str], str] = {
    ("Ready", "False"): "node.kubernetes.io/not-ready",
    ("Ready", "Unknown"): "node.kubernetes.io/unreachable",
    ("MemoryPressure", "True"): "node.kubernetes.io/memory-pressure",
    ("DiskPressure", "True"): "node.kubernetes.io/disk-pressure",
    ("PIDPressure", "True"): "node.kubernetes.io/pid-pressure",
    ("NetworkUnavailable", "True"): "node.kubernetes.io/network-unavailable",
}
NO_EXECUTE_TOO = {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}


def condition_taints(snapshot: ClusterSnapshot) -> None:
    """Give each node the taints the node lifecycle controller keeps in step with its conditions, when the
    export lacks them (states written by hand, or taken from a cluster without the controller). Only
    conditions present are read: a node without a Ready condition is left alone. One warning says what
    was added."""
    added: list[str] = []
    for node in snapshot.nodes:
        have = {(t.key, t.effect) for t in node.spec.taints}
        for cond in node.status.conditions:
            key = CONDITION_TAINTS.get((cond.type, cond.status))
            if key is None:
                continue
            for effect in ("NoSchedule", "NoExecute") if key in NO_EXECUTE_TOO else ("NoSchedule",):
                if (key, effect) not in have:
                    node.spec.taints.append(Taint(key=key, effect=effect))
                    have.add((key, effect))
                    added.append(f"{node.metadata.name} {key}:{effect}")
    if added:
        shown = ", ".join(added[:5]) + (f" (+{len(added) - 5} more)" if len(added) > 5 else "")
        snapshot.warnings.append(
            f"{len(added)} taint(s) the node lifecycle controller derives from node conditions were missing and "
            f"were added: {shown}"
        )


def default_storage_class(snapshot: ClusterSnapshot) -> None:
    """Unbound claims with no class (`storageClassName` absent) get the default StorageClass, if any."""
    marked = [sc for sc in snapshot.storage_classes
              if "true" in (sc.metadata.annotations.get("storageclass.kubernetes.io/is-default-class"),
                            sc.metadata.annotations.get("storageclass.beta.kubernetes.io/is-default-class"))]
    if not marked:
        return
    marked.sort(key=lambda sc: (-(sc.metadata.creation_timestamp.timestamp() if sc.metadata.creation_timestamp
                                  else 0), sc.metadata.name))
    default = marked[0].metadata.name
    for pvc in snapshot.pvcs:
        if pvc.spec.storage_class_name is None and not pvc.spec.volume_name \
                and "volume.beta.kubernetes.io/storage-class" not in pvc.metadata.annotations:
            pvc.spec.storage_class_name = default


@dataclass(frozen=True)
class Gang:
    """Pods placed all together or not at all: at least `min_count` of `members` (pod keys, in the state's order),
    in one domain of `topology_key` when set (the PodGroup's topology constraint, or Kueue's
    podset-required-topology annotation on its pods), and preferably in as few domains of `preferred_key` as can be
    (Kueue's podset-preferred-topology: a soft rule, kube-scheduler ignores it)."""

    namespace: str
    name: str
    min_count: int
    members: tuple[str, ...]
    topology_key: str | None = None
    preferred_key: str | None = None
    kube: bool = False  # kube's own PodGroup (scheduling.k8s.io), scheduled by its pod-group cycle

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def gangs(snapshot: ClusterSnapshot) -> list[Gang]:
    """The gangs of the state: each PodGroup with a gang policy and the pods that name it (by kube's
    `spec.schedulingGroup` or coscheduling's label) in its namespace."""
    from .k8s import PREFERRED_TOPOLOGY, REQUIRED_TOPOLOGY, pod_group_name

    groups = {(g.metadata.namespace, g.metadata.name): g for g in snapshot.pod_groups if g.min_count is not None}
    members: dict[tuple[str, str], list[Pod]] = {}
    for p in snapshot.pods:
        name = pod_group_name(p)
        if name is not None and (p.metadata.namespace, name) in groups and not is_finished(p):
            members.setdefault((p.metadata.namespace, name), []).append(p)
    out = []
    for (ns, name), g in groups.items():
        pods = members.get((ns, name), [])
        key = g.topology_key or next((p.metadata.annotations[REQUIRED_TOPOLOGY] for p in pods
                                      if p.metadata.annotations.get(REQUIRED_TOPOLOGY)), None)
        preferred = None if key else next((p.metadata.annotations[PREFERRED_TOPOLOGY] for p in pods
                                           if p.metadata.annotations.get(PREFERRED_TOPOLOGY)), None)
        out.append(Gang(ns, name, int(g.min_count), tuple(f"{ns}/{p.metadata.name}" for p in pods), key, preferred,
                        kube=g.kube))
    return out

