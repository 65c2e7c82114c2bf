"""Expand workload manifests into the pods their controllers would create.

- ReplicaSet / ReplicationController: `replicas` pods named `<rs>-<5 chars>`, owned by the set.
- Deployment: a ReplicaSet `<deploy>-<pod-template-hash>` owning the pods; pods carry `pod-template-hash`.
- StatefulSet: pods `<sts>-<ordinal>` with `statefulset.kubernetes.io/pod-name` and `apps.kubernetes.io/pod-index`.
- Job: `min(parallelism, completions)` pods (parallelism defaults to 1) with the `job-name` labels.
- DaemonSet: one pod per eligible node, pinned the way the DaemonSet controller pins it: the required node
  affinity becomes a single `matchFields metadata.name In [node]` term, and the controller's default
  tolerations are added. A node is eligible when it passes the template's node selector and required
  node affinity and its NoSchedule/NoExecute taints are tolerated.

Pods that already exist in the state for a workload (same namespace, matched by its selector, or owned
by it) count towards its replicas, so an export that holds both a workload and its pods is not doubled.
Generated names use kube's random-suffix alphabet, derived deterministically from the owner and index.
"""

from __future__ import annotations

import hashlib

from .k8s import (
    Affinity,
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
    OwnerReference,
    Pod,
    PodStatus,
    Taint,
    Toleration,
    Workload,
)
from .selectors import Selector, required_node_affinity_matches
from .tolerations import tolerated_by_any

_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # utilrand.String's alphabet (no vowels, no 0/1/3)
_API_VERSION = {
    "Deployment": "apps/v1",
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "Job": "batch/v1",
    "ReplicationController": "v1",
}
# Tolerations the DaemonSet controller adds to every daemon pod (pkg/controller/daemon/util).
_DS_TOLERATIONS = [
    Toleration(key="node.kubernetes.io/not-ready", operator="Exists", effect="NoExecute"),
    Toleration(key="node.kubernetes.io/unreachable", operator="Exists", effect="NoExecute"),
    Toleration(key="node.kubernetes.io/disk-pressure", operator="Exists", effect="NoSchedule"),
    Toleration(key="node.kubernetes.io/memory-pressure", operator="Exists", effect="NoSchedule"),
    Toleration(key="node.kubernetes.io/pid-pressure", operator="Exists", effect="NoSchedule"),
    Toleration(key="node.kubernetes.io/unschedulable", operator="Exists", effect="NoSchedule"),
]
_DS_HOSTNET_TOLERATION = Toleration(
    key="node.kubernetes.io/network-unavailable", operator="Exists", effect="NoSchedule"
)


def _suffix(*parts: str, length: int = 5) -> str:
    digest = hashlib.sha256("\x00".join(parts).encode()).digest()
    return "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:length])


def _template_hash(w: Workload) -> str:
    template = w.spec.template
    skip = None if template.spec.resource_claims else {"spec": {"resource_claims"}}  # names stay stable
    return _suffix(template.model_dump_json(by_alias=True, exclude_none=True, exclude=skip), length=10)


def _owner(kind: str, name: str, uid: str | None) -> OwnerReference:
    return OwnerReference(api_version=_API_VERSION[kind], kind=kind, name=name, uid=uid or "", controller=True)


def _make_pod(w: Workload, name: str, labels: dict[str, str], owner: OwnerReference) -> Pod:
    template = w.spec.template
    meta = ObjectMeta(
        name=name,
        namespace=w.metadata.namespace,
        labels={**template.metadata.labels, **labels},
        annotations=dict(template.metadata.annotations),
        owner_references=[owner],
        creation_timestamp=None,
    )
    return Pod(metadata=meta, spec=template.spec.model_copy(deep=True), status=PodStatus(phase="Pending"))


def _existing(w: Workload, pods: list[Pod]) -> list[Pod]:
    ns = w.metadata.namespace
    sel = Selector(w.spec.selector) if w.spec.selector is not None else None
    out = []
    name = w.metadata.name
    for p in pods:
        if p.metadata.namespace != ns or p.metadata.deletion_timestamp is not None:
            continue
        controllers = [o for o in p.metadata.owner_references if o.controller] or p.metadata.owner_references
        if controllers:
            # Owned: by this controller, or (for a Deployment) by one of its `<name>-<hash>` ReplicaSets.
            if any((o.kind == w.kind and o.name == name)
                   or (w.kind == "Deployment" and o.kind == "ReplicaSet" and o.name.rsplit("-", 1)[0] == name)
                   for o in controllers):
                out.append(p)
        elif sel is not None and sel.matches(p.metadata.labels):
            out.append(p)  # an orphan the controller would adopt
    return out


