"""The Kubernetes objects a commit sends or writes, and the keys and uids they name.

`binding_object` is DefaultBinder's v1 `Binding`, `eviction_object` a policy/v1 `Eviction`, `volume_object` the
partial PV (its `spec.claimRef`) or PVC (the `volume.kubernetes.io/selected-node` annotation) that binds a
claim. A uid, when known, is sent as a precondition: the API server then refuses the call if the object was
replaced.
"""

from __future__ import annotations

from typing import Any

from kplace.models.index import ClusterIndex
from kplace.models.plan import DYNAMIC

ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"


def split_key(key: str) -> tuple[str, str]:
    """(namespace, name) of a "namespace/name" key; a bare name is in "default"."""
    ns, _, name = key.partition("/")
    return (ns, name) if name else ("default", ns)


def pod_uid(index: ClusterIndex, key: str) -> str | None:
    """The uid of the pod `key` in the snapshot, or None when unknown."""
    pi = index.pod_by_key.get(key)
    return pi.pod.metadata.uid if pi is not None else None


def claim_uid(index: ClusterIndex, key: str) -> str | None:
    """The uid of the PersistentVolumeClaim `key` in the snapshot, or None when unknown."""
    ns, name = split_key(key)
    pvc = next((c for c in index.snapshot.pvcs if c.metadata.namespace == ns and c.metadata.name == name), None)
    return pvc.metadata.uid if pvc is not None else None


def binding_object(namespace: str, name: str, uid: str | None, node: str) -> dict[str, Any]:
    """DefaultBinder's v1.Binding (uid only when known: the API server then checks it as a precondition)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if uid:
        meta["uid"] = uid
    return {"apiVersion": "v1", "kind": "Binding", "metadata": meta,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}


def eviction_object(namespace: str, name: str, uid: str | None = None, *, dry_run: bool = False) -> dict[str, Any]:
    """A policy/v1 Eviction of one pod (with a uid precondition when the uid is known)."""
    body: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "Eviction",
                            "metadata": {"name": name, "namespace": namespace}}
    opts: dict[str, Any] = {}
    if uid:
        opts["preconditions"] = {"uid": uid}
    if dry_run:
        opts["dryRun"] = ["All"]
    if opts:
        body["deleteOptions"] = {"apiVersion": "v1", "kind": "DeleteOptions", **opts}
    return body


def claim_ref(namespace: str, name: str, uid: str | None) -> dict[str, Any]:
    """A PV's `spec.claimRef` to the claim namespace/name (with its uid when known)."""
    ref: dict[str, Any] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": namespace, "name": name}
    if uid:
        ref["uid"] = uid
    return ref


def volume_object(claim: str, what: str, node: str, uid: str | None) -> dict[str, Any]:
    """The partial object `kubectl apply -f` merges to bind `claim`: the PV with its claimRef, or (`what` is
    DYNAMIC) the claim annotated with the node to provision on."""
    ns, name = split_key(claim)
    if what == DYNAMIC:
        return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": ns, "annotations": {ANN_SELECTED_NODE: node}}}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": what},
            "spec": {"claimRef": claim_ref(ns, name, uid)}}
