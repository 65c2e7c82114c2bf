"""Pure volume lookups shared by the four volume plugins (and meant for the CP-SAT encoding and the verifier).

kube-scheduler reads PersistentVolumeClaims, PersistentVolumes, StorageClasses and CSINodes through its
informer caches; here they come from the snapshot, indexed once per ClusterIndex (`catalog`). What the
scheduler's *assume cache* adds within one scheduling run (a PV reserved for a claim, a claim given a
selected node for dynamic provisioning) lives in `ClusterState` (`pv_claims`, `pvc_selected_node`) and is
overlaid by the functions below that take a `state`.

Semantics restated from component-helpers `storage/volume` and `storage/ephemeral`:
- a claim's class is the `volume.beta.kubernetes.io/storage-class` annotation, else `spec.storageClassName`;
- a claim is *fully bound* when `spec.volumeName` is set and it carries `pv.kubernetes.io/bind-completed`
  (kplace also accepts `status.phase: Bound`, which exports always pair with that annotation);
- a generic ephemeral volume's claim is named `<pod>-<volume>` and must be controlled by the pod. When a
  pending pod's ephemeral claim is not in the state yet, kplace plans with the claim the ephemeral volume
  controller would create from `volumeClaimTemplate` (kube would wait for that controller, then schedule);
- a PV matches a claim (`FindMatchingVolume`) when: not excluded; no claimRef or a claimRef to this claim;
  capacity ≥ request; equal volume modes (default Filesystem); not being deleted; the PV's required node
  affinity matches the node's labels (the node is seen by labels only, as `CheckNodeAffinity` does). A PV
  whose claimRef names the claim is taken at once (or nothing, when its node affinity fails). Otherwise it
  must also be Available (kplace takes a PV without status as Available), match the claim's selector, have
  the claim's class and VolumeAttributesClass, and offer every access mode the claim asks for; the smallest
  such PV wins, ties broken by PV name (kube's order there is its cache's map order).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from kplace.models.index import ClusterIndex
from kplace.models.k8s import (
    CSINode,
    NodeSelector,
    ObjectMeta,
    OwnerReference,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
    Volume,
)
from kplace.models.selectors import node_term_matches, selector_matches

from ...framework.state import pod_pvc_keys  # noqa: F401  (re-exported: the claim keys a pod uses)

if TYPE_CHECKING:  # pragma: no cover
    from ...framework.state import ClusterState

ANN_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
ANN_DEFAULT_CLASS_BETA = "storageclass.beta.kubernetes.io/is-default-class"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
DYNAMIC = "(dynamic)"
"""The value `Placement.volume_bindings` gives a claim that is dynamically provisioned on the chosen node."""
_CACHE = "volumes/catalog"


def pvc_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def claim_class(pvc: PersistentVolumeClaim) -> str:
    """GetPersistentVolumeClaimClass: the beta annotation, else spec.storageClassName, else ""."""
    ann = pvc.metadata.annotations.get(ANN_STORAGE_CLASS)
    if ann is not None:
        return ann
    return pvc.spec.storage_class_name or ""


def pv_class(pv: PersistentVolume) -> str:
    ann = pv.metadata.annotations.get(ANN_STORAGE_CLASS)
    if ann is not None:
        return ann
    return pv.spec.storage_class_name or ""


def is_fully_bound(pvc: PersistentVolumeClaim) -> bool:
    return bool(pvc.spec.volume_name) and (
        ANN_BIND_COMPLETED in pvc.metadata.annotations or pvc.status.get("phase") == "Bound"
    )


def storage_request(pvc: PersistentVolumeClaim) -> int:
    q = pvc.spec.resources.requests.get("storage")
    return int(q) if q is not None else 0


def pv_capacity(pv: PersistentVolume) -> int:
    q = pv.spec.capacity.get("storage")
    return int(q) if q is not None else 0


def pv_required_affinity(pv: PersistentVolume) -> NodeSelector | None:
    na = pv.spec.node_affinity
    return na.get("required") if na else None


def pv_matches_labels(pv: PersistentVolume, labels: Mapping[str, str]) -> bool:
    """CheckNodeAffinity: the PV's required node affinity against a node known by its labels only."""
    req = pv_required_affinity(pv)
    if req is None:
        return True
    return any(node_term_matches(t, labels, "") for t in req.node_selector_terms)


def is_bound_to_claim(pv: PersistentVolume, claim_ref: Mapping | None, pvc: PersistentVolumeClaim) -> bool:
    if not claim_ref:
        return False
    if claim_ref.get("name") != pvc.metadata.name or claim_ref.get("namespace") != pvc.metadata.namespace:
        return False
    uid = claim_ref.get("uid") or ""
    return not uid or uid == (pvc.metadata.uid or "")