def pinned_node(pod: Pod) -> str:
    """The node a DaemonSet pod is pinned to by a `metadata.name In [node]` matchFields term, else ''."""
    na = pod.spec.affinity.node_affinity if pod.spec.affinity else None
    req = na.required_during_scheduling_ignored_during_execution if na else None
    for term in req.node_selector_terms if req else []:
        for f in term.match_fields:
            if f.key == "metadata.name" and f.operator == "In" and len(f.values) == 1:
                return f.values[0]
    return ""


def _daemon_node_ok(w: Workload, labels: dict[str, str], name: str, taints: list[Taint],
                    tolerations: list[Toleration]) -> bool:
    if not required_node_affinity_matches(w.spec.template.spec, labels, name):
        return False
    return all(tolerated_by_any(tolerations, taint) for taint in taints if taint.effect in ("NoSchedule", "NoExecute"))


def expand_workloads(snapshot, sources: dict[int, str]) -> None:
    """Append to `snapshot.pods` the pods each workload's controller would create and that are missing."""
    new: list[Pod] = []
    rs_owned_by_deploy = {
        (o.name, w.metadata.namespace)
        for w in snapshot.workloads
        if w.kind == "ReplicaSet"
        for o in w.metadata.owner_references
        if o.kind == "Deployment"
    }
    for w in snapshot.workloads:
        src = sources.get(id(w), "<input>")
        name, ns = w.metadata.name, w.metadata.namespace
        if w.kind == "Deployment" and (name, ns) in rs_owned_by_deploy:
            continue  # the exported ReplicaSet already stands for this Deployment
        existing = _existing(w, snapshot.pods)
        if w.kind == "DaemonSet":
            tolerations = list(w.spec.template.spec.tolerations) + _DS_TOLERATIONS
            if w.spec.template.spec.host_network:
                tolerations.append(_DS_HOSTNET_TOLERATION)
            have = {p.spec.node_name or pinned_node(p) for p in existing}
            for node in snapshot.nodes:
                nname = node.metadata.name
                if nname in have or not _daemon_node_ok(
                    w, node.metadata.labels, nname, node.spec.taints, tolerations
                ):
                    continue
                pod = _make_pod(w, f"{name}-{_suffix(ns, name, nname)}", {}, _owner(w.kind, name, w.metadata.uid))
                pod.spec.tolerations = tolerations
                _pin_to_node(pod, nname)
                new.append(pod)
                sources[id(pod)] = src
            continue
        if w.kind == "Job":
            par = 1 if w.spec.parallelism is None else w.spec.parallelism
            want = par if w.spec.completions is None else min(par, w.spec.completions)
        else:
            want = 1 if w.spec.replicas is None else w.spec.replicas
        missing = want - len(existing)
        if missing <= 0:
            continue
        if w.kind == "StatefulSet":
            taken = {p.metadata.name for p in existing}
            revision = f"{name}-{_template_hash(w)}"
            ordinal = 0
            while missing > 0:
                pname = f"{name}-{ordinal}"
                if pname not in taken:
                    labels = {
                        "statefulset.kubernetes.io/pod-name": pname,
                        "apps.kubernetes.io/pod-index": str(ordinal),
                        "controller-revision-hash": revision,
                    }
                    pod = _make_pod(w, pname, labels, _owner(w.kind, name, w.metadata.uid))
                    new.append(pod)
                    sources[id(pod)] = src
                    missing -= 1
                ordinal += 1
            continue
        labels: dict[str, str] = {}
        owner = _owner(w.kind, name, w.metadata.uid)
        base = name
        if w.kind == "Deployment":
            h = _template_hash(w)
            labels["pod-template-hash"] = h
            base = f"{name}-{h}"
            owner = _owner("ReplicaSet", base, None)
        elif w.kind == "Job":
            labels = {"batch.kubernetes.io/job-name": name, "job-name": name}
        for i in range(missing):
            pod = _make_pod(w, f"{base}-{_suffix(ns, base, str(i))}", labels, owner)
            new.append(pod)
            sources[id(pod)] = src
    snapshot.pods.extend(new)


def _pin_to_node(pod: Pod, node_name: str) -> None:
    """ReplaceDaemonSetPodNodeNameNodeAffinity: the required terms become one `metadata.name In [node]`."""
    term = NodeSelectorTerm(
        match_fields=[NodeSelectorRequirement(key="metadata.name", operator="In", values=[node_name])]
    )
    aff = pod.spec.affinity or Affinity()
    na = aff.node_affinity or NodeAffinity()
    na.required_during_scheduling_ignored_during_execution = NodeSelector(node_selector_terms=[term])
    aff.node_affinity = na
    pod.spec.affinity = aff