def access_modes_ok(pvc: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    have = set(pv.spec.access_modes)
    return all(m in have for m in pvc.spec.access_modes)


def topology_terms_match(terms: list[dict], labels: Mapping[str, str]) -> bool:
    """MatchTopologySelectorTerms (a StorageClass's allowedTopologies): no terms match every node; a term
    needs every `matchLabelExpressions` entry's key to have one of its values; terms are ORed."""
    if not terms:
        return True
    for term in terms:
        exprs = (term or {}).get("matchLabelExpressions") or []
        if all(labels.get(e.get("key")) in set(e.get("values") or []) for e in exprs):
            return True
    return False


# --- the catalog --------------------------------------------------------------------------------


@dataclass
class Catalog:
    pvcs: dict[str, PersistentVolumeClaim]
    pvs: dict[str, PersistentVolume]
    classes: dict[str, StorageClass]
    csinodes: dict[str, CSINode]
    pvs_by_class: dict[str, list[PersistentVolume]]
    default_class: str | None
    affinity: dict[str, np.ndarray] = field(default_factory=dict)


def catalog(index: ClusterIndex) -> Catalog:
    hit = index.cache.get(_CACHE)
    if hit is None:
        snap = index.snapshot
        pvs = {pv.metadata.name: pv for pv in snap.pvs}
        by_class: dict[str, list[PersistentVolume]] = {}
        for name in sorted(pvs):
            by_class.setdefault(pv_class(pvs[name]), []).append(pvs[name])
        hit = index.cache[_CACHE] = Catalog(
            pvcs={pvc_key(c.metadata.namespace, c.metadata.name): c for c in snap.pvcs},
            pvs=pvs,
            classes={sc.metadata.name: sc for sc in snap.storage_classes},
            csinodes={c.metadata.name: c for c in snap.csinodes},
            pvs_by_class=by_class,
            default_class=default_class_name(snap.storage_classes),
        )
    return hit


def default_class_name(classes: Iterable[StorageClass]) -> str | None:
    """The default StorageClass (annotation `is-default-class: "true"`); with several, the newest, then by
    name, as the DefaultStorageClass admission plugin picks."""
    marked = [sc for sc in classes if "true" in (sc.metadata.annotations.get(ANN_DEFAULT_CLASS),
                                                  sc.metadata.annotations.get(ANN_DEFAULT_CLASS_BETA))]
    if not marked:
        return None
    marked.sort(key=lambda sc: (-(sc.metadata.creation_timestamp.timestamp() if sc.metadata.creation_timestamp
                                  else 0), sc.metadata.name))
    return marked[0].metadata.name


def pv_affinity_mask(index: ClusterIndex, pv: PersistentVolume) -> np.ndarray:
    """Per node: does the PV's required node affinity accept it (cached per PV)."""
    cat = catalog(index)
    name = pv.metadata.name
    mask = cat.affinity.get(name) if cat.pvs.get(name) is pv else None
    if mask is None:
        if pv_required_affinity(pv) is None:
            mask = np.ones(len(index.nodes), dtype=bool)
        else:
            mask = np.fromiter((pv_matches_labels(pv, lb) for lb in index.node_labels), dtype=bool,
                               count=len(index.nodes))
        if cat.pvs.get(name) is pv:
            cat.affinity[name] = mask
    return mask


# --- the claims a pod uses ------------------------------------------------------------------------


@dataclass
class ClaimUse:
    """One PVC-backed volume of a pod: the claim's name and object (None when absent), or why it is unusable."""

    volume: Volume
    name: str
    key: str
    pvc: PersistentVolumeClaim | None
    ephemeral: bool = False
    error: str | None = None


def ephemeral_claim_name(pod: Pod, volume: Volume) -> str:
    return f"{pod.metadata.name}-{volume.name}"


def _owned_by(pvc: PersistentVolumeClaim, pod: Pod) -> bool:
    return any(o.controller and o.kind == "Pod" and o.name == pod.metadata.name
               and (not o.uid or not pod.metadata.uid or o.uid == pod.metadata.uid)
               for o in pvc.metadata.owner_references)


def ephemeral_claim(pod: Pod, volume: Volume, default_class: str | None) -> PersistentVolumeClaim:
    """The claim the ephemeral volume controller creates for `volume` of `pod`."""
    tmpl = (volume.ephemeral.volume_claim_template if volume.ephemeral else None) or {}
    meta = tmpl.get("metadata") or {}
    pvc = PersistentVolumeClaim.model_validate({"metadata": meta, "spec": tmpl.get("spec") or {}})
    pvc.metadata = ObjectMeta(
        name=ephemeral_claim_name(pod, volume), namespace=pod.metadata.namespace,
        labels=dict(meta.get("labels") or {}), annotations=dict(meta.get("annotations") or {}),
        owner_references=[OwnerReference(api_version="v1", kind="Pod", name=pod.metadata.name,
                                         uid=pod.metadata.uid or "", controller=True)],
    )
    if pvc.spec.storage_class_name is None and default_class is not None:
        pvc.spec.storage_class_name = default_class
    return pvc


def pod_claims(index: ClusterIndex, pod: Pod, pending: bool = True) -> list[ClaimUse]:
    """The claims `pod` uses, in volume order, resolved against the state.

    `error` follows kube's messages: `persistentvolumeclaim "x" not found`, and for an ephemeral claim that
    another owner holds, `PVC ns/x was not created for pod ns/p (pod is not owner)`.
    """
    cat = catalog(index)
    ns = pod.metadata.namespace
    out = []
    for v in pod.spec.volumes:
        if v.persistent_volume_claim is not None:
            name = v.persistent_volume_claim.claim_name
            key = pvc_key(ns, name)
            pvc = cat.pvcs.get(key)
            err = None if pvc is not None else f'persistentvolumeclaim "{name}" not found'
            out.append(ClaimUse(v, name, key, pvc, False, err))
        elif v.ephemeral is not None:
            name = ephemeral_claim_name(pod, v)
            key = pvc_key(ns, name)
            pvc = cat.pvcs.get(key)
            err = None
            if pvc is None:
                pvc = ephemeral_claim(pod, v, cat.default_class) if pending else None
                if pvc is None:
                    err = f'persistentvolumeclaim "{name}" not found'
            elif not _owned_by(pvc, pod):
                err = f"PVC {key} was not created for pod {ns}/{pod.metadata.name} (pod is not owner)"
            out.append(ClaimUse(v, name, key, pvc, True, err))
    return out


# --- matching PVs (FindMatchingVolume) ------------------------------------------------------------


def effective_claim_ref(pv: PersistentVolume, state: ClusterState | None) -> Mapping | None:
    """The PV's claimRef, with the claims reserved earlier in this run (the assume cache) overlaid."""
    if state is not None:
        key = state.pv_claims.get(pv.metadata.name)
        if key is not None:
            ns, _, name = key.partition("/")
            pvc = catalog(state.index).pvcs.get(key)
            return {"namespace": ns, "name": name, "uid": (pvc.metadata.uid if pvc is not None else "") or ""}
    return pv.spec.claim_ref


def _mode(m: str | None) -> str:
    return m or "Filesystem"


def candidate_pvs(index: ClusterIndex, pvc: PersistentVolumeClaim, state: ClusterState | None = None
                  ) -> tuple[PersistentVolume | None, list[PersistentVolume]]:
    """The node-independent part of FindMatchingVolume for a delayed-binding claim.

    Returns (a PV already bound or reserved to this claim — the answer wherever its node affinity holds —,
    else the PVs that match everywhere their node affinity holds, smallest first, then by name).
    """
    cat = catalog(index)
    cls = claim_class(pvc)
    request = storage_request(pvc)
    selector = pvc.spec.selector
    out = []
    for pv in cat.pvs_by_class.get(cls, []):
        ref = effective_claim_ref(pv, state)
        bound_here = is_bound_to_claim(pv, ref, pvc)
        if ref and not bound_here:
            continue
        if pv_capacity(pv) < request or _mode(pvc.spec.volume_mode) != _mode(pv.spec.volume_mode):
            continue
        if pv.metadata.deletion_timestamp is not None:
            continue
        if bound_here:
            return pv, []
        if pv.status.get("phase", "Available") != "Available":
            continue
        if selector is not None and not selector_matches(selector, pv.metadata.labels):
            continue
        if not access_modes_ok(pvc, pv):
            continue
        if (pv.spec.volume_attributes_class_name or "") != (pvc.spec.volume_attributes_class_name or ""):
            continue
        out.append(pv)
    # kube lists only the claim's class, so a PV reserved to the claim under another class is not found.
    out.sort(key=lambda pv: (pv_capacity(pv), pv.metadata.name))
    return None, out


def find_matching_pv(index: ClusterIndex, pvc: PersistentVolumeClaim, node: int,
                     excluded: Iterable[str] = (), state: ClusterState | None = None) -> str | None:
    """The PV kube's binder would pick for the unbound claim `pvc` on node id `node`, or None.

    `excluded` names PVs already chosen for the pod's other claims; `state` overlays the PVs reserved
    earlier in the run (pass None to read the snapshot alone). Phase-2 encodings can call this per
    (claim, node) to enumerate the PV each binding would take.
    """
    bound, cands = candidate_pvs(index, pvc, state)
    skip = set(excluded)
    if bound is not None and bound.metadata.name not in skip:
        return bound.metadata.name if pv_affinity_mask(index, bound)[node] else None
    for pv in cands:
        if pv.metadata.name not in skip and pv_affinity_mask(index, pv)[node]:
            return pv.metadata.name
    return None
